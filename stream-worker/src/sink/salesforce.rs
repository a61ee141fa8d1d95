//! Salesforce: upsert a Lead by an external ID field holding the submission ID.
//!
//! `PATCH /services/data/vNN.N/sobjects/Lead/<field>/<submissionId>`: 201 created, 200 or 204
//! updated, 300 when several Leads match (a data problem: permanent for this lead).
//!
//! Access is the OAuth 2.0 client credentials flow of a connected app: `POST
//! <My Domain>/services/oauth2/token` with the client ID and secret gives an access token (and
//! the instance URL to call). Tokens end with the session (two hours by default) and the answer
//! does not say when, so the token is cached and fetched again once when a call answers 401
//! `INVALID_SESSION_ID`; a 401 again after that is retried as `sink_unauthorized`.
//!
//! Refusals that are not the lead's are retried, never `FAILED` (developer.salesforce.com,
//! REST API "Status Codes and Error Responses"): 403 `REQUEST_LIMIT_EXCEEDED` (the org's API
//! request limit; Salesforce answers 403, not 429) as `sink_rate_limited`; 415 (the request's
//! format) as `sink_unsupported_media_type`; 503 with its `Retry-After`.

use std::sync::Mutex;

use serde_json::json;
use shared::lead::Lead;

use super::http::{classify_status, transport_error};
use super::{fit, CheckError, LeadSink, SinkError};

/// What Salesforce requires on a Lead when the form did not supply it.
pub const NOT_PROVIDED: &str = "[not provided]";

/// A Salesforce org reached through a connected app's client credentials.
pub struct Salesforce {
    client: reqwest::Client,
    login: Login,
    /// `/services/data/vNN.N/sobjects/Lead/<field>`, after the instance URL.
    path: String,
    /// The current access token and the instance URL it is for.
    session: Mutex<Option<Session>>,
}

/// What the token request needs.
pub struct Login {
    /// The org's My Domain URL, where the token endpoint is.
    pub domain_url: String,
    pub client_id: String,
    pub client_secret: String,
}

#[derive(Clone)]
struct Session {
    token: String,
    instance_url: String,
}

impl Salesforce {
    pub fn new(client: reqwest::Client, login: Login, version: &str, field: &str) -> Salesforce {
        let path = format!("/services/data/v{version}/sobjects/Lead/{field}");
        Salesforce { client, login, path, session: Mutex::new(None) }
    }

    /// The cached session, or a new one from the token endpoint.
    async fn session(&self, fresh: bool) -> Result<Session, SinkError> {
        if !fresh {
            if let Some(session) = self.session.lock().map_err(|_| poisoned())?.clone() {
                return Ok(session);
            }
        }
        let form = [
            ("grant_type", "client_credentials"),
            ("client_id", self.login.client_id.as_str()),
            ("client_secret", self.login.client_secret.as_str()),
        ];
        let url = format!("{}/services/oauth2/token", self.login.domain_url);
        let response = self.client.post(url).form(&form).send().await.map_err(|e| transport_error(&e))?;
        let status = response.status().as_u16();
        if status != 200 {
            // `invalid_client`, `invalid_grant` (400) or 401: the connected app's settings need
            // a fix; never a reason to fail a lead.
            if matches!(status, 400 | 401 | 403) {
                return Err(SinkError::Retryable { reason: "sink_login_refused", retry_after: None });
            }
            let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok());
            return Err(classify_status(status, retry_after));
        }
        let answer: serde_json::Value = response.json().await.map_err(|e| transport_error(&e))?;
        let token = answer["access_token"].as_str().filter(|t| !t.is_empty());
        let Some(token) = token else {
            return Err(SinkError::Retryable { reason: "sink_login_refused", retry_after: None });
        };
        let instance_url = answer["instance_url"]
            .as_str()
            .filter(|u| crate::config::is_http_url(u))
            .unwrap_or(&self.login.domain_url)
            .trim_end_matches('/');
        let session = Session { token: token.to_owned(), instance_url: instance_url.to_owned() };
        *self.session.lock().map_err(|_| poisoned())? = Some(session.clone());
        Ok(session)
    }
}

impl Salesforce {
    /// Checks, once at start, that the credentials work and the external ID field exists on
    /// Lead and is an External ID (`GET .../sobjects/Lead/describe`).
    pub async fn check_configuration(&self) -> Result<(), CheckError> {
        let session = self.session(false).await.map_err(|e| match e {
            SinkError::Retryable { reason: "sink_login_refused", .. } => CheckError::Wrong(String::from(
                "SALESFORCE_CLIENT_ID / SALESFORCE_CLIENT_SECRET: Salesforce refused the client credentials",
            )),
            other => CheckError::Unreachable(format!("Salesforce could not be reached ({other:?})")),
        })?;
        let (describe, field) = self.path.rsplit_once('/').unwrap_or((self.path.as_str(), ""));
        let url = format!("{}{describe}/describe", session.instance_url);
        let response = self.client.get(url).bearer_auth(&session.token).send().await;
        let response =
            response.map_err(|e| CheckError::Unreachable(format!("Salesforce could not be reached: {e}")))?;
        if response.status().as_u16() != 200 {
            return Err(CheckError::Unreachable(format!(
                "Salesforce answered {} to describing Lead",
                response.status()
            )));
        }
        let description: serde_json::Value = response.json().await.unwrap_or(serde_json::Value::Null);
        let fields = description["fields"].as_array().cloned().unwrap_or_default();
        // Field API names compare without case, as Salesforce does.
        let named = |f: &&serde_json::Value| f["name"].as_str().is_some_and(|n| n.eq_ignore_ascii_case(field));
        match fields.iter().find(named) {
            None => Err(CheckError::Wrong(format!("SALESFORCE_EXTERNAL_ID_FIELD: Lead has no field {field:?}"))),
            Some(f) if f["externalId"] != serde_json::Value::Bool(true) => Err(CheckError::Wrong(format!(
                "SALESFORCE_EXTERNAL_ID_FIELD: the Lead field {field:?} is not an External ID"
            ))),
            Some(_) => Ok(()),
        }
    }
}

/// A refusal whose `errorCode` names the org's configuration (`INVALID_FIELD`: a Lead field
/// that does not exist; `NOT_FOUND` on a 404: the external ID field does not exist) is retried
/// and loud; a 403 `REQUEST_LIMIT_EXCEEDED` is the org's API request limit, retried as
/// `sink_rate_limited` (not `sink_unauthorized`: the credentials are fine); any other refusal
/// is left to its status. Only codes are read, never messages, which repeat the input.
pub fn classify_refusal(status: u16, body: &str) -> Option<SinkError> {
    let errors: serde_json::Value = serde_json::from_str(body).ok()?;
    let codes: Vec<&str> = errors.as_array()?.iter().filter_map(|e| e["errorCode"].as_str()).collect();
    if status == 403 && codes.contains(&"REQUEST_LIMIT_EXCEEDED") {
        return Some(SinkError::Retryable { reason: "sink_rate_limited", retry_after: None });
    }
    let config = codes.contains(&"INVALID_FIELD") || (status == 404 && codes.contains(&"NOT_FOUND"));
    config.then_some(SinkError::Retryable { reason: "sink_config_invalid", retry_after: None })
}

/// An upsert's answer other than 200, 201, 204 and 300: its error codes first
/// ([`classify_refusal`]), then its status ([`classify_status`]: 415 retried as
/// `sink_unsupported_media_type`, 429 and 5xx with their `Retry-After`, other 4xx the lead's).
pub fn classify_answer(status: u16, retry_after: Option<&str>, body: &str) -> SinkError {
    classify_refusal(status, body).unwrap_or_else(|| classify_status(status, retry_after))
}

fn poisoned() -> SinkError {
    SinkError::Retryable { reason: "sink_session_poisoned", retry_after: None }
}

/// The Lead's fields: `LastName` and `Company` are required by Salesforce.
///
/// Each value fits its field's documented length (Lead: `FirstName` 40, `LastName` 80,
/// `Company` 255, `Email` 80, `Description` 32,000 characters), since one value over its
/// field refuses the whole Lead. An email Salesforce would refuse (over 80 characters, no `@`,
/// spaces) is left out of `Email` and kept at the end of `Description` instead.
pub fn fields(lead: &Lead) -> serde_json::Value {
    let (first, last) = match lead.name.rsplit_once(' ') {
        Some((first, last)) => (first, last),
        None => ("", lead.name.as_str()),
    };
    let company = lead.extra.get("company").and_then(|c| c.as_str()).unwrap_or(NOT_PROVIDED);
    let email = lead.email.trim();
    let email_fits = email.chars().count() <= 80
        && email.split_once('@').is_some_and(|(user, host)| !user.is_empty() && host.contains('.'))
        && !email.contains(char::is_whitespace);
    let mut description = lead.message.clone();
    if !email_fits && !email.is_empty() {
        description.push_str(&format!("\n\n(email as submitted: {email})"));
    }
    let mut fields = json!({
        "FirstName": fit(first, 40),
        "LastName": fit(if last.is_empty() { NOT_PROVIDED } else { last }, 80),
        "Company": fit(company, 255),
        "Description": fit(&description, 32_000),
    });
    if email_fits {
        fields["Email"] = json!(email);
    }
    fields
}

/// The longest external ID value a Salesforce Text field holds, in characters.
pub const MAX_EXTERNAL_ID_CHARS: usize = 255;

/// The value of the external ID field for a submission ID: the ID itself, or, for an ID no
/// Text field can hold or no URL path can carry, `sha256-` and the hex SHA-256 of the ID:
/// over 255 characters; holding a `.` (`.` and `..` are dot segments URL parsers remove, and
/// Salesforce answers 404 to values ending in some file extensions, such as `.inc`, which
/// would read as a missing field). Deterministic, so a replay upserts the same Lead; distinct
/// IDs never share a value.
pub fn external_id(submission_id: &str) -> std::borrow::Cow<'_, str> {
    use sha2::{Digest, Sha256};
    let fits = submission_id.chars().count() <= MAX_EXTERNAL_ID_CHARS && !submission_id.contains('.');
    // A short ID that itself looks like a digest value is hashed too, so it cannot collide
    // with one.
    if fits && !submission_id.starts_with("sha256-") {
        return std::borrow::Cow::Borrowed(submission_id);
    }
    let digest = Sha256::digest(submission_id.as_bytes());
    std::borrow::Cow::Owned(format!("sha256-{}", shared::hex::encode(&digest)))
}

/// `text` percent-encoded as one URL path segment: every byte but RFC 3986's unreserved
/// characters (`A-Z a-z 0-9 - . _ ~`) as `%XX`, so `/`, `?`, `#`, `%` and non-ASCII stay in it.
pub fn path_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl LeadSink for Salesforce {
    fn record_budget(&self) -> std::time::Duration {
        // A token, the upsert, and once more both after an expired session: four calls.
        4 * super::http::TIMEOUT + super::RECEIPT_UPDATE_BUDGET
    }

    async fn upsert(&self, lead: &Lead, _receipt_key: &str) -> Result<(), SinkError> {
        // Submission IDs may hold any character but controls: one path segment, percent-encoded.
        let segment = path_segment(&external_id(&lead.external_id));
        let mut fresh = false;
        loop {
            let session = self.session(fresh).await?;
            let url = format!("{}{}/{segment}", session.instance_url, self.path);
            let request = self.client.patch(url).bearer_auth(&session.token).json(&fields(lead));
            let response = request.send().await.map_err(|e| transport_error(&e))?;
            match response.status().as_u16() {
                200 | 201 | 204 => return Ok(()),
                300 => return Err(SinkError::Permanent { reason: "sink_multiple_matches" }),
                // The session ended: one new token, then the call again.
                401 if !fresh => fresh = true,
                status => {
                    let retry_after =
                        response.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_owned);
                    let body = response.text().await.unwrap_or_default();
                    return Err(classify_answer(status, retry_after.as_deref(), &body));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_one_encoded_path_segment() {
        assert_eq!(path_segment("sub_8fK2qLw9Xc"), "sub_8fK2qLw9Xc");
        assert_eq!(path_segment("a/b?c#d%e f:g+h=i"), "a%2Fb%3Fc%23d%25e%20f%3Ag%2Bh%3Di");
        assert_eq!(path_segment("é~.-"), "%C3%A9~.-");
    }

    #[test]
    fn only_error_codes_name_the_configuration() {
        let config = Some(SinkError::Retryable { reason: "sink_config_invalid", retry_after: None });
        assert_eq!(classify_refusal(400, r#"[{"errorCode":"INVALID_FIELD","message":"No such column"}]"#), config);
        assert_eq!(
            classify_refusal(
                404,
                r#"[{"errorCode":"NOT_FOUND","message":"Provided external ID field does not exist"}]"#
            ),
            config
        );
        // The lead's own content, whatever its message says.
        let email = r#"[{"errorCode":"INVALID_EMAIL_ADDRESS","message":"x does not exist or is not accessible INVALID_FIELD"}]"#;
        assert_eq!(classify_refusal(400, email), None);
        assert_eq!(classify_refusal(400, r#"[{"errorCode":"NOT_FOUND"}]"#), None, "NOT_FOUND only on a 404");
        assert_eq!(classify_refusal(400, "not json"), None);
    }

    fn lead(name: &str, email: &str, company: Option<&str>) -> Lead {
        let extra =
            company.map(|c| (String::from("company"), shared::json::Json::String(c.into()))).into_iter().collect();
        Lead {
            external_id: String::from("sub_1"),
            name: name.to_owned(),
            email: email.to_owned(),
            message: String::from("Hello"),
            extra,
        }
    }

    #[test]
    fn a_salesforce_record_may_take_four_calls_and_the_store_update() {
        let login = Login {
            domain_url: "https://x.my.salesforce.com".into(),
            client_id: "i".into(),
            client_secret: "s".into(),
        };
        let sink = Salesforce::new(reqwest::Client::new(), login, "62.0", "F__c");
        // A token, the upsert, and both again after an expired session; README: 51 s.
        assert_eq!(sink.record_budget(), std::time::Duration::from_secs(51));
    }

    #[test]
    fn a_lead_maps_to_the_lead_object_s_fields() {
        // The last space splits the name: a family name is one word, given names may be several.
        let all = fields(&lead("Ada King Lovelace", " ada@example.com ", Some("Analytical Engines")));
        assert_eq!(
            all,
            json!({"FirstName": "Ada King", "LastName": "Lovelace", "Company": "Analytical Engines",
                   "Description": "Hello", "Email": "ada@example.com"})
        );
        // One word is the last name; LastName and Company are required, so never empty.
        let one = fields(&lead("Cher", "", None));
        assert_eq!(
            (&one["FirstName"], &one["LastName"], &one["Company"]),
            (&json!(""), &json!("Cher"), &json!(NOT_PROVIDED))
        );
        assert_eq!(one.get("Email"), None);
        assert_eq!(one["Description"], "Hello", "no email, no note");
        assert_eq!(fields(&lead("", "", None))["LastName"], NOT_PROVIDED);
        // Each value within its field's length.
        let long = fields(&lead(&format!("{} {}", "f".repeat(50), "l".repeat(90)), "", Some(&"c".repeat(300))));
        let chars = |v: &serde_json::Value| v.as_str().unwrap().chars().count();
        assert_eq!((chars(&long["FirstName"]), chars(&long["LastName"]), chars(&long["Company"])), (40, 80, 255));
    }

    #[test]
    fn an_email_salesforce_would_refuse_is_kept_in_the_description_instead() {
        let at_limit = format!("{}@example.com", "a".repeat(80 - 12));
        assert_eq!(at_limit.len(), 80);
        assert_eq!(fields(&lead("A B", &at_limit, None))["Email"], at_limit.as_str());
        let over = format!("a{at_limit}");
        for bad in [over.as_str(), "no-at-sign", "@example.com", "ada@localhost", "ada lovelace@example.com"] {
            let f = fields(&lead("A B", bad, None));
            assert_eq!(f.get("Email"), None, "{bad}");
            assert_eq!(f["Description"], format!("Hello\n\n(email as submitted: {bad})"), "{bad}");
        }
    }

    #[test]
    fn limits_formats_sessions_and_outages_are_retried_each_with_its_reason() {
        let retry = |reason, retry_after| SinkError::Retryable { reason, retry_after };
        let limit = r#"[{"message":"TotalRequests Limit exceeded.","errorCode":"REQUEST_LIMIT_EXCEEDED"}]"#;
        assert_eq!(classify_answer(403, None, limit), retry("sink_rate_limited", None));
        // Another 403 is the user's permissions: the credentials' configuration.
        let denied = r#"[{"errorCode":"INSUFFICIENT_ACCESS"}]"#;
        assert_eq!(classify_answer(403, None, denied), retry("sink_unauthorized", None));
        let media = r#"[{"errorCode":"UNSUPPORTED_MEDIA_TYPE"}]"#;
        assert_eq!(classify_answer(415, None, media), retry("sink_unsupported_media_type", None));
        let session = r#"[{"message":"Session expired or invalid","errorCode":"INVALID_SESSION_ID"}]"#;
        assert_eq!(classify_answer(401, None, session), retry("sink_unauthorized", None));
        let down = r#"[{"errorCode":"SERVER_UNAVAILABLE"}]"#;
        let three = Some(std::time::Duration::from_secs(3));
        assert_eq!(classify_answer(503, Some("3"), down), retry("sink_unavailable", three));
        assert_eq!(classify_answer(429, None, ""), retry("sink_unavailable", None));
        // The lead's own content stays FAILED.
        let email = r#"[{"errorCode":"INVALID_EMAIL_ADDRESS"}]"#;
        assert_eq!(classify_answer(400, None, email), SinkError::Permanent { reason: "sink_rejected" });
        // REQUEST_LIMIT_EXCEEDED means the limit only on a 403.
        assert_eq!(classify_refusal(400, limit), None);
    }

    #[test]
    fn ids_a_text_field_or_a_path_cannot_hold_become_digests() {
        assert_eq!(external_id("sub_1"), "sub_1");
        let longest = "é".repeat(MAX_EXTERNAL_ID_CHARS);
        assert_eq!(external_id(&longest), longest.as_str());
        for odd in [".", "..", "lead@example.inc", "sub.1", &"x".repeat(MAX_EXTERNAL_ID_CHARS + 1), "sha256-abc"] {
            let value = external_id(odd);
            assert!(value.starts_with("sha256-") && value.len() == 71, "{odd}: {value}");
            assert_eq!(external_id(odd), value, "deterministic");
        }
        assert_ne!(external_id("."), external_id(".."));
        // printf '.' | sha256sum
        assert_eq!(external_id("."), "sha256-cdb4ee2aea69cc6a83331bbe96dc2caa9a299d21329efb0336fc02a82e1839a8");
    }
}
