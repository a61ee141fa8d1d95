//! The handler from stream-event fixtures, with in-memory sink and receipts.

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::*;

/// A sink that records upserts and attempts, and fails on the ids it is told to, the given
/// number of times.
#[derive(Default)]
struct MemorySink {
    upserts: Mutex<Vec<String>>,
    attempts: Mutex<usize>,
    fail: Mutex<BTreeMap<String, (SinkError, usize)>>,
}

impl MemorySink {
    fn fail(&self, id: &str, error: SinkError, times: usize) {
        self.fail.lock().unwrap().insert(id.into(), (error, times));
    }
}

impl LeadSink for MemorySink {
    async fn upsert(&self, lead: &shared::lead::Lead, _key: &str) -> Result<(), SinkError> {
        *self.attempts.lock().unwrap() += 1;
        if let Some((error, times)) = self.fail.lock().unwrap().get_mut(&lead.external_id).filter(|(_, t)| *t > 0) {
            *times -= 1;
            return Err(*error);
        }
        self.upserts.lock().unwrap().push(lead.external_id.clone());
        Ok(())
    }
}

/// A stored receipt: `(receivedAt, status, failure reason)`.
type Stored = (String, &'static str, Option<String>);

/// Receipts by key, and whole items for reads by key.
#[derive(Default)]
pub(super) struct MemoryReceipts(Mutex<BTreeMap<String, Stored>>, Mutex<BTreeMap<String, shared::dynamo::Item>>);

impl MemoryReceipts {
    pub(super) fn with(keys: &[(&str, &str)]) -> MemoryReceipts {
        let map = keys.iter().map(|(k, at)| ((*k).to_owned(), ((*at).to_owned(), "RECEIVED", None))).collect();
        MemoryReceipts(Mutex::new(map), Mutex::default())
    }

    pub(super) fn status(&self, id: &str) -> Option<(&'static str, Option<String>)> {
        let key = format!("staticforms:form.submitted:{id}");
        self.0.lock().unwrap().get(&key).map(|(_, status, reason)| (*status, reason.clone()))
    }
}

impl ReceiptStore for MemoryReceipts {
    async fn get(&self, key: &str) -> Result<Option<shared::dynamo::Item>, crate::receipts::ReceiptStoreError> {
        Ok(self.1.lock().unwrap().get(key).cloned())
    }

    async fn finished(
        &self,
        receipts: &[(&str, &str)],
    ) -> Result<std::collections::HashSet<String>, crate::receipts::ReceiptStoreError> {
        let map = self.0.lock().unwrap();
        let finished = |(key, at): &&(&str, &str)| {
            map.get(*key).is_some_and(|(stored, status, _)| stored == at && *status != "RECEIVED")
        };
        Ok(receipts.iter().filter(finished).map(|(key, _)| (*key).to_owned()).collect())
    }

    async fn mark(
        &self,
        key: &str,
        received_at: &str,
        mark: Mark<'_>,
        _now: &str,
    ) -> Result<Marked, crate::receipts::ReceiptStoreError> {
        let mut map = self.0.lock().unwrap();
        match map.get_mut(key) {
            // As the real update's condition: same receipt, still RECEIVED.
            Some((at, status, reason)) if at == received_at && *status == "RECEIVED" => {
                (*status, *reason) = match mark {
                    Mark::Completed => ("COMPLETED", None),
                    Mark::Failed(why) => ("FAILED", Some(why.to_owned())),
                };
                Ok(Marked::Done)
            }
            Some((at, _, _)) if at == received_at => Ok(Marked::AlreadyFinished),
            _ => Ok(Marked::Gone),
        }
    }
}

pub(super) const AT: &str = "2026-11-30T06:21:53.123Z";

pub(super) fn event(fixture: &str) -> Event {
    let path = format!("{}/tests/fixtures/{fixture}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

pub(super) fn failures(response: &DynamoDbEventResponse) -> Vec<String> {
    response.batch_item_failures.iter().map(|f| f.item_identifier.clone().unwrap_or_default()).collect()
}

pub(super) fn key(id: &str) -> String {
    format!("staticforms:form.submitted:{id}")
}

#[tokio::test]
async fn an_insert_becomes_a_lead_and_a_completed_receipt() {
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: MemorySink::default(),
        receipts: MemoryReceipts::with(&[(&key("sub_1"), AT)]),
    };
    let response = handler.handle(event("insert.json"), None).await;
    assert!(failures(&response).is_empty());
    assert_eq!(*handler.sink.upserts.lock().unwrap(), ["sub_1"]);
    assert_eq!(handler.receipts.status("sub_1"), Some(("COMPLETED", None)));
    // The same record again (stream redelivery): upserted again, still one receipt.
    handler.handle(event("insert.json"), None).await;
    assert_eq!(*handler.sink.upserts.lock().unwrap(), ["sub_1", "sub_1"]);
}

#[tokio::test]
async fn a_modify_that_replaced_an_expired_receipt_is_applied() {
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: MemorySink::default(),
        receipts: MemoryReceipts::with(&[(&key("sub_1"), "2027-01-05T10:00:00.000Z")]),
    };
    assert!(failures(&handler.handle(event("modify_replaced.json"), None).await).is_empty());
    assert_eq!(*handler.sink.upserts.lock().unwrap(), ["sub_1"]);
    assert_eq!(handler.receipts.status("sub_1"), Some(("COMPLETED", None)));
}

#[tokio::test]
async fn completions_and_ttl_removals_are_skipped() {
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: MemorySink::default(),
        receipts: MemoryReceipts::default(),
    };
    for fixture in ["modify_completed.json", "remove_ttl.json"] {
        assert!(failures(&handler.handle(event(fixture), None).await).is_empty(), "{fixture}");
    }
    assert!(handler.sink.upserts.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_deleted_receipt_is_not_recreated() {
    // The lead is written, the receipt is gone: nothing to mark, nothing to retry.
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: MemorySink::default(),
        receipts: MemoryReceipts::default(),
    };
    assert!(failures(&handler.handle(event("insert.json"), None).await).is_empty());
    assert_eq!(*handler.sink.upserts.lock().unwrap(), ["sub_1"]);
    // That the update does not re-create it is the real store's condition:
    // tests/it/stream_worker.rs `a_receipt_deleted_before_the_update_is_not_recreated`.
}

#[tokio::test]
async fn the_batch_stops_at_the_first_retryable_failure() {
    let keys: Vec<String> = (1..=5).map(|i| key(&format!("sub_{i}"))).collect();
    let pairs: Vec<(&str, &str)> = keys.iter().map(|k| (k.as_str(), AT)).collect();
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: MemorySink::default(),
        receipts: MemoryReceipts::with(&pairs),
    };
    handler.sink.fail("sub_3", SinkError::Retryable { reason: "sink_unavailable", retry_after: None }, usize::MAX);
    let response = handler.handle(event("batch_of_five.json"), None).await;
    assert_eq!(failures(&response), ["000000000000000000203"]);
    assert_eq!(*handler.sink.upserts.lock().unwrap(), ["sub_1", "sub_2"]);
    assert_eq!(handler.receipts.status("sub_4"), Some(("RECEIVED", None)));
}

#[tokio::test]
async fn a_short_retry_after_is_waited_out_in_place() {
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: MemorySink::default(),
        receipts: MemoryReceipts::with(&[(&key("sub_1"), AT)]),
    };
    let busy = SinkError::Retryable { reason: "sink_unavailable", retry_after: Some(Duration::from_millis(0)) };
    // Busy once: waited out in place, the second attempt succeeds, nothing is reported.
    handler.sink.fail("sub_1", busy, 1);
    assert!(failures(&handler.handle(event("insert.json"), None).await).is_empty());
    assert_eq!(*handler.sink.attempts.lock().unwrap(), 2);
    assert_eq!(handler.receipts.status("sub_1"), Some(("COMPLETED", None)));
    // Always busy: MAX_ATTEMPTS tries, then the record is reported.
    *handler.sink.attempts.lock().unwrap() = 0;
    handler.sink.fail("sub_1", busy, usize::MAX);
    let response = handler.handle(event("insert.json"), None).await;
    assert_eq!(failures(&response), ["000000000000000000101"]);
    assert_eq!(*handler.sink.attempts.lock().unwrap(), MAX_ATTEMPTS as usize);
    // Busy without a Retry-After: no waiting in place, one attempt, reported at once.
    *handler.sink.attempts.lock().unwrap() = 0;
    handler.sink.fail("sub_1", SinkError::Retryable { reason: "sink_unavailable", retry_after: None }, usize::MAX);
    assert_eq!(failures(&handler.handle(event("insert.json"), None).await), ["000000000000000000101"]);
    assert_eq!(*handler.sink.attempts.lock().unwrap(), 1);
    // A wait that does not fit before the deadline is not attempted.
    let budget = Duration::from_secs(3);
    let in_10s = Some(Instant::now() + Duration::from_secs(10));
    assert_eq!(wait_allowed(Some(Duration::from_secs(60)), in_10s, budget), None);
    assert_eq!(wait_allowed(Some(Duration::from_secs(1)), in_10s, budget), Some(Duration::from_secs(1)));
    // The wait and then the whole record must fit, not the wait alone.
    assert_eq!(
        wait_allowed(Some(Duration::from_secs(1)), in_10s, Duration::from_secs(9) + Duration::from_millis(500)),
        None
    );
    assert_eq!(wait_allowed(None, None, budget), None);
    assert_eq!(wait_allowed(Some(MAX_LOCAL_WAIT + Duration::from_secs(1)), None, budget), None);
}

#[tokio::test]
async fn poison_is_marked_failed_and_the_batch_goes_on() {
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: MemorySink::default(),
        receipts: MemoryReceipts::with(&[(&key("sub_p"), AT), (&key("sub_g"), AT)]),
    };
    let response = handler.handle(event("poison_then_good.json"), None).await;
    assert!(failures(&response).is_empty());
    assert_eq!(handler.receipts.status("sub_p"), Some(("FAILED", Some("submission_id_mismatch".into()))));
    assert_eq!(handler.receipts.status("sub_g"), Some(("COMPLETED", None)));
    assert_eq!(*handler.sink.upserts.lock().unwrap(), ["sub_g"]);
}

#[tokio::test]
async fn a_lead_the_sink_refuses_is_marked_failed() {
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: MemorySink::default(),
        receipts: MemoryReceipts::with(&[(&key("sub_1"), AT)]),
    };
    handler.sink.fail("sub_1", SinkError::Permanent { reason: "sink_rejected" }, usize::MAX);
    assert!(failures(&handler.handle(event("insert.json"), None).await).is_empty());
    assert_eq!(handler.receipts.status("sub_1"), Some(("FAILED", Some("sink_rejected".into()))));
}

#[tokio::test]
async fn a_record_without_a_new_image_is_read_from_the_table_by_its_key() {
    // KEYS_ONLY: the receipt is read by its key, consistently, and processed as usual.
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: MemorySink::default(),
        receipts: MemoryReceipts::with(&[(&key("sub_1"), AT)]),
    };
    let stored = event("insert.json").records[0].change.new_image.clone();
    let wire = serde_json::to_vec(&stored).unwrap();
    let shared::stream::NewImage::Item(item) = NewImage::from_wire(&wire, || (None, None, None)) else { panic!() };
    handler.receipts.1.lock().unwrap().insert(key("sub_1"), item);
    let keys_only = insert_with(|image| *image = serde_json::json!({}));
    assert!(failures(&handler.handle(keys_only, None).await).is_empty());
    assert_eq!(*handler.sink.upserts.lock().unwrap(), ["sub_1"]);
    assert_eq!(handler.receipts.status("sub_1"), Some(("COMPLETED", None)));
    // A receipt gone since (TTL) is skipped, not retried and not re-created.
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: MemorySink::default(),
        receipts: MemoryReceipts::default(),
    };
    assert!(failures(&handler.handle(event("keys_only.json"), None).await).is_empty());
    assert!(handler.sink.upserts.lock().unwrap().is_empty());
    // No image and no key: nothing to read by, so it is retried rather than skipped.
    let nothing = {
        let mut e = event("keys_only.json");
        e.records[0].change.keys =
            serde_dynamo::Item::from(std::collections::HashMap::<String, serde_dynamo::AttributeValue>::new());
        e
    };
    assert_eq!(failures(&handler.handle(nothing, None).await), ["000000000000000000401"]);
}

/// A sink whose every call takes `delay` (in tokio's clock) and says so as its budget.
struct SlowSink {
    delay: Duration,
    upserts: Mutex<Vec<String>>,
}

impl LeadSink for SlowSink {
    async fn upsert(&self, lead: &shared::lead::Lead, _key: &str) -> Result<(), SinkError> {
        tokio::time::sleep(self.delay).await;
        self.upserts.lock().unwrap().push(lead.external_id.clone());
        Ok(())
    }

    fn record_budget(&self) -> Duration {
        self.delay
    }

    /// One at a time, so the records' times add up as the deadline checks below assume.
    fn concurrency(&self) -> usize {
        1
    }
}

/// A sink taking `concurrency` records at once, each call `delay` long (tokio's clock), failing
/// (retryably) the ids in `fail` after the delay given there; it notes when each call ran.
struct TimedSink {
    concurrency: usize,
    delay: Duration,
    fail: BTreeMap<String, Duration>,
    calls: Mutex<Vec<(String, Duration, Duration)>>,
    start: Instant,
}

impl TimedSink {
    fn new(concurrency: usize, delay: Duration, fail: &[(&str, Duration)]) -> TimedSink {
        let fail = fail.iter().map(|(id, after)| ((*id).to_owned(), *after)).collect();
        TimedSink { concurrency, delay, fail, calls: Mutex::default(), start: Instant::now() }
    }

    /// `(id, started, ended)` of every call, in the order they ended, as offsets from the start.
    fn calls(&self) -> Vec<(String, u64, u64)> {
        let calls = self.calls.lock().unwrap();
        calls.iter().map(|(id, a, b)| (id.clone(), a.as_secs(), b.as_secs())).collect()
    }
}

impl LeadSink for TimedSink {
    async fn upsert(&self, lead: &shared::lead::Lead, _key: &str) -> Result<(), SinkError> {
        let started = self.start.elapsed();
        let failing = self.fail.get(&lead.external_id).copied();
        tokio::time::sleep(failing.unwrap_or(self.delay)).await;
        self.calls.lock().unwrap().push((lead.external_id.clone(), started, self.start.elapsed()));
        match failing {
            Some(_) => Err(SinkError::Retryable { reason: "sink_unavailable", retry_after: None }),
            None => Ok(()),
        }
    }

    fn record_budget(&self) -> Duration {
        self.delay
    }

    fn concurrency(&self) -> usize {
        self.concurrency
    }
}

pub(super) fn five_receipts() -> MemoryReceipts {
    receipts_for(5)
}

pub(super) fn receipts_for(n: usize) -> MemoryReceipts {
    let keys: Vec<String> = (1..=n).map(|i| key(&format!("sub_{i}"))).collect();
    let pairs: Vec<(&str, &str)> = keys.iter().map(|k| (k.as_str(), AT)).collect();
    MemoryReceipts::with(&pairs)
}

/// A batch of `n` inserts, `sub_1` to `sub_n`, sequence numbers 301 on (from `insert.json`).
pub(super) fn batch_of(n: usize) -> Event {
    let path = format!("{}/tests/fixtures/insert.json", env!("CARGO_MANIFEST_DIR"));
    let template: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let record = serde_json::to_string(&template["Records"][0]).unwrap();
    let records: Vec<serde_json::Value> = (1..=n)
        .map(|i| {
            let text = record.replace("\"sub_1\"", &format!("\"sub_{i}\"")).replace(":sub_1\"", &format!(":sub_{i}\""));
            let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
            value["dynamodb"]["SequenceNumber"] = format!("{:021}", 300 + i).into();
            value
        })
        .collect();
    serde_json::from_value(serde_json::json!({ "Records": records })).unwrap()
}

#[test]
fn a_sink_takes_max_concurrent_records_unless_it_says_otherwise() {
    assert_eq!(MemorySink::default().concurrency(), MAX_CONCURRENT_RECORDS);
    assert_eq!(SlowSink { delay: Duration::ZERO, upserts: Mutex::default() }.concurrency(), 1);
}

#[tokio::test(start_paused = true)]
async fn no_more_than_max_concurrent_records_run_at_once_whatever_the_sink_allows() {
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: TimedSink::new(100, Duration::from_secs(10), &[]),
        receipts: receipts_for(15),
    };
    let started = Instant::now();
    let (response, tally) = handler.handle_counted(batch_of(15), None).await;
    assert!(failures(&response).is_empty());
    assert_eq!(tally.written, 15);
    assert_eq!(started.elapsed().as_secs(), 20, "two waves: {MAX_CONCURRENT_RECORDS}, then 5");
    let at_once = |t| handler.sink.calls().iter().filter(|c| c.1 <= t && t < c.2).count();
    assert_eq!((at_once(0), at_once(10)), (MAX_CONCURRENT_RECORDS, 5));
}

#[tokio::test(start_paused = true)]
async fn with_records_running_together_each_is_still_started_only_within_the_deadline() {
    // 15 s left, 10 s per record, 10 at once: the first ten start at once and finish at 10 s;
    // the eleventh would end at 20 s, so it is reported unprocessed, and nothing after it runs.
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: TimedSink::new(100, Duration::from_secs(10), &[]),
        receipts: receipts_for(15),
    };
    let deadline = Instant::now() + Duration::from_secs(15);
    let (response, tally) = handler.handle_counted(batch_of(15), Some(deadline)).await;
    assert_eq!(failures(&response), [format!("{:021}", 311)]);
    assert_eq!((tally.written, tally.retried_total()), (10, 1));
    assert_eq!(handler.sink.calls().len(), 10);
    assert_eq!(handler.receipts.status("sub_11"), Some(("RECEIVED", None)));
}

#[tokio::test(start_paused = true)]
async fn a_record_without_keys_joins_the_lane_of_its_images_key() {
    // Record 3 repeats sub_1 with no `Keys`: it must still wait for sub_1's first record.
    let mut batch = event("batch_of_five.json");
    batch.records[2] = batch.records[0].clone();
    batch.records[2].change.keys = serde_dynamo::Item::from(HashMap::<String, serde_dynamo::AttributeValue>::new());
    batch.records[2].change.sequence_number = Some("000000000000000000203".into());
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: TimedSink::new(10, Duration::from_secs(10), &[]),
        receipts: five_receipts(),
    };
    let (response, _) = handler.handle_counted(batch, None).await;
    assert!(failures(&response).is_empty());
    let sub_1: Vec<(u64, u64)> = handler.sink.calls().iter().filter(|c| c.0 == "sub_1").map(|c| (c.1, c.2)).collect();
    assert_eq!(sub_1, [(0, 10), (10, 20)]);
}

#[tokio::test(start_paused = true)]
async fn records_of_different_receipts_run_at_the_same_time_up_to_the_sinks_concurrency() {
    let ten = Duration::from_secs(10);
    // Five records of 10 s each: 10 s in all with five at a time, 30 s with two (2 + 2 + 1).
    // A sink that says 0 still gets one at a time.
    for (concurrency, total) in [(5, 10), (2, 30), (1, 50), (0, 50), (MAX_CONCURRENT_RECORDS + 5, 10)] {
        let handler = Handler {
            backoff: Default::default(),
            mapping: Default::default(),
            sink: TimedSink::new(concurrency, ten, &[]),
            receipts: five_receipts(),
        };
        let started = Instant::now();
        let (response, tally) = handler.handle_counted(event("batch_of_five.json"), None).await;
        assert!(failures(&response).is_empty());
        assert_eq!(tally.written, 5);
        assert_eq!(started.elapsed().as_secs(), total, "concurrency {concurrency}");
        let most_at_once =
            (0..total).map(|t| handler.sink.calls().iter().filter(|c| c.1 <= t && t < c.2).count()).max();
        assert_eq!(most_at_once, Some(concurrency.clamp(1, 5)), "concurrency {concurrency}");
    }
}

#[tokio::test(start_paused = true)]
async fn records_of_one_receipt_run_in_stream_order() {
    // Records 1 and 3 are the same receipt (a record delivered twice); 2, 4, 5 are others.
    let mut batch = event("batch_of_five.json");
    batch.records[2] = batch.records[0].clone();
    batch.records[2].change.sequence_number = Some("000000000000000000203".into());
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: TimedSink::new(10, Duration::from_secs(10), &[]),
        receipts: five_receipts(),
    };
    let (response, _) = handler.handle_counted(batch, None).await;
    assert!(failures(&response).is_empty());
    let calls = handler.sink.calls();
    let sub_1: Vec<(u64, u64)> = calls.iter().filter(|c| c.0 == "sub_1").map(|c| (c.1, c.2)).collect();
    assert_eq!(sub_1, [(0, 10), (10, 20)], "the second record of sub_1 starts when the first has ended");
    for other in ["sub_2", "sub_4", "sub_5"] {
        assert!(calls.iter().any(|c| c.0 == other && c.1 == 0), "{other} runs beside sub_1: {calls:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn the_lowest_failed_record_is_reported_and_each_lead_is_counted_once() {
    let ten = Duration::from_secs(10);
    // sub_4 fails first in time (at 1 s), sub_2 later (at 5 s): the report is sub_2's record,
    // the lowest. sub_3 and sub_5 finished meanwhile (they started at once): counted as written
    // now, and absorbed when Lambda sends them again.
    let sink = TimedSink::new(10, ten, &[("sub_2", Duration::from_secs(5)), ("sub_4", Duration::from_secs(1))]);
    let handler = Handler { backoff: Default::default(), mapping: Default::default(), sink, receipts: five_receipts() };
    let (response, tally) = handler.handle_counted(event("batch_of_five.json"), None).await;
    assert_eq!(failures(&response), ["000000000000000000202"]);
    assert_eq!((tally.written, tally.retried_total()), (3, 1), "one retry: the batch handed back at sub_2");
    assert_eq!(handler.receipts.status("sub_1"), Some(("COMPLETED", None)));
    assert_eq!(handler.receipts.status("sub_2"), Some(("RECEIVED", None)));
    assert_eq!(handler.receipts.status("sub_4"), Some(("RECEIVED", None)));
    // Lambda sends the batch again from sub_2: everything ends done, each lead written.
    let rest = {
        let mut e = event("batch_of_five.json");
        e.records.drain(..1);
        e
    };
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: TimedSink::new(10, ten, &[]),
        receipts: handler.receipts,
    };
    let (response, tally) = handler.handle_counted(rest, None).await;
    assert!(failures(&response).is_empty());
    assert_eq!((tally.written, tally.absorbed), (2, 2), "sub_2 and sub_4 written, sub_3 and sub_5 absorbed");
    for i in 1..=5 {
        assert_eq!(handler.receipts.status(&format!("sub_{i}")), Some(("COMPLETED", None)), "sub_{i}");
    }
}

#[tokio::test(start_paused = true)]
async fn no_record_starts_after_a_failure_is_known() {
    // Two at a time: sub_1 fails after 1 s, sub_2 takes 10 s. sub_1's slot is free at 1 s, but
    // sub_3 to sub_5 are never started: the batch is already known to stop at sub_1.
    let sink = TimedSink::new(2, Duration::from_secs(10), &[("sub_1", Duration::from_secs(1))]);
    let handler = Handler { backoff: Default::default(), mapping: Default::default(), sink, receipts: five_receipts() };
    let (response, tally) = handler.handle_counted(event("batch_of_five.json"), None).await;
    assert_eq!(failures(&response), ["000000000000000000201"]);
    assert_eq!((tally.written, tally.retried_total()), (1, 1), "sub_2 was in flight and finished");
    let started: Vec<String> = handler.sink.calls().into_iter().map(|c| c.0).collect();
    assert_eq!(started, ["sub_1", "sub_2"]);
}

#[tokio::test(start_paused = true)]
async fn a_record_that_would_not_finish_before_the_deadline_is_reported_unprocessed() {
    let keys: Vec<String> = (1..=5).map(|i| key(&format!("sub_{i}"))).collect();
    let pairs: Vec<(&str, &str)> = keys.iter().map(|k| (k.as_str(), AT)).collect();
    let sink = SlowSink { delay: Duration::from_secs(10), upserts: Mutex::default() };
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink,
        receipts: MemoryReceipts::with(&pairs),
    };
    // 25 s left: records 1 and 2 take 10 s each; at 20 s, record 3 would end at 30 s.
    let deadline = Instant::now() + Duration::from_secs(25);
    let response = handler.handle(event("batch_of_five.json"), Some(deadline)).await;
    assert_eq!(failures(&response), ["000000000000000000203"]);
    assert_eq!(*handler.sink.upserts.lock().unwrap(), ["sub_1", "sub_2"]);
    assert_eq!(handler.receipts.status("sub_2"), Some(("COMPLETED", None)));
    assert_eq!(handler.receipts.status("sub_3"), Some(("RECEIVED", None)), "not started, so not done twice");
    // Lambda retries from record 3 with a fresh deadline: each record is done exactly once.
    let rest = {
        let mut e = event("batch_of_five.json");
        e.records.drain(..2);
        e
    };
    let response = handler.handle(rest, Some(Instant::now() + Duration::from_secs(60))).await;
    assert!(failures(&response).is_empty());
    assert_eq!(*handler.sink.upserts.lock().unwrap(), ["sub_1", "sub_2", "sub_3", "sub_4", "sub_5"]);
    // The first record is always tried, however short the time: otherwise nothing moves.
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: SlowSink { delay: Duration::from_secs(10), upserts: Mutex::default() },
        receipts: MemoryReceipts::with(&pairs),
    };
    let response = handler.handle(event("batch_of_five.json"), Some(Instant::now() + Duration::from_secs(1))).await;
    assert_eq!(failures(&response), ["000000000000000000202"]);
    assert_eq!(*handler.sink.upserts.lock().unwrap(), ["sub_1"]);
}

#[tokio::test(start_paused = true)]
async fn a_record_whose_budget_ends_exactly_at_the_deadline_is_started() {
    let keys: Vec<String> = (1..=5).map(|i| key(&format!("sub_{i}"))).collect();
    let pairs: Vec<(&str, &str)> = keys.iter().map(|k| (k.as_str(), AT)).collect();
    let sink = SlowSink { delay: Duration::from_secs(10), upserts: Mutex::default() };
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink,
        receipts: MemoryReceipts::with(&pairs),
    };
    // 20 s left: record 2 starts at 10 s with a 10 s budget, ending at the deadline itself.
    let deadline = Instant::now() + Duration::from_secs(20);
    let response = handler.handle(event("batch_of_five.json"), Some(deadline)).await;
    assert_eq!(failures(&response), ["000000000000000000203"]);
    assert_eq!(*handler.sink.upserts.lock().unwrap(), ["sub_1", "sub_2"]);
}

/// `insert.json` with its new image changed by `change`.
fn insert_with(change: impl FnOnce(&mut serde_json::Value)) -> Event {
    let path = format!("{}/tests/fixtures/insert.json", env!("CARGO_MANIFEST_DIR"));
    let mut value: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    change(&mut value["Records"][0]["dynamodb"]["NewImage"]);
    serde_json::from_value(value).unwrap()
}

#[tokio::test]
async fn a_payload_stored_as_text_with_an_odd_id_becomes_a_lead() {
    let id = "sub/8fK2+:é=";
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: MemorySink::default(),
        receipts: MemoryReceipts::with(&[(&key(id), AT)]),
    };
    let event = insert_with(|image| {
        // Nested 24 levels, a number no f64 or DynamoDB number holds, the ID as the sender sent it.
        let deep = "[".repeat(20) + r#"{"x":1e400}"# + &"]".repeat(20);
        let payload = format!(
            r#"{{"data":{{"formData":{{"deep":{deep},"name":"Ada"}},"submissionId":{}}},"event":"form.submitted"}}"#,
            serde_json::to_string(id).unwrap()
        );
        image["payload"] = serde_json::json!({ "S": payload });
        image["pk"] = serde_json::json!({"S": key(id)});
        image["submissionId"] = serde_json::json!({"S": id});
    });
    assert!(failures(&handler.handle(event, None).await).is_empty());
    assert_eq!(*handler.sink.upserts.lock().unwrap(), [id]);
    assert_eq!(handler.receipts.status(id), Some(("COMPLETED", None)));
}

#[tokio::test]
async fn a_map_payload_nested_as_deep_as_a_body_may_be_is_read() {
    // Receipts stored before payloads became text: 31 body levels are 63 on the wire.
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: MemorySink::default(),
        receipts: MemoryReceipts::with(&[(&key("sub_1"), AT)]),
    };
    let event = insert_with(|image| {
        let mut nested = serde_json::json!({"S": "x"});
        for _ in 0..shared::json::MAX_DEPTH - 3 {
            nested = serde_json::json!({"M": {"a": nested}});
        }
        image["payload"]["M"]["data"]["M"]["formData"]["M"]["deep"] = nested;
    });
    assert!(failures(&handler.handle(event, None).await).is_empty());
    assert_eq!(*handler.sink.upserts.lock().unwrap(), ["sub_1"]);
    assert_eq!(handler.receipts.status("sub_1"), Some(("COMPLETED", None)));
}

#[tokio::test]
async fn an_unreadable_image_is_poison_not_a_missing_one() {
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: MemorySink::default(),
        receipts: MemoryReceipts::with(&[(&key("sub_1"), AT), (&key("sub_2"), AT)]),
    };
    // Present, but no DynamoDB JSON this code reads (an `N` that is no number).
    let event = insert_with(|image| image["payload"] = serde_json::json!({"N": "not a number"}));
    assert!(failures(&handler.handle(event, None).await).is_empty(), "not retried");
    assert_eq!(handler.receipts.status("sub_1"), Some(("FAILED", Some("unreadable_image".into()))));
    assert!(handler.sink.upserts.lock().unwrap().is_empty());
    // A payload string that is not JSON: the receipt is unreadable, also poison.
    let event = insert_with(|image| {
        image["payload"] = serde_json::json!({"S": "{not json"});
        image["pk"] = serde_json::json!({"S": key("sub_2")});
        image["submissionId"] = serde_json::json!({"S": "sub_2"});
    });
    assert!(failures(&handler.handle(event, None).await).is_empty());
    assert_eq!(handler.receipts.status("sub_2"), Some(("FAILED", Some("unreadable_receipt".into()))));
}

#[tokio::test]
async fn a_redelivered_record_never_changes_a_finished_receipt() {
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: MemorySink::default(),
        receipts: MemoryReceipts::with(&[(&key("sub_1"), AT)]),
    };
    assert!(failures(&handler.handle(event("insert.json"), None).await).is_empty());
    assert_eq!(handler.receipts.status("sub_1"), Some(("COMPLETED", None)));
    // The same record again, now refused by the sink: the receipt stays COMPLETED.
    handler.sink.fail("sub_1", SinkError::Permanent { reason: "sink_rejected" }, usize::MAX);
    assert!(failures(&handler.handle(event("insert.json"), None).await).is_empty());
    assert_eq!(handler.receipts.status("sub_1"), Some(("COMPLETED", None)));
}

#[test]
fn records_must_come_from_the_receipts_tables_stream() {
    let arn = "arn:aws:dynamodb:us-east-1:123456789012:table/receipts/stream/2026-11-30T00:00:00.000";
    assert!(is_stream_of(arn, "receipts"));
    assert!(is_stream_of("arn:aws-cn:dynamodb:cn-north-1:1:table/receipts/stream/x", "receipts"));
    assert!(!is_stream_of(arn, "receipts-prod"));
    assert!(!is_stream_of(arn, "receipt"));
    assert!(!is_stream_of("arn:aws:dynamodb:us-east-1:123456789012:table/receipts-old/stream/x", "receipts"));
    assert!(!is_stream_of("arn:aws:dynamodb:us-east-1:123456789012:table/receipts", "receipts"));
    assert!(!is_stream_of("arn:aws:kinesis:us-east-1:123456789012:stream/receipts", "receipts"));
    assert!(!is_stream_of("", "receipts"));
    for record in event("insert.json").records {
        assert!(is_stream_of(record.event_source_arn.as_deref().unwrap(), "receipts"));
    }
}

#[tokio::test]
async fn a_batch_is_counted_by_outcome_and_reason() {
    let keys: Vec<String> = (1..=5).map(|i| key(&format!("sub_{i}"))).collect();
    let pairs: Vec<(&str, &str)> = keys.iter().map(|k| (k.as_str(), AT)).collect();
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: MemorySink::default(),
        receipts: MemoryReceipts::with(&pairs),
    };
    handler.sink.fail("sub_2", SinkError::Permanent { reason: "sink_rejected" }, usize::MAX);
    handler.sink.fail("sub_4", SinkError::Retryable { reason: "sink_unavailable", retry_after: None }, usize::MAX);
    let (response, tally) = handler.handle_counted(event("batch_of_five.json"), None).await;
    assert_eq!(failures(&response), ["000000000000000000204"]);
    assert_eq!((tally.written, tally.absorbed, tally.skipped), (2, 0, 0));
    assert_eq!(tally.failed, [("sink_rejected", 1)].into());
    assert_eq!(tally.retried, [("sink_unavailable", 1)].into());
    // Again, the sink now healthy: the three finished receipts are absorbed, the rest written.
    *handler.sink.fail.lock().unwrap() = BTreeMap::new();
    let (response, tally) = handler.handle_counted(event("batch_of_five.json"), None).await;
    assert!(failures(&response).is_empty());
    assert_eq!((tally.written, tally.absorbed), (2, 3));
    assert!(tally.failed.is_empty() && tally.retried.is_empty());
}

#[tokio::test]
async fn a_receipt_is_settled_by_key_on_the_same_path() {
    let receipts = MemoryReceipts::with(&[(&key("sub_1"), AT)]);
    let insert = event("insert.json");
    let item: shared::dynamo::Item = shared::dynamo::item_from_wire(
        &shared::json::parse(&serde_json::to_vec(&insert.records[0].change.new_image).unwrap()).unwrap(),
    )
    .unwrap();
    receipts.1.lock().unwrap().insert(key("sub_1"), item);
    let handler =
        Handler { backoff: Default::default(), mapping: Default::default(), sink: MemorySink::default(), receipts };
    // Reconcile's cutoff before the receipt arrived: not overdue, left to the stream.
    assert_eq!(
        handler.settle_key(&key("sub_1"), Some("2026-11-30T06:00:00.000Z"), None).await,
        Ok(("not_overdue", None))
    );
    assert!(handler.sink.upserts.lock().unwrap().is_empty());
    assert_eq!(
        handler.settle_key(&key("sub_1"), Some("2026-11-30T07:00:00.000Z"), None).await,
        Ok(("completed", None))
    );
    assert_eq!(handler.receipts.status("sub_1"), Some(("COMPLETED", None)));
    assert_eq!(*handler.sink.upserts.lock().unwrap(), ["sub_1"]);
    // No receipt by that key: nothing to do.
    assert_eq!(handler.settle_key(&key("sub_9"), None, None).await, Ok(("receipt_gone", None)));
    assert_eq!(handler.sink.upserts.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_receipt_of_a_profile_this_worker_does_not_know_waits_and_holds_the_records_after_it() {
    // An edge updated before the worker stores a receipt of a sender added since: the record is
    // retried (the worker of the new release will know it), never sent, never marked FAILED.
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: MemorySink::default(),
        receipts: five_receipts(),
    };
    let mut event = event("batch_of_five.json");
    let third = event.records[2].change.new_image.clone();
    let mut image: serde_json::Value = serde_json::to_value(&third).unwrap();
    image["profile"] = serde_json::json!({"S": "jotform"});
    event.records[2].change.new_image = serde_json::from_value(image).unwrap();
    let response = handler.handle(event, None).await;
    assert_eq!(failures(&response), ["000000000000000000203"], "retried from it, in stream order");
    assert_eq!(*handler.sink.upserts.lock().unwrap(), ["sub_1", "sub_2"]);
    for (id, status) in [("sub_2", "COMPLETED"), ("sub_3", "RECEIVED"), ("sub_4", "RECEIVED")] {
        assert_eq!(handler.receipts.status(id), Some((status, None)), "{id}");
    }
}

/// A record the sink keeps refusing for its setup (here a validation rule) is tried, over
/// invocations of Lambda's 120 s, once every one to two minutes once its waits have grown, not
/// at every invocation; once fixed it is tried at its next turn and forgotten. A refusal that
/// passes (a 5xx) is tried again at once.
#[tokio::test(start_paused = true)]
async fn a_record_refused_for_the_sink_s_setup_is_tried_once_a_minute_or_two_not_at_every_invocation() {
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: MemorySink::default(),
        receipts: MemoryReceipts::with(&[(&key("sub_1"), AT)]),
    };
    let rule = SinkError::Retryable { reason: "sink_org_validation_rule", retry_after: None };
    handler.sink.fail("sub_1", rule, usize::MAX);
    let start = Instant::now();
    let mut invocations = 0;
    let mut tries_at = Vec::new();
    while start.elapsed() < Duration::from_secs(30 * 60) && invocations < 2_000 {
        invocations += 1;
        let before = *handler.sink.attempts.lock().unwrap();
        let (response, tally) =
            handler.handle_counted(event("insert.json"), Some(Instant::now() + Duration::from_secs(120))).await;
        assert_eq!(failures(&response).len(), 1, "the record is handed back every time");
        assert_eq!(tally.retried.keys().collect::<Vec<_>>(), [&"sink_org_validation_rule"], "the looping reason");
        if *handler.sink.attempts.lock().unwrap() > before {
            tries_at.push(start.elapsed());
        }
    }
    // Waits of 0.5-1 s, 1-2 s, ... up to 60-120 s: in the last 20 minutes, 10 to 20 tries.
    let late = tries_at.iter().filter(|at| **at >= Duration::from_secs(10 * 60)).count();
    assert!((10..=21).contains(&late), "{late} tries in 20 minutes ({invocations} invocations)");
    assert!(tries_at.windows(2).skip(8).all(|w| w[1] - w[0] >= Duration::from_secs(60)), "{tries_at:?}");
    // Fixed: the next try goes at its turn and takes it.
    handler.sink.fail("sub_1", rule, 0);
    let fixed = Instant::now();
    loop {
        let response = handler.handle(event("insert.json"), Some(Instant::now() + Duration::from_secs(120))).await;
        if failures(&response).is_empty() {
            break;
        }
    }
    assert!(fixed.elapsed() <= Duration::from_secs(120));
    assert_eq!(handler.receipts.status("sub_1"), Some(("COMPLETED", None)));
    assert!(handler.backoff.waiting(&key("sub_1"), Instant::now()).is_none(), "forgotten once done");
    // A passing condition is not held back.
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: MemorySink::default(),
        receipts: MemoryReceipts::with(&[(&key("sub_1"), AT)]),
    };
    handler.sink.fail("sub_1", SinkError::Retryable { reason: "sink_unavailable", retry_after: None }, usize::MAX);
    let start = Instant::now();
    for _ in 0..5 {
        handler.handle(event("insert.json"), Some(Instant::now() + Duration::from_secs(120))).await;
    }
    assert_eq!((*handler.sink.attempts.lock().unwrap(), start.elapsed()), (5, Duration::ZERO));
}

/// A waiting batch is tried after its wait, in the same invocation, when the wait and the
/// record's budget fit before the deadline (or, without one, when the wait is at most
/// [`MAX_LOCAL_WAIT`]); otherwise the invocation waits as long as it can (up to two seconds
/// before its end) and hands the batch back untried, naming the refusal.
#[tokio::test(start_paused = true)]
async fn a_waiting_batch_is_tried_in_place_when_it_fits_else_handed_back_near_the_invocation_s_end() {
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: MemorySink::default(),
        receipts: MemoryReceipts::with(&[(&key("sub_1"), AT)]),
    };
    let refused = |times| {
        for _ in 0..times {
            handler.backoff.note(&key("sub_1"), Some("sink_org_required_field"), Instant::now());
        }
    };
    let attempts = || *handler.sink.attempts.lock().unwrap();
    let budget = handler.sink.record_budget();
    let again = || handler.receipts.0.lock().unwrap().get_mut(&key("sub_1")).unwrap().1 = "RECEIVED";
    // Refused once: 0.5-1 s. The wait and the record's 21 s budget just fit: waited in place,
    // then tried.
    refused(1);
    let (until, _) = handler.backoff.waiting(&key("sub_1"), Instant::now()).unwrap();
    let response = handler.handle(event("insert.json"), Some(until + budget)).await;
    assert!(failures(&response).is_empty());
    assert_eq!((attempts(), Instant::now()), (1, until), "tried at the end of its wait");
    // A millisecond less: handed back at the end of the wait, untried; the next one tries.
    again();
    refused(1);
    let (until, _) = handler.backoff.waiting(&key("sub_1"), Instant::now()).unwrap();
    let response = handler.handle(event("insert.json"), Some(until + budget - Duration::from_millis(1))).await;
    assert_eq!((failures(&response).len(), attempts(), Instant::now()), (1, 1, until));
    let response = handler.handle(event("insert.json"), Some(Instant::now() + budget)).await;
    assert_eq!((failures(&response).len(), attempts(), Instant::now()), (0, 2, until));
    // Refused nine times in a row: 60-120 s. With 60 s left, the invocation waits 58 s and
    // hands the batch back untried; the next one, with 120 s, waits the rest and tries.
    again();
    refused(9);
    let start = Instant::now();
    let (until, _) = handler.backoff.waiting(&key("sub_1"), start).unwrap();
    let (response, tally) = handler.handle_counted(event("insert.json"), Some(start + Duration::from_secs(60))).await;
    assert_eq!(failures(&response).len(), 1);
    assert_eq!(tally.retried.keys().collect::<Vec<_>>(), [&"sink_org_required_field"]);
    assert_eq!((attempts(), start.elapsed()), (2, Duration::from_secs(58)), "no try, waited");
    let response = handler.handle(event("insert.json"), Some(Instant::now() + Duration::from_secs(120))).await;
    assert!(failures(&response).is_empty());
    assert_eq!((attempts(), Instant::now()), (3, until));
    // Without a deadline (the local poller): a wait of at most 30 s is waited in place, a
    // longer one 30 s at a time.
    again();
    refused(1);
    let (until, _) = handler.backoff.waiting(&key("sub_1"), Instant::now()).unwrap();
    let response = handler.handle(event("insert.json"), None).await;
    assert_eq!((failures(&response).len(), attempts(), Instant::now()), (0, 4, until));
    again();
    refused(9);
    let start = Instant::now();
    let response = handler.handle(event("insert.json"), None).await;
    assert_eq!((failures(&response).len(), attempts(), start.elapsed()), (1, 4, MAX_LOCAL_WAIT));
}

/// A record left for the next invocation for lack of time was not tried: its refusals in a
/// row are kept, and its next refusal waits longer still.
#[tokio::test(start_paused = true)]
async fn a_record_left_for_lack_of_time_keeps_its_refusals_in_a_row() {
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: SlowSink { delay: Duration::from_secs(10), upserts: Mutex::default() },
        receipts: five_receipts(),
    };
    let third = key("sub_3");
    for _ in 0..3 {
        handler.backoff.note(&third, Some("sink_org_validation_rule"), Instant::now());
    }
    // 25 s left: records 1 and 2 take 10 s each; record 3 is left (`deadline`).
    let response = handler.handle(event("batch_of_five.json"), Some(Instant::now() + Duration::from_secs(25))).await;
    assert_eq!(failures(&response), ["000000000000000000203"]);
    let now = Instant::now();
    handler.backoff.note(&third, Some("sink_org_validation_rule"), now);
    let (until, _) = handler.backoff.waiting(&third, now).unwrap();
    assert!(until - now >= Duration::from_secs(4), "the fourth refusal in a row: 4-8 s, {:?}", until - now);
}
