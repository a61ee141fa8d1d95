//! The common contract, run on every profile the registry lists, from each profile's own
//! example delivery ([`crate::profile::sender::Sender::example`]) signed as its `auth()` says,
//! with every profile enabled, each with a secret of its own, and only the headers the edge
//! passes on: a new profile gets these proofs with no new test code. The store is a
//! conditional put over a map, answering as DynamoDB does (`ConditionalCheckFailedException`
//! with the old item).

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use wasm_bindgen_test::wasm_bindgen_test;

use crate::auth::{body_signature_headers, signature_header, AuthPolicy, BodySignature};
use crate::decision::Outcome;
use crate::dynamo::{item_from_wire, item_to_wire, AttributeValue};
use crate::headers::Headers;
use crate::json::parse_wire;
use crate::mapping::LeadMapping;
use crate::profile::registry::sender;
use crate::profile::sender::{Example, SenderAuth};
use crate::profile::Profile;
use crate::receive::{receive, Delivery, PendingPut, Policy, Step};
use crate::secret::{Credential, SigningSecret};
use crate::store::classify_put;
use crate::stream::{decide, NewImage, RecordAction};

const NOW_MILLIS: u64 = 1_796_019_713_000;

/// `profile`'s own secret: each profile's differs, so one profile's credential is never
/// another's (the `forged` one is no profile's).
fn secret_text(profile: Profile, forged: bool) -> String {
    format!("contract-{}-{}", profile.name(), if forged { "forged" } else { "secret" })
}

fn signing_secret(profile: Profile, forged: bool) -> SigningSecret {
    match sender(profile).auth() {
        SenderAuth::StandardWebhooks { .. } => {
            SigningSecret::parse(&SigningSecret::encode(secret_text(profile, forged).as_bytes())).unwrap()
        }
        _ => SigningSecret::plain(&secret_text(profile, forged)).unwrap(),
    }
}

/// Who may send to `profile`: the configuration its `SenderAuth` asks for, with its secret.
fn auth_for(profile: Profile) -> AuthPolicy {
    match sender(profile).auth() {
        SenderAuth::StaticForms => AuthPolicy {
            bearer_tokens: vec![Credential::new(secret_text(profile, false).as_bytes())],
            ..AuthPolicy::default()
        },
        SenderAuth::StandardWebhooks { .. } => {
            AuthPolicy { signing_secrets: vec![signing_secret(profile, false)], ..AuthPolicy::default() }
        }
        SenderAuth::BodySigned { scheme, .. } => AuthPolicy {
            body_signature: Some(BodySignature::new(scheme, vec![signing_secret(profile, false)])),
            ..AuthPolicy::default()
        },
    }
}

/// Every registered profile enabled, each with its own secret.
fn every_profile() -> Policy {
    let mut policy = Policy::single(Profile::ALL[0], auth_for(Profile::ALL[0]), "receipts");
    policy.senders = Profile::ALL.into_iter().map(|p| (p, auth_for(p))).collect();
    policy
}

/// The example's headers with its authentication as `signer`'s sender signs (`forged`: with
/// a secret that is no profile's), and a header the edge does not pass on.
fn signed(signer: Profile, example: &Example, body: &[u8], forged: bool) -> Vec<(String, String)> {
    let mut headers: Vec<(String, String)> =
        example.headers.iter().map(|(n, v)| (String::from(*n), v.clone())).collect();
    headers.push(("User-Agent".into(), "contract".into()));
    match sender(signer).auth() {
        SenderAuth::StaticForms => {
            headers.push(("Authorization".into(), format!("Bearer {}", secret_text(signer, forged))))
        }
        SenderAuth::StandardWebhooks { .. } => {
            let id = example.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("webhook-id")).map(|(_, v)| v.clone());
            let timestamp = format!("{}", NOW_MILLIS / 1000);
            let signature =
                signature_header(&signing_secret(signer, forged), &id.unwrap_or_default(), &timestamp, body);
            headers.extend([("webhook-timestamp".into(), timestamp), ("webhook-signature".into(), signature)]);
        }
        SenderAuth::BodySigned { scheme, .. } => {
            let config = BodySignature::new(scheme, vec![]);
            let others = Headers::new(headers.clone());
            headers.extend(body_signature_headers(&config, &signing_secret(signer, forged), &others, body, NOW_MILLIS));
        }
    }
    headers
}

/// What the shell hands the core: only the headers the policy names for `profile` (the edge
/// collects no others).
fn as_the_edge_passes(policy: &Policy, profile: Profile, headers: &[(String, String)]) -> Headers {
    let all = Headers::new(headers.to_vec());
    let named: Vec<(String, String)> = policy
        .header_names(profile)
        .filter_map(|name| all.get(name).map(|value| (String::from(name), String::from(value))))
        .collect();
    Headers::new(named)
}

/// A conditional put over a map, by the receipt's `pk`: the status and body DynamoDB answers.
#[derive(Default)]
struct Store(BTreeMap<String, String>);

impl Store {
    fn put(&mut self, pending: &PendingPut) -> (u16, String) {
        let request = parse_wire(pending.request.body.as_bytes()).unwrap();
        let item = item_from_wire(request.get("Item").unwrap()).unwrap();
        let key = String::from(item.get("pk").and_then(AttributeValue::as_s).unwrap());
        match self.0.get(&key) {
            Some(old) => {
                let body = format!(
                    r#"{{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","Item":{old}}}"#
                );
                (400, body)
            }
            None => {
                self.0.insert(key, item_to_wire(&item).to_text());
                (200, String::from("{}"))
            }
        }
    }

    fn finish(&mut self, pending: &PendingPut) -> u16 {
        let (status, body) = self.put(pending);
        pending.finish(classify_put(status, body.as_bytes())).response().status
    }
}

fn deliver(policy: &Policy, profile: Profile, headers: &Headers, body: &[u8]) -> Step {
    receive(policy, &Delivery { profile, headers, body, request_id: "contract-req", now_millis: NOW_MILLIS })
}

fn pending(step: Step, what: &str) -> PendingPut {
    match step {
        Step::Store(pending) => pending,
        Step::Respond(outcome, _) => panic!("{what}: answered {outcome:?} without storing"),
    }
}

fn status(step: Step) -> u16 {
    match step {
        Step::Respond(outcome, _) => outcome.response().status,
        Step::Store(_) => panic!("stored"),
    }
}

#[wasm_bindgen_test(unsupported = test)]
fn every_registered_profile_keeps_the_common_contract() {
    let policy = every_profile();
    for profile in Profile::ALL {
        let sender = sender(profile);
        assert_eq!(sender.profile(), profile, "the registry's line for {profile:?}");
        let send = |headers: &[(String, String)], body: &[u8], policy: &Policy| {
            deliver(policy, profile, &as_the_edge_passes(policy, profile, headers), body)
        };
        let example = sender.example("contract-1", "first answer");
        let headers = signed(profile, &example, &example.body, false);
        let mut store = Store::default();

        // Racing copies: both pass every check; the conditional put stores one.
        let first = pending(send(&headers, &example.body, &policy), "the first copy");
        let racing = pending(send(&headers, &example.body, &policy), "the racing copy");
        let stored = profile.acknowledgement().status();
        assert_eq!(store.finish(&first), stored, "{profile:?}: the first copy");
        assert_eq!(store.finish(&racing), 200, "{profile:?}: the racing copy");
        assert_eq!(store.0.keys().collect::<Vec<_>>(), [&profile.key(&example.identity)], "{profile:?}'s key");

        // A retry, later: 200, nothing stored again.
        let retry = pending(send(&headers, &example.body, &policy), "the retry");
        assert_eq!(store.finish(&retry), 200, "{profile:?}: the retry");

        // The same identity with other content: 422.
        let changed = sender.example("contract-1", "another answer");
        let step = send(&signed(profile, &changed, &changed.body, false), &changed.body, &policy);
        assert_eq!(store.finish(&pending(step, "changed content")), 422, "{profile:?}: changed content");

        // Forged, another profile's credential, or a body changed after signing: 401, before
        // anything is read (Static Forms' bearer token signs no body).
        let refused = |step: Step| matches!(step, Step::Respond(Outcome::Unauthenticated(..), _));
        assert!(refused(send(&signed(profile, &example, &example.body, true), &example.body, &policy)));
        for other in Profile::ALL.into_iter().filter(|o| *o != profile) {
            let theirs = signed(other, &example, &example.body, false);
            assert!(refused(send(&theirs, &example.body, &policy)), "{profile:?} took {other:?}'s credential");
        }
        let mut tampered = example.body.clone();
        tampered.insert(1, b' ');
        let signs_the_body = sender.auth() != SenderAuth::StaticForms;
        assert_eq!(refused(send(&headers, &tampered, &policy)), signs_the_body, "{profile:?}: a tampered body");

        // Accepted means processable: the stored item becomes the example's lead.
        let wire = store.0.values().next().unwrap().clone();
        let image = NewImage::from_wire(wire.as_bytes(), || (None, None, None));
        match decide("INSERT", &image, &LeadMapping::default()) {
            RecordAction::Apply { lead, receipt } => {
                assert_eq!(receipt.profile, profile);
                assert_eq!(lead.external_id, example.external_id, "{profile:?}'s lead key");
                assert_eq!((lead.name.as_str(), lead.email.as_str()), example.name_and_email, "{profile:?}'s lead");
                assert_eq!(lead.message, "first answer", "{profile:?}'s lead");
            }
            other => panic!("{profile:?}: the stream worker would {other:?}"),
        }

        // Disabled: its route does not exist (404), whatever the delivery.
        let mut without = policy.clone();
        without.senders.retain(|(p, _)| *p != profile);
        assert_eq!(status(send(&headers, &example.body, &without)), 404, "{profile:?} disabled");
    }
}

/// Odd but valid identities and answers (the ID's edges: `/`, `+`, `=`, `:`, spaces, non-ASCII,
/// 1,000 bytes; answers with quotes, markup, emoji, backslashes) are taken by every profile and
/// become its lead.
#[wasm_bindgen_test(unsupported = test)]
fn every_registered_profile_takes_odd_but_valid_deliveries_and_processes_them() {
    let policy = every_profile();
    let long = "x".repeat(1000);
    let ids = ["sub/8fK2", "a+b==", "a:b:c", " spaced id", "ünïcødé-日本", long.as_str()];
    let answers = ["", "\"quoted\" and 'single'", "<script>alert(1)</script>", "emoji 😀 and \\ backslash"];
    for profile in Profile::ALL {
        for id in ids {
            for answer in answers {
                let example = sender(profile).example(id, answer);
                let headers = as_the_edge_passes(&policy, profile, &signed(profile, &example, &example.body, false));
                let step = deliver(&policy, profile, &headers, &example.body);
                let pending = pending(step, &format!("{profile:?} {id:?} {answer:?}"));
                let mut store = Store::default();
                assert_eq!(store.finish(&pending), profile.acknowledgement().status());
                let wire = store.0.values().next().unwrap().clone();
                let image = NewImage::from_wire(wire.as_bytes(), || (None, None, None));
                match decide("INSERT", &image, &LeadMapping::default()) {
                    RecordAction::Apply { lead, .. } => {
                        assert_eq!(
                            (lead.external_id.as_str(), lead.message.as_str()),
                            (example.external_id.as_str(), answer)
                        )
                    }
                    other => panic!("{profile:?} {id:?}: the stream worker would {other:?}"),
                }
            }
        }
    }
}

/// What the registry's profiles declare is consistent: Static Forms' own methods are Static
/// Forms' alone, no two profiles share a secrets variable, and every other profile's lead is
/// keyed by its receipt key (so no two profiles' leads share a key).
#[wasm_bindgen_test(unsupported = test)]
fn the_registry_s_declarations_are_consistent() {
    let mut variables = Vec::new();
    for profile in Profile::ALL {
        let sender = sender(profile);
        match sender.auth() {
            SenderAuth::StaticForms => assert_eq!(profile, Profile::StaticForms, "only Static Forms takes WEBHOOK_*"),
            SenderAuth::StandardWebhooks { variable } | SenderAuth::BodySigned { variable, .. } => {
                assert!(!variables.contains(&variable), "{variable} holds two profiles' secrets");
                variables.push(variable);
            }
        }
        if profile != Profile::StaticForms {
            let example = sender.example("k-1", "");
            assert_eq!(example.external_id, profile.key(&example.identity), "{profile:?}'s lead key");
        }
    }
}
