//! Request headers as plain data, looked up without regard to case.

use alloc::string::String;
use alloc::vec::Vec;

/// The headers of one request, as the shell collected them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Headers(Vec<(String, String)>);

impl Headers {
    /// Headers from `(name, value)` pairs, in any case.
    pub fn new<N: Into<String>, V: Into<String>>(pairs: impl IntoIterator<Item = (N, V)>) -> Headers {
        Headers(pairs.into_iter().map(|(n, v)| (n.into(), v.into())).collect())
    }

    /// The value of the first header named `name`, compared ASCII-case-insensitively.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// The media type of a `Content-Type` value, without its parameters (`charset`), if it is
/// `media` in any case.
fn is_media_type(content_type: Option<&str>, media: &str) -> bool {
    content_type.and_then(|v| v.split(';').next()).is_some_and(|found| found.trim().eq_ignore_ascii_case(media))
}

/// True if a `Content-Type` value names `application/json` (parameters such as `charset` allowed).
pub fn is_json_media_type(content_type: Option<&str>) -> bool {
    is_media_type(content_type, "application/json")
}

/// True if a `Content-Type` value names `application/x-www-form-urlencoded` (parameters such
/// as `charset` allowed), as Formstack and Basin may post.
pub fn is_form_media_type(content_type: Option<&str>) -> bool {
    is_media_type(content_type, "application/x-www-form-urlencoded")
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test(unsupported = test)]
    fn lookup_ignores_case() {
        let headers = Headers::new([("Idempotency-Key", "k"), ("content-type", "application/json")]);
        assert_eq!(headers.get("idempotency-key"), Some("k"));
        assert_eq!(headers.get("CONTENT-TYPE"), Some("application/json"));
        assert_eq!(headers.get("authorization"), None);
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn media_types_in_any_case_with_parameters() {
        assert!(is_form_media_type(Some("application/x-www-form-urlencoded; charset=utf-8")));
        assert!(is_form_media_type(Some(" Application/X-WWW-Form-Urlencoded")));
        assert!(!is_form_media_type(Some("application/json")));
        assert!(!is_form_media_type(Some("multipart/form-data; boundary=x")));
        assert!(!is_form_media_type(None));
    }
}
