//! The credentials the fuzz targets' policies accept, shared by the targets and the oracle.

/// The bearer token the targets' policy accepts.
pub const BEARER: &str = "fuzz-token";
/// The Basic `user:password` pair it accepts.
pub const BASIC: &str = "fuzz-user:fuzz-pass";
/// The custom header and the value it accepts.
pub const HEADER: (&str, &str) = ("X-Fuzz-Token", "fuzz-header-value");
/// The Standard Webhooks signing secret it accepts (`whsec_` and base64 of `fuzz-signing-key`).
pub const SIGNING_SECRET: &str = "whsec_ZnV6ei1zaWduaW5nLWtleQ==";
/// The secret every form backend's profile accepts (Typeform, Tally, Webflow, Framer, Basin,
/// Formspree, Formstack; its text is the key).
pub const FORM_SECRET: &str = "fuzz-form-secret";
