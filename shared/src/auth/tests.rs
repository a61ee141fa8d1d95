//! Every method with right, wrong, rotated and expired credentials.

use super::*;
use crate::json::{parse, Json};
use alloc::format;
use alloc::string::ToString;
use alloc::vec;
use wasm_bindgen_test::wasm_bindgen_test;

const VECTORS: &str = include_str!("../../tests/fixtures/standard_webhooks.json");

fn vector(name: &str) -> String {
    let vectors = parse(VECTORS.as_bytes()).unwrap();
    String::from(vectors.get(name).and_then(Json::as_str).unwrap())
}

fn full_policy() -> AuthPolicy {
    AuthPolicy {
        bearer_tokens: vec![Credential::new(b"token-old"), Credential::new(b"token-new")],
        basic_credentials: vec![Credential::new(b"forms:pa:ss")],
        header: Some(HeaderCredentials { name: "X-Forms-Secret".into(), values: vec![Credential::new(b"h-1")] }),
        signing_secrets: vec![
            SigningSecret::parse(&vector("other_secret")).unwrap(),
            SigningSecret::parse(&vector("secret")).unwrap(),
        ],
        body_signature: None,
    }
}

fn signed(signature: &str, timestamp: &str) -> Vec<(String, String)> {
    vec![
        ("webhook-id".into(), vector("id")),
        ("webhook-timestamp".into(), timestamp.into()),
        ("webhook-signature".into(), signature.into()),
    ]
}

fn check(policy: &AuthPolicy, headers: Vec<(String, String)>, now: i64, expected: Result<AuthMethod, AuthError>) {
    let body = vector("body");
    let got = policy.authenticate(&Headers::new(headers.clone()), body.as_bytes(), now);
    assert_eq!(got, expected, "headers: {:?}", headers.iter().map(|(n, _)| n).collect::<Vec<_>>());
}

fn one(name: &str, value: &str) -> Vec<(String, String)> {
    vec![(name.into(), value.into())]
}

#[wasm_bindgen_test(unsupported = test)]
fn bearer_tokens() {
    let p = full_policy();
    check(&p, one("Authorization", "Bearer token-new"), 0, Ok(AuthMethod::Bearer));
    check(&p, one("authorization", "bearer  token-old "), 0, Ok(AuthMethod::Bearer));
    check(&p, one("Authorization", "Bearer token-older"), 0, Err(AuthError::BadBearerToken));
    check(&p, one("Authorization", "Bearer"), 0, Err(AuthError::MissingCredentials));
    // Optional whitespace around the field is spaces and tabs (RFC 9110, 5.6.3), nothing else;
    // the scheme and the credentials are separated by spaces only (11.4).
    check(&p, one("Authorization", "\t Bearer   token-new \t"), 0, Ok(AuthMethod::Bearer));
    check(&p, one("Authorization", "Bearer token-new\u{a0}"), 0, Err(AuthError::BadBearerToken));
    check(&p, one("Authorization", "Bearer \ttoken-new"), 0, Err(AuthError::BadBearerToken));
    check(&p, one("Authorization", "Bearer\ttoken-new"), 0, Err(AuthError::MissingCredentials));
}

#[wasm_bindgen_test(unsupported = test)]
fn basic_credentials() {
    let p = full_policy();
    // base64("forms:pa:ss") = Zm9ybXM6cGE6c3M=: the password may hold a colon.
    check(&p, one("Authorization", "Basic Zm9ybXM6cGE6c3M="), 0, Ok(AuthMethod::Basic));
    check(&p, one("Authorization", "BASIC Zm9ybXM6cGE6c3M="), 0, Ok(AuthMethod::Basic));
    // base64("forms:pass")
    check(&p, one("Authorization", "Basic Zm9ybXM6cGFzcw=="), 0, Err(AuthError::BadBasicCredentials));
    check(&p, one("Authorization", "Basic not*base64"), 0, Err(AuthError::BadBasicCredentials));
}

#[wasm_bindgen_test(unsupported = test)]
fn custom_header() {
    let p = full_policy();
    check(&p, one("x-forms-secret", "h-1"), 0, Ok(AuthMethod::Header));
    check(&p, one("X-Forms-Secret", "h-2"), 0, Err(AuthError::BadHeaderValue));
    check(&p, one("X-Other", "h-1"), 0, Err(AuthError::MissingCredentials));
}

#[wasm_bindgen_test(unsupported = test)]
fn standard_webhooks_signatures() {
    let p = full_policy();
    let (sig, ts) = (vector("signature"), vector("timestamp"));
    let now: i64 = ts.parse().unwrap();
    check(&p, signed(&sig, &ts), now, Ok(AuthMethod::Signature));
    // Rotation: the sender signs with both keys; either accepted key is enough.
    let both = alloc::format!("v1,bm90LWl0 {} {}", vector("signature_other_key"), sig);
    check(&p, signed(&both, &ts), now, Ok(AuthMethod::Signature));
    check(&p, signed(&vector("signature_other_key"), &ts), now, Ok(AuthMethod::Signature));
    // Tolerance: five minutes either way, inclusive.
    check(&p, signed(&sig, &ts), now + 300, Ok(AuthMethod::Signature));
    check(&p, signed(&sig, &ts), now - 300, Ok(AuthMethod::Signature));
    check(&p, signed(&sig, &ts), now + 301, Err(AuthError::SignatureTimestampOutOfRange));
    check(&p, signed(&sig, &ts), now - 301, Err(AuthError::SignatureTimestampOutOfRange));
    // Wrong body, unsupported version, altered timestamp, malformed headers.
    check(&p, signed(&vector("signature_of_other_body"), &ts), now, Err(AuthError::BadSignature));
    check(&p, signed(&sig.replace("v1,", "v2,"), &ts), now, Err(AuthError::BadSignature));
    let shifted = (now + 1).to_string();
    check(&p, signed(&sig, &shifted), now, Err(AuthError::BadSignature));
    check(&p, signed(&sig, "-5"), now, Err(AuthError::MalformedSignatureHeaders));
    check(&p, signed(&sig, &alloc::format!("{ts}.0")), now, Err(AuthError::MalformedSignatureHeaders));
    check(&p, one("webhook-signature", &sig), now, Err(AuthError::MalformedSignatureHeaders));
    // Only the key that is no longer accepted: refused.
    let rotated_out = AuthPolicy {
        signing_secrets: vec![SigningSecret::parse(&vector("other_secret")).unwrap()],
        ..AuthPolicy::default()
    };
    check(&rotated_out, signed(&sig, &ts), now, Err(AuthError::BadSignature));
}

#[wasm_bindgen_test(unsupported = test)]
fn our_signatures_match_the_python_vectors() {
    let secret = SigningSecret::parse(&vector("secret")).unwrap();
    let header = signature_header(&secret, &vector("id"), &vector("timestamp"), vector("body").as_bytes());
    assert_eq!(header, vector("signature"));
}

#[wasm_bindgen_test(unsupported = test)]
fn fails_closed_and_reports_the_presented_method() {
    check(&AuthPolicy::default(), one("Authorization", "Bearer anything"), 0, Err(AuthError::NotConfigured));
    let empty_header =
        AuthPolicy { header: Some(HeaderCredentials { name: "x-k".into(), values: vec![] }), ..AuthPolicy::default() };
    check(&empty_header, one("x-k", ""), 0, Err(AuthError::NotConfigured));
    let p = full_policy();
    check(&p, vec![], 0, Err(AuthError::MissingCredentials));
    // A wrong bearer token does not hide behind a right custom header: any method accepting wins.
    let mixed = vec![("Authorization".into(), "Bearer wrong".into()), ("X-Forms-Secret".into(), "h-1".into())];
    check(&p, mixed, 0, Ok(AuthMethod::Header));
    // Bearer only configured: a Basic header is no credential for it.
    let bearer_only = AuthPolicy { bearer_tokens: vec![Credential::new(b"t")], ..AuthPolicy::default() };
    check(&bearer_only, one("Authorization", "Basic dDp0"), 0, Err(AuthError::MissingCredentials));
}

#[wasm_bindgen_test(unsupported = test)]
fn challenges_name_the_configured_methods_only() {
    let full = full_policy();
    assert_eq!(
        full.challenge(),
        r#"Bearer realm="webhooks", Basic realm="webhooks", charset="UTF-8", Header realm="webhooks", Webhook-Signature realm="webhooks""#
    );
    let bearer = AuthPolicy { bearer_tokens: full.bearer_tokens.clone(), ..AuthPolicy::default() };
    assert_eq!(bearer.challenge(), r#"Bearer realm="webhooks""#);
    let signatures = AuthPolicy { signing_secrets: full.signing_secrets.clone(), ..AuthPolicy::default() };
    assert_eq!(signatures.challenge(), r#"Webhook-Signature realm="webhooks""#);
    let header = AuthPolicy { header: full.header.clone(), ..AuthPolicy::default() };
    assert_eq!(header.challenge(), r#"Header realm="webhooks""#);
    assert!(!header.challenge().contains("X-Forms-Secret"), "the header's name is not announced");
    let basic = AuthPolicy { basic_credentials: full.basic_credentials.clone(), ..AuthPolicy::default() };
    assert_eq!(basic.challenge(), r#"Basic realm="webhooks", charset="UTF-8""#);
}

#[wasm_bindgen_test(unsupported = test)]
fn reasons_are_distinct() {
    use AuthError::*;
    let all = [
        NotConfigured,
        MissingCredentials,
        BadBearerToken,
        BadBasicCredentials,
        BadHeaderValue,
        MalformedSignatureHeaders,
        SignatureTimestampOutOfRange,
        BadSignature,
    ];
    let mut reasons: Vec<_> = all.iter().map(|e| e.reason()).collect();
    reasons.sort();
    reasons.dedup();
    assert_eq!(reasons.len(), all.len());
}

/// Cross-check against the `standardwebhooks` crate on the same inputs.
#[cfg(not(target_arch = "wasm32"))]
mod against_standardwebhooks {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn verdicts_agree(
            key in prop::collection::vec(any::<u8>(), 1..40),
            // The crate signs only UTF-8 payloads.
            body in "\\PC{0,100}",
            id in "[a-zA-Z0-9_]{1,20}",
            skew in -600i64..600,
            tamper in any::<bool>(),
        ) {
            // The crate reads the clock itself, so both sides are given the real time here.
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
            let sent_at = now + skew;
            let secret_text = SigningSecret::encode(&key);
            let secret = SigningSecret::parse(&secret_text).unwrap();
            let theirs = standardwebhooks::Webhook::new(&secret_text).unwrap();
            let ts = sent_at.to_string();
            let signature = theirs.sign(&id, sent_at, body.as_bytes()).unwrap();
            prop_assert_eq!(&signature, &signature_header(&secret, &id, &ts, body.as_bytes()));

            let mut received = body.clone().into_bytes();
            if tamper {
                received.push(b'!');
            }
            let pairs = [("webhook-id", id.clone()), ("webhook-timestamp", ts), ("webhook-signature", signature)];
            let mut map = http::HeaderMap::new();
            for (name, value) in &pairs {
                map.insert(*name, value.parse().unwrap());
            }
            let policy = AuthPolicy { signing_secrets: vec![secret], ..AuthPolicy::default() };
            let ours = policy.authenticate(&Headers::new(pairs), &received, now).is_ok();
            // Away from the window's edges, where a second ticking between the two calls matters.
            if !(295..=305).contains(&skew.abs()) {
                prop_assert_eq!(ours, theirs.verify(&received, &map).is_ok());
            }
            prop_assert_eq!(ours, !tamper && skew.abs() <= 300);
        }
    }
}

#[wasm_bindgen_test(unsupported = test)]
fn any_one_method_with_a_credential_is_a_configuration() {
    let full = full_policy();
    let only = [
        AuthPolicy { bearer_tokens: full.bearer_tokens.clone(), ..AuthPolicy::default() },
        AuthPolicy { basic_credentials: full.basic_credentials.clone(), ..AuthPolicy::default() },
        AuthPolicy { header: full.header.clone(), ..AuthPolicy::default() },
        AuthPolicy { signing_secrets: full.signing_secrets.clone(), ..AuthPolicy::default() },
    ];
    for policy in &only {
        assert!(policy.is_configured(), "{:?}", policy.challenge());
    }
    assert!(!AuthPolicy::default().is_configured());
    let header_without_values =
        AuthPolicy { header: Some(HeaderCredentials { name: "x-k".into(), values: vec![] }), ..AuthPolicy::default() };
    assert!(!header_without_values.is_configured());
}

#[wasm_bindgen_test(unsupported = test)]
fn a_signature_timestamp_is_at_most_18_digits() {
    let policy = full_policy();
    let now: i64 = vector("timestamp").parse().unwrap();
    // Zero-padded to 18 characters it is still the time: in range, so the signature decides.
    let padded = alloc::format!("{now:0>18}");
    check(&policy, signed("v1,AAAA", &padded), now, Err(AuthError::BadSignature));
    // 19 digits is refused as malformed, even where i64 would hold it.
    check(&policy, signed("v1,AAAA", "1000000000000000000"), now, Err(AuthError::MalformedSignatureHeaders));
    check(&policy, signed("v1,AAAA", &alloc::format!("0{padded}")), now, Err(AuthError::MalformedSignatureHeaders));
    for bad in ["", "+1796019713", "-1", " 1796019713", "1.5"] {
        check(&policy, signed("v1,AAAA", bad), now, Err(AuthError::MalformedSignatureHeaders));
    }
}

#[wasm_bindgen_test(unsupported = test)]
fn body_signatures_as_typeform_and_tally_send_them() {
    // Vectors computed with Python's hmac from each sender's documented scheme: Typeform
    // `sha256=` + base64, Tally bare base64, both of HMAC-SHA256 under the secret's text.
    let policy = |header, prefix| AuthPolicy {
        body_signature: Some(BodySignature::new(
            HmacScheme::body(header, prefix, Encoding::Base64),
            vec![SigningSecret::plain("old-secret").unwrap(), SigningSecret::plain("test-secret").unwrap()],
        )),
        ..AuthPolicy::default()
    };
    let typeform = policy("typeform-signature", "sha256=");
    let body = br#"{"event_id":"LtWXD3crgy","event_type":"form_response"}"#;
    let check = |policy: &AuthPolicy, headers: &[(&str, &str)], body: &[u8]| {
        policy.authenticate(&Headers::new(headers.iter().copied()), body, 0)
    };
    let good = "sha256=9Qk43kDnGfuJw9YvfsvFTDJXHLif38Rp6U+mXLoaUNg=";
    assert_eq!(check(&typeform, &[("Typeform-Signature", good)], body), Ok(AuthMethod::BodySignature));
    assert_eq!(check(&typeform, &[("typeform-signature", &format!(" {good}\t"))], body), Ok(AuthMethod::BodySignature));
    let secret = SigningSecret::plain("test-secret").unwrap();
    let config = typeform.body_signature.as_ref().unwrap();
    let signed = crate::auth::body_signature_headers(config, &secret, &Headers::default(), body, 0);
    assert_eq!(signed, [(String::from("typeform-signature"), String::from(good))]);
    for bad in [
        "9Qk43kDnGfuJw9YvfsvFTDJXHLif38Rp6U+mXLoaUNg=",
        "sha256=9Qk43kDnGfuJw9YvfsvFTDJXHLif38Rp6U+mXLoaUNh=",
        "sha256=",
        "sha256=!!",
        "SHA256=9Qk43kDnGfuJw9YvfsvFTDJXHLif38Rp6U+mXLoaUNg=",
    ] {
        assert_eq!(check(&typeform, &[("Typeform-Signature", bad)], body), Err(AuthError::BadSignature), "{bad}");
    }
    assert_eq!(check(&typeform, &[("Typeform-Signature", good)], &body[1..]), Err(AuthError::BadSignature));
    assert_eq!(check(&typeform, &[("Tally-Signature", good)], body), Err(AuthError::MissingCredentials));
    assert_eq!(typeform.challenge(), "Body-Signature realm=\"webhooks\"");

    let tally = policy("tally-signature", "");
    let body = br#"{"eventId":"a4cb511e-d513-4fa5-baee-b815d718dfd1","eventType":"FORM_RESPONSE"}"#;
    let good = "gi/Z9TuVMGh+ZfPGY7VnkW0NszHwhQDdvXGZhD3OHsQ=";
    assert_eq!(check(&tally, &[("Tally-Signature", good)], body), Ok(AuthMethod::BodySignature));
    // The same secret listed twice (mid-rotation) still accepts: matches are ORed, never toggled.
    let twice = AuthPolicy {
        body_signature: Some(BodySignature::new(
            HmacScheme::body("tally-signature", "", Encoding::Base64),
            vec![SigningSecret::plain("test-secret").unwrap(), SigningSecret::plain("test-secret").unwrap()],
        )),
        ..AuthPolicy::default()
    };
    assert_eq!(check(&twice, &[("Tally-Signature", good)], body), Ok(AuthMethod::BodySignature));
    assert_eq!(check(&tally, &[("Tally-Signature", &format!("sha256={good}"))], body), Err(AuthError::BadSignature));
    // No secret configured: the method is not configured at all.
    let empty = AuthPolicy {
        body_signature: Some(BodySignature::new(HmacScheme::body("tally-signature", "", Encoding::Base64), vec![])),
        ..AuthPolicy::default()
    };
    assert!(!empty.is_configured());
    assert_eq!(check(&empty, &[("Tally-Signature", good)], body), Err(AuthError::NotConfigured));
    assert_eq!(SigningSecret::plain(""), None);
}
