//! Salesforce's Lead create and upsert by an external ID field, and the query that finds a Lead
//! by it, as strict as the org it stands for.
//!
//! Behind the OAuth 2.0 client credentials flow: tokens come from `/services/oauth2/token`, and
//! expire on demand (`expire_tokens`), as sessions do after their timeout, or after
//! `calls_per_session` calls, as a session revoked mid-run (Session Management, the app's
//! tokens revoked), answering 401 `INVALID_SESSION_ID`. Field API names (in the body and the external ID field in the path)
//! compare without case, as Salesforce's do. What the org enforces, each from Salesforce's
//! documentation (developer.salesforce.com REST API "Status Codes and Error Responses",
//! "Insert or Update (Upsert) a Record Using an External ID", "Duplicate Rule Header"; Salesforce
//! Help "Email Address Format Technical Standards Validation", "Standard Lead Duplicate Rule";
//! Object Reference "Custom Fields"):
//! - lengths in UTF-16 code units (`STRING_TOO_LONG`), `LastName` and `Company` required;
//! - field-level security (`hidden_fields`): a field the integration user may not see is not in
//!   its describe and is no column for it (`INVALID_FIELD`; a collection naming it is refused
//!   whole);
//! - the email format (`INVALID_EMAIL_ADDRESS`): one `@`, a local part not starting with `.`,
//!   a domain of letters, digits, `-` and single dots, ASCII only (no EAI); stored lowercase;
//! - the standard Lead duplicate rule (`duplicate_rule`, on by default with its Alert action):
//!   another Lead with the same email refuses the save with `DUPLICATES_DETECTED` unless the
//!   request says `Sforce-Duplicate-Rule-Header: allowSave=true`; a Block rule refuses always;
//! - an external ID field that is Unique and case sensitive by default, or case insensitive
//!   (`case_insensitive_ids`, Salesforce's default once Unique is ticked): then values that
//!   differ only in case match one Lead, as Salesforce's upsert matches them;
//! - a collection that runs long (`slow_over`: a client gives up while Salesforce commits; the
//!   REST API's own limit is 10 minutes, "Limits" in the REST API Developer Guide);
//! - a lock on one record of a collection (`failing_once`: the SaveResult's `UNABLE_TO_LOCK_ROW`,
//!   SOAP API Developer Guide "StatusCode", "Record Locking"), the record saved when sent again;
//! - row locks: an upsert holds its row for `hold`; another upsert of the same ID meanwhile is
//!   refused, `DUPLICATE_VALUE` when both would insert and `UNABLE_TO_LOCK_ROW` when the Lead
//!   exists; `locked` rows are held by another transaction;
//! - a validation rule on `Phone` (`phone_refusal`), and one shown at a field (`field_rule`);
//! - custom fields the org made Required (`required_fields`): `nillable: false` and
//!   `defaultedOnCreate: false` in the describe, `REQUIRED_FIELD_MISSING` on a create without;
//! - the org's setup (`org_refusal`: `REQUIRED_FIELD_MISSING`, `FIELD_CUSTOM_VALIDATION_EXCEPTION`,
//!   `INVALID_FIELD_FOR_INSERT_UPDATE`, ... on every upsert), converted Leads
//!   (`CANNOT_UPDATE_CONVERTED_LEAD`), several Leads for one ID (300);
//! - the external ID field Unique: a create (`POST .../composite/sobjects`, "Create Multiple
//!   Records with Fewer Round-Trips") of a value a Lead holds is refused `DUPLICATE_VALUE`,
//!   naming the field in its message only (`fields` empty, as Salesforce answers);
//! - SOQL (`GET .../query?q=SELECT <field> FROM Lead WHERE <field> IN (...)`, the one form the
//!   sink sends; anything else is `MALFORMED_QUERY`, as is a WHERE clause over 4,000
//!   characters, SOQL's limit for strings in WHERE clauses): string literals with `\` escapes,
//!   the external ID compared as the field compares it (with case, unless
//!   `case_insensitive_ids`);
//! - text values trimmed of leading and trailing white space, as Salesforce stores them (the
//!   external ID's too);
//! - the org's other Lead fields, typed (`org_fields`, [`OrgField`]): in the describe, and
//!   each value checked as a save checks it (a restricted picklist's, a number's, a date's);
//! - assignment rules (`assignments`): each save runs them unless the request says
//!   `Sforce-Auto-Assign: FALSE` (Salesforce applies them when the header is absent or TRUE;
//!   an assignment rule's ID runs that rule: `assignment_rules`).
//!
//! `fail_next` answers the next API calls (never the token endpoint) with Salesforce's bodies:
//! 401 `INVALID_SESSION_ID` (a count of 2 outlasts the one new token a client fetches), 403
//! `REQUEST_LIMIT_EXCEEDED` (Salesforce's request limit answer; it does not use 429), 415, 503
//! `SERVER_UNAVAILABLE` (with `Retry-After` when set); any other status, 429 included, gets a
//! generic error.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{json, Value};

use super::salesforce_fields::OrgField;
use crate::stub_http::{form_decode, percent_decode, FailNext, StubRequest, StubResponse, StubServer};

pub struct SalesforceStandIn {
    pub server: StubServer,
    pub state: Arc<Mutex<SalesforceState>>,
    /// The connected app's client ID and secret, the API version and the external ID field.
    login: [String; 4],
}

/// The org's duplicate rule on Lead, matching another Lead's email.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DuplicateRule {
    /// No active rule.
    Off,
    /// The standard Lead rule's action: the save is refused unless the request allows it.
    #[default]
    Alert,
    /// A rule whose action is Block: the save is refused, whatever the request says.
    Block,
}

#[derive(Default)]
pub struct SalesforceState {
    /// Leads by external ID (percent-decoded, as Salesforce stores the value).
    pub leads: BTreeMap<String, Value>,
    /// External IDs that match more than one Lead (answered with 300).
    pub ambiguous: BTreeSet<String>,
    /// Access tokens currently valid.
    pub tokens: BTreeSet<String>,
    /// Tokens issued so far.
    pub issued: usize,
    /// Each session ends after this many API calls it served (revoked mid-run).
    pub calls_per_session: Option<usize>,
    /// API calls each token served.
    session_calls: BTreeMap<String, usize>,
    /// Whether the org's external ID field is marked External ID (it always exists).
    pub field_not_external: bool,
    /// Whether the field lacks the Unique attribute.
    pub field_not_unique: bool,
    /// Unique, but "Treat "ABC" and "abc" as duplicate values (case insensitive)".
    pub case_insensitive_ids: bool,
    /// The org's duplicate rule on Lead email.
    pub duplicate_rule: DuplicateRule,
    /// How long an upsert holds its row (others of the same ID meanwhile are refused).
    pub hold: Duration,
    /// Rows another transaction holds: `UNABLE_TO_LOCK_ROW` while they are here.
    pub locked: BTreeSet<String>,
    /// Every upsert is refused with this code, as the org's setup would refuse it.
    pub org_refusal: Option<&'static str>,
    /// A collection of more records than `.0` takes `.1` before it answers (the org's Lead
    /// automation running long), and saves its records all the same.
    pub slow_over: Option<(usize, Duration)>,
    /// A collection record of these external IDs is refused once each with
    /// `UNABLE_TO_LOCK_ROW` (another transaction held a record it touches), then saved.
    pub failing_once: BTreeSet<String>,
    /// Every upsert that sets `Phone` is refused with this code and no field named (a
    /// validation rule on the phone's format whose error shows at the top of the page):
    /// `FIELD_CUSTOM_VALIDATION_EXCEPTION`.
    pub phone_refusal: Option<&'static str>,
    /// Lead fields field-level security hides from the integration user: left out of its
    /// describe, and `INVALID_FIELD` when an upsert names one (no such column, for that user).
    pub hidden_fields: BTreeSet<&'static str>,
    /// Custom Lead fields the org made Required, with no default: in the describe as
    /// `nillable: false`, `defaultedOnCreate: false`, and a new Lead without one is refused
    /// `REQUIRED_FIELD_MISSING` naming it.
    pub required_fields: BTreeSet<&'static str>,
    /// The org's other Lead fields, typed ([`OrgField`]): in the describe, and each value a
    /// save gives one checked as Salesforce checks it.
    pub org_fields: Vec<OrgField>,
    /// A validation rule whose error shows at a field: a save whose value of that field holds
    /// this character is refused `FIELD_CUSTOM_VALIDATION_EXCEPTION` naming the field.
    pub field_rule: Option<(&'static str, char)>,
    /// Addresses the org refuses beyond the format (`INVALID_EMAIL_ADDRESS`), lowercase.
    pub refused_emails: BTreeSet<String>,
    /// Leads that were converted: an update is `CANNOT_UPDATE_CONVERTED_LEAD`.
    pub converted: BTreeSet<String>,
    /// Upserts answered so far (refused ones included), with the duplicate rule header.
    pub upserts: Vec<Option<String>>,
    /// Answer the next API calls (not token requests) with a failure.
    pub fail_next: FailNext,
    /// The org's daily API allocation (`Sforce-Limit-Info: api-usage=used/limit` on every
    /// answer); a call past it is refused 403 `REQUEST_LIMIT_EXCEEDED`.
    pub api_limit: u64,
    /// API calls counted against the allocation so far.
    pub api_used: u64,
    /// sObject Collections calls served, and the records they carried.
    pub collections: Vec<usize>,
    /// SOQL queries served.
    pub queries: usize,
    /// Every query is refused 400 with this code (`QUERY_TIMEOUT`, say).
    pub query_refusal: Option<&'static str>,
    /// How many times the org's assignment rules ran on each Lead (by external ID).
    pub assignments: BTreeMap<String, usize>,
    /// The assignment rule a save named by its ID (`Sforce-Auto-Assign: 01Q...`), by Lead.
    pub assignment_rules: BTreeMap<String, String>,
    /// Upserts in progress, by the ID as the field compares it.
    in_flight: BTreeSet<String>,
}

impl SalesforceState {
    /// `id` as the external ID field compares it.
    fn key(&self, id: &str) -> String {
        if self.case_insensitive_ids {
            id.to_lowercase()
        } else {
            id.to_owned()
        }
    }

    /// The stored ID of the Lead `id` matches.
    fn matching(&self, id: &str) -> Option<String> {
        let key = self.key(id);
        self.leads.keys().find(|stored| self.key(stored) == key).cloned()
    }
}

/// Salesforce's answer with `status` for an API call it did not serve.
fn salesforce_failure(status: u16, retry_after: Option<String>) -> StubResponse {
    let (code, message) = match status {
        401 => ("INVALID_SESSION_ID", "Session expired or invalid"),
        403 => ("REQUEST_LIMIT_EXCEEDED", "TotalRequests Limit exceeded."),
        415 => ("UNSUPPORTED_MEDIA_TYPE", "Content type not supported"),
        503 => ("SERVER_UNAVAILABLE", "Server temporarily unavailable"),
        _ => ("UNKNOWN_EXCEPTION", "An unexpected error occurred"),
    };
    let response = StubResponse::json(status, json!([{"message": message, "errorCode": code}]));
    match retry_after {
        Some(seconds) => response.with_header("Retry-After", &seconds),
        None => response,
    }
}

/// A 400 refusal with Salesforce's error array.
fn refusal(code: &str, message: &str, fields: &[&str]) -> StubResponse {
    StubResponse::json(400, json!([{"message": message, "errorCode": code, "fields": fields}]))
}

/// The Lead fields the stand-in's org has, with their lengths in UTF-16 code units (anything
/// else is `INVALID_FIELD`).
const LEAD_FIELDS: [(&str, usize); 6] =
    [("FirstName", 40), ("LastName", 80), ("Email", 80), ("Company", 255), ("Phone", 40), ("Description", 32_000)];

/// Whether the org takes `email` (Salesforce Help 000384328 and 000001145), without EAI.
fn email_valid(email: &str) -> bool {
    let mut parts = email.split('@');
    let (Some(local), Some(domain), None) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let local_ok = !local.is_empty()
        && !local.starts_with('.')
        && local.bytes().all(|b| b.is_ascii_alphanumeric() || b".!#$%&'*/=?^_+-`{|}~".contains(&b));
    let domain_ok = domain.contains('.')
        && domain.split('.').all(|label| {
            !label.is_empty()
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
    local_ok && domain_ok
}

impl SalesforceStandIn {
    pub fn start(client_id: &str, client_secret: &str, version: &str, field: &str) -> SalesforceStandIn {
        let state = Arc::new(Mutex::new(SalesforceState { api_limit: 150_000, ..SalesforceState::default() }));
        let prefix = format!("/services/data/v{version}/sobjects/Lead/{field}/");
        let (client_id, client_secret, shared) = (client_id.to_owned(), client_secret.to_owned(), Arc::clone(&state));
        let (client_id_for_config, client_secret_for_config) = (client_id.clone(), client_secret.clone());
        let (version_for_config, field_for_config) = (version.to_owned(), field.to_owned());
        let (version, field) = (version.to_owned(), field.to_owned());
        let own_url: Arc<Mutex<String>> = Arc::default();
        let url = Arc::clone(&own_url);
        let server = StubServer::start(move |request: StubRequest| {
            let mut state = shared.lock().unwrap();
            if request.path == "/services/oauth2/token" {
                let form: BTreeMap<String, String> = form_decode(&request.body);
                let is_form = request.header("content-type") == Some("application/x-www-form-urlencoded");
                if request.method != "POST"
                    || !is_form
                    || form.get("grant_type").map(String::as_str) != Some("client_credentials")
                {
                    return StubResponse::json(400, json!({"error": "unsupported_grant_type"}));
                }
                if form.get("client_id") != Some(&client_id) || form.get("client_secret") != Some(&client_secret) {
                    return StubResponse::json(
                        400,
                        json!({"error": "invalid_client", "error_description": "invalid client credentials"}),
                    );
                }
                state.issued += 1;
                let token = format!("00D!token-{}", state.issued);
                state.tokens.insert(token.clone());
                return StubResponse::json(
                    200,
                    json!({
                        "access_token": token, "instance_url": url.lock().unwrap().clone(), "token_type": "Bearer",
                        "issued_at": "1796019713000", "signature": "c2ln", "id": "https://login.salesforce.com/id/00D/005"
                    }),
                );
            }
            let response = serve_api(&shared, state, &request, &version, &field, &prefix);
            let state = shared.lock().unwrap();
            // Salesforce's form: entries separated by `; `, the org's usage among them.
            let usage = format!(
                "api-usage={}/{}; per-app-api-usage={}/{}(appName=static-forms-receiver)",
                state.api_used, state.api_limit, state.api_used, state.api_limit
            );
            response.with_header("Sforce-Limit-Info", &usage)
        });
        *own_url.lock().unwrap() = server.url();
        let login = [client_id_for_config, client_secret_for_config, version_for_config, field_for_config];
        SalesforceStandIn { server, state, login }
    }

    /// The Salesforce sink's configuration for this org (its connected app, API version and
    /// external ID field).
    pub fn sink_config(&self) -> stream_worker::config::SinkConfig {
        let [client_id, client_secret, api_version, external_id_field] = self.login.clone();
        stream_worker::config::SinkConfig::Salesforce {
            instance_url: self.server.url(),
            client_id,
            client_secret,
            api_version,
            external_id_field,
        }
    }

    /// Ends every session, as the org's session timeout does.
    pub fn expire_tokens(&self) {
        self.state.lock().unwrap().tokens.clear();
    }

    /// Answers the next API calls (not token requests) with `failure`.
    pub fn fail_next(&self, failure: FailNext) {
        self.state.lock().unwrap().fail_next = failure;
    }
}

/// An API call (not a token request): counted against the allocation, then served.
fn serve_api(
    shared: &Mutex<SalesforceState>,
    mut state: MutexGuard<'_, SalesforceState>,
    request: &StubRequest,
    version: &str,
    field: &str,
    prefix: &str,
) -> StubResponse {
    if let Some((status, retry_after)) = state.fail_next.take() {
        return salesforce_failure(status, retry_after);
    }
    if state.api_used >= state.api_limit {
        return salesforce_failure(403, None);
    }
    state.api_used += 1;
    let bearer = request.header("authorization").and_then(|v| v.strip_prefix("Bearer ")).unwrap_or_default();
    if !state.tokens.contains(bearer) {
        return StubResponse::json(
            401,
            json!([{"message": "Session expired or invalid", "errorCode": "INVALID_SESSION_ID"}]),
        );
    }
    if let Some(limit) = state.calls_per_session {
        let served = state.session_calls.entry(bearer.to_owned()).or_default();
        *served += 1;
        if *served >= limit {
            state.tokens.remove(bearer);
        }
    }
    if request.method == "GET" && request.path == format!("/services/data/v{version}/sobjects/Lead/describe") {
        // As Salesforce describes them (Object Reference, "Required Fields"): a field is
        // required on create when it is createable, not nillable and not defaulted on create.
        let mut fields: Vec<Value> = LEAD_FIELDS
            .iter()
            .filter(|(name, _)| !state.hidden_fields.contains(name))
            .map(|(name, length)| {
                let nillable = !["LastName", "Company"].contains(name);
                let ty = match *name {
                    "Email" => "email",
                    "Phone" => "phone",
                    "Description" => "textarea",
                    _ => "string",
                };
                json!({"name": name, "type": ty, "externalId": false, "length": length, "createable": true,
                    "updateable": true, "nillable": nillable, "defaultedOnCreate": false, "custom": false})
            })
            .collect();
        // Fields the org fills itself: the ID, the owner (assignment rules or the creator), the
        // status picklist's default, a checkbox.
        for (name, createable) in [("Id", false), ("OwnerId", true), ("Status", true), ("IsConverted", true)] {
            fields.push(json!({"name": name, "createable": createable, "updateable": createable, "nillable": false,
                "defaultedOnCreate": true, "custom": false}));
        }
        fields
            .extend(state.org_fields.iter().filter(|f| !state.hidden_fields.contains(f.name)).map(OrgField::describe));
        for name in &state.required_fields {
            fields.push(json!({"name": name, "length": 80, "createable": true, "updateable": true, "nillable": false,
                "defaultedOnCreate": false, "custom": true}));
        }
        fields.push(json!({
            "name": field, "externalId": !state.field_not_external, "unique": !state.field_not_unique,
            "caseSensitive": !state.case_insensitive_ids, "length": 255, "idLookup": true,
            "createable": true, "updateable": true, "nillable": true, "defaultedOnCreate": false, "custom": true
        }));
        return StubResponse::json(200, json!({"name": "Lead", "fields": fields}));
    }
    let headers = Headers {
        duplicate_rule: request.header("sforce-duplicate-rule-header").map(str::to_owned),
        assign: request.header("sforce-auto-assign").is_none_or(|v| !v.eq_ignore_ascii_case("false")),
        rule: request.header("sforce-auto-assign").filter(|v| v.starts_with("01Q")).map(str::to_owned),
    };
    let collection = format!("/services/data/v{version}/composite/sobjects/Lead/{field}");
    if request.method == "PATCH" && request.path.eq_ignore_ascii_case(&collection) {
        drop(state);
        return collection_save(shared, request, field, &headers, Save::Upsert);
    }
    if request.method == "POST" && request.path == format!("/services/data/v{version}/composite/sobjects") {
        drop(state);
        return collection_save(shared, request, field, &headers, Save::Create);
    }
    let query = format!("/services/data/v{version}/query?q=");
    if let Some(q) = request.path.strip_prefix(&query).filter(|_| request.method == "GET") {
        state.queries += 1;
        if let Some(code) = state.query_refusal {
            return StubResponse::json(400, json!([{"errorCode": code, "message": "the query was refused"}]));
        }
        return soql(&state, field, &percent_decode(&q.replace('+', " ")));
    }
    // The object and field names in the path compare without case too.
    let id = request
        .path
        .get(..prefix.len())
        .filter(|start| start.eq_ignore_ascii_case(prefix) && request.method == "PATCH")
        .and_then(|_| request.path.get(prefix.len()..));
    let Some(id) = id else {
        let message = "Provided external ID field does not exist or is not accessible";
        return StubResponse::json(404, json!([{"errorCode": "NOT_FOUND", "message": message}]));
    };
    if let Err(refused) = json_body(request) {
        return refused;
    }
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    drop(state);
    // `%2F` in the value: Salesforce documents nothing (its path caveat is the `.inc` one), and
    // its users report both a value found (simple-salesforce#716, a GET) and `NOT_FOUND`
    // (texei-sfdx-plugin#111, an upsert): the stand-in answers the worse, so a client that
    // puts a `/` in the path fails here.
    if id.to_ascii_uppercase().contains("%2F") {
        let message = "The requested resource does not exist";
        return StubResponse::json(404, json!([{"errorCode": "NOT_FOUND", "message": message}]));
    }
    upsert_record(shared, field, &percent_decode(id), &body, &headers, Save::Upsert)
}

/// The request headers the org reads when it saves a Lead.
struct Headers {
    /// `Sforce-Duplicate-Rule-Header`.
    duplicate_rule: Option<String>,
    /// Whether assignment rules run (`Sforce-Auto-Assign` absent or not `FALSE`).
    assign: bool,
    /// The rule named by its ID, when the header names one (not `TRUE`).
    rule: Option<String>,
}

/// How a save treats a Lead that holds the external ID already.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Save {
    /// Updates it.
    Upsert,
    /// Refuses the new one (`DUPLICATE_VALUE`): the field is Unique.
    Create,
}

/// A SOQL query of the form the sink sends, answered with the Leads whose external ID equals
/// one of the literals without case (as SOQL compares text); a Lead of an `ambiguous` ID twice.
fn soql(state: &SalesforceState, field: &str, query: &str) -> StubResponse {
    let malformed =
        || StubResponse::json(400, json!([{"errorCode": "MALFORMED_QUERY", "message": "unexpected token"}]));
    let words: Vec<&str> = query.splitn(8, ' ').collect();
    let [select, selected, from, object, r#where, filtered, r#in, list] = words[..] else { return malformed() };
    let keywords = [(select, "SELECT"), (from, "FROM"), (object, "Lead"), (r#where, "WHERE"), (r#in, "IN")];
    if keywords.iter().any(|(word, expected)| !word.eq_ignore_ascii_case(expected)) {
        return malformed();
    }
    if !selected.eq_ignore_ascii_case(field) || !filtered.eq_ignore_ascii_case(field) {
        return StubResponse::json(400, json!([{"errorCode": "INVALID_FIELD", "message": "No such column"}]));
    }
    let clause = query.splitn(5, ' ').last().unwrap_or_default();
    if clause.chars().count() > 4_000 {
        return malformed();
    }
    let Some(values) = literals(list) else { return malformed() };
    // SOQL compares text without case, but a unique case-sensitive field's values with it.
    let asked = |id: &str| values.iter().any(|v| state.key(v) == state.key(id));
    let mut records: Vec<Value> = Vec::new();
    for id in state.leads.keys().chain(state.ambiguous.iter()).chain(state.ambiguous.iter()) {
        if asked(id) {
            records.push(
                json!({"attributes": {"type": "Lead", "url": "/services/data/v60.0/sobjects/Lead/00Q1"}, field: id}),
            );
        }
    }
    StubResponse::json(200, json!({"totalSize": records.len(), "done": true, "records": records}))
}

/// `('a','b\'c')` as its values, or `None` when it is not a list of SOQL string literals.
fn literals(list: &str) -> Option<Vec<String>> {
    let inner = list.strip_prefix('(')?.strip_suffix(')')?;
    let mut values = Vec::new();
    let mut chars = inner.chars().peekable();
    loop {
        if chars.next()? != '\'' {
            return None;
        }
        let mut value = String::new();
        loop {
            match chars.next()? {
                '\'' => break,
                '\\' => value.push(match chars.next()? {
                    'n' => '\n',
                    'r' => '\r',
                    't' => '\t',
                    c @ ('\\' | '\'' | '"') => c,
                    _ => return None,
                }),
                c => value.push(c),
            }
        }
        values.push(value);
        match chars.next() {
            None => return Some(values),
            Some(',') => {}
            Some(_) => return None,
        }
    }
}

/// sObject Collections upsert (`PATCH .../composite/sobjects/Lead/<field>`, API v46.0 on) or
/// create (`POST .../composite/sobjects`): up to 200 records, each with `attributes.type` Lead
/// and the external ID field, saved in order as single saves are, `allOrNone` false; one
/// result per record, in the records' order (`{id, success, errors: [{statusCode, message,
/// fields}], created}`). An upsert's record whose ID matches several Leads is
/// `DUPLICATE_EXTERNAL_ID`; one that repeats another record's ID in the request is
/// `DUPLICATE_VALUE` ("Duplicate external id specified"); a create's repeat is refused as a
/// duplicate of the first. Over 200 records, or `allOrNone` true, is refused whole here (the
/// sink never sends either).
fn collection_save(
    shared: &Mutex<SalesforceState>,
    request: &StubRequest,
    field: &str,
    headers: &Headers,
    save: Save,
) -> StubResponse {
    if let Err(refused) = json_body(request) {
        return refused;
    }
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let records = body["records"].as_array().cloned().unwrap_or_default();
    if records.is_empty() || records.len() > 200 || body["allOrNone"] == json!(true) {
        return StubResponse::json(
            400,
            json!([{"errorCode": "INVALID_BATCH_REQUEST", "message": "1 to 200 records, allOrNone false"}]),
        );
    }
    // A field the user may not see, or the org lacks, is no column of its request: the whole
    // call is refused (the stricter of the two answers Salesforce might give; the sink handles
    // both).
    let (hidden, org_fields) = {
        let state = shared.lock().unwrap();
        (state.hidden_fields.clone(), state.org_fields.clone())
    };
    let column = |k: &str| {
        k == "attributes"
            || k.eq_ignore_ascii_case(field)
            || LEAD_FIELDS.iter().any(|(name, _)| name.eq_ignore_ascii_case(k) && !hidden.contains(name))
            || org_fields.iter().any(|f| f.name.eq_ignore_ascii_case(k) && !hidden.contains(f.name))
    };
    let unknown = records.iter().filter_map(Value::as_object).flat_map(|o| o.keys()).find(|k| !column(k));
    if let Some(name) = unknown {
        return StubResponse::json(
            400,
            json!([{"errorCode": "INVALID_FIELD", "message": format!("No such column '{name}' on sobject of type Lead")}]),
        );
    }
    // A value not of its field's type fails the reading of the request, before any record.
    let field_of = |k: &str| org_fields.iter().find(|f| f.name.eq_ignore_ascii_case(k));
    let misread = records
        .iter()
        .filter_map(Value::as_object)
        .flatten()
        .find_map(|(k, v)| field_of(k).and_then(|f| f.shape(v).err()));
    if let Some(ty) = misread {
        return StubResponse::json(
            400,
            json!([{"errorCode": "JSON_PARSER_ERROR", "message": format!("Cannot deserialize instance of {ty} from VALUE_STRING")}]),
        );
    }
    let slow_over = {
        let mut state = shared.lock().unwrap();
        state.collections.push(records.len());
        state.slow_over
    };
    if let Some((_, takes)) = slow_over.filter(|(over, _)| records.len() > *over) {
        std::thread::sleep(takes);
    }
    let id_of = |record: &Value| {
        record
            .as_object()
            .and_then(|o| o.iter().find(|(k, _)| k.eq_ignore_ascii_case(field)))
            .and_then(|(_, v)| v.as_str())
            // Salesforce trims leading and trailing white space from text values.
            .map(|v| v.trim().to_owned())
    };
    let key = |id: &str| shared.lock().unwrap().key(id);
    let mut seen = BTreeSet::new();
    let repeated: BTreeSet<String> =
        records.iter().filter_map(id_of).map(|id| key(&id)).filter(|k| !seen.insert(k.clone())).collect();
    let results: Vec<Value> = records
        .iter()
        .map(|record| {
            let failed = |code: &str, message: &str| json!({"success": false, "errors": [{"statusCode": code, "message": message, "fields": []}]});
            if record["attributes"]["type"] != json!("Lead") {
                return failed("INVALID_TYPE", "attributes.type must be Lead");
            }
            let Some(id) = id_of(record) else { return failed("MISSING_ARGUMENT", "the external ID field is required") };
            if shared.lock().unwrap().failing_once.remove(&id) {
                return failed("UNABLE_TO_LOCK_ROW", "unable to obtain exclusive access to this record");
            }
            if save == Save::Upsert && repeated.contains(&key(&id)) {
                // Salesforce's answer for a value repeated within the request.
                return failed("DUPLICATE_VALUE", &format!("Duplicate external id specified: {id}"));
            }
            let mut fields = record.clone();
            if let Some(object) = fields.as_object_mut() {
                object.remove("attributes");
                object.retain(|k, _| !k.eq_ignore_ascii_case(field));
            }
            let answer = upsert_record(shared, field, &id, &fields, headers, save);
            let body: Value = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
            match answer.status {
                200 | 201 => json!({"id": body["id"], "success": true, "errors": [], "created": answer.status == 201}),
                300 => failed("DUPLICATE_EXTERNAL_ID", "more than one record found for external id field"),
                _ => {
                    let errors: Vec<Value> = body
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|e| json!({"statusCode": e["errorCode"], "message": e["message"], "fields": e["fields"].as_array().cloned().unwrap_or_default()}))
                        .collect();
                    json!({"success": false, "errors": errors})
                }
            }
        })
        .collect();
    StubResponse::json(200, Value::Array(results))
}

/// A body's content type must be JSON, and the body JSON.
fn json_body(request: &StubRequest) -> Result<(), StubResponse> {
    if !request.header("content-type").is_some_and(|t| t.starts_with("application/json")) {
        return Err(StubResponse::json(415, json!([{"errorCode": "UNSUPPORTED_MEDIA_TYPE"}])));
    }
    if serde_json::from_slice::<Value>(&request.body).is_err() {
        return Err(StubResponse::json(400, json!([{"errorCode": "JSON_PARSER_ERROR"}])));
    }
    Ok(())
}

/// One save of `body`'s fields by the external ID `id`, as the org runs it (a single upsert's
/// answer: 200 or 201, 300, or a refusal's error array).
fn upsert_record(
    shared: &Mutex<SalesforceState>,
    field: &str,
    id: &str,
    body: &Value,
    headers: &Headers,
    save: Save,
) -> StubResponse {
    let mut state = shared.lock().unwrap();
    let id = id.to_owned();
    let header = headers.duplicate_rule.as_deref();
    state.upserts.push(header.map(str::to_owned));
    let fields = match validate(&state, body) {
        Ok(fields) => fields,
        Err(refused) => return refused,
    };
    // Row locks: one save of an ID at a time; the second of two inserts is refused as a
    // duplicate of the first's value. A create touches no existing row: the field being
    // Unique, a value a Lead holds is refused once the Lead's rules have run (validation,
    // duplicate rules), the field named in the message only.
    let existing = state.matching(&id);
    let ambiguous = state.ambiguous.iter().any(|a| state.key(a) == state.key(&id));
    let unique = || {
        refusal(
            "DUPLICATE_VALUE",
            &format!("duplicate value found: {field} duplicates value on record with id: 00Q000000000001"),
            &[],
        )
    };
    let updates = save == Save::Upsert;
    if !updates || existing.is_none() {
        if let Some(missing) = state.required_fields.iter().find(|f| fields.get(**f).is_none()) {
            return refusal("REQUIRED_FIELD_MISSING", "Required fields are missing", &[missing]);
        }
    }
    if state.in_flight.contains(&state.key(&id)) {
        return match existing {
            Some(_) if updates => {
                refusal("UNABLE_TO_LOCK_ROW", "unable to obtain exclusive access to this record", &[])
            }
            _ => unique(),
        };
    }
    if updates && existing.as_ref().is_some_and(|e| state.locked.contains(e)) {
        return refusal("UNABLE_TO_LOCK_ROW", "unable to obtain exclusive access to this record", &[]);
    }
    if updates && ambiguous {
        return StubResponse::json(
            300,
            json!(["/services/data/v60.0/sobjects/Lead/00Q1", "/services/data/v60.0/sobjects/Lead/00Q2"]),
        );
    }
    if let Some(code) = state.org_refusal {
        return refusal(code, "the org refuses this Lead", &[]);
    }
    if let (Some(code), Some(_)) = (state.phone_refusal, fields.get("Phone")) {
        return refusal(code, "Enter the phone as (999) 999-9999", &[]);
    }
    if updates && existing.as_ref().is_some_and(|e| state.converted.contains(e)) {
        return refusal("CANNOT_UPDATE_CONVERTED_LEAD", "cannot reference converted lead", &[]);
    }
    let saved_as = if updates { existing.as_deref() } else { None };
    if let Some(refused) = duplicate_rule(&state, header, saved_as, &fields) {
        return refused;
    }
    if !updates && (existing.is_some() || ambiguous) {
        return unique();
    }
    // The row is held while the upsert runs; the lock on the org is not.
    let key = state.key(&id);
    state.in_flight.insert(key.clone());
    let hold = state.hold;
    drop(state);
    std::thread::sleep(hold);
    let mut state: MutexGuard<'_, SalesforceState> = shared.lock().unwrap();
    state.in_flight.remove(&key);
    if headers.assign {
        *state.assignments.entry(id.clone()).or_default() += 1;
        if let Some(rule) = &headers.rule {
            state.assignment_rules.insert(id.clone(), rule.clone());
        }
    }
    // Looked up again: the test may have changed the org during the hold.
    match state.matching(&id) {
        Some(stored) => {
            let lead = state.leads.get_mut(&stored).unwrap();
            for (name, value) in fields.as_object().cloned().unwrap_or_default() {
                lead[name] = value;
            }
            // API v46.0 and later answer an update 200 (204 before).
            StubResponse::json(200, json!({"id": "00Q000000000001", "success": true, "errors": [], "created": false}))
        }
        None => {
            state.leads.insert(id, fields);
            StubResponse::json(201, json!({"id": "00Q000000000001", "success": true, "errors": [], "created": true}))
        }
    }
}

/// The body's fields as the org stores them, or its refusal: field
/// names (matched without case), lengths in UTF-16 code units, the email, required fields.
fn validate(state: &SalesforceState, body: &Value) -> Result<Value, StubResponse> {
    // Each field name is matched without case to the org's field, and stored as the org
    // spells it; a name no field has is INVALID_FIELD.
    let mut fields = json!({});
    for (name, value) in body.as_object().cloned().unwrap_or_default() {
        let typed = |f: &&OrgField| f.name.eq_ignore_ascii_case(&name) && !state.hidden_fields.contains(f.name);
        if let Some(org_field) = state.org_fields.iter().find(typed) {
            let stored = org_field
                .check(&value, email_valid)
                .map_err(|(code, message)| refusal(code, &message, &[org_field.name]))?;
            fields[org_field.name] = stored;
            continue;
        }
        let visible = |f: &&(&str, usize)| f.0.eq_ignore_ascii_case(&name) && !state.hidden_fields.contains(f.0);
        let Some((known, max)) = LEAD_FIELDS.iter().find(visible) else {
            return Err(StubResponse::json(
                400,
                json!([{"errorCode": "INVALID_FIELD", "message": format!("No such column '{name}' on sobject of type Lead")}]),
            ));
        };
        if value.as_str().is_some_and(|v| v.encode_utf16().count() > *max) {
            return Err(refusal("STRING_TOO_LONG", &format!("{known}: data value too large"), &[known]));
        }
        fields[*known] = value;
    }
    if let Some(email) = fields["Email"].as_str() {
        if !email_valid(email) || state.refused_emails.contains(&email.to_lowercase()) {
            return Err(refusal(
                "INVALID_EMAIL_ADDRESS",
                &format!("Email: invalid email address: {email}"),
                &["Email"],
            ));
        }
        fields["Email"] = json!(email.to_lowercase());
    }
    if let Some((field, refused)) = state.field_rule {
        if fields[field].as_str().is_some_and(|v| v.contains(refused)) {
            return Err(refusal("FIELD_CUSTOM_VALIDATION_EXCEPTION", "The value is not allowed here", &[field]));
        }
    }
    for required in ["LastName", "Company"] {
        // Salesforce trims text: spaces alone are no value.
        if fields[required].as_str().is_none_or(|v| v.trim().is_empty()) {
            return Err(refusal("REQUIRED_FIELD_MISSING", "Required fields are missing", &[required]));
        }
    }
    Ok(fields)
}

/// The duplicate rule's verdict on saving `fields` as the Lead `existing` (or a new one):
/// another Lead with the same email is a duplicate; an Alert rule lets the save through only
/// with `allowSave=true`, a Block rule never. The body as Salesforce sends it (its key is
/// spelt `duplicateResut`).
fn duplicate_rule(
    state: &SalesforceState,
    header: Option<&str>,
    existing: Option<&str>,
    fields: &Value,
) -> Option<StubResponse> {
    let email = fields["Email"].as_str()?;
    let duplicate = state.leads.iter().any(|(id, lead)| Some(id.as_str()) != existing && lead["Email"] == email);
    let header = header.unwrap_or_default();
    let allow_save = header.split(';').any(|p| p.trim().eq_ignore_ascii_case("allowSave=true"));
    let refused = match state.duplicate_rule {
        DuplicateRule::Off => false,
        DuplicateRule::Alert => duplicate && !allow_save,
        DuplicateRule::Block => duplicate,
    };
    refused.then(|| {
        StubResponse::json(
            400,
            json!([{
                "duplicateResut": {
                    "allowSave": state.duplicate_rule == DuplicateRule::Alert,
                    "duplicateRule": "Standard_Rule_for_Leads_with_Duplicate_Leads",
                    "duplicateRuleEntityType": "Lead",
                    "errorMessage": "Use one of these records?",
                    "matchResults": []
                },
                "errorCode": "DUPLICATES_DETECTED",
                "message": "Use one of these records?"
            }]),
        )
    })
}
