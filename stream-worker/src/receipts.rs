//! Marking receipts `COMPLETED` or `FAILED`, only if they are still the receipt the record saw;
//! reading which of a batch's receipts are finished already.

use std::collections::{HashMap, HashSet};
use std::future::Future;

use aws_sdk_dynamodb::types::AttributeValue;
use shared::dynamo::{AttributeValue as Value, Item};
use shared::receipt::ReceiptStatus;

/// The final state a receipt is moved to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark<'a> {
    /// The lead is written.
    Completed,
    /// The lead can never be written, for this stable reason.
    Failed(&'a str),
}

/// What the conditional update found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marked {
    /// The receipt was updated.
    Done,
    /// The same receipt was already `COMPLETED` or `FAILED` (a redelivered record): nothing
    /// was written, and its verdict stands.
    AlreadyFinished,
    /// The receipt is gone (TTL), was replaced by a newer one, or is no longer `RECEIVED`:
    /// nothing was written, and nothing must be, or an expired receipt would come back to life
    /// or a finished one change its verdict.
    Gone,
}

/// The store refused or did not answer. Always retried: a receipt that cannot be marked stays
/// `RECEIVED`, and the record is processed again (the sink's upsert makes that harmless).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReceiptStoreError(pub &'static str);

/// Where receipts live.
pub trait ReceiptStore {
    /// The receipt `key` as stored now (a consistent read), or `None` when there is none.
    fn get(&self, key: &str) -> impl Future<Output = Result<Option<Item>, ReceiptStoreError>> + Send;

    /// Moves the receipt `key` whose `receivedAt` is `received_at` to `mark`, at `now` (ISO-8601).
    fn mark(
        &self,
        key: &str,
        received_at: &str,
        mark: Mark<'_>,
        now: &str,
    ) -> impl Future<Output = Result<Marked, ReceiptStoreError>> + Send;

    /// The keys of `receipts` (key, `receivedAt`) that are finished as stored now: the same
    /// receipt, `COMPLETED` or `FAILED` (a consistent read). A receipt it cannot tell of is
    /// not among them; a store that cannot tell at all says none.
    fn finished(
        &self,
        receipts: &[(&str, &str)],
    ) -> impl Future<Output = Result<HashSet<String>, ReceiptStoreError>> + Send {
        let _ = receipts;
        async { Ok(HashSet::new()) }
    }
}

/// Keys per `BatchGetItem`: DynamoDB takes up to 100.
const KEYS_PER_READ: usize = 100;
/// Rounds of a read's unprocessed keys asked again (DynamoDB returns them when a partition is
/// throttled); after them, those receipts are not known finished.
const UNPROCESSED_ROUNDS: u32 = 3;

/// Receipts in a DynamoDB table.
pub struct DynamoReceipts {
    pub(crate) client: aws_sdk_dynamodb::Client,
    pub(crate) table: String,
}

impl DynamoReceipts {
    pub fn new(client: aws_sdk_dynamodb::Client, table: &str) -> DynamoReceipts {
        DynamoReceipts { client, table: table.to_owned() }
    }
}

impl ReceiptStore for DynamoReceipts {
    async fn get(&self, key: &str) -> Result<Option<Item>, ReceiptStoreError> {
        let request = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(key.to_owned()))
            .consistent_read(true);
        match request.send().await {
            Ok(output) => Ok(output.item.map(|item| item.into_iter().map(|(k, v)| (k, from_sdk(v))).collect())),
            Err(error) if error.as_service_error().is_some() => Err(ReceiptStoreError("receipt_store_refused")),
            Err(_) => Err(ReceiptStoreError("receipt_store_unreachable")),
        }
    }

    async fn finished(&self, receipts: &[(&str, &str)]) -> Result<HashSet<String>, ReceiptStoreError> {
        let mut finished = HashSet::new();
        for chunk in receipts.chunks(KEYS_PER_READ) {
            let mut keys: Vec<HashMap<String, AttributeValue>> = chunk
                .iter()
                .map(|(key, _)| HashMap::from([("pk".to_owned(), AttributeValue::S((*key).to_owned()))]))
                .collect();
            for round in 0..=UNPROCESSED_ROUNDS {
                if round > 0 {
                    tokio::time::sleep(std::time::Duration::from_millis(50 << round)).await;
                }
                // Asked afresh each round with the keys left (an unprocessed answer need not
                // carry the request's attribute names).
                let ask = aws_sdk_dynamodb::types::KeysAndAttributes::builder()
                    .set_keys(Some(keys))
                    .consistent_read(true)
                    .projection_expression("pk, receivedAt, #status")
                    .expression_attribute_names("#status", "status")
                    .build()
                    .map_err(|_| ReceiptStoreError("receipt_store_refused"))?;
                let error = match self.client.batch_get_item().request_items(&self.table, ask).send().await {
                    Ok(output) => {
                        let items = output.responses.into_iter().flat_map(|mut r| r.remove(&self.table)).flatten();
                        finished.extend(finished_among(items, chunk));
                        match output.unprocessed_keys.and_then(|mut left| left.remove(&self.table)) {
                            Some(left) if !left.keys.is_empty() => {
                                keys = left.keys;
                                continue;
                            }
                            _ => break,
                        }
                    }
                    Err(error) if error.as_service_error().is_some() => ReceiptStoreError("receipt_store_refused"),
                    Err(_) => ReceiptStoreError("receipt_store_unreachable"),
                };
                // What is known stands; the rest is not known finished.
                return if finished.is_empty() { Err(error) } else { Ok(finished) };
            }
        }
        Ok(finished)
    }

    async fn mark(&self, key: &str, received_at: &str, mark: Mark<'_>, now: &str) -> Result<Marked, ReceiptStoreError> {
        let s = |v: &str| AttributeValue::S(v.to_owned());
        let status = match mark {
            Mark::Completed => ReceiptStatus::Completed,
            Mark::Failed(_) => ReceiptStatus::Failed,
        };
        // `completedAt` when the lead is written, `failedAt` when it never can be.
        let mut expression = match mark {
            Mark::Completed => String::from("SET #status = :status, completedAt = :now"),
            Mark::Failed(_) => String::from("SET #status = :status, failedAt = :now"),
        };
        let mut update = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(key))
            // The receipt must still exist, be the same one, and still wait for its lead: an
            // unconditional update would re-create a receipt that TTL deleted, and a redelivered
            // record must not turn a COMPLETED receipt into FAILED.
            .condition_expression("attribute_exists(pk) AND receivedAt = :receivedAt AND #status = :received")
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":received", s(ReceiptStatus::Received.as_str()))
            .expression_attribute_values(":status", s(status.as_str()))
            .expression_attribute_values(":now", s(now))
            .expression_attribute_values(":receivedAt", s(received_at));
        if let Mark::Failed(reason) = mark {
            // Into the index of FAILED receipts (the alarm's gauge, the console's list).
            expression.push_str(", failureReason = :reason, #failedShard = :failedShard");
            update = update
                .expression_attribute_values(":reason", s(reason))
                .expression_attribute_names("#failedShard", shared::receipt::FAILED_SHARD)
                .expression_attribute_values(":failedShard", s(&shared::receipt::pending_shard(key)));
        }
        // Out of the index of waiting receipts (reconcile's), in the same write.
        expression.push_str(" REMOVE ");
        expression.push_str(shared::receipt::PENDING_SHARD);
        let update = update.return_values_on_condition_check_failure(
            aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure::AllOld,
        );
        match update.update_expression(expression).send().await {
            Ok(_) => Ok(Marked::Done),
            Err(error) => match error.as_service_error() {
                Some(aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(
                    failed,
                )) => Ok(failed_condition(failed.item(), received_at)),
                Some(_) => Err(ReceiptStoreError("receipt_store_refused")),
                None => Err(ReceiptStoreError("receipt_store_unreachable")),
            },
        }
    }
}

/// What a failed condition on the receipt the record saw (`received_at`) means, from the item
/// as it was (`ALL_OLD`, or as read): "already finished" (the same receipt, `COMPLETED` or `FAILED`), or
/// "gone" (deleted, replaced by a newer receipt, or anything else).
fn failed_condition(old: Option<&HashMap<String, AttributeValue>>, received_at: &str) -> Marked {
    let same = old_text(old, "receivedAt") == Some(received_at);
    let finished = matches!(old_text(old, "status"), Some("COMPLETED" | "FAILED"));
    if same && finished {
        Marked::AlreadyFinished
    } else {
        Marked::Gone
    }
}

/// The keys among `asked` (key, `receivedAt`) whose item, as read, is the same receipt and
/// finished (`COMPLETED` or `FAILED`).
fn finished_among(
    items: impl IntoIterator<Item = HashMap<String, AttributeValue>>,
    asked: &[(&str, &str)],
) -> Vec<String> {
    let mut finished = Vec::new();
    for item in items {
        let key = old_text(Some(&item), "pk");
        if let Some((key, received_at)) = asked.iter().find(|(k, _)| Some(*k) == key) {
            if failed_condition(Some(&item), received_at) == Marked::AlreadyFinished {
                finished.push((*key).to_owned());
            }
        }
    }
    finished
}

/// The string attribute `name` of the item a failed condition returned (`ALL_OLD`), if any.
pub(crate) fn old_text<'a>(item: Option<&'a HashMap<String, AttributeValue>>, name: &str) -> Option<&'a str> {
    match item?.get(name)? {
        AttributeValue::S(value) => Some(value),
        _ => None,
    }
}

/// An SDK attribute value in the core's types (values of types the SDK adds later read as
/// `NULL`; receipts hold none).
pub(crate) fn from_sdk(value: AttributeValue) -> Value {
    match value {
        AttributeValue::S(s) => Value::S(s),
        AttributeValue::N(n) => Value::N(n),
        AttributeValue::B(b) => Value::B(b.into_inner()),
        AttributeValue::Bool(b) => Value::Bool(b),
        AttributeValue::M(m) => Value::M(m.into_iter().map(|(k, v)| (k, from_sdk(v))).collect()),
        AttributeValue::L(l) => Value::L(l.into_iter().map(from_sdk).collect()),
        AttributeValue::Ss(s) => Value::Ss(s),
        AttributeValue::Ns(n) => Value::Ns(n),
        AttributeValue::Bs(b) => Value::Bs(b.into_iter().map(|b| b.into_inner()).collect()),
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(fields: &[(&str, &str)]) -> HashMap<String, AttributeValue> {
        fields.iter().map(|(k, v)| ((*k).to_owned(), AttributeValue::S((*v).to_owned()))).collect()
    }

    #[test]
    fn a_failed_condition_is_already_finished_only_for_the_same_finished_receipt() {
        let at = "2026-11-30T07:00:00.000Z";
        for status in ["COMPLETED", "FAILED"] {
            let same = item(&[("receivedAt", at), ("status", status)]);
            assert_eq!(failed_condition(Some(&same), at), Marked::AlreadyFinished, "{status}");
            // A newer receipt under the same key, finished or not: not the one the record saw.
            let newer = item(&[("receivedAt", "2026-11-30T08:00:00.000Z"), ("status", status)]);
            assert_eq!(failed_condition(Some(&newer), at), Marked::Gone, "{status}");
        }
        // Deleted (no item), still RECEIVED (a stale record's receivedAt), or malformed.
        assert_eq!(failed_condition(None, at), Marked::Gone);
        assert_eq!(failed_condition(Some(&item(&[("receivedAt", at), ("status", "RECEIVED")])), at), Marked::Gone);
        assert_eq!(failed_condition(Some(&item(&[("status", "COMPLETED")])), at), Marked::Gone);
        let mut typed = item(&[("status", "COMPLETED")]);
        typed.insert("receivedAt".into(), AttributeValue::N("1".into()));
        assert_eq!(failed_condition(Some(&typed), at), Marked::Gone);
        assert_eq!(old_text(Some(&typed), "receivedAt"), None, "only string attributes are read");
        assert_eq!(old_text(Some(&typed), "status"), Some("COMPLETED"));
    }

    #[test]
    fn a_read_receipt_is_finished_only_when_it_is_the_one_asked_for_and_finished() {
        let (at, later) = ("2026-11-30T07:00:00.000Z", "2026-11-30T08:00:00.000Z");
        let items = vec![
            item(&[("pk", "a"), ("receivedAt", at), ("status", "COMPLETED")]),
            item(&[("pk", "b"), ("receivedAt", at), ("status", "FAILED")]),
            item(&[("pk", "c"), ("receivedAt", at), ("status", "RECEIVED")]),
            // Replaced since (TTL, then a new delivery): not the receipt the record saw.
            item(&[("pk", "d"), ("receivedAt", later), ("status", "COMPLETED")]),
            // Not asked for.
            item(&[("pk", "e"), ("receivedAt", at), ("status", "COMPLETED")]),
        ];
        let asked = [("a", at), ("b", at), ("c", at), ("d", at), ("f", at)];
        assert_eq!(finished_among(items, &asked), ["a", "b"]);
    }

    #[test]
    fn sdk_values_map_to_the_core_types() {
        use aws_sdk_dynamodb::primitives::Blob;
        let map = AttributeValue::M(
            [("a".to_owned(), AttributeValue::L(vec![AttributeValue::N("1".into()), AttributeValue::Null(true)]))]
                .into(),
        );
        assert_eq!(
            from_sdk(map),
            Value::M([("a".to_owned(), Value::L(vec![Value::N("1".into()), Value::Null]))].into())
        );
        assert_eq!(from_sdk(AttributeValue::B(Blob::new(vec![1, 2]))), Value::B(vec![1, 2]));
        assert_eq!(from_sdk(AttributeValue::Ss(vec!["x".into()])), Value::Ss(vec!["x".into()]));
        assert_eq!(from_sdk(AttributeValue::Bool(true)), Value::Bool(true));
        assert_eq!(from_sdk(AttributeValue::S("s".into())), Value::S("s".into()));
        assert_eq!(from_sdk(AttributeValue::Ns(vec!["2".into()])), Value::Ns(vec!["2".into()]));
        let blobs = AttributeValue::Bs(vec![Blob::new(vec![3])]);
        assert_eq!(from_sdk(blobs), Value::Bs(vec![vec![3]]));
    }
}
