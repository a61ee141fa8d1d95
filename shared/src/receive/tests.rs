//! The whole decision path, from request to outcome, with the store's answers as inputs.

use super::*;
use crate::decision::TooLarge;
use crate::dynamo::{item_from_wire, item_to_wire};
use crate::json::{parse, Json};
use crate::key::KeyError;
use crate::receipt::ReceiptStatus;
use crate::secret::Credential;
use crate::store::{classify_put, PermanentStoreError, RetryableStoreError};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use wasm_bindgen_test::wasm_bindgen_test;

const NOW: u64 = 1_796_019_713_123;
const BODY: &str = include_str!("../../tests/fixtures/delivery.json");
const KEY: &str = "staticforms:form.submitted:sub_8fK2qLw9Xc";

fn policy() -> Policy {
    Policy {
        senders: alloc::vec![(
            Profile::StaticForms,
            AuthPolicy { bearer_tokens: alloc::vec![Credential::new(b"tok")], ..AuthPolicy::default() },
        )],
        table: "receipts".into(),
        retention_days: DEFAULT_RETENTION_DAYS,
        max_body_bytes: 1024,
    }
}

fn headers(extra: &[(&str, &str)]) -> Headers {
    let mut all: Vec<(&str, &str)> =
        alloc::vec![("Content-Type", "application/json"), ("Authorization", "Bearer tok"), ("Idempotency-Key", KEY)];
    for (name, value) in extra {
        all.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        if !value.is_empty() {
            all.push((name, value));
        }
    }
    Headers::new(all)
}

fn run(policy: &Policy, headers: &Headers, body: &str) -> Step {
    let profile = Profile::StaticForms;
    receive(policy, &Delivery { profile, headers, body: body.as_bytes(), request_id: "req-1", now_millis: NOW })
}

fn respond(outcome: Outcome) -> Step {
    Step::Respond(outcome, None)
}

#[wasm_bindgen_test(unsupported = test)]
fn routes() {
    for profile in Profile::ALL {
        assert_eq!(route("POST", profile.path()), Route::Webhook(profile));
        assert_eq!(route("PUT", profile.path()), Route::Reject(RouteRejection::MethodNotAllowed("POST")));
    }
    assert_eq!(route("POST", "/webhooks/staticforms"), Route::Webhook(Profile::StaticForms));
    assert_eq!(route("POST", "/webhooks/other"), Route::Reject(RouteRejection::NotFound));
    assert_eq!(route("GET", "/webhooks/staticforms"), Route::Reject(RouteRejection::MethodNotAllowed("POST")));
    assert_eq!(route("GET", "/healthz"), Route::Health);
    assert_eq!(route("POST", "/healthz"), Route::Reject(RouteRejection::MethodNotAllowed("GET, HEAD")));
    assert_eq!(route("POST", "/webhooks/staticforms/"), Route::Reject(RouteRejection::NotFound));
    assert_eq!(route("POST", "/"), Route::Reject(RouteRejection::NotFound));
    // With the policy: a profile not enabled has no route, whatever the method.
    let only = policy();
    assert_eq!(only.route("POST", "/webhooks/staticforms"), Route::Webhook(Profile::StaticForms));
    assert_eq!(only.route("GET", "/webhooks/staticforms"), Route::Reject(RouteRejection::MethodNotAllowed("POST")));
    for method in ["POST", "GET", "HEAD"] {
        assert_eq!(only.route(method, "/webhooks/tally"), Route::Reject(RouteRejection::NotFound), "{method}");
    }
    assert_eq!(only.route("GET", "/healthz"), Route::Health);
    assert_eq!(only.route("POST", "/nope"), Route::Reject(RouteRejection::NotFound));
    assert_eq!(RouteRejection::NotFound.outcome().response().status, 404);
}

#[wasm_bindgen_test(unsupported = test)]
fn health_says_whether_a_delivery_would_be_taken() {
    assert_eq!(health(Ok(&policy())), Outcome::Health);
    assert_eq!(
        health(Err("AWS_REGION")),
        Outcome::Unhealthy(crate::decision::HealthProblem::ConfigInvalid("AWS_REGION"))
    );
    let open = Policy { senders: alloc::vec![(Profile::StaticForms, AuthPolicy::default())], ..policy() };
    assert_eq!(health(Ok(&open)), Outcome::Unhealthy(crate::decision::HealthProblem::AuthNotConfigured));
    // Every enabled profile must be able to take a delivery.
    let mut half = policy();
    half.senders.push((Profile::Tally, AuthPolicy::default()));
    assert_eq!(health(Ok(&half)), Outcome::Unhealthy(crate::decision::HealthProblem::AuthNotConfigured));
    let none = Policy { senders: Vec::new(), ..policy() };
    assert_eq!(health(Ok(&none)), Outcome::Unhealthy(crate::decision::HealthProblem::AuthNotConfigured));
}

#[wasm_bindgen_test(unsupported = test)]
fn declared_lengths() {
    let p = policy();
    assert!(declared_too_large(&p, Some("1025")));
    assert!(!declared_too_large(&p, Some("1024")));
    assert!(!declared_too_large(&p, Some("x")));
    assert!(!declared_too_large(&p, None));
}

#[wasm_bindgen_test(unsupported = test)]
fn a_body_is_read_whole_only_when_declared_within_the_limit_and_not_chunked() {
    let p = policy();
    assert!(declared_within_limit(&p, Some("1024"), None));
    assert!(declared_within_limit(&p, Some(" 0 "), None));
    assert!(!declared_within_limit(&p, Some("1025"), None));
    assert!(!declared_within_limit(&p, Some("x"), None));
    assert!(!declared_within_limit(&p, None, None));
    assert!(!declared_within_limit(&p, Some("10"), Some("chunked")));
}

#[wasm_bindgen_test(unsupported = test)]
fn the_headers_the_policy_names_are_all_receive_reads() {
    // Every method configured; requests for each, and requests that fail in each check. With
    // only `header_names` collected the answer must be the same as with every header: a header
    // read but not named would show as missing here.
    let secret = crate::secret::SigningSecret::parse(&crate::secret::SigningSecret::encode(b"a signing key")).unwrap();
    let everything = Policy::single(
        Profile::StaticForms,
        AuthPolicy {
            bearer_tokens: alloc::vec![Credential::new(b"tok")],
            basic_credentials: alloc::vec![Credential::new(b"forms:pass")],
            header: Some(crate::auth::HeaderCredentials {
                name: "X-Forms-Secret".into(),
                values: alloc::vec![Credential::new(b"hv")],
            }),
            signing_secrets: alloc::vec![secret.clone()],
            body_signature: None,
        },
        "receipts",
    );
    let timestamp = format!("{}", NOW / 1000);
    let signature = crate::auth::signature_header(&secret, "msg_1", &timestamp, BODY.as_bytes());
    let noise = [("X-Noise", "1"), ("Accept", "*/*"), ("User-Agent", "bench")];
    let cases: Vec<Vec<(&str, &str)>> = alloc::vec![
        alloc::vec![("Authorization", "Bearer tok")],
        alloc::vec![("Authorization", "Bearer nope")],
        alloc::vec![("Authorization", "Basic Zm9ybXM6cGFzcw==")],
        alloc::vec![("x-forms-secret", "hv")],
        alloc::vec![("X-Forms-Secret", "wrong")],
        alloc::vec![
            ("webhook-id", "msg_1"),
            ("webhook-timestamp", timestamp.as_str()),
            ("webhook-signature", signature.as_str())
        ],
        alloc::vec![
            ("webhook-id", "msg_1"),
            ("webhook-timestamp", timestamp.as_str()),
            ("webhook-signature", "v1,bad")
        ],
        alloc::vec![("Authorization", "Bearer tok"), ("Idempotency-Key", "")],
        alloc::vec![("Authorization", "Bearer tok"), ("Content-Type", "")],
        alloc::vec![],
    ];
    for case in cases {
        let all = headers(&[case.as_slice(), &noise].concat());
        let named: Vec<(String, String)> = everything
            .header_names(Profile::StaticForms)
            .filter_map(|name| all.get(name).map(|value| (String::from(name), String::from(value))))
            .collect();
        let only_named = Headers::new(named);
        let full = run(&everything, &all, BODY);
        assert_eq!(run(&everything, &only_named, BODY), full, "{case:?}");
        assert!(!matches!(full, Step::Respond(Outcome::InvalidEnvelope(_), _)), "{case:?}: {full:?}");
    }
}

#[wasm_bindgen_test(unsupported = test)]
fn media_types() {
    assert!(is_json_media_type(Some("application/json")));
    assert!(is_json_media_type(Some("Application/JSON; charset=utf-8")));
    assert!(!is_json_media_type(Some("text/plain")));
    assert!(!is_json_media_type(Some("application/jsonx")));
    assert!(!is_json_media_type(None));
}

#[wasm_bindgen_test(unsupported = test)]
fn checks_answer_before_anything_is_written() {
    use crate::auth::AuthError as A;
    use crate::envelope::EnvelopeError as E;
    use crate::key::KeyError as K;
    let p = policy();
    let big = format!("{:1$}", "", 1025);
    assert_eq!(run(&p, &headers(&[]), &big), respond(Outcome::PayloadTooLarge(TooLarge::Body)));
    assert_eq!(run(&p, &headers(&[("Content-Type", "text/plain")]), BODY), respond(Outcome::UnsupportedMediaType));
    assert_eq!(
        run(&p, &headers(&[("Authorization", "Bearer nope")]), BODY),
        respond(Outcome::Unauthenticated(A::BadBearerToken, "Bearer realm=\"webhooks\"".into()))
    );
    assert_eq!(
        run(&p, &headers(&[("Authorization", "")]), BODY),
        respond(Outcome::Unauthenticated(A::MissingCredentials, "Bearer realm=\"webhooks\"".into()))
    );
    let open = Policy { senders: alloc::vec![(Profile::StaticForms, AuthPolicy::default())], ..policy() };
    assert_eq!(run(&open, &headers(&[]), BODY), respond(Outcome::AuthNotConfigured));
    // Authentication comes before the body is interpreted: bad JSON from a stranger is a 401.
    assert_eq!(
        run(&p, &headers(&[("Authorization", "")]), "{"),
        respond(Outcome::Unauthenticated(A::MissingCredentials, "Bearer realm=\"webhooks\"".into()))
    );
    assert_eq!(
        run(&p, &headers(&[]), "{"),
        respond(Outcome::InvalidEnvelope(E::InvalidJson(crate::json::JsonError::Syntax { offset: 1 })))
    );
    assert_eq!(run(&p, &headers(&[]), "{}"), respond(Outcome::InvalidEnvelope(E::MissingEvent)));
    assert_eq!(
        run(&p, &headers(&[("Idempotency-Key", "")]), BODY),
        Step::Respond(Outcome::InvalidKey(K::Missing), Some("sub_8fK2qLw9Xc".into()))
    );
    assert_eq!(
        run(&p, &headers(&[("Idempotency-Key", "staticforms:form.submitted:other")]), BODY),
        Step::Respond(Outcome::InvalidKey(K::Mismatch), Some("sub_8fK2qLw9Xc".into()))
    );
}

fn pending(body: &str) -> PendingPut {
    match run(&policy(), &headers(&[]), body) {
        Step::Store(pending) => pending,
        other => panic!("expected a store step, got {other:?}"),
    }
}

/// The store's answer to a put of `stored_body` when a receipt already exists for the key.
fn duplicate_answer(stored_body: &str, status: &str) -> Vec<u8> {
    let request = parse(pending(stored_body).request.body.as_bytes()).unwrap();
    let mut item = item_from_wire(request.get("Item").unwrap()).unwrap();
    item.insert("status".into(), crate::dynamo::AttributeValue::S(status.into()));
    format!(
        r#"{{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","Item":{}}}"#,
        item_to_wire(&item).to_text()
    )
    .into_bytes()
}

#[wasm_bindgen_test(unsupported = test)]
fn the_store_answer_decides() {
    let put = pending(BODY);
    assert_eq!(put.submission_id, "sub_8fK2qLw9Xc");
    let body = parse(put.request.body.as_bytes()).unwrap();
    assert_eq!(body.get("TableName").and_then(Json::as_str), Some("receipts"));

    let stored = put.finish(classify_put(200, b"{}"));
    assert!(
        matches!(&stored, Outcome::Stored(s, Acknowledgement::Accepted) if s.status == ReceiptStatus::Received && s.received_at == "2026-11-30T06:21:53.123Z")
    );

    let duplicate = put.finish(classify_put(400, &duplicate_answer(BODY, "COMPLETED")));
    assert!(matches!(&duplicate, Outcome::Duplicate(s) if s.status == ReceiptStatus::Completed));

    // A retry with only the timestamp and whitespace changed is the same delivery.
    let retry = BODY.replace("1796019713", "1796019999").replace(": ", ":");
    assert!(matches!(
        pending(&retry).finish(classify_put(400, &duplicate_answer(BODY, "RECEIVED"))),
        Outcome::Duplicate(_)
    ));

    let changed = BODY.replace("Hello", "Hello again");
    assert_eq!(pending(&changed).finish(classify_put(400, &duplicate_answer(BODY, "RECEIVED"))), Outcome::KeyReused);

    // A receipt stored before fingerprints had versions compares the same way.
    let unversioned = |body: &str| {
        let text = String::from_utf8(duplicate_answer(BODY, "RECEIVED")).unwrap();
        let fresh = parse(pending(body).request.body.as_bytes()).unwrap();
        let hex = fresh
            .get("Item")
            .and_then(|i| i.get("fingerprint"))
            .and_then(|f| f.get("S"))
            .and_then(Json::as_str)
            .unwrap();
        text.replace(hex, &hex[3..]).into_bytes()
    };
    assert!(matches!(put.finish(classify_put(400, &unversioned(BODY))), Outcome::Duplicate(_)));
    // A fingerprint of a version this code cannot compute: neither 200 nor 422, but retry.
    let future = String::from_utf8(duplicate_answer(BODY, "RECEIVED")).unwrap().replace("\"v1:", "\"v9:");
    assert_eq!(
        put.finish(classify_put(400, future.as_bytes())),
        Outcome::StoreUnavailable(RetryableStoreError::UnreadableDuplicate)
    );

    assert_eq!(put.finish(classify_put(500, b"")), Outcome::StoreUnavailable(RetryableStoreError::Unavailable));
    assert_eq!(
        put.finish(PutOutcome::Failed(StoreError::Retryable(RetryableStoreError::Timeout))),
        Outcome::StoreUnavailable(RetryableStoreError::Timeout)
    );
    assert_eq!(
        put.finish(classify_put(400, br#"{"__type":"ResourceNotFoundException"}"#)),
        Outcome::StoreMisconfigured(PermanentStoreError::TableNotFound)
    );
}

#[wasm_bindgen_test(unsupported = test)]
fn no_two_hundred_without_a_stored_or_existing_receipt() {
    // Every store answer that is not "stored" or "duplicate with the same content" is a non-2xx.
    let put = pending(BODY);
    let answers: [(u16, &[u8]); 11] = [
        (200, b""),
        (200, b"not json"),
        (200, br#"{"__type":"com.amazonaws.dynamodb.v20120810#ValidationException"}"#),
        (307, b"{}"),
        (302, b""),
        (201, b"{}"),
        (400, b"{}"),
        (400, br#"{"__type":"ConditionalCheckFailedException"}"#),
        (429, b""),
        (500, b"{}"),
        (503, b""),
    ];
    for (status, body) in answers {
        let response = put.finish(classify_put(status, body)).response();
        assert!(
            !(200..300).contains(&response.status),
            "{status} {:?} gave {}",
            core::str::from_utf8(body),
            response.status
        );
    }
}

#[wasm_bindgen_test(unsupported = test)]
fn a_receipt_that_would_not_fit_is_refused_before_anything_is_written() {
    let roomy = Policy { max_body_bytes: 1 << 20, ..policy() };
    let body_of = |message_len: usize| {
        let message = "m".repeat(message_len);
        format!(
            r#"{{"event":"form.submitted","data":{{"submissionId":"sub_8fK2qLw9Xc","formData":{{"message":"{message}"}}}}}}"#
        )
    };
    // Find the largest message that still fits, by the sizing rules, and check both sides.
    let size_of = |body: &str| match run(&roomy, &headers(&[]), body) {
        Step::Store(pending) => {
            let request = parse_wire_body(&pending.request.body);
            Some(crate::dynamo::item_size(&item_from_wire(request.get("Item").unwrap()).unwrap()))
        }
        _ => None,
    };
    let base = size_of(&body_of(0)).unwrap();
    let fits = MAX_RECEIPT_ITEM_BYTES - base;
    assert_eq!(size_of(&body_of(fits)), Some(MAX_RECEIPT_ITEM_BYTES));
    assert_eq!(
        run(&roomy, &headers(&[]), &body_of(fits + 1)),
        Step::Respond(Outcome::PayloadTooLarge(TooLarge::Item), Some("sub_8fK2qLw9Xc".into()))
    );
    const { assert!(MAX_RECEIPT_ITEM_BYTES < crate::dynamo::MAX_ITEM_BYTES) };
}

fn parse_wire_body(body: &str) -> Json {
    crate::json::parse_wire(body.as_bytes()).unwrap()
}

#[wasm_bindgen_test(unsupported = test)]
fn a_body_exactly_at_the_limit_is_read_and_one_byte_more_is_not() {
    assert_eq!(DEFAULT_MAX_BODY_BYTES, 262_144, "256 KiB, as documented");
    let at = Policy { max_body_bytes: BODY.len(), ..policy() };
    assert!(matches!(run(&at, &headers(&[]), BODY), Step::Store(_)));
    let under = Policy { max_body_bytes: BODY.len() - 1, ..policy() };
    assert_eq!(run(&under, &headers(&[]), BODY), respond(Outcome::PayloadTooLarge(TooLarge::Body)));
}

#[wasm_bindgen_test(unsupported = test)]
fn a_signed_delivery_is_checked_against_the_clock_in_seconds() {
    let secret = crate::secret::SigningSecret::parse(&crate::secret::SigningSecret::encode(b"a signing key")).unwrap();
    let signing = Policy {
        senders: alloc::vec![(
            Profile::StaticForms,
            AuthPolicy { signing_secrets: alloc::vec![secret.clone()], ..AuthPolicy::default() },
        )],
        ..policy()
    };
    let signed_at = NOW / 1000;
    let timestamp = format!("{signed_at}");
    let signature = crate::auth::signature_header(&secret, "msg_1", &timestamp, BODY.as_bytes());
    let signed = |now_millis: u64| {
        let headers = Headers::new(alloc::vec![
            ("Content-Type", "application/json"),
            ("Idempotency-Key", KEY),
            ("webhook-id", "msg_1"),
            ("webhook-timestamp", timestamp.as_str()),
            ("webhook-signature", signature.as_str()),
        ]);
        receive(
            &signing,
            &Delivery {
                profile: Profile::StaticForms,
                headers: &headers,
                body: BODY.as_bytes(),
                request_id: "req-1",
                now_millis,
            },
        )
    };
    // The clock is in milliseconds; the signature's timestamp in seconds.
    assert!(matches!(signed(NOW), Step::Store(_)));
    let tolerance = crate::auth::SIGNATURE_TOLERANCE_SECS as u64 * 1000;
    assert!(matches!(signed(signed_at * 1000 + tolerance), Step::Store(_)));
    let late = signed(signed_at * 1000 + tolerance + 1000);
    assert!(
        matches!(late, Step::Respond(Outcome::Unauthenticated(AuthError::SignatureTimestampOutOfRange, _), _)),
        "{late:?}"
    );
}

#[wasm_bindgen_test(unsupported = test)]
fn the_edge_collects_the_signature_header_the_configuration_names_once() {
    use crate::auth::BodySignature;
    let (mut policy, _) = every_profile();
    let names = |policy: &Policy| policy.header_names(Profile::Formstack).map(String::from).collect::<Vec<_>>();
    assert_eq!(names(&policy), ["content-type", "x-fs-signature"], "the sender's own header, once");
    for (profile, auth) in &mut policy.senders {
        if *profile == Profile::Formstack {
            let signature = auth.body_signature.take().unwrap();
            auth.body_signature = Some(BodySignature { header: "x-my-signature".into(), ..signature });
        }
    }
    assert_eq!(names(&policy), ["content-type", "x-fs-signature", "x-my-signature"]);
}

#[wasm_bindgen_test(unsupported = test)]
fn a_form_body_that_grows_past_the_item_size_is_413_at_once() {
    use crate::auth::{body_signature_headers, BodySignature};
    use crate::profile::sender::SenderAuth;
    let (mut policy, _) = every_profile();
    policy.max_body_bytes = DEFAULT_MAX_BODY_BYTES;
    let secret = crate::secret::SigningSecret::plain("form-secret").unwrap();
    let SenderAuth::BodySigned { scheme, .. } = Profile::Formstack.auth() else { unreachable!("a form backend") };
    let config = BodySignature::new(scheme, alloc::vec![]);
    let step = |body: &str| {
        let mut pairs: Vec<(String, String)> =
            alloc::vec![("Content-Type".into(), "application/x-www-form-urlencoded".into())];
        pairs.extend(body_signature_headers(&config, &secret, &Headers::default(), body.as_bytes(), NOW));
        let headers = Headers::new(pairs);
        let delivery = Delivery {
            profile: Profile::Formstack,
            headers: &headers,
            body: body.as_bytes(),
            request_id: "r",
            now_millis: NOW,
        };
        receive(&policy, &delivery)
    };
    // Within the body limit, but each `%01` (3 bytes) is `\u0001` (6) once stored as JSON.
    let fill = |n: usize| alloc::format!("UniqueID=u-9&Message={}", "%01".repeat(n));
    let grown = fill((DEFAULT_MAX_BODY_BYTES - 30) / 3);
    assert!(grown.len() <= DEFAULT_MAX_BODY_BYTES);
    assert_eq!(step(&grown), Step::Respond(Outcome::PayloadTooLarge(TooLarge::Item), Some("u-9".into())));
    // Half of it fits.
    assert!(matches!(step(&fill(DEFAULT_MAX_BODY_BYTES / 6)), Step::Store(_)));
}

#[wasm_bindgen_test(unsupported = test)]
fn form_encoded_bodies_only_where_the_sender_posts_them() {
    use crate::auth::{body_signature_headers, BodySignature};
    use crate::profile::sender::SenderAuth;
    let (policy, _) = every_profile();
    let secret = crate::secret::SigningSecret::plain("form-secret").unwrap();
    let form = "application/x-www-form-urlencoded; charset=utf-8";
    let step = |profile: Profile, content_type: &str, body: &str| {
        let SenderAuth::BodySigned { scheme, .. } = crate::profile::registry::sender(profile).auth() else {
            unreachable!("a form backend")
        };
        let mut pairs: Vec<(String, String)> = alloc::vec![("Content-Type".into(), content_type.into())];
        let config = BodySignature::new(scheme, alloc::vec![]);
        pairs.extend(body_signature_headers(&config, &secret, &Headers::default(), body.as_bytes(), NOW));
        let headers = Headers::new(pairs);
        receive(
            &policy,
            &Delivery { profile, headers: &headers, body: body.as_bytes(), request_id: "r", now_millis: NOW },
        )
    };
    // Formstack and Basin post form-encoded bodies: stored.
    assert!(matches!(step(Profile::Formstack, form, "UniqueID=u-1"), Step::Store(_)));
    assert!(matches!(step(Profile::Basin, form, "id=b-1"), Step::Store(_)));
    // Every other sender posts JSON only: 415, whatever the body.
    for profile in [Profile::Typeform, Profile::Tally, Profile::Webflow, Profile::Framer, Profile::Formspree] {
        assert_eq!(step(profile, form, "a=1"), Step::Respond(Outcome::UnsupportedMediaType, None), "{profile:?}");
    }
    // A multipart body is no form-encoded one.
    let multipart = step(Profile::Formstack, "multipart/form-data; boundary=x", "UniqueID=u-2");
    assert_eq!(multipart, Step::Respond(Outcome::UnsupportedMediaType, None));
    // A field over the body limit: 413, whatever the format.
    let long = alloc::format!("UniqueID=u-3&Message={}", "x".repeat(policy.max_body_bytes));
    let over = step(Profile::Formstack, form, &long);
    assert_eq!(over, Step::Respond(Outcome::PayloadTooLarge(TooLarge::Body), None));
}

/// Every profile enabled, each with its sender's credential (as its `SenderAuth` asks).
fn every_profile() -> (Policy, crate::secret::SigningSecret) {
    use crate::auth::BodySignature;
    use crate::profile::sender::SenderAuth;
    use crate::secret::SigningSecret;
    let whsec = SigningSecret::parse(&SigningSecret::encode(b"a standard webhooks key")).unwrap();
    let mut policy = policy();
    policy.max_body_bytes = 1 << 20;
    for profile in Profile::ALL.into_iter().filter(|p| *p != Profile::StaticForms) {
        let auth = match crate::profile::registry::sender(profile).auth() {
            SenderAuth::StaticForms => continue,
            SenderAuth::StandardWebhooks { .. } => {
                AuthPolicy { signing_secrets: alloc::vec![whsec.clone()], ..AuthPolicy::default() }
            }
            SenderAuth::BodySigned { scheme, .. } => AuthPolicy {
                body_signature: Some(BodySignature::new(
                    scheme,
                    alloc::vec![SigningSecret::plain("form-secret").unwrap()],
                )),
                ..AuthPolicy::default()
            },
        };
        policy.senders.push((profile, auth));
    }
    (policy, whsec)
}

/// A signed delivery of `body` to `profile`, as its sender sends it (`id` is the Standard
/// Webhooks message ID), with noise headers.
fn signed(profile: Profile, whsec: &crate::secret::SigningSecret, id: &str, body: &str) -> Headers {
    use crate::profile::sender::SenderAuth;
    let form_secret = crate::secret::SigningSecret::plain("form-secret").unwrap();
    let timestamp = format!("{}", NOW / 1000);
    let mut pairs: Vec<(String, String)> =
        alloc::vec![("Content-Type".into(), "application/json".into()), ("User-Agent".into(), "x".into())];
    match crate::profile::registry::sender(profile).auth() {
        SenderAuth::StaticForms => {
            pairs.push(("Authorization".into(), "Bearer tok".into()));
            pairs.push(("Idempotency-Key".into(), KEY.into()));
        }
        SenderAuth::StandardWebhooks { .. } => {
            pairs.push(("webhook-id".into(), id.into()));
            pairs.push(("webhook-timestamp".into(), timestamp.clone()));
            pairs.push((
                "webhook-signature".into(),
                crate::auth::signature_header(whsec, id, &timestamp, body.as_bytes()),
            ));
        }
        SenderAuth::BodySigned { scheme, .. } => {
            let config = crate::auth::BodySignature::new(scheme, alloc::vec![]);
            let others = Headers::new(pairs.clone());
            pairs.extend(crate::auth::body_signature_headers(&config, &form_secret, &others, body.as_bytes(), NOW));
        }
    }
    Headers::new(pairs)
}

#[wasm_bindgen_test(unsupported = test)]
fn every_profile_takes_its_senders_documented_delivery_under_its_own_key() {
    let (policy, whsec) = every_profile();
    let sw_body = r#"{"type":"contact.created","timestamp":"2022-11-03T20:26:10.344522Z","data":{"email":"a@x"}}"#;
    let cases = [
        (Profile::StaticForms, BODY, KEY),
        (Profile::StandardWebhooks, sw_body, "standard-webhooks:msg_1"),
        (
            Profile::Typeform,
            include_str!("../../tests/fixtures/typeform.json"),
            "typeform:lT4Z3j:a3a12ec67a1365927098a606107fac15",
        ),
        (Profile::Tally, include_str!("../../tests/fixtures/tally.json"), "tally:2wgx4n"),
    ];
    for (profile, body, key) in cases {
        let all = signed(profile, &whsec, "msg_1", body);
        let deliver = |headers: &Headers, body: &str, policy: &Policy| {
            receive(policy, &Delivery { profile, headers, body: body.as_bytes(), request_id: "req-1", now_millis: NOW })
        };
        let Step::Store(pending) = deliver(&all, body, &policy) else { panic!("{profile:?} refused") };
        let item = item_from_wire(parse(pending.request.body.as_bytes()).unwrap().get("Item").unwrap()).unwrap();
        let receipt = crate::receipt::Receipt::from_item(&item).unwrap();
        assert_eq!((receipt.key.as_str(), receipt.profile), (key, profile));
        // Only the headers the policy names for this profile: the same answer.
        let named: Vec<(String, String)> = policy
            .header_names(profile)
            .filter_map(|name| all.get(name).map(|value| (String::from(name), String::from(value))))
            .collect();
        assert_eq!(deliver(&Headers::new(named), body, &policy), Step::Store(pending.clone()), "{profile:?}");
        // Another profile's credential is not this one's.
        let other = if profile == Profile::Tally { Profile::Typeform } else { Profile::Tally };
        let wrong = deliver(&signed(other, &whsec, "msg_1", body), body, &policy);
        assert!(matches!(wrong, Step::Respond(Outcome::Unauthenticated(..), _)), "{profile:?}: {wrong:?}");
        // A body changed after signing is refused before it is read (Static Forms' bearer
        // token does not sign the body).
        let changed = body.replacen('{', "{ ", 1);
        let answer = deliver(&all, &changed, &policy);
        assert_eq!(matches!(answer, Step::Respond(Outcome::Unauthenticated(..), _)), profile != Profile::StaticForms);
        // Disabled: 404, whatever the delivery.
        let mut without = policy.clone();
        without.senders.retain(|(p, _)| *p != profile);
        assert_eq!(deliver(&all, body, &without), respond(Outcome::NotFound), "{profile:?}");
    }
}

#[wasm_bindgen_test(unsupported = test)]
fn a_standard_webhooks_retry_is_the_same_bytes_and_other_bytes_are_other_content() {
    let (policy, whsec) = every_profile();
    let body = r#"{"type":"t","data":{"n":1.0}}"#;
    let store = |body: &str| {
        let headers = signed(Profile::StandardWebhooks, &whsec, "msg_9", body);
        let delivery = Delivery {
            profile: Profile::StandardWebhooks,
            headers: &headers,
            body: body.as_bytes(),
            request_id: "req-1",
            now_millis: NOW,
        };
        match receive(&policy, &delivery) {
            Step::Store(pending) => pending,
            other => panic!("{other:?}"),
        }
    };
    let first = store(body);
    let item = parse(first.request.body.as_bytes()).unwrap().get("Item").unwrap().to_text();
    let old =
        format!(r#"{{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","Item":{item}}}"#);
    assert_eq!(store(body).finish(classify_put(400, old.as_bytes())).response().status, 200);
    // The same value, other bytes: a Standard Webhooks sender resends the same payload, so
    // this is other content.
    let other = store(r#"{"type":"t","data":{"n":1}}"#);
    assert_eq!(other.finish(classify_put(400, old.as_bytes())), Outcome::KeyReused);
}

#[wasm_bindgen_test(unsupported = test)]
fn a_missing_or_odd_webhook_id_is_a_bad_key() {
    let (policy, whsec) = every_profile();
    let body = "{}";
    for (id, expected) in [("", KeyError::Invalid), ("a\u{1}b", KeyError::Invalid)] {
        // Signed with that ID, so authentication passes and the ID itself is judged.
        let headers = signed(Profile::StandardWebhooks, &whsec, id, body);
        let delivery = Delivery {
            profile: Profile::StandardWebhooks,
            headers: &headers,
            body: body.as_bytes(),
            request_id: "r",
            now_millis: NOW,
        };
        assert_eq!(receive(&policy, &delivery), respond(Outcome::InvalidKey(expected)), "{id:?}");
    }
    assert_eq!(Outcome::InvalidKey(KeyError::Invalid).response().status, 400);
}

#[wasm_bindgen_test(unsupported = test)]
fn every_answer_against_every_stored_state() {
    // What a delivery gets against each receipt the store may hold for its key: RECEIVED,
    // COMPLETED, FAILED and reopened by a redrive (RECEIVED with `redrivenAt`), while it lives.
    // Same content (a retry, a new timestamp) and other content. An expired one is the store's
    // to replace (the put's condition): it-tested through the Worker,
    // `edge_receiver.rs::every_answer_against_every_stored_state_through_the_worker`.
    let (same, other) = (BODY.replace("1796019713", "1796019999"), BODY.replace("Hello", "Hello again"));
    let redriven = |status: &str| {
        let text = String::from_utf8(duplicate_answer(BODY, status)).unwrap();
        text.replacen(r#""status":"#, r#""redrivenAt":{"S":"2026-12-01T00:00:02.000Z"},"status":"#, 1).into_bytes()
    };
    let states: [(&str, Vec<u8>, ReceiptStatus); 4] = [
        ("RECEIVED", duplicate_answer(BODY, "RECEIVED"), ReceiptStatus::Received),
        ("COMPLETED", duplicate_answer(BODY, "COMPLETED"), ReceiptStatus::Completed),
        ("FAILED", duplicate_answer(BODY, "FAILED"), ReceiptStatus::Failed),
        ("reopened", redriven("RECEIVED"), ReceiptStatus::Received),
    ];
    for (state, answer, status) in &states {
        assert!(String::from_utf8_lossy(answer).contains("redrivenAt") == (*state == "reopened"));
        let retried = pending(&same).finish(classify_put(400, answer));
        let response = retried.response();
        assert_eq!((response.status, response.code), (200, "duplicate"), "{state}");
        let body = parse(response.body.as_bytes()).unwrap();
        assert_eq!(body.get("status").and_then(Json::as_str), Some(status.as_str()), "{state}");
        assert_eq!(body.get("receivedAt").and_then(Json::as_str), Some("2026-11-30T06:21:53.123Z"), "{state}");
        assert_eq!(body.get("duplicate"), Some(&Json::Bool(true)), "{state}");
        let changed = pending(&other).finish(classify_put(400, answer)).response();
        assert_eq!((changed.status, changed.code), (422, "idempotency_key_reused"), "{state}");
    }
}
