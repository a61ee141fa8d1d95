//! HubSpot: one contact per person, one ticket per submission, the two associated.
//!
//! Contacts are unique by email in HubSpot, so a contact per submission fails the moment one
//! person submits twice. Instead:
//! 1. the contact is upserted by email (`POST /crm/v3/objects/contacts/batch/upsert`,
//!    `idProperty: "email"`), when the form gave one;
//! 2. the submission becomes a ticket upserted by a unique ticket property holding the
//!    submission ID (`POST /crm/v3/objects/tickets/batch/upsert`, by default
//!    `static_forms_submission_id`, which must exist with unique values): tickets are on every
//!    HubSpot tier (custom objects need Enterprise), and upsert by a unique property makes two
//!    first attempts at once write one ticket;
//! 3. the ticket is associated with the contact
//!    (`PUT /crm/v4/objects/tickets/<id>/associations/default/contacts/<id>`), which upserts
//!    cannot carry.
//!
//! Before all that, the ticket is read by the unique property (`batch/read`): a replay (a
//! redrive, a stream retry after the lead was written, reconcile) finds it and writes nothing
//! to it, so a stage, subject or owner an agent changed stays as the agent left it; only an
//! association a crash left out is made.
//!
//! Two submissions from one person are two tickets and one contact; a replay changes nothing.
//! Every call carries one input (the batch endpoints refuse a batch naming an ID twice).
//!
//! The contact is the lead's extra, the ticket is the lead: an email HubSpot refuses (a 400
//! `VALIDATION_ERROR`, or a 207 per-input error where multi-status is on) or that conflicts with
//! another record (a 409 `CONFLICT` twice in a row) answers the same on every attempt, so it
//! costs the contact, never the submission, and never holds the shard: the ticket is written
//! with the email in its content.

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
            200 | 201 => upserted_id(&answer),
            status => Err(classify_upsert_answer(object, status, &answer, retry_after.as_deref())),
        }
    }
}

/// The record ID in a batch upsert's 200 or 201: its one result's `id`. An answer without one
/// is retried (`sink_unexpected_answer`): the write may not have happened, and the upsert is
/// keyed, so trying again is harmless.
pub fn upserted_id(answer: &Value) -> Result<String, SinkError> {
    answer["results"][0]["id"]
        .as_str()
        .map(str::to_owned)
        .ok_or(SinkError::Retryable { reason: "sink_unexpected_answer", retry_after: None })
}

/// An association call's failure: a refusal HubSpot would call permanent is retried as
/// `sink_association_failed` (the ticket and contact exist; a lead without its contact is not
/// done), and a retryable one stays as it is.
pub fn association_error(error: SinkError) -> SinkError {
    match error {
        SinkError::Permanent { .. } => SinkError::Retryable { reason: "sink_association_failed", retry_after: None },
        retryable => retryable,
    }
}

/// A 409 on the contact upsert: see [`classify_upsert_answer`].
const CONTACT_CONFLICT: SinkError = SinkError::Permanent { reason: "sink_contact_conflict" };

/// A batch upsert's answer other than 200 or 201, for `object` (`contacts` or `tickets`):
/// - 207 (the one input failed) and 400: its error decides ([`classify_error`]);
/// - 409 on the contact: `sink_contact_conflict`, permanent. The v3 batch upsert documents no
///   409; HubSpot's contact endpoints answer 409 `CONFLICT` when an email is already another
///   record's (the v1 "Create or update a contact" page; the v3 create endpoints). Defensive,
///   then: the upsert tries the contact once more at once (a race with a concurrent create ends
///   there), then gives the contact up and still writes the ticket, so a standing conflict never
///   holds the shard;
/// - anything else by its status ([`classify_status`]; 409 on a ticket stays retryable, as
///   HubSpot documents no conflict for an upsert by a unique property).
pub fn classify_upsert_answer(object: &str, status: u16, answer: &Value, retry_after: Option<&str>) -> SinkError {
    match status {
        // Multi-status: the one input failed; its error says why.
        207 => classify_error(&answer["errors"][0]),
        400 => classify_error(answer),
        409 if object == "contacts" => CONTACT_CONFLICT,
        status => classify_status(status, retry_after),
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

/// The contact's properties: the email, trimmed, and the name split into first and last at the
/// first space. Empty values are left out: HubSpot clears a property given an empty string, and
/// a second submission without a last name must not erase the one the contact has.
///
/// The email is also the upsert's `id`: `properties.email` is the same trimmed text as
/// [`contact_input`]'s ID, never cut (HubSpot's docs put the value in `id` only; a different
/// `properties.email` would change the contact's email). An email too long for a property is
/// refused as an input, which costs the contact only.
pub fn contact_properties(lead: &Lead) -> Value {
    let (first, last) = lead.name.split_once(' ').unwrap_or((lead.name.as_str(), ""));
    let mut properties = serde_json::Map::new();
    let email = lead.email.trim();
    if !email.is_empty() {
        properties.insert(String::from("email"), Value::String(email.to_owned()));
    }
    for (name, value) in [("firstname", first), ("lastname", last)] {
        if !value.is_empty() {
            properties.insert(name.to_owned(), Value::String(fit(value, MAX_PROPERTY_CHARS)));
        }
    }
    Value::Object(properties)
}

/// The contact's upsert input: its ID (the email, trimmed) and its properties, whose `email`
/// is that same text. `None` when the form gave no email.
pub fn contact_input(lead: &Lead) -> Option<(&str, Value)> {
    let email = lead.email.trim();
    (!email.is_empty()).then(|| (email, contact_properties(lead)))
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

impl HubSpot {
    /// The submission's ticket when it exists already (a replay, a redrive, a retry after a
    /// crash): its ID and whether it is associated with a contact. A `batch/read` by the unique
    /// property (`POST`, so any ID is safe in its body; HubSpot answers a missing one in
    /// `errors`, 200 or 207), then, for a ticket found, its contacts (v4 associations).
    async fn existing_ticket(&self, submission_id: &str) -> Result<Option<(String, bool)>, SinkError> {
        let body = json!({"idProperty": self.id_property, "inputs": [{"id": submission_id}],
                          "properties": [self.id_property]});
        let url = format!("{}/crm/v3/objects/tickets/batch/read", self.base_url);
        let response = self.client.post(url).bearer_auth(&self.token).json(&body).send().await;
        let response = response.map_err(|e| transport_error(&e))?;
        let status = response.status().as_u16();
        let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let answer: Value = match status {
            200 | 207 => response.json().await.map_err(|e| transport_error(&e))?,
            // Not found, however HubSpot says it: a new submission.
            404 => return Ok(None),
            400 => {
                let answer: Value = response.json().await.unwrap_or(Value::Null);
                return Err(match classify_error(&answer) {
                    // A read refused for its input is HubSpot's, never the lead's.
                    SinkError::Permanent { .. } => {
                        SinkError::Retryable { reason: "sink_unexpected_answer", retry_after: None }
                    }
                    retryable => retryable,
                });
            }
            status => return Err(classify_status(status, retry_after.as_deref())),
        };
        // Matched by the property's value, never by position. A ticket answered for this one
        // input that holds another value (HubSpot does not document whether unique values
        // compare without case: `abcDEF` finding `ABCdef`) is another submission's: upserting
        // would overwrite it, so the record waits for a person instead.
        let results: Vec<&Value> = answer["results"].as_array().into_iter().flatten().collect();
        let value = |r: &&&Value| r["properties"][self.id_property.as_str()].as_str() == Some(submission_id);
        let Some(ticket) = results.iter().find(value).and_then(|r| r["id"].as_str()) else {
            if results.is_empty() {
                return Ok(None);
            }
            return Err(SinkError::Retryable { reason: "sink_id_collision", retry_after: None });
        };
        let url = format!("{}/crm/v4/objects/tickets/{ticket}/associations/contacts", self.base_url);
        // A read is never the lead's fault (the ticket may have been deleted a moment ago).
        let read = send(self.client.get(url).bearer_auth(&self.token)).await.map_err(|e| match e {
            SinkError::Permanent { .. } => SinkError::Retryable { reason: "sink_unexpected_answer", retry_after: None },
            retryable => retryable,
        })?;
        let associations: Value = read.json().await.map_err(|e| transport_error(&e))?;
        let associated = associations["results"].as_array().is_some_and(|r| !r.is_empty());
        Ok(Some((ticket.to_owned(), associated)))
    }

    /// The contact's ID, upserted by email; `None` when the form gave no email or HubSpot
    /// refuses it for good (its content, or a standing conflict).
    async fn contact(&self, lead: &Lead) -> Result<Option<String>, SinkError> {
        let Some((email, properties)) = contact_input(lead) else { return Ok(None) };
        let mut result = self.upsert_one("contacts", "email", email, properties.clone()).await;
        // A conflict may be a race: another submission from the same new person created the
        // contact a moment ago. Once more finds it and updates it; a second conflict is a
        // standing one.
        if result == Err(CONTACT_CONFLICT) {
            result = self.upsert_one("contacts", "email", email, properties).await;
        }
        match result {
            Ok(id) => Ok(Some(id)),
            Err(SinkError::Permanent { .. }) => Ok(None),
            Err(retryable) => Err(retryable),
        }
    }

    /// Associates the ticket with the contact. Both objects exist: a refusal here is
    /// HubSpot's, not this lead's, and the replay will associate them.
    async fn associate(&self, ticket: &str, contact: &str) -> Result<(), SinkError> {
        let url = format!("{}/crm/v4/objects/tickets/{ticket}/associations/default/contacts/{contact}", self.base_url);
        send(self.client.put(url).bearer_auth(&self.token)).await.map_err(association_error)?;
        Ok(())
    }
}

impl LeadSink for HubSpot {
    fn record_budget(&self) -> std::time::Duration {
        // The ticket's read, the contact (twice after a conflict), the ticket, the association:
        // five calls at most (a replay: the read, the ticket's associations, and only when
        // they are missing the contact and the association).
        5 * super::http::TIMEOUT + super::RECEIPT_UPDATE_BUDGET
    }

    async fn upsert(&self, lead: &Lead, _receipt_key: &str) -> Result<(), SinkError> {
        // A replay leaves the ticket as agents left it (its stage, subject, content, owner):
        // an upsert would set every property again, and HubSpot has no "set on create only".
        // The ticket is written only when it does not exist yet; an existing one only gets the
        // association it lacks (a crash between the ticket and the association).
        if let Some((ticket, associated)) = self.existing_ticket(&lead.external_id).await? {
            if !associated {
                if let Some(contact) = self.contact(lead).await? {
                    self.associate(&ticket, &contact).await?;
                }
            }
            return Ok(());
        }
        // An email HubSpot refuses for its content (a 207 per-input error) or that conflicts
        // with another record (409) costs the contact, not the submission: the ticket is still
        // written, with the email in its content.
        let contact = self.contact(lead).await?;
        let mut properties = ticket_properties(lead, &self.id_property, &self.pipeline, &self.stage);
        if contact.is_none() && !lead.email.trim().is_empty() {
            let content = format!("{}\n\n(email as submitted: {})", lead.message, lead.email.trim());
            properties["content"] = Value::String(fit(&content, MAX_PROPERTY_CHARS));
        }
        // By upsert, not create: two first attempts at once (a redrive beside the stream) both
        // find no ticket, and the second updates the first's with the same values.
        let ticket = self.upsert_one("tickets", &self.id_property, &lead.external_id, properties).await?;
        if let Some(contact) = contact {
            self.associate(&ticket, &contact).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upsert_answer_without_an_id_is_retried_and_one_with_an_id_gives_it() {
        let answer = json!({"status": "COMPLETE", "results": [{"id": "512", "new": true}]});
        assert_eq!(upserted_id(&answer), Ok("512".to_owned()));
        let unexpected = SinkError::Retryable { reason: "sink_unexpected_answer", retry_after: None };
        for odd in [json!({"results": []}), json!({"results": [{"id": 512}]}), json!(null), json!({"id": "512"})] {
            assert_eq!(upserted_id(&odd), Err(unexpected), "{odd}");
        }
    }

    #[test]
    fn a_refused_association_is_retried_never_given_up() {
        let retried = SinkError::Retryable { reason: "sink_association_failed", retry_after: None };
        assert_eq!(association_error(SinkError::Permanent { reason: "sink_rejected" }), retried);
        let throttled =
            SinkError::Retryable { reason: "sink_rate_limited", retry_after: Some(std::time::Duration::from_secs(10)) };
        assert_eq!(association_error(throttled), throttled, "a retryable failure keeps its reason and pause");
    }

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

    fn lead_with_email(email: &str) -> Lead {
        Lead {
            external_id: String::from("sub_1"),
            name: String::from("Ada Lovelace"),
            email: email.to_owned(),
            message: String::new(),
            extra: Default::default(),
        }
    }

    #[test]
    fn a_ticket_holds_the_submission_id_a_subject_the_message_and_the_pipeline() {
        let mut lead = lead_with_email("ada@example.com");
        lead.message = String::from("Hello");
        let ticket = ticket_properties(&lead, "static_forms_submission_id", "0", "1");
        assert_eq!(
            ticket,
            json!({"static_forms_submission_id": "sub_1", "subject": "Form submission from Ada Lovelace",
                   "content": "Hello", "hs_pipeline": "0", "hs_pipeline_stage": "1"})
        );
        lead.name = String::new();
        assert_eq!(ticket_properties(&lead, "p", "0", "1")["subject"], "Form submission from ada@example.com");
        lead.email = String::new();
        assert_eq!(ticket_properties(&lead, "p", "0", "1")["subject"], "Form submission");
        lead.message = "m".repeat(MAX_PROPERTY_CHARS + 5);
        let content = ticket_properties(&lead, "p", "0", "1")["content"].as_str().unwrap().chars().count();
        assert_eq!(content, MAX_PROPERTY_CHARS, "cut to HubSpot's property limit");
    }

    #[test]
    fn a_hubspot_record_may_take_five_calls_and_the_store_update() {
        let tickets = TicketPipeline { pipeline: String::from("0"), stage: String::from("1") };
        let sink = HubSpot::new(reqwest::Client::new(), "https://api.hubapi.com", "t", "p", tickets);
        assert_eq!(sink.record_budget(), std::time::Duration::from_secs(61));
    }

    #[test]
    fn the_contact_id_and_its_email_property_are_the_same_trimmed_text() {
        for email in ["ada@example.com", "  ada@example.com", "ada@example.com \t\n", " ada@example.com "] {
            let lead = lead_with_email(email);
            let (id, properties) = contact_input(&lead).unwrap();
            assert_eq!(id, "ada@example.com", "{email:?}");
            assert_eq!(properties["email"], id, "{email:?}");
            assert_eq!(properties["firstname"], "Ada");
        }
        // Never cut apart from the ID, however long.
        let long = format!(" {}@example.com ", "a".repeat(MAX_PROPERTY_CHARS));
        let lead = lead_with_email(&long);
        let (id, properties) = contact_input(&lead).unwrap();
        assert_eq!((properties["email"].as_str(), id), (Some(long.trim()), long.trim()));
        // No email (or only spaces): no contact.
        assert_eq!(contact_input(&lead_with_email(" \t ")), None);
        assert_eq!(contact_properties(&lead_with_email(" ")).get("email"), None);
    }

    #[test]
    fn a_conflict_on_the_contact_is_permanent_and_anything_else_by_its_status() {
        let conflict = json!({"status": "error", "category": "CONFLICT", "message": "Contact already exists."});
        assert_eq!(
            classify_upsert_answer("contacts", 409, &conflict, None),
            SinkError::Permanent { reason: "sink_contact_conflict" }
        );
        assert_eq!(
            classify_upsert_answer("tickets", 409, &conflict, None),
            SinkError::Retryable { reason: "sink_unavailable", retry_after: None }
        );
        let refused = json!({"errors": [{"code": "INVALID_EMAIL", "context": {"propertyName": ["email"]}}]});
        assert_eq!(
            classify_upsert_answer("contacts", 207, &refused, None),
            SinkError::Permanent { reason: "sink_rejected" }
        );
        let missing = json!({"category": "VALIDATION_ERROR", "errors": [{"code": "PROPERTY_DOESNT_EXIST"}]});
        assert_eq!(
            classify_upsert_answer("tickets", 400, &missing, None),
            SinkError::Retryable { reason: "sink_config_invalid", retry_after: None }
        );
        for status in [429, 500, 502, 503, 504] {
            assert_eq!(
                classify_upsert_answer("contacts", status, &Value::Null, Some("2")),
                SinkError::Retryable {
                    reason: "sink_unavailable",
                    retry_after: Some(std::time::Duration::from_secs(2))
                },
                "{status}"
            );
        }
    }
}
