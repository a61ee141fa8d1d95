//! Deliveries as the other sender profiles send them: Standard Webhooks (signed by the
//! reference `standardwebhooks` library), Typeform and Tally (their documented example
//! payloads, signed as their documentation says, with an HMAC that is not the core's).

use base64::Engine as _;
use serde_json::Value;
use shared::profile::Profile;

/// The Standard Webhooks secret the tests configure (`whsec_` + base64).
pub const STANDARD_WEBHOOKS_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
/// Typeform's webhook secret the tests configure.
pub const TYPEFORM_SECRET: &str = "it-typeform-secret-5d1c";
/// Tally's signing secret the tests configure.
pub const TALLY_SECRET: &str = "it-tally-secret-8a0e";

/// The Worker bindings that enable every profile with the secrets above (Static Forms' own
/// credentials are the caller's).
pub fn bindings() -> Vec<(&'static str, String)> {
    vec![
        ("WEBHOOK_PROFILES", "staticforms,standard-webhooks,typeform,tally".into()),
        ("STANDARD_WEBHOOKS_SECRETS", STANDARD_WEBHOOKS_SECRET.into()),
        ("TYPEFORM_SECRETS", TYPEFORM_SECRET.into()),
        ("TALLY_SECRETS", TALLY_SECRET.into()),
    ]
}

fn fixture(name: &str) -> Value {
    let path = crate::process::repo_root().join("shared/tests/fixtures").join(name);
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

/// The body `profile`'s sender sends for the submission `id`, with `answer` as its free-text
/// answer (so two calls with other answers are other content under the same identity).
/// Standard Webhooks has no body identity: `id` goes in `webhook-id` ([`headers`]).
pub fn body(profile: Profile, id: &str, answer: &str) -> Vec<u8> {
    let mut body = match profile {
        Profile::StaticForms => return crate::delivery::body(id, answer, crate::delivery::now_secs()),
        Profile::StandardWebhooks => serde_json::json!({
            "type": "contact.created",
            "timestamp": "2022-11-03T20:26:10.344522Z",
            "data": {"name": "Grace Hopper", "email": "grace@example.com", "message": answer, "plan": "pro"}
        }),
        Profile::Typeform => fixture("typeform.json"),
        Profile::Tally => fixture("tally.json"),
    };
    match profile {
        Profile::Typeform => {
            body["form_response"]["token"] = id.into();
            body["form_response"]["answers"][0]["text"] = answer.into();
        }
        Profile::Tally => {
            body["data"]["responseId"] = id.into();
            body["data"]["submissionId"] = id.into();
            body["data"]["fields"][4]["value"] = answer.into();
        }
        _ => {}
    }
    serde_json::to_vec(&body).unwrap()
}

/// The headers `profile`'s sender sends with `body` (for Standard Webhooks, `id` is the
/// message ID), signed with `secret` (the configured one when `None`).
pub fn headers(profile: Profile, id: &str, body: &[u8], secret: Option<&str>) -> Vec<(String, String)> {
    let mut headers = vec![("Content-Type".to_owned(), "application/json".to_owned())];
    let hmac =
        |key: &str| base64::engine::general_purpose::STANDARD.encode(hmac_sha256::HMAC::mac(body, key.as_bytes()));
    match profile {
        Profile::StaticForms => {
            headers.push(("Authorization".into(), format!("Bearer {}", secret.unwrap_or(crate::delivery::BEARER))));
            headers.push(("Idempotency-Key".into(), crate::delivery::key(id)));
        }
        Profile::StandardWebhooks => {
            let now = i64::try_from(crate::delivery::now_secs()).unwrap();
            let signer = standardwebhooks::Webhook::new(secret.unwrap_or(STANDARD_WEBHOOKS_SECRET)).unwrap();
            headers.push(("webhook-id".into(), id.into()));
            headers.push(("webhook-timestamp".into(), now.to_string()));
            headers.push(("webhook-signature".into(), signer.sign(id, now, body).unwrap()));
        }
        Profile::Typeform => {
            headers.push(("Typeform-Signature".into(), format!("sha256={}", hmac(secret.unwrap_or(TYPEFORM_SECRET)))))
        }
        Profile::Tally => headers.push(("Tally-Signature".into(), hmac(secret.unwrap_or(TALLY_SECRET)))),
    }
    headers
}

/// The receipt key and lead key (`external_id`) of `profile`'s submission `id` (Typeform's
/// identity is the form's ID and the response token).
pub fn keys(profile: Profile, id: &str) -> (String, String) {
    let identity = match profile {
        Profile::Typeform => format!("lT4Z3j:{id}"),
        _ => id.to_owned(),
    };
    let key = profile.key(&identity);
    let lead = if profile == Profile::StaticForms { identity } else { key.clone() };
    (key, lead)
}
