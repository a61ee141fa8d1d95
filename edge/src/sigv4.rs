//! SigV4 signing of a DynamoDB JSON API request, at a time the caller passes in.
//!
//! The request is always the same shape (`POST /`, no query, four or five headers), so its
//! canonical form is written here directly; `aws-sigv4` derives the signing key and computes
//! the signature. That keeps the general request signer (header maps, URI and query
//! normalisation, tracing) out of the Worker: smaller upload, less CPU per delivery. The
//! tests check every signature against botocore's and against `aws-sigv4`'s own signer.
//!
//! The time comes from the JS clock: `SystemTime::now()` panics on wasm32, so the signing time
//! is built from milliseconds since the epoch instead.

use core::cell::RefCell;
use std::time::{Duration, SystemTime};

use aws_sigv4::sign::v4::{calculate_signature, generate_signing_key};
use sha2::{Digest, Sha256};
use shared::hex;
use shared::put_item::{StoreRequest, CONTENT_TYPE};
use shared::time::iso8601_millis;

use crate::config::AwsCredentials;

/// The service name in the credential scope.
const SERVICE: &str = "dynamodb";

/// Signs requests to one DynamoDB endpoint with one set of credentials. It keeps the day's
/// signing key (four HMACs to derive), so a request costs two hashes and one HMAC.
pub struct Signer {
    /// `scheme://host[:port]/`, where the request goes.
    url: String,
    /// The `host` header as the fetch sends it: lowercase, without the scheme's default port.
    host: String,
    region: String,
    credentials: AwsCredentials,
    /// The signing key and the `YYYYMMDD` it is for.
    key: RefCell<Option<(String, Vec<u8>)>>,
}

impl Signer {
    /// A signer for `endpoint` (`scheme://host[:port]`, as the configuration validated it).
    pub fn new(endpoint: &str, region: &str, credentials: AwsCredentials) -> Signer {
        let (scheme, authority) = endpoint.split_once("://").unwrap_or(("https", endpoint));
        let authority = authority.to_ascii_lowercase();
        let default_port = if scheme.eq_ignore_ascii_case("http") { ":80" } else { ":443" };
        let host = authority.strip_suffix(default_port).unwrap_or(&authority).to_owned();
        Signer { url: format!("{endpoint}/"), host, region: region.to_owned(), credentials, key: RefCell::new(None) }
    }

    /// Where the signed request must be sent.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The headers to send with `request`: content type, target, `x-amz-date`,
    /// `x-amz-security-token` with temporary credentials, and `authorization`. `host` is
    /// signed but not returned: the fetch sends the same value itself.
    pub fn sign(&self, request: &StoreRequest, now_millis: u64) -> Vec<(&'static str, String)> {
        let iso = iso8601_millis(now_millis);
        // `YYYY-MM-DDTHH:MM:SS.mmmZ` to `YYYYMMDD` and `YYYYMMDDTHHMMSSZ`.
        let date: String = iso[..10].chars().filter(|c| *c != '-').collect();
        let amz_date = format!("{date}T{}{}{}Z", &iso[11..13], &iso[14..16], &iso[17..19]);

        let mut headers: Vec<(&'static str, String)> =
            vec![("content-type", CONTENT_TYPE.to_owned()), ("host", self.host.clone()), ("x-amz-date", amz_date)];
        if let Some(token) = &self.credentials.session_token {
            headers.push(("x-amz-security-token", token.clone()));
        }
        headers.push(("x-amz-target", request.target.to_owned()));
        // Already in name order, which the canonical request requires.
        let signed_names = headers.iter().map(|(name, _)| *name).collect::<Vec<_>>().join(";");

        let mut canonical = String::with_capacity(256);
        canonical.push_str("POST\n/\n\n");
        for (name, value) in &headers {
            canonical.push_str(name);
            canonical.push(':');
            push_canonical_value(&mut canonical, value);
            canonical.push('\n');
        }
        canonical.push('\n');
        canonical.push_str(&signed_names);
        canonical.push('\n');
        canonical.push_str(&hex::encode(&Sha256::digest(request.body.as_bytes())));

        let scope = format!("{date}/{}/{SERVICE}/aws4_request", self.region);
        let string_to_sign = format!(
            "AWS4-HMAC-SHA256\n{}\n{scope}\n{}",
            headers[2].1,
            hex::encode(&Sha256::digest(canonical.as_bytes()))
        );
        let signature = self.with_key(&date, now_millis, |key| calculate_signature(key, string_to_sign.as_bytes()));
        let authorization = format!(
            "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed_names}, Signature={signature}",
            self.credentials.access_key_id
        );
        headers.remove(1);
        headers.push(("authorization", authorization));
        headers
    }

    /// Runs `f` with the signing key for `date`, derived once per day.
    fn with_key<T>(&self, date: &str, now_millis: u64, f: impl FnOnce(&[u8]) -> T) -> T {
        let mut cached = self.key.borrow_mut();
        if cached.as_ref().is_none_or(|(day, _)| day != date) {
            let time = SystemTime::UNIX_EPOCH + Duration::from_millis(now_millis);
            let key = generate_signing_key(&self.credentials.secret_access_key, time, &self.region, SERVICE);
            *cached = Some((date.to_owned(), key.as_ref().to_vec()));
        }
        let (_, key) = cached.as_ref().expect("set above");
        f(key)
    }
}

/// A header value in canonical form: trimmed, runs of spaces as one.
fn push_canonical_value(out: &mut String, value: &str) {
    let mut space = false;
    for c in value.trim().chars() {
        if c == ' ' {
            space = true;
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.push(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    /// Signatures computed independently with botocore for the same request and time.
    const VECTORS: &str = include_str!("../tests/fixtures/sigv4.json");

    fn signer(endpoint: &str, token: Option<&str>) -> Signer {
        let credentials = AwsCredentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
            session_token: token.map(str::to_owned),
        };
        Signer::new(endpoint, "us-east-1", credentials)
    }

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
            let signer = Signer::new(&text(case, "endpoint").unwrap(), &text(case, "region").unwrap(), credentials);
            // Twice: the second signature uses the cached key.
            for _ in 0..2 {
                let headers = signer.sign(&request, now);
                let get =
                    |name: &str| headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone());
                assert_eq!(get("authorization"), text(case, "authorization"), "{:?}", text(case, "name"));
                assert_eq!(get("x-amz-date"), text(case, "x_amz_date"));
                assert_eq!(get("x-amz-security-token"), text(case, "session_token"));
                assert_eq!(get("x-amz-target").as_deref(), Some("DynamoDB_20120810.PutItem"));
                assert_eq!(get("content-type").as_deref(), Some("application/x-amz-json-1.0"));
                assert_eq!(get("host"), None, "the fetch sends host itself");
                assert_eq!(headers.len(), if get("x-amz-security-token").is_some() { 5 } else { 4 });
            }
        }
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn a_different_body_or_time_changes_the_signature() {
        let signer = signer("http://127.0.0.1:1", None);
        let sign_at = |body: &str, now| {
            let request = StoreRequest { target: "DynamoDB_20120810.PutItem", body: body.into() };
            signer.sign(&request, now)
        };
        assert_ne!(sign_at("{}", 1_000_000), sign_at("{ }", 1_000_000));
        assert_ne!(sign_at("{}", 1_000_000), sign_at("{}", 2_000_000));
        assert_eq!(sign_at("{}", 1_000_000), sign_at("{}", 1_000_999));
        // A new day needs a new key: the cached one must not be reused.
        let day = 86_400_000;
        assert_eq!(sign_at("{}", 1_000_000 + day), signer_fresh_sign("{}", 1_000_000 + day));
    }

    fn signer_fresh_sign(body: &str, now: u64) -> Vec<(&'static str, String)> {
        let request = StoreRequest { target: "DynamoDB_20120810.PutItem", body: body.into() };
        signer("http://127.0.0.1:1", None).sign(&request, now)
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn host_is_what_the_fetch_sends() {
        assert_eq!(signer("https://Dynamodb.EU-west-1.amazonaws.com", None).host, "dynamodb.eu-west-1.amazonaws.com");
        assert_eq!(signer("https://db.example:443", None).host, "db.example");
        assert_eq!(signer("https://db.example:8443", None).host, "db.example:8443");
        assert_eq!(signer("http://127.0.0.1:80", None).host, "127.0.0.1");
        assert_eq!(signer("http://127.0.0.1:443", None).host, "127.0.0.1:443");
        assert_eq!(signer("http://[::1]:4566", None).host, "[::1]:4566");
        assert_eq!(signer("http://127.0.0.1:4566", None).url(), "http://127.0.0.1:4566/");
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn canonical_values_are_trimmed_and_spaces_collapsed() {
        let mut out = String::new();
        push_canonical_value(&mut out, "  a  b c   d ");
        assert_eq!(out, "a b c d");
    }
}

/// The signature must be the one `aws-sigv4`'s general request signer computes, for any body,
/// time, region, endpoint and credentials.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod cross_checks {
    use super::*;
    use aws_credential_types::Credentials;
    use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
    use aws_sigv4::sign::v4;
    use proptest::prelude::*;

    fn reference(signer: &Signer, request: &StoreRequest, now_millis: u64) -> (String, String) {
        let c = &signer.credentials;
        let identity =
            Credentials::new(&c.access_key_id, &c.secret_access_key, c.session_token.clone(), None, "test").into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&signer.region)
            .name(SERVICE)
            .time(SystemTime::UNIX_EPOCH + Duration::from_millis(now_millis))
            .settings(SigningSettings::default())
            .build()
            .unwrap()
            .into();
        let headers = [("content-type", CONTENT_TYPE), ("x-amz-target", request.target)];
        let signable = SignableRequest::new(
            "POST",
            signer.url(),
            headers.into_iter(),
            SignableBody::Bytes(request.body.as_bytes()),
        )
        .unwrap();
        let (instructions, _) = sign(signable, &params).unwrap().into_parts();
        let (headers, _) = instructions.into_parts();
        let get = |name: &str| headers.iter().find(|h| h.name() == name).map(|h| h.value().to_owned()).unwrap();
        (get("authorization"), get("x-amz-date"))
    }

    proptest! {
        #[test]
        fn matches_aws_sigv4s_request_signer(
            body in "\\PC{0,200}",
            now in 0u64..253_402_300_799_000,
            region in "[a-z]{2}-[a-z]{4,9}-[1-9]",
            endpoint in prop::sample::select(vec![
                "http://127.0.0.1:4566", "https://dynamodb.eu-west-1.amazonaws.com", "https://db.example:8443",
                "http://localhost", "http://[::1]:8000",
            ]),
            secret in "[A-Za-z0-9/+]{1,40}",
            token in prop::option::of("[A-Za-z0-9/+=]{1,60}"),
        ) {
            let credentials =
                AwsCredentials { access_key_id: "AKID".into(), secret_access_key: secret, session_token: token };
            let signer = Signer::new(endpoint, &region, credentials);
            let request = StoreRequest { target: "DynamoDB_20120810.PutItem", body };
            let ours = signer.sign(&request, now);
            let get = |name: &str| ours.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone()).unwrap();
            prop_assert_eq!((get("authorization"), get("x-amz-date")), reference(&signer, &request, now));
        }
    }
}
