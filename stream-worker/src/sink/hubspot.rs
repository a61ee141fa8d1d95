//! HubSpot: contacts batch upsert, keyed by a unique contact property holding the submission ID.
//!
//! `POST /crm/v3/objects/contacts/batch/upsert` with `idProperty` set to that property (by
//! default `static_forms_submission_id`, which must exist in the portal with unique values).
//! HubSpot refuses a batch that names the same id twice, so each call carries one input.

use serde_json::json;
use shared::lead::Lead;

use super::http::send;
use super::{LeadSink, SinkError};

/// A HubSpot portal reached with a private app token.
pub struct HubSpot {
    client: reqwest::Client,
    url: String,
    token: String,
    id_property: String,
}

impl HubSpot {
    pub fn new(client: reqwest::Client, base_url: &str, token: &str, id_property: &str) -> HubSpot {
        let url = format!("{base_url}/crm/v3/objects/contacts/batch/upsert");
        HubSpot { client, url, token: token.to_owned(), id_property: id_property.to_owned() }
    }
}

/// The contact properties for a lead: the name split into first and last at the first space.
pub fn properties(lead: &Lead, id_property: &str) -> serde_json::Value {
    let (first, last) = lead.name.split_once(' ').unwrap_or((lead.name.as_str(), ""));
    json!({
        id_property: lead.external_id,
        "email": lead.email,
        "firstname": first,
        "lastname": last,
        "message": lead.message,
    })
}

impl LeadSink for HubSpot {
    async fn upsert(&self, lead: &Lead, _receipt_key: &str) -> Result<(), SinkError> {
        let body = json!({"inputs": [{
            "idProperty": self.id_property,
            "id": lead.external_id,
            "properties": properties(lead, &self.id_property),
        }]});
        let request = self.client.post(&self.url).bearer_auth(&self.token).json(&body);
        let response = send(request).await?;
        // 207 Multi-Status: some inputs failed. With one input, that input failed for its content.
        if response.status().as_u16() == 207 {
            return Err(SinkError::Permanent { reason: "sink_rejected" });
        }
        Ok(())
    }
}
