//! Deliveries as every registered sender profile sends them: each profile's example (from its
//! sender's documented payload where one is published), signed as its `SenderAuth` declares by
//! code that is not the core's (the reference `standardwebhooks` library; an HMAC of its own).
//! What a scheme declares (its header, prefix, encoding, what it covers) is the core's: each
//! profile's own unit tests pin it to its vendor's documentation with vectors computed apart.
//! A new profile needs nothing here.

use base64::Engine as _;
use shared::auth::{Covers, Encoding, HmacScheme};
use shared::profile::registry::sender;
use shared::profile::sender::SenderAuth;
use shared::profile::Profile;

/// The Standard Webhooks secret the tests configure (`whsec_` + base64), for every profile
/// whose deliveries are signed as Standard Webhooks says.
pub const STANDARD_WEBHOOKS_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// The secret the tests configure for `profile` (for Static Forms, its Bearer token): one of
/// its own for each body-signing profile, made from the variable that lists it.
pub fn secret(profile: Profile) -> String {
    match sender(profile).auth() {
        SenderAuth::StaticForms => crate::delivery::BEARER.to_owned(),
        SenderAuth::StandardWebhooks { .. } => STANDARD_WEBHOOKS_SECRET.to_owned(),
        SenderAuth::BodySigned { variable, .. } => format!("it-{}-5d1c", variable.to_lowercase().replace('_', "-")),
    }
}

/// The Worker bindings that enable every registered profile with the secrets above (Static
/// Forms' own credentials are the caller's).
pub fn bindings() -> Vec<(&'static str, String)> {
    let names: Vec<&str> = Profile::ALL.iter().map(|p| p.name()).collect();
    let mut bindings = vec![("WEBHOOK_PROFILES", names.join(","))];
    for profile in Profile::ALL {
        match sender(profile).auth() {
            SenderAuth::StaticForms => {}
            SenderAuth::StandardWebhooks { variable } | SenderAuth::BodySigned { variable, .. } => {
                bindings.push((variable, secret(profile)))
            }
        }
    }
    bindings
}

/// The body `profile`'s sender sends for the submission `id`, with `answer` as its free-text
/// answer (so two calls with other answers are other content under the same identity): the
/// profile's own example ([`shared::profile::sender::Sender::example`]), from its sender's
/// documented payload. Standard Webhooks has no body identity: `id` goes in `webhook-id`
/// ([`headers`]).
pub fn body(profile: Profile, id: &str, answer: &str) -> Vec<u8> {
    sender(profile).example(id, answer).body
}

/// The headers `profile`'s sender sends with `body` (the example's, for submission `id`),
/// signed with `secret` (the configured one when `None`) as its [`SenderAuth`] says, by
/// libraries that are not the core's: the reference `standardwebhooks` crate, and an HMAC of
/// its own for body signatures.
pub fn headers(profile: Profile, id: &str, body: &[u8], secret: Option<&str>) -> Vec<(String, String)> {
    headers_at(profile, id, body, secret, crate::delivery::now_secs())
}

/// [`headers`] as the sender would have signed them at `now` (Unix seconds): a stale or future
/// delivery, for the schemes that sign a time.
pub fn headers_at(profile: Profile, id: &str, body: &[u8], secret: Option<&str>, now: u64) -> Vec<(String, String)> {
    let example = sender(profile).example(id, "");
    let mut headers: Vec<(String, String)> =
        example.headers.iter().map(|(n, v)| ((*n).to_owned(), v.clone())).collect();
    let secret = secret.map_or_else(|| self::secret(profile), str::to_owned);
    match sender(profile).auth() {
        SenderAuth::StaticForms => headers.push(("Authorization".into(), format!("Bearer {secret}"))),
        SenderAuth::StandardWebhooks { .. } => {
            let now = i64::try_from(now).unwrap();
            let signer = standardwebhooks::Webhook::new(&secret).unwrap();
            let message_id = headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("webhook-id")).unwrap().1.clone();
            headers.push(("webhook-timestamp".into(), now.to_string()));
            headers.push(("webhook-signature".into(), signer.sign(&message_id, now, body).unwrap()));
        }
        SenderAuth::BodySigned { scheme, .. } => {
            headers.extend(form_backend_signature(scheme, &secret, &headers, body, now))
        }
    }
    headers
}

/// A form backend's signature headers for `body`, computed here as each vendor documents it
/// (not by the core's signer): the HMAC-SHA256 under the secret's text of the body, after
/// Webflow's `{timestamp in ms}:` or Formspree's `{t}.`, or before Framer's submission ID;
/// base64 for Typeform and Tally, lowercase hex for the rest.
fn form_backend_signature(
    scheme: HmacScheme,
    secret: &str,
    others: &[(String, String)],
    body: &[u8],
    now: u64,
) -> Vec<(String, String)> {
    let mut mac = hmac_sha256::HMAC::new(secret.as_bytes());
    let mut signed = Vec::new();
    match scheme.covers {
        Covers::Body => mac.update(body),
        Covers::BodyThenHeader(name) => {
            mac.update(body);
            mac.update(others.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str()).unwrap());
        }
        Covers::MillisHeaderColonBody(name) => {
            let millis = (now * 1000).to_string();
            mac.update(format!("{millis}:"));
            mac.update(body);
            signed.push((name.to_owned(), millis));
        }
        Covers::InlineSecondsDotBody => {
            mac.update(format!("{now}."));
            mac.update(body);
        }
    }
    let digest = mac.finalize();
    let tag = match scheme.encoding {
        Encoding::Base64 => base64::engine::general_purpose::STANDARD.encode(digest),
        Encoding::Hex => digest.iter().map(|b| format!("{b:02x}")).collect(),
    };
    let value = match scheme.covers {
        Covers::InlineSecondsDotBody => format!("t={now},v1={}{tag}", scheme.prefix),
        _ => format!("{}{tag}", scheme.prefix),
    };
    signed.push((scheme.header.to_owned(), value));
    signed
}

/// The receipt key and lead key (`external_id`) of `profile`'s submission `id`, as its
/// example states them (Typeform's identity is the form's ID and the response token).
pub fn keys(profile: Profile, id: &str) -> (String, String) {
    let example = sender(profile).example(id, "");
    (profile.key(&example.identity), example.external_id)
}
