//! The fuzz targets' judges, written from the documented rules without the code under test:
//! which credentials are genuinely valid, how deep JSON text nests, and DynamoDB's item rules.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use shared::auth::AuthMethod;
use shared::decimal::Decimal;
use shared::dynamo::{item_size, AttributeValue, Item, MAX_ITEM_BYTES};
use shared::headers::Headers;

use crate::{BASIC, BEARER, HEADER, SIGNING_SECRET};

/// The deepest nesting of arrays and objects in JSON text, strings skipped.
pub(crate) fn nesting(text: &[u8]) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in text {
        match (in_string, escaped, b) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (true, false, b'"') => in_string = false,
            (true, false, _) => {}
            (false, _, b'"') => in_string = true,
            (false, _, b'[' | b'{') => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            (false, _, b']' | b'}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// Every method by which this request carries a valid credential of the fuzz policy:
/// `Authorization: <scheme> <credentials>` (scheme in any case, spaces around ignored), the
/// custom header's exact value, or a Standard Webhooks `v1` signature within five minutes.
pub(crate) fn valid_methods(headers: &Headers, body: &[u8], now_millis: u64) -> Vec<AuthMethod> {
    let mut valid = Vec::new();
    let authorization = headers.get("Authorization").and_then(|v| v.trim().split_once(' '));
    if let Some((scheme, credentials)) = authorization {
        let credentials = credentials.trim();
        if scheme.eq_ignore_ascii_case("bearer") && credentials == BEARER {
            valid.push(AuthMethod::Bearer);
        }
        if scheme.eq_ignore_ascii_case("basic") && BASE64.decode(credentials).is_ok_and(|pair| pair == BASIC.as_bytes())
        {
            valid.push(AuthMethod::Basic);
        }
    }
    if headers.get(HEADER.0) == Some(HEADER.1) {
        valid.push(AuthMethod::Header);
    }
    if signed(headers, body, now_millis) {
        valid.push(AuthMethod::Signature);
    }
    valid
}

/// True if some method accepts the request.
pub(crate) fn genuinely_authenticated(headers: &Headers, body: &[u8], now_millis: u64) -> bool {
    !valid_methods(headers, body, now_millis).is_empty()
}

/// A Standard Webhooks signature: HMAC-SHA256 of `id.timestamp.body` with the secret's key,
/// base64, as one of the space-separated `v1,<signature>` entries; timestamp in decimal
/// seconds within five minutes of now.
fn signed(headers: &Headers, body: &[u8], now_millis: u64) -> bool {
    let (Some(id), Some(timestamp), Some(signatures)) =
        (headers.get("webhook-id"), headers.get("webhook-timestamp"), headers.get("webhook-signature"))
    else {
        return false;
    };
    let digits_only = !timestamp.is_empty() && timestamp.len() <= 18 && timestamp.bytes().all(|b| b.is_ascii_digit());
    let Some(sent) = timestamp.parse::<u64>().ok().filter(|_| digits_only) else { return false };
    if (now_millis / 1000).abs_diff(sent) > 300 {
        return false;
    }
    let key = BASE64.decode(SIGNING_SECRET.trim_start_matches("whsec_")).expect("the fuzz secret is base64");
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("HMAC takes any key");
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    let expected = mac.finalize().into_bytes();
    signatures
        .split(' ')
        .filter_map(|entry| entry.strip_prefix("v1,"))
        .any(|encoded| BASE64.decode(encoded).is_ok_and(|sig| sig.as_slice() == expected.as_slice()))
}

/// DynamoDB's documented rules for an item this receiver writes: at most 400 KB, a non-empty
/// string partition key of at most 2,048 bytes, numbers within range, at most 32 levels of
/// nesting, no empty attribute names in maps, no empty sets.
pub(crate) fn satisfies_item_rules(item: &Item) -> Result<(), String> {
    fn value_ok(value: &AttributeValue, depth: usize) -> Result<(), String> {
        if depth > 32 {
            return Err("nested past 32 levels".into());
        }
        match value {
            AttributeValue::N(n) if !Decimal::parse(n).is_some_and(|d| d.fits_dynamodb()) => {
                Err(format!("number {n} out of range"))
            }
            AttributeValue::M(m) if m.keys().any(String::is_empty) => Err("empty attribute name".into()),
            AttributeValue::M(m) => m.values().try_for_each(|v| value_ok(v, depth + 1)),
            AttributeValue::L(l) => l.iter().try_for_each(|v| value_ok(v, depth + 1)),
            AttributeValue::Ss(s) if s.is_empty() => Err("empty set".into()),
            _ => Ok(()),
        }
    }
    if item_size(item) > MAX_ITEM_BYTES {
        return Err(format!("item of {} bytes", item_size(item)));
    }
    match item.get("pk") {
        Some(AttributeValue::S(pk)) if !pk.is_empty() && pk.len() <= 2048 => {}
        other => return Err(format!("partition key {other:?}")),
    }
    item.values().try_for_each(|v| value_ok(v, 1))
}
