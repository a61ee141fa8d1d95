//! Form backends' HMAC-SHA256 signatures as plain data: where each vendor puts the tag, how it
//! writes it, and what it covers besides the raw body. [`crate::auth`] checks them. Plain
//! values that depend on nothing, so a profile's declaration sits low in the house.

/// How a tag is written in its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// Standard base64 with padding (Typeform, Tally).
    Base64,
    /// Hexadecimal, either case (Webflow, Framer, Basin, Formspree, Formstack).
    Hex,
}

/// What the HMAC covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Covers {
    /// The raw body alone (Typeform, Tally, Basin, Formstack). No timestamp: a captured
    /// delivery can be replayed, and the receipt's key makes the replay a duplicate.
    Body,
    /// The raw body followed by this header's value, with nothing between (Framer: the body
    /// and `Framer-Webhook-Submission-Id`). No timestamp either.
    BodyThenHeader(&'static str),
    /// `{timestamp}:{body}`, the timestamp this header's value in milliseconds since the epoch,
    /// within [`crate::auth::SIGNATURE_TOLERANCE_SECS`] of now (Webflow: `x-webflow-timestamp`).
    MillisHeaderColonBody(&'static str),
    /// The signature header is `t=<unix seconds>,v1=<tag>[,v1=<tag>...]`, covering
    /// `{t}.{body}`, `t` within [`crate::auth::SIGNATURE_TOLERANCE_SECS`] of now (Formspree).
    InlineSecondsDotBody,
}

/// One vendor's signature scheme. The key is the secret's text, as each vendor gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HmacScheme {
    /// The header that carries the tag (lowercase), unless the configuration names another
    /// (Formstack lets its user choose).
    pub header: &'static str,
    /// What precedes the tag (`sha256=`, or nothing).
    pub prefix: &'static str,
    /// Whether a tag without [`HmacScheme::prefix`] is read too (Formstack sends it sometimes
    /// with, sometimes without).
    pub prefix_optional: bool,
    /// How the tag is written.
    pub encoding: Encoding,
    /// What the HMAC covers.
    pub covers: Covers,
}

impl HmacScheme {
    /// A signature of the raw body alone, in `header`, after `prefix`.
    pub const fn body(header: &'static str, prefix: &'static str, encoding: Encoding) -> HmacScheme {
        HmacScheme { header, prefix, prefix_optional: false, encoding, covers: Covers::Body }
    }
}
