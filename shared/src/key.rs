//! The idempotency key: `staticforms:form.submitted:<submissionId>`, checked against the header.

use alloc::string::String;

use crate::headers::Headers;
use crate::profile::Profile;

/// The header that carries the key.
pub const IDEMPOTENCY_KEY_HEADER: &str = "Idempotency-Key";

/// Why a request's idempotency key is not acceptable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyError {
    /// The request has no `Idempotency-Key` header.
    Missing,
    /// The header differs from the key the envelope implies.
    Mismatch,
    /// The identity header (Standard Webhooks' `webhook-id`) is empty, longer than 1,024
    /// bytes, or holds a control character.
    Invalid,
}

impl KeyError {
    /// A stable name for responses and logs.
    pub fn reason(self) -> &'static str {
        match self {
            KeyError::Missing => "missing_idempotency_key",
            KeyError::Mismatch => "idempotency_key_mismatch",
            KeyError::Invalid => "invalid_idempotency_key",
        }
    }
}

/// The key a delivery of `submission_id` must carry.
pub fn expected_key(submission_id: &str) -> String {
    Profile::StaticForms.key(submission_id)
}

/// Returns the key when the request's header equals the one its envelope implies.
///
/// The comparison is exact, byte for byte, with the allowances HTTP itself makes:
/// - a header value never ends in whitespace (RFC 9110, section 5.5: surrounding spaces are not
///   part of the value, and every client and server strips them), so a submission ID that ends
///   in spaces is matched by its key without them;
/// - header values are bytes: workerd today hands them to the Worker decoded as UTF-8, the
///   Fetch standard one character per byte (Latin-1), so a key whose ID is not ASCII is
///   matched in either form, always by the same bytes.
///
/// Case, inner spaces and every other byte must match.
pub fn check_key(headers: &Headers, submission_id: &str) -> Result<String, KeyError> {
    let presented = headers.get(IDEMPOTENCY_KEY_HEADER).ok_or(KeyError::Missing)?;
    let expected = expected_key(submission_id);
    let trimmed = expected.trim_end_matches(' ');
    let matches = |want: &str| presented == want || same_bytes_as_latin1(presented, want);
    if matches(&expected) || matches(trimmed) {
        Ok(expected)
    } else {
        Err(KeyError::Mismatch)
    }
}

/// True if `header`, read one character per byte, spells the UTF-8 bytes of `text`.
fn same_bytes_as_latin1(header: &str, text: &str) -> bool {
    let mut bytes = text.bytes();
    for c in header.chars() {
        match (u8::try_from(u32::from(c)), bytes.next()) {
            (Ok(b), Some(expected)) if b == expected => {}
            _ => return false,
        }
    }
    bytes.next().is_none()
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

    #[wasm_bindgen_test(unsupported = test)]
    fn odd_ids_match_exactly_and_trailing_spaces_as_http_carries_them() {
        let check = |header: &str, id: &str, ok: bool| {
            let headers = Headers::new([("Idempotency-Key", header)]);
            assert_eq!(
                check_key(&headers, id).map(|k| k == expected_key(id)),
                if ok { Ok(true) } else { Err(KeyError::Mismatch) },
                "{header:?} for {id:?}"
            );
        };
        check("staticforms:form.submitted:sub/é😀", "sub/é😀", true);
        // "é" is C3 A9 in UTF-8; read one character per byte, that is "Ã©".
        check("staticforms:form.submitted:sub/\u{c3}\u{a9}", "sub/é", true);
        check("staticforms:form.submitted:sub/\u{c3}", "sub/é", false);
        check("staticforms:form.submitted:sub/\u{c3}\u{a9}x", "sub/é", false);
        check("staticforms:form.submitted:sub/\u{c3}\u{a8}", "sub/é", false);
        check("staticforms:form.submitted:SUB/é", "sub/é", false);
        // HTTP strips a value's trailing spaces; the receipt keeps the ID as the body has it.
        check("staticforms:form.submitted:lead", "lead  ", true);
        check("staticforms:form.submitted:lead  ", "lead  ", true);
        check("staticforms:form.submitted:lead ", "lead", false);
        check("staticforms:form.submitted:a b", "a b", true);
        check("staticforms:form.submitted:ab", "a b", false);
        check("staticforms:form.submitted: lead", "lead", false);
    }
}
