//! The batch handler, shared by Lambda and the local poller: each receipt's records in order,
//! different receipts at the same time (up to the sink's concurrency), no record started after a
//! known retryable failure (or when the invocation's time would not cover it), and the lowest
//! such record's sequence number reported.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use aws_lambda_events::event::dynamodb::{Event, EventRecord};
use aws_lambda_events::event::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use futures_util::future::join_all;
use shared::stream::{decide, submission_id_of_key, NewImage, RecordAction, RecordLog};
use shared::time::iso8601_millis;
use tokio::sync::Semaphore;
use tokio::time::Instant;

use crate::backoff::Backoff;
use crate::metrics::Tally;
use crate::receipts::{Mark, Marked, ReceiptStore};
use crate::sink::{LeadSink, SinkError};

pub use crate::sink::MAX_CONCURRENT_RECORDS;
/// Attempts per record within one invocation when the sink asks to be retried later.
pub const MAX_ATTEMPTS: u32 = 3;
/// Longest `Retry-After` honoured in place when there is no invocation deadline (local mode).
pub const MAX_LOCAL_WAIT: Duration = Duration::from_secs(30);

/// Turns receipts into leads.
pub struct Handler<S, R> {
    pub sink: S,
    pub receipts: R,
    /// How receipts become leads where that is configured.
    pub mapping: shared::profile::registry::LeadMapping,
    /// The waits of records refused for the sink's setup ([`crate::backoff`]).
    pub backoff: Backoff,
}

/// A record that must be retried, from its sequence number on; the reason is for the log.
struct Retry(&'static str);

/// What processing one record came to: its outcome and reason, or a retry.
type Settled = Result<(&'static str, Option<&'static str>), Retry>;

/// A record before its sink call: settled already (skipped, poison marked, or to retry), or
/// a lead to write.
enum Prepared {
    Settled(Settled),
    Apply(Pending),
}

/// A lead to write: the record's index in the batch, its receipt and the lead.
struct Pending {
    index: usize,
    receipt: Box<shared::receipt::Receipt>,
    lead: Box<shared::lead::Lead>,
}

impl<S: LeadSink + Sync, R: ReceiptStore + Sync> Handler<S, R> {
    /// Processes `event`'s records ([`Handler::handle_counted`]) and reports the lowest that must
    /// be retried, then
    /// writes the batch's metrics (EMF lines) to stdout. `deadline` is when the invocation ends
    /// (Lambda's), if it has one.
    #[allow(clippy::print_stdout)]
    pub async fn handle(&self, event: Event, deadline: Option<Instant>) -> DynamoDbEventResponse {
        let (response, tally) = self.handle_counted(event, deadline).await;
        for line in tally.emf_lines(crate::metrics::now_millis()) {
            println!("{line}");
        }
        response
    }

    /// [`Handler::handle`] without the metrics lines: the response and what the batch did.
    ///
    /// Records of one receipt run in stream order (a lane); lanes run at the same time, at
    /// most [`LeadSink::concurrency`] records at once, so a batch costs about its slowest lane
    /// rather than the sum of its records. The report is what Lambda's ordered partial-failure
    /// protocol needs: the lowest record that must be retried. Every record before it is done;
    /// records after it are reported unprocessed, even if a lane already finished them (they
    /// come again, and settling a receipt twice is harmless: the upsert is keyed by the
    /// submission and the receipt update is conditional). No lane starts a record past a known
    /// failure.
    ///
    /// Before each record but the first, the time left must cover one record at its worst
    /// ([`LeadSink::record_budget`]); otherwise that record is reported unprocessed, so Lambda
    /// keeps the batch's progress instead of timing out and retrying all of it. The first record
    /// is always tried, or a function whose timeout is too short would never move on, unless
    /// it waits after refusals that stand ([`crate::backoff`]): then the batch is held back
    /// until its wait is over (`handler/hold.rs`).
    pub async fn handle_counted(&self, event: Event, deadline: Option<Instant>) -> (DynamoDbEventResponse, Tally) {
        let records = &event.records;
        if let Some(held) = self.hold_back(records, deadline).await {
            return conclude(records, held);
        }
        let results = if self.sink.batch_size() > 1 {
            self.run_batched(records, deadline).await
        } else {
            self.run_lanes(records, deadline).await
        };
        self.note_outcomes(records, &results);
        conclude(records, results)
    }

    /// The record-at-a-time path: each lane runs its records one after another, several lanes
    /// at once. One result per record; `None` for a record not started.
    async fn run_lanes(&self, records: &[EventRecord], deadline: Option<Instant>) -> Vec<Option<Settled>> {
        let budget = self.sink.record_budget();
        let lowest_failure = AtomicUsize::new(usize::MAX);
        let slots = Semaphore::new(self.sink.concurrency().clamp(1, MAX_CONCURRENT_RECORDS));
        let lane = |indices: Vec<usize>| {
            let (lowest_failure, slots) = (&lowest_failure, &slots);
            async move {
                let mut done = Vec::with_capacity(indices.len());
                for index in indices {
                    let _slot = slots.acquire().await.expect("the semaphore is never closed");
                    if past(index, lowest_failure.load(Ordering::Acquire)) {
                        break;
                    }
                    let record = &records[index];
                    let out_of_time = deadline.is_some_and(|deadline| index > 0 && Instant::now() + budget > deadline);
                    let result =
                        if out_of_time { Err(Retry("deadline")) } else { self.process(record, deadline).await };
                    if let Err(Retry(reason)) = result {
                        if out_of_time {
                            let seq = sequence_number(record);
                            log_record(seq, new_image(record).submission_id(), "defer", "retry", Some(reason), 0);
                        }
                        lowest_failure.fetch_min(index, Ordering::AcqRel);
                        done.push((index, result));
                        break;
                    }
                    done.push((index, result));
                }
                done
            }
        };
        let finished = join_all(lanes(records).into_iter().map(lane)).await;
        let mut results: Vec<Option<Settled>> = (0..records.len()).map(|_| None).collect();
        for (index, result) in finished.into_iter().flatten() {
            results[index] = Some(result);
        }
        results
    }
    /// Settles the receipt `key` as its stream record would be: read consistently, then
    /// decided and applied on the same path (same sink upsert, same conditional update). For
    /// reconcile and redrive. With `waiting_before` (reconcile's cutoff), a receipt waiting
    /// only since then (received or redriven later: the stream's to process) is left alone
    /// (`not_overdue`). `Ok` with the outcome and its reason, or `Err` with the reason the
    /// receipt is left for a retry (it stays `RECEIVED`).
    pub async fn settle_key(
        &self,
        key: &str,
        waiting_before: Option<&str>,
        deadline: Option<Instant>,
    ) -> Result<(&'static str, Option<&'static str>), &'static str> {
        match self.receipts.get(key).await {
            Ok(Some(item))
                if waiting_before.is_some_and(|cutoff| {
                    shared::receipt::waiting_since(&item).is_none_or(|since| since >= cutoff)
                }) =>
            {
                Ok(("not_overdue", None))
            }
            Ok(Some(item)) => self.settle("", "MODIFY", NewImage::Item(item), deadline).await.map_err(|Retry(r)| r),
            Ok(None) => Ok(("receipt_gone", None)),
            Err(error) => Err(error.0),
        }
    }

    async fn process(&self, record: &EventRecord, deadline: Option<Instant>) -> Settled {
        match self.prepare(record).await {
            Prepared::Settled(result) => result,
            Prepared::Apply(pending) => self.apply(sequence_number(record), &pending, deadline).await,
        }
    }

    /// A record up to its sink call: its image (read by key when the stream carries none),
    /// decided; settled here unless a lead is to be written.
    async fn prepare(&self, record: &EventRecord) -> Prepared {
        let seq = sequence_number(record);
        let mut image = new_image(record);
        let key = match record.change.keys.get("pk") {
            Some(serde_dynamo::AttributeValue::S(key)) => Some(key.as_str()),
            _ => None,
        };
        if let (NewImage::Absent, "INSERT" | "MODIFY", Some(key)) = (&image, record.event_name.as_str(), key) {
            // The stream carries no new image (its view type is KEYS_ONLY or OLD_IMAGE): read
            // the receipt itself, consistently, by the record's key.
            match self.receipts.get(key).await {
                Ok(Some(item)) => image = NewImage::Item(item),
                Ok(None) => {
                    // Gone since (TTL): nothing is left to turn into a lead.
                    log_record(seq, submission_id_of_key(key), "skip", "receipt_gone", None, 1);
                    return Prepared::Settled(Ok(("receipt_gone", None)));
                }
                Err(error) => {
                    log_record(seq, submission_id_of_key(key), "fetch", "retry", Some(error.0), 1);
                    return Prepared::Settled(Err(Retry(error.0)));
                }
            }
        }
        self.prepare_image(seq, &record.event_name, image).await
    }

    /// Decides and applies one receipt image; `seq` is the record's sequence number for the
    /// log (empty when the receipt was read by key).
    async fn settle(&self, seq: &str, event_name: &str, image: NewImage, deadline: Option<Instant>) -> Settled {
        match self.prepare_image(seq, event_name, image).await {
            Prepared::Settled(result) => result,
            Prepared::Apply(pending) => self.apply(seq, &pending, deadline).await,
        }
    }

    /// Decides one receipt image: skipped, waiting or poison (marked `FAILED` here), or a lead
    /// to write.
    async fn prepare_image(&self, seq: &str, event_name: &str, image: NewImage) -> Prepared {
        let log = |submission_id, action, outcome, reason, attempt| {
            log_record(seq, submission_id, action, outcome, reason, attempt);
        };
        Prepared::Settled(match decide(event_name, &image, &self.mapping) {
            RecordAction::Skip(reason) => {
                log(image.submission_id(), "skip", reason, None, 1);
                Ok((reason, None))
            }
            RecordAction::Wait(reason) => {
                log(image.submission_id(), "skip", "retry", Some(reason), 1);
                Err(Retry(reason))
            }
            RecordAction::MissingImage => {
                // No key either: nothing to read the receipt by.
                log(None, "skip", "retry", Some("missing_new_image"), 1);
                Err(Retry("missing_new_image"))
            }
            RecordAction::Poison { key, received_at, reason } => {
                let id = submission_id_of_key(&key);
                let outcome = self.finish(&key, &received_at, Mark::Failed(reason)).await;
                match outcome {
                    Ok(outcome) => log(id, "poison", outcome, Some(reason), 1),
                    Err(why) => log(id, "poison", "retry", Some(why), 1),
                }
                outcome.map(|outcome| (outcome, Some(reason))).map_err(Retry)
            }
            RecordAction::Apply { receipt, lead } => return Prepared::Apply(Pending { index: 0, receipt, lead }),
        })
    }

    /// Writes one lead (a retry the sink asks for waited out in place while time allows),
    /// then marks its receipt.
    async fn apply(&self, seq: &str, pending: &Pending, deadline: Option<Instant>) -> Settled {
        let id = Some(pending.receipt.submission_id.as_str());
        let mut attempt = 1;
        loop {
            let mark = match self.sink.upsert(&pending.lead, &pending.receipt.key).await {
                Ok(()) => Mark::Completed,
                Err(SinkError::Permanent { reason }) => Mark::Failed(reason),
                Err(SinkError::Retryable { reason, retry_after }) => {
                    let budget = self.sink.record_budget();
                    match wait_allowed(retry_after, deadline, budget).filter(|_| attempt < MAX_ATTEMPTS) {
                        Some(wait) => {
                            log_record(seq, id, "apply", "waiting", Some(reason), attempt);
                            tokio::time::sleep(wait).await;
                            attempt += 1;
                            continue;
                        }
                        None => {
                            log_record(seq, id, "apply", "retry", Some(reason), attempt);
                            return Err(Retry(reason));
                        }
                    }
                }
            };
            return self.mark_applied(seq, pending, mark, attempt).await;
        }
    }

    /// Marks the receipt of a lead the sink took (`Completed`) or refused (`Failed`), and logs
    /// the outcome.
    async fn mark_applied(&self, seq: &str, pending: &Pending, mark: Mark<'static>, attempt: u32) -> Settled {
        let id = Some(pending.receipt.submission_id.as_str());
        let why = match mark {
            Mark::Failed(reason) => Some(reason),
            Mark::Completed => None,
        };
        let outcome = self.finish(&pending.receipt.key, &pending.receipt.received_at, mark).await;
        match outcome {
            Ok(outcome) => log_record(seq, id, "apply", outcome, why, attempt),
            Err(reason) => log_record(seq, id, "apply", "retry", Some(reason), attempt),
        }
        outcome.map(|outcome| (outcome, why)).map_err(Retry)
    }

    /// Marks the receipt; `Ok("completed" | "failed" | "already_finished" | "receipt_gone")`,
    /// or the reason to retry.
    async fn finish(&self, key: &str, received_at: &str, mark: Mark<'_>) -> Result<&'static str, &'static str> {
        let now = iso8601_millis(crate::metrics::now_millis());
        match self.receipts.mark(key, received_at, mark, &now).await {
            Ok(Marked::Done) => Ok(if matches!(mark, Mark::Completed) { "completed" } else { "failed" }),
            Ok(Marked::AlreadyFinished) => Ok("already_finished"),
            Ok(Marked::Gone) => Ok("receipt_gone"),
            Err(error) => Err(error.0),
        }
    }
}

/// The response and the tally from each record's result (`None`: not started).
fn conclude(records: &[EventRecord], results: Vec<Option<Settled>>) -> (DynamoDbEventResponse, Tally) {
    let mut response = DynamoDbEventResponse::default();
    let mut tally = Tally::default();
    for (record, result) in records.iter().zip(results) {
        match result {
            // The metrics count what happened, past the reported record too: a lead a lane
            // wrote (or a receipt it marked FAILED) after it is real, and when the record
            // comes again it settles as already finished, so nothing counts twice.
            Some(Ok((outcome, reason))) => tally.settled(outcome, reason),
            // One retry per batch, as before lanes: the lowest record hands the rest back.
            // A later failure comes again with it and is counted when it fails then.
            Some(Err(Retry(reason))) => {
                if response.batch_item_failures.is_empty() {
                    tally.retry(reason);
                }
                report(&mut response, record);
            }
            // Not started: only ever after a reported failure. Were one not reported, this
            // record is, so no record is ever skipped as if done.
            None => report(&mut response, record),
        }
    }
    // Lambda checkpoints at the lowest reported record; the first is that record.
    response.batch_item_failures.truncate(1);
    (response, tally)
}

/// Whether the record at `index` comes after the lowest known failure (then it is not started).
/// A record is never compared with itself as the lowest failure: whatever set it has already
/// moved past it.
fn past(index: usize, lowest_failure: usize) -> bool {
    index > lowest_failure
}

/// Adds `record` to the report of records to retry.
fn report(response: &mut DynamoDbEventResponse, record: &EventRecord) {
    let mut failure = DynamoDbBatchItemFailure::default();
    failure.item_identifier = record.change.sequence_number.clone();
    response.batch_item_failures.push(failure);
}

/// The batch's records grouped by receipt key (`Keys.pk`, else the new image's `pk`), each
/// group in stream order, the groups in the order of their first record. A record with
/// neither is a group of its own.
fn lanes(records: &[EventRecord]) -> Vec<Vec<usize>> {
    let mut lanes: Vec<Vec<usize>> = Vec::new();
    let mut by_key: HashMap<&str, usize> = HashMap::new();
    for (index, record) in records.iter().enumerate() {
        let key = receipt_key(record);
        match key.and_then(|key| by_key.get(key)) {
            Some(&lane) => lanes[lane].push(index),
            None => {
                if let Some(key) = key {
                    by_key.insert(key, lanes.len());
                }
                lanes.push(vec![index]);
            }
        }
    }
    lanes
}

/// A record's receipt key: `Keys.pk`, else its new image's `pk`.
fn receipt_key(record: &EventRecord) -> Option<&str> {
    [&record.change.keys, &record.change.new_image].into_iter().find_map(|item| match item.get("pk") {
        Some(serde_dynamo::AttributeValue::S(key)) => Some(key.as_str()),
        _ => None,
    })
}

/// True if `arn` is a stream of `table` (`arn:<partition>:dynamodb:<region>:<account>:table/
/// <table>/stream/<label>`). A record from any other stream means the event source mapping
/// points at the wrong table.
pub fn is_stream_of(arn: &str, table: &str) -> bool {
    let mut parts = arn.splitn(6, ':');
    let (Some("arn"), Some(_), Some("dynamodb"), Some(_), Some(_), Some(resource)) =
        (parts.next(), parts.next(), parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    resource
        .strip_prefix("table/")
        .and_then(|rest| rest.strip_prefix(table))
        .and_then(|rest| rest.strip_prefix("/stream/"))
        .is_some_and(|label| !label.is_empty())
}

/// How long to wait before retrying in place, if the sink said and time allows: the wait, then
/// the whole record again (`budget`), must end before the deadline.
fn wait_allowed(retry_after: Option<Duration>, deadline: Option<Instant>, budget: Duration) -> Option<Duration> {
    let wait = retry_after?;
    match deadline {
        Some(deadline) => (Instant::now() + wait + budget <= deadline).then_some(wait),
        None => (wait <= MAX_LOCAL_WAIT).then_some(wait),
    }
}

/// The record's new image in the core's types: absent, read, or present but unreadable (then
/// with the attributes that identify the receipt, read straight from the event's types).
fn new_image(record: &EventRecord) -> NewImage {
    let image = &record.change.new_image;
    if image.is_empty() {
        return NewImage::Absent;
    }
    let wire = serde_json::to_vec(image).unwrap_or_default();
    NewImage::from_wire(&wire, || {
        let text = |name: &str| match image.get(name) {
            Some(serde_dynamo::AttributeValue::S(s)) => Some(s.clone()),
            _ => None,
        };
        (text("pk"), text("status"), text("receivedAt"))
    })
}

/// The record's sequence number, or empty.
fn sequence_number(record: &EventRecord) -> &str {
    record.change.sequence_number.as_deref().unwrap_or("")
}

/// Writes one log line to stderr (CloudWatch, in Lambda; stdout stays the operator commands'
/// result): the record's sequence number (empty for a receipt read by key), identifiers,
/// action, outcome and reason, never form contents.
fn log_record(
    sequence_number: &str,
    submission_id: Option<&str>,
    action: &'static str,
    outcome: &'static str,
    reason: Option<&'static str>,
    attempt: u32,
) {
    eprintln!("{}", RecordLog { sequence_number, submission_id, action, outcome, reason, attempt }.to_json_line());
}

mod batched;
#[cfg(test)]
mod batched_tests;
mod hold;
#[cfg(test)]
mod tests;
