//! Salesforce: create a Lead holding the submission ID in a Unique external ID field, once.
//!
//! `POST /services/data/vNN.N/composite/sobjects` (sObject Collections, [`batch`]), one call for
//! a stream batch and for a single lead alike; the external ID field's uniqueness (checked at
//! start) refuses a second Lead for a submission (`DUPLICATE_VALUE`), and one query then finds
//! the first ([`lookup`]): a replay (a redrive, a stream retry after the lead was written,
//! reconcile) writes nothing, so a rep's edits stay and the org's assignment rules run on the
//! create only.
//!
//! Access is the OAuth 2.0 client credentials flow of a connected app: `POST
//! <My Domain>/services/oauth2/token` with the client ID and secret gives an access token (and
//! the instance URL to call). Tokens end with the session (two hours by default) and the answer
//! does not say when, so the token is cached and fetched again once when a call answers 401
//! `INVALID_SESSION_ID`; a 401 again after that is retried as `sink_unauthorized`.
//!
//! Creates carry `Sforce-Auto-Assign` when the lead mapping sets the org's assignment rules
//! (`TRUE`, `FALSE` or a rule's ID); without it Salesforce runs the active rule. Every create
//! carries `Sforce-Duplicate-Rule-Header: allowSave=true`: a duplicate rule whose
//! action is Alert (the standard Lead rule's) would otherwise refuse a person's second
//! submission through the API (`DUPLICATES_DETECTED`); rules whose action is Block still block.
//!
//! With a lead mapping (`LEAD_MAPPING`, [`catalogue`], [`mapped`]), the answers it names go to
//! typed Lead fields, checked against the Lead's describe at start (or before the first create
//! when the start could not read it, and again after a call refused for a field's type or a
//! field gone); a value that does not fit, or that Salesforce refuses naming the field, costs
//! that field only and stays in `Description`.
//!
//! Refusals are read by their error codes ([`refusals`]): passing conditions (row locks, two
//! creates of one ID at once, the org's request limit) and the org's setup (required fields,
//! validation rules, field-level security, Block duplicate rules, automation) are retried,
//! never `FAILED`, once the query has found no Lead for the submission (a replay meets the
//! org's rules before the uniqueness check); only the lead's own content fails it. An email
//! Salesforce refuses costs the `Email` field, never the lead ([`lead::email_accepted`], then
//! one more try without it); a phone the org's field setup refuses costs `Phone`
//! ([`refusals::may_be_the_phone`]).
//! 415 (the request's format) is retried as `sink_unsupported_media_type`; 503 with its
//! `Retry-After`.

use shared::field_map::FieldMapping;
use shared::lead::Lead;

use super::contract::{BatchItem, CheckError, LeadSink, SinkError, RECEIPT_UPDATE_BUDGET};

mod api;
pub mod batch;
pub mod catalogue;
pub mod lead;
pub mod limits;
pub mod lookup;
pub mod mapped;
pub mod refusals;
pub mod size;

pub use api::{classify_answer, Login, Salesforce, AUTO_ASSIGN_HEADER, DUPLICATE_RULE_HEADER};
pub use lead::{external_id, fields, NOT_PROVIDED};

impl Salesforce {
    /// Checks, once at start, that the credentials work, the external ID field exists on Lead
    /// and is an External ID, and the lead mapping's fields exist and take what it maps to them
    /// (`GET .../sobjects/Lead/describe`).
    pub async fn check_configuration(&self) -> Result<(), CheckError> {
        let fields = self.describe().await?;
        let field = self.field();
        check_field(field, catalogue::find(&fields, field))?;
        self.phone.store(writable(&fields, "Phone"), std::sync::atomic::Ordering::Relaxed);
        let typed = catalogue::resolve(&self.mapping, &fields, field).map_err(CheckError::Wrong)?;
        *self.typed.lock().unwrap_or_else(|e| e.into_inner()) = Some(std::sync::Arc::new(typed));
        // Last: the worker starts all the same, and says what to check.
        check_required(&fields, field, &self.mapping)
    }

    /// Each mapped field with its type and what it takes (`stream-worker mapping check`), or
    /// what is wrong.
    ///
    /// The whole start-up check runs first: what the worker would refuse to start with is an
    /// error, what it would only warn of is a first line (`note: ...`).
    pub async fn mapping_lines(&self) -> Result<Vec<String>, CheckError> {
        let mut lines = Vec::new();
        match self.check_configuration().await {
            Ok(()) => {}
            Err(CheckError::Doubtful(text)) => lines.push(format!("note: {text}")),
            Err(problem) => return Err(problem),
        }
        if self.mapping.is_empty() {
            lines.push(String::from("no LEAD_MAPPING: every profile gets the default fields (docs/mapping.md)"));
            return Ok(lines);
        }
        let fields = self.describe().await?;
        let typed = catalogue::resolve(&self.mapping, &fields, self.field()).map_err(CheckError::Wrong)?;
        lines.extend(catalogue::describe_lines(&typed, &fields));
        Ok(lines)
    }

    /// What the sink sends for `lead` (of the receipt `receipt_key`), without sending it: the
    /// collection record, and the mapped fields it leaves out and why.
    pub async fn preview(&self, lead: &Lead, receipt_key: &str) -> Result<serde_json::Value, CheckError> {
        let typed = self.typed().await.map_err(|e| match e {
            SinkError::Retryable { reason: "sink_mapping_refused", .. } => CheckError::Wrong(String::from(
                "LEAD_MAPPING: refused by the org's describe (run `stream-worker mapping check`)",
            )),
            other => CheckError::Unreachable(format!("Salesforce could not be reached ({other:?})")),
        })?;
        let item = [super::contract::BatchItem { lead, receipt_key }];
        let mapped = super::typed_map::mapped(&item, typed.as_deref()).pop().unwrap_or_default();
        let record = batch::record(lead, self.field(), self.phone_writable(), &mapped);
        Ok(serde_json::json!({"record": record, "fieldsLeftOut": super::typed_map::left_out(&mapped.left_out)}))
    }

    /// The mapping typed by the org's describe: read once (by the start-up check, or here when
    /// that could not reach the org); `None` without a mapping.
    pub(super) async fn typed(&self) -> Result<Option<std::sync::Arc<super::typed_map::Typed>>, SinkError> {
        if self.mapping.is_empty() {
            return Ok(None);
        }
        if let Some(typed) = self.typed.lock().unwrap_or_else(|e| e.into_inner()).clone() {
            return Ok(Some(typed));
        }
        let fields = self.describe().await.map_err(|e| SinkError::Retryable {
            reason: if matches!(e, CheckError::Unreachable(_)) { "sink_unavailable" } else { "sink_config_invalid" },
            retry_after: None,
        })?;
        // The describe read again (the org's fields changed) says again whether Phone is written.
        self.phone.store(writable(&fields, "Phone"), std::sync::atomic::Ordering::Relaxed);
        let typed = catalogue::resolve(&self.mapping, &fields, self.field())
            .map_err(|_| SinkError::Retryable { reason: "sink_mapping_refused", retry_after: None })?;
        let typed = std::sync::Arc::new(typed);
        *self.typed.lock().unwrap_or_else(|e| e.into_inner()) = Some(typed.clone());
        Ok(Some(typed))
    }

    /// The Lead's fields as the integration user sees them (`GET .../sobjects/Lead/describe`).
    /// A session that ended (401) gets one new token, as a create's does: the describe read
    /// before a create may come hours after the token was fetched.
    async fn describe(&self) -> Result<Vec<serde_json::Value>, CheckError> {
        let describe = self.path.rsplit_once('/').map_or(self.path.as_str(), |(describe, _)| describe);
        let mut fresh = false;
        let response = loop {
            let session = self.session(fresh).await.map_err(|e| match e {
                SinkError::Retryable { reason: "sink_login_refused", .. } => CheckError::Wrong(String::from(
                    "SALESFORCE_CLIENT_ID / SALESFORCE_CLIENT_SECRET: Salesforce refused the client credentials",
                )),
                other => CheckError::Unreachable(format!("Salesforce could not be reached ({other:?})")),
            })?;
            let url = format!("{}{describe}/describe", session.instance_url);
            let response = self.client.get(url).bearer_auth(&session.token).send().await;
            let response =
                response.map_err(|e| CheckError::Unreachable(format!("Salesforce could not be reached: {e}")))?;
            if response.status().as_u16() == 401 && !fresh {
                fresh = true;
                continue;
            }
            break response;
        };
        if response.status().as_u16() == 410 {
            return Err(CheckError::Wrong(String::from(
                "SALESFORCE_API_VERSION: Salesforce has retired this API version (410); choose a current one",
            )));
        }
        if response.status().as_u16() != 200 {
            return Err(CheckError::Unreachable(format!(
                "Salesforce answered {} to describing Lead",
                response.status()
            )));
        }
        let description: serde_json::Value = response.json().await.unwrap_or(serde_json::Value::Null);
        Ok(description["fields"].as_array().cloned().unwrap_or_default())
    }
}

/// Whether the describe's `fields` show `name` as a field the integration user may set on a new
/// Lead and on an existing one (`createable` and `updateable`). Field-level security hides a
/// field from the describe of a user who may not see it.
pub fn writable(fields: &[serde_json::Value], name: &str) -> bool {
    let yes = |f: &serde_json::Value, property: &str| f[property] == serde_json::Value::Bool(true);
    // Field API names compare without case, as Salesforce does.
    let named = |f: &serde_json::Value| f["name"].as_str().is_some_and(|n| n.eq_ignore_ascii_case(name));
    fields.iter().any(|f| named(f) && yes(f, "createable") && yes(f, "updateable"))
}

/// The Lead fields the sink fills on every new Lead (the company as `[not provided]` when the
/// form has none), besides the external ID field.
const ALWAYS_FILLED: [&str; 2] = ["LastName", "Company"];

/// Names the Lead fields the org requires on create and the sink does not fill: createable,
/// not nillable and not defaulted on create (Object Reference, "Required Fields": the org fills
/// the others itself, such as the owner and the status). Unless a before-save flow or trigger
/// of the org's fills one (Salesforce checks required fields after those run), every Lead is
/// refused `REQUIRED_FIELD_MISSING` and retried as `sink_org_required_field`: the worker
/// starts, and says so ([`CheckError::Doubtful`]).
///
/// A field the mapping fills with a constant for every sender profile counts as filled; one it
/// fills from an answer does not (the answer may be blank or not fit), nor one a constant fills
/// for some profiles only.
pub fn check_required(
    fields: &[serde_json::Value],
    external_id_field: &str,
    mapping: &FieldMapping,
) -> Result<(), CheckError> {
    let is = |f: &serde_json::Value, property: &str, value: bool| f[property] == serde_json::Value::Bool(value);
    // A constant fills the field only when every profile has it: the Leads of a profile the
    // mapping does not name get none.
    let constant = |name: &str| {
        mapping.profiles.len() == shared::profile::Profile::ALL.len()
            && mapping.profiles.iter().all(|(_, map)| map.constants.iter().any(|c| c.field.eq_ignore_ascii_case(name)))
    };
    let filled = |name: &str| {
        name.eq_ignore_ascii_case(external_id_field)
            || ALWAYS_FILLED.iter().any(|f| f.eq_ignore_ascii_case(name))
            || constant(name)
    };
    let missing: Vec<String> = fields
        .iter()
        .filter(|f| is(f, "createable", true) && is(f, "nillable", false) && is(f, "defaultedOnCreate", false))
        .filter_map(|f| f["name"].as_str())
        .filter(|name| !filled(name))
        .map(|name| format!("{name:?}"))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(CheckError::Doubtful(format!(
        "Salesforce's Lead: the org requires {} on every new Lead, which the sink does not fill (it writes FirstName, LastName, Email, Company, Phone, Description, the external ID field and LEAD_MAPPING's fields): unless a flow or trigger of the org's fills it, every Lead is refused (sink_org_required_field); give each a default value, a constant in LEAD_MAPPING, or untick Required in its definition (Setup, Object Manager, Lead, Fields & Relationships)",
        missing.join(", ")
    )))
}

/// The external ID field's description, judged: it must exist on Lead, be an External ID, and
/// be Unique and case sensitive. A field that is not unique lets two Leads hold one submission
/// (every replay would create another); one that is unique but case insensitive (Salesforce's
/// default once Unique is ticked) lets only one of `abcDEF` and `ABCdef` have a Lead.
pub fn check_field(field: &str, description: Option<&serde_json::Value>) -> Result<(), CheckError> {
    let wrong =
        |what: &str| Err(CheckError::Wrong(format!("SALESFORCE_EXTERNAL_ID_FIELD: the Lead field {field:?} {what}")));
    let Some(f) = description else {
        return Err(CheckError::Wrong(format!("SALESFORCE_EXTERNAL_ID_FIELD: Lead has no field {field:?}")));
    };
    let yes = |property: &str| f[property] == serde_json::Value::Bool(true);
    if !yes("externalId") {
        return wrong("is not an External ID (tick External ID in its definition)");
    }
    if !yes("unique") {
        return wrong("is not Unique (tick Unique in its definition)");
    }
    if !yes("caseSensitive") {
        return wrong(
            "is case insensitive, so IDs differing only in case would share a Lead (choose \"Treat \"ABC\" and \"abc\" as different values (case sensitive)\" under Unique)",
        );
    }
    Ok(())
}

impl LeadSink for Salesforce {
    fn batch_size(&self) -> usize {
        self.size.current()
    }

    async fn upsert_batch<'a>(
        &'a self,
        items: &'a [BatchItem<'a>],
        _deadline: Option<tokio::time::Instant>,
    ) -> Vec<Result<(), SinkError>> {
        self.upsert_collection(items).await
    }

    fn record_budget(&self) -> std::time::Duration {
        // The describe when the start-up check could not read it (once per process), a token,
        // the create, once more both after an expired session, the create twice more without
        // fields Salesforce refused (an email, a phone, mapped fields), and the query when it is
        // refused as a duplicate: eight calls.
        8 * super::http::TIMEOUT + RECEIPT_UPDATE_BUDGET
    }

    async fn upsert(&self, lead: &Lead, receipt_key: &str) -> Result<(), SinkError> {
        // A collection of one: the same call, answer and refusals as a batch's.
        let unexpected = Err(SinkError::Retryable { reason: "sink_unexpected_answer", retry_after: None });
        self.upsert_collection(&[BatchItem { lead, receipt_key }]).await.pop().unwrap_or(unexpected)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_field_the_org_requires_and_the_sink_does_not_fill_is_named_at_start() {
        let field = |name: &str, createable: bool, nillable: bool, defaulted: bool| json!({"name": name, "createable": createable, "nillable": nillable, "defaultedOnCreate": defaulted});
        let org = vec![
            field("Id", false, false, true),
            field("LastName", true, false, false),
            field("company", true, false, false),
            field("sub__C", true, false, false),
            field("OwnerId", true, false, true),
            field("Status", true, false, true),
            field("Email", true, true, false),
            field("Formula__c", false, false, false),
            json!({"name": "Bare__c"}),
        ];
        let none = FieldMapping::default();
        assert_eq!(check_required(&org, "Sub__c", &none), Ok(()));
        let mut required = org.clone();
        required.push(field("Region__c", true, false, false));
        required.push(field("Tier__c", true, false, false));
        let Err(CheckError::Doubtful(text)) = check_required(&required, "Sub__c", &none) else {
            panic!("must name them")
        };
        assert!(text.contains("requires \"Region__c\", \"Tier__c\" on every new Lead"), "{text}");
        assert!(!text.contains("OwnerId") && !text.contains("Formula__c"), "{text}");
        // A constant of every profile's fills one; an answer mapped to the other may be blank.
        let every: String = shared::profile::Profile::ALL
            .iter()
            .map(|p| format!("[{0}.constants]\nregion__c = \"EU\"\n[{0}.fields]\ntier = \"Tier__c\"\n", p.name()))
            .collect();
        let mapping = crate::mapping::parse(&every, "m").unwrap();
        let Err(CheckError::Doubtful(text)) = check_required(&required, "Sub__c", &mapping) else {
            panic!("must name it")
        };
        assert!(text.contains("requires \"Tier__c\" on every new Lead"), "{text}");
        // A constant of one profile's leaves the others' Leads without it.
        let tally = crate::mapping::parse("[tally.constants]\nregion__c = \"EU\"\n", "m").unwrap();
        let Err(CheckError::Doubtful(text)) = check_required(&required, "Sub__c", &tally) else {
            panic!("must name them")
        };
        assert!(text.contains("requires \"Region__c\", \"Tier__c\" on every new Lead"), "{text}");
    }

    #[test]
    fn a_salesforce_record_may_take_eight_calls_and_the_store_update() {
        let login = Login {
            domain_url: "https://x.my.salesforce.com".into(),
            client_id: "i".into(),
            client_secret: "s".into(),
        };
        let sink = Salesforce::new(reqwest::Client::new(), login, "62.0", "F__c");
        // The describe, a token, the create, both again after an expired session, the create
        // twice more without refused fields, and the query of a duplicate; docs/sinks.md: 91 s.
        assert_eq!(sink.record_budget(), std::time::Duration::from_secs(91));
        assert_eq!(sink.field(), "F__c", "the field its refusals are read against");
    }

    #[test]
    fn limits_formats_sessions_and_outages_are_retried_each_with_its_reason() {
        let retry = |reason, retry_after| Err(SinkError::Retryable { reason, retry_after });
        let limit = r#"[{"message":"TotalRequests Limit exceeded.","errorCode":"REQUEST_LIMIT_EXCEEDED"}]"#;
        assert_eq!(classify_answer(403, None, limit, "F__c"), retry("sink_rate_limited", None));
        // Another 403 is the user's permissions: the credentials' configuration.
        let denied = r#"[{"errorCode":"INSUFFICIENT_ACCESS"}]"#;
        assert_eq!(classify_answer(403, None, denied, "F__c"), retry("sink_unauthorized", None));
        let media = r#"[{"errorCode":"UNSUPPORTED_MEDIA_TYPE"}]"#;
        assert_eq!(classify_answer(415, None, media, "F__c"), retry("sink_unsupported_media_type", None));
        let session = r#"[{"message":"Session expired or invalid","errorCode":"INVALID_SESSION_ID"}]"#;
        assert_eq!(classify_answer(401, None, session, "F__c"), retry("sink_unauthorized", None));
        let down = r#"[{"errorCode":"SERVER_UNAVAILABLE"}]"#;
        let three = Some(std::time::Duration::from_secs(3));
        assert_eq!(classify_answer(503, Some("3"), down, "F__c"), retry("sink_unavailable", three));
        assert_eq!(classify_answer(429, None, "", "F__c"), retry("sink_unavailable", None));
        // The lead's own content stays FAILED; a code without a meaning goes by its status.
        let email = r#"[{"errorCode":"INVALID_EMAIL_ADDRESS"}]"#;
        assert_eq!(classify_answer(400, None, email, "F__c"), Err(SinkError::Permanent { reason: "sink_rejected" }));
        let unknown = r#"[{"errorCode":"SOMETHING_NEW"}]"#;
        assert_eq!(classify_answer(400, None, unknown, "F__c"), Err(SinkError::Permanent { reason: "sink_rejected" }));
        // The org's setup and passing conditions are retried; a converted Lead is done.
        let locked = r#"[{"errorCode":"UNABLE_TO_LOCK_ROW"}]"#;
        assert_eq!(classify_answer(400, None, locked, "F__c"), retry("sink_row_locked", None));
        let rule = r#"[{"errorCode":"FIELD_CUSTOM_VALIDATION_EXCEPTION","fields":[]}]"#;
        assert_eq!(classify_answer(400, None, rule, "F__c"), retry("sink_org_validation_rule", None));
        let converted = r#"[{"errorCode":"CANNOT_UPDATE_CONVERTED_LEAD","fields":[]}]"#;
        assert_eq!(classify_answer(400, None, converted, "F__c"), Ok(()));
    }

    fn check(description: serde_json::Value, expected: Result<(), &str>) {
        let result = check_field("Sub__c", Some(&description));
        match (result, expected) {
            (Ok(()), Ok(())) => {}
            (Err(CheckError::Wrong(text)), Err(part)) => {
                assert!(text.starts_with("SALESFORCE_EXTERNAL_ID_FIELD: ") && text.contains(part), "{text}")
            }
            (other, expected) => panic!("{description}: {other:?}, expected {expected:?}"),
        }
    }

    #[test]
    fn the_external_id_field_must_be_an_external_id_unique_and_case_sensitive() {
        check(json!({"name": "Sub__c", "externalId": true, "unique": true, "caseSensitive": true}), Ok(()));
        check(
            json!({"name": "Sub__c", "externalId": false, "unique": true, "caseSensitive": true}),
            Err("External ID"),
        );
        check(json!({"name": "Sub__c", "externalId": true, "unique": false, "caseSensitive": true}), Err("not Unique"));
        check(
            json!({"name": "Sub__c", "externalId": true, "unique": true, "caseSensitive": false}),
            Err("(case sensitive)"),
        );
        check(json!({"name": "Sub__c", "externalId": true, "unique": true}), Err("case insensitive"));
        assert_eq!(
            check_field("Sub__c", None),
            Err(CheckError::Wrong("SALESFORCE_EXTERNAL_ID_FIELD: Lead has no field \"Sub__c\"".into()))
        );
    }

    #[test]
    fn phone_is_written_only_when_the_describe_shows_it_createable_and_updateable() {
        let field = |createable: bool, updateable: bool| json!({"name": "Phone", "createable": createable, "updateable": updateable});
        assert!(writable(&[json!({"name": "Email"}), field(true, true)], "Phone"));
        assert!(writable(&[field(true, true)], "PHONE"), "names compare without case");
        for (c, u) in [(true, false), (false, true), (false, false)] {
            assert!(!writable(&[field(c, u)], "Phone"), "createable {c}, updateable {u}");
        }
        assert!(!writable(&[json!({"name": "Email", "createable": true, "updateable": true})], "Phone"), "hidden");
        // Until the check has seen Phone writable, the sink does not write it.
        let login = Login { domain_url: String::new(), client_id: String::new(), client_secret: String::new() };
        let sink = Salesforce::new(reqwest::Client::new(), login, "60.0", "F__c");
        assert!(!sink.phone_writable());
        sink.phone.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(sink.phone_writable());
        // A validation rule keeps it; field-level security changed since the start stops it.
        let refusal = |code: &str| vec![refusals::Refusal { code: code.to_owned(), fields: vec![] }];
        sink.note_phone_refused(&refusal("FIELD_CUSTOM_VALIDATION_EXCEPTION"));
        assert!(sink.phone_writable());
        sink.note_phone_refused(&refusal("INVALID_FIELD"));
        assert!(!sink.phone_writable());
    }
}
