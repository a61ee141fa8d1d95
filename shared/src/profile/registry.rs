//! The registry of sender profiles: each profile's [`Sender`], one line each. A delivery's
//! envelope ([`Profile::read`]) and a receipt's lead ([`lead_from_receipt`]) go through it.
//! The profiles' identities are [`crate::profile`]'s, below everything here; each sender's
//! module is above `envelope`, `receipt` and `lead`; this file is above them all.

use crate::envelope::{Envelope, Refusal};
use crate::headers::Headers;
use crate::lead::{Lead, LeadError};
pub use crate::mapping::LeadMapping;
use crate::profile::sender::Sender;
use crate::profile::Profile;
use crate::receipt::Receipt;

/// What `profile` does: its module's [`Sender`].
pub fn sender(profile: Profile) -> &'static dyn Sender {
    match profile {
        Profile::StaticForms => &super::static_forms::StaticForms,
        Profile::StandardWebhooks => &super::standard_webhooks::StandardWebhooks,
        Profile::Typeform => &super::typeform::Typeform,
        Profile::Tally => &super::tally::Tally,
    }
}

impl Profile {
    /// Checks an authenticated delivery's body (and, for some senders, headers) and returns its
    /// envelope: identity, event, the parsed body and its fingerprint.
    pub fn read(self, headers: &Headers, body: &[u8]) -> Result<Envelope, Refusal> {
        sender(self).read(headers, body)
    }
}

/// Maps a receipt to its lead, by its profile. The lead's `external_id` is the submission ID
/// for Static Forms (as it always was) and the receipt's key (`<profile>:<id>`) for every other
/// profile, so the same raw ID from two senders is two leads.
pub fn lead_from_receipt(receipt: &Receipt, mapping: &LeadMapping) -> Result<Lead, LeadError> {
    sender(receipt.profile).lead(receipt, mapping)
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
