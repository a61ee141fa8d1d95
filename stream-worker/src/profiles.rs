//! `stream-worker profiles`: every sender profile the core registers, as JSON, for scripts and
//! people setting a sender up: its name, its route, how its deliveries are signed and which
//! variable holds its secrets, and, with `--example <id>`, the sender's example delivery for
//! that identity (its headers besides the signature, its body, its receipt and lead keys, the
//! lead's name and email).
//! `make dev` configures a local secret per profile from it and `make demo` sends each
//! profile's example, so a new profile needs nothing in either.

use serde_json::{json, Value};
use shared::auth::{Covers, Encoding};
use shared::profile::registry::sender;
use shared::profile::sender::SenderAuth;
use shared::profile::Profile;

/// Every registered profile; with `example`, `(identity, free-text answer)`, each one's example
/// delivery too.
pub fn describe(example: Option<(&str, &str)>) -> Value {
    let profiles = Profile::ALL.into_iter().map(|profile| {
        let sender = sender(profile);
        let auth = match sender.auth() {
            SenderAuth::StaticForms => json!({"scheme": "staticforms"}),
            SenderAuth::StandardWebhooks { variable } => json!({"scheme": "standard-webhooks", "variable": variable}),
            SenderAuth::BodySigned { scheme, variable, header_variable } => {
                let encoding = match scheme.encoding {
                    Encoding::Base64 => "base64",
                    Encoding::Hex => "hex",
                };
                let mut described = json!({
                    "scheme": "body-signature", "header": scheme.header, "prefix": scheme.prefix,
                    "encoding": encoding, "variable": variable,
                });
                // What the HMAC covers besides the body: `{timestamp}:` before it (Webflow, in
                // milliseconds), `{t}.` before it (Formspree, in the header), a header after it.
                match scheme.covers {
                    Covers::Body => {}
                    Covers::BodyThenHeader(header) => described["bodyThenHeader"] = json!(header),
                    Covers::MillisHeaderColonBody(header) => described["millisHeader"] = json!(header),
                    Covers::InlineSecondsDotBody => described["inlineTimestamp"] = json!(true),
                }
                if let Some(header_variable) = header_variable {
                    described["headerVariable"] = json!(header_variable);
                }
                described
            }
        };
        let stored = profile.acknowledgement().status();
        let mut described = json!({"name": profile.name(), "route": profile.path(), "auth": auth, "stored": stored});
        if let Some((id, answer)) = example {
            let example = sender.example(id, answer);
            let headers: serde_json::Map<String, Value> =
                example.headers.iter().map(|(name, value)| ((*name).to_owned(), json!(value))).collect();
            described["example"] = json!({
                "headers": headers,
                "body": String::from_utf8_lossy(&example.body),
                "receiptKey": profile.key(&example.identity),
                "leadKey": example.external_id,
                "lead": {"name": example.name_and_email.0, "email": example.name_and_email.1},
            });
        }
        described
    });
    Value::Array(profiles.collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_profile_is_described_with_its_route_and_signature() {
        let all = describe(None);
        let names: Vec<&str> = all.as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
        assert_eq!(names, Profile::ALL.map(Profile::name));
        assert_eq!(
            all[0],
            json!({"name": "staticforms", "route": "/webhooks/staticforms", "auth": {"scheme": "staticforms"}, "stored": 202})
        );
        assert_eq!(all[1]["auth"], json!({"scheme": "standard-webhooks", "variable": "STANDARD_WEBHOOKS_SECRETS"}));
        assert_eq!(
            all[2]["auth"],
            json!({"scheme": "body-signature", "header": "typeform-signature", "prefix": "sha256=", "encoding": "base64", "variable": "TYPEFORM_SECRETS"})
        );
        assert_eq!(all[3]["route"], "/webhooks/tally");
        assert!(all
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["route"] == format!("/webhooks/{}", p["name"].as_str().unwrap())));
        assert!(all.as_array().unwrap().iter().all(|p| p.get("example").is_none()));
    }

    #[test]
    fn an_example_is_the_sender_s_delivery_for_the_identity_given() {
        let all = describe(Some(("demo-7", "a \"quoted\" answer")));
        let typeform = &all[2]["example"];
        assert_eq!(typeform["receiptKey"], "typeform:lT4Z3j:demo-7");
        assert_eq!(typeform["leadKey"], "typeform:lT4Z3j:demo-7");
        let body: Value = serde_json::from_str(typeform["body"].as_str().unwrap()).unwrap();
        assert_eq!(body["form_response"]["token"], "demo-7");
        assert_eq!(body["form_response"]["answers"][0]["text"], "a \"quoted\" answer");
        let static_forms = &all[0]["example"];
        assert_eq!(static_forms["headers"]["Idempotency-Key"], "staticforms:form.submitted:demo-7");
        assert_eq!(static_forms["leadKey"], "demo-7");
        assert_eq!(all[1]["example"]["headers"]["webhook-id"], "demo-7");
        assert_eq!(all[1]["example"]["lead"], json!({"name": "Grace Hopper", "email": "grace@example.com"}));
    }
}
