//! Hexadecimal: lowercase encoding, and decoding of either case.

use alloc::string::String;
use alloc::vec::Vec;

/// The lowercase hex digits, by value.
pub const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// `bytes` as lowercase hex.
pub fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    out
}

/// The bytes `text` spells in hex (either case); `None` for an odd length or another character.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    let digit = |c: u8| char::from(c).to_digit(16).map(|d| d as u8);
    let text = text.as_bytes();
    if !text.len().is_multiple_of(2) {
        return None;
    }
    text.chunks(2).map(|pair| Some(digit(pair[0])? * 16 + digit(pair[1])?)).collect()
}

#[cfg(test)]
mod tests {
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test(unsupported = test)]
    fn encodes() {
        assert_eq!(super::encode(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        assert_eq!(super::encode(&[]), "");
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn decodes_either_case() {
        assert_eq!(super::decode("000fA5fF"), Some(alloc::vec![0x00, 0x0f, 0xa5, 0xff]));
        assert_eq!(super::decode(""), Some(alloc::vec![]));
        for bad in ["0", "0g", "+f", " 0f", "0f ", "é0"] {
            assert_eq!(super::decode(bad), None, "{bad:?}");
        }
    }
}
