//! The log record for one request: identifiers, outcome, status, duration, and nothing else.
//!
//! The record has no field that could hold a credential, a header or form content. The request
//! ID is checked to be short and plain; the submission ID (any text without control characters,
//! as the sender chose it) is written with everything outside printable ASCII escaped, so a
//! line is always one line and shows what it holds.

use alloc::string::String;
use core::fmt::Write as _;

use crate::envelope::is_valid_submission_id;
use crate::json::{write_ascii_string, write_string};
use crate::metrics::{append_emf, Metric, Unit};

/// One request's log line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecord {
    /// The request ID; written only if [`safe_request_id`] accepts it.
    pub request_id: String,
    /// The submission ID, once the envelope was read.
    pub submission_id: Option<String>,
    /// The response's stable code.
    pub outcome: &'static str,
    /// The detail behind the code (which check, which store error), when there is one.
    pub reason: Option<&'static str>,
    /// The HTTP status sent.
    pub status: u16,
    /// Milliseconds from the request's arrival to the response.
    pub duration_ms: u64,
    /// When the request arrived, epoch milliseconds (the metrics' timestamp).
    pub at_ms: u64,
    /// Milliseconds the store took to answer the PutItem, when one was sent.
    pub store_ms: Option<u64>,
}

/// The longest request ID kept.
pub const MAX_REQUEST_ID_LEN: usize = 64;

/// `candidate` if it is a plain identifier (1 to 64 of ASCII letters, digits, `-`, `_`, `.`, `:`),
/// as `cf-ray` values are; otherwise `None`, and the caller generates one.
pub fn safe_request_id(candidate: &str) -> Option<String> {
    let ok = !candidate.is_empty()
        && candidate.len() <= MAX_REQUEST_ID_LEN
        && candidate.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'));
    ok.then(|| String::from(candidate))
}

/// The dimension sets of the edge's metrics: each by outcome, and each by answer class.
const DIMENSIONS: &[&[&str]] = &[&["outcome"], &["answer"]];

impl LogRecord {
    /// The record as one line of JSON.
    pub fn to_json_line(&self) -> String {
        let mut line = String::from("{\"requestId\":");
        match safe_request_id(&self.request_id) {
            Some(id) => write_string(&id, &mut line),
            None => line.push_str("null"),
        }
        line.push_str(",\"submissionId\":");
        match self.submission_id.as_deref().filter(|id| is_valid_submission_id(id)) {
            Some(id) => write_ascii_string(id, &mut line),
            None => line.push_str("null"),
        }
        line.push_str(",\"outcome\":");
        write_string(self.outcome, &mut line);
        line.push_str(",\"reason\":");
        match self.reason {
            Some(reason) => write_string(reason, &mut line),
            None => line.push_str("null"),
        }
        // The answer's class (`2xx`, `4xx`, `5xx`): the edge's 5xx alarm counts these.
        let _ = write!(
            line,
            ",\"status\":{},\"answer\":\"{}xx\",\"durationMs\":{}",
            self.status,
            self.status / 100,
            self.duration_ms
        );
        // The line is also an Embedded Metric Format document: deliveries by outcome and by
        // answer, and the store's latency when it was asked.
        let delivery = Metric { name: "Deliveries", unit: Unit::Count, value: 1 };
        match self.store_ms {
            Some(ms) => {
                let latency = Metric { name: "StoreLatency", unit: Unit::Milliseconds, value: ms };
                append_emf(&mut line, self.at_ms, DIMENSIONS, &[delivery, latency]);
            }
            None => append_emf(&mut line, self.at_ms, DIMENSIONS, &[delivery]),
        }
        line.push('}');
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test(unsupported = test)]
    fn renders_one_json_line() {
        let record = LogRecord {
            request_id: "8f2a-AMS".into(),
            submission_id: Some("sub_1".into()),
            outcome: "stored",
            reason: None,
            status: 202,
            duration_ms: 12,
            at_ms: 1_796_019_713_123,
            store_ms: Some(9),
        };
        assert_eq!(
            record.to_json_line(),
            concat!(
                r#"{"requestId":"8f2a-AMS","submissionId":"sub_1","outcome":"stored","reason":null,"status":202,"#,
                r#""answer":"2xx","durationMs":12,"_aws":{"Timestamp":1796019713123,"CloudWatchMetrics":[{"Namespace":"#,
                r#""WebhookReceiver","Dimensions":[["outcome"],["answer"]],"Metrics":[{"Name":"Deliveries","Unit":"Count"},"#,
                r#"{"Name":"StoreLatency","Unit":"Milliseconds"}]}]},"Deliveries":1,"StoreLatency":9}"#
            )
        );
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn identifiers_that_are_not_plain_are_refused_or_dropped() {
        assert_eq!(safe_request_id("8f2a9c7d1e-AMS"), Some("8f2a9c7d1e-AMS".into()));
        assert_eq!(safe_request_id("ada@example.com"), None);
        assert_eq!(safe_request_id(""), None);
        assert_eq!(safe_request_id(&"a".repeat(65)), None);
        // A submission ID with a control character is not one the envelope accepts: dropped.
        let record = LogRecord {
            request_id: "r".into(),
            submission_id: Some("sub\n{\"forged\":1}".into()),
            outcome: "invalid_envelope",
            reason: Some("invalid_submission_id"),
            status: 400,
            duration_ms: 0,
            at_ms: 0,
            store_ms: None,
        };
        assert!(record.to_json_line().contains(r#""submissionId":null"#));
        assert!(!record.to_json_line().contains("forged"));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn odd_submission_ids_are_escaped_into_one_line() {
        let record = LogRecord {
            request_id: "r".into(),
            submission_id: Some("sub/\"x\"\\é😀".into()),
            outcome: "stored",
            reason: None,
            status: 202,
            duration_ms: 1,
            at_ms: 0,
            store_ms: None,
        };
        let line = record.to_json_line();
        assert!(!line.contains('\n'));
        assert!(line.is_ascii(), "{line}");
        let parsed = crate::json::parse(line.as_bytes()).unwrap();
        assert_eq!(parsed.get("submissionId").and_then(crate::json::Json::as_str), Some("sub/\"x\"\\é😀"));
    }
}
