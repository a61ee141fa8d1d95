//! Credential types that print as `[redacted]` and compare in constant time.

use alloc::string::String;
use alloc::vec::Vec;
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use core::fmt;
use sha2::{Digest, Sha256};
use subtle::{Choice, ConstantTimeEq};

/// An accepted credential (a bearer token, `user:password`, a header value), kept only as its
/// SHA-256 digest so that comparison takes the same time whatever the lengths involved. `==`
/// is constant time too (no derived comparison a later change could call by mistake).
#[derive(Clone, Eq)]
pub struct Credential([u8; 32]);

impl PartialEq for Credential {
    fn eq(&self, other: &Credential) -> bool {
        self.0.ct_eq(&other.0).into()
    }
}

impl Credential {
    /// A credential that accepts exactly `value`.
    pub fn new(value: &[u8]) -> Credential {
        Credential(Sha256::digest(value).into())
    }
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// True if `presented` equals any of `accepted`. Every candidate is compared, in constant time.
pub fn matches_any(presented: &[u8], accepted: &[Credential]) -> bool {
    let digest: [u8; 32] = Sha256::digest(presented).into();
    accepted.iter().fold(Choice::from(0), |found, c| found | c.0.ct_eq(&digest)).into()
}

/// A Standard Webhooks signing secret: the key bytes behind `whsec_<base64>`. `==` compares
/// in constant time (for keys of one length; the length alone may show).
#[derive(Clone, Eq)]
pub struct SigningSecret(Vec<u8>);

impl PartialEq for SigningSecret {
    fn eq(&self, other: &SigningSecret) -> bool {
        self.0.as_slice().ct_eq(other.0.as_slice()).into()
    }
}

/// Why a signing secret's text was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SigningSecretError {
    /// The part after `whsec_` is not base64.
    NotBase64,
    /// The secret decodes to no bytes.
    Empty,
}

impl SigningSecret {
    /// Reads `whsec_<base64>`; the prefix is optional, as in the Standard Webhooks libraries.
    pub fn parse(text: &str) -> Result<SigningSecret, SigningSecretError> {
        let encoded = text.trim().strip_prefix("whsec_").unwrap_or(text.trim());
        let key = BASE64.decode(encoded).map_err(|_| SigningSecretError::NotBase64)?;
        if key.is_empty() {
            return Err(SigningSecretError::Empty);
        }
        Ok(SigningSecret(key))
    }

    /// A secret whose key is the text itself, as form backends use theirs (Typeform, Tally, Webflow, Framer, Basin, Formspree, Formstack);
    /// `None` when it is empty.
    pub fn plain(text: &str) -> Option<SigningSecret> {
        (!text.is_empty()).then(|| SigningSecret(text.as_bytes().to_vec()))
    }

    /// The key bytes for the HMAC.
    pub(crate) fn key(&self) -> &[u8] {
        &self.0
    }

    /// The `whsec_` text of a key, for senders and tests that need to produce one.
    pub fn encode(key: &[u8]) -> String {
        let mut text = String::from("whsec_");
        BASE64.encode_string(key, &mut text);
        text
    }
}

impl fmt::Debug for SigningSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test(unsupported = test)]
    fn equality_is_the_constant_time_comparison() {
        // `==` on credentials goes through `subtle`; these pin what it answers.
        assert!(Credential::new(b"token") == Credential::new(b"token"));
        assert!(Credential::new(b"token") != Credential::new(b"tokem"));
        assert!(Credential::new(b"") != Credential::new(b"\0"));
        let secret = |t: &str| SigningSecret::plain(t).unwrap();
        assert!(secret("abc") == secret("abc"));
        assert!(secret("abc") != secret("abd"));
        assert!(secret("abc") != secret("abcd"), "another length");
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn a_credential_listed_twice_still_matches() {
        let twice = [Credential::new(b"tok"), Credential::new(b"tok"), Credential::new(b"other")];
        assert!(matches_any(b"tok", &twice));
        assert!(matches_any(b"other", &twice));
        assert!(!matches_any(b"nope", &twice));
        assert!(!matches_any(b"tok", &[]));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn credentials_print_redacted() {
        assert_eq!(format!("{:?}", Credential::new(b"hunter2")), "[redacted]");
        let secret = SigningSecret::parse("whsec_aHVudGVyMg==").unwrap();
        assert_eq!(format!("{secret:?}"), "[redacted]");
        assert_eq!(secret.key(), b"hunter2");
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn matching_checks_every_accepted_value() {
        let accepted = [Credential::new(b"old"), Credential::new(b"new")];
        assert!(matches_any(b"old", &accepted));
        assert!(matches_any(b"new", &accepted));
        assert!(!matches_any(b"ne", &accepted));
        assert!(!matches_any(b"", &accepted));
        assert!(!matches_any(b"new", &[]));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn signing_secret_text() {
        assert_eq!(SigningSecret::parse("aHVudGVyMg==").map(|s| s.0), Ok(b"hunter2".to_vec()));
        assert_eq!(SigningSecret::parse("whsec_***"), Err(SigningSecretError::NotBase64));
        assert_eq!(SigningSecret::parse("whsec_"), Err(SigningSecretError::Empty));
        assert_eq!(SigningSecret::encode(b"hunter2"), "whsec_aHVudGVyMg==");
    }
}
