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
use super::{fit, CheckError, LeadSink, SinkError};

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

    /// Checks, once at start, that the ticket property holding submission IDs exists with unique
    /// values and that the pipeline has the stage; without that, every upsert would fail.
    pub async fn check_configuration(&self) -> Result<(), CheckError> {
        let get = |path: String| async move {
            let response = self.client.get(format!("{}{path}", self.base_url)).bearer_auth(&self.token).send().await;
            let response =
                response.map_err(|e| CheckError::Unreachable(format!("HubSpot could not be reached: {e}")))?;
            match response.status().as_u16() {
                200 => Ok(Some(response.json::<Value>().await.unwrap_or(Value::Null))),
                404 => Ok(None),
                401 | 403 => Err(CheckError::Wrong(
                    "HUBSPOT_TOKEN: HubSpot refused the token (it needs the tickets and contacts scopes)".into(),
                )),
                status => Err(CheckError::Unreachable(format!("HubSpot answered {status}"))),
            }
        };
        let property = get(format!("/crm/v3/properties/tickets/{}", self.id_property)).await?;
        let Some(property) = property else {
            return Err(CheckError::Wrong(format!(
                "HUBSPOT_ID_PROPERTY: the ticket property {:?} does not exist; create it with unique values",
                self.id_property
            )));
        };
        if property["hasUniqueValue"] != Value::Bool(true) {
            return Err(CheckError::Wrong(format!(
                "HUBSPOT_ID_PROPERTY: the ticket property {:?} must have unique values (hasUniqueValue)",
                self.id_property
            )));
        }
        let pipeline = get(format!("/crm/v3/pipelines/tickets/{}", self.pipeline)).await?;
        let has_stage = pipeline.as_ref().is_some_and(|p| {
            p["stages"].as_array().into_iter().flatten().any(|s| s["id"].as_str() == Some(self.stage.as_str()))
        });
        if !has_stage {
            return Err(CheckError::Wrong(format!(
                "HUBSPOT_TICKET_PIPELINE / HUBSPOT_TICKET_STAGE: the ticket pipeline {:?} has no stage {:?}",
                self.pipeline, self.stage
            )));
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

/// HubSpot error codes that mean the portal's configuration, not the input: a property that
/// does not exist, or an `idProperty` that is not a unique property.
const CONFIG_ERROR_CODES: [&str; 2] = ["PROPERTY_DOESNT_EXIST", "INVALID_ID_PROPERTY"];

/// Properties the portal's configuration sets (a wrong pipeline or stage is not the lead's).
const CONFIG_PROPERTIES: [&str; 2] = ["hs_pipeline", "hs_pipeline_stage"];

/// A HubSpot error body (or a 207's per-input error): an error whose `code` names the portal's
/// configuration, or whose `context.propertyName` is the configured pipeline or stage, is
/// retried and loud; anything else about the input is this lead's, `FAILED`. Only codes and
/// property names are read, never the messages, which repeat the input (a form's email could
/// otherwise pass for a configuration fault and hold the shard).
pub fn classify_error(error: &Value) -> SinkError {
    let entries: Vec<&Value> = error["errors"].as_array().into_iter().flatten().chain([error]).collect();
    let config = entries.iter().any(|e| {
        let code = e["code"].as_str().is_some_and(|c| CONFIG_ERROR_CODES.contains(&c));
        let names = e["context"]["propertyName"].as_array().into_iter().flatten().filter_map(Value::as_str);
        code || names.into_iter().any(|n| CONFIG_PROPERTIES.contains(&n))
    });
    if config {
        return SinkError::Retryable { reason: "sink_config_invalid", retry_after: None };
    }
    SinkError::Permanent { reason: "sink_rejected" }
}

/// The longest value of a HubSpot string property, in characters.
pub const MAX_PROPERTY_CHARS: usize = 65_536;

/// The contact's properties: the name split into first and last at the first space. Empty
/// values are left out: HubSpot clears a property given an empty string, and a second
/// submission without a last name must not erase the one the contact has.
pub fn contact_properties(lead: &Lead) -> Value {
    let (first, last) = lead.name.split_once(' ').unwrap_or((lead.name.as_str(), ""));
    let mut properties = serde_json::Map::new();
    for (name, value) in [("email", lead.email.as_str()), ("firstname", first), ("lastname", last)] {
        if !value.is_empty() {
            properties.insert(name.to_owned(), Value::String(fit(value, MAX_PROPERTY_CHARS)));
        }
    }
    Value::Object(properties)
}

/// The ticket's properties: the submission ID, a subject, the message, the pipeline.
pub fn ticket_properties(lead: &Lead, id_property: &str, pipeline: &str, stage: &str) -> Value {
    let who = if lead.name.is_empty() { lead.email.as_str() } else { lead.name.as_str() };
    let subject = if who.is_empty() { String::from("Form submission") } else { format!("Form submission from {who}") };
    json!({
        id_property: lead.external_id,
        "subject": fit(&subject, MAX_PROPERTY_CHARS),
        "content": fit(&lead.message, MAX_PROPERTY_CHARS),
        "hs_pipeline": pipeline,
        "hs_pipeline_stage": stage,
    })
}

impl LeadSink for HubSpot {
    fn record_budget(&self) -> std::time::Duration {
        // Contact, ticket, association: three calls at most.
        3 * super::http::TIMEOUT + super::RECEIPT_UPDATE_BUDGET
    }

    async fn upsert(&self, lead: &Lead, _receipt_key: &str) -> Result<(), SinkError> {
        // An email HubSpot refuses for its content (a 207 per-input error) costs the contact,
        // not the submission: the ticket is still written, with the email in its content.
        let contact = match lead.email.trim() {
            "" => None,
            email => match self.upsert_one("contacts", "email", email, contact_properties(lead)).await {
                Ok(id) => Some(id),
                Err(SinkError::Permanent { .. }) => None,
                Err(retryable) => return Err(retryable),
            },
        };
        let mut properties = ticket_properties(lead, &self.id_property, &self.pipeline, &self.stage);
        if contact.is_none() && !lead.email.trim().is_empty() {
            let content = format!("{}\n\n(email as submitted: {})", lead.message, lead.email.trim());
            properties["content"] = Value::String(fit(&content, MAX_PROPERTY_CHARS));
        }
        let ticket = self.upsert_one("tickets", &self.id_property, &lead.external_id, properties).await?;
        if let Some(contact) = contact {
            let url =
                format!("{}/crm/v4/objects/tickets/{ticket}/associations/default/contacts/{contact}", self.base_url);
            // Both objects were just written: a refusal here is HubSpot's, not this lead's, and
            // the replay (both upserts are idempotent) will associate them.
            send(self.client.put(url).bearer_auth(&self.token)).await.map_err(|e| match e {
                SinkError::Permanent { .. } => {
                    SinkError::Retryable { reason: "sink_association_failed", retry_after: None }
                }
                retryable => retryable,
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_error_codes_decide_never_messages() {
        let config = SinkError::Retryable { reason: "sink_config_invalid", retry_after: None };
        let lead = SinkError::Permanent { reason: "sink_rejected" };
        let missing = json!({"status": "error", "category": "VALIDATION_ERROR",
            "errors": [{"message": "Property \"x\" does not exist", "code": "PROPERTY_DOESNT_EXIST"}]});
        assert_eq!(classify_error(&missing), config);
        assert_eq!(classify_error(&json!({"code": "INVALID_ID_PROPERTY"})), config);
        let stage = json!({"errors": [{"code": "INVALID_OPTION", "context": {"propertyName": ["hs_pipeline_stage"]}}]});
        assert_eq!(classify_error(&stage), config);
        let email = json!({"errors": [{"code": "INVALID_EMAIL", "context": {"propertyName": ["email"]}}]});
        assert_eq!(classify_error(&email), lead);
        // A form's email that reads like a configuration fault is still the lead's.
        let input = json!({"status": "error", "category": "VALIDATION_ERROR",
            "message": "Email address x does not exist PROPERTY_DOESNT_EXIST not unique is invalid"});
        assert_eq!(classify_error(&input), lead);
        assert_eq!(classify_error(&Value::Null), lead);
    }
}
