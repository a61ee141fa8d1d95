//! HubSpot: one contact per person, one ticket per submission, the two associated.
//!
//! Contacts are unique by email in HubSpot, so a contact per submission fails the moment one
//! person submits twice. Instead:
//! 1. the contact is upserted by email (`POST /crm/v3/objects/contacts/batch/upsert`,
//!    `idProperty: "email"`), when the form gave one;
//! 2. the submission becomes a ticket upserted by a unique ticket property holding the
//!    submission ID (`POST /crm/v3/objects/tickets/batch/upsert`, by default
//!    `static_forms_submission_id`, which must exist with unique values): tickets are on every
//!    HubSpot tier (custom objects need Enterprise), and upsert by a unique property makes a
//!    replay update the same ticket;
//! 3. the ticket is associated with the contact
//!    (`PUT /crm/v4/objects/tickets/<id>/associations/default/contacts/<id>`), which upserts
//!    cannot carry.
//!
//! Two submissions from one person are two tickets and one contact; a replay changes nothing.
//! Every call carries one input (the batch endpoints refuse a batch naming an ID twice).

use serde_json::{json, Value};
use shared::lead::Lead;

use super::http::{classify_status, send, transport_error};
use super::{LeadSink, SinkError};

/// A HubSpot portal reached with a private app token.
pub struct HubSpot {
    client: reqwest::Client,
    base_url: String,
    token: String,
    id_property: String,
    pipeline: String,
    stage: String,
}

/// Where tickets go: the pipeline and its stage for a new submission.
pub struct TicketPipeline {
    pub pipeline: String,
    pub stage: String,
}

impl HubSpot {
    pub fn new(
        client: reqwest::Client,
        base_url: &str,
        token: &str,
        id_property: &str,
        tickets: TicketPipeline,
    ) -> HubSpot {
        HubSpot {
            client,
            base_url: base_url.to_owned(),
            token: token.to_owned(),
            id_property: id_property.to_owned(),
            pipeline: tickets.pipeline,
            stage: tickets.stage,
        }
    }

    /// Checks, once at start, that the ticket property holding submission IDs exists and has
    /// unique values; without that, upserts would fail (or worse, could not be keyed).
    pub async fn check_configuration(&self) -> Result<(), String> {
        let url = format!("{}/crm/v3/properties/tickets/{}", self.base_url, self.id_property);
        let response = self.client.get(url).bearer_auth(&self.token).send().await;
        let response = response.map_err(|e| format!("HubSpot could not be reached: {e}"))?;
        match response.status().as_u16() {
            200 => {}
            404 => {
                return Err(format!(
                    "HUBSPOT_ID_PROPERTY: the ticket property {:?} does not exist; create it with unique values",
                    self.id_property
                ))
            }
            401 | 403 => {
                return Err("HUBSPOT_TOKEN: HubSpot refused the token (it needs the tickets and contacts scopes)".into())
            }
            status => return Err(format!("HubSpot answered {status} when reading the ticket property")),
        }
        let property: Value = response.json().await.map_err(|_| "HubSpot's property answer is not JSON".to_owned())?;
        if property["hasUniqueValue"] != Value::Bool(true) {
            return Err(format!(
                "HUBSPOT_ID_PROPERTY: the ticket property {:?} must have unique values (hasUniqueValue)",
                self.id_property
            ));
        }
        Ok(())
    }

    /// One batch upsert of one input; the created or updated object's ID.
    async fn upsert_one(
        &self,
        object: &str,
        id_property: &str,
        id: &str,
        properties: Value,
    ) -> Result<String, SinkError> {
        let body = json!({"inputs": [{"idProperty": id_property, "id": id, "properties": properties}]});
        let url = format!("{}/crm/v3/objects/{object}/batch/upsert", self.base_url);
        let response = self.client.post(url).bearer_auth(&self.token).json(&body).send().await;
        let response = response.map_err(|e| transport_error(&e))?;
        let status = response.status().as_u16();
        let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let answer: Value = response.json().await.unwrap_or(Value::Null);
        match status {
            200 | 201 => answer["results"][0]["id"]
                .as_str()
                .map(str::to_owned)
                .ok_or(SinkError::Retryable { reason: "sink_unexpected_answer", retry_after: None }),
            // Multi-status: the one input failed; its error says why.
            207 => Err(classify_error(&answer["errors"][0])),
            400 => Err(classify_error(&answer)),
            status => Err(classify_status(status, retry_after.as_deref())),
        }
    }
}

/// A HubSpot error body (or a 207's per-input error): a property that does not exist or is not
/// unique is the portal's configuration, retried and loud; anything else about the input is
/// this lead's, `FAILED`.
fn classify_error(error: &Value) -> SinkError {
    let text = error.to_string();
    if ["PROPERTY_DOESNT_EXIST", "does not exist", "not unique", "hasUniqueValue"].iter().any(|m| text.contains(m)) {
        return SinkError::Retryable { reason: "sink_config_invalid", retry_after: None };
    }
    SinkError::Permanent { reason: "sink_rejected" }
}

/// The contact's properties: the name split into first and last at the first space.
pub fn contact_properties(lead: &Lead) -> Value {
    let (first, last) = lead.name.split_once(' ').unwrap_or((lead.name.as_str(), ""));
    json!({"email": lead.email, "firstname": first, "lastname": last})
}

/// The ticket's properties: the submission ID, a subject, the message, the pipeline.
pub fn ticket_properties(lead: &Lead, id_property: &str, pipeline: &str, stage: &str) -> Value {
    let who = if lead.name.is_empty() { lead.email.as_str() } else { lead.name.as_str() };
    let subject = if who.is_empty() { String::from("Form submission") } else { format!("Form submission from {who}") };
    json!({
        id_property: lead.external_id,
        "subject": subject,
        "content": lead.message,
        "hs_pipeline": pipeline,
        "hs_pipeline_stage": stage,
    })
}

impl LeadSink for HubSpot {
    async fn upsert(&self, lead: &Lead, _receipt_key: &str) -> Result<(), SinkError> {
        let contact = match lead.email.trim() {
            "" => None,
            email => Some(self.upsert_one("contacts", "email", email, contact_properties(lead)).await?),
        };
        let properties = ticket_properties(lead, &self.id_property, &self.pipeline, &self.stage);
        let ticket = self.upsert_one("tickets", &self.id_property, &lead.external_id, properties).await?;
        if let Some(contact) = contact {
            let url =
                format!("{}/crm/v4/objects/tickets/{ticket}/associations/default/contacts/{contact}", self.base_url);
            send(self.client.put(url).bearer_auth(&self.token)).await?;
        }
        Ok(())
    }
}
