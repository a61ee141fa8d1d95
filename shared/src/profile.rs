//! Sender profiles: one route per sender, and what each delivery's identity, content and lead
//! are taken from.
//!
//! A profile is data: how the sender authenticates (its [`crate::auth::AuthPolicy`], configured
//! by the shell), the route it posts to, where the delivery's stable identity comes from, which
//! body checks apply, what the fingerprint covers, and how a receipt becomes a lead. Adding a
//! sender is a variant here, a module beside this one (its envelope and lead mapping), and the
//! shells' configuration of its secret (ARCHITECTURE.md, "Adding a sender profile").
//!
//! Receipt keys are namespaced by profile (`tally:<responseId>`, ...), so identities from
//! different senders never collide. `staticforms` keeps the key it always had
//! (`staticforms:form.submitted:<submissionId>`), so receipts stored before profiles existed are
//! still found by their retries.

use alloc::string::String;

use crate::envelope::{Envelope, EnvelopeError};
use crate::json::{self, Json};

pub mod standard_webhooks;
pub mod tally;
pub mod typeform;

/// A sender profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Profile {
    /// Static Forms (`../shared/SENDER.md`): the `form.submitted` envelope and the
    /// `Idempotency-Key` header; Bearer, Basic, a custom header or Standard Webhooks signatures.
    StaticForms,
    /// Any sender that signs per the Standard Webhooks specification: identity `webhook-id`,
    /// fingerprint the raw body, the lead from configured JSON pointers.
    StandardWebhooks,
    /// Typeform's `form_response` webhooks, signed with `Typeform-Signature`.
    Typeform,
    /// Tally's `FORM_RESPONSE` webhooks, signed with `Tally-Signature`.
    Tally,
}

/// What a delivery's body and headers failed on, by check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The body is not this profile's envelope.
    Envelope(EnvelopeError),
    /// The identity the headers carry is missing or not acceptable (400, by the key's rules).
    Key(crate::key::KeyError),
}

impl Profile {
    /// Every profile, in the order the documentation lists them.
    pub const ALL: [Profile; 4] = [Profile::StaticForms, Profile::StandardWebhooks, Profile::Typeform, Profile::Tally];

    /// The name in routes, configuration and receipts.
    pub fn name(self) -> &'static str {
        match self {
            Profile::StaticForms => "staticforms",
            Profile::StandardWebhooks => "standard-webhooks",
            Profile::Typeform => "typeform",
            Profile::Tally => "tally",
        }
    }

    /// The profile called `name`.
    pub fn parse(name: &str) -> Option<Profile> {
        Profile::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The route its deliveries are posted to: `/webhooks/<name>`.
    pub fn path(self) -> &'static str {
        match self {
            Profile::StaticForms => "/webhooks/staticforms",
            Profile::StandardWebhooks => "/webhooks/standard-webhooks",
            Profile::Typeform => "/webhooks/typeform",
            Profile::Tally => "/webhooks/tally",
        }
    }

    /// The profile whose route is `path`.
    pub fn of_path(path: &str) -> Option<Profile> {
        Profile::ALL.into_iter().find(|p| p.path() == path)
    }

    /// What every receipt key of this profile starts with. No prefix is a prefix of another's,
    /// so a key names one profile and one identity.
    pub fn key_prefix(self) -> &'static str {
        match self {
            Profile::StaticForms => "staticforms:form.submitted:",
            Profile::StandardWebhooks => "standard-webhooks:",
            Profile::Typeform => "typeform:",
            Profile::Tally => "tally:",
        }
    }

    /// The receipt key of the delivery whose identity is `id`.
    pub fn key(self, id: &str) -> String {
        let mut key = String::from(self.key_prefix());
        key.push_str(id);
        key
    }

    /// The profile and identity a receipt key holds (the identity may itself hold `:`).
    pub fn of_key(key: &str) -> Option<(Profile, &str)> {
        Profile::ALL
            .into_iter()
            .find_map(|p| key.strip_prefix(p.key_prefix()).map(|id| (p, id)))
            .filter(|(_, id)| !id.is_empty())
    }

    /// The headers this profile's checks read, besides the staticforms custom authentication
    /// header (see [`crate::receive::Policy::header_names`]).
    pub fn headers_read(self) -> &'static [&'static str] {
        match self {
            Profile::StaticForms => &crate::receive::HEADERS_READ,
            Profile::StandardWebhooks => &["content-type", "webhook-id", "webhook-timestamp", "webhook-signature"],
            Profile::Typeform => &["content-type", typeform::SIGNATURE_HEADER],
            Profile::Tally => &["content-type", tally::SIGNATURE_HEADER],
        }
    }

    /// Checks an authenticated delivery's body (and, for some senders, headers) and returns its
    /// envelope: identity, event, the parsed body and its fingerprint.
    pub fn read(self, headers: &crate::headers::Headers, body: &[u8]) -> Result<Envelope, Refusal> {
        match self {
            Profile::StaticForms => crate::envelope::parse_envelope(body).map_err(Refusal::Envelope),
            Profile::StandardWebhooks => standard_webhooks::read(headers, body),
            Profile::Typeform => typeform::read(body).map_err(Refusal::Envelope),
            Profile::Tally => tally::read(body).map_err(Refusal::Envelope),
        }
    }
}

/// Parses a body that must be a JSON object.
pub(crate) fn parse_object(body: &[u8]) -> Result<Json, EnvelopeError> {
    let body = json::parse(body).map_err(EnvelopeError::InvalidJson)?;
    match body {
        Json::Object(_) => Ok(body),
        _ => Err(EnvelopeError::NotAnObject),
    }
}

/// The identity at `value`: a string that [`crate::envelope::is_valid_submission_id`] accepts.
pub(crate) fn identity(value: Option<&Json>) -> Result<String, EnvelopeError> {
    let id = value.and_then(Json::as_str).ok_or(EnvelopeError::MissingSubmissionId)?;
    if !crate::envelope::is_valid_submission_id(id) {
        return Err(EnvelopeError::InvalidSubmissionId);
    }
    Ok(String::from(id))
}

/// Requires the body's event type at `field` to be `expected`.
pub(crate) fn expect_event(body: &Json, field: &str, expected: &str) -> Result<String, EnvelopeError> {
    match body.get(field).and_then(Json::as_str) {
        None => Err(EnvelopeError::MissingEvent),
        Some(event) if event != expected => Err(EnvelopeError::UnsupportedEvent),
        Some(event) => Ok(String::from(event)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test(unsupported = test)]
    fn names_routes_and_keys_name_one_profile_each() {
        for profile in Profile::ALL {
            assert_eq!(Profile::parse(profile.name()), Some(profile));
            assert_eq!(Profile::of_path(profile.path()), Some(profile));
            assert_eq!(profile.path().strip_prefix("/webhooks/"), Some(profile.name()));
            assert_eq!(Profile::of_key(&profile.key("a:b")), Some((profile, "a:b")));
            assert_eq!(Profile::of_key(profile.key_prefix()), None, "an empty identity");
            for other in Profile::ALL.into_iter().filter(|o| *o != profile) {
                assert!(!other.key_prefix().starts_with(profile.key_prefix()), "{profile:?} {other:?}");
            }
        }
        assert_eq!(Profile::StaticForms.key("sub_1"), "staticforms:form.submitted:sub_1");
        assert_eq!(Profile::parse("StaticForms"), None);
        assert_eq!(Profile::of_path("/webhooks/"), None);
        assert_eq!(Profile::of_path("/webhooks/typeform/"), None);
        assert_eq!(Profile::of_key("other:x"), None);
    }
}
