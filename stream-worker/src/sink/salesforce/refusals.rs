//! What each of Salesforce's refusals means for a lead: retried (a passing condition, or the
//! org's setup, which a person fixes), this lead's own content (`FAILED`), or done already.
//!
//! Salesforce answers a call it refuses with a JSON array of `{errorCode, message, fields}`
//! (developer.salesforce.com, REST API "Status Codes and Error Responses"; the codes are SOAP
//! API's `StatusCode` values). Only codes are read, never messages, which repeat the input.

use crate::sink::contract::SinkError;

/// What a refusal's error code means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Meaning {
    /// A condition that passes: retried, with this reason.
    Transient(&'static str),
    /// The org's setup refuses every such lead until an administrator changes it: retried,
    /// loud, with a reason an alarm can name; never `FAILED`, since a redrive could not help a
    /// lead that was failed for it.
    OrgSetup(&'static str),
    /// This lead's own content: `FAILED` with this reason.
    Content(&'static str),
    /// The submission's Lead exists and was converted (to an Account, Contact and Opportunity):
    /// the submission is a lead already, and a replay must not touch what sales made of it.
    /// (An update's answer: the sink only creates, and finds a replay's Lead by a query, but a
    /// converted Lead is never taken for a failure.)
    Converted,
}

/// Every error code the sink gives a meaning, with the reason it reports. Codes not listed
/// fall back to the answer's status (`classify_status`: a 400 is the lead's).
pub const CODES: [(&str, Meaning); 21] = [
    // Record locks: another transaction (a workflow, a data load, a user) holds the Lead or a
    // record it touches; Salesforce documents retrying.
    ("UNABLE_TO_LOCK_ROW", Meaning::Transient("sink_row_locked")),
    // A create refused as a duplicate of the external ID's value whose Lead the query did not
    // find: another create of the ID not committed yet. Retried, the query finds it. (One
    // naming another unique field is the org's: see [`meaning`].)
    ("DUPLICATE_VALUE", Meaning::Transient("sink_concurrent_upsert")),
    ("REQUEST_RUNNING_TOO_LONG", Meaning::Transient("sink_unavailable")),
    // Salesforce's internal error ("The system encountered an internal error") for a call
    // (a query, a whole collection): the platform's. In one record's result it is the org's:
    // [`record_meaning`].
    ("UNKNOWN_EXCEPTION", Meaning::Transient("sink_unavailable")),
    // The org made a field required that the form does not fill.
    ("REQUIRED_FIELD_MISSING", Meaning::OrgSetup("sink_org_required_field")),
    // A validation rule of the org's refuses the Lead.
    ("FIELD_CUSTOM_VALIDATION_EXCEPTION", Meaning::OrgSetup("sink_org_validation_rule")),
    // Field-level security or the integration user's permissions.
    ("INVALID_FIELD_FOR_INSERT_UPDATE", Meaning::OrgSetup("sink_org_permissions")),
    ("INSUFFICIENT_ACCESS_OR_READONLY", Meaning::OrgSetup("sink_org_permissions")),
    ("INSUFFICIENT_ACCESS_ON_CROSS_REFERENCE_ENTITY", Meaning::OrgSetup("sink_org_permissions")),
    // A duplicate rule whose action is Block (alerts are saved past: the sink sends
    // `Sforce-Duplicate-Rule-Header: allowSave=true`).
    ("DUPLICATES_DETECTED", Meaning::OrgSetup("sink_org_duplicate_rule")),
    // A trigger, a flow or an assignment rule of the org's failed on the Lead.
    ("CANNOT_INSERT_UPDATE_ACTIVATE_ENTITY", Meaning::OrgSetup("sink_org_automation")),
    ("CANNOT_EXECUTE_FLOW_TRIGGER", Meaning::OrgSetup("sink_org_automation")),
    ("FIELD_INTEGRITY_EXCEPTION", Meaning::OrgSetup("sink_org_automation")),
    ("INVALID_CROSS_REFERENCE_KEY", Meaning::OrgSetup("sink_org_automation")),
    // An assignment rule or default owner naming a deactivated user.
    ("INACTIVE_OWNER_OR_USER", Meaning::OrgSetup("sink_org_automation")),
    // The org's data storage is full.
    ("STORAGE_LIMIT_EXCEEDED", Meaning::OrgSetup("sink_org_storage_full")),
    // An approval process locked a record the Lead's automation touches.
    ("ENTITY_IS_LOCKED", Meaning::OrgSetup("sink_org_record_locked")),
    // A field the sink writes does not exist on the org's Lead.
    ("INVALID_FIELD", Meaning::OrgSetup("sink_config_invalid")),
    // The lead's own content: an address Salesforce refuses even after the sink's own check
    // (answered once more without `Email` first), a value over its field's length (only when
    // the refusal names a field the sink writes: see [`meaning`]).
    ("INVALID_EMAIL_ADDRESS", Meaning::Content("sink_rejected")),
    ("STRING_TOO_LONG", Meaning::Content("sink_rejected")),
    ("CANNOT_UPDATE_CONVERTED_LEAD", Meaning::Converted),
];

/// One error of a refusal: its code and the fields it names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub code: String,
    pub fields: Vec<String>,
}

/// The errors of a refusal's body (empty when it is not Salesforce's error array).
pub fn errors(body: &str) -> Vec<Refusal> {
    let Ok(serde_json::Value::Array(errors)) = serde_json::from_str::<serde_json::Value>(body) else {
        return Vec::new();
    };
    let text = |v: &serde_json::Value| v.as_str().map(str::to_owned);
    errors
        .iter()
        .filter_map(|e| {
            let fields = e["fields"].as_array().into_iter().flatten().filter_map(text).collect();
            Some(Refusal { code: text(&e["errorCode"])?, fields })
        })
        .collect()
}

/// The codes with which an org refuses a field's value for its own setup: a validation rule,
/// field-level security (a field the user may not edit, or may not see).
const FIELD_SETUP_CODES: [&str; 3] =
    ["FIELD_CUSTOM_VALIDATION_EXCEPTION", "INVALID_FIELD_FOR_INSERT_UPDATE", "INVALID_FIELD"];

/// The codes with which an org refuses a field the integration user may not write or see
/// (field-level security).
const FIELD_SECURITY_CODES: [&str; 2] = ["INVALID_FIELD_FOR_INSERT_UPDATE", "INVALID_FIELD"];

/// Whether a refusal of a Lead that had `Phone` may be about the phone (a field Salesforce never
/// saw the sink write before the default mapping did): an error naming `Phone`, or one of the
/// org's field setup ([`FIELD_SETUP_CODES`]) that names no field (a validation rule's error
/// shown at the top of the page; `INVALID_FIELD` names the field only in its message, which
/// the sink never reads). The Lead is then sent once more without it, so a phone costs its
/// field, never the lead. An error naming other fields only is about them.
pub fn may_be_the_phone(errors: &[Refusal]) -> bool {
    let names_phone = |e: &Refusal| e.fields.iter().any(|f| f.eq_ignore_ascii_case("Phone"));
    let unnamed_setup = |e: &Refusal| e.fields.is_empty() && FIELD_SETUP_CODES.contains(&e.code.as_str());
    errors.iter().any(|e| names_phone(e) || unnamed_setup(e))
}

/// Whether a refusal [`may_be_the_phone`] says the integration user may not write or see it
/// (field-level security changed since the start-up check): then the sink stops writing `Phone`
/// until it starts again.
pub fn phone_not_writable(errors: &[Refusal]) -> bool {
    may_be_the_phone(errors) && errors.iter().any(|e| FIELD_SECURITY_CODES.contains(&e.code.as_str()))
}

/// The meaning of a refusal with these errors and `status`, when one has a meaning. A refusal
/// with several means the most cautious of them: anything retried wins over `FAILED`.
pub fn meaning(status: u16, errors: &[Refusal], external_id_field: &str) -> Option<Meaning> {
    let has = |code: &str| errors.iter().any(|e| e.code == code);
    // 403 REQUEST_LIMIT_EXCEEDED: the org's API request limit (Salesforce answers 403, not 429).
    if status == 403 && has("REQUEST_LIMIT_EXCEEDED") {
        return Some(Meaning::Transient("sink_rate_limited"));
    }
    // 404 NOT_FOUND: the external ID field does not exist (or is not visible to the user); 410:
    // the API version was retired (SALESFORCE_API_VERSION).
    if (status == 404 && has("NOT_FOUND")) || status == 410 {
        return Some(Meaning::OrgSetup("sink_config_invalid"));
    }
    let known = errors.iter().filter_map(|e| {
        let (_, meaning) = CODES.iter().find(|(code, _)| *code == e.code)?;
        // A value too long for a field the sink does not write: a trigger or flow of the org's
        // copied the lead's text somewhere shorter (the sink cuts every value it writes).
        let ours = |f: &String| super::lead::LENGTHS.iter().any(|(name, _)| name.eq_ignore_ascii_case(f));
        if e.code == "STRING_TOO_LONG" && !e.fields.is_empty() && !e.fields.iter().any(ours) {
            return Some(Meaning::OrgSetup("sink_org_automation"));
        }
        // A duplicate of another unique field of the org's (Salesforce's answer usually names
        // no field; when it names one that is not the external ID, no retry can clear it).
        let external_id = |f: &String| f.eq_ignore_ascii_case(external_id_field);
        if e.code == "DUPLICATE_VALUE" && !e.fields.is_empty() && !e.fields.iter().any(external_id) {
            return Some(Meaning::OrgSetup("sink_org_unique_field"));
        }
        Some(*meaning)
    });
    let rank = |m: &Meaning| match m {
        Meaning::Transient(_) => 0,
        Meaning::OrgSetup(_) => 1,
        Meaning::Converted => 2,
        Meaning::Content(_) => 3,
    };
    known.min_by_key(rank)
}

/// The meaning of one record's errors in a collection's answer: as [`meaning`]'s, but an
/// internal error (`UNKNOWN_EXCEPTION`) there is, in practice, the org's Apex or automation
/// failing on this record's data, which may stand: the org's (`sink_org_automation`), so the
/// query looks for the submission's Lead first and an alarm names the org.
pub fn record_meaning(errors: &[Refusal], external_id_field: &str) -> Option<Meaning> {
    match meaning(400, errors, external_id_field) {
        Some(Meaning::Transient(_)) if errors.iter().any(|e| e.code == "UNKNOWN_EXCEPTION") => {
            Some(Meaning::OrgSetup("sink_org_automation"))
        }
        other => other,
    }
}

impl Meaning {
    /// The sink's verdict: `Ok` for a converted Lead, else the error to report.
    pub fn verdict(self) -> Result<(), SinkError> {
        match self {
            Meaning::Transient(reason) | Meaning::OrgSetup(reason) => {
                Err(SinkError::Retryable { reason, retry_after: None })
            }
            Meaning::Content(reason) => Err(SinkError::Permanent { reason }),
            Meaning::Converted => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(status: u16, body: &str, expected: Option<Meaning>) {
        assert_eq!(meaning(status, &errors(body), "Sub__c"), expected, "{status} {body}");
    }

    #[test]
    fn an_internal_error_is_the_org_s_in_a_record_and_the_platform_s_for_a_call() {
        let body = r#"[{"errorCode":"UNKNOWN_EXCEPTION","message":"m","fields":[]}]"#;
        for status in [400, 500] {
            check(status, body, Some(Meaning::Transient("sink_unavailable")));
        }
        assert_eq!(record_meaning(&errors(body), "Sub__c"), Some(Meaning::OrgSetup("sink_org_automation")));
        let locked = r#"[{"errorCode":"UNABLE_TO_LOCK_ROW","message":"m","fields":[]}]"#;
        assert_eq!(record_meaning(&errors(locked), "Sub__c"), Some(Meaning::Transient("sink_row_locked")));
        let required = r#"[{"errorCode":"REQUIRED_FIELD_MISSING","message":"m","fields":["X__c"]}]"#;
        assert_eq!(record_meaning(&errors(required), "Sub__c"), Some(Meaning::OrgSetup("sink_org_required_field")));
    }

    #[test]
    fn every_code_has_its_meaning() {
        for (code, meaning) in CODES {
            check(400, &format!(r#"[{{"errorCode":"{code}","message":"m","fields":[]}}]"#), Some(meaning));
        }
        let unique: std::collections::BTreeSet<&str> = CODES.iter().map(|(c, _)| *c).collect();
        assert_eq!(unique.len(), CODES.len(), "a code has one meaning");
    }

    #[test]
    fn each_code_s_meaning_written_out() {
        // Written out here, not read from CODES: moving a code to another class fails this.
        use Meaning::{Content as C, Converted, OrgSetup as O, Transient as T};
        for (code, expected) in [
            ("UNABLE_TO_LOCK_ROW", T("sink_row_locked")),
            ("DUPLICATE_VALUE", T("sink_concurrent_upsert")),
            ("REQUEST_RUNNING_TOO_LONG", T("sink_unavailable")),
            ("UNKNOWN_EXCEPTION", T("sink_unavailable")),
            ("REQUIRED_FIELD_MISSING", O("sink_org_required_field")),
            ("FIELD_CUSTOM_VALIDATION_EXCEPTION", O("sink_org_validation_rule")),
            ("INVALID_FIELD_FOR_INSERT_UPDATE", O("sink_org_permissions")),
            ("INSUFFICIENT_ACCESS_OR_READONLY", O("sink_org_permissions")),
            ("INSUFFICIENT_ACCESS_ON_CROSS_REFERENCE_ENTITY", O("sink_org_permissions")),
            ("DUPLICATES_DETECTED", O("sink_org_duplicate_rule")),
            ("CANNOT_INSERT_UPDATE_ACTIVATE_ENTITY", O("sink_org_automation")),
            ("CANNOT_EXECUTE_FLOW_TRIGGER", O("sink_org_automation")),
            ("FIELD_INTEGRITY_EXCEPTION", O("sink_org_automation")),
            ("INVALID_CROSS_REFERENCE_KEY", O("sink_org_automation")),
            ("INACTIVE_OWNER_OR_USER", O("sink_org_automation")),
            ("STORAGE_LIMIT_EXCEEDED", O("sink_org_storage_full")),
            ("ENTITY_IS_LOCKED", O("sink_org_record_locked")),
            ("INVALID_FIELD", O("sink_config_invalid")),
            ("INVALID_EMAIL_ADDRESS", C("sink_rejected")),
            ("STRING_TOO_LONG", C("sink_rejected")),
            ("CANNOT_UPDATE_CONVERTED_LEAD", Converted),
        ] {
            check(400, &format!(r#"[{{"errorCode":"{code}","fields":[]}}]"#), Some(expected));
        }
    }

    #[test]
    fn a_duplicate_of_another_unique_field_is_the_org_s() {
        let ours = r#"[{"errorCode":"DUPLICATE_VALUE","message":"duplicate value found: sub__c","fields":["Sub__c"]}]"#;
        check(400, ours, Some(Meaning::Transient("sink_concurrent_upsert")));
        let theirs = r#"[{"errorCode":"DUPLICATE_VALUE","fields":["Badge_Number__c"]}]"#;
        check(400, theirs, Some(Meaning::OrgSetup("sink_org_unique_field")));
    }

    #[test]
    fn no_refusal_of_the_org_or_of_a_passing_condition_fails_a_lead() {
        for (code, meaning) in CODES {
            let retried = matches!(meaning.verdict(), Err(SinkError::Retryable { .. }));
            let transient_or_org = matches!(meaning, Meaning::Transient(_) | Meaning::OrgSetup(_));
            assert_eq!(retried, transient_or_org, "{code}");
        }
        assert_eq!(Meaning::Converted.verdict(), Ok(()));
        assert_eq!(Meaning::Content("sink_rejected").verdict(), Err(SinkError::Permanent { reason: "sink_rejected" }));
        assert_eq!(
            Meaning::OrgSetup("sink_org_validation_rule").verdict(),
            Err(SinkError::Retryable { reason: "sink_org_validation_rule", retry_after: None })
        );
    }

    #[test]
    fn the_most_cautious_code_wins() {
        let both = r#"[{"errorCode":"INVALID_EMAIL_ADDRESS"},{"errorCode":"REQUIRED_FIELD_MISSING"}]"#;
        check(400, both, Some(Meaning::OrgSetup("sink_org_required_field")));
        let lock = r#"[{"errorCode":"REQUIRED_FIELD_MISSING"},{"errorCode":"UNABLE_TO_LOCK_ROW"}]"#;
        check(400, lock, Some(Meaning::Transient("sink_row_locked")));
        let converted = r#"[{"errorCode":"STRING_TOO_LONG"},{"errorCode":"CANNOT_UPDATE_CONVERTED_LEAD"}]"#;
        check(400, converted, Some(Meaning::Converted));
    }

    #[test]
    fn some_codes_mean_something_only_with_their_status() {
        let limit = r#"[{"message":"TotalRequests Limit exceeded.","errorCode":"REQUEST_LIMIT_EXCEEDED"}]"#;
        check(403, limit, Some(Meaning::Transient("sink_rate_limited")));
        check(400, limit, None);
        let missing = r#"[{"errorCode":"NOT_FOUND","message":"Provided external ID field does not exist"}]"#;
        check(404, missing, Some(Meaning::OrgSetup("sink_config_invalid")));
        check(400, r#"[{"errorCode":"NOT_FOUND"}]"#, None);
        // A retired API version: every call answers 410.
        check(
            410,
            r#"[{"errorCode":"GONE","message":"Version 20.0 is retired"}]"#,
            Some(Meaning::OrgSetup("sink_config_invalid")),
        );
        check(410, "", Some(Meaning::OrgSetup("sink_config_invalid")));
    }

    #[test]
    fn a_value_too_long_is_the_lead_s_only_in_a_field_the_sink_writes() {
        let ours =
            r#"[{"errorCode":"STRING_TOO_LONG","message":"FirstName: data value too large","fields":["FirstName"]}]"#;
        check(400, ours, Some(Meaning::Content("sink_rejected")));
        let theirs = r#"[{"errorCode":"STRING_TOO_LONG","fields":["Short_Summary__c"]}]"#;
        check(400, theirs, Some(Meaning::OrgSetup("sink_org_automation")));
        check(400, r#"[{"errorCode":"STRING_TOO_LONG","fields":[]}]"#, Some(Meaning::Content("sink_rejected")));
        assert_eq!(
            errors(r#"[{"errorCode":"X","fields":["A",1]},{"message":"no code"}]"#),
            [Refusal { code: "X".into(), fields: vec!["A".into()] }]
        );
    }

    #[test]
    fn only_codes_are_read_never_messages() {
        // A message repeats the input: a visitor's text naming a code must not choose the meaning.
        let email = r#"[{"errorCode":"INVALID_EMAIL_ADDRESS","message":"UNABLE_TO_LOCK_ROW INVALID_FIELD"}]"#;
        check(400, email, Some(Meaning::Content("sink_rejected")));
        check(400, "not json", None);
        check(400, r#"{"errorCode":"UNABLE_TO_LOCK_ROW"}"#, None);
        check(400, r#"[{"errorCode":"SOMETHING_NEW"}]"#, None);
    }

    #[test]
    fn a_refusal_may_be_the_phone_when_it_names_it_or_names_no_field_of_the_org_s_setup() {
        let refusal = |code: &str, fields: &[&str]| Refusal {
            code: code.to_owned(),
            fields: fields.iter().map(|f| (*f).to_owned()).collect(),
        };
        for (errors, phone, unwritable) in [
            (vec![refusal("FIELD_CUSTOM_VALIDATION_EXCEPTION", &[])], true, false),
            (vec![refusal("FIELD_CUSTOM_VALIDATION_EXCEPTION", &["Phone"])], true, false),
            (vec![refusal("INVALID_FIELD", &[])], true, true),
            (vec![refusal("INVALID_FIELD_FOR_INSERT_UPDATE", &["phone"])], true, true),
            (vec![refusal("SOMETHING_NEW", &["PHONE"])], true, false),
            (vec![refusal("FIELD_CUSTOM_VALIDATION_EXCEPTION", &["Company"])], false, false),
            (vec![refusal("INVALID_FIELD_FOR_INSERT_UPDATE", &["Company"])], false, false),
            (vec![refusal("REQUIRED_FIELD_MISSING", &[])], false, false),
            (vec![refusal("UNABLE_TO_LOCK_ROW", &[]), refusal("INVALID_FIELD", &[])], true, true),
            (vec![], false, false),
        ] {
            assert_eq!((may_be_the_phone(&errors), phone_not_writable(&errors)), (phone, unwritable), "{errors:?}");
        }
    }
}
