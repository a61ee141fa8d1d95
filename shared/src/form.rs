//! `application/x-www-form-urlencoded` bodies, as Formstack and Basin may post them, read as
//! the WHATWG URL standard reads them, so a body a browser or a form backend wrote is never
//! refused: the signature over its raw bytes has already vouched for it.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

use crate::json::Json;

/// The fields of a form-encoded body, as the WHATWG URL standard parses them (`+` is a space,
/// `%XX` a byte, a `%` that begins no escape is itself, a pair without `=` an empty value, empty
/// pairs skipped), each name to its value, or, for a name given more than once, to the array of
/// its values in order. The map is ordered by name, so the fields' order and their escaping do
/// not change what is read.
///
/// One departure: where the standard would put U+FFFD for bytes that are not UTF-8, a name or
/// value that is not UTF-8 is read as ISO-8859-1 (a page in a legacy charset posts `é` as `%E9`),
/// so no byte is lost and two different values never read as the same text but where both
/// spell it.
pub fn parse(body: &[u8]) -> BTreeMap<String, Json> {
    let mut fields: BTreeMap<String, Json> = BTreeMap::new();
    for pair in body.split(|&b| b == b'&').filter(|pair| !pair.is_empty()) {
        let (name, value) = match pair.iter().position(|&b| b == b'=') {
            Some(at) => (&pair[..at], &pair[at + 1..]),
            None => (pair, &[][..]),
        };
        let (name, value) = (decode(name), Json::String(decode(value)));
        match fields.get_mut(&name) {
            None => {
                fields.insert(name, value);
            }
            Some(Json::Array(values)) => values.push(value),
            Some(only) => {
                let first = core::mem::replace(only, Json::Null);
                *only = Json::Array(alloc::vec![first, value]);
            }
        }
    }
    fields
}

/// One name or value, percent-decoded; UTF-8, else ISO-8859-1.
fn decode(text: &[u8]) -> String {
    let digit = |b: Option<&u8>| b.and_then(|&c| char::from(c).to_digit(16));
    let mut bytes = Vec::with_capacity(text.len());
    // Each step takes one byte or one escape off the front, so the loop always ends.
    let mut rest = text;
    while let Some((&b, tail)) = rest.split_first() {
        rest = tail;
        match (b, digit(tail.first()), digit(tail.get(1))) {
            (b'+', _, _) => bytes.push(b' '),
            (b'%', Some(high), Some(low)) => {
                bytes.push((high * 16 + low) as u8);
                rest = tail.get(2..).unwrap_or_default();
            }
            (other, _, _) => bytes.push(other),
        }
    }
    String::from_utf8(bytes).unwrap_or_else(|e| e.into_bytes().into_iter().map(char::from).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    fn check(body: &[u8], expected: &str) {
        assert_eq!(Json::Object(parse(body)).to_text(), expected, "{:?}", String::from_utf8_lossy(body));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn fields_as_the_standard_reads_them() {
        check(
            b"FormID=6606394&UniqueID=1500878955&HandshakeKey=test",
            r#"{"FormID":"6606394","HandshakeKey":"test","UniqueID":"1500878955"}"#,
        );
        // `+` is a space and `%2B` a plus; escapes of either case; UTF-8 in escapes.
        check(b"a=1+2%2B3&b=%c3%A9&c=%E2%82%AC", r#"{"a":"1 2+3","b":"é","c":"€"}"#);
        // A name given twice keeps every value, in order; a pair without `=`, an empty value.
        check(b"x=1&y&x=2&&x=3&=z", r#"{"":"z","x":["1","2","3"],"y":""}"#);
        check(b"", "{}");
        // Subfields separated by a newline (Formstack), escaped or raw.
        check(b"Name=first+%3D+John%0Alast+%3D+Smith", r#"{"Name":"first = John\nlast = Smith"}"#);
        // `=` in a value, and `;` is no separator.
        check(b"a=b=c&d=1;e=2", r#"{"a":"b=c","d":"1;e=2"}"#);
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn a_percent_that_begins_no_escape_is_itself() {
        for (body, value) in [
            (&b"a=%"[..], "%"),
            (b"a=%4", "%4"),
            (b"a=%4g", "%4g"),
            (b"a=%%41", "%A"),
            (b"a=100%", "100%"),
            (b"a=%+1", "% 1"),
        ] {
            assert_eq!(parse(body).get("a").and_then(Json::as_str), Some(value), "{body:?}");
        }
        assert_eq!(parse(b"%zz=1").get("%zz").and_then(Json::as_str), Some("1"));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn bytes_that_are_not_utf8_read_as_latin1_and_lose_nothing() {
        check(b"a=caf%E9&b=\xe9t\xe9", r#"{"a":"café","b":"été"}"#);
        assert_ne!(parse(b"a=%E9"), parse(b"a=%E8"));
        // A UTF-8 value stays UTF-8, even beside one that is not.
        check(b"a=%C3%A9&b=%E9", r#"{"a":"é","b":"é"}"#);
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn order_and_escaping_do_not_change_what_is_read() {
        assert_eq!(parse(b"a=x+y&b=%41"), parse(b"b=A&a=x%20y"));
        assert_ne!(parse(b"a=1&a=2"), parse(b"a=2&a=1"), "a repeated field's values keep their order");
        assert_ne!(parse(b"a=1+2"), parse(b"a=1%2B2"));
    }
}
