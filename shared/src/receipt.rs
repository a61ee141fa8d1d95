//! The receipt: the durable record that a delivery arrived, and its DynamoDB item form.

use alloc::string::String;

use crate::dynamo::{to_json, AttributeValue, Item};
use crate::envelope::Envelope;
use crate::json::{self, Json};
use crate::profile::Profile;
use crate::time::iso8601_millis;
use sha2::{Digest, Sha256};

/// Where a receipt is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReceiptStatus {
    /// Stored by the edge; the lead is not written yet.
    Received,
    /// The lead is written.
    Completed,
    /// The lead can never be written (see `failureReason`).
    Failed,
}

impl ReceiptStatus {
    /// The stored text: `RECEIVED`, `COMPLETED`, `FAILED`.
    pub fn as_str(self) -> &'static str {
        match self {
            ReceiptStatus::Received => "RECEIVED",
            ReceiptStatus::Completed => "COMPLETED",
            ReceiptStatus::Failed => "FAILED",
        }
    }

    /// Reads the stored text.
    pub fn parse(text: &str) -> Option<ReceiptStatus> {
        [ReceiptStatus::Received, ReceiptStatus::Completed, ReceiptStatus::Failed]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

/// One receipt. Attribute names in DynamoDB are given on each field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Receipt {
    /// `pk`: the idempotency key, the table's partition key ([`Profile::key`]).
    pub key: String,
    /// `profile`: the sender's profile (receipts stored before profiles have none: `staticforms`).
    pub profile: Profile,
    /// `event`: the event the delivery reports (`form.submitted` for Static Forms).
    pub event: String,
    /// `submissionId`: the delivery's identity within its profile.
    pub submission_id: String,
    /// `payload`: the body with `data.apiKey` redacted, stored as compact JSON text in a string
    /// attribute (receipts stored before that hold it as a map, and still read).
    pub payload: Json,
    /// `fingerprint`: of what a retry must repeat (for Static Forms `v1:` and the hex SHA-256 of
    /// the canonical `formData`; each profile documents its own).
    pub fingerprint: String,
    /// `status`.
    pub status: ReceiptStatus,
    /// `receivedAt`: ISO-8601 UTC with milliseconds.
    pub received_at: String,
    /// `expiresAt`: epoch seconds when the receipt may be deleted (the table's TTL attribute).
    pub expires_at: i64,
    /// `requestId`: the request that stored it.
    pub request_id: String,
    /// `completedAt`, once the lead is written.
    pub completed_at: Option<String>,
    /// `failedAt`, when the receipt was marked `FAILED`.
    pub failed_at: Option<String>,
    /// `failureReason`, when the lead can never be written.
    pub failure_reason: Option<String>,
}

/// Why an item is not a readable receipt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReceiptError {
    /// A required attribute is absent.
    Missing(&'static str),
    /// An attribute has the wrong type or an unreadable value.
    Invalid(&'static str),
}

/// What replaces a credential in a stored payload.
pub const REDACTED: &str = "[redacted]";

/// The sparse index of receipts still waiting for their lead: its partition key
/// (`pendingShard`) is present only while a receipt is `RECEIVED` and removed by the update
/// that completes or fails it, so the index holds exactly the receipts reconcile must look at.
pub const PENDING_INDEX: &str = "pending";
/// The attribute that puts a receipt in [`PENDING_INDEX`].
pub const PENDING_SHARD: &str = "pendingShard";
/// How many partition key values [`PENDING_INDEX`] spreads receipts over. One index partition
/// takes about 1,000 writes per second, and an index that cannot keep up throttles the table's
/// own writes: 16 values keep the index out of the way up to about 16,000 receipts per second.
pub const PENDING_SHARDS: u8 = 16;

/// The sparse index of `FAILED` receipts: its partition key (`failedShard`, the same digit as
/// [`pending_shard`]) is set by the update that fails a receipt and removed by the one that
/// redrives it, so counting and listing the receipts an operator must act on is one query per
/// shard (TTL's deletion takes an expired one out too). Spread like [`PENDING_INDEX`], since a
/// lead content the sink refuses (a form sending a value the CRM rejects) can fail every
/// receipt at the rate they arrive.
pub const FAILED_INDEX: &str = "failed";
/// The attribute that puts a receipt in [`FAILED_INDEX`].
pub const FAILED_SHARD: &str = "failedShard";

/// Since when the receipt `item` has been waiting for its lead: `receivedAt`, or `redrivenAt`
/// when it was redriven later (ISO-8601 text, which orders as time). Reconcile takes a receipt
/// only when this is older than its threshold, so a receipt just redriven (which the stream is
/// about to process) or just replaced after expiry is left to the stream.
pub fn waiting_since(item: &Item) -> Option<&str> {
    let text = |name: &str| item.get(name).and_then(AttributeValue::as_s);
    match (text("receivedAt"), text("redrivenAt")) {
        (Some(received), Some(redriven)) => Some(if redriven > received { redriven } else { received }),
        (received, None) => received,
        (None, redriven) => redriven,
    }
}

/// The `pendingShard` value of the receipt `key`: one hex digit (`0`..`f`) from its SHA-256, so
/// the same key always lands in the same shard and keys spread evenly.
pub fn pending_shard(key: &str) -> String {
    let digest = Sha256::digest(key.as_bytes());
    let mut shard = String::new();
    shard.push(char::from(crate::hex::DIGITS[usize::from(digest[0] & 0x0f)]));
    shard
}

impl Receipt {
    /// A new `RECEIVED` receipt for a checked envelope, stored at `now_millis` and kept for
    /// `retention_days`.
    pub fn new(envelope: &Envelope, key: String, request_id: &str, now_millis: u64, retention_days: u32) -> Receipt {
        let mut payload = envelope.body.clone();
        // Static Forms' form API key is the sender's credential: it is not needed downstream,
        // and a receipts table is no place to keep it.
        if let (Profile::StaticForms, Json::Object(body)) = (envelope.profile, &mut payload) {
            if let Some(Json::Object(data)) = body.get_mut("data") {
                if let Some(api_key) = data.get_mut("apiKey") {
                    *api_key = Json::string(REDACTED);
                }
            }
        }
        let now_secs = i64::try_from(now_millis / 1000).unwrap_or(i64::MAX);
        Receipt {
            key,
            profile: envelope.profile,
            event: envelope.event.clone(),
            submission_id: envelope.submission_id.clone(),
            fingerprint: envelope.fingerprint.clone(),
            payload,
            status: ReceiptStatus::Received,
            received_at: iso8601_millis(now_millis),
            expires_at: now_secs.saturating_add(i64::from(retention_days) * 86_400),
            request_id: String::from(request_id),
            completed_at: None,
            failed_at: None,
            failure_reason: None,
        }
    }

    /// `data.formData` of the stored payload.
    pub fn form_data(&self) -> Option<&Json> {
        self.payload.get("data").and_then(|d| d.get("formData"))
    }

    /// The DynamoDB item.
    pub fn to_item(&self) -> Item {
        let s = |v: &str| AttributeValue::S(String::from(v));
        let mut item = Item::new();
        item.insert("pk".into(), s(&self.key));
        item.insert("profile".into(), s(self.profile.name()));
        item.insert("event".into(), s(&self.event));
        item.insert("submissionId".into(), s(&self.submission_id));
        item.insert("payload".into(), AttributeValue::S(self.payload.to_text()));
        item.insert("fingerprint".into(), s(&self.fingerprint));
        item.insert("status".into(), s(self.status.as_str()));
        item.insert("receivedAt".into(), s(&self.received_at));
        item.insert("expiresAt".into(), AttributeValue::N(alloc::format!("{}", self.expires_at)));
        item.insert("requestId".into(), s(&self.request_id));
        match self.status {
            ReceiptStatus::Received => item.insert(PENDING_SHARD.into(), AttributeValue::S(pending_shard(&self.key))),
            ReceiptStatus::Failed => item.insert(FAILED_SHARD.into(), AttributeValue::S(pending_shard(&self.key))),
            ReceiptStatus::Completed => None,
        };
        if let Some(at) = &self.completed_at {
            item.insert("completedAt".into(), s(at));
        }
        if let Some(at) = &self.failed_at {
            item.insert("failedAt".into(), s(at));
        }
        if let Some(reason) = &self.failure_reason {
            item.insert("failureReason".into(), s(reason));
        }
        item
    }

    /// Reads a receipt back from its item.
    pub fn from_item(item: &Item) -> Result<Receipt, ReceiptError> {
        let get = |name: &'static str| item.get(name).ok_or(ReceiptError::Missing(name));
        let s = |name: &'static str| get(name)?.as_s().map(String::from).ok_or(ReceiptError::Invalid(name));
        let optional = |name: &'static str| item.get(name).map(|_| s(name)).transpose();
        let status = ReceiptStatus::parse(&s("status")?).ok_or(ReceiptError::Invalid("status"))?;
        let expires_at =
            get("expiresAt")?.as_n().and_then(|n| n.parse().ok()).ok_or(ReceiptError::Invalid("expiresAt"))?;
        let payload = match get("payload")? {
            AttributeValue::S(text) => json::parse(text.as_bytes()).map_err(|_| ReceiptError::Invalid("payload"))?,
            // Stored before payloads became text.
            map @ AttributeValue::M(_) => to_json(map),
            _ => return Err(ReceiptError::Invalid("payload")),
        };
        let profile = match optional("profile")? {
            None => Profile::StaticForms,
            Some(name) => Profile::parse(&name).ok_or(ReceiptError::Invalid("profile"))?,
        };
        Ok(Receipt {
            key: s("pk")?,
            profile,
            event: s("event")?,
            submission_id: s("submissionId")?,
            payload,
            fingerprint: s("fingerprint")?,
            status,
            received_at: s("receivedAt")?,
            expires_at,
            request_id: s("requestId")?,
            completed_at: optional("completedAt")?,
            failed_at: optional("failedAt")?,
            failure_reason: optional("failureReason")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dynamo::{item_from_wire, item_to_wire};
    use crate::envelope::parse_envelope;
    use crate::json::parse;
    use crate::key::expected_key;
    use wasm_bindgen_test::wasm_bindgen_test;

    const DELIVERY: &str = include_str!("../tests/fixtures/delivery.json");
    const ITEM: &str = include_str!("../tests/fixtures/receipt_item.json");

    fn sample() -> Receipt {
        let envelope = parse_envelope(DELIVERY.as_bytes()).unwrap();
        Receipt::new(&envelope, expected_key(&envelope.submission_id), "req-1", 1_796_019_713_123, 30)
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn item_matches_the_fixture() {
        let wire = item_to_wire(&sample().to_item());
        assert_eq!(wire, parse(ITEM.as_bytes()).unwrap());
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn fields_and_redaction() {
        let receipt = sample();
        assert_eq!(receipt.key, "staticforms:form.submitted:sub_8fK2qLw9Xc");
        assert_eq!(receipt.received_at, "2026-11-30T06:21:53.123Z");
        assert_eq!(receipt.expires_at, 1_796_019_713 + 30 * 86_400);
        assert_eq!(receipt.payload.get("data").and_then(|d| d.get("apiKey")).and_then(Json::as_str), Some(REDACTED));
        assert!(!receipt.payload.to_text().contains("sf_live_redacted"));
        assert_eq!(receipt.form_data().and_then(|f| f.get("email")).and_then(Json::as_str), Some("ada@example.com"));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn item_round_trips() {
        let mut receipt = sample();
        assert_eq!(Receipt::from_item(&receipt.to_item()), Ok(receipt.clone()));
        receipt.status = ReceiptStatus::Failed;
        receipt.failed_at = Some("2026-11-30T06:22:00.000Z".into());
        receipt.failure_reason = Some("unmappable".into());
        let read = Receipt::from_item(&item_from_wire(&item_to_wire(&receipt.to_item())).unwrap());
        assert_eq!(read, Ok(receipt));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn only_a_waiting_receipt_is_in_the_pending_index_and_only_a_failed_one_in_the_failed_index() {
        let mut receipt = sample();
        let six = Some(AttributeValue::S("6".into()));
        // printf 'staticforms:form.submitted:sub_8fK2qLw9Xc' | sha256sum: 26…, low nibble 6.
        let shards = |receipt: &Receipt| {
            let item = receipt.to_item();
            (item.get(PENDING_SHARD).cloned(), item.get(FAILED_SHARD).cloned())
        };
        assert_eq!(shards(&receipt), (six.clone(), None));
        receipt.status = ReceiptStatus::Completed;
        assert_eq!(shards(&receipt), (None, None));
        receipt.status = ReceiptStatus::Failed;
        assert_eq!(shards(&receipt), (None, six));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn a_receipt_waits_since_it_was_received_or_redriven() {
        let mut item = sample().to_item();
        assert_eq!(waiting_since(&item), Some("2026-11-30T06:21:53.123Z"));
        item.insert("redrivenAt".into(), AttributeValue::S("2026-12-01T00:00:00.000Z".into()));
        assert_eq!(waiting_since(&item), Some("2026-12-01T00:00:00.000Z"));
        item.insert("redrivenAt".into(), AttributeValue::S("2026-01-01T00:00:00.000Z".into()));
        assert_eq!(waiting_since(&item), Some("2026-11-30T06:21:53.123Z"));
        item.remove("receivedAt");
        assert_eq!(waiting_since(&item), Some("2026-01-01T00:00:00.000Z"));
        item.remove("redrivenAt");
        assert_eq!(waiting_since(&item), None);
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn pending_shards_are_one_hex_digit_and_all_are_used() {
        let mut seen = alloc::collections::BTreeSet::new();
        for n in 0..400 {
            let shard = pending_shard(&alloc::format!("staticforms:form.submitted:sub_{n}"));
            assert_eq!(shard.len(), 1);
            assert!(u8::from_str_radix(&shard, 16).is_ok_and(|v| v < PENDING_SHARDS), "{shard}");
            seen.insert(shard);
        }
        assert_eq!(seen.len(), usize::from(PENDING_SHARDS));
        assert_eq!(pending_shard("k"), pending_shard("k"));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn unreadable_items_say_which_attribute() {
        let mut item = sample().to_item();
        item.remove("fingerprint");
        assert_eq!(Receipt::from_item(&item), Err(ReceiptError::Missing("fingerprint")));
        let mut item = sample().to_item();
        item.insert("status".into(), AttributeValue::S("LOST".into()));
        assert_eq!(Receipt::from_item(&item), Err(ReceiptError::Invalid("status")));
        let mut item = sample().to_item();
        item.insert("expiresAt".into(), AttributeValue::S("soon".into()));
        assert_eq!(Receipt::from_item(&item), Err(ReceiptError::Invalid("expiresAt")));
        for bad in [AttributeValue::S("{".into()), AttributeValue::S("".into()), AttributeValue::N("1".into())] {
            let mut item = sample().to_item();
            item.insert("payload".into(), bad);
            assert_eq!(Receipt::from_item(&item), Err(ReceiptError::Invalid("payload")));
        }
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn the_payload_is_text_and_a_stored_map_still_reads() {
        let receipt = sample();
        let item = receipt.to_item();
        assert_eq!(item.get("payload").and_then(AttributeValue::as_s), Some(receipt.payload.to_text().as_str()));
        let mut legacy = item.clone();
        legacy.insert("payload".into(), crate::dynamo::from_json(&receipt.payload));
        assert_eq!(Receipt::from_item(&legacy), Ok(receipt));
    }
}
