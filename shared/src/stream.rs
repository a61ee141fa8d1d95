//! What the stream worker does with one stream record, decided without I/O.
//!
//! A record is worth acting on when its new image is a `RECEIVED` receipt: an `INSERT`, or a
//! `MODIFY` that replaced an expired receipt with a new one. Everything else (the worker's own
//! `COMPLETED`/`FAILED` updates, TTL deletions, items that are not receipts) is skipped.

use alloc::boxed::Box;
use alloc::string::String;
use core::fmt::Write as _;

use crate::dynamo::Item;
use crate::envelope::is_valid_submission_id;
use crate::json::write_string;
use crate::lead::{lead_from_receipt, Lead};
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
    /// An `INSERT` or `MODIFY` without a new image: the stream's view type is wrong
    /// (`KEYS_ONLY` or `OLD_IMAGE`). Nothing may be skipped for that, so it is retried.
    MissingImage,
}

/// Decides what to do with a record from its `eventName` and its new image.
pub fn decide(event_name: &str, new_image: Option<&Item>) -> RecordAction {
    match event_name {
        "INSERT" | "MODIFY" => {}
        "REMOVE" => return RecordAction::Skip("removed"),
        _ => return RecordAction::Skip("unknown_event"),
    }
    let Some(image) = new_image else { return RecordAction::MissingImage };
    let text = |name: &str| image.get(name).and_then(|v| v.as_s());
    let (Some(key), Some(status), Some(received_at)) = (text("pk"), text("status"), text("receivedAt")) else {
        return RecordAction::Skip("not_a_receipt");
    };
    if status != ReceiptStatus::Received.as_str() {
        return RecordAction::Skip("not_received");
    }
    let poison =
        |reason| RecordAction::Poison { key: String::from(key), received_at: String::from(received_at), reason };
    let receipt = match Receipt::from_item(image) {
        Ok(receipt) => receipt,
        Err(_) => return poison("unreadable_receipt"),
    };
    match lead_from_receipt(&receipt) {
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
    /// What was attempted: `skip`, `apply`, `poison`.
    pub action: &'static str,
    /// How it ended: `completed`, `failed`, `retry`, `receipt_gone`, or the skip reason.
    pub outcome: &'static str,
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
            Some(id) => write_string(id, &mut line),
            None => line.push_str("null"),
        }
        line.push_str(",\"action\":");
        write_string(self.action, &mut line);
        line.push_str(",\"outcome\":");
        write_string(self.outcome, &mut line);
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
        decide(event, image.as_ref())
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
    fn record_log_lines() {
        let log = RecordLog {
            sequence_number: "000000000000000000042",
            submission_id: Some("sub_1"),
            action: "apply",
            outcome: "completed",
            attempt: 1,
        };
        assert_eq!(
            log.to_json_line(),
            r#"{"sequenceNumber":"000000000000000000042","submissionId":"sub_1","action":"apply","outcome":"completed","attempt":1}"#
        );
        let odd = RecordLog { sequence_number: "a b", submission_id: Some("ada@example.com"), ..log };
        assert!(odd.to_json_line().starts_with(r#"{"sequenceNumber":null,"submissionId":null"#));
    }
}
