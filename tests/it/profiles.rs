//! Every sender profile through the real path: the built Worker in workerd with every profile
//! enabled, a fault proxy, the signature-checking store and its stream, and the stream worker
//! writing leads to SQLite. Deliveries are each sender's documented example payload, signed as
//! the sender documents (Standard Webhooks by the reference `standardwebhooks` library).

use std::collections::BTreeMap;

use serde_json::json;
use shared::profile::registry::sender;
use shared::profile::Profile;
use tests::http::Answer;
use tests::proxy::Mode;
use tests::senders;
use tests::stack::{Stack, TABLE};
use tests::worker;

const PROFILES: [Profile; Profile::ALL.len()] = Profile::ALL;

/// Every part of the path, running ([`Stack`], the Worker through a fault proxy), with every
/// profile enabled (or those in `profiles`).
struct Path(Stack, std::sync::Mutex<Vec<(String, String)>>);

impl std::ops::Deref for Path {
    type Target = Stack;
    fn deref(&self) -> &Stack {
        &self.0
    }
}

async fn path(profiles: Option<&str>) -> Path {
    let mut bindings = senders::bindings();
    if let Some(profiles) = profiles {
        bindings.push(("WEBHOOK_PROFILES", profiles.into()));
    }
    Path(Stack::builder("profiles").through_proxy().bindings(bindings).start_with_worker().await, Default::default())
}

impl Path {
    /// Sends `profile`'s delivery of `body` for `id`, signed with `secret` (the configured one
    /// when `None`).
    fn send(&self, profile: Profile, id: &str, body: &[u8], secret: Option<&str>) -> Answer {
        let headers = senders::headers(profile, id, body, secret);
        self.1.lock().unwrap().extend(headers.iter().cloned());
        let refs: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        self.edge.request("POST", profile.path(), &refs, body)
    }

    async fn drain(&self) {
        worker::drain(&self.poller(), &self.sqlite_handler().await).await;
    }

    /// Every credential sent so far, and every configured secret: the values of `Authorization`
    /// and signature headers, each of their parts (a tag after `sha256=`, `v1,` or `v1=`), and
    /// each profile's secret (a `whsec_` one with and without its prefix).
    fn credentials(&self) -> Vec<String> {
        let mut credentials: Vec<String> = PROFILES.iter().map(|&p| senders::secret(p)).collect();
        credentials.extend(credentials.clone().iter().filter_map(|s| s.strip_prefix("whsec_")).map(str::to_owned));
        for (name, value) in self.1.lock().unwrap().iter() {
            let name = name.to_ascii_lowercase();
            if name == "authorization" || name.contains("signature") {
                credentials.push(value.clone());
                let parts = value.split([' ', ',', '=', ';']).filter(|part| part.len() >= 16);
                credentials.extend(parts.map(str::to_owned));
            }
        }
        credentials
    }

    /// Receipts as `pk -> (profile, status)`.
    fn receipts(&self) -> BTreeMap<String, (String, String)> {
        let text = |item: &serde_json::Value, name: &str| item[name]["S"].as_str().unwrap_or_default().to_owned();
        self.store.scan(TABLE).iter().map(|i| (text(i, "pk"), (text(i, "profile"), text(i, "status")))).collect()
    }

    /// Leads as `external_id -> (name, email, message, upsert_count)`.
    fn leads(&self) -> BTreeMap<String, (String, String, String, i64)> {
        let Ok(connection) = rusqlite::Connection::open(self.dir.0.join("leads.db")) else { return BTreeMap::new() };
        let mut statement =
            connection.prepare("SELECT external_id, name, email, message, upsert_count FROM leads").unwrap();
        statement
            .query_map([], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }
}

#[tokio::test]
async fn each_profile_retried_raced_forged_and_changed_gives_one_receipt_and_one_lead() {
    let p = path(None).await;
    let mut expected = BTreeMap::new();
    // What each sender counts as success for a new receipt, as its documentation says: Webflow
    // retries anything but 200; every other sender takes any 2xx, and gets 202.
    let documented: Vec<(Profile, u16)> =
        PROFILES.iter().map(|&p| (p, if p == Profile::Webflow { 200 } else { 202 })).collect();
    assert_eq!(PROFILES.map(|p| (p, p.acknowledgement().status())).to_vec(), documented);
    for profile in PROFILES {
        let name = profile.name();
        let (id, raced) = (format!("{name}-retried-1"), format!("{name}-raced-1"));
        let body = senders::body(profile, &id, "first words");
        // A new receipt: the 2xx the sender counts as success (202; Webflow retries any but 200).
        let stored = profile.acknowledgement().status();
        let first = p.send(profile, &id, &body, None);
        assert_eq!((first.status, first.json()["duplicate"].clone()), (stored, json!(false)), "{name}: {}", first.body);
        // The sender retries (a lost answer, a timeout): the same delivery, signed anew.
        let retry = p.send(profile, &id, &body, None);
        assert_eq!((retry.status, retry.json()["duplicate"].clone()), (200, json!(true)), "{name}: {}", retry.body);
        // Other content under the same identity.
        let changed = p.send(profile, &id, &senders::body(profile, &id, "other words"), None);
        assert_eq!(changed.status, 422, "{name}: {}", changed.body);
        // A wrong secret: refused, nothing stored.
        let forged_id = format!("{name}-forged-1");
        let forged =
            p.send(profile, &forged_id, &senders::body(profile, &forged_id, "x"), Some("whsec_bm90LXRoZS1zZWNyZXQ="));
        assert_eq!(forged.status, 401, "{name}: {}", forged.body);
        // Eight copies at once: one stores, the others find its receipt.
        let raced_body = senders::body(profile, &raced, "raced words");
        let answers: Vec<(u16, serde_json::Value)> = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..8)
                .map(|_| {
                    scope.spawn(|| {
                        let answer = p.send(profile, &raced, &raced_body, None);
                        (answer.status, answer.json()["duplicate"].clone())
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let new: Vec<_> = answers.iter().filter(|a| a.1 == json!(false)).collect();
        assert_eq!(new, [&(stored, json!(false))], "{name}: one copy stores: {answers:?}");
        assert!(
            answers.iter().all(|a| *a == (stored, json!(false)) || *a == (200, json!(true))),
            "{name}: {answers:?}"
        );
        for (id, message) in [(id, "first words"), (raced, "raced words")] {
            let (key, lead) = senders::keys(profile, &id);
            expected.insert(key, (name.to_owned(), lead, message));
        }
    }
    p.drain().await;
    let receipts = p.receipts();
    assert_eq!(receipts.keys().collect::<Vec<_>>(), expected.keys().collect::<Vec<_>>(), "one receipt each");
    for (key, (profile, _, _)) in &expected {
        assert_eq!(receipts[key], (profile.clone(), "COMPLETED".to_owned()), "{key}");
    }
    // No credential reaches a receipt: no secret, no Authorization value, no signature sent,
    // in any attribute (the payload's sender API key is `[redacted]`).
    let stored = serde_json::to_string(&p.store.scan(TABLE)).unwrap();
    let credentials = p.credentials();
    assert!(credentials.len() > 3 * PROFILES.len(), "{credentials:?}");
    for credential in &credentials {
        assert!(!stored.contains(credential.as_str()), "a receipt holds the credential {credential:?}");
    }
    let static_forms: serde_json::Value =
        serde_json::from_slice(&senders::body(Profile::StaticForms, "k", "")).unwrap();
    let api_key = static_forms["data"]["apiKey"].as_str().unwrap();
    assert!(!api_key.is_empty() && !stored.contains(api_key) && stored.contains("[redacted]"));
    let leads = p.leads();
    assert_eq!(leads.len(), expected.len(), "{leads:?}");
    for (key, (profile, lead_key, message)) in &expected {
        let (name, email, stored_message, upserts) = &leads[lead_key];
        assert_eq!((stored_message.as_str(), *upserts), (*message, 1), "{key}");
        // Each sender's fields, mapped by its profile, as its example states them.
        let profile = Profile::parse(profile).unwrap();
        let want = sender(profile).example("any", "").name_and_email;
        assert_eq!((name.as_str(), email.as_str()), want, "{key}");
    }
}

#[tokio::test]
async fn a_store_outage_is_503_with_nothing_claimed_and_the_retry_stores_it_once() {
    let p = path(None).await;
    for profile in PROFILES {
        let id = format!("{}-outage-1", profile.name());
        let body = senders::body(profile, &id, "during the outage");
        let (key, lead) = senders::keys(profile, &id);
        for mode in [
            Mode::Refuse,
            Mode::Answer(500, r#"{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError"}"#.into()),
        ] {
            p.proxy().set(mode);
            let answer = p.send(profile, &id, &body, None);
            assert_eq!(answer.status, 503, "{key}: {}", answer.body);
            assert!(answer.header("Retry-After").is_some(), "{key}");
            assert!(!p.receipts().contains_key(&key), "{key}: nothing stored");
        }
        // The write happens, the answer is lost: still 503, and the retry is the duplicate.
        p.proxy().set(Mode::DropResponse { times: 1 });
        assert_eq!(p.send(profile, &id, &body, None).status, 503, "{key}");
        p.proxy().set(Mode::PassThrough);
        assert_eq!(p.send(profile, &id, &body, None).status, 200, "{key}");
        p.drain().await;
        assert_eq!(p.leads().get(&lead).map(|l| l.3), Some(1), "{key}: one lead");
    }
}

#[tokio::test]
async fn the_same_raw_id_from_every_profile_is_a_receipt_and_a_lead_each_and_a_disabled_route_is_404() {
    let p = path(None).await;
    for profile in PROFILES {
        let answer = p.send(profile, "shared-id-7", &senders::body(profile, "shared-id-7", "hello"), None);
        assert_eq!(answer.status, profile.acknowledgement().status(), "{}: {}", profile.name(), answer.body);
    }
    p.drain().await;
    let receipts = p.receipts();
    let leads = p.leads();
    assert_eq!(receipts.len(), PROFILES.len(), "{receipts:?}");
    assert_eq!(leads.len(), PROFILES.len(), "{leads:?}");
    for profile in PROFILES {
        let (key, lead) = senders::keys(profile, "shared-id-7");
        assert_eq!(receipts[&key], (profile.name().to_owned(), "COMPLETED".to_owned()));
        assert_eq!(leads[&lead].3, 1);
    }

    // Only Static Forms enabled: the other routes do not exist, and nothing is stored.
    let only = path(Some("staticforms")).await;
    for profile in Profile::ALL.into_iter().filter(|p| *p != Profile::StaticForms) {
        let body = senders::body(profile, "off-1", "x");
        assert_eq!(only.send(profile, "off-1", &body, None).status, 404, "{}", profile.name());
    }
    assert!(only.receipts().is_empty());
    assert_eq!(
        only.send(Profile::StaticForms, "on-1", &senders::body(Profile::StaticForms, "on-1", "x"), None).status,
        202
    );
}

/// Signed headers for `profile`'s delivery of `body` (its example's other headers, the
/// configured secret), with the content type replaced when `content_type` is given.
fn signed_as(profile: Profile, id: &str, body: &[u8], content_type: Option<&str>) -> Vec<(String, String)> {
    let mut headers = senders::headers(profile, id, body, None);
    if let Some(content_type) = content_type {
        for (name, value) in &mut headers {
            if name.eq_ignore_ascii_case("content-type") {
                *value = content_type.to_owned();
            }
        }
    }
    headers
}

impl Path {
    fn send_with(&self, profile: Profile, headers: &[(String, String)], body: &[u8]) -> Answer {
        let refs: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        self.edge.request("POST", profile.path(), &refs, body)
    }
}

#[tokio::test]
async fn form_encoded_and_timed_deliveries_through_the_worker_are_read_as_their_senders_write_them() {
    let p = path(None).await;
    let formstack = Profile::Formstack;
    let form = "application/x-www-form-urlencoded";
    let send = |profile: Profile, id: &str, body: &[u8], content_type: Option<&str>| {
        p.send_with(profile, &signed_as(profile, id, body, content_type), body)
    };
    let reason = |answer: &Answer| (answer.status, answer.json()["reason"].as_str().unwrap_or_default().to_owned());

    // The documented default: form-encoded, by field names. Then the same fields in another
    // order and escaping (signed anew, as a sender's retry would be): the same submission.
    let first =
        b"FormID=6606394&UniqueID=fs-1&Name=first+%3D+Ada%0Alast+%3D+Lovelace&Email=ada%40example.com&Message=1+%2B+1";
    assert_eq!(send(formstack, "fs-1", first, None).status, 202);
    let reordered = b"Message=1%20%2b%201&Email=ada@example.com&UniqueID=fs-1&Name=first%20%3d%20Ada%0alast%20%3d%20Lovelace&FormID=6606394";
    let retry = send(formstack, "fs-1", reordered, None);
    assert_eq!((retry.status, retry.json()["duplicate"].clone()), (200, json!(true)), "{}", retry.body);
    // `+` is a space and `%2B` a plus: another message under the same ID is other content.
    let plus = b"FormID=6606394&UniqueID=fs-1&Name=first+%3D+Ada%0Alast+%3D+Lovelace&Email=ada%40example.com&Message=1+%2B%2B1";
    assert_eq!(send(formstack, "fs-1", plus, None).status, 422);
    // A field given twice keeps both values.
    assert_eq!(send(formstack, "fs-2", b"UniqueID=fs-2&Pick=a&Pick=b&Email=b%40example.com", None).status, 202);
    // What a browser or a legacy page may write is read as the standard reads it, never
    // refused (Formstack does not retry): a `%` that begins no escape, a Latin-1 byte.
    assert_eq!(send(formstack, "fs-3", b"UniqueID=fs-3&Message=100%+caf%E9", None).status, 202);

    // Refused by name, nothing stored: JSON declared as a form and the reverse, a form on a
    // route whose sender posts none, a wrong tag. (A body over the limit is refused before its
    // format matters: `receive/tests.rs::form_encoded_bodies_only_where_the_sender_posts_them`;
    // through the Worker, `edge_hostile.rs` on a raw connection, since the Worker answers 413
    // before the upload ends.)
    let json_as_form = send(formstack, "fs-4", br#"{"UniqueID":"fs-4"}"#, Some(form));
    assert_eq!(reason(&json_as_form), (400, "json_body_declared_form".into()));
    let form_as_json = send(formstack, "fs-5", b"UniqueID=fs-5&Email=a%40b", Some("application/json"));
    assert_eq!(reason(&form_as_json), (400, "form_body_declared_json".into()));
    let tally_form = send(Profile::Tally, "t-1", b"responseId=t-1", Some(form));
    assert_eq!(tally_form.status, 415, "{}", tally_form.body);
    let mut forged = signed_as(formstack, "fs-7", b"UniqueID=fs-7", None);
    forged
        .iter_mut()
        .filter(|(n, _)| n.eq_ignore_ascii_case("x-fs-signature"))
        .for_each(|(_, v)| *v = "sha256=00".into());
    assert_eq!(p.send_with(formstack, &forged, b"UniqueID=fs-7").status, 401);

    // Formspree without the hidden ID: 400 naming the input, never an ID made up.
    let no_id = send(Profile::Formspree, "x", br#"{"form":"f","submission":{"email":"a@b"}}"#, None);
    assert_eq!(reason(&no_id), (400, "missing_submission_id_field".into()));
    assert!(no_id.json()["message"].as_str().unwrap().contains("submissionId"), "{}", no_id.body);

    // Webflow's timestamp is in milliseconds; one six minutes old is refused.
    let webflow_body = senders::body(Profile::Webflow, "wf-stale", "late");
    let late =
        senders::headers_at(Profile::Webflow, "wf-stale", &webflow_body, None, tests::delivery::now_secs() - 360);
    assert_eq!(p.send_with(Profile::Webflow, &late, &webflow_body).status, 401);

    let stored: Vec<String> = p.receipts().into_keys().collect();
    assert_eq!(stored, ["formstack:fs-1", "formstack:fs-2", "formstack:fs-3"], "nothing stored for a refusal");
    let item = p.store.scan(TABLE).into_iter().find(|i| i["pk"]["S"] == "formstack:fs-2").unwrap();
    let payload: serde_json::Value = serde_json::from_str(item["payload"]["S"].as_str().unwrap()).unwrap();
    assert_eq!(payload["Pick"], json!(["a", "b"]));
    p.drain().await;
    let leads = p.leads();
    assert_eq!(leads["formstack:fs-1"].0, "Ada Lovelace", "the compound name read as its parts");
    assert_eq!(leads["formstack:fs-1"].2, "1 + 1");
    assert_eq!(leads["formstack:fs-3"].2, "100% café");
}
