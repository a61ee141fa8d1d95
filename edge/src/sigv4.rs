//! SigV4 signing of a DynamoDB JSON API request, at a time the caller passes in.
//!
//! The time comes from the JS clock: `SystemTime::now()` panics on wasm32, so the signing time
//! is built from milliseconds since the epoch instead.

use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use shared::put_item::{StoreRequest, CONTENT_TYPE};

use crate::config::AwsCredentials;

/// The signer refused the request (a malformed endpoint or header); nothing was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignError;

/// The headers to send with `request` to `endpoint`: content type, target and the signature's
/// (`authorization`, `x-amz-date`, and `x-amz-security-token` with temporary credentials).
/// `host` is signed from the endpoint; the fetch sends the same value itself.
pub fn signed_headers(
    endpoint: &str,
    region: &str,
    credentials: &AwsCredentials,
    request: &StoreRequest,
    now_millis: u64,
) -> Result<Vec<(String, String)>, SignError> {
    let identity = Credentials::new(
        &credentials.access_key_id,
        &credentials.secret_access_key,
        credentials.session_token.clone(),
        None,
        "edge-config",
    )
    .into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name("dynamodb")
        .time(SystemTime::UNIX_EPOCH + Duration::from_millis(now_millis))
        .settings(SigningSettings::default())
        .build()
        .map_err(|_| SignError)?
        .into();
    let mut headers = vec![
        ("content-type".to_owned(), CONTENT_TYPE.to_owned()),
        ("x-amz-target".to_owned(), request.target.to_owned()),
    ];
    let url = format!("{endpoint}/");
    let signable = SignableRequest::new(
        "POST",
        &url,
        headers.iter().map(|(n, v)| (n.as_str(), v.as_str())),
        SignableBody::Bytes(request.body.as_bytes()),
    )
    .map_err(|_| SignError)?;
    let (instructions, _signature) = sign(signable, &params).map_err(|_| SignError)?.into_parts();
    let (signature_headers, _query) = instructions.into_parts();
    headers.extend(signature_headers.into_iter().map(|h| (h.name().to_owned(), h.value().to_owned())));
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    /// Signatures computed independently with botocore for the same request and time.
    const VECTORS: &str = include_str!("../tests/fixtures/sigv4.json");

    #[wasm_bindgen_test(unsupported = test)]
    fn matches_botocore() {
        let vectors = shared::json::parse(VECTORS.as_bytes()).unwrap();
        let text = |v: &shared::json::Json, k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_owned);
        let body = text(&vectors, "body").unwrap();
        let shared::json::Json::Array(cases) = vectors.get("cases").unwrap() else { panic!("cases") };
        assert_eq!(cases.len(), 2);
        for case in cases {
            let credentials = AwsCredentials {
                access_key_id: "AKIDEXAMPLE".into(),
                secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
                session_token: text(case, "session_token"),
            };
            let now: u64 = case
                .get("now_millis")
                .and_then(|n| match n {
                    shared::json::Json::Number(n) => n.as_str().parse().ok(),
                    _ => None,
                })
                .unwrap();
            let request = StoreRequest { target: "DynamoDB_20120810.PutItem", body: body.clone() };
            let headers = signed_headers(
                &text(case, "endpoint").unwrap(),
                &text(case, "region").unwrap(),
                &credentials,
                &request,
                now,
            )
            .unwrap();
            let get = |name: &str| headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone());
            assert_eq!(get("authorization"), text(case, "authorization"), "{:?}", text(case, "name"));
            assert_eq!(get("x-amz-date"), text(case, "x_amz_date"));
            assert_eq!(get("x-amz-security-token"), text(case, "session_token"));
            assert_eq!(get("x-amz-target").as_deref(), Some("DynamoDB_20120810.PutItem"));
            assert_eq!(get("content-type").as_deref(), Some("application/x-amz-json-1.0"));
        }
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn a_different_body_or_time_changes_the_signature() {
        let credentials =
            AwsCredentials { access_key_id: "A".into(), secret_access_key: "S".into(), session_token: None };
        let sign_at = |body: &str, now| {
            let request = StoreRequest { target: "DynamoDB_20120810.PutItem", body: body.into() };
            signed_headers("http://127.0.0.1:1", "us-east-1", &credentials, &request, now).unwrap()
        };
        assert_ne!(sign_at("{}", 1_000_000), sign_at("{ }", 1_000_000));
        assert_ne!(sign_at("{}", 1_000_000), sign_at("{}", 2_000_000));
        assert_eq!(sign_at("{}", 1_000_000), sign_at("{}", 1_000_999));
    }
}
