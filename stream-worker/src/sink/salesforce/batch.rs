//! sObject Collections create (`POST /services/data/vNN.N/composite/sobjects`): up to
//! [`BATCH_SIZE`] Leads in one call, `allOrNone: false`, so each record is saved or refused on
//! its own. Salesforce answers 200 with one SaveResult per record, in the records' order (its
//! documented contract; the results carry no external ID to match by), each refusal classified
//! by its codes ([`super::refusals`]): a record whose values Salesforce refuses (its email, its
//! phone, fields the lead mapping filled: [`super::mapped`]) goes once more without them, in a
//! second call with the others refused for theirs, twice at most (a whole call refused for the
//! phone, or for a mapped value's type: every record without them).
//!
//! Leads are created, never updated: a record refused as a duplicate of its external ID's
//! value (`DUPLICATE_VALUE`, the field Unique) may be a replay of a submission whose Lead
//! exists. One SOQL query for those IDs decides ([`lookup`]): a Lead found is the submission's,
//! done and untouched, so a rep's edits, the owner and a conversion stay, and the org's
//! assignment rules run once, on the create; several found is `sink_multiple_matches`; none is
//! another create of the ID not committed yet, retried.

use serde_json::{json, Value};
use shared::field_map::Mapped;
use shared::lead::Lead;
use shared::typed::Unfit;

use super::api::{classify_answer, Salesforce};
use super::lead::{self, external_id, fields};
use super::lookup;
use super::mapped;
use super::refusals::{self, Meaning, Refusal};
use crate::sink::contract::{BatchItem, SinkError};
use crate::sink::http::transport_error;
use crate::sink::typed_map;

/// Records per collection call at most: Salesforce takes up to 200 (fewer after a call that ran
/// too long: [`super::size`]).
pub const BATCH_SIZE: usize = super::size::STEPS[0];

const UNEXPECTED: SinkError = SinkError::Retryable { reason: "sink_unexpected_answer", retry_after: None };

/// `lead` as a collection record: its fields ([`fields`], the mapping's in `mapped`), its type
/// and the external ID.
pub fn record(lead: &Lead, field: &str, phone_writable: bool, mapped: &Mapped) -> Value {
    with_id(fields(lead, phone_writable, mapped), lead, field)
}

fn with_id(mut fields: Value, lead: &Lead, field: &str) -> Value {
    fields["attributes"] = json!({"type": "Lead"});
    fields[field] = json!(external_id(&lead.external_id));
    fields
}

/// What one SaveResult says of its record.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Saved(Result<(), SinkError>),
    /// Refused for these fields' values (`Email`, maybe `Phone`, fields the mapping filled):
    /// send it again without them (a value the org refuses costs its field, never the lead).
    Without(Vec<String>),
    /// Refused as a duplicate of the external ID's value, or of another Lead by a duplicate
    /// rule: a Lead may hold the submission already (a replay); [`lookup`] decides, and none
    /// found is retried with this reason.
    Taken(&'static str),
}

/// A SaveResult's errors, as a refusal's error array reads.
fn refusals_of(result: &Value) -> Vec<Refusal> {
    let text = |v: &Value| v.as_str().map(str::to_owned);
    result["errors"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let fields = e["fields"].as_array().into_iter().flatten().filter_map(text).collect();
            Some(Refusal { code: text(&e["statusCode"])?, fields })
        })
        .collect()
}

/// One SaveResult of `record` (`field`: the external ID field; `mapped`: what the mapping
/// filled), judged by its codes; `mapped` is `None` when no field may be left out any more
/// (the record was sent twice without some already).
pub fn outcome(result: &Value, field: &str, record: &Value, mapped: Option<&Mapped>) -> Outcome {
    if result["success"] == Value::Bool(true) {
        return Outcome::Saved(Ok(()));
    }
    let errors = refusals_of(result);
    if errors.is_empty() {
        return Outcome::Saved(Err(UNEXPECTED));
    }
    // Salesforce's answer names the field in its message only (never read): an error naming no
    // field may be the external ID's, one naming another unique field is the org's.
    let ours = |e: &Refusal| e.fields.is_empty() || e.fields.iter().any(|f| f.eq_ignore_ascii_case(field));
    if errors.iter().any(|e| e.code == "DUPLICATE_VALUE" && ours(e)) {
        return Outcome::Taken(lookup::DUPLICATE);
    }
    if let Some(mapped) = mapped {
        // Every value refused at once, so a record is sent without them once.
        let mut left = super::mapped::refused(&errors, record, mapped);
        let email = |e: &Refusal| {
            e.code == "INVALID_EMAIL_ADDRESS" && (e.fields.is_empty() || e.fields.iter().any(|f| f == "Email"))
        };
        if record.get("Email").is_some() && errors.iter().any(email) && !left.iter().any(|f| f == "Email") {
            left.push(String::from("Email"));
        }
        if record.get("Phone").is_some() && refusals::may_be_the_phone(&errors) && !left.iter().any(|f| f == "Phone") {
            left.push(String::from("Phone"));
        }
        if !left.is_empty() {
            return Outcome::Without(left);
        }
    }
    match refusals::record_meaning(&errors, field) {
        // The org's rules (validation, required fields, duplicate rules, automation) run before
        // the uniqueness check: a replay's create meets them too, and a Block duplicate rule
        // matches the submission's own Lead. Whether that Lead exists, the query decides.
        Some(Meaning::OrgSetup(reason)) => Outcome::Taken(reason),
        Some(meaning) => Outcome::Saved(meaning.verdict()),
        None => Outcome::Saved(Err(SinkError::Permanent { reason: "sink_rejected" })),
    }
}

/// `indices` split into the first of each key (in order) and the repeats.
pub fn first_of_each(indices: &[usize], key: impl Fn(usize) -> String) -> (Vec<usize>, Vec<usize>) {
    let mut seen = std::collections::BTreeSet::new();
    indices.iter().partition(|&&i| seen.insert(key(i)))
}

impl Salesforce {
    /// Creates `items`' Leads ([`BATCH_SIZE`] at most), or finds them created: one result per
    /// item, in their order.
    pub async fn upsert_collection(&self, items: &[BatchItem<'_>]) -> Vec<Result<(), SinkError>> {
        let field = self.field().to_owned();
        let phone = self.phone_writable();
        let typed = match self.typed().await {
            Ok(typed) => typed,
            Err(error) => return vec![Err(error); items.len()],
        };
        let mut mapped = typed_map::mapped(items, typed.as_deref());
        // How many times each record was sent again without refused values.
        let mut withouts = vec![0u8; items.len()];
        let mut records: Vec<Value> =
            items.iter().zip(&mapped).map(|(item, mapped)| record(item.lead, &field, phone, mapped)).collect();
        let mut results = vec![Err(UNEXPECTED); items.len()];
        let mut sending: Vec<usize> = (0..items.len()).collect();
        // Records refused as duplicates of their external ID, for one query at the end.
        let mut taken = Vec::new();
        // A new token at most once for the whole collection, as for a single record, whatever
        // else is sent again: the function's time budget counts on it.
        let mut refreshed = false;
        while !sending.is_empty() {
            // An external ID repeated in one request is refused for both (`DUPLICATE_VALUE`):
            // a repeat waits for the next call.
            let (now, later) = first_of_each(&sending, |i| records[i][field.as_str()].to_string());
            sending = now;
            let batch: Vec<&Value> = sending.iter().map(|&i| &records[i]).collect();
            let answers = match self.collection(&json!({"allOrNone": false, "records": batch}), &mut refreshed).await {
                Ok(answers) if answers.len() == sending.len() => answers,
                // A value not of its field's type fails the reading of the whole request
                // (`JSON_PARSER_ERROR`, no record named; a field's type changed since the
                // describe was read): once more, every record without its mapped fields.
                Err((_, errors))
                    if errors.iter().any(|e| e.code == "JSON_PARSER_ERROR")
                        && sending.iter().any(|&i| withouts[i] < 2 && !mapped[i].values.is_empty()) =>
                {
                    self.forget_typed();
                    for &i in &sending {
                        let all: Vec<String> = mapped[i].values.iter().map(|(f, _)| f.clone()).collect();
                        self.leave_out(items[i].lead, &mut records[i], &mut mapped[i], &all, &mut withouts[i]);
                    }
                    sending.extend(later);
                    continue;
                }
                // The whole call refused for the org's field setup (a field no longer visible
                // to the integration user fails the request, not each record): once more, every
                // record without `Phone`; the describe is read again before the next call (a
                // mapped field may be the one).
                Err((_, errors))
                    if refusals::may_be_the_phone(&errors)
                        && sending.iter().any(|&i| withouts[i] < 2 && records[i].get("Phone").is_some()) =>
                {
                    self.forget_typed();
                    self.note_phone_refused(&errors);
                    for &i in &sending {
                        let phone = [String::from("Phone")];
                        self.leave_out(items[i].lead, &mut records[i], &mut mapped[i], &phone, &mut withouts[i]);
                    }
                    sending.extend(later);
                    continue;
                }
                // One SaveResult per record, or none is trusted.
                answered => {
                    let error = answered.err().map_or(UNEXPECTED, |(error, _)| error);
                    for &i in sending.iter().chain(&later) {
                        results[i] = Err(error);
                    }
                    break;
                }
            };
            let mut again = later;
            for (&i, answer) in sending.iter().zip(&answers) {
                // Fields are left out twice at most (the record's budget counts two more
                // creates: [`super::Salesforce::record_budget`]).
                let droppable = (withouts[i] < 2).then_some(&mapped[i]);
                match outcome(answer, &field, &records[i], droppable) {
                    Outcome::Saved(result) => {
                        if result.is_ok() {
                            typed_map::log_left_out(items[i].lead, &mapped[i].left_out);
                        }
                        results[i] = result;
                    }
                    Outcome::Without(refused) => {
                        if refused.iter().any(|f| f == "Phone") {
                            self.note_phone_refused(&refusals_of(answer));
                        }
                        self.leave_out(items[i].lead, &mut records[i], &mut mapped[i], &refused, &mut withouts[i]);
                        again.push(i);
                    }
                    Outcome::Taken(otherwise) => taken.push((i, otherwise)),
                }
            }
            sending = again;
        }
        if !taken.is_empty() {
            let id = |i: usize| external_id(&items[i].lead.external_id).into_owned();
            let asked: Vec<(String, &'static str)> = taken.iter().map(|&(i, otherwise)| (id(i), otherwise)).collect();
            for ((i, _), result) in taken.into_iter().zip(self.look_up(&asked, &mut refreshed).await) {
                results[i] = result;
            }
        }
        results
    }

    /// `record` without the fields `refused` names (their values back in `Description`, the
    /// mapped ones named in the log); the second time, without every mapped field too, so a
    /// third refusal is never about a value.
    fn leave_out(&self, lead: &Lead, record: &mut Value, mapped: &mut Mapped, refused: &[String], withouts: &mut u8) {
        *withouts += 1;
        let names = mapped::to_leave_out(refused, mapped, *withouts);
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        mapped.leave_out(&names, Unfit::Refused);
        *record = lead::without(lead, record.take(), &names, mapped);
    }

    /// One collection call: the SaveResults, or why the call as a whole failed and the
    /// refusal's errors. A session that ended gets a new token unless `refreshed` says one was
    /// already fetched.
    async fn collection(&self, body: &Value, refreshed: &mut bool) -> Result<Vec<Value>, (SinkError, Vec<Refusal>)> {
        let mut fresh = false;
        loop {
            let response = self.post(&self.collection_path, body, fresh).await.map_err(|e| (e, Vec::new()))?;
            let status = response.status().as_u16();
            if status == 401 && !*refreshed {
                (fresh, *refreshed) = (true, true);
                continue;
            }
            let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_owned);
            let text = response.text().await.map_err(|e| {
                if e.is_timeout() {
                    self.size.note(true);
                }
                (transport_error(&e), Vec::new())
            })?;
            // Ran too long for Salesforce, or answered in time: the size of the next collections.
            if let Some(too_long) = ran_too_long(status, &text) {
                self.size.note(too_long);
            }
            if status == 200 {
                let answers: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                return answers.as_array().cloned().ok_or((UNEXPECTED, Vec::new()));
            }
            let error =
                classify_answer(status, retry_after.as_deref(), &text, self.field()).err().unwrap_or(UNEXPECTED);
            let errors = if status == 400 { refusals::errors(&text) } else { Vec::new() };
            return Err((error, errors));
        }
    }
}

/// What a collection call's answer (`status`, body) says of its size: too long for Salesforce
/// (`REQUEST_RUNNING_TOO_LONG`), in time (a 200), or nothing (any other refusal).
fn ran_too_long(status: u16, text: &str) -> Option<bool> {
    match status {
        200 => Some(false),
        _ if refusals::errors(text).iter().any(|e| e.code == "REQUEST_RUNNING_TOO_LONG") => Some(true),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_that_says_the_request_ran_too_long_is_told_from_others() {
        let too_long =
            r#"[{"errorCode":"REQUEST_RUNNING_TOO_LONG","message":"Your request was running for too long"}]"#;
        assert_eq!(ran_too_long(400, too_long), Some(true));
        assert_eq!(ran_too_long(500, too_long), Some(true));
        assert_eq!(ran_too_long(400, r#"[{"errorCode":"UNKNOWN_EXCEPTION","message":"x"}]"#), None);
        assert_eq!(ran_too_long(503, "Service Unavailable"), None, "says nothing of the size");
        assert_eq!(ran_too_long(200, too_long), Some(false), "a 200 is SaveResults, in time");
    }

    #[test]
    fn a_repeated_external_id_waits_for_the_next_call() {
        let keys = ["a", "b", "a", "c", "b", "a"];
        let (now, later) = first_of_each(&[0, 1, 2, 3, 4, 5], |i| keys[i].to_owned());
        assert_eq!((now, later), (vec![0, 1, 3], vec![2, 4, 5]));
        let lead = Lead {
            external_id: "sub_1".into(),
            name: "Ada Lovelace".into(),
            email: "ada@example.com".into(),
            message: String::new(),
            extra: Default::default(),
            roles: Default::default(),
            form: String::new(),
        };
        let record = record(&lead, "F__c", true, &Mapped::default());
        assert_eq!((record["attributes"]["type"].as_str(), record["F__c"].as_str()), (Some("Lead"), Some("sub_1")));
    }

    #[test]
    fn each_save_result_is_judged_by_its_codes() {
        let none = Mapped::default();
        let saved = json!({"id": "00Q1", "success": true, "errors": [], "created": true});
        let (with_email, bare) = (json!({"Email": "a@x"}), json!({}));
        assert_eq!(outcome(&saved, "F__c", &with_email, Some(&none)), Outcome::Saved(Ok(())));
        let refused =
            |code: &str| json!({"success": false, "errors": [{"statusCode": code, "message": "x", "fields": []}]});
        let retry = |reason| Outcome::Saved(Err(SinkError::Retryable { reason, retry_after: None }));
        assert_eq!(outcome(&refused("UNABLE_TO_LOCK_ROW"), "F__c", &with_email, Some(&none)), retry("sink_row_locked"));
        // The org's setup refusing a create: the submission's Lead may exist all the same (a
        // replay meets the org's rules before the uniqueness check); the query decides, and
        // none found is retried with the setup's reason.
        assert_eq!(
            outcome(&refused("FIELD_CUSTOM_VALIDATION_EXCEPTION"), "F__c", &with_email, Some(&none)),
            Outcome::Taken("sink_org_validation_rule")
        );
        assert_eq!(
            outcome(&refused("REQUIRED_FIELD_MISSING"), "F__c", &with_email, Some(&none)),
            Outcome::Taken("sink_org_required_field")
        );
        // Salesforce's internal error on one record: the org's (its automation on this data),
        // never FAILED, the query first.
        assert_eq!(
            outcome(&refused("UNKNOWN_EXCEPTION"), "F__c", &with_email, Some(&none)),
            Outcome::Taken("sink_org_automation")
        );
        // With a phone, the org's field setup may be refusing it: once more without.
        let with_phone = json!({"Phone": "+1 555"});
        for code in ["FIELD_CUSTOM_VALIDATION_EXCEPTION", "INVALID_FIELD_FOR_INSERT_UPDATE", "INVALID_FIELD"] {
            assert_eq!(
                outcome(&refused(code), "F__c", &with_phone, Some(&none)),
                Outcome::Without(vec![String::from("Phone")]),
                "{code}"
            );
        }
        let naming = |code: &str, field: &str| json!({"success": false, "errors": [{"statusCode": code, "message": "x", "fields": [field]}]});
        assert_eq!(
            outcome(&naming("SOMETHING_NEW", "phone"), "F__c", &with_phone, Some(&none)),
            Outcome::Without(vec![String::from("Phone")])
        );
        // A rule or a permission naming another field is about that field: the org's.
        assert_eq!(
            outcome(&naming("FIELD_CUSTOM_VALIDATION_EXCEPTION", "Company"), "F__c", &with_phone, Some(&none)),
            Outcome::Taken("sink_org_validation_rule")
        );
        assert_eq!(
            outcome(&naming("INVALID_FIELD_FOR_INSERT_UPDATE", "F__c"), "F__c", &with_phone, Some(&none)),
            Outcome::Taken("sink_org_permissions")
        );
        assert_eq!(outcome(&refused("UNABLE_TO_LOCK_ROW"), "F__c", &with_phone, Some(&none)), retry("sink_row_locked"));
        assert_eq!(
            outcome(&refused("CANNOT_UPDATE_CONVERTED_LEAD"), "F__c", &with_email, Some(&none)),
            Outcome::Saved(Ok(()))
        );
        // A duplicate of the external ID's value (named, or no field named): a query decides;
        // of another unique field: the org's.
        let taken = Outcome::Taken("sink_concurrent_upsert");
        assert_eq!(outcome(&refused("DUPLICATE_VALUE"), "F__c", &with_email, Some(&none)), taken);
        assert_eq!(outcome(&naming("DUPLICATE_VALUE", "f__C"), "F__c", &with_email, Some(&none)), taken);
        assert_eq!(
            outcome(&refused("DUPLICATES_DETECTED"), "F__c", &with_email, Some(&none)),
            Outcome::Taken("sink_org_duplicate_rule")
        );
        assert_eq!(
            outcome(&naming("DUPLICATE_VALUE", "Badge__c"), "F__c", &with_email, Some(&none)),
            Outcome::Taken("sink_org_unique_field")
        );
        // The lead's own content is never looked for: FAILED.
        assert_eq!(
            outcome(&naming("STRING_TOO_LONG", "LastName"), "F__c", &with_email, Some(&none)),
            Outcome::Saved(Err(SinkError::Permanent { reason: "sink_rejected" }))
        );
        assert_eq!(
            outcome(&refused("INVALID_EMAIL_ADDRESS"), "F__c", &with_email, Some(&none)),
            Outcome::Without(vec![String::from("Email")])
        );
        assert_eq!(
            outcome(&refused("INVALID_EMAIL_ADDRESS"), "F__c", &bare, Some(&none)),
            Outcome::Saved(Err(SinkError::Permanent { reason: "sink_rejected" })),
            "already without Email: the lead's"
        );
        assert_eq!(
            outcome(&refused("SOMETHING_NEW"), "F__c", &with_email, Some(&none)),
            Outcome::Saved(Err(SinkError::Permanent { reason: "sink_rejected" }))
        );
        assert_eq!(
            outcome(&json!({"success": false}), "F__c", &with_email, Some(&none)),
            Outcome::Saved(Err(UNEXPECTED)),
            "no errors: retried"
        );
        // An error naming a field the mapping filled for its value costs that field, with the
        // email and the phone refused beside it: all at once.
        let mapped_record = json!({"Size__c": "Huge", "Email": "a@b.co", "Phone": "+1 555"});
        let mapped =
            Mapped { values: vec![("Size__c".into(), shared::json::Json::string("Huge"))], ..Mapped::default() };
        let picklist = naming("INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST", "size__c");
        assert_eq!(
            outcome(&picklist, "F__c", &mapped_record, Some(&mapped)),
            Outcome::Without(vec![String::from("Size__c")])
        );
        let both = json!({"success": false, "errors": [
            {"statusCode": "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST", "message": "x", "fields": ["Size__c"]},
            {"statusCode": "INVALID_EMAIL_ADDRESS", "message": "x", "fields": ["Email"]}]});
        assert_eq!(
            outcome(&both, "F__c", &mapped_record, Some(&mapped)),
            Outcome::Without(vec![String::from("Size__c"), String::from("Email")])
        );
        // A mapped value and the phone (a rule shown at the top of the page) at once.
        let with_rule = json!({"success": false, "errors": [
            {"statusCode": "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST", "message": "x", "fields": ["Size__c"]},
            {"statusCode": "FIELD_CUSTOM_VALIDATION_EXCEPTION", "message": "x", "fields": []}]});
        assert_eq!(
            outcome(&with_rule, "F__c", &mapped_record, Some(&mapped)),
            Outcome::Without(vec![String::from("Size__c"), String::from("Phone")])
        );
        // Not once it was left out, nor a field it did not fill, nor after two tries: the lead's.
        let rejected = Outcome::Saved(Err(SinkError::Permanent { reason: "sink_rejected" }));
        assert_eq!(outcome(&picklist, "F__c", &json!({"Email": "a@b.co"}), Some(&mapped)), rejected);
        assert_eq!(outcome(&picklist, "F__c", &mapped_record, Some(&none)), rejected);
        assert_eq!(outcome(&picklist, "F__c", &mapped_record, None), rejected);
        assert_eq!(
            outcome(&refused("INVALID_EMAIL_ADDRESS"), "F__c", &with_email, None),
            rejected,
            "left out twice already"
        );
        // An invalid address of a mapped email field is that field's, not the Lead's Email.
        let other_email = naming("INVALID_EMAIL_ADDRESS", "Work_Email__c");
        assert_eq!(outcome(&other_email, "F__c", &with_email, Some(&none)), rejected);
    }
}
