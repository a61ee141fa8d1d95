//! The fuzz targets' judges: which credentials are genuinely valid and how deep JSON text
//! nests, written from the RFCs and the Standard Webhooks specification without the code under
//! test; and DynamoDB's item rules, which reuse the core's size count and number range (each
//! unit-tested against DynamoDB's documentation) and check the rest from the documentation.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use shared::auth::{AuthMethod, Covers, Encoding};
use shared::decimal::Decimal;
use shared::dynamo::{item_size, AttributeValue, Item, MAX_ITEM_BYTES};
use shared::headers::Headers;
use shared::profile::registry::sender;
use shared::profile::sender::SenderAuth;
use shared::profile::Profile;

use crate::credentials::{BASIC, BEARER, FORM_SECRET, HEADER, SIGNING_SECRET};

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

/// `Authorization: <scheme> <credentials>` per RFC 9110: `auth-scheme 1*SP credentials`
/// (11.4), the scheme case-insensitive (11.1), and the field without its surrounding optional
/// whitespace, which is spaces and horizontal tabs (5.5, 5.6.3). The credentials of `scheme`.
fn credentials<'v>(field: &'v str, scheme: &str) -> Option<&'v str> {
    let ows = |b: &u8| *b == b' ' || *b == b'\t';
    let bytes = field.as_bytes();
    let start = bytes.iter().position(|b| !ows(b))?;
    let end = bytes.iter().rposition(|b| !ows(b))? + 1;
    let value = &field[start..end];
    let scheme_end = value.bytes().position(|b| b == b' ')?;
    let spaces = value[scheme_end..].bytes().take_while(|b| *b == b' ').count();
    value[..scheme_end].eq_ignore_ascii_case(scheme).then(|| &value[scheme_end + spaces..])
}

/// Every method by which this request carries a valid credential of the fuzz policy: a Bearer
/// token or Basic `user:password` (base64) in `Authorization`, the custom header's exact value,
/// or a Standard Webhooks `v1` signature within five minutes.
pub(crate) fn valid_methods(headers: &Headers, body: &[u8], now_millis: u64) -> Vec<AuthMethod> {
    let mut valid = Vec::new();
    if let Some(field) = headers.get("Authorization") {
        if credentials(field, "Bearer") == Some(BEARER) {
            valid.push(AuthMethod::Bearer);
        }
        if credentials(field, "Basic").is_some_and(|c| BASE64.decode(c).is_ok_and(|pair| pair == BASIC.as_bytes())) {
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

/// True if the request is signed as `profile`'s sender signs (its `SenderAuth`), with the fuzz
/// secrets: Standard Webhooks as [`signed`]; a form backend's signature as its vendor documents
/// it: the HMAC-SHA256 under the secret's text of the body, after Webflow's `{ms}:` (the
/// timestamp header within five minutes) or Formspree's `{t}.` (`t=..,v1=..` in the signature
/// header, `t` within five minutes, once), or followed by Framer's submission ID header; the
/// tag after the scheme's prefix (optional for Formstack), base64 or hex, the field's
/// surrounding spaces and tabs aside. The HMAC is computed here, not by the core.
pub(crate) fn signed_for(profile: Profile, headers: &Headers, body: &[u8], now_millis: u64) -> bool {
    let scheme = match sender(profile).auth() {
        SenderAuth::StandardWebhooks { .. } => return signed(headers, body, now_millis),
        SenderAuth::BodySigned { scheme, .. } => scheme,
        SenderAuth::StaticForms => return genuinely_authenticated(headers, body, now_millis),
    };
    let Some(value) = headers.get(scheme.header) else { return false };
    let value = value.trim_matches(|c| c == ' ' || c == '\t');
    let now = i64::try_from(now_millis / 1000).unwrap_or(i64::MAX);
    let timestamp = |text: &str| {
        (!text.is_empty() && text.len() <= 18 && text.bytes().all(|b| b.is_ascii_digit()))
            .then(|| text.parse::<i64>().ok())
            .flatten()
    };
    let (message, tags): (Vec<u8>, Vec<&str>) = match scheme.covers {
        Covers::Body => (body.to_vec(), vec![value]),
        Covers::BodyThenHeader(name) => {
            let Some(id) = headers.get(name) else { return false };
            ([body, id.as_bytes()].concat(), vec![value])
        }
        Covers::MillisHeaderColonBody(name) => {
            let Some(text) = headers.get(name) else { return false };
            let Some(millis) = timestamp(text) else { return false };
            if (millis / 1000 - now).abs() > 300 {
                return false;
            }
            ([text.as_bytes(), b":", body].concat(), vec![value])
        }
        Covers::InlineSecondsDotBody => {
            let pairs: Vec<(&str, &str)> =
                value.split(',').filter_map(|p| p.trim_matches(|c| c == ' ' || c == '\t').split_once('=')).collect();
            let times: Vec<&str> = pairs.iter().filter(|(n, _)| *n == "t").map(|(_, v)| *v).collect();
            let [text] = times[..] else { return false };
            let Some(secs) = timestamp(text) else { return false };
            if (secs - now).abs() > 300 {
                return false;
            }
            let tags = pairs.iter().filter(|(n, _)| *n == "v1").map(|(_, v)| *v).collect();
            ([text.as_bytes(), b".", body].concat(), tags)
        }
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(FORM_SECRET.as_bytes()).expect("HMAC takes any key");
    mac.update(&message);
    let expected = mac.finalize().into_bytes();
    let decode = |text: &str| match scheme.encoding {
        Encoding::Base64 => BASE64.decode(text).ok(),
        Encoding::Hex => (text.len().is_multiple_of(2) && text.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap()).collect()),
    };
    tags.iter().any(|tag| {
        let bare = tag.strip_prefix(scheme.prefix).or(scheme.prefix_optional.then_some(*tag));
        bare.and_then(decode).is_some_and(|sig: Vec<u8>| sig.as_slice() == expected.as_slice())
    })
}

/// DynamoDB's documented rules for an item this receiver writes: at most 400 KB (by the core's
/// count of DynamoDB's sizing rules), a non-empty string partition key of at most 2,048 bytes,
/// numbers within range (the core's range check), at most 32 levels of nesting, attribute names
/// of 1 byte to 64 KB, sets neither empty nor holding a value twice.
pub(crate) fn satisfies_item_rules(item: &Item) -> Result<(), String> {
    fn name_ok(name: &str) -> bool {
        (1..65_536).contains(&name.len())
    }
    fn set_ok<T: Ord>(values: &[T]) -> Result<(), String> {
        let distinct: std::collections::BTreeSet<&T> = values.iter().collect();
        match (values.is_empty(), distinct.len() == values.len()) {
            (true, _) => Err("empty set".into()),
            (_, false) => Err("a set holds a value twice".into()),
            _ => Ok(()),
        }
    }
    fn number_ok(n: &str) -> Result<(), String> {
        match Decimal::parse(n).is_some_and(|d| d.fits_dynamodb()) {
            true => Ok(()),
            false => Err(format!("number {n} out of range")),
        }
    }
    fn value_ok(value: &AttributeValue, depth: usize) -> Result<(), String> {
        if depth > 32 {
            return Err("nested past 32 levels".into());
        }
        match value {
            AttributeValue::N(n) => number_ok(n),
            AttributeValue::M(m) if !m.keys().all(|k| name_ok(k)) => Err("attribute name of 0 bytes or 64 KB".into()),
            AttributeValue::M(m) => m.values().try_for_each(|v| value_ok(v, depth + 1)),
            AttributeValue::L(l) => l.iter().try_for_each(|v| value_ok(v, depth + 1)),
            AttributeValue::Ss(s) => set_ok(s),
            AttributeValue::Ns(n) => set_ok(n).and_then(|()| n.iter().try_for_each(|n| number_ok(n))),
            AttributeValue::Bs(b) => set_ok(b),
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
    if !item.keys().all(|k| name_ok(k)) {
        return Err("attribute name of 0 bytes or 64 KB".into());
    }
    item.values().try_for_each(|v| value_ok(v, 1))
}
