//! The batch handler, shared by Lambda and the local poller: records in order, stop at the
//! first retryable failure, report that record's sequence number.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aws_lambda_events::event::dynamodb::{Event, EventRecord};
use aws_lambda_events::event::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use shared::stream::{decide, submission_id_of_key, NewImage, RecordAction, RecordLog};
use shared::time::iso8601_millis;

use crate::receipts::{Mark, Marked, ReceiptStore};
use crate::sink::{LeadSink, SinkError};

/// Attempts per record within one invocation when the sink asks to be retried later.
pub const MAX_ATTEMPTS: u32 = 3;
/// Time kept in reserve after a `Retry-After` wait for the upsert and the receipt update.
pub const RESERVE: Duration = Duration::from_secs(3);
/// Longest `Retry-After` honoured in place when there is no invocation deadline (local mode).
pub const MAX_LOCAL_WAIT: Duration = Duration::from_secs(30);

/// Turns receipts into leads.
pub struct Handler<S, R> {
    pub sink: S,
    pub receipts: R,
}

/// A record that must be retried, from its sequence number on.
struct Retry;

impl<S: LeadSink + Sync, R: ReceiptStore + Sync> Handler<S, R> {
    /// Processes `event`'s records in order and reports the first that must be retried.
    /// `deadline` is when the invocation ends (Lambda's), if it has one.
    pub async fn handle(&self, event: Event, deadline: Option<Instant>) -> DynamoDbEventResponse {
        let mut response = DynamoDbEventResponse::default();
        for record in &event.records {
            if self.process(record, deadline).await.is_err() {
                let mut failure = DynamoDbBatchItemFailure::default();
                failure.item_identifier = record.change.sequence_number.clone();
                response.batch_item_failures.push(failure);
                break;
            }
        }
        response
    }

    async fn process(&self, record: &EventRecord, deadline: Option<Instant>) -> Result<(), Retry> {
        let seq = record.change.sequence_number.as_deref().unwrap_or("");
        let image = new_image(record);
        let log = |submission_id, action, outcome, attempt| {
            emit(&RecordLog { sequence_number: seq, submission_id, action, outcome, attempt });
        };
        match decide(&record.event_name, &image) {
            RecordAction::Skip(reason) => {
                log(image.submission_id(), "skip", reason, 1);
                Ok(())
            }
            RecordAction::MissingImage => {
                log(None, "retry", "missing_new_image", 1);
                Err(Retry)
            }
            RecordAction::Poison { key, received_at, reason } => {
                let id = submission_id_of_key(&key);
                let outcome = self.finish(&key, &received_at, Mark::Failed(reason)).await;
                log(id, "poison", outcome.unwrap_or("retry"), 1);
                outcome.map(|_| ()).ok_or(Retry)
            }
            RecordAction::Apply { receipt, lead } => {
                let id = Some(receipt.submission_id.as_str());
                let mut attempt = 1;
                loop {
                    match self.sink.upsert(&lead, &receipt.key).await {
                        Ok(()) => {
                            let outcome = self.finish(&receipt.key, &receipt.received_at, Mark::Completed).await;
                            log(id, "apply", outcome.unwrap_or("retry"), attempt);
                            return outcome.map(|_| ()).ok_or(Retry);
                        }
                        Err(SinkError::Permanent { reason }) => {
                            let outcome = self.finish(&receipt.key, &receipt.received_at, Mark::Failed(reason)).await;
                            log(id, "apply", outcome.unwrap_or("retry"), attempt);
                            return outcome.map(|_| ()).ok_or(Retry);
                        }
                        Err(SinkError::Retryable { reason, retry_after }) => {
                            match wait_allowed(retry_after, deadline).filter(|_| attempt < MAX_ATTEMPTS) {
                                Some(wait) => {
                                    log(id, "apply", reason, attempt);
                                    tokio::time::sleep(wait).await;
                                    attempt += 1;
                                }
                                None => {
                                    log(id, "apply", "retry", attempt);
                                    return Err(Retry);
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// Marks the receipt; `Some("completed" | "failed" | "receipt_gone")`, or `None` to retry.
    async fn finish(&self, key: &str, received_at: &str, mark: Mark<'_>) -> Option<&'static str> {
        let now = iso8601_millis(SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64));
        match self.receipts.mark(key, received_at, mark, &now).await {
            Ok(Marked::Done) => Some(if matches!(mark, Mark::Completed) { "completed" } else { "failed" }),
            Ok(Marked::Gone) => Some("receipt_gone"),
            Err(_) => None,
        }
    }
}

/// How long to wait before retrying in place, if the sink said and time allows.
fn wait_allowed(retry_after: Option<Duration>, deadline: Option<Instant>) -> Option<Duration> {
    let wait = retry_after?;
    match deadline {
        Some(deadline) => (Instant::now() + wait + RESERVE <= deadline).then_some(wait),
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

/// Writes one log line to stdout (CloudWatch, in Lambda).
#[allow(clippy::print_stdout)]
fn emit(record: &RecordLog<'_>) {
    println!("{}", record.to_json_line());
}

#[cfg(test)]
mod tests;
