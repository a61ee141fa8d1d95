//! The idempotency key: `staticforms:form.submitted:<submissionId>`, checked against the header.

use alloc::string::String;

use crate::envelope::FORM_SUBMITTED;
use crate::headers::Headers;

/// The header that carries the key.
pub const IDEMPOTENCY_KEY_HEADER: &str = "Idempotency-Key";

/// Why a request's idempotency key is not acceptable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyError {
    /// The request has no `Idempotency-Key` header.
    Missing,
    /// The header differs from the key the envelope implies.
    Mismatch,
}

impl KeyError {
    /// A stable name for responses and logs.
    pub fn reason(self) -> &'static str {
        match self {
            KeyError::Missing => "missing_idempotency_key",
            KeyError::Mismatch => "idempotency_key_mismatch",
        }
    }
}

/// The key a delivery of `submission_id` must carry.
pub fn expected_key(submission_id: &str) -> String {
    let mut key = String::from("staticforms:");
    key.push_str(FORM_SUBMITTED);
    key.push(':');
    key.push_str(submission_id);
    key
}

/// Returns the key when the request's header equals the one its envelope implies.
pub fn check_key(headers: &Headers, submission_id: &str) -> Result<String, KeyError> {
    let presented = headers.get(IDEMPOTENCY_KEY_HEADER).ok_or(KeyError::Missing)?;
    let expected = expected_key(submission_id);
    if presented == expected {
        Ok(expected)
    } else {
        Err(KeyError::Mismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    fn check(header: Option<&str>, expected: Result<&str, KeyError>) {
        let headers = Headers::new(header.map(|v| ("idempotency-key", v)));
        assert_eq!(check_key(&headers, "sub_1").as_deref().map_err(|e| *e), expected, "{header:?}");
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn header_must_equal_the_implied_key() {
        check(Some("staticforms:form.submitted:sub_1"), Ok("staticforms:form.submitted:sub_1"));
        check(None, Err(KeyError::Missing));
        check(Some("staticforms:form.submitted:sub_2"), Err(KeyError::Mismatch));
        check(Some("STATICFORMS:form.submitted:sub_1"), Err(KeyError::Mismatch));
        check(Some("staticforms:form.submitted:sub_1 "), Err(KeyError::Mismatch));
        check(Some(""), Err(KeyError::Mismatch));
    }
}
