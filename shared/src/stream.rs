//! What the stream worker does with one stream record, decided without I/O.
//!
//! A record is worth acting on when its new image is a `RECEIVED` receipt: an `INSERT`, or a
//! `MODIFY` that replaced an expired receipt with a new one. Everything else (the worker's own
//! `COMPLETED`/`FAILED` updates, TTL deletions, items that are not receipts) is skipped.
//!
//! A new image that is there but cannot be read is never taken for a missing one: a missing
//! image is the stream's configuration (the shell reads the receipt by the record's key, and
//! retries when it has no key either; nothing may be skipped for it), an unreadable one is this
//! receipt's content (poison: marked `FAILED` with a reason, and the shard moves on).

use alloc::boxed::Box;
use alloc::string::String;
use core::fmt::Write as _;

use crate::dynamo::{item_from_wire, Item};
use crate::envelope::is_valid_submission_id;
use crate::json::{parse_wire, write_ascii_string, write_string};
use crate::lead::Lead;
use crate::profile::registry::{lead_from_receipt, LeadMapping};
use crate::profile::Profile;
use crate::receipt::{Receipt, ReceiptStatus};

/// What to do with one record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordAction {
    /// Nothing to do; the reason is for the log.
    Skip(&'static str),
    /// Upsert `lead`, then mark `receipt` completed.
    Apply {
        /// The receipt as the record carries it.
        receipt: Box<Receipt>,
        /// Its lead.
        lead: Box<Lead>,
    },
    /// The receipt can never become a lead: mark it `FAILED` with `reason` and move on.
    Poison {
        /// The receipt's key.
        key: String,
        /// Its `receivedAt`, so the update touches only this receipt.
        received_at: String,
        /// Why, as a stable code.
        reason: &'static str,
    },
    /// A receipt this version cannot map yet: its `profile` is one a newer version wrote (a
    /// worker rolled back, or deployed after the edge). Retried, never failed: a worker that
    /// knows the profile settles it (the stream's, or reconcile's later).
    Wait(&'static str),
    /// An `INSERT` or `MODIFY` without a new image: the stream's view type is wrong
    /// (`KEYS_ONLY` or `OLD_IMAGE`). Nothing may be skipped for that: the shell reads the
    /// receipt by the record's key, or retries the record when it has none.
    MissingImage,
}

/// A record's new image, as the shell found it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NewImage {
    /// The record carries no new image.
    Absent,
    /// The record carries one, but it is not DynamoDB JSON this crate reads. The shell reads
    /// the three top-level string attributes that identify a receipt on its own, when it can.
    Unreadable {
        /// `pk`.
        key: Option<String>,
        /// `status`.
        status: Option<String>,
        /// `receivedAt`.
        received_at: Option<String>,
    },
    /// The image, read.
    Item(Item),
}

impl NewImage {
    /// Reads an image from its wire JSON; `fallback` gives `(pk, status, receivedAt)` read by
    /// other means, for when the wire JSON cannot be read.
    pub fn from_wire(
        wire: &[u8],
        fallback: impl FnOnce() -> (Option<String>, Option<String>, Option<String>),
    ) -> NewImage {
        match parse_wire(wire).ok().map(|json| item_from_wire(&json)) {
            Some(Ok(item)) => NewImage::Item(item),
            _ => {
                let (key, status, received_at) = fallback();
                NewImage::Unreadable { key, status, received_at }
            }
        }
    }

    /// The submission ID a log line may carry: the item's, or the one in its key.
    pub fn submission_id(&self) -> Option<&str> {
        match self {
            NewImage::Item(item) => item.get("submissionId").and_then(|v| v.as_s()),
            NewImage::Unreadable { key: Some(key), .. } => submission_id_of_key(key),
            _ => None,
        }
    }
}

/// The submission ID inside a receipt key (`staticforms:form.submitted:<id>`, `tally:<id>`, ...:
/// [`Profile::of_key`]), which may itself hold `:`.
pub fn submission_id_of_key(key: &str) -> Option<&str> {
    Profile::of_key(key).map(|(_, id)| id)
}

/// Decides what to do with a record from its `eventName` and its new image; `mapping` is how
/// receipts become leads where that is configured.
pub fn decide(event_name: &str, new_image: &NewImage, mapping: &LeadMapping) -> RecordAction {
    match event_name {
        "INSERT" | "MODIFY" => {}
        "REMOVE" => return RecordAction::Skip("removed"),
        _ => return RecordAction::Skip("unknown_event"),
    }
    let image = match new_image {
        NewImage::Absent => return RecordAction::MissingImage,
        NewImage::Unreadable { key: Some(key), status: Some(status), received_at: Some(received_at) } => {
            if status != ReceiptStatus::Received.as_str() {
                return RecordAction::Skip("not_received");
            }
            return RecordAction::Poison {
                key: key.clone(),
                received_at: received_at.clone(),
                reason: "unreadable_image",
            };
        }
        // Without its key and receivedAt it cannot be marked, and it cannot be a receipt the
        // edge wrote (those three are plain strings in every receipt).
        NewImage::Unreadable { .. } => return RecordAction::Skip("not_a_receipt"),
        NewImage::Item(item) => item,
    };
    let text = |name: &str| image.get(name).and_then(|v| v.as_s());
    let (Some(key), Some(status), Some(received_at)) = (text("pk"), text("status"), text("receivedAt")) else {
        return RecordAction::Skip("not_a_receipt");
    };
    if status != ReceiptStatus::Received.as_str() {
        return RecordAction::Skip("not_received");
    }
    let poison =
        |reason| RecordAction::Poison { key: String::from(key), received_at: String::from(received_at), reason };
    if text("profile").is_some_and(|name| Profile::parse(name).is_none()) {
        return RecordAction::Wait("unknown_profile");
    }
    let receipt = match Receipt::from_item(image) {
        Ok(receipt) => receipt,
        Err(_) => return poison("unreadable_receipt"),
    };
    match lead_from_receipt(&receipt, mapping) {
        Ok(lead) => RecordAction::Apply { receipt: Box::new(receipt), lead: Box::new(lead) },
        Err(error) => poison(error.reason()),
    }
}

/// The stream worker's log line for one record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordLog<'a> {
    /// The record's sequence number.
    pub sequence_number: &'a str,
    /// The submission ID, when the record is a receipt.
    pub submission_id: Option<&'a str>,
    /// What was attempted: `skip`, `apply`, `poison`, `defer` (no time left), `fetch` (the
    /// receipt read by key), `read` (a wave's finished receipts read, then `sent_anyway`).
    pub action: &'static str,
    /// How it ended: `completed`, `failed`, `retry`, `waiting`, `receipt_gone`, or the skip
    /// reason.
    pub outcome: &'static str,
    /// Why, for `retry`, `waiting`, `failed` and `sent_anyway`: a stable code such as `sink_unauthorized`,
    /// `sink_unavailable`, `receipt_store_unreachable`, `missing_new_image` or `deadline`.
    pub reason: Option<&'static str>,
    /// How many times this invocation has tried the record (1 for the first).
    pub attempt: u32,
}

impl RecordLog<'_> {
    /// The record as one line of JSON; identifiers that are not plain are dropped.
    pub fn to_json_line(&self) -> String {
        let mut line = String::from("{\"sequenceNumber\":");
        let plain = |s: &str| !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_alphanumeric());
        match Some(self.sequence_number).filter(|s| plain(s)) {
            Some(seq) => write_string(seq, &mut line),
            None => line.push_str("null"),
        }
        line.push_str(",\"submissionId\":");
        match self.submission_id.filter(|id| is_valid_submission_id(id)) {
            Some(id) => write_ascii_string(id, &mut line),
            None => line.push_str("null"),
        }
        line.push_str(",\"action\":");
        write_string(self.action, &mut line);
        line.push_str(",\"outcome\":");
        write_string(self.outcome, &mut line);
        line.push_str(",\"reason\":");
        match self.reason {
            Some(reason) => write_string(reason, &mut line),
            None => line.push_str("null"),
        }
        let _ = write!(line, ",\"attempt\":{}}}", self.attempt);
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dynamo::{item_from_wire, AttributeValue};
    use crate::json::parse;
    use wasm_bindgen_test::wasm_bindgen_test;

    const ITEM: &str = include_str!("../tests/fixtures/receipt_item.json");

    fn item() -> Item {
        item_from_wire(&parse(ITEM.as_bytes()).unwrap()).unwrap()
    }

    fn action(event: &str, image: Option<Item>) -> RecordAction {
        decide(event, &image.map_or(NewImage::Absent, NewImage::Item), &LeadMapping::default())
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn received_receipts_become_leads() {
        for event in ["INSERT", "MODIFY"] {
            match action(event, Some(item())) {
                RecordAction::Apply { receipt, lead } => {
                    assert_eq!(receipt.key, "staticforms:form.submitted:sub_8fK2qLw9Xc");
                    assert_eq!(lead.external_id, "sub_8fK2qLw9Xc");
                    assert_eq!(lead.email, "ada@example.com");
                }
                other => panic!("{event}: {other:?}"),
            }
        }
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn a_profile_this_version_does_not_know_waits_and_one_from_before_profiles_is_static_forms() {
        let mut newer = item();
        newer.insert("profile".into(), AttributeValue::S("jotform".into()));
        assert_eq!(action("INSERT", Some(newer)), RecordAction::Wait("unknown_profile"));
        let mut older = item();
        older.remove("profile");
        match action("INSERT", Some(older)) {
            RecordAction::Apply { receipt, lead } => {
                assert_eq!((receipt.profile, lead.external_id.as_str()), (Profile::StaticForms, "sub_8fK2qLw9Xc"));
            }
            other => panic!("{other:?}"),
        }
        // Not waiting, it is skipped as any finished receipt is.
        let mut done = item();
        done.insert("profile".into(), AttributeValue::S("jotform".into()));
        done.insert("status".into(), AttributeValue::S("COMPLETED".into()));
        assert_eq!(action("MODIFY", Some(done)), RecordAction::Skip("not_received"));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn everything_else_is_skipped_or_refused() {
        assert_eq!(action("REMOVE", None), RecordAction::Skip("removed"));
        assert_eq!(action("REMOVE", Some(item())), RecordAction::Skip("removed"));
        assert_eq!(action("INSERT", None), RecordAction::MissingImage);
        let mut completed = item();
        completed.insert("status".into(), AttributeValue::S("COMPLETED".into()));
        assert_eq!(action("MODIFY", Some(completed)), RecordAction::Skip("not_received"));
        let mut other = Item::new();
        other.insert("pk".into(), AttributeValue::S("config".into()));
        assert_eq!(action("INSERT", Some(other)), RecordAction::Skip("not_a_receipt"));
        assert_eq!(action("TRUNCATE", Some(item())), RecordAction::Skip("unknown_event"));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn broken_receipts_are_poison_with_a_reason() {
        let mut unreadable = item();
        unreadable.remove("fingerprint");
        let expected = |reason| RecordAction::Poison {
            key: "staticforms:form.submitted:sub_8fK2qLw9Xc".into(),
            received_at: "2026-11-30T06:21:53.123Z".into(),
            reason,
        };
        assert_eq!(action("INSERT", Some(unreadable)), expected("unreadable_receipt"));
        let mut mismatched = item();
        mismatched.insert("submissionId".into(), AttributeValue::S("someone-else".into()));
        assert_eq!(action("INSERT", Some(mismatched)), expected("submission_id_mismatch"));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn unreadable_images_are_poison_never_missing() {
        let some = |s: &str| Some(String::from(s));
        let key = "staticforms:form.submitted:sub:with/colons";
        let unreadable = |status: &str| NewImage::Unreadable {
            key: some(key),
            status: some(status),
            received_at: some("2026-11-30T06:21:53.123Z"),
        };
        assert_eq!(
            decide("INSERT", &unreadable("RECEIVED"), &LeadMapping::default()),
            RecordAction::Poison {
                key: key.into(),
                received_at: "2026-11-30T06:21:53.123Z".into(),
                reason: "unreadable_image"
            }
        );
        assert_eq!(
            decide("MODIFY", &unreadable("COMPLETED"), &LeadMapping::default()),
            RecordAction::Skip("not_received")
        );
        let anonymous = NewImage::Unreadable { key: some(key), status: None, received_at: None };
        assert_eq!(decide("INSERT", &anonymous, &LeadMapping::default()), RecordAction::Skip("not_a_receipt"));
        assert_eq!(decide("REMOVE", &unreadable("RECEIVED"), &LeadMapping::default()), RecordAction::Skip("removed"));
        assert_eq!(unreadable("RECEIVED").submission_id(), Some("sub:with/colons"));
        let item: crate::dynamo::Item =
            [(String::from("submissionId"), crate::dynamo::AttributeValue::S("sub_item".into()))].into_iter().collect();
        assert_eq!(NewImage::Item(item).submission_id(), Some("sub_item"));
        assert_eq!(submission_id_of_key("staticforms:form.submitted:"), None);
        assert_eq!(submission_id_of_key("other:key"), None);
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn images_read_from_the_wire_at_any_depth_a_receipt_has() {
        let fallback = || (Some(String::from("k")), Some(String::from("RECEIVED")), Some(String::from("t")));
        let read = NewImage::from_wire(ITEM.as_bytes(), fallback);
        assert!(matches!(&read, NewImage::Item(_)));
        assert!(matches!(decide("INSERT", &read, &LeadMapping::default()), RecordAction::Apply { .. }));
        // A legacy map payload 31 body levels deep is 63 levels on the wire.
        let mut nested = alloc::string::String::from(r#"{"S":"x"}"#);
        for _ in 0..crate::json::MAX_DEPTH - 2 {
            nested = alloc::format!(r#"{{"M":{{"a":{nested}}}}}"#);
        }
        let legacy = include_str!("../tests/fixtures/receipt_item_legacy_map.json")
            .replace(r#""attachments": {"L": []}"#, &alloc::format!(r#""attachments": {nested}"#));
        assert!(matches!(NewImage::from_wire(legacy.as_bytes(), fallback), NewImage::Item(_)));
        assert_eq!(
            NewImage::from_wire(b"{\"pk\":{\"Q\":1}}", fallback),
            NewImage::Unreadable {
                key: Some("k".into()),
                status: Some("RECEIVED".into()),
                received_at: Some("t".into())
            }
        );
        let too_deep = "[".repeat(200) + &"]".repeat(200);
        assert!(matches!(NewImage::from_wire(too_deep.as_bytes(), fallback), NewImage::Unreadable { .. }));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn record_log_lines() {
        let log = RecordLog {
            sequence_number: "000000000000000000042",
            submission_id: Some("sub_1"),
            action: "apply",
            outcome: "completed",
            reason: None,
            attempt: 1,
        };
        assert_eq!(
            log.to_json_line(),
            r#"{"sequenceNumber":"000000000000000000042","submissionId":"sub_1","action":"apply","outcome":"completed","reason":null,"attempt":1}"#
        );
        let retry = RecordLog { outcome: "retry", reason: Some("sink_unauthorized"), attempt: 2, ..log.clone() };
        assert!(retry.to_json_line().ends_with(r#""outcome":"retry","reason":"sink_unauthorized","attempt":2}"#));
        let odd = RecordLog { sequence_number: "a b", submission_id: Some("sub\u{7}1"), ..log };
        assert!(odd.to_json_line().starts_with(r#"{"sequenceNumber":null,"submissionId":null"#));
    }
}
