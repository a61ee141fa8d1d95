//! The common contract, run on every profile the registry lists, from each profile's own
//! example delivery ([`Sender::example`]) signed as its [`Sender::auth`] says: a new profile
//! gets these proofs with no new test code. The store is a conditional put over a map, answering
//! as DynamoDB does (`ConditionalCheckFailedException` with the old item).

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use wasm_bindgen_test::wasm_bindgen_test;

use crate::auth::{body_signature_header, signature_header, AuthPolicy, BodySignature};
use crate::dynamo::{item_from_wire, item_to_wire, AttributeValue};
use crate::headers::Headers;
use crate::json::parse_wire;
use crate::mapping::LeadMapping;
use crate::profile::registry::sender;
use crate::profile::sender::{Example, Sender, SenderAuth};
use crate::profile::Profile;
use crate::receive::{receive, Delivery, PendingPut, Policy, Step};
use crate::secret::{Credential, SigningSecret};
use crate::store::classify_put;
use crate::stream::{decide, NewImage, RecordAction};

const NOW_MILLIS: u64 = 1_796_019_713_000;
const TOKEN: &str = "contract-bearer-token";
const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const PLAIN: &str = "contract-body-secret";

/// Who may send to `sender`'s profile: the configuration its [`SenderAuth`] asks for.
fn auth_for(sender: &dyn Sender) -> AuthPolicy {
    match sender.auth() {
        SenderAuth::StaticForms => {
            AuthPolicy { bearer_tokens: vec![Credential::new(TOKEN.as_bytes())], ..AuthPolicy::default() }
        }
        SenderAuth::StandardWebhooks { .. } => {
            AuthPolicy { signing_secrets: vec![SigningSecret::parse(WHSEC).unwrap()], ..AuthPolicy::default() }
        }
        SenderAuth::BodySigned { header, prefix, .. } => AuthPolicy {
            body_signature: Some(BodySignature { header, prefix, secrets: vec![SigningSecret::plain(PLAIN).unwrap()] }),
            ..AuthPolicy::default()
        },
    }
}

/// The example's headers with its authentication; `forged` signs with another secret.
fn signed(sender: &dyn Sender, example: &Example, forged: bool) -> Headers {
    let mut headers: Vec<(String, String)> =
        example.headers.iter().map(|(n, v)| (String::from(*n), v.clone())).collect();
    let pick = |genuine: &str, other: &'static str| if forged { String::from(other) } else { String::from(genuine) };
    match sender.auth() {
        SenderAuth::StaticForms => headers.push(("Authorization".into(), format!("Bearer {}", pick(TOKEN, "forged")))),
        SenderAuth::StandardWebhooks { .. } => {
            let secret =
                SigningSecret::parse(&pick(WHSEC, "whsec_YW5vdGhlci1rZXktZm9yLXJvdGF0aW9uLXRlc3RzISE=")).unwrap();
            let id = example.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("webhook-id")).map(|(_, v)| v.clone());
            let timestamp = format!("{}", NOW_MILLIS / 1000);
            let signature = signature_header(&secret, &id.unwrap_or_default(), &timestamp, &example.body);
            headers.extend([("webhook-timestamp".into(), timestamp), ("webhook-signature".into(), signature)]);
        }
        SenderAuth::BodySigned { header, prefix, .. } => {
            let secret = SigningSecret::plain(&pick(PLAIN, "another-secret")).unwrap();
            headers.push((String::from(header), body_signature_header(&secret, prefix, &example.body)));
        }
    }
    Headers::new(headers)
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
    for profile in Profile::ALL {
        let sender = sender(profile);
        assert_eq!(sender.profile(), profile, "the registry's line for {profile:?}");
        let policy = Policy::single(profile, auth_for(sender), "receipts");
        let example = sender.example("contract-1", "first answer");
        let headers = signed(sender, &example, false);
        let mut store = Store::default();

        // Racing copies: both pass every check; the conditional put stores one.
        let first = pending(deliver(&policy, profile, &headers, &example.body), "the first copy");
        let racing = pending(deliver(&policy, profile, &headers, &example.body), "the racing copy");
        assert_eq!(store.finish(&first), 202, "{profile:?}: the first copy");
        assert_eq!(store.finish(&racing), 200, "{profile:?}: the racing copy");
        assert_eq!(store.0.keys().collect::<Vec<_>>(), [&profile.key(&example.identity)], "{profile:?}'s key");

        // A retry, later: 200, nothing stored again.
        let retry = pending(deliver(&policy, profile, &headers, &example.body), "the retry");
        assert_eq!(store.finish(&retry), 200, "{profile:?}: the retry");

        // The same identity with other content: 422.
        let changed = sender.example("contract-1", "another answer");
        let step = deliver(&policy, profile, &signed(sender, &changed, false), &changed.body);
        assert_eq!(store.finish(&pending(step, "changed content")), 422, "{profile:?}: changed content");

        // Forged: 401, before anything is read.
        assert_eq!(status(deliver(&policy, profile, &signed(sender, &example, true), &example.body)), 401);

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
    }
}
