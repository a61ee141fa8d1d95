//! Local mode: read the table's stream like Lambda does and feed the same handler.
//!
//! Every shard is read in order, and a child only once its parent is finished (so a failure in
//! a parent holds its children back, as Lambda does); up to 100 records make one batch. When
//! the handler reports a failure, the shard is read again from that record, exactly as Lambda
//! retries from the reported sequence number. The last processed sequence number of each shard
//! is kept in a checkpoint file, written after every batch (write, then rename), so a restart
//! does not replay everything; a lock file beside it keeps a second poller away. A shard's
//! `NextShardIterator` is kept between passes, so empty pages in the middle of a shard are
//! passed, not met again at every pass. A checkpoint older than the stream's 24 hours
//! (`TrimmedDataAccessException`) is said loudly and reading restarts at `TRIM_HORIZON`: the
//! records in between are gone from the stream, and only the reconcile job can find their
//! receipts.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{anyhow, Context as _};
use aws_lambda_events::event::dynamodb::Event;
use aws_sdk_dynamodbstreams::types::{Record, ShardIteratorType};
use serde_json::{json, Value};

use crate::handler::Handler;
use crate::receipts::ReceiptStore;
use crate::sink::LeadSink;

/// Records per batch, Lambda's default for DynamoDB streams.
pub const BATCH_SIZE: i32 = 100;

/// Reads one table's stream.
pub struct Poller {
    pub dynamodb: aws_sdk_dynamodb::Client,
    pub streams: aws_sdk_dynamodbstreams::Client,
    pub table: String,
    /// Where the checkpoint is kept.
    pub checkpoint: PathBuf,
    /// Pause after a failed batch before reading it again.
    pub retry_pause: Duration,
    /// Each shard's `NextShardIterator`, where the last pass stopped.
    pub iterators: Mutex<BTreeMap<String, String>>,
}

/// The lock beside a checkpoint: an exclusive `flock` on `<checkpoint>.lock`, held while the
/// file stays open and released by the kernel when the process ends, however it ends (no stale
/// lock to clean up, no window between creating the file and claiming it).
struct CheckpointLock(#[allow(dead_code)] std::fs::File);

impl CheckpointLock {
    /// Takes the lock, or says that another poller holds it.
    fn take(checkpoint: &std::path::Path) -> anyhow::Result<CheckpointLock> {
        let path = checkpoint.with_extension("lock");
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        match file.try_lock() {
            Ok(()) => Ok(CheckpointLock(file)),
            Err(std::fs::TryLockError::WouldBlock) => {
                Err(anyhow!("another poller holds {}: one poller per checkpoint", path.display()))
            }
            Err(std::fs::TryLockError::Error(error)) => Err(error).context("locking the checkpoint"),
        }
    }
}

/// Per shard: the last sequence number handled, and whether the shard is closed and done.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct ShardState {
    after: Option<String>,
    done: bool,
}

/// The checkpoint file's content.
#[derive(Debug, Default)]
struct Checkpoint {
    stream_arn: String,
    shards: BTreeMap<String, ShardState>,
}

/// What one pass over the stream did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pass {
    /// Records handed to the handler and not reported as failed.
    pub processed: usize,
    /// Batches the handler reported a failure for.
    pub failed_batches: usize,
}

impl Poller {
    /// Polls until `stop` resolves, pausing `idle` between passes that found nothing.
    pub async fn run<S, R>(
        &self,
        handler: &Handler<S, R>,
        idle: Duration,
        stop: impl std::future::Future<Output = ()>,
    ) -> anyhow::Result<()>
    where
        S: LeadSink + Sync,
        R: ReceiptStore + Sync,
    {
        // One poller per checkpoint: two would process records twice and race on the file.
        let _lock = CheckpointLock::take(&self.checkpoint)?;
        // A stream without new images cannot be worked from; say so before taking any work.
        self.check_stream().await?;
        let mut stop = std::pin::pin!(stop);
        loop {
            // A store that is briefly unreachable must not end the poller: say so and try again.
            let pass = match self.pass(handler).await {
                Ok(pass) => pass,
                Err(error) => {
                    eprintln!("stream-worker: reading the stream failed, retrying: {error:#}");
                    Pass { processed: 0, failed_batches: 1 }
                }
            };
            let pause = if pass.failed_batches > 0 {
                self.retry_pause
            } else if pass.processed == 0 {
                idle
            } else {
                Duration::ZERO
            };
            tokio::select! {
                () = &mut stop => return Ok(()),
                () = tokio::time::sleep(pause) => {}
            }
        }
    }

    /// Reads every shard once, up to its current end, and hands each batch to the handler.
    pub async fn pass<S, R>(&self, handler: &Handler<S, R>) -> anyhow::Result<Pass>
    where
        S: LeadSink + Sync,
        R: ReceiptStore + Sync,
    {
        let stream_arn = self.stream_arn().await?;
        let mut checkpoint = self.load_checkpoint(&stream_arn);
        let shards = self.shards(&stream_arn).await?;
        let mut pass = Pass::default();
        // Shards not finished in this pass: their children wait.
        let mut unfinished: BTreeSet<String> = BTreeSet::new();
        let parents: BTreeMap<String, Option<String>> = shards.iter().cloned().collect();
        for shard_id in in_lineage_order(&shards) {
            let state = checkpoint.shards.get(&shard_id).cloned().unwrap_or_default();
            if state.done {
                continue;
            }
            if waits_for_parent(&shard_id, &parents, &unfinished) {
                unfinished.insert(shard_id);
                continue;
            }
            let shard_pass = self.read_shard(handler, &stream_arn, &shard_id, state, &mut checkpoint).await?;
            pass.processed += shard_pass.processed;
            pass.failed_batches += shard_pass.failed_batches;
            if !checkpoint.shards.get(&shard_id).is_some_and(|s| s.done) {
                unfinished.insert(shard_id);
            }
        }
        Ok(pass)
    }

    /// A shard iterator: the one the last pass left, else from the checkpoint, else from the
    /// start. A checkpoint the stream has trimmed restarts at `TRIM_HORIZON`, loudly.
    async fn iterator(&self, stream_arn: &str, shard_id: &str, state: &ShardState) -> anyhow::Result<Option<String>> {
        if let Some(kept) = self.iterators.lock().map_err(|_| anyhow!("iterator map poisoned"))?.remove(shard_id) {
            return Ok(Some(kept));
        }
        let request = self.streams.get_shard_iterator().stream_arn(stream_arn).shard_id(shard_id);
        let Some(seq) = &state.after else {
            let answer = request.shard_iterator_type(ShardIteratorType::TrimHorizon).send().await;
            return Ok(answer.context("GetShardIterator")?.shard_iterator);
        };
        let answer = request
            .clone()
            .shard_iterator_type(ShardIteratorType::AfterSequenceNumber)
            .sequence_number(seq)
            .send()
            .await;
        match answer {
            Ok(answer) => Ok(answer.shard_iterator),
            Err(error) if error.as_service_error().is_some_and(|e| e.is_trimmed_data_access_exception()) => {
                eprintln!(
                    "stream-worker: DATA LOSS RISK: shard {shard_id}'s checkpoint is older than the stream keeps \
                     (24 hours); records after it and before the trim horizon are gone from the stream. \
                     Restarting the shard at TRIM_HORIZON; run the reconcile job to find receipts still RECEIVED."
                );
                let answer = request.shard_iterator_type(ShardIteratorType::TrimHorizon).send().await;
                Ok(answer.context("GetShardIterator")?.shard_iterator)
            }
            Err(error) => Err(error).context("GetShardIterator"),
        }
    }

    /// Reads one shard from where it stopped, batch by batch, saving the checkpoint after each.
    async fn read_shard<S, R>(
        &self,
        handler: &Handler<S, R>,
        stream_arn: &str,
        shard_id: &str,
        mut state: ShardState,
        checkpoint: &mut Checkpoint,
    ) -> anyhow::Result<Pass>
    where
        S: LeadSink + Sync,
        R: ReceiptStore + Sync,
    {
        let mut iterator = self.iterator(stream_arn, shard_id, &state).await?;
        let mut pass = Pass::default();
        while let Some(current) = iterator {
            let page = match self.streams.get_records().shard_iterator(current).limit(BATCH_SIZE).send().await {
                Ok(page) => page,
                // An expired kept iterator: the checkpoint says where to start next pass.
                Err(error) if error.as_service_error().is_some_and(|e| e.is_expired_iterator_exception()) => break,
                Err(error) => return Err(error).context("GetRecords"),
            };
            let records = page.records.unwrap_or_default();
            if records.is_empty() {
                match page.next_shard_iterator {
                    None => {
                        state.done = true;
                        checkpoint.shards.insert(shard_id.to_owned(), state.clone());
                        self.save_checkpoint(checkpoint)?;
                    }
                    // An empty page is not the end of an open shard (records may follow it):
                    // keep the iterator, so the next pass starts past this page, not here.
                    Some(next) => {
                        self.iterators
                            .lock()
                            .map_err(|_| anyhow!("iterator map poisoned"))?
                            .insert(shard_id.to_owned(), next);
                    }
                }
                break;
            }
            let event = to_event(stream_arn, &records)?;
            let sequence_numbers: Vec<String> =
                records.iter().filter_map(|r| r.dynamodb.as_ref()?.sequence_number.clone()).collect();
            let response = handler.handle(event, None).await;
            // A reported failure without an identifier is a failure of the whole batch.
            let failed = response.batch_item_failures.first().map(|f| {
                f.item_identifier.clone().unwrap_or_else(|| sequence_numbers.first().cloned().unwrap_or_default())
            });
            match failed {
                None => {
                    pass.processed += records.len();
                    state.after = sequence_numbers.last().cloned().or(state.after);
                    checkpoint.shards.insert(shard_id.to_owned(), state.clone());
                    self.save_checkpoint(checkpoint)?;
                    iterator = page.next_shard_iterator;
                }
                Some(failed) => {
                    // Everything before the failed record is done; the next pass starts at it.
                    let done = sequence_numbers.iter().position(|s| *s == failed).unwrap_or(0);
                    pass.processed += done;
                    if done > 0 {
                        state.after = Some(sequence_numbers[done - 1].clone());
                    }
                    checkpoint.shards.insert(shard_id.to_owned(), state.clone());
                    self.save_checkpoint(checkpoint)?;
                    pass.failed_batches += 1;
                    break;
                }
            }
        }
        Ok(pass)
    }

    /// Refuses a table whose stream is off or carries no new images (`KEYS_ONLY`,
    /// `OLD_IMAGE`): every receipt would have to be read again by its key.
    pub async fn check_stream(&self) -> anyhow::Result<()> {
        use aws_sdk_dynamodb::types::StreamViewType as View;
        let table = self.dynamodb.describe_table().table_name(&self.table).send().await.context("DescribeTable")?;
        let view = table.table.and_then(|t| t.stream_specification).and_then(|s| s.stream_view_type);
        match view {
            Some(View::NewImage | View::NewAndOldImages) => Ok(()),
            other => Err(anyhow!(
                "the stream of table {} must carry new images (NEW_IMAGE or NEW_AND_OLD_IMAGES), not {}",
                self.table,
                other.map_or_else(|| "none".to_owned(), |v| v.as_str().to_owned())
            )),
        }
    }

    async fn stream_arn(&self) -> anyhow::Result<String> {
        let table = self.dynamodb.describe_table().table_name(&self.table).send().await.context("DescribeTable")?;
        table
            .table
            .and_then(|t| t.latest_stream_arn)
            .ok_or_else(|| anyhow!("table {} has no stream: enable one with new images", self.table))
    }

    /// Every shard of the stream with its parent, following `LastEvaluatedShardId`.
    async fn shards(&self, stream_arn: &str) -> anyhow::Result<Vec<(String, Option<String>)>> {
        let mut shards = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .streams
                .describe_stream()
                .stream_arn(stream_arn)
                .set_exclusive_start_shard_id(start)
                .send()
                .await
                .context("DescribeStream")?;
            let Some(description) = page.stream_description else { break };
            for shard in description.shards.unwrap_or_default() {
                if let Some(id) = shard.shard_id {
                    shards.push((id, shard.parent_shard_id));
                }
            }
            start = description.last_evaluated_shard_id;
            if start.is_none() {
                break;
            }
        }
        Ok(shards)
    }

    fn load_checkpoint(&self, stream_arn: &str) -> Checkpoint {
        let Some(value) = std::fs::read(&self.checkpoint).ok().and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        else {
            return Checkpoint { stream_arn: stream_arn.to_owned(), shards: BTreeMap::new() };
        };
        // A checkpoint of another stream (the table was recreated) says nothing about this one.
        if value["streamArn"] != stream_arn {
            return Checkpoint { stream_arn: stream_arn.to_owned(), shards: BTreeMap::new() };
        }
        let shards = value["shards"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(id, s)| {
                        let state =
                            ShardState { after: s["after"].as_str().map(str::to_owned), done: s["done"] == true };
                        (id.clone(), state)
                    })
                    .collect()
            })
            .unwrap_or_default();
        Checkpoint { stream_arn: stream_arn.to_owned(), shards }
    }

    fn save_checkpoint(&self, checkpoint: &Checkpoint) -> anyhow::Result<()> {
        let shards: serde_json::Map<String, Value> =
            checkpoint.shards.iter().map(|(id, s)| (id.clone(), json!({"after": s.after, "done": s.done}))).collect();
        let text = json!({"streamArn": checkpoint.stream_arn, "shards": shards}).to_string();
        if let Some(parent) = self.checkpoint.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        // Write, flush to disk, then rename, so a crash never leaves half a checkpoint.
        let temporary = self.checkpoint.with_extension("tmp");
        {
            use std::io::Write as _;
            let mut file = std::fs::File::create(&temporary)?;
            file.write_all(text.as_bytes())?;
            file.sync_all()?;
        }
        std::fs::rename(&temporary, &self.checkpoint)?;
        Ok(())
    }
}

/// True if `shard`'s parent is listed and not finished in this pass: the child waits, so no
/// record of a key is handled before an earlier one still pending in the parent.
fn waits_for_parent(shard: &str, parents: &BTreeMap<String, Option<String>>, unfinished: &BTreeSet<String>) -> bool {
    parents.get(shard).cloned().flatten().is_some_and(|parent| unfinished.contains(&parent))
}

/// Shard IDs ordered so that each comes after its parent (when the parent is still listed).
fn in_lineage_order(shards: &[(String, Option<String>)]) -> Vec<String> {
    let mut ordered: Vec<String> = Vec::with_capacity(shards.len());
    let mut pending: Vec<&(String, Option<String>)> = shards.iter().collect();
    while !pending.is_empty() {
        let before = pending.len();
        pending.retain(|(id, parent)| {
            let parent_ready =
                parent.as_ref().is_none_or(|p| ordered.contains(p) || !shards.iter().any(|(listed, _)| listed == p));
            if parent_ready {
                ordered.push(id.clone());
            }
            !parent_ready
        });
        if pending.len() == before {
            // A cycle cannot happen in a real stream; take the rest as listed.
            ordered.extend(pending.drain(..).map(|(id, _)| id.clone()));
        }
    }
    ordered
}

/// The Lambda event for a page of stream records: the same JSON Lambda would deliver.
fn to_event(stream_arn: &str, records: &[Record]) -> anyhow::Result<Event> {
    let items: Vec<Value> = records
        .iter()
        .map(|record| {
            let change = record.dynamodb.as_ref();
            let image = |item: Option<&std::collections::HashMap<String, aws_sdk_dynamodbstreams::types::AttributeValue>>| {
                item.map(|i| serde_json::to_value(serde_dynamo::Item::from(i.clone())).unwrap_or(Value::Null))
            };
            let mut dynamodb = json!({
                "ApproximateCreationDateTime": change.and_then(|c| c.approximate_creation_date_time).map_or(0, |t| t.secs()),
                "SequenceNumber": change.and_then(|c| c.sequence_number.clone()),
                "SizeBytes": change.and_then(|c| c.size_bytes).unwrap_or(0),
                "StreamViewType": change.and_then(|c| c.stream_view_type.as_ref()).map(|v| v.as_str().to_owned()),
            });
            for (name, item) in [
                ("Keys", image(change.and_then(|c| c.keys.as_ref()))),
                ("NewImage", image(change.and_then(|c| c.new_image.as_ref()))),
                ("OldImage", image(change.and_then(|c| c.old_image.as_ref()))),
            ] {
                if let Some(item) = item {
                    dynamodb[name] = item;
                }
            }
            json!({
                "eventID": record.event_id,
                "eventName": record.event_name.as_ref().map(|n| n.as_str().to_owned()),
                "eventVersion": record.event_version,
                "eventSource": record.event_source,
                "awsRegion": record.aws_region,
                "eventSourceARN": stream_arn,
                "dynamodb": dynamodb,
            })
        })
        .collect();
    Ok(serde_json::from_value(json!({ "Records": items }))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_come_before_children() {
        let shard = |id: &str, parent: Option<&str>| (id.to_owned(), parent.map(str::to_owned));
        let listed = vec![shard("c2", Some("b")), shard("b", Some("a")), shard("a", None), shard("x", Some("trimmed"))];
        assert_eq!(in_lineage_order(&listed), ["a", "x", "b", "c2"]);
    }

    #[test]
    fn children_wait_for_an_unfinished_parent_and_its_line() {
        let parents: BTreeMap<String, Option<String>> =
            [("a", None), ("b", Some("a")), ("c", Some("b")), ("x", Some("trimmed"))]
                .into_iter()
                .map(|(id, parent)| (id.to_owned(), parent.map(str::to_owned)))
                .collect();
        // "a" stopped at a failure: "b" waits, and so "c" waits for "b".
        let mut unfinished = BTreeSet::from(["a".to_owned()]);
        assert!(waits_for_parent("b", &parents, &unfinished));
        unfinished.insert("b".to_owned());
        assert!(waits_for_parent("c", &parents, &unfinished));
        // A shard whose parent is no longer listed, or finished, goes ahead.
        assert!(!waits_for_parent("x", &parents, &unfinished));
        assert!(!waits_for_parent("a", &parents, &unfinished));
        assert!(!waits_for_parent("b", &parents, &BTreeSet::new()));
    }

    #[test]
    fn one_poller_per_checkpoint() {
        let dir = std::env::temp_dir().join(format!("poll-lock-{}", std::process::id()));
        let checkpoint = dir.join("checkpoint.json");
        let held = CheckpointLock::take(&checkpoint).unwrap();
        let second = CheckpointLock::take(&checkpoint).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(second.contains("another poller"), "{second}");
        drop(held);
        // Released with its holder: the file left behind is no obstacle.
        let again = CheckpointLock::take(&checkpoint).unwrap();
        drop(again);
        assert!(checkpoint.with_extension("lock").exists());
        assert!(CheckpointLock::take(&checkpoint).is_ok());
        let _ = std::fs::remove_dir_all(dir);
    }
}
