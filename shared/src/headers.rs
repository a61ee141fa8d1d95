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
}
