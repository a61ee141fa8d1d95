//! Sender authentication: Bearer, Basic, a custom header, Standard Webhooks signatures, and
//! form backends' HMAC signatures (as [`crate::hmac_scheme`] describes them).
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

pub use crate::hmac_scheme::{Covers, Encoding, HmacScheme};

/// How far a signature's timestamp (Standard Webhooks, Webflow, Formspree) may be from `now`,
/// either way, in seconds: the five minutes each of them advises.
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
    /// A form backend's HMAC signature of the raw body.
    pub body_signature: Option<BodySignature>,
}

/// A form backend's HMAC-SHA256 signature ([`HmacScheme`]: Typeform, Tally, Webflow, Framer,
/// Basin, Formspree, Formstack). Those without a timestamp cannot stop a captured delivery
/// from being replayed; the receipt's key makes a replay a duplicate, never a second lead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BodySignature {
    /// How the sender signs.
    pub scheme: HmacScheme,
    /// The header that carries the tag: the scheme's, or the one the configuration names.
    pub header: String,
    /// The accepted secrets (several, to rotate).
    pub secrets: Vec<SigningSecret>,
}

impl BodySignature {
    /// The scheme in its own header, with these secrets.
    pub fn new(scheme: HmacScheme, secrets: Vec<SigningSecret>) -> BodySignature {
        BodySignature { scheme, header: String::from(scheme.header), secrets }
    }
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
    /// or the timestamp is not a number; or a form backend's signature lacks the timestamp or
    /// submission ID its scheme covers.
    MalformedSignatureHeaders,
    /// The signature's timestamp is more than five minutes from now.
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
            (AuthMethod::BodySignature, self.check_body_signature(headers, body, now_unix_secs)),
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

    fn check_body_signature(&self, headers: &Headers, body: &[u8], now_unix_secs: i64) -> Check {
        let Some(config) = self.body_signature.as_ref().filter(|b| !b.secrets.is_empty()) else {
            return Check::Absent;
        };
        let Some(value) = headers.get(&config.header) else { return Check::Absent };
        let scheme = config.scheme;
        let value = value.trim_matches([' ', '\t']);
        let message = match Message::of(scheme.covers, value, headers, now_unix_secs) {
            Ok(message) => message,
            Err(error) => return Check::Refused(error),
        };
        let presented: Vec<Vec<u8>> = message.tags.iter().filter_map(|tag| decode_tag(scheme, tag)).collect();
        let mut accepted = subtle::Choice::from(0);
        for secret in &config.secrets {
            let expected = message.sign(secret, body);
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

/// What a form backend's tag covers around the body, and the tags its header presents.
struct Message<'h> {
    /// Before the body: a timestamp and its separator.
    before: (&'h str, &'static str),
    /// After the body: a header's value.
    after: &'h str,
    /// The tags as the header writes them (prefix and encoding still on).
    tags: Vec<&'h str>,
}

impl<'h> Message<'h> {
    /// Reads the signature header's `value` (and the headers the scheme covers) as `covers`
    /// says; refuses a missing or malformed timestamp or ID, or a timestamp out of range.
    fn of(covers: Covers, value: &'h str, headers: &'h Headers, now_unix_secs: i64) -> Result<Message<'h>, AuthError> {
        let in_range = |secs: i64| now_unix_secs.abs_diff(secs) <= SIGNATURE_TOLERANCE_SECS.unsigned_abs();
        let mut message = Message { before: ("", ""), after: "", tags: Vec::new() };
        match covers {
            Covers::Body => message.tags.push(value),
            Covers::BodyThenHeader(name) => {
                message.after = headers.get(name).ok_or(AuthError::MalformedSignatureHeaders)?;
                message.tags.push(value);
            }
            Covers::MillisHeaderColonBody(name) => {
                let timestamp = headers.get(name).ok_or(AuthError::MalformedSignatureHeaders)?;
                let millis = parse_timestamp(timestamp).ok_or(AuthError::MalformedSignatureHeaders)?;
                if !in_range(millis / 1000) {
                    return Err(AuthError::SignatureTimestampOutOfRange);
                }
                message.before = (timestamp, ":");
                message.tags.push(value);
            }
            Covers::InlineSecondsDotBody => {
                let mut timestamp = None;
                for (name, part) in value.split(',').filter_map(|part| part.trim_matches([' ', '\t']).split_once('=')) {
                    match name {
                        "t" if timestamp.is_none() => timestamp = Some(part),
                        "t" => return Err(AuthError::MalformedSignatureHeaders),
                        "v1" => message.tags.push(part),
                        // Other schemes (a future `v2`) are not this receiver's to check.
                        _ => {}
                    }
                }
                let timestamp = timestamp.ok_or(AuthError::MalformedSignatureHeaders)?;
                let secs = parse_timestamp(timestamp).ok_or(AuthError::MalformedSignatureHeaders)?;
                if !in_range(secs) {
                    return Err(AuthError::SignatureTimestampOutOfRange);
                }
                message.before = (timestamp, ".");
            }
        }
        Ok(message)
    }

    /// The HMAC-SHA256 of what this message covers, with `body`, under `secret`.
    fn sign(&self, secret: &SigningSecret, body: &[u8]) -> Tag {
        // HMAC takes keys of any length, so this cannot fail.
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.key()) else { return Tag([0; 32]) };
        mac.update(self.before.0.as_bytes());
        mac.update(self.before.1.as_bytes());
        mac.update(body);
        mac.update(self.after.as_bytes());
        Tag(mac.finalize().into_bytes().into())
    }
}

/// A presented tag's bytes: its prefix off (when the scheme has one and it is there, or
/// required), decoded as the scheme writes it.
fn decode_tag(scheme: HmacScheme, tag: &str) -> Option<Vec<u8>> {
    let bare = match tag.strip_prefix(scheme.prefix) {
        Some(bare) => bare,
        None if scheme.prefix_optional => tag,
        None => return None,
    };
    match scheme.encoding {
        Encoding::Base64 => BASE64.decode(bare).ok(),
        Encoding::Hex => crate::hex::decode(bare),
    }
}

/// A Standard Webhooks timestamp: decimal seconds, digits only.
fn parse_timestamp(text: &str) -> Option<i64> {
    if text.is_empty() || text.len() > 18 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// An HMAC-SHA256 tag computed here. Its one comparison is constant time ([`Tag::matches`]): it
/// has no `PartialEq` to call by mistake, and its bytes leave it only encoded, as the header a
/// sender would send.
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

/// The headers a sender of `signature`'s scheme sends with `body` at `now_millis` (the tag, and
/// Webflow's timestamp), signed with `secret`; `headers` are the delivery's others (Framer's tag
/// covers its submission ID header): for tests and tools.
pub fn body_signature_headers(
    signature: &BodySignature,
    secret: &SigningSecret,
    headers: &Headers,
    body: &[u8],
    now_millis: u64,
) -> Vec<(String, String)> {
    let scheme = signature.scheme;
    let (millis, secs) = (alloc::format!("{now_millis}"), alloc::format!("{}", now_millis / 1000));
    let message = match scheme.covers {
        Covers::Body => Message { before: ("", ""), after: "", tags: Vec::new() },
        Covers::BodyThenHeader(name) => {
            Message { before: ("", ""), after: headers.get(name).unwrap_or_default(), tags: Vec::new() }
        }
        Covers::MillisHeaderColonBody(_) => Message { before: (&millis, ":"), after: "", tags: Vec::new() },
        Covers::InlineSecondsDotBody => Message { before: (&secs, "."), after: "", tags: Vec::new() },
    };
    let tag = message.sign(secret, body);
    let mut value = String::new();
    if let Covers::InlineSecondsDotBody = scheme.covers {
        value.push_str("t=");
        value.push_str(&secs);
        value.push_str(",v1=");
    }
    value.push_str(scheme.prefix);
    match scheme.encoding {
        Encoding::Base64 => tag.encode_into(&mut value),
        Encoding::Hex => value.push_str(&crate::hex::encode(&tag.0)),
    }
    let mut out = alloc::vec![(signature.header.clone(), value)];
    if let Covers::MillisHeaderColonBody(name) = scheme.covers {
        out.push((String::from(name), millis));
    }
    out
}

/// The `webhook-signature` header value (`v1,<base64>`) a sender would send: for tests and tools.
pub fn signature_header(secret: &SigningSecret, id: &str, timestamp: &str, body: &[u8]) -> String {
    let mut header = String::from("v1,");
    sign(secret, id, timestamp, body).encode_into(&mut header);
    header
}

#[cfg(test)]
mod tests;
