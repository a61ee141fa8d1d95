//! HubSpot's batch calls for up to [`super::api::BATCH_SIZE`] leads at once: read the tickets by the
//! unique property, read the found tickets' contacts, upsert the contacts (one input per
//! person), upsert the new tickets, associate. Every answer is matched to its input by ID
//! values (an input's `objectWriteTraceId` is its ID), never by position. A batch HubSpot
//! refuses as a whole for its inputs (400, or 409 on contacts) is split in two and each half
//! sent again, down to single inputs, so one refused input never costs its neighbours.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;

use serde_json::{json, Value};
use tokio::time::Instant;

use super::api::{
    association_error, classify_contact_error, classify_error, classify_upsert_answer, HubSpot, CONTACT_CONFLICT,
    DAY_USED_UP,
};
use crate::sink::contract::{SinkError, RECEIPT_UPDATE_BUDGET};
use crate::sink::http::{classify_status, transport_error};

/// A call's answer: status, `Retry-After`, body.
pub(super) struct Answer {
    pub status: u16,
    pub retry_after: Option<String>,
    pub body: Value,
}

/// An input's result: the object's ID, or why not.
pub(super) type Written = Result<String, SinkError>;

/// What a ticket read by its submission ID found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Found {
    Ticket(String),
    /// A ticket answered for this ID that holds another value (a unique property compared
    /// without case): another submission's.
    Collision,
}

/// Never the lead's fault: a read refused for its input is HubSpot's.
fn read_error(error: SinkError) -> SinkError {
    match error {
        SinkError::Permanent { .. } => SinkError::Retryable { reason: "sink_unexpected_answer", retry_after: None },
        retryable => retryable,
    }
}

/// A ticket's `CONFLICT` in a 207.
const TICKET_CONFLICT: SinkError = SinkError::Retryable { reason: "sink_ticket_conflict", retry_after: None };

const UNEXPECTED: SinkError = SinkError::Retryable { reason: "sink_unexpected_answer", retry_after: None };

/// A batch refused whole with no time left to split it: its inputs are retried.
const OUT_OF_TIME: SinkError = SinkError::Retryable { reason: "deadline", retry_after: None };

/// The strings an error names its input by: `objectWriteTraceId`, `id` or `ids` in its context,
/// or its own `id`.
fn error_ids(error: &Value) -> impl Iterator<Item = &str> {
    let context = &error["context"];
    ["objectWriteTraceId", "id", "ids"]
        .into_iter()
        .flat_map(move |name| context[name].as_array().into_iter().flatten().filter_map(Value::as_str))
        .chain(error["id"].as_str())
}

impl HubSpot {
    /// The tickets that exist for these submission IDs, by ID (absent: none).
    pub(super) async fn read_tickets(
        &self,
        ids: &[&str],
        deadline: Option<Instant>,
    ) -> Result<BTreeMap<String, Found>, SinkError> {
        let inputs: Vec<Value> = ids.iter().map(|id| json!({"id": id})).collect();
        let body = json!({"idProperty": self.id_property, "inputs": inputs, "properties": [self.id_property]});
        let answer =
            self.call(reqwest::Method::POST, "/crm/v3/objects/tickets/batch/read", Some(body), deadline).await?;
        match answer.status {
            200 | 207 => {}
            // Not found, however HubSpot says it: all new.
            404 => return Ok(BTreeMap::new()),
            400 => return Err(read_error(classify_error(&answer.body))),
            status => return Err(classify_status(status, answer.retry_after.as_deref())),
        }
        let mut found = BTreeMap::new();
        let results: Vec<(&str, &str)> = answer.body["results"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| Some((r["properties"][self.id_property.as_str()].as_str()?, r["id"].as_str()?)))
            .collect();
        for id in ids {
            // By the property's value, never by position; a ticket answered under another
            // case of the value is another submission's: upserting would overwrite it.
            if let Some((_, ticket)) = results.iter().find(|(value, _)| value == id) {
                found.insert((*id).to_owned(), Found::Ticket((*ticket).to_owned()));
            } else if results.iter().any(|(value, _)| value.to_lowercase() == id.to_lowercase()) {
                found.insert((*id).to_owned(), Found::Collision);
            }
        }
        Ok(found)
    }

    /// Which of these tickets are associated with a contact (v4 batch read).
    pub(super) async fn associated(
        &self,
        tickets: &[&str],
        deadline: Option<Instant>,
    ) -> Result<BTreeSet<String>, SinkError> {
        let inputs: Vec<Value> = tickets.iter().map(|id| json!({"id": id})).collect();
        let path = "/crm/v4/associations/tickets/contacts/batch/read";
        let answer = self.call(reqwest::Method::POST, path, Some(json!({"inputs": inputs})), deadline).await?;
        match answer.status {
            200 | 207 => {}
            status => return Err(read_error(classify_status(status, answer.retry_after.as_deref()))),
        }
        let results = answer.body["results"].as_array().into_iter().flatten();
        Ok(results
            .filter(|r| r["to"].as_array().is_some_and(|to| !to.is_empty()))
            .filter_map(|r| id_text(&r["from"]["id"]))
            .collect())
    }

    /// Upserts `inputs` (`(id, properties)`, distinct IDs) of `object` by `id_property`: one
    /// result per input, in the inputs' order. Multi-status is on (each input carries its ID
    /// as `objectWriteTraceId`), so a refused input is its own error in a 207; a batch refused
    /// as a whole for its inputs is split and each half sent again.
    pub(super) fn upsert_objects<'a>(
        &'a self,
        object: &'a str,
        id_property: &'a str,
        inputs: &'a [(String, Value)],
        deadline: Option<Instant>,
    ) -> Pin<Box<dyn Future<Output = Vec<Written>> + Send + 'a>> {
        Box::pin(async move {
            if inputs.is_empty() {
                return Vec::new();
            }
            let body: Vec<Value> = inputs
                .iter()
                .map(|(id, properties)| {
                    json!({"idProperty": id_property, "id": id, "properties": properties, "objectWriteTraceId": id})
                })
                .collect();
            let path = format!("/crm/v3/objects/{object}/batch/upsert");
            let answer = match self.call(reqwest::Method::POST, &path, Some(json!({"inputs": body})), deadline).await {
                Ok(answer) => answer,
                Err(error) => return vec![Err(error); inputs.len()],
            };
            match answer.status {
                200 | 201 | 207 => {
                    inputs.iter().map(|(id, _)| written(object, id_property, id, &answer.body)).collect()
                }
                // A batch refused whole for one of its inputs: split until that input stands
                // alone. Each half is a call more: when none fits before the deadline, the
                // inputs are retried (never judged by a refusal that may be a neighbour's).
                400 | 409 if inputs.len() > 1 && !is_config_error(&answer.body) => {
                    if !time_for_a_call(deadline) {
                        return vec![Err(OUT_OF_TIME); inputs.len()];
                    }
                    let (left, right) = inputs.split_at(inputs.len() / 2);
                    let mut results = self.upsert_objects(object, id_property, left, deadline).await;
                    results.extend(self.upsert_objects(object, id_property, right, deadline).await);
                    results
                }
                status => {
                    let error = classify_upsert_answer(object, status, &answer.body, answer.retry_after.as_deref());
                    vec![Err(error); inputs.len()]
                }
            }
        })
    }

    /// Associates each `(ticket, contact)` pair (v4 batch, the default association): one result
    /// per pair. Both objects exist, so a refusal is HubSpot's and retried, never the lead's.
    pub(super) async fn associate(
        &self,
        pairs: &[(String, String)],
        deadline: Option<Instant>,
    ) -> Vec<Result<(), SinkError>> {
        let inputs: Vec<Value> = pairs.iter().map(|(t, c)| json!({"from": {"id": t}, "to": {"id": c}})).collect();
        let path = "/crm/v4/associations/tickets/contacts/batch/associate/default";
        let answer = match self.call(reqwest::Method::POST, path, Some(json!({"inputs": inputs})), deadline).await {
            Ok(answer) => answer,
            Err(error) => return vec![Err(association_error(error)); pairs.len()],
        };
        if !matches!(answer.status, 200 | 201 | 207) {
            let error = association_error(classify_status(answer.status, answer.retry_after.as_deref()));
            return vec![Err(error); pairs.len()];
        }
        let made: BTreeSet<(String, String)> = answer.body["results"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| Some((id_text(&r["from"]["id"])?, id_text(&r["to"]["id"])?)))
            .collect();
        let failed = SinkError::Retryable { reason: "sink_association_failed", retry_after: None };
        pairs.iter().map(|pair| if made.contains(pair) { Ok(()) } else { Err(failed) }).collect()
    }

    /// Sends one call, paced, and reads its answer (its rate-limit headers go to the pacer).
    pub(super) async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        deadline: Option<Instant>,
    ) -> Result<Answer, SinkError> {
        self.pace(deadline).await?;
        let mut request = self.client.request(method, format!("{}{path}", self.base_url)).bearer_auth(&self.token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.map_err(|e| transport_error(&e))?;
        let headers = response.headers().iter().filter_map(|(n, v)| Some((n.as_str(), v.to_str().ok()?)));
        let limits = super::pace::Limits::from_headers(headers);
        let status = response.status().as_u16();
        let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let body: Value = response.json().await.unwrap_or(Value::Null);
        // A 429 (the private app's window used by another worker with the same token: each
        // shard's invocation paces on its own; or the portal's day) carries no `Retry-After`:
        // its records go back to the stream, and the pacer, which saw its `Remaining: 0` or
        // its `policyName`, holds the next call until the window has room, or the day's until
        // the probe a minute later (one call a minute, not one per invocation until midnight).
        // A 423 (a burst of upserts HubSpot is still syncing) asks for "a delay of at least 2
        // seconds": waited in place when it fits.
        if status == 429 {
            let policy = body["policyName"].as_str();
            self.observe(limits.refused_by(policy));
            if super::pace::is_daily(policy) {
                return Err(DAY_USED_UP);
            }
        } else {
            self.observe(limits);
        }
        let retry_after = match (status, retry_after) {
            (423, None) => Some(String::from("2")),
            (_, retry_after) => retry_after,
        };
        Ok(Answer { status, retry_after, body })
    }
}

/// Whether one more call (at its timeout) and the receipts' update still fit before `deadline`.
fn time_for_a_call(deadline: Option<Instant>) -> bool {
    let needed = crate::sink::http::TIMEOUT + RECEIPT_UPDATE_BUDGET;
    deadline.is_none_or(|deadline| Instant::now() + needed <= deadline)
}

/// An ID as text, whether HubSpot wrote it as a string or a number.
fn id_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

/// True when a refusal names the portal's configuration (a missing property, an ID property
/// that is not unique, the pipeline): the same for every input, so splitting cannot help.
fn is_config_error(body: &Value) -> bool {
    matches!(classify_error(body), SinkError::Retryable { .. })
}

/// Input `id`'s result in a 200, 201 or 207 upsert answer: its result's object ID, matched by
/// `objectWriteTraceId` or the ID property's value (emails without case); else its error, by the
/// ID it names (a ticket's `CONFLICT` retried, `sink_ticket_conflict`); else retried (`sink_unexpected_answer`: the write may not have happened, and
/// the upsert is keyed, so trying again is harmless).
fn written(object: &str, id_property: &str, id: &str, answer: &Value) -> Written {
    // Emails as the sink groups them (lowercase), so a contact's answer finds its input.
    let same = |value: &str| if object == "contacts" { value.to_lowercase() == id.to_lowercase() } else { value == id };
    let results = answer["results"].as_array().into_iter().flatten();
    let mut mine = results.filter(|r| {
        r["objectWriteTraceId"].as_str() == Some(id) || r["properties"][id_property].as_str().is_some_and(same)
    });
    if let Some(result) = mine.next() {
        return result["id"].as_str().map(str::to_owned).ok_or(UNEXPECTED);
    }
    let errors = answer["errors"].as_array().into_iter().flatten();
    let mut refusals = errors.filter(|e| error_ids(e).any(same));
    match refusals.next() {
        Some(error) if object == "contacts" && error["category"] == "CONFLICT" => Err(CONTACT_CONFLICT),
        Some(error) if object == "contacts" => Err(classify_contact_error(error)),
        // HubSpot documents no conflict for an upsert by a unique property: another write of the
        // same ticket at that moment (the retry reads the ticket first and finds it), or a
        // unique property's value another ticket holds, which stands. Retried, never FAILED,
        // spaced as the portal's setup is.
        Some(error) if error["category"] == "CONFLICT" => Err(TICKET_CONFLICT),
        Some(error) => Err(classify_error(error)),
        None => Err(UNEXPECTED),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_and_errors_are_matched_by_id_never_by_position() {
        let answer = json!({"status": "COMPLETE",
            "results": [
                {"id": "2", "properties": {"sid": "b"}},
                {"id": "1", "objectWriteTraceId": "a", "properties": {}}
            ],
            "errors": [{"category": "VALIDATION_ERROR", "context": {"objectWriteTraceId": ["c"]},
                        "errors": [{"code": "INVALID_OPTION", "context": {"propertyName": ["subject"]}}]}]});
        assert_eq!(written("tickets", "sid", "a", &answer), Ok("1".into()));
        assert_eq!(written("tickets", "sid", "b", &answer), Ok("2".into()));
        assert_eq!(written("tickets", "sid", "c", &answer), Err(SinkError::Permanent { reason: "sink_rejected" }));
        assert_eq!(written("tickets", "sid", "d", &answer), Err(UNEXPECTED), "no answer for it: retried");
        assert_eq!(written("tickets", "sid", "B", &answer), Err(UNEXPECTED), "ticket IDs keep their case");
    }

    #[test]
    fn reads_are_never_the_leads_fault_and_ids_are_read_as_strings_or_numbers() {
        let permanent = SinkError::Permanent { reason: "sink_rejected" };
        assert_eq!(read_error(permanent), UNEXPECTED);
        let throttled = SinkError::Retryable { reason: "sink_unavailable", retry_after: None };
        assert_eq!(read_error(throttled), throttled);
        assert_eq!(id_text(&json!("512")), Some("512".to_owned()));
        assert_eq!(id_text(&json!(512)), Some("512".to_owned()));
        assert_eq!(id_text(&json!(null)), None);
        assert!(is_config_error(&json!({"errors": [{"code": "PROPERTY_DOESNT_EXIST"}]})));
        assert!(!is_config_error(&json!({"errors": [{"code": "INVALID_EMAIL"}]})));
        assert!(time_for_a_call(None));
        let needed = crate::sink::http::TIMEOUT + RECEIPT_UPDATE_BUDGET;
        let now = Instant::now();
        assert!(time_for_a_call(Some(now + needed + std::time::Duration::from_secs(1))));
        assert!(!time_for_a_call(Some(now + needed - std::time::Duration::from_secs(1))));
    }

    #[test]
    fn a_contact_is_matched_by_its_email_without_case_and_a_conflict_is_its_own() {
        let answer = json!({"results": [{"id": "7", "properties": {"email": "Ada@Example.com"}}],
            "errors": [{"category": "CONFLICT", "context": {"id": ["bob@example.com"]}}]});
        assert_eq!(written("contacts", "email", "ada@example.com", &answer), Ok("7".into()));
        let unicode = json!({"results": [{"id": "8", "properties": {"email": "ÉVA@example.com"}}]});
        assert_eq!(written("contacts", "email", "éva@example.com", &unicode), Ok("8".into()), "as grouped: lowercase");
        assert_eq!(written("contacts", "email", "BOB@example.com", &answer), Err(CONTACT_CONFLICT));
        let config = json!({"errors": [{"context": {"ids": ["x@y"]}, "errors": [{"code": "PROPERTY_DOESNT_EXIST"}]}]});
        assert_eq!(
            written("contacts", "email", "x@y", &config),
            Err(SinkError::Retryable { reason: "sink_config_invalid", retry_after: None })
        );
        // A contact refused for its phone is tried again without it; a ticket's refusal stays
        // (the batch sends a ticket with mapped properties once more without them).
        let phone = json!({"errors": [{"category": "VALIDATION_ERROR", "context": {"id": ["x@y"]},
            "errors": [{"code": "INVALID_PHONE_NUMBER", "context": {"propertyName": ["phone"]}}]}]});
        assert_eq!(written("contacts", "email", "x@y", &phone), Err(super::super::api::CONTACT_PROPERTY_REFUSED));
        assert_eq!(written("tickets", "sid", "x@y", &phone), Err(SinkError::Permanent { reason: "sink_rejected" }));
    }

    #[test]
    fn a_ticket_s_conflict_in_a_207_is_retried_never_failed() {
        let answer = json!({"status": "COMPLETE", "results": [],
            "errors": [{"category": "CONFLICT", "context": {"id": ["sub_1"]}, "message": "conflict"}]});
        assert_eq!(
            written("tickets", "sid", "sub_1", &answer),
            Err(SinkError::Retryable { reason: "sink_ticket_conflict", retry_after: None })
        );
    }
}
