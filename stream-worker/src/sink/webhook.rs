//! The generic sink: POST the lead as JSON to a URL, with the receipt's key as `Idempotency-Key`,
//! signed per Standard Webhooks so the receiver can tell this worker from anyone else. With a
//! lead mapping, the body's `fields` object holds each mapped answer, as the form sent it, under
//! the name the mapping gives it, and the constants.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use reqwest::header::HeaderValue;
use shared::auth::signature_header;
use shared::field_map::{apply, of_key, FieldMapping};
use shared::json::Json;
use shared::lead::Lead;
use shared::secret::SigningSecret;
use shared::typed::{FieldType, Kind};

use super::contract::{LeadSink, SinkError};
use super::http::send;
use super::typed_map::{self, Typed};

/// POSTs leads to one URL.
pub struct Webhook {
    client: reqwest::Client,
    url: String,
    secret: SigningSecret,
    /// The lead mapping, every field as sent; `None`: no mapping, no `fields` object.
    typed: Option<Typed>,
}

impl Webhook {
    pub fn new(client: reqwest::Client, url: &str, secret: SigningSecret) -> Webhook {
        Webhook { client, url: url.to_owned(), secret, typed: None }
    }

    /// The sink with `mapping`: each field a plain name in the body's `fields` (a receiver
    /// has no schema to check it against, so this is the whole check).
    pub fn with_mapping(mut self, mapping: &FieldMapping) -> Result<Webhook, String> {
        if !mapping.is_empty() {
            self.typed = Some(typed_map::resolve(mapping, "the webhook field", &as_sent)?);
        }
        Ok(self)
    }

    /// Each mapped field and what it takes (`stream-worker mapping check`).
    pub fn mapping_lines(&self) -> Vec<String> {
        match &self.typed {
            Some(typed) => typed_map::lines(typed, &|_| String::from("as sent")),
            None => vec![String::from("no LEAD_MAPPING: the body has no fields object (docs/mapping.md)")],
        }
    }

    /// The body sent for `lead`: the lead's JSON, and with a mapping its `fields`.
    pub fn body(&self, lead: &Lead, receipt_key: &str) -> Json {
        let mut body = lead.to_json();
        if let (Some(typed), Json::Object(members)) = (&self.typed, &mut body) {
            let values = of_key(typed, receipt_key).map(|map| apply(lead, map).values).unwrap_or_default();
            members.insert(String::from("fields"), Json::Object(values.into_iter().collect::<BTreeMap<_, _>>()));
        }
        body
    }
}

/// A webhook field: a plain name (`contact.` and `ticket.` are HubSpot's objects), taking the
/// answer as the form sent it.
fn as_sent(name: &str) -> Result<(String, FieldType), String> {
    if name.contains('.') {
        return Err(String::from("is not a plain name (contact. and ticket. name HubSpot's objects)"));
    }
    Ok((name.to_owned(), FieldType::of(Kind::AsSent)))
}

/// The `webhook-id` of a submission's lead: `msg_` and the hex SHA-256 of the submission ID.
/// Stable across attempts, and plain ASCII without `.` as the specification asks of message
/// IDs (the signed content is `id.timestamp.body`; a sender-chosen ID could hold anything).
pub fn message_id(submission_id: &str) -> String {
    use sha2::{Digest, Sha256};
    format!("msg_{}", shared::hex::encode(&Sha256::digest(submission_id.as_bytes())))
}

impl LeadSink for Webhook {
    async fn upsert(&self, lead: &Lead, receipt_key: &str) -> Result<(), SinkError> {
        // The key holds the submission ID, which may be any text without controls: sent as its
        // UTF-8 bytes. Should a value ever be refused, that is this lead's problem (FAILED),
        // not an unreachable sink retried forever.
        let unsendable = |_| SinkError::Permanent { reason: "sink_unsendable_key" };
        let key = HeaderValue::from_bytes(receipt_key.as_bytes()).map_err(unsendable)?;
        // Standard Webhooks: `webhook-id` is the same on every attempt for one submission, so the
        // receiver can deduplicate by it; the signature covers id, timestamp and body.
        let id = message_id(&lead.external_id);
        let timestamp = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()).to_string();
        let body = self.body(lead, receipt_key).to_text();
        let signature = signature_header(&self.secret, &id, &timestamp, body.as_bytes());
        let request = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("idempotency-key", key)
            .header("webhook-id", &id)
            .header("webhook-timestamp", timestamp)
            .header("webhook-signature", signature)
            .body(body);
        send(request).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_ids_are_stable_plain_and_distinct() {
        // printf 'sub_wh' | sha256sum
        assert_eq!(message_id("sub_wh"), "msg_8b730cec2b942d6afc7592a68695c0697d2734bf647b26df62f3e153d8ae0f9a");
        assert_eq!(message_id("a.b/é"), message_id("a.b/é"));
        assert_ne!(message_id("a"), message_id("b"));
        assert!(message_id("a.b/é").bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'));
    }

    fn sink(mapping: &str) -> Result<Webhook, String> {
        let secret = SigningSecret::plain("whsec-test").unwrap();
        let mapping = crate::mapping::parse(mapping, "m").unwrap();
        Webhook::new(reqwest::Client::new(), "http://127.0.0.1:9/leads", secret).with_mapping(&mapping)
    }

    fn lead(extra: &str, form: &str) -> Lead {
        let Json::Object(extra) = shared::json::parse(extra.as_bytes()).unwrap() else { unreachable!() };
        Lead {
            external_id: "t1".into(),
            name: "Ada".into(),
            email: "ada@example.com".into(),
            extra,
            form: form.into(),
            ..Lead::default()
        }
    }

    #[test]
    fn mapped_answers_go_into_fields_as_sent_with_the_constants() {
        let text = "[tally.fields]\n\"Company size\" = \"company_size\"\nTopics = \"topics\"\nname = \"full_name\"\nabsent = \"gone\"\n[tally.constants]\nlead_source = \"Web\"\nrating = 3\n[tally.forms.w4Nd.fields]\nteam = \"company_size\"\n[tally.forms.w4Nd.constants]\nlead_source = \"Partners\"\n";
        let sink = sink(text).unwrap();
        let lead = lead(r#"{"Company size":" 11-50 ","Topics":["A","B"],"Other":"kept in extra"}"#, "");
        let body = sink.body(&lead, "tally:t1");
        assert_eq!(
            body.get("fields").unwrap().to_text(),
            r#"{"company_size":" 11-50 ","full_name":"Ada","lead_source":"Web","rating":3,"topics":["A","B"]}"#
        );
        assert_eq!(body.get("extra"), Some(&lead.to_json().get("extra").unwrap().clone()), "every answer kept");
        // A form's own field and constant over the profile's (its team answer absent, the
        // profile's "Company size" is not used); another profile's lead: an empty `fields`.
        let partner = sink.body(&self::lead(r#"{"Company size":"11-50"}"#, "w4Nd"), "tally:t1");
        assert_eq!(
            partner.get("fields").unwrap().to_text(),
            r#"{"full_name":"Ada","lead_source":"Partners","rating":3}"#
        );
        assert_eq!(sink.body(&lead, "typeform:t1").get("fields").unwrap().to_text(), "{}");
        // No mapping: the lead's JSON as it always was.
        let unmapped = self::sink("").unwrap();
        assert_eq!(unmapped.body(&lead, "tally:t1"), lead.to_json());
        assert_eq!(unmapped.mapping_lines(), ["no LEAD_MAPPING: the body has no fields object (docs/mapping.md)"]);
        let lines = sink.mapping_lines();
        assert!(lines.contains(&String::from("[tally] \"Company size\" -> company_size (as sent)")), "{lines:?}");
        assert!(lines.contains(&String::from("[tally] constant -> rating (as sent) = 3")), "{lines:?}");
    }

    #[test]
    fn a_hubspot_object_or_an_empty_constant_is_refused_naming_the_line() {
        let error = sink("[tally.fields]\nsize = \"contact.size\"\n").err().unwrap();
        assert!(
            error.starts_with("LEAD_MAPPING line 2 ([tally]): the webhook field \"contact.size\" is not a plain name"),
            "{error}"
        );
        let error = sink("[tally.fields]\nsize = \"ticket.size\"\n").err().unwrap();
        assert!(error.contains("the webhook field \"ticket.size\" is not a plain name"), "{error}");
        let error = sink("[tally.constants]\n\nsource = \"\"\n").err().unwrap();
        assert!(
            error.starts_with("LEAD_MAPPING line 3 ([tally]): the webhook field \"source\" is given an empty constant"),
            "{error}"
        );
    }
}
