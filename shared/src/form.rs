//! `application/x-www-form-urlencoded` bodies, as Formstack and Basin may post them, read
//! strictly: a malformed percent-escape or bytes that are not UTF-8 are refused, never guessed
//! at, so two different deliveries can never read as the same fields.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

use crate::json::Json;

/// Why a form-encoded body was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormError {
    /// A `%` not followed by two hex digits.
    InvalidEscape,
    /// A name or value that is not UTF-8 once decoded.
    NotUtf8,
}

/// The fields of a form-encoded body, as the WHATWG URL standard parses them ("`+`" is a space,
/// `%XX` a byte, a pair without `=` an empty value, empty pairs skipped), each name to its
/// value, or, for a name given more than once, to the array of its values in order. The map is
/// ordered by name, so the fields' order and their escaping do not change what is read.
pub fn parse(body: &[u8]) -> Result<BTreeMap<String, Json>, FormError> {
    let mut fields: BTreeMap<String, Json> = BTreeMap::new();
    for pair in body.split(|&b| b == b'&').filter(|pair| !pair.is_empty()) {
        let (name, value) = match pair.iter().position(|&b| b == b'=') {
            Some(at) => (&pair[..at], &pair[at + 1..]),
            None => (pair, &[][..]),
        };
        let (name, value) = (decode(name)?, Json::String(decode(value)?));
        match fields.get_mut(&name) {
            None => {
                fields.insert(name, value);
            }
            Some(Json::Array(values)) => values.push(value),
            Some(first) => {
                let first = core::mem::replace(first, Json::Null);
                fields.insert(name, Json::Array(alloc::vec![first, value]));
            }
        }
    }
    Ok(fields)
}

/// One name or value, percent-decoded strictly.
fn decode(text: &[u8]) -> Result<String, FormError> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text;
    while let Some((&b, tail)) = rest.split_first() {
        rest = tail;
        match b {
            b'+' => bytes.push(b' '),
            b'%' => {
                let digit = |i: usize| rest.get(i).and_then(|&c| char::from(c).to_digit(16));
                let (Some(high), Some(low)) = (digit(0), digit(1)) else { return Err(FormError::InvalidEscape) };
                bytes.push((high << 4 | low) as u8);
                rest = &rest[2..];
            }
            other => bytes.push(other),
        }
    }
    String::from_utf8(bytes).map_err(|_| FormError::NotUtf8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    fn check(body: &str, expected: Result<&str, FormError>) {
        let got = parse(body.as_bytes()).map(|fields| Json::Object(fields).to_text());
        assert_eq!(got.as_deref().map_err(|e| *e), expected, "{body}");
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn fields_as_the_standard_reads_them() {
        check(
            "FormID=6606394&UniqueID=1500878955&HandshakeKey=test",
            Ok(r#"{"FormID":"6606394","HandshakeKey":"test","UniqueID":"1500878955"}"#),
        );
        // `+` is a space and `%2B` a plus; escapes of either case; UTF-8 in escapes.
        check("a=1+2%2B3&b=%c3%A9&c=%E2%82%AC", Ok(r#"{"a":"1 2+3","b":"é","c":"€"}"#));
        // A name given twice keeps every value, in order; a pair without `=`, an empty value.
        check("x=1&y&x=2&&x=3&=z", Ok(r#"{"":"z","x":["1","2","3"],"y":""}"#));
        check("", Ok("{}"));
        // Subfields separated by a newline (Formstack), escaped or raw.
        check("Name=first+%3D+John%0Alast+%3D+Smith", Ok(r#"{"Name":"first = John\nlast = Smith"}"#));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn order_and_escaping_do_not_change_what_is_read() {
        let read = |body: &str| parse(body.as_bytes()).unwrap();
        assert_eq!(read("a=x+y&b=%41"), read("b=A&a=x%20y"));
        assert_ne!(read("a=1&a=2"), read("a=2&a=1"), "a repeated field's values keep their order");
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn malformed_escapes_and_bytes_are_refused() {
        for bad in ["a=%", "a=%4", "a=%4g", "a=%%41", "%zz=1", "a=100%"] {
            check(bad, Err(FormError::InvalidEscape));
        }
        check("a=%ff", Err(FormError::NotUtf8));
        assert_eq!(parse(b"a=\xff"), Err(FormError::NotUtf8));
    }
}
