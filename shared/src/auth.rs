//! Sender authentication: Bearer, Basic, a custom header, and Standard Webhooks signatures.
//!
//! Any number of methods may be configured at once, each with several accepted credentials so
//! they can be rotated. A request is authenticated when any configured method accepts it. With
//! no method configured, every request is refused: the receiver fails closed.

use alloc::string::String;
use alloc::vec::Vec;
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::headers::Headers;
use crate::secret::{matches_any, Credential, SigningSecret};

/// How far a Standard Webhooks timestamp may be from `now`, either way, in seconds.
pub const SIGNATURE_TOLERANCE_SECS: i64 = 5 * 60;

/// The accepted credentials of every configured method.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuthPolicy {
    /// `Authorization: Bearer <token>` accepts these tokens.
    pub bearer_tokens: Vec<Credential>,
    /// `Authorization: Basic <base64(user:password)>` accepts these `user:password` pairs.
    pub basic_credentials: Vec<Credential>,
    /// A custom header and the values it accepts.
    pub header: Option<HeaderCredentials>,
    /// Standard Webhooks signatures made with any of these secrets.
    pub signing_secrets: Vec<SigningSecret>,
    /// A signature of the raw body alone, as form backends send it (Typeform, Tally).
    pub body_signature: Option<BodySignature>,
}

/// A signature over the raw body alone: `<header>: <prefix><base64 of HMAC-SHA256(secret, body)>`.
/// It carries no timestamp, so a captured delivery can be replayed; the receipt's key makes a
/// replay a duplicate, never a second lead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BodySignature {
    /// The header that carries it.
    pub header: &'static str,
    /// What precedes the base64 signature (`sha256=` for Typeform, nothing for Tally).
    pub prefix: &'static str,
    /// The accepted secrets (several, to rotate).
    pub secrets: Vec<SigningSecret>,
}

/// A custom authentication header: its name and accepted values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderCredentials {
    /// The header's name (any case).
    pub name: String,
    /// The values it accepts.
    pub values: Vec<Credential>,
}

/// The method that authenticated a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthMethod {
    /// A bearer token.
    Bearer,
    /// Basic credentials.
    Basic,
    /// The custom header.
    Header,
    /// A Standard Webhooks signature.
    Signature,
    /// A signature of the body alone.
    BodySignature,
}

/// Why a request was not authenticated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthError {
    /// No method is configured, so nothing can be accepted (a configuration fault).
    NotConfigured,
    /// The request presents no credential for any configured method.
    MissingCredentials,
    /// The bearer token is not an accepted one.
    BadBearerToken,
    /// The Basic credentials are malformed or not accepted.
    BadBasicCredentials,
    /// The custom header's value is not an accepted one.
    BadHeaderValue,
    /// Some but not all of `webhook-id`, `webhook-timestamp`, `webhook-signature` are present,
    /// or the timestamp is not a number.
    MalformedSignatureHeaders,
    /// The signature timestamp is more than five minutes from now.
    SignatureTimestampOutOfRange,
    /// No `v1` signature matches any accepted secret, or the body signature does not.
    BadSignature,
}

impl AuthError {
    /// A stable name for logs (never shown to the sender, who only learns "unauthenticated").
    pub fn reason(self) -> &'static str {
        match self {
            AuthError::NotConfigured => "auth_not_configured",
            AuthError::MissingCredentials => "missing_credentials",
            AuthError::BadBearerToken => "bad_bearer_token",
            AuthError::BadBasicCredentials => "bad_basic_credentials",
            AuthError::BadHeaderValue => "bad_header_value",
            AuthError::MalformedSignatureHeaders => "malformed_signature_headers",
            AuthError::SignatureTimestampOutOfRange => "signature_timestamp_out_of_range",
            AuthError::BadSignature => "bad_signature",
        }
    }
}

impl AuthPolicy {
    /// True if at least one method has at least one accepted credential.
    pub fn is_configured(&self) -> bool {
        !self.bearer_tokens.is_empty()
            || !self.basic_credentials.is_empty()
            || self.header.as_ref().is_some_and(|h| !h.values.is_empty())
            || !self.signing_secrets.is_empty()
            || self.body_signature.as_ref().is_some_and(|b| !b.secrets.is_empty())
    }

    /// The `WWW-Authenticate` value of a 401 (RFC 9110, section 11.6.1): one challenge per
    /// configured method, so a sender's operator can see what this receiver expects. Bearer and
    /// Basic are registered schemes; the custom header and Standard Webhooks signatures have
    /// none, so they are named by schemes of this receiver's own (`Header`, `Webhook-Signature`),
    /// which say how to authenticate and never which header value or secret is accepted.
    pub fn challenge(&self) -> String {
        let mut challenges: Vec<&str> = Vec::new();
        if !self.bearer_tokens.is_empty() {
            challenges.push("Bearer realm=\"webhooks\"");
        }
        if !self.basic_credentials.is_empty() {
            challenges.push("Basic realm=\"webhooks\", charset=\"UTF-8\"");
        }
        if self.header.as_ref().is_some_and(|h| !h.values.is_empty()) {
            challenges.push("Header realm=\"webhooks\"");
        }
        if !self.signing_secrets.is_empty() {
            challenges.push("Webhook-Signature realm=\"webhooks\"");
        }
        if self.body_signature.as_ref().is_some_and(|b| !b.secrets.is_empty()) {
            challenges.push("Body-Signature realm=\"webhooks\"");
        }
        challenges.join(", ")
    }

    /// Authenticates a request from its headers, raw body and the current time.
    ///
    /// Every configured method looks at the request; the first that accepts wins. When none
    /// does, the error is that of the first method (in the order signature, bearer, basic,
    /// header, body signature) for which the request presented a credential, else `MissingCredentials`.
    pub fn authenticate(&self, headers: &Headers, body: &[u8], now_unix_secs: i64) -> Result<AuthMethod, AuthError> {
        if !self.is_configured() {
            return Err(AuthError::NotConfigured);
        }
        let checks = [
            (AuthMethod::Signature, self.check_signature(headers, body, now_unix_secs)),
            (AuthMethod::Bearer, self.check_bearer(headers)),
            (AuthMethod::Basic, self.check_basic(headers)),
            (AuthMethod::Header, self.check_header(headers)),
            (AuthMethod::BodySignature, self.check_body_signature(headers, body)),
        ];
        let mut first_error = None;
        for (method, check) in checks {
            match check {
                Check::Accepted => return Ok(method),
                Check::Refused(error) => first_error = first_error.or(Some(error)),
                Check::Absent => {}
            }
        }
        Err(first_error.unwrap_or(AuthError::MissingCredentials))
    }

    fn check_bearer(&self, headers: &Headers) -> Check {
        if self.bearer_tokens.is_empty() {
            return Check::Absent;
        }
        match authorization(headers, "Bearer") {
            None => Check::Absent,
            Some(token) if matches_any(token.as_bytes(), &self.bearer_tokens) => Check::Accepted,
            Some(_) => Check::Refused(AuthError::BadBearerToken),
        }
    }

    fn check_basic(&self, headers: &Headers) -> Check {
        if self.basic_credentials.is_empty() {
            return Check::Absent;
        }
        let Some(encoded) = authorization(headers, "Basic") else { return Check::Absent };
        match BASE64.decode(encoded) {
            Ok(pair) if matches_any(&pair, &self.basic_credentials) => Check::Accepted,
            _ => Check::Refused(AuthError::BadBasicCredentials),
        }
    }

    fn check_header(&self, headers: &Headers) -> Check {
        let Some(config) = self.header.as_ref().filter(|h| !h.values.is_empty()) else {
            return Check::Absent;
        };
        match headers.get(&config.name) {
            None => Check::Absent,
            Some(value) if matches_any(value.as_bytes(), &config.values) => Check::Accepted,
            Some(_) => Check::Refused(AuthError::BadHeaderValue),
        }
    }

    fn check_body_signature(&self, headers: &Headers, body: &[u8]) -> Check {
        let Some(config) = self.body_signature.as_ref().filter(|b| !b.secrets.is_empty()) else {
            return Check::Absent;
        };
        let Some(value) = headers.get(config.header) else { return Check::Absent };
        let presented = value.trim_matches([' ', '\t']).strip_prefix(config.prefix).and_then(|s| BASE64.decode(s).ok());
        let Some(presented) = presented else { return Check::Refused(AuthError::BadSignature) };
        let accepted = config
            .secrets
            .iter()
            .fold(subtle::Choice::from(0), |found, secret| found | sign_body(secret, body).matches(&presented));
        if bool::from(accepted) {
            Check::Accepted
        } else {
            Check::Refused(AuthError::BadSignature)
        }
    }

    fn check_signature(&self, headers: &Headers, body: &[u8], now_unix_secs: i64) -> Check {
        if self.signing_secrets.is_empty() {
            return Check::Absent;
        }
        let parts = (headers.get("webhook-id"), headers.get("webhook-timestamp"), headers.get("webhook-signature"));
        let (id, timestamp, signatures) = match parts {
            (None, None, None) => return Check::Absent,
            (Some(id), Some(ts), Some(sig)) => (id, ts, sig),
            _ => return Check::Refused(AuthError::MalformedSignatureHeaders),
        };
        let Some(sent_at) = parse_timestamp(timestamp) else {
            return Check::Refused(AuthError::MalformedSignatureHeaders);
        };
        if now_unix_secs.abs_diff(sent_at) > SIGNATURE_TOLERANCE_SECS.unsigned_abs() {
            return Check::Refused(AuthError::SignatureTimestampOutOfRange);
        }
        let presented: Vec<Vec<u8>> =
            signatures.split(' ').filter_map(|s| s.strip_prefix("v1,")).filter_map(|s| BASE64.decode(s).ok()).collect();
        let mut accepted = subtle::Choice::from(0);
        for secret in &self.signing_secrets {
            let expected = sign(secret, id, timestamp, body);
            for candidate in &presented {
                accepted |= expected.matches(candidate);
            }
        }
        if bool::from(accepted) {
            Check::Accepted
        } else {
            Check::Refused(AuthError::BadSignature)
        }
    }
}

/// What one method made of a request.
enum Check {
    /// The request carries no credential for this method (or it is not configured).
    Absent,
    /// The credential is accepted.
    Accepted,
    /// A credential was presented and refused.
    Refused(AuthError),
}

/// The credentials after `scheme` in the `Authorization` header, scheme matched in any case:
/// `auth-scheme 1*SP credentials` (RFC 9110, section 11.4), the field's surrounding optional
/// whitespace (spaces and tabs, section 5.6.3, and nothing else) left out.
fn authorization<'h>(headers: &'h Headers, scheme: &str) -> Option<&'h str> {
    let value = headers.get("authorization")?.trim_matches([' ', '\t']);
    let (found, rest) = value.split_once(' ')?;
    found.eq_ignore_ascii_case(scheme).then(|| rest.trim_start_matches(' '))
}

/// A Standard Webhooks timestamp: decimal seconds, digits only.
fn parse_timestamp(text: &str) -> Option<i64> {
    if text.is_empty() || text.len() > 18 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// An HMAC-SHA256 tag computed here. Its one comparison is constant time ([`Tag::matches`]): it
/// has no `PartialEq` to call by mistake, and its bytes leave it only in base64, as the
/// header a sender would send.
struct Tag([u8; 32]);

impl Tag {
    /// Whether `presented` is this tag, compared in constant time.
    fn matches(&self, presented: &[u8]) -> subtle::Choice {
        self.0.as_slice().ct_eq(presented)
    }

    /// Appends the tag in base64 to `out`.
    fn encode_into(&self, out: &mut String) {
        BASE64.encode_string(self.0, out);
    }
}

/// The HMAC-SHA256 of `{id}.{timestamp}.{body}` under `secret`.
fn sign(secret: &SigningSecret, id: &str, timestamp: &str, body: &[u8]) -> Tag {
    // HMAC takes keys of any length, so this cannot fail.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.key()) else { return Tag([0; 32]) };
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    Tag(mac.finalize().into_bytes().into())
}

/// The HMAC-SHA256 of `body` under `secret`.
fn sign_body(secret: &SigningSecret, body: &[u8]) -> Tag {
    // HMAC takes keys of any length, so this cannot fail.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.key()) else { return Tag([0; 32]) };
    mac.update(body);
    Tag(mac.finalize().into_bytes().into())
}

/// The value of a body signature header (`prefix` and the base64 HMAC-SHA256 of `body`) a
/// sender would send: for tests and tools.
pub fn body_signature_header(secret: &SigningSecret, prefix: &str, body: &[u8]) -> String {
    let mut header = String::from(prefix);
    sign_body(secret, body).encode_into(&mut header);
    header
}

/// The `webhook-signature` header value (`v1,<base64>`) a sender would send: for tests and tools.
pub fn signature_header(secret: &SigningSecret, id: &str, timestamp: &str, body: &[u8]) -> String {
    let mut header = String::from("v1,");
    sign(secret, id, timestamp, body).encode_into(&mut header);
    header
}

#[cfg(test)]
mod tests;
