//! What a sender profile is, as one trait: each sender's module implements [`Sender`], and
//! the registry lists them (`with_sender!` in [`super::registry`]). A new profile is its
//! module, its row in the `profiles!` table (in `profile.rs`) and its line in the registry; the
//! common contract (`profile/contract.rs`) then runs on it with no new test code.

use alloc::string::String;
#[cfg(any(test, feature = "examples"))]
use alloc::vec::Vec;

use crate::auth::HmacScheme;
use crate::envelope::{Envelope, Refusal};
use crate::headers::Headers;
use crate::key::KeyError;
use crate::lead::{Lead, LeadError};
use crate::mapping::LeadMapping;
use crate::profile::{Acknowledgement, Profile};
use crate::receipt::Receipt;

/// How a profile's deliveries are authenticated: which configuration holds its secrets and
/// what it checks. The shells configure the profile from this alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SenderAuth {
    /// Static Forms' methods (Bearer, Basic, a custom header, Standard Webhooks signatures),
    /// each from its own `WEBHOOK_*` variable.
    StaticForms,
    /// Standard Webhooks signatures (`webhook-id`, `webhook-timestamp`, `webhook-signature`)
    /// under the `whsec_` secrets listed in `variable`.
    StandardWebhooks {
        /// The variable that lists the secrets.
        variable: &'static str,
    },
    /// A form backend's HMAC-SHA256 signature as `scheme` says, keyed by each secret's text,
    /// the secrets listed in `variable`.
    BodySigned {
        /// How the sender signs.
        scheme: HmacScheme,
        /// The variable that lists the secrets.
        variable: &'static str,
        /// The variable that may name another header for the tag, for a sender whose users
        /// choose it (Formstack); `None` when the header is fixed.
        header_variable: Option<&'static str>,
    },
}

/// One sender profile's behaviour. Its identity (name, route, key prefix, headers read) is
/// [`Profile`]'s, low in the house; what is here reads deliveries and maps receipts.
pub trait Sender: Sync {
    /// The profile this is.
    fn profile(&self) -> Profile;

    /// How its deliveries are authenticated.
    fn auth(&self) -> SenderAuth;

    /// Which 2xx tells the sender a new receipt was stored: 202 unless the sender counts only
    /// 200 as success (Webflow). A duplicate is 200 for every sender.
    fn acknowledgement(&self) -> Acknowledgement {
        Acknowledgement::Accepted
    }

    /// Whether the sender may post `application/x-www-form-urlencoded` bodies (besides JSON,
    /// which every sender may).
    fn takes_form_bodies(&self) -> bool {
        false
    }

    /// Checks an authenticated delivery's body (and, for some senders, headers) and returns its
    /// envelope: identity, event, the parsed body and its fingerprint.
    fn read(&self, headers: &Headers, body: &[u8]) -> Result<Envelope, Refusal>;

    /// The receipt key of a delivery whose envelope was read: the profile's key of its
    /// identity, unless the sender names the key itself.
    fn key(&self, headers: &Headers, envelope: &Envelope) -> Result<String, KeyError> {
        let _ = headers;
        Ok(self.profile().key(&envelope.submission_id))
    }

    /// The lead a receipt of this profile becomes.
    fn lead(&self, receipt: &Receipt, mapping: &LeadMapping) -> Result<Lead, LeadError>;

    /// A delivery as the sender sends it for the submission `id`, with `answer` as a free-text
    /// answer (another answer is other content under the same identity), unsigned: the common
    /// contract tests and the integration tests sign it as [`Sender::auth`] says.
    #[cfg(any(test, feature = "examples"))]
    fn example(&self, id: &str, answer: &str) -> Example;
}

/// A sender's delivery for the contract tests ([`Sender::example`]).
#[cfg(any(test, feature = "examples"))]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Example {
    /// The headers besides authentication, as the sender spells them.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// The identity the receipt's key holds ([`Profile::key`] of it).
    pub identity: String,
    /// The lead's `external_id`.
    pub external_id: String,
    /// The lead's name and email, as the sender's payload gives them.
    pub name_and_email: (&'static str, &'static str),
}

#[cfg(any(test, feature = "examples"))]
impl Example {
    /// A JSON delivery (`Content-Type: application/json`) of `body`.
    pub(crate) fn json(
        body: String,
        identity: String,
        external_id: String,
        name_and_email: (&'static str, &'static str),
    ) -> Example {
        let headers = alloc::vec![("Content-Type", String::from("application/json"))];
        Example { headers, body: body.into_bytes(), identity, external_id, name_and_email }
    }

    /// The same with another header.
    pub(crate) fn header(mut self, name: &'static str, value: String) -> Example {
        self.headers.push((name, value));
        self
    }
}

/// `text` form-encoded as a browser encodes a field (`application/x-www-form-urlencoded`):
/// letters, digits and `*-._` as they are, a space as `+`, every other byte as `%XX`.
#[cfg(any(test, feature = "examples"))]
pub(crate) fn form_encode(text: &str) -> String {
    let mut out = String::new();
    for &b in text.as_bytes() {
        match b {
            b' ' => out.push('+'),
            b'*' | b'-' | b'.' | b'_' => out.push(char::from(b)),
            _ if b.is_ascii_alphanumeric() => out.push(char::from(b)),
            _ => {
                out.push('%');
                out.push(char::from(crate::hex::DIGITS[usize::from(b >> 4)].to_ascii_uppercase()));
                out.push(char::from(crate::hex::DIGITS[usize::from(b & 0xf)].to_ascii_uppercase()));
            }
        }
    }
    out
}

/// `text` with every `from` replaced by `to` as a JSON string, for examples built from a
/// sender's documented payload; `from` may begin with the member's name (`"responseId": "x"`),
/// so only that member changes. Panics when `from` is absent: the example would be stale.
#[cfg(any(test, feature = "examples"))]
pub(crate) fn substitute(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "the example no longer holds {from}");
    let mut quoted = String::new();
    if let Some(at) = from.rfind(": \"") {
        quoted.push_str(&from[..at + 2]);
    }
    crate::json::write_string(to, &mut quoted);
    text.replace(from, &quoted)
}

/// One profile's form-backend signature with one secret, for the profiles' own tests: the
/// headers the core's signer writes, and what the check answers.
#[cfg(test)]
pub(crate) struct Signed(crate::auth::AuthPolicy, crate::secret::SigningSecret);

#[cfg(test)]
impl Signed {
    /// `sender`'s scheme (a form backend's) keyed by `secret`'s text.
    pub(crate) fn new(sender: &dyn Sender, secret: &str) -> Signed {
        let SenderAuth::BodySigned { scheme, .. } = sender.auth() else { panic!("not a form backend's signature") };
        let secret = crate::secret::SigningSecret::plain(secret).expect("a secret");
        let config = crate::auth::BodySignature::new(scheme, alloc::vec![secret.clone()]);
        Signed(crate::auth::AuthPolicy { body_signature: Some(config), ..Default::default() }, secret)
    }

    /// The same, read from `header` instead (Formstack's user may name one).
    pub(crate) fn in_header(mut self, header: &str) -> Signed {
        if let Some(config) = self.0.body_signature.as_mut() {
            config.header = header.into();
        }
        self
    }

    /// The headers the core's signer writes for `body` at `now_millis`, beside `others`.
    pub(crate) fn headers(&self, others: &[(&str, &str)], body: &[u8], now_millis: u64) -> Vec<(String, String)> {
        let config = self.0.body_signature.as_ref().expect("a signature");
        crate::auth::body_signature_headers(config, &self.1, &Headers::new(others.iter().copied()), body, now_millis)
    }

    /// What the check answers for `headers` and `body` at `now_secs`.
    pub(crate) fn check(
        &self,
        headers: &[(&str, &str)],
        body: &[u8],
        now_secs: i64,
    ) -> Result<crate::auth::AuthMethod, crate::auth::AuthError> {
        self.0.authenticate(&Headers::new(headers.iter().copied()), body, now_secs)
    }
}

#[cfg(test)]
mod tests {
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test(unsupported = test)]
    fn form_fields_are_encoded_as_browsers_encode_them() {
        assert_eq!(super::form_encode("Ada Lovelace"), "Ada+Lovelace");
        assert_eq!(super::form_encode("a*b-c.d_e~f+g&h=i%"), "a*b-c.d_e%7Ef%2Bg%26h%3Di%25");
        assert_eq!(super::form_encode("é 😀"), "%C3%A9+%F0%9F%98%80");
        assert_eq!(
            crate::form::parse(alloc::format!("x={}", super::form_encode("é &=+%")).as_bytes())
                .get("x")
                .and_then(crate::json::Json::as_str),
            Some("é &=+%")
        );
    }
}
