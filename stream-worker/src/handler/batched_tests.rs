//! The handler's batch path with an in-memory batch sink: waves, per-lead answers, the
//! partial-failure contract, pauses and the deadline.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;

use super::tests::{batch_of, event, failures, five_receipts, receipts_for, MemoryReceipts};
use super::*;
use crate::sink::{BatchItem, RECEIPT_UPDATE_BUDGET};

/// A sink that writes `size` leads per call, each call `delay` long (tokio's clock), answering
/// each lead from its queue of answers (then `Ok`); it notes each call's leads.
struct BatchSink {
    size: usize,
    delay: Duration,
    calls: Mutex<Vec<Vec<String>>>,
    /// Each lead sent: its ID and message.
    messages: Mutex<Vec<(String, String)>>,
    answers: Mutex<BTreeMap<String, VecDeque<Result<(), SinkError>>>>,
    /// Answer one lead fewer than sent (a sink that lost its last answer).
    short: bool,
}

impl BatchSink {
    fn new(size: usize, delay: Duration) -> BatchSink {
        BatchSink {
            size,
            delay,
            calls: Mutex::default(),
            messages: Mutex::default(),
            answers: Mutex::default(),
            short: false,
        }
    }

    /// `id` gets `answer` the next `times` times.
    fn answer(self, id: &str, answer: Result<(), SinkError>, times: usize) -> BatchSink {
        self.answers.lock().unwrap().entry(id.to_owned()).or_default().extend(std::iter::repeat_n(answer, times));
        self
    }

    fn calls(&self) -> Vec<Vec<String>> {
        self.calls.lock().unwrap().clone()
    }
}

impl LeadSink for BatchSink {
    async fn upsert(&self, _lead: &shared::lead::Lead, _key: &str) -> Result<(), SinkError> {
        panic!("a batch sink is called through upsert_batch only")
    }

    fn batch_size(&self) -> usize {
        self.size
    }

    async fn upsert_batch<'a>(
        &'a self,
        items: &'a [BatchItem<'a>],
        _deadline: Option<Instant>,
    ) -> Vec<Result<(), SinkError>> {
        assert!(items.len() <= self.size, "never more than the batch size");
        tokio::time::sleep(self.delay).await;
        self.calls.lock().unwrap().push(items.iter().map(|i| i.lead.external_id.clone()).collect());
        let sent = items.iter().map(|i| (i.lead.external_id.clone(), i.lead.message.clone()));
        self.messages.lock().unwrap().extend(sent);
        let mut answers = self.answers.lock().unwrap();
        let mut results: Vec<Result<(), SinkError>> = items
            .iter()
            .map(|i| answers.get_mut(&i.lead.external_id).and_then(VecDeque::pop_front).unwrap_or(Ok(())))
            .collect();
        if self.short {
            results.pop();
        }
        results
    }

    fn batch_budget(&self) -> Duration {
        self.delay
    }
}

fn ids(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

const REFUSED: Result<(), SinkError> = Err(SinkError::Permanent { reason: "sink_rejected" });
const UNAVAILABLE: Result<(), SinkError> = Err(SinkError::Retryable { reason: "sink_unavailable", retry_after: None });

#[tokio::test]
async fn a_waves_leads_go_in_one_call_and_each_receipt_is_marked_by_its_own_answer() {
    let sink = BatchSink::new(100, Duration::ZERO).answer("sub_3", REFUSED, 1);
    let handler = Handler { backoff: Default::default(), mapping: Default::default(), sink, receipts: five_receipts() };
    let (response, tally) = handler.handle_counted(event("batch_of_five.json"), None).await;
    assert!(failures(&response).is_empty());
    assert_eq!(handler.sink.calls(), [ids(&["sub_1", "sub_2", "sub_3", "sub_4", "sub_5"])]);
    assert_eq!((tally.written, tally.failed_total()), (4, 1));
    assert_eq!(handler.receipts.status("sub_3"), Some(("FAILED", Some("sink_rejected".into()))));
    for neighbour in ["sub_1", "sub_2", "sub_4", "sub_5"] {
        assert_eq!(handler.receipts.status(neighbour), Some(("COMPLETED", None)), "{neighbour}");
    }
}

#[tokio::test]
async fn records_of_one_receipt_go_in_successive_batches_in_stream_order() {
    // Records 1 and 3 are the same receipt: the second waits for the first's batch.
    let mut batch = event("batch_of_five.json");
    batch.records[2] = batch.records[0].clone();
    batch.records[2].change.sequence_number = Some("000000000000000000203".into());
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: BatchSink::new(100, Duration::ZERO),
        receipts: five_receipts(),
    };
    let (response, tally) = handler.handle_counted(batch, None).await;
    assert!(failures(&response).is_empty());
    assert_eq!(handler.sink.calls(), [ids(&["sub_1", "sub_2", "sub_4", "sub_5"])], "the repeat is not sent");
    assert_eq!((tally.written, tally.absorbed), (4, 1), "the repeat finds its receipt finished");
}

#[tokio::test]
async fn a_lead_to_retry_is_the_lowest_record_reported_and_its_neighbours_are_still_written() {
    let sink = BatchSink::new(100, Duration::ZERO).answer("sub_2", UNAVAILABLE, 1);
    let handler = Handler { backoff: Default::default(), mapping: Default::default(), sink, receipts: five_receipts() };
    let (response, tally) = handler.handle_counted(event("batch_of_five.json"), None).await;
    assert_eq!(failures(&response), ["000000000000000000202"]);
    assert_eq!((tally.written, tally.retried_total()), (4, 1));
    assert_eq!(handler.receipts.status("sub_2"), Some(("RECEIVED", None)));
    assert_eq!(handler.receipts.status("sub_3"), Some(("COMPLETED", None)), "written in the same call");
    // Lambda sends the batch again from sub_2: sub_2 is written, and the others, finished
    // already as the store says (their images still say RECEIVED), are not sent again.
    let mut rest = event("batch_of_five.json");
    rest.records.drain(..1);
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: BatchSink::new(100, Duration::ZERO),
        receipts: handler.receipts,
    };
    let (response, tally) = handler.handle_counted(rest, None).await;
    assert!(failures(&response).is_empty());
    assert_eq!((tally.written, tally.absorbed), (1, 3));
    assert_eq!(handler.sink.calls(), [ids(&["sub_2"])]);
}

/// A store whose read of finished receipts takes `.1` (tokio's clock) and then fails, or
/// answers as the memory store when `.2`; its marks are the memory store's.
struct Unread(MemoryReceipts, Duration, bool);

impl ReceiptStore for Unread {
    async fn get(&self, key: &str) -> Result<Option<shared::dynamo::Item>, crate::receipts::ReceiptStoreError> {
        self.0.get(key).await
    }

    async fn finished(
        &self,
        receipts: &[(&str, &str)],
    ) -> Result<std::collections::HashSet<String>, crate::receipts::ReceiptStoreError> {
        tokio::time::sleep(self.1).await;
        match self.2 {
            true => self.0.finished(receipts).await,
            false => Err(crate::receipts::ReceiptStoreError("receipt_store_unreachable")),
        }
    }

    async fn mark(
        &self,
        key: &str,
        received_at: &str,
        mark: Mark<'_>,
        now: &str,
    ) -> Result<crate::receipts::Marked, crate::receipts::ReceiptStoreError> {
        self.0.mark(key, received_at, mark, now).await
    }
}

#[tokio::test]
async fn a_replay_whose_store_read_fails_sends_every_lead_and_each_settles_once() {
    let mut rest = event("batch_of_five.json");
    rest.records.drain(..1);
    let receipts = five_receipts();
    for id in ["sub_3", "sub_4"] {
        receipts.mark(&super::tests::key(id), super::tests::AT, Mark::Completed, "now").await.unwrap();
    }
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: BatchSink::new(100, Duration::ZERO),
        receipts: Unread(receipts, Duration::ZERO, false),
    };
    let (response, tally) = handler.handle_counted(rest, None).await;
    assert!(failures(&response).is_empty());
    assert_eq!(handler.sink.calls(), [ids(&["sub_2", "sub_3", "sub_4", "sub_5"])], "nothing held back");
    assert_eq!((tally.written, tally.absorbed), (2, 2));
}

/// Sub_3 and sub_4 finished, the rest RECEIVED.
async fn two_finished() -> MemoryReceipts {
    let receipts = five_receipts();
    for id in ["sub_3", "sub_4"] {
        receipts.mark(&super::tests::key(id), super::tests::AT, Mark::Completed, "now").await.unwrap();
    }
    receipts
}

#[tokio::test(start_paused = true)]
async fn the_read_of_finished_receipts_is_made_only_when_it_and_a_batch_fit_before_the_deadline() {
    let budget = Duration::from_secs(10);
    for (spare, read) in [(Duration::ZERO, true), (Duration::from_millis(1), true), (Duration::ZERO, false)] {
        let handler = Handler {
            backoff: Default::default(),
            mapping: Default::default(),
            sink: BatchSink::new(100, budget),
            receipts: two_finished().await,
        };
        let fits = super::batched::FINISHED_READ_LIMIT + budget + spare;
        let deadline = Instant::now() + if read { fits } else { fits - Duration::from_millis(1) };
        let (response, _) = handler.handle_counted(event("batch_of_five.json"), Some(deadline)).await;
        assert!(failures(&response).is_empty());
        let sent =
            if read { ids(&["sub_1", "sub_2", "sub_5"]) } else { ids(&["sub_1", "sub_2", "sub_3", "sub_4", "sub_5"]) };
        assert_eq!(handler.sink.calls(), [sent], "spare {spare:?}, read {read}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_read_of_finished_receipts_that_outlasts_its_limit_sends_the_wave_whole() {
    let limit = super::batched::FINISHED_READ_LIMIT;
    for (took, whole) in [(limit - Duration::from_millis(1), false), (limit + Duration::from_millis(1), true)] {
        let handler = Handler {
            backoff: Default::default(),
            mapping: Default::default(),
            sink: BatchSink::new(100, Duration::ZERO),
            receipts: Unread(two_finished().await, took, true),
        };
        let start = Instant::now();
        let (response, tally) = handler.handle_counted(event("batch_of_five.json"), None).await;
        assert!(failures(&response).is_empty());
        let sent =
            if whole { ids(&["sub_1", "sub_2", "sub_3", "sub_4", "sub_5"]) } else { ids(&["sub_1", "sub_2", "sub_5"]) };
        assert_eq!(handler.sink.calls(), [sent], "read took {took:?}");
        assert_eq!(tally.absorbed, 2);
        assert!(start.elapsed() <= limit, "never waited past the limit: {:?}", start.elapsed());
    }
}

#[tokio::test]
async fn a_short_pause_the_sink_asks_for_sends_again_only_the_leads_that_asked() {
    let pause = Err(SinkError::Retryable { reason: "sink_unavailable", retry_after: Some(Duration::ZERO) });
    let sink = BatchSink::new(100, Duration::ZERO).answer("sub_2", pause, 1).answer("sub_4", pause, 1);
    let handler = Handler { backoff: Default::default(), mapping: Default::default(), sink, receipts: five_receipts() };
    let (response, _) = handler.handle_counted(event("batch_of_five.json"), None).await;
    assert!(failures(&response).is_empty());
    assert_eq!(handler.sink.calls(), [ids(&["sub_1", "sub_2", "sub_3", "sub_4", "sub_5"]), ids(&["sub_2", "sub_4"])]);
    // Asking every time: MAX_ATTEMPTS calls, then the record is reported.
    let sink = BatchSink::new(100, Duration::ZERO).answer("sub_2", pause, 10);
    let handler = Handler { backoff: Default::default(), mapping: Default::default(), sink, receipts: five_receipts() };
    let (response, _) = handler.handle_counted(event("batch_of_five.json"), None).await;
    assert_eq!(failures(&response), ["000000000000000000202"]);
    assert_eq!(handler.sink.calls().len(), MAX_ATTEMPTS as usize);
    // A lead past one handed back is not waited for: it goes back with it.
    let sink = BatchSink::new(100, Duration::ZERO).answer("sub_2", UNAVAILABLE, 1).answer("sub_4", pause, 1);
    let handler = Handler { backoff: Default::default(), mapping: Default::default(), sink, receipts: five_receipts() };
    let (response, _) = handler.handle_counted(event("batch_of_five.json"), None).await;
    assert_eq!(failures(&response), ["000000000000000000202"]);
    assert_eq!(handler.sink.calls().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_wave_over_the_batch_size_goes_in_several_calls_each_but_the_first_within_the_deadline() {
    // Two leads per call, 10 s per call, 25 s left: [1, 2] ends at 10 s, [3, 4] at 20 s; [5]
    // would end at 30 s, so it is reported unprocessed.
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: BatchSink::new(2, Duration::from_secs(10)),
        receipts: receipts_for(5),
    };
    let deadline = Instant::now() + Duration::from_secs(25);
    let (response, tally) = handler.handle_counted(batch_of(5), Some(deadline)).await;
    assert_eq!(failures(&response), [format!("{:021}", 305)]);
    assert_eq!(handler.sink.calls(), [ids(&["sub_1", "sub_2"]), ids(&["sub_3", "sub_4"])]);
    assert_eq!((tally.written, tally.retried_total()), (4, 1));
    // The first call is always made, however short the time.
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: BatchSink::new(2, Duration::from_secs(10)),
        receipts: receipts_for(5),
    };
    let (response, _) = handler.handle_counted(batch_of(5), Some(Instant::now() + Duration::from_secs(1))).await;
    assert_eq!(failures(&response), [format!("{:021}", 303)]);
    assert_eq!(handler.sink.calls(), [ids(&["sub_1", "sub_2"])]);
}

#[tokio::test]
async fn no_call_goes_out_past_a_known_failure() {
    let sink = BatchSink::new(2, Duration::ZERO).answer("sub_1", UNAVAILABLE, 1);
    let handler = Handler { backoff: Default::default(), mapping: Default::default(), sink, receipts: receipts_for(5) };
    let (response, tally) = handler.handle_counted(batch_of(5), None).await;
    assert_eq!(failures(&response), [format!("{:021}", 301)]);
    assert_eq!(handler.sink.calls(), [ids(&["sub_1", "sub_2"])]);
    assert_eq!((tally.written, tally.retried_total()), (1, 1), "sub_2 shared the call and was written");
}

#[tokio::test]
async fn records_before_a_lead_in_its_lane_settle_on_their_own_and_the_lead_joins_the_wave() {
    // sub_1's lane: a completion (skipped), then its insert again (a lead to write).
    let mut batch = event("batch_of_five.json");
    let mut completion = event("modify_completed.json").records.remove(0);
    completion.change.sequence_number = Some("000000000000000000201".into());
    batch.records[2] = std::mem::replace(&mut batch.records[0], completion);
    batch.records[2].change.sequence_number = Some("000000000000000000203".into());
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: BatchSink::new(100, Duration::ZERO),
        receipts: five_receipts(),
    };
    let (response, tally) = handler.handle_counted(batch, None).await;
    assert!(failures(&response).is_empty());
    assert_eq!(handler.sink.calls(), [ids(&["sub_2", "sub_1", "sub_4", "sub_5"])], "in stream order");
    assert_eq!((tally.skipped, tally.written), (1, 4));
}

#[tokio::test]
async fn a_failure_met_before_the_wave_keeps_later_leads_out_of_it() {
    // Record 2 has neither image nor key: retried at once, before any lead is sent.
    let mut batch = event("batch_of_five.json");
    batch.records[1].change.new_image =
        serde_dynamo::Item::from(std::collections::HashMap::<String, serde_dynamo::AttributeValue>::new());
    batch.records[1].change.keys =
        serde_dynamo::Item::from(std::collections::HashMap::<String, serde_dynamo::AttributeValue>::new());
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: BatchSink::new(100, Duration::ZERO),
        receipts: five_receipts(),
    };
    let (response, _) = handler.handle_counted(batch, None).await;
    assert_eq!(failures(&response), ["000000000000000000202"]);
    assert_eq!(handler.sink.calls(), [ids(&["sub_1"])], "nothing past the failure is sent");
}

#[tokio::test(start_paused = true)]
async fn a_later_wave_starts_only_within_the_deadline() {
    // sub_1's second record needs a second wave; the first ends at 10 s, and 5 s are left
    // then: less than a store call's budget.
    let mut batch = event("batch_of_five.json");
    batch.records[2] = batch.records[0].clone();
    batch.records[2].change.sequence_number = Some("000000000000000000203".into());
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: BatchSink::new(100, Duration::from_secs(10)),
        receipts: five_receipts(),
    };
    let (response, _) = handler.handle_counted(batch, Some(Instant::now() + Duration::from_secs(15))).await;
    assert_eq!(failures(&response), ["000000000000000000203"]);
    assert_eq!(handler.sink.calls().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_batch_whose_budget_ends_exactly_at_the_deadline_is_sent() {
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: BatchSink::new(2, Duration::from_secs(10)),
        receipts: receipts_for(5),
    };
    let (response, _) = handler.handle_counted(batch_of(5), Some(Instant::now() + Duration::from_secs(20))).await;
    assert_eq!(failures(&response), [format!("{:021}", 305)]);
    assert_eq!(handler.sink.calls(), [ids(&["sub_1", "sub_2"]), ids(&["sub_3", "sub_4"])]);
}

#[tokio::test]
async fn a_lead_the_sink_gave_no_answer_for_is_retried_and_the_others_are_done() {
    let mut sink = BatchSink::new(100, Duration::ZERO);
    sink.short = true;
    let handler = Handler { backoff: Default::default(), mapping: Default::default(), sink, receipts: five_receipts() };
    let (response, tally) = handler.handle_counted(event("batch_of_five.json"), None).await;
    assert_eq!(failures(&response), ["000000000000000000205"]);
    assert_eq!(tally.written, 4);
    assert_eq!(handler.receipts.status("sub_5"), Some(("RECEIVED", None)));
}

#[tokio::test]
async fn one_receipts_records_are_sent_in_stream_order() {
    // sub_1's insert, then a redrive of it with another message (records 1 and 3); the store
    // cannot say the first finished the receipt, so both are sent.
    let mut batch = event("batch_of_five.json");
    let text = serde_json::to_string(&serde_json::to_value(&batch.records[0]).unwrap()).unwrap();
    batch.records[2] = serde_json::from_str(&text.replace("\"Hello\"", "\"Hello again\"")).unwrap();
    batch.records[2].change.sequence_number = Some("000000000000000000203".into());
    let handler = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: BatchSink::new(100, Duration::ZERO),
        receipts: Unread(five_receipts(), Duration::ZERO, false),
    };
    let (response, _) = handler.handle_counted(batch, None).await;
    assert!(failures(&response).is_empty());
    let sub_1: Vec<String> =
        handler.sink.messages.lock().unwrap().iter().filter(|(id, _)| id == "sub_1").map(|(_, m)| m.clone()).collect();
    assert_eq!(sub_1, ["Hello", "Hello again"]);
}

#[tokio::test(start_paused = true)]
async fn a_later_waves_record_before_its_lead_starts_only_when_a_store_call_fits() {
    // sub_1's insert (a lead, wave 1, 10 s), then its completion (settled on its own in wave 2).
    let batch = || {
        let mut batch = event("batch_of_five.json");
        batch.records[2] = event("modify_completed.json").records.remove(0);
        batch.records[2].change.sequence_number = Some("000000000000000000203".into());
        batch
    };
    let handler = |delay| Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: BatchSink::new(100, delay),
        receipts: five_receipts(),
    };
    let ten = Duration::from_secs(10);
    // 5 s left after wave 1, under the store's 11 s: the completion is left for the retry.
    let h = handler(ten);
    let (response, _) = h.handle_counted(batch(), Some(Instant::now() + Duration::from_secs(15))).await;
    assert_eq!(failures(&response), ["000000000000000000203"]);
    // Exactly 11 s left: it is settled.
    let h = handler(ten);
    let (response, tally) = h.handle_counted(batch(), Some(Instant::now() + ten + RECEIPT_UPDATE_BUDGET)).await;
    assert!(failures(&response).is_empty());
    assert_eq!((tally.written, tally.skipped), (4, 1));
}

/// A receipt store whose every update takes `delay` (tokio's clock) and notes when it ended;
/// the update of `fails` (a submission ID) fails, as a store that timed out would.
struct SlowMarks {
    inner: MemoryReceipts,
    delay: Duration,
    started: Instant,
    fails: Option<String>,
    ended: Mutex<Vec<(String, Duration)>>,
}

impl SlowMarks {
    fn new(inner: MemoryReceipts, delay: Duration) -> SlowMarks {
        SlowMarks { inner, delay, started: Instant::now(), fails: None, ended: Mutex::default() }
    }

    /// Each update's submission and when it ended, by submission.
    fn ended(&self) -> Vec<(String, Duration)> {
        let mut ended = self.ended.lock().unwrap().clone();
        ended.sort();
        ended
    }
}

impl ReceiptStore for SlowMarks {
    async fn get(&self, key: &str) -> Result<Option<shared::dynamo::Item>, crate::receipts::ReceiptStoreError> {
        self.inner.get(key).await
    }

    async fn mark(
        &self,
        key: &str,
        received_at: &str,
        mark: Mark<'_>,
        now: &str,
    ) -> Result<crate::receipts::Marked, crate::receipts::ReceiptStoreError> {
        tokio::time::sleep(self.delay).await;
        let id = key.rsplit(':').next().unwrap_or_default().to_owned();
        self.ended.lock().unwrap().push((id.clone(), self.started.elapsed()));
        if self.fails.as_deref() == Some(id.as_str()) {
            return Err(crate::receipts::ReceiptStoreError("store_timeout"));
        }
        self.inner.mark(key, received_at, mark, now).await
    }
}

#[tokio::test(start_paused = true)]
async fn a_batchs_receipts_are_marked_while_the_next_batch_is_sent() {
    // Three batches (two, two, one), each call a second, each update half a second: every
    // batch's updates run beside the next call, so they end half a second after their call,
    // and the last half a second after the third call. (Updates after each batch would end at
    // 1.5, 3 and 4.5 s; all after the last call, at 3.5 s.)
    let (second, half) = (Duration::from_secs(1), Duration::from_millis(500));
    let receipts = SlowMarks::new(five_receipts(), half);
    let handler =
        Handler { backoff: Default::default(), mapping: Default::default(), sink: BatchSink::new(2, second), receipts };
    let (response, tally) = handler.handle_counted(event("batch_of_five.json"), None).await;
    assert!(failures(&response).is_empty());
    assert_eq!(tally.written, 5);
    let at = |ms: u64| Duration::from_millis(ms);
    let expected =
        [("sub_1", at(1500)), ("sub_2", at(1500)), ("sub_3", at(2500)), ("sub_4", at(2500)), ("sub_5", at(3500))];
    let expected: Vec<(String, Duration)> = expected.iter().map(|(id, t)| ((*id).to_owned(), *t)).collect();
    assert_eq!(handler.receipts.ended(), expected);
    for i in 1..=5 {
        assert_eq!(handler.receipts.inner.status(&format!("sub_{i}")), Some(("COMPLETED", None)));
    }
}

#[tokio::test(start_paused = true)]
async fn an_update_that_fails_beside_the_next_call_stops_the_batches_after_it() {
    // Batches of two; sub_1's update fails while the second batch is sent: the third batch is
    // past a known failure and never starts, and sub_1 is the record reported.
    let (second, half) = (Duration::from_secs(1), Duration::from_millis(500));
    let mut receipts = SlowMarks::new(receipts_for(6), half);
    receipts.fails = Some("sub_1".into());
    let handler =
        Handler { backoff: Default::default(), mapping: Default::default(), sink: BatchSink::new(2, second), receipts };
    let (response, _) = handler.handle_counted(batch_of(6), None).await;
    assert_eq!(failures(&response), ["000000000000000000301"]);
    assert_eq!(handler.sink.calls(), [ids(&["sub_1", "sub_2"]), ids(&["sub_3", "sub_4"])]);
    assert_eq!(handler.receipts.inner.status("sub_5"), Some(("RECEIVED", None)), "never sent");
}
