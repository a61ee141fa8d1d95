//! Holding a batch back while its first record waits after refusals of the sink's setup
//! ([`crate::backoff`]). Lambda retries a batch from its lowest failed record, so a retried
//! batch starts with the record that was refused. A standing fault then costs one try every
//! one to two minutes per shard instead of one every few seconds.

use std::time::Duration;

use aws_lambda_events::event::dynamodb::EventRecord;
use tokio::time::Instant;

use super::{log_record, new_image, receipt_key, sequence_number, Handler, Retry, Settled, MAX_LOCAL_WAIT};
use crate::receipts::ReceiptStore;
use crate::sink::LeadSink;

/// Time kept free at the end of an invocation that only waits: for the response to reach Lambda.
const HOLD_MARGIN: Duration = Duration::from_secs(2);

impl<S: LeadSink + Sync, R: ReceiptStore + Sync> Handler<S, R> {
    /// Waits out the batch's first record's wait, if it has one: in place when the wait and
    /// the batch's try fit the invocation (without one, when the wait is at most
    /// [`MAX_LOCAL_WAIT`]); otherwise the invocation waits as long as it can and hands the
    /// batch back untried (`Some`: the results, the first record retried for the reason it was
    /// refused for, so the metric names the looping reason).
    pub(super) async fn hold_back(
        &self,
        records: &[EventRecord],
        deadline: Option<Instant>,
    ) -> Option<Vec<Option<Settled>>> {
        let first = records.first()?;
        let now = Instant::now();
        let (until, reason) = self.backoff.waiting(receipt_key(first)?, now)?;
        let budget = self.sink.batch_budget().max(self.sink.record_budget());
        let fits = deadline.map_or(until <= now + MAX_LOCAL_WAIT, |deadline| until + budget <= deadline);
        if fits {
            tokio::time::sleep_until(until).await;
            return None;
        }
        let end = deadline.map_or(now + MAX_LOCAL_WAIT, |deadline| deadline.checked_sub(HOLD_MARGIN).unwrap_or(now));
        tokio::time::sleep_until(until.min(end)).await;
        log_record(sequence_number(first), new_image(first).submission_id(), "defer", "retry", Some(reason), 0);
        let mut results: Vec<Option<Settled>> = (0..records.len()).map(|_| None).collect();
        results[0] = Some(Err(Retry(reason)));
        Some(results)
    }

    /// Notes each tried record's outcome for its next try's wait.
    pub(super) fn note_outcomes(&self, records: &[EventRecord], results: &[Option<Settled>]) {
        let now = Instant::now();
        for (record, result) in records.iter().zip(results) {
            let (Some(key), Some(result)) = (receipt_key(record), result) else { continue };
            // Not tried for lack of time: nothing came of it.
            if matches!(result, Err(Retry("deadline"))) {
                continue;
            }
            self.backoff.note(key, result.as_ref().err().map(|Retry(reason)| *reason), now);
        }
    }
}
