//! The `staticforms` profile (`../shared/SENDER.md`): the `form.submitted` envelope
//! ([`crate::envelope::parse_envelope`]), the receipt key the `Idempotency-Key` header names
//! ([`crate::key::check_key`]), and `formData`'s lead ([`crate::lead`]). Those parts predate
//! the profiles and stay where every profile's common types are; this file plugs them in.

use alloc::string::String;

use crate::envelope::{parse_envelope, Envelope, Refusal};
use crate::headers::Headers;
use crate::key::{check_key, KeyError};
use crate::lead::{static_forms_lead, Lead, LeadError};
use crate::mapping::LeadMapping;
use crate::profile::sender::{Sender, SenderAuth};
use crate::profile::Profile;
use crate::receipt::Receipt;

/// The `staticforms` profile.
pub struct StaticForms;

impl Sender for StaticForms {
    fn profile(&self) -> Profile {
        Profile::StaticForms
    }

    fn auth(&self) -> SenderAuth {
        SenderAuth::StaticForms
    }

    fn read(&self, _headers: &Headers, body: &[u8]) -> Result<Envelope, Refusal> {
        parse_envelope(body).map_err(Refusal::Envelope)
    }

    /// Static Forms names the key in a header of its own, which must match the body's.
    fn key(&self, headers: &Headers, envelope: &Envelope) -> Result<String, KeyError> {
        check_key(headers, &envelope.submission_id)
    }

    fn lead(&self, receipt: &Receipt, _mapping: &LeadMapping) -> Result<Lead, LeadError> {
        static_forms_lead(receipt)
    }

    #[cfg(any(test, feature = "examples"))]
    fn example(&self, id: &str, answer: &str) -> crate::profile::sender::Example {
        use crate::profile::sender::substitute;
        let body = include_str!("../../tests/fixtures/delivery.json");
        let body = substitute(&substitute(body, "\"sub_8fK2qLw9Xc\"", id), "\"Hello\"", answer);
        crate::profile::sender::Example::json(body, id.into(), id.into(), ("Ada Lovelace", "ada@example.com"))
            .header("Idempotency-Key", Profile::StaticForms.key(id))
    }
}
