//! The HubSpot portal as the sink reaches it, and what HubSpot's answers mean: the client and
//! its pacing, each input's properties, and the classification of refusals and conflicts.
//! Below the batch calls ([`super::batch`]), the plan ([`super::plan`]) and the sink.

use std::sync::Mutex;

use serde_json::{json, Value};
use shared::default_fields::{answers_block, name_parts, notes, other_answers, role_text};
use shared::lead::{Lead, Role};
use tokio::time::Instant;

pub use super::catalogue::MAX_PROPERTY_CHARS;
use super::catalogue::{Catalogued, LeadProperties};
use super::pace::{self, Hold, Pacer};
use crate::sink::contract::{fit, SinkError};
use crate::sink::http::classify_status;

/// Leads per batch call: HubSpot's batch endpoints take 100 inputs.
pub const BATCH_SIZE: usize = 100;

/// A HubSpot portal reached with a private app token.
pub struct HubSpot {
    pub(super) client: reqwest::Client,
    pub(super) base_url: String,
    pub(super) token: String,
    pub(super) id_property: String,
    pub(super) pipeline: String,
    pub(super) stage: String,
    /// The rate-limit window as the answers so far describe it.
    pub(super) pacer: Mutex<Pacer>,
    /// The lead mapping (`LEAD_MAPPING`; empty: the default properties only).
    pub(super) mapping: shared::field_map::FieldMapping,
    /// The mapping typed by the portal's properties, once read (at start, or before the first
    /// write when the start-up check could not reach HubSpot; again after HubSpot refused a
    /// mapped value or named a property gone).
    pub(super) typed: Mutex<Option<std::sync::Arc<Catalogued>>>,
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
            mapping: shared::field_map::FieldMapping::default(),
            typed: Mutex::new(None),
        }
    }

    /// The sink with the lead mapping `mapping`.
    pub fn with_mapping(mut self, mapping: shared::field_map::FieldMapping) -> HubSpot {
        self.mapping = mapping;
        self
    }

    /// Forgets the typed mapping: the properties are read again before the next write.
    pub(super) fn forget_typed(&self) {
        *self.typed.lock().unwrap_or_else(|e| e.into_inner()) = None;
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
pub(super) const CONTACT_CONFLICT: SinkError = SinkError::Permanent { reason: "sink_contact_conflict" };

/// A contact refused for properties other than its email and name (its company or phone: a
/// portal's validation rule on `phone`, which HubSpot applies to API writes; a mapped
/// property's value): the upsert tries the contact once more with its email and name alone
/// ([`super::plan::second_tries`]), so the person still has a contact; the values stay in the
/// ticket's content. A refusal naming the email or a name (HubSpot's checks) gives the contact
/// up, as before.
pub(super) const CONTACT_PROPERTY_REFUSED: SinkError = SinkError::Permanent { reason: "sink_contact_property_refused" };

/// The contact properties the sink always writes (a refusal naming one is not the mapping's).
pub(super) const CONTACT_IDENTITY: [&str; 3] = ["email", "firstname", "lastname"];

/// The properties a refusal names: `context.propertyName` and the embedded verdicts'
/// ([`property_verdicts`]), in it and in its `errors`.
fn refused_names(error: &Value) -> Vec<String> {
    let entries: Vec<&Value> = error["errors"].as_array().into_iter().flatten().chain([error]).collect();
    let mut names: Vec<String> = Vec::new();
    for entry in entries {
        let listed = entry["context"]["propertyName"].as_array().into_iter().flatten().filter_map(Value::as_str);
        names.extend(listed.map(str::to_owned));
        names.extend(property_verdicts(entry).into_iter().map(|(_, name)| name));
    }
    names
}

/// A refusal of a contact input: [`classify_error`]'s verdict, but a refusal of the input's
/// content that names properties, none of them the email or a name, is
/// [`CONTACT_PROPERTY_REFUSED`].
pub(super) fn classify_contact_error(error: &Value) -> SinkError {
    let verdict = classify_error(error);
    if !matches!(verdict, SinkError::Permanent { .. }) {
        return verdict;
    }
    let names = refused_names(error);
    if !names.is_empty() && names.iter().all(|name| !CONTACT_IDENTITY.contains(&name.as_str())) {
        return CONTACT_PROPERTY_REFUSED;
    }
    verdict
}

/// A batch upsert's answer other than 200, 201 and 207 (each input's result is read from
/// those: `batch::written`), for `object` (`contacts` or `tickets`):
/// - 400: its error decides ([`classify_error`]; for a contact, [`classify_contact_error`]);
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
        400 if object == "contacts" => classify_contact_error(answer),
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

/// The contact's properties: the email, trimmed, the name in first and last parts, the company
/// and the phone (the default mapping: [`shared::default_fields`], the same parts as
/// Salesforce's). Empty values are left out: HubSpot clears a property given an empty string,
/// and a second submission without a last name must not erase the one the contact has.
///
/// The email is also the upsert's `id`: `properties.email` is the same trimmed text as
/// [`contact_input`]'s ID, never cut (HubSpot's docs put the value in `id` only; a different
/// `properties.email` would change the contact's email). An email too long for a property is
/// refused as an input, which costs the contact only.
///
/// Then the mapping's contact properties (`mapped`), over the defaults.
pub fn contact_properties(lead: &Lead, mapped: &LeadProperties) -> Value {
    let (first, last) = name_parts(lead);
    let mut properties = serde_json::Map::new();
    let email = lead.email.trim();
    if !email.is_empty() {
        properties.insert(String::from("email"), Value::String(email.to_owned()));
    }
    let company = role_text(lead, Role::Company).unwrap_or_default();
    let phone = role_text(lead, Role::Phone).unwrap_or_default();
    for (name, value) in [("firstname", first), ("lastname", last), ("company", company), ("phone", phone)] {
        if !value.is_empty() {
            properties.insert(name.to_owned(), Value::String(fit(&value, MAX_PROPERTY_CHARS)));
        }
    }
    properties.extend(mapped.contact.clone());
    Value::Object(properties)
}

/// The contact's upsert input: its ID (the email, trimmed) and its properties, whose `email`
/// is that same text. `None` when the form gave no email.
pub fn contact_input<'a>(lead: &'a Lead, mapped: &LeadProperties) -> Option<(&'a str, Value)> {
    let email = lead.email.trim();
    (!email.is_empty()).then(|| (email, contact_properties(lead, mapped)))
}

/// A ticket's content: the message, then every answer but the name's parts (the subject holds
/// the name) ([`answers_block`]), then `note`; within HubSpot's property limit, cut from the end
/// of the answers so the note stays whole. The company and the phone are listed too: the
/// contact is the person's, and holds what their latest submission said (or nothing, when
/// HubSpot refused it), while the ticket keeps what this one said. So are the answers mapped to
/// contact properties; those a ticket property shows whole (`shown`) are not.
pub(super) fn ticket_content(lead: &Lead, shown: &[String], note: &str) -> String {
    let answers = other_answers(lead, &[Role::FirstName, Role::LastName], shown);
    let content = notes(&lead.message, &answers_block(&answers));
    let room = MAX_PROPERTY_CHARS.saturating_sub(note.chars().count());
    format!("{}{note}", fit(&content, room))
}

/// The ticket's properties: the submission ID, a subject, the content ([`ticket_content`]), the
/// pipeline; then the mapping's ticket properties (`mapped`), over the subject.
pub fn ticket_properties(
    lead: &Lead,
    mapped: &LeadProperties,
    id_property: &str,
    pipeline: &str,
    stage: &str,
) -> Value {
    let who = if lead.name.is_empty() { lead.email.as_str() } else { lead.name.as_str() };
    let subject = if who.is_empty() { String::from("Form submission") } else { format!("Form submission from {who}") };
    let mut properties = json!({
        id_property: lead.external_id,
        "subject": fit(&subject, MAX_PROPERTY_CHARS),
        "content": ticket_content(lead, &mapped.ticket_shown, ""),
        "hs_pipeline": pipeline,
        "hs_pipeline_stage": stage,
    });
    if let Some(object) = properties.as_object_mut() {
        object.extend(mapped.ticket.clone());
    }
    properties
}

impl HubSpot {
    /// Holds a call until the rate-limit window has room for it, while the wait fits
    /// ([`pace::wait_fits`]); a wait that does not is not waited: `sink_paced`, with the wait as
    /// the pause, and the handler hands the records back. A used-up day is `sink_daily_limit`;
    /// one down to its reserve, `sink_allocation_reserved`.
    pub(super) async fn pace(&self, deadline: Option<Instant>) -> Result<(), SinkError> {
        loop {
            let hold = self.pacer.lock().map_err(|_| PACER_POISONED)?.try_send(Instant::now());
            match hold {
                Ok(()) => return Ok(()),
                Err(Hold::DayUsedUp) => return Err(DAY_USED_UP),
                Err(Hold::DayReserved) => return Err(DAY_RESERVED),
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
    pub(super) fn observe(&self, limits: pace::Limits) {
        if let Ok(mut pacer) = self.pacer.lock() {
            pacer.observe(Instant::now(), limits);
        }
    }
}

/// The portal's day used up: said by `Daily-Remaining: 0` or a 429's `policyName: DAILY`.
pub(super) const DAY_USED_UP: SinkError = SinkError::Retryable { reason: "sink_daily_limit", retry_after: None };

/// The portal's day down to the tenth kept for its other integrations ([`pace::DAY_RESERVE_PERCENT`]).
pub(super) const DAY_RESERVED: SinkError =
    SinkError::Retryable { reason: "sink_allocation_reserved", retry_after: None };

const PACER_POISONED: SinkError = SinkError::Retryable { reason: "sink_session_poisoned", retry_after: None };

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

    fn none() -> LeadProperties {
        LeadProperties::default()
    }

    fn lead_with_email(email: &str) -> Lead {
        Lead {
            external_id: String::from("sub_1"),
            name: String::from("Ada Lovelace"),
            email: email.to_owned(),
            message: String::new(),
            ..Lead::default()
        }
    }

    #[test]
    fn company_phone_and_every_other_answer_reach_the_contact_or_the_ticket() {
        let mut lead = lead_with_email("ada@example.com");
        lead.name = String::from("Ada King Lovelace");
        lead.message = String::from("Hello");
        let answers = json!({"Company": "Acme", "Phone": "+44 20 7946 0000", "Size": "11-50", "Topics": ["A", "B"],
            "hidden": {"utm_source": "news"}});
        lead.extra = answers
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), shared::json::parse(v.to_string().as_bytes()).unwrap()))
            .collect();
        lead.roles = [(Role::Company, "Company"), (Role::Phone, "Phone")].map(|(r, k)| (r, k.to_owned())).into();
        assert_eq!(
            contact_properties(&lead, &none()),
            json!({"email": "ada@example.com", "firstname": "Ada King", "lastname": "Lovelace",
                   "company": "Acme", "phone": "+44 20 7946 0000"})
        );
        // The ticket keeps what this submission said, company and phone included.
        let content = "Hello\n\nOther answers:\nCompany: Acme\nPhone: +44 20 7946 0000\nSize: 11-50\nTopics: A, B\nhidden.utm_source: news";
        assert_eq!(ticket_properties(&lead, &none(), "p", "0", "1")["content"], content);
        // A content too long is cut from the end of the answers; a note stays whole.
        lead.message = "m".repeat(MAX_PROPERTY_CHARS);
        let cut = ticket_content(&lead, &[], "\n\n(note)");
        assert_eq!(cut.chars().count(), MAX_PROPERTY_CHARS);
        assert!(cut.ends_with("…\n\n(note)"), "{}", &cut[cut.len() - 20..]);
    }

    #[test]
    fn a_ticket_holds_the_submission_id_a_subject_the_message_and_the_pipeline() {
        let mut lead = lead_with_email("ada@example.com");
        lead.message = String::from("Hello");
        let ticket = ticket_properties(&lead, &none(), "static_forms_submission_id", "0", "1");
        assert_eq!(
            ticket,
            json!({"static_forms_submission_id": "sub_1", "subject": "Form submission from Ada Lovelace",
                   "content": "Hello", "hs_pipeline": "0", "hs_pipeline_stage": "1"})
        );
        lead.name = String::new();
        assert_eq!(ticket_properties(&lead, &none(), "p", "0", "1")["subject"], "Form submission from ada@example.com");
        lead.email = String::new();
        assert_eq!(ticket_properties(&lead, &none(), "p", "0", "1")["subject"], "Form submission");
        lead.message = "m".repeat(MAX_PROPERTY_CHARS + 5);
        let content = ticket_properties(&lead, &none(), "p", "0", "1")["content"].as_str().unwrap().chars().count();
        assert_eq!(content, MAX_PROPERTY_CHARS, "cut to HubSpot's property limit");
    }

    #[test]
    fn the_contact_id_and_its_email_property_are_the_same_trimmed_text() {
        for email in ["ada@example.com", "  ada@example.com", "ada@example.com \t\n", " ada@example.com "] {
            let lead = lead_with_email(email);
            let (id, properties) = contact_input(&lead, &none()).unwrap();
            assert_eq!(id, "ada@example.com", "{email:?}");
            assert_eq!(properties["email"], id, "{email:?}");
            assert_eq!(properties["firstname"], "Ada");
        }
        // Never cut apart from the ID, however long.
        let long = format!(" {}@example.com ", "a".repeat(MAX_PROPERTY_CHARS));
        let lead = lead_with_email(&long);
        let (id, properties) = contact_input(&lead, &none()).unwrap();
        assert_eq!((properties["email"].as_str(), id), (Some(long.trim()), long.trim()));
        // No email (or only spaces): no contact.
        assert_eq!(contact_input(&lead_with_email(" \t "), &none()), None);
        assert_eq!(contact_properties(&lead_with_email(" "), &none()).get("email"), None);
    }

    #[test]
    fn a_contact_refused_for_a_property_but_its_email_and_name_is_tried_with_them_alone() {
        let verdicts = |name: &str| {
            json!({"status": "error", "category": "VALIDATION_ERROR", "message": format!(
                "Property values were not valid: [{{\"isValid\":false,\"message\":\"x\",\"error\":\"INVALID_PHONE_NUMBER\",\"name\":\"{name}\"}}]"
            )})
        };
        assert_eq!(classify_contact_error(&verdicts("phone")), CONTACT_PROPERTY_REFUSED);
        assert_eq!(classify_upsert_answer("contacts", 400, &verdicts("phone"), None), CONTACT_PROPERTY_REFUSED);
        let listed = json!({"errors": [{"code": "INVALID_OPTION", "context": {"propertyName": ["company"]}},
            {"code": "INVALID_PHONE_NUMBER", "context": {"propertyName": ["phone"]}}]});
        assert_eq!(classify_contact_error(&listed), CONTACT_PROPERTY_REFUSED);
        // The email itself, a name (sent again, it would be refused again), a refusal naming no
        // property, or the portal's setup: as before.
        let rejected = SinkError::Permanent { reason: "sink_rejected" };
        assert_eq!(classify_contact_error(&verdicts("lastname")), rejected);
        assert_eq!(classify_contact_error(&verdicts("firstname")), rejected);
        // A mapped property's value: tried with the email and name alone.
        assert_eq!(classify_contact_error(&verdicts("company_size")), CONTACT_PROPERTY_REFUSED);
        assert_eq!(classify_contact_error(&verdicts("email")), rejected);
        let both = json!({"errors": [{"context": {"propertyName": ["phone", "email"]}}]});
        assert_eq!(classify_contact_error(&both), rejected);
        assert_eq!(classify_contact_error(&json!({"category": "VALIDATION_ERROR"})), rejected);
        let missing = json!({"errors": [{"code": "PROPERTY_DOESNT_EXIST", "context": {"propertyName": ["phone"]}}]});
        assert_eq!(
            classify_contact_error(&missing),
            SinkError::Retryable { reason: "sink_config_invalid", retry_after: None }
        );
        assert_eq!(classify_upsert_answer("tickets", 400, &verdicts("phone"), None), rejected, "a ticket's stays");
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
