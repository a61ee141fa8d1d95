//! HubSpot: one contact per person, one ticket per submission, the two associated.
//!
//! Contacts are unique by email in HubSpot, so a contact per submission fails the moment one
//! person submits twice. Instead, for up to [`BATCH_SIZE`] leads at once ([`batch`]):
//! 1. the tickets are read by the unique ticket property holding the submission ID
//!    (`POST /crm/v3/objects/tickets/batch/read`), and the found ones' contacts (v4
//!    `associations/tickets/contacts/batch/read`): a replay (a redrive, a stream retry after
//!    the lead was written, reconcile) finds its ticket and writes nothing to it, so a stage,
//!    subject or owner an agent changed stays as the agent left it; only an association a
//!    crash left out is made;
//! 2. the contacts are upserted by email (`POST /crm/v3/objects/contacts/batch/upsert`,
//!    `idProperty: "email"`), one input per person (HubSpot refuses a batch naming a record
//!    twice; the latest submission's name wins), when the form gave one;
//! 3. the new submissions become tickets upserted by the unique property (by default
//!    `static_forms_submission_id`, which must exist with unique values): tickets are on every
//!    HubSpot tier, and upsert by a unique property makes two first attempts at once write one
//!    ticket;
//! 4. each ticket is associated with its contact (v4
//!    `associations/tickets/contacts/batch/associate/default`), which upserts cannot carry.
//!
//! Each lead's outcome comes from its own inputs' results, matched by ID values: a refused
//! input (a 207 per-input error) decides its lead only, and a batch refused as a whole is
//! split until the refused input stands alone. Calls are paced to the rate-limit headers
//! ([`pace`]). Two submissions from one person are two tickets and one contact; a replay
//! changes nothing.
//!
//! The contact is the lead's extra, the ticket is the lead: an email HubSpot refuses (a 400
//! `VALIDATION_ERROR`, or a 207 per-input error) or that conflicts with another record (a 409
//! `CONFLICT` twice in a row) answers the same on every attempt, so it costs the contact, never
//! the submission, and never holds the shard: the ticket is written with the email in its
//! content.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Value};
use shared::lead::Lead;

use tokio::time::Instant;

use super::http::classify_status;
use super::{fit, BatchItem, CheckError, LeadSink, SinkError};

mod batch;
pub mod pace;
mod plan;

use batch::Found;
use pace::{Hold, Pacer};

/// Leads per batch call: HubSpot's batch endpoints take 100 inputs.
pub const BATCH_SIZE: usize = 100;

/// A HubSpot portal reached with a private app token.
pub struct HubSpot {
    client: reqwest::Client,
    base_url: String,
    token: String,
    id_property: String,
    pipeline: String,
    stage: String,
    /// The rate-limit window as the answers so far describe it.
    pacer: Mutex<Pacer>,
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
            pacer: Mutex::new(Pacer::default()),
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

/// A batch upsert's answer other than 200, 201 and 207 (each input's result is read from
/// those: `batch::written`), for `object` (`contacts` or `tickets`):
/// - 400: its error decides ([`classify_error`]);
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

/// A HubSpot error body (or a 207's per-input error): an error whose code names the portal's
/// configuration, or that names the configured pipeline or stage, is retried and loud;
/// anything else about the input is this lead's, `FAILED`. Codes and property names are read
/// from `errors[].code` and `context.propertyName`, and from the verdicts HubSpot embeds in a
/// validation error's message ([`property_verdicts`]); never the messages' text, which repeats
/// the input (a form's email could otherwise pass for a configuration fault and hold the shard).
pub fn classify_error(error: &Value) -> SinkError {
    let entries: Vec<&Value> = error["errors"].as_array().into_iter().flatten().chain([error]).collect();
    let config = entries.iter().any(|e| {
        let code = e["code"].as_str().is_some_and(|c| CONFIG_ERROR_CODES.contains(&c));
        let names = e["context"]["propertyName"].as_array().into_iter().flatten().filter_map(Value::as_str);
        let embedded = property_verdicts(e).into_iter().any(|(error, name)| {
            CONFIG_ERROR_CODES.contains(&error.as_str()) || CONFIG_PROPERTIES.contains(&name.as_str())
        });
        code || embedded || names.into_iter().any(|n| CONFIG_PROPERTIES.contains(&n))
    });
    if config {
        return SinkError::Retryable { reason: "sink_config_invalid", retry_after: None };
    }
    SinkError::Permanent { reason: "sink_rejected" }
}

/// The properties' verdicts HubSpot puts in a validation error's message ("Using object APIs":
/// `Property values were not valid: [{"isValid":false,"message":"…","error":"INVALID_OPTION",
/// "name":"hs_pipeline_stage"}]`): each one's `error` code and property `name`. Only a message
/// that starts with that sentence is read, and only those two fields: the array is JSON, so
/// text a visitor typed stays inside its own `message` string.
pub fn property_verdicts(error: &Value) -> Vec<(String, String)> {
    let message = error["message"].as_str().unwrap_or_default();
    let Some(array) = message.strip_prefix("Property values were not valid: ") else { return Vec::new() };
    let Ok(Value::Array(verdicts)) = serde_json::from_str::<Value>(array) else { return Vec::new() };
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    verdicts.iter().map(|v| (text(&v["error"]), text(&v["name"]))).collect()
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
    /// Holds a call until the rate-limit window has room for it, while the wait fits
    /// ([`pace::wait_fits`]); a wait that does not is not waited: `sink_paced`, with the wait as
    /// the pause, and the handler hands the records back. A used-up day is `sink_daily_limit`.
    async fn pace(&self, deadline: Option<Instant>) -> Result<(), SinkError> {
        loop {
            let hold = self.pacer.lock().map_err(|_| PACER_POISONED)?.try_send(Instant::now());
            match hold {
                Ok(()) => return Ok(()),
                Err(Hold::DayUsedUp) => {
                    return Err(SinkError::Retryable { reason: "sink_daily_limit", retry_after: None })
                }
                Err(Hold::Wait(wait)) if pace::wait_fits(wait, Instant::now(), deadline) => {
                    tokio::time::sleep(wait).await;
                }
                Err(Hold::Wait(wait)) => {
                    return Err(SinkError::Retryable { reason: "sink_paced", retry_after: Some(wait) })
                }
            }
        }
    }

    /// Notes an answer's rate-limit headers.
    fn observe(&self, limits: pace::Limits) {
        if let Ok(mut pacer) = self.pacer.lock() {
            pacer.observe(Instant::now(), limits);
        }
    }

    /// Writes `items`' leads ([`BATCH_SIZE`] at most, each another receipt's): one result per
    /// item, in their order.
    pub async fn upsert_batch(&self, items: &[BatchItem<'_>], deadline: Option<Instant>) -> Vec<Result<(), SinkError>> {
        let leads: Vec<&Lead> = items.iter().map(|item| item.lead).collect();
        let all = |error: SinkError| vec![Err(error); leads.len()];
        let mut ids: Vec<&str> = leads.iter().map(|lead| lead.external_id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        // 1. The tickets that exist, and which of them have their contact.
        let found = match self.read_tickets(&ids, deadline).await {
            Ok(found) => found,
            Err(error) => return all(error),
        };
        let tickets: Vec<&str> = found
            .values()
            .filter_map(|f| match f {
                Found::Ticket(ticket) => Some(ticket.as_str()),
                Found::Collision => None,
            })
            .collect();
        let associated = match tickets.is_empty() {
            true => Default::default(),
            false => match self.associated(&tickets, deadline).await {
                Ok(associated) => associated,
                Err(error) => return all(error),
            },
        };
        let (mut results, open) = plan::open_leads(&leads, &found, &associated);
        // 2. The contacts, one input per person.
        let contacts = self.contacts(open.iter().map(|&i| leads[i]), deadline).await;
        // 3. The new tickets; the ticket of a lead whose contact HubSpot refused holds the email.
        let (mut ticket_inputs, mut pairs) = (BTreeMap::new(), Vec::new());
        let mut waiting_for_ticket = Vec::new();
        for &i in &open {
            let lead = leads[i];
            let contact = match contacts.get(&lead.email.trim().to_lowercase()) {
                Some(Err(error)) => {
                    results[i] = Err(*error);
                    continue;
                }
                Some(Ok(contact)) => contact.clone(),
                None => None,
            };
            match found.get(lead.external_id.as_str()) {
                Some(Found::Ticket(ticket)) => pairs.extend(contact.map(|c| (i, (ticket.clone(), c)))),
                _ => {
                    let (pipeline, stage) = (&self.pipeline, &self.stage);
                    let properties = plan::new_ticket(lead, contact.is_none(), &self.id_property, pipeline, stage);
                    ticket_inputs.entry(lead.external_id.clone()).or_insert(properties);
                    waiting_for_ticket.push((i, contact));
                }
            }
        }
        let ticket_inputs: Vec<(String, Value)> = ticket_inputs.into_iter().collect();
        let written = self.upsert_objects("tickets", &self.id_property, &ticket_inputs, deadline).await;
        let written: BTreeMap<&str, &Result<String, SinkError>> =
            ticket_inputs.iter().map(|(id, _)| id.as_str()).zip(written.iter()).collect();
        for (i, contact) in waiting_for_ticket {
            match written.get(leads[i].external_id.as_str()) {
                Some(Ok(ticket)) => pairs.extend(contact.map(|c| (i, ((*ticket).clone(), c)))),
                Some(Err(error)) => results[i] = Err(*error),
                None => results[i] = Err(SinkError::Retryable { reason: "sink_unexpected_answer", retry_after: None }),
            }
        }
        // 4. The associations, each pair once.
        if !pairs.is_empty() {
            let mut distinct: Vec<(String, String)> = pairs.iter().map(|(_, pair)| pair.clone()).collect();
            distinct.sort();
            distinct.dedup();
            let made = self.associate(&distinct, deadline).await;
            let made: BTreeMap<&(String, String), Result<(), SinkError>> = distinct.iter().zip(made).collect();
            for (i, pair) in &pairs {
                if let Some(Err(error)) = made.get(pair) {
                    results[*i] = Err(*error);
                }
            }
        }
        results
    }

    /// Upserts the contacts of `leads` that gave an email, one input per person
    /// ([`plan::people`]), a conflict tried once more at once: each person's contact
    /// ([`plan::contact_results`]), by lowercased email.
    async fn contacts<'a>(
        &self,
        leads: impl Iterator<Item = &'a Lead>,
        deadline: Option<Instant>,
    ) -> BTreeMap<String, Result<Option<String>, SinkError>> {
        let people = plan::people(leads);
        let inputs: Vec<(String, Value)> = people.values().cloned().collect();
        let mut written = self.upsert_objects("contacts", "email", &inputs, deadline).await;
        let conflicts = plan::conflicts(&written);
        if !conflicts.is_empty() {
            let again: Vec<(String, Value)> = conflicts.iter().map(|&i| inputs[i].clone()).collect();
            for (i, result) in
                conflicts.into_iter().zip(self.upsert_objects("contacts", "email", &again, deadline).await)
            {
                written[i] = result;
            }
        }
        plan::contact_results(people.into_keys(), written)
    }
}

const PACER_POISONED: SinkError = SinkError::Retryable { reason: "sink_session_poisoned", retry_after: None };

impl LeadSink for HubSpot {
    fn record_budget(&self) -> Duration {
        self.batch_budget()
    }

    fn batch_size(&self) -> usize {
        BATCH_SIZE
    }

    fn batch_budget(&self) -> Duration {
        // The tickets' read, their associations, the contacts (twice after a conflict), the
        // tickets, the associations: six calls, then the receipts' updates.
        6 * super::http::TIMEOUT + super::RECEIPT_UPDATE_BUDGET
    }

    async fn upsert(&self, lead: &Lead, receipt_key: &str) -> Result<(), SinkError> {
        let item = [BatchItem { lead, receipt_key }];
        let mut results = self.upsert_batch(&item, None).await;
        results.pop().unwrap_or(Err(SinkError::Retryable { reason: "sink_unexpected_answer", retry_after: None }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // HubSpot's documented form: the verdicts inside the message.
        let verdicts = |items: Value| {
            json!({"status": "error", "category": "VALIDATION_ERROR",
            "message": format!("Property values were not valid: {items}"), "context": {"objectWriteTraceId": ["t"]}})
        };
        let stage = verdicts(
            json!([{"isValid": false, "message": "x", "error": "INVALID_OPTION", "name": "hs_pipeline_stage"}]),
        );
        assert_eq!(classify_error(&stage), config);
        let missing =
            verdicts(json!([{"isValid": false, "message": "x", "error": "PROPERTY_DOESNT_EXIST", "name": "region"}]));
        assert_eq!(classify_error(&missing), config);
        let email = verdicts(json!([{"isValid": false, "message": "x", "error": "INVALID_EMAIL", "name": "email"}]));
        assert_eq!(classify_error(&email), lead);
        // A visitor's text inside a verdict's message stays there.
        let typed = r#"[{"error":"PROPERTY_DOESNT_EXIST","name":"hs_pipeline"}]"#;
        let crafted =
            verdicts(json!([{"isValid": false, "message": typed, "error": "INVALID_EMAIL", "name": "email"}]));
        assert_eq!(classify_error(&crafted), lead);
        let elsewhere = json!({"message": format!("Email address {typed} is invalid")});
        assert_eq!(classify_error(&elsewhere), lead, "only the documented sentence's array is read");
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
    fn a_hubspot_batch_may_take_six_calls_and_the_store_update() {
        let tickets = TicketPipeline { pipeline: String::from("0"), stage: String::from("1") };
        let sink = HubSpot::new(reqwest::Client::new(), "https://api.hubapi.com", "t", "p", tickets);
        assert_eq!(sink.batch_budget(), std::time::Duration::from_secs(71));
        assert_eq!(sink.record_budget(), sink.batch_budget(), "one lead is a batch of one");
        assert_eq!(sink.batch_size(), 100);
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
