//! The registry of sender profiles: each profile's [`Sender`], one line each (in
//! `with_sender!`). A delivery's envelope and key ([`Profile::read`], [`Profile::receipt_key`]),
//! a profile's authentication ([`Profile::auth`]) and a receipt's lead ([`lead_from_receipt`])
//! go through it. The profiles' identities are [`crate::profile`]'s, below everything here;
//! each sender's module is above `envelope`, `receipt` and `lead`; this file is above them all.
//!
//! The dispatch is static: each method is called on the profile's own type, so a shell links
//! only the methods it calls (the edge never links a lead mapping). [`sender`] hands out the
//! trait object, for tests and tools, and links every method of every profile.

use alloc::string::String;

use crate::envelope::{Envelope, Refusal};
use crate::headers::Headers;
use crate::key::KeyError;
use crate::lead::{Lead, LeadError};
pub use crate::mapping::LeadMapping;
use crate::profile::sender::{Sender, SenderAuth};
use crate::profile::Profile;
use crate::receipt::Receipt;

/// `$body` with `$sender` bound to `$profile`'s sender, its own type: the registry's one line
/// per profile.
macro_rules! with_sender {
    ($profile:expr, |$sender:ident| $body:expr) => {
        match $profile {
            Profile::StaticForms => {
                let $sender = &super::static_forms::StaticForms;
                $body
            }
            Profile::StandardWebhooks => {
                let $sender = &super::standard_webhooks::StandardWebhooks;
                $body
            }
            Profile::Typeform => {
                let $sender = &super::typeform::Typeform;
                $body
            }
            Profile::Tally => {
                let $sender = &super::tally::Tally;
                $body
            }
            Profile::Webflow => {
                let $sender = &super::webflow::Webflow;
                $body
            }
            Profile::Framer => {
                let $sender = &super::framer::Framer;
                $body
            }
            Profile::Basin => {
                let $sender = &super::basin::Basin;
                $body
            }
            Profile::Formspree => {
                let $sender = &super::formspree::Formspree;
                $body
            }
            Profile::Formstack => {
                let $sender = &super::formstack::Formstack;
                $body
            }
        }
    };
}

/// What `profile` does: its module's [`Sender`], as a trait object (every method linked; the
/// shells call the static methods below instead).
pub fn sender(profile: Profile) -> &'static dyn Sender {
    with_sender!(profile, |sender| sender as &'static dyn Sender)
}

impl Profile {
    /// How this profile's deliveries are authenticated ([`Sender::auth`]).
    pub fn auth(self) -> SenderAuth {
        with_sender!(self, |sender| sender.auth())
    }

    /// Which 2xx answers a new receipt ([`Sender::acknowledgement`]).
    pub fn acknowledgement(self) -> crate::profile::Acknowledgement {
        with_sender!(self, |sender| sender.acknowledgement())
    }

    /// Whether the sender may post form-encoded bodies ([`Sender::takes_form_bodies`]).
    pub fn takes_form_bodies(self) -> bool {
        with_sender!(self, |sender| sender.takes_form_bodies())
    }

    /// Checks an authenticated delivery's body (and, for some senders, headers) and returns its
    /// envelope: identity, event, the parsed body and its fingerprint ([`Sender::read`]).
    pub fn read(self, headers: &Headers, body: &[u8]) -> Result<Envelope, Refusal> {
        with_sender!(self, |sender| sender.read(headers, body))
    }

    /// The receipt key of a delivery whose envelope was read ([`Sender::key`]).
    pub fn receipt_key(self, headers: &Headers, envelope: &Envelope) -> Result<String, KeyError> {
        with_sender!(self, |sender| sender.key(headers, envelope))
    }
}

/// Maps a receipt to its lead, by its profile. The lead's `external_id` is the submission ID
/// for Static Forms (as it always was) and the receipt's key (`<profile>:<id>`) for every other
/// profile, so the same raw ID from two senders is two leads.
pub fn lead_from_receipt(receipt: &Receipt, mapping: &LeadMapping) -> Result<Lead, LeadError> {
    with_sender!(receipt.profile, |sender| sender.lead(receipt, mapping))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::parse_envelope;
    use alloc::string::String;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test(unsupported = test)]
    fn lead_keys_never_collide_across_profiles() {
        let lead_key = |id: &str| {
            let body = alloc::format!(r#"{{"event":"form.submitted","data":{{"submissionId":{}}}}}"#, {
                let mut s = String::new();
                crate::json::write_string(id, &mut s);
                s
            });
            let envelope = parse_envelope(body.as_bytes()).unwrap();
            let receipt = Receipt::new(&envelope, Profile::StaticForms.key(id), "r", 0, 1);
            lead_from_receipt(&receipt, &LeadMapping::default()).unwrap().external_id
        };
        assert_eq!(lead_key("sub_1"), "sub_1");
        assert_eq!(lead_key("tally"), "tally");
        // Shaped like another profile's lead key: the receipt's own key instead.
        assert_eq!(lead_key("tally:2wgx4n"), "staticforms:form.submitted:tally:2wgx4n");
        assert_eq!(lead_key("typeform:f:t"), "staticforms:form.submitted:typeform:f:t");
        assert_eq!(lead_key("standard-webhooks:m"), "staticforms:form.submitted:standard-webhooks:m");
        assert_eq!(lead_key("staticforms:form.submitted:x"), "staticforms:form.submitted:staticforms:form.submitted:x");
    }
}
