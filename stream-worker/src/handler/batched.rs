//! The handler's batch path, for sinks that write several leads per call
//! ([`LeadSink::batch_size`] > 1): the batch goes in waves. In each wave every receipt's lane
//! moves up to its next lead (records before it, skips and poison, settle on their own), the
//! leads whose receipts are finished already (a replay's) settle unsent, and the rest go to
//! the sink together, in stream order, [`LeadSink::batch_size`] at a
//! time; their receipts are marked once the sink's answer for each is known, while the next
//! batch goes to the sink (the store is kept busy across the sink's calls). Records of one
//! receipt are never in one wave, so they keep their stream order. The partial-failure
//! contract is the lanes' ([`Handler::handle_counted`]): the lowest record to retry is
//! reported, no wave or batch starts past a known failure, and the invocation's first batch
//! is always tried (once its first record's wait, if any, is over: `handler/hold.rs`); a
//! later one only when [`LeadSink::batch_budget`] fits before the deadline.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use aws_lambda_events::event::dynamodb::EventRecord;
use futures_util::future::join_all;
use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::sync::Semaphore;
use tokio::time::Instant;

use super::{
    lanes, log_record, new_image, past, sequence_number, wait_allowed, Handler, Pending, Prepared, Retry, Settled,
    MAX_ATTEMPTS, MAX_CONCURRENT_RECORDS,
};
use crate::receipts::{Mark, ReceiptStore, ReceiptStoreError};
use crate::sink::{BatchItem, LeadSink, SinkError, RECEIPT_UPDATE_BUDGET};

/// Longest the read of a wave's finished receipts may take; past it the wave goes whole.
pub(super) const FINISHED_READ_LIMIT: Duration = Duration::from_secs(2);

impl<S: LeadSink + Sync, R: ReceiptStore + Sync> Handler<S, R> {
    /// One result per record (`None`: not started), as [`Handler::run_lanes`] gives them.
    pub(super) async fn run_batched(&self, records: &[EventRecord], deadline: Option<Instant>) -> Vec<Option<Settled>> {
        let lanes = lanes(records);
        let mut next = vec![0_usize; lanes.len()];
        let mut results: Vec<Option<Settled>> = (0..records.len()).map(|_| None).collect();
        let lowest = AtomicUsize::new(usize::MAX);
        // Reads, poison marks and receipt updates: as many at once as the lanes take.
        let slots = Semaphore::new(MAX_CONCURRENT_RECORDS);
        let mut first_batch = true;
        loop {
            // Before the first batch, nothing is held back for time: the first is always tried.
            let timed = if first_batch { None } else { deadline };
            let advance =
                lanes.iter().zip(&next).map(|(lane, &at)| self.advance(records, &lane[at..], &lowest, &slots, timed));
            let mut wave = Vec::new();
            for (lane, (settled, pending)) in join_all(advance).await.into_iter().enumerate() {
                next[lane] += settled.len();
                for (index, result) in settled {
                    results[index] = Some(result);
                }
                if let Some(pending) = pending {
                    next[lane] += 1;
                    wave.push(pending);
                }
            }
            if wave.is_empty() {
                return results;
            }
            wave.sort_by_key(|pending| pending.index);
            let wave = self.without_finished(records, wave, &lowest, deadline, &mut results).await;
            // A chunk's receipts are marked while the next chunk goes to the sink, so the store
            // is kept busy across the sink's calls; the wave ends when every mark is known.
            let mut marking = FuturesUnordered::new();
            for chunk in wave.chunks(self.sink.batch_size().max(1)) {
                let low = lowest.load(Ordering::Acquire);
                let chunk: Vec<&Pending> = chunk.iter().filter(|pending| !past(pending.index, low)).collect();
                let Some(first) = chunk.first() else { break };
                let budget = self.sink.batch_budget();
                if !first_batch && deadline.is_some_and(|deadline| Instant::now() + budget > deadline) {
                    let seq = sequence_number(&records[first.index]);
                    log_record(seq, Some(first.receipt.submission_id.as_str()), "defer", "retry", Some("deadline"), 0);
                    results[first.index] = Some(Err(Retry("deadline")));
                    lowest.fetch_min(first.index, Ordering::AcqRel);
                    break;
                }
                first_batch = false;
                let send = self.send_batch(records, &chunk, deadline);
                tokio::pin!(send);
                let (settled, marks) = loop {
                    tokio::select! {
                        sent = &mut send => break sent,
                        Some(done) = marking.next(), if !marking.is_empty() => record(&mut results, &lowest, done),
                    }
                };
                for done in settled {
                    record(&mut results, &lowest, done);
                }
                for (pending, mark, attempt) in marks {
                    let (seq, slots) = (sequence_number(&records[pending.index]), &slots);
                    marking.push(async move {
                        let _slot = slots.acquire().await.expect("the semaphore is never closed");
                        (pending.index, self.mark_applied(seq, pending, mark, attempt).await)
                    });
                }
            }
            while let Some(done) = marking.next().await {
                record(&mut results, &lowest, done);
            }
        }
    }

    /// The wave without the leads whose receipts are finished already, settled as
    /// `already_finished`: in a batch handed back and replayed, the leads after its failure
    /// that were written (the stream's images still say `RECEIVED`). One consistent read per
    /// 100 receipts (of the leads before the lowest known failure), within
    /// [`FINISHED_READ_LIMIT`] and only when that and a batch still fit before the deadline;
    /// a store that does not answer in time leaves the wave whole (the sinks' writes are keyed
    /// by the submission, so a lead sent again is the same lead).
    async fn without_finished(
        &self,
        records: &[EventRecord],
        wave: Vec<Pending>,
        lowest: &AtomicUsize,
        deadline: Option<Instant>,
        results: &mut [Option<Settled>],
    ) -> Vec<Pending> {
        let budget = FINISHED_READ_LIMIT + self.sink.batch_budget();
        if deadline.is_some_and(|deadline| Instant::now() + budget > deadline) {
            return wave;
        }
        let low = lowest.load(Ordering::Acquire);
        let receipts: Vec<(&str, &str)> = wave
            .iter()
            .filter(|p| !past(p.index, low))
            .map(|p| (p.receipt.key.as_str(), p.receipt.received_at.as_str()))
            .collect();
        let read = tokio::time::timeout(FINISHED_READ_LIMIT, self.receipts.finished(&receipts)).await;
        let finished = match read.unwrap_or(Err(ReceiptStoreError("receipt_store_timeout"))) {
            Ok(finished) => finished,
            Err(error) => {
                let first = &wave[0];
                let (seq, id) = (sequence_number(&records[first.index]), first.receipt.submission_id.as_str());
                log_record(seq, Some(id), "read", "sent_anyway", Some(error.0), 1);
                return wave;
            }
        };
        drop(receipts);
        let (done, wave): (Vec<Pending>, Vec<Pending>) =
            wave.into_iter().partition(|p| finished.contains(&p.receipt.key));
        for pending in done {
            let (seq, id) = (sequence_number(&records[pending.index]), pending.receipt.submission_id.as_str());
            log_record(seq, Some(id), "skip", "already_finished", None, 1);
            results[pending.index] = Some(Ok(("already_finished", None)));
        }
        wave
    }

    /// Moves one lane up to its next lead: the records before it settle here (a retry stops
    /// the lane). Nothing past the lowest known failure starts; with a `deadline` (after the
    /// invocation's first batch), a record starts only when a store call still fits before it.
    async fn advance(
        &self,
        records: &[EventRecord],
        lane: &[usize],
        lowest: &AtomicUsize,
        slots: &Semaphore,
        deadline: Option<Instant>,
    ) -> (Vec<(usize, Settled)>, Option<Pending>) {
        let mut settled = Vec::new();
        for &index in lane {
            if past(index, lowest.load(Ordering::Acquire)) {
                break;
            }
            let record = &records[index];
            let _slot = slots.acquire().await.expect("the semaphore is never closed");
            let out_of_time = deadline.is_some_and(|deadline| Instant::now() + RECEIPT_UPDATE_BUDGET > deadline);
            let prepared = if out_of_time {
                log_record(
                    sequence_number(record),
                    new_image(record).submission_id(),
                    "defer",
                    "retry",
                    Some("deadline"),
                    0,
                );
                Prepared::Settled(Err(Retry("deadline")))
            } else {
                self.prepare(record).await
            };
            match prepared {
                Prepared::Apply(mut pending) => {
                    pending.index = index;
                    return (settled, Some(pending));
                }
                Prepared::Settled(result) => {
                    let retry = result.is_err();
                    settled.push((index, result));
                    if retry {
                        lowest.fetch_min(index, Ordering::AcqRel);
                        break;
                    }
                }
            }
        }
        (settled, None)
    }

    /// Sends one batch (again for the leads the sink asks to retry after a pause that fits,
    /// [`MAX_ATTEMPTS`] in all): the leads handed back, settled, and the marks each receipt
    /// takes by its own lead's answer (made by the caller).
    async fn send_batch<'p>(
        &self,
        records: &[EventRecord],
        chunk: &[&'p Pending],
        deadline: Option<Instant>,
    ) -> (Vec<(usize, Settled)>, Vec<(&'p Pending, Mark<'static>, u32)>) {
        let seq = |pending: &Pending| sequence_number(&records[pending.index]);
        fn id(pending: &Pending) -> Option<&str> {
            Some(pending.receipt.submission_id.as_str())
        }
        let mut settled = Vec::new();
        let mut marks: Vec<(&'p Pending, Mark<'static>, u32)> = Vec::new();
        let mut sending: Vec<&'p Pending> = chunk.to_vec();
        let mut attempt = 1;
        while !sending.is_empty() {
            let items: Vec<BatchItem<'_>> = sending
                .iter()
                .map(|pending| BatchItem { lead: &pending.lead, receipt_key: &pending.receipt.key })
                .collect();
            let mut answers = self.sink.upsert_batch(&items, deadline).await;
            // One answer per lead; a sink that gave fewer leaves the rest to retry.
            answers
                .resize(items.len(), Err(SinkError::Retryable { reason: "sink_unexpected_answer", retry_after: None }));
            let (mut again, mut pause, mut handed_back) = (Vec::new(), Duration::ZERO, usize::MAX);
            for (pending, answer) in sending.iter().copied().zip(answers) {
                match answer {
                    Ok(()) => marks.push((pending, Mark::Completed, attempt)),
                    Err(SinkError::Permanent { reason }) => marks.push((pending, Mark::Failed(reason), attempt)),
                    Err(SinkError::Retryable { reason, retry_after }) => {
                        let budget = self.sink.batch_budget();
                        match wait_allowed(retry_after, deadline, budget).filter(|_| attempt < MAX_ATTEMPTS) {
                            Some(wait) => {
                                again.push((pending, reason));
                                pause = pause.max(wait);
                            }
                            None => {
                                log_record(seq(pending), id(pending), "apply", "retry", Some(reason), attempt);
                                settled.push((pending.index, Err(Retry(reason))));
                                handed_back = handed_back.min(pending.index);
                            }
                        }
                    }
                }
            }
            // A lead past one handed back goes back with it instead of being waited for.
            sending.clear();
            for (pending, reason) in again {
                if past(pending.index, handed_back) {
                    log_record(seq(pending), id(pending), "apply", "retry", Some(reason), attempt);
                    settled.push((pending.index, Err(Retry(reason))));
                } else {
                    log_record(seq(pending), id(pending), "apply", "waiting", Some(reason), attempt);
                    sending.push(pending);
                }
            }
            if !sending.is_empty() {
                tokio::time::sleep(pause).await;
                attempt += 1;
            }
        }
        (settled, marks)
    }
}

/// Notes a record's result; a retry lowers the lowest failure.
fn record(results: &mut [Option<Settled>], lowest: &AtomicUsize, (index, result): (usize, Settled)) {
    if result.is_err() {
        lowest.fetch_min(index, Ordering::AcqRel);
    }
    results[index] = Some(result);
}
