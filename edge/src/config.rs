//! The Worker's configuration: read from `[vars]` and secrets through a lookup, validated.
//!
//! Loading is a pure function of the lookup, so it is tested without the Workers runtime. Every
//! error names the variable and what it expected, and never echoes the value (it may be a secret).

use core::fmt;

pub use shared::config::ConfigError;

use shared::auth::{AuthPolicy, BodySignature, HeaderCredentials};
use shared::profile::sender::SenderAuth;
use shared::profile::Profile;
use shared::receive::{Policy, DEFAULT_MAX_BODY_BYTES, DEFAULT_RETENTION_DAYS};
use shared::secret::{Credential, SigningSecret};

/// Default deadline for one store call, in milliseconds.
pub const DEFAULT_STORE_TIMEOUT_MS: u32 = 5_000;

/// Everything the Worker needs, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// The core's policy: auth, table, retention, body limit.
    pub policy: Policy,
    /// AWS region, for the endpoint and the signature.
    pub region: String,
    /// DynamoDB's endpoint, `scheme://host[:port]` with no path.
    pub endpoint: String,
    /// AWS credentials for signing.
    pub credentials: AwsCredentials,
    /// Deadline for one store call.
    pub store_timeout_ms: u32,
}

/// AWS credentials; the secret parts print as `[redacted]`.
#[derive(Clone, PartialEq, Eq)]
pub struct AwsCredentials {
    /// `AWS_ACCESS_KEY_ID`.
    pub access_key_id: String,
    /// `AWS_SECRET_ACCESS_KEY`.
    pub secret_access_key: String,
    /// `AWS_SESSION_TOKEN`, for temporary credentials.
    pub session_token: Option<String>,
}

impl fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwsCredentials").field("access_key_id", &self.access_key_id).finish_non_exhaustive()
    }
}

impl Config {
    /// Reads and validates every variable through `lookup` (name to value, `None` when unset).
    /// Empty values count as unset.
    pub fn load(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let get = |name: &str| lookup(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        let require =
            |variable: &'static str, expected: &'static str| get(variable).ok_or(ConfigError { variable, expected });

        let table = require("RECEIPTS_TABLE", "the receipts table's name")?;
        let region = require("AWS_REGION", "an AWS region such as us-east-1")?;
        if !region.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
            return Err(ConfigError { variable: "AWS_REGION", expected: "an AWS region such as us-east-1" });
        }
        let endpoint = match get("DYNAMODB_ENDPOINT") {
            None => format!("https://dynamodb.{region}.amazonaws.com"),
            Some(url) => parse_endpoint(&url).ok_or(ConfigError {
                variable: "DYNAMODB_ENDPOINT",
                expected: "an https://host[:port] URL with no path (http:// only for 127.0.0.1, localhost or [::1])",
            })?,
        };
        let number = |variable: &'static str,
                      default: u32,
                      range: core::ops::RangeInclusive<u32>,
                      expected: &'static str| {
            match get(variable) {
                None => Ok(default),
                Some(text) => text.parse().ok().filter(|n| range.contains(n)).ok_or(ConfigError { variable, expected }),
            }
        };
        let retention_days = number("RETENTION_DAYS", DEFAULT_RETENTION_DAYS, 1..=3650, "whole days from 1 to 3650")?;
        let default_max = DEFAULT_MAX_BODY_BYTES as u32;
        let max_body_bytes = number("MAX_BODY_BYTES", default_max, 1..=(1 << 20), "bytes from 1 to 1048576")?;
        let store_timeout_ms =
            number("STORE_TIMEOUT_MS", DEFAULT_STORE_TIMEOUT_MS, 1..=60_000, "milliseconds from 1 to 60000")?;

        let credentials = AwsCredentials {
            access_key_id: require("AWS_ACCESS_KEY_ID", "an AWS access key ID")?,
            secret_access_key: require("AWS_SECRET_ACCESS_KEY", "an AWS secret access key")?,
            session_token: get("AWS_SESSION_TOKEN"),
        };

        let list = |name: &str| -> Vec<String> {
            get(name)
                .map(|v| v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect())
                .unwrap_or_default()
        };
        let credentials_of = |values: Vec<String>| values.iter().map(|v| Credential::new(v.as_bytes())).collect();
        let basic = list("WEBHOOK_BASIC_CREDENTIALS");
        if basic.iter().any(|pair| !pair.contains(':')) {
            return Err(ConfigError {
                variable: "WEBHOOK_BASIC_CREDENTIALS",
                expected: "comma-separated user:password pairs",
            });
        }
        let header = match (get("WEBHOOK_HEADER_NAME"), list("WEBHOOK_HEADER_VALUES")) {
            (None, values) if values.is_empty() => None,
            (Some(name), values) if is_header_name(&name) && !values.is_empty() => {
                Some(HeaderCredentials { name, values: credentials_of(values) })
            }
            (Some(name), _) if !is_header_name(&name) => {
                return Err(ConfigError { variable: "WEBHOOK_HEADER_NAME", expected: "an HTTP header name" })
            }
            (None, _) => {
                return Err(ConfigError {
                    variable: "WEBHOOK_HEADER_NAME",
                    expected: "set when WEBHOOK_HEADER_VALUES is",
                })
            }
            (Some(_), _) => {
                return Err(ConfigError {
                    variable: "WEBHOOK_HEADER_VALUES",
                    expected: "set when WEBHOOK_HEADER_NAME is",
                })
            }
        };
        let signing_secrets = list("WEBHOOK_SIGNING_SECRETS")
            .iter()
            .map(|s| SigningSecret::parse(s))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| ConfigError {
                variable: "WEBHOOK_SIGNING_SECRETS",
                expected: "comma-separated whsec_<base64> secrets",
            })?;
        let static_forms = AuthPolicy {
            bearer_tokens: credentials_of(list("WEBHOOK_BEARER_TOKENS")),
            basic_credentials: credentials_of(basic),
            header,
            signing_secrets,
            body_signature: None,
        };
        let mut senders = Vec::new();
        let profiles = get("WEBHOOK_PROFILES").unwrap_or_else(|| Profile::StaticForms.name().to_owned());
        for name in profiles.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let invalid = ConfigError { variable: "WEBHOOK_PROFILES", expected: Profile::EXPECTED };
            let profile = Profile::parse(name).ok_or(invalid)?;
            if senders.iter().any(|(p, _)| *p == profile) {
                return Err(invalid);
            }
            let auth = match profile.auth() {
                SenderAuth::StaticForms => static_forms.clone(),
                SenderAuth::StandardWebhooks { variable } => AuthPolicy {
                    signing_secrets: list(variable)
                        .iter()
                        .map(|s| SigningSecret::parse(s))
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(|_| ConfigError { variable, expected: "comma-separated whsec_<base64> secrets" })?,
                    ..AuthPolicy::default()
                },
                SenderAuth::BodySigned { scheme, variable, header_variable } => {
                    let mut signature = BodySignature::new(scheme, secrets_of(list(variable)));
                    if let Some(named) = header_variable.and_then(|name| get(name).map(|value| (name, value))) {
                        let (variable, header) = named;
                        if !is_header_name(&header) {
                            return Err(ConfigError { variable, expected: "an HTTP header name" });
                        }
                        signature.header = header.to_ascii_lowercase();
                    }
                    AuthPolicy { body_signature: Some(signature), ..AuthPolicy::default() }
                }
            };
            senders.push((profile, auth));
        }
        if senders.is_empty() {
            return Err(ConfigError { variable: "WEBHOOK_PROFILES", expected: "at least one profile" });
        }
        let policy = Policy { senders, table, retention_days, max_body_bytes: max_body_bytes as usize };
        Ok(Config { policy, region, endpoint, credentials, store_timeout_ms })
    }
}

/// A form backend's signing secrets (each secret's text is its key).
fn secrets_of(secrets: Vec<String>) -> Vec<SigningSecret> {
    secrets.iter().filter_map(|s| SigningSecret::plain(s)).collect()
}

/// `scheme://host[:port]` with an optional trailing `/`; `None` otherwise. `https` anywhere;
/// `http` only to this machine (a local store in development), since receipts carry personal
/// data and the signature does not hide it.
fn parse_endpoint(text: &str) -> Option<String> {
    let trimmed = text.strip_suffix('/').unwrap_or(text);
    let (rest, secure) = match trimmed.strip_prefix("https://") {
        Some(rest) => (rest, true),
        None => (trimmed.strip_prefix("http://")?, false),
    };
    let valid = !rest.is_empty()
        && rest.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'))
        && is_canonical_authority(rest);
    (valid && (secure || is_loopback_authority(rest))).then(|| trimmed.to_owned())
}

/// True if the URL parser leaves `host[:port]` as written (but for case and a default port),
/// so the `host` the signature covers is the one the fetch sends: a port without leading zeros,
/// an IPv4 address only in plain dotted form (a name whose last label is a number is parsed as
/// one), and no IPv6 address but `[::1]` (others have several spellings).
fn is_canonical_authority(authority: &str) -> bool {
    let (host, port) = match (authority.starts_with('['), authority.find(']'), authority.find(':')) {
        (true, Some(end), _) => authority.split_at(end + 1),
        (true, None, _) => return false,
        (false, _, Some(colon)) => authority.split_at(colon),
        (false, _, None) => (authority, ""),
    };
    let canonical_number = |text: &str, max: u32| {
        text.bytes().all(|b| b.is_ascii_digit())
            && (text == "0" || !text.starts_with('0'))
            && text.parse::<u32>().is_ok_and(|n| n <= max)
    };
    let port_ok = port.is_empty() || port.strip_prefix(':').is_some_and(|p| p != "0" && canonical_number(p, 65_535));
    let host_ok = if host.starts_with('[') {
        host == "[::1]"
    } else {
        let last = host.rsplit('.').next().unwrap_or_default();
        let numeric = last.bytes().all(|b| b.is_ascii_digit()) || last.to_ascii_lowercase().starts_with("0x");
        !numeric || {
            let octets: Vec<&str> = host.split('.').collect();
            octets.len() == 4 && octets.iter().all(|o| canonical_number(o, 255))
        }
    };
    port_ok && host_ok
}

/// True if `host[:port]` names this machine: `localhost`, `127.0.0.0/8`, or `[::1]`.
fn is_loopback_authority(authority: &str) -> bool {
    let (host, port) = match authority.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((host, port)) => (host, port.strip_prefix(':').or(port.is_empty().then_some(""))),
            None => return false,
        },
        None => match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, Some("")),
        },
    };
    if !port.is_some_and(|p| p.is_empty() || p.parse::<u16>().is_ok_and(|p| p > 0)) {
        return false;
    }
    if host == "::1" {
        return true;
    }
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    let octets: Vec<&str> = host.split('.').collect();
    octets.len() == 4
        && octets[0] == "127"
        && octets.iter().all(|o| !o.is_empty() && o.len() <= 3 && o.parse::<u8>().is_ok())
}

/// An HTTP token: letters, digits and `!#$%&'*+-.^_`|~`.
fn is_header_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use wasm_bindgen_test::wasm_bindgen_test;

    fn minimal() -> HashMap<&'static str, &'static str> {
        HashMap::from([
            ("RECEIPTS_TABLE", "receipts"),
            ("AWS_REGION", "eu-west-1"),
            ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
            ("WEBHOOK_BEARER_TOKENS", "t1, t2"),
        ])
    }

    fn load(vars: &HashMap<&'static str, &'static str>) -> Result<Config, ConfigError> {
        Config::load(|name| vars.get(name).map(|v| v.to_string()))
    }

    fn check(changes: &[(&'static str, &'static str)], expected: Result<(), (&str, &str)>) {
        let mut vars = minimal();
        for (name, value) in changes {
            vars.insert(name, value);
        }
        let got = load(&vars).map(|_| ()).map_err(|e| (e.variable, e.expected));
        assert_eq!(got, expected, "{changes:?}");
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn defaults() {
        let config = load(&minimal()).unwrap();
        assert_eq!(config.endpoint, "https://dynamodb.eu-west-1.amazonaws.com");
        assert_eq!(config.policy.retention_days, 30);
        assert_eq!(config.policy.max_body_bytes, 262_144);
        assert_eq!(config.store_timeout_ms, 5_000);
        assert_eq!(config.policy.auth(Profile::StaticForms).unwrap().bearer_tokens.len(), 2);
        assert_eq!(config.credentials.session_token, None);
        assert!(!format!("{config:?}").contains("secret\""), "secrets are not printed");
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn loopback_authorities_are_exactly_this_machine_s() {
        for local in
            ["127.0.0.1", "127.0.0.1:4566", "127.1.2.3:65535", "localhost:1", "LOCALHOST", "[::1]:8000", "[::1]"]
        {
            assert!(is_loopback_authority(local), "{local}");
        }
        for other in [
            "127.0.0.1:0",
            "127.0.0.1:65536",
            "127.0.0.1:x",
            "127.0.0.0001:4566",
            "127..0.1",
            "127.0.0",
            "128.0.0.1",
            "[::1]x",
            "[::2]:1",
            "localhost.example",
        ] {
            assert!(!is_loopback_authority(other), "{other}");
        }
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn credentials_print_their_key_id_and_never_the_secret() {
        let credentials = load(&minimal()).unwrap().credentials;
        let printed = format!("{credentials:?}");
        assert!(printed.starts_with("AwsCredentials") && printed.contains("AKIDEXAMPLE"), "{printed}");
        assert!(!printed.contains("\"secret\""), "{printed}");
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn every_setting() {
        let mut vars = minimal();
        vars.extend([
            ("DYNAMODB_ENDPOINT", "http://127.0.0.1:4566/"),
            ("RETENTION_DAYS", "7"),
            ("MAX_BODY_BYTES", "1024"),
            ("STORE_TIMEOUT_MS", "250"),
            ("AWS_SESSION_TOKEN", "session"),
            ("WEBHOOK_BASIC_CREDENTIALS", "forms:pa:ss,other:x"),
            ("WEBHOOK_HEADER_NAME", "X-Forms-Secret"),
            ("WEBHOOK_HEADER_VALUES", "h1,h2"),
            ("WEBHOOK_SIGNING_SECRETS", "whsec_aHVudGVyMg=="),
        ]);
        let config = load(&vars).unwrap();
        assert_eq!(config.endpoint, "http://127.0.0.1:4566");
        assert_eq!(
            (config.policy.retention_days, config.policy.max_body_bytes, config.store_timeout_ms),
            (7, 1024, 250)
        );
        assert_eq!(config.credentials.session_token.as_deref(), Some("session"));
        assert_eq!(config.policy.auth(Profile::StaticForms).unwrap().basic_credentials.len(), 2);
        assert_eq!(config.policy.auth(Profile::StaticForms).unwrap().header.as_ref().map(|h| h.values.len()), Some(2));
        assert_eq!(config.policy.auth(Profile::StaticForms).unwrap().signing_secrets.len(), 1);
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn an_endpoint_is_taken_only_in_the_form_the_fetch_sends_it() {
        // The signature covers `host`; the URL parser rewrites these, so they would not match.
        let endpoint = Err((
            "DYNAMODB_ENDPOINT",
            "an https://host[:port] URL with no path (http:// only for 127.0.0.1, localhost or [::1])",
        ));
        for odd in [
            "https://db.example:0443",
            "https://db.example:",
            "https://db.example:0",
            "https://2130706433",
            "https://127.000.000.001",
            "https://10.1",
            "https://db.0x7f",
            "https://[0:0:0:0:0:0:0:1]",
            "https://[::1",
            "https://[::1]x",
            "http://127.0.0.01:4566",
        ] {
            check(&[("DYNAMODB_ENDPOINT", odd)], endpoint);
        }
        for fine in ["https://db.example:8443", "https://10.0.0.5", "https://db-1.example", "http://[::1]:4566"] {
            check(&[("DYNAMODB_ENDPOINT", fine)], Ok(()));
        }
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn errors_name_the_variable() {
        check(&[("RECEIPTS_TABLE", " ")], Err(("RECEIPTS_TABLE", "the receipts table's name")));
        check(&[("AWS_REGION", "")], Err(("AWS_REGION", "an AWS region such as us-east-1")));
        check(&[("AWS_REGION", "EU WEST")], Err(("AWS_REGION", "an AWS region such as us-east-1")));
        check(&[("AWS_ACCESS_KEY_ID", "")], Err(("AWS_ACCESS_KEY_ID", "an AWS access key ID")));
        check(&[("AWS_SECRET_ACCESS_KEY", "")], Err(("AWS_SECRET_ACCESS_KEY", "an AWS secret access key")));
        let endpoint = Err((
            "DYNAMODB_ENDPOINT",
            "an https://host[:port] URL with no path (http:// only for 127.0.0.1, localhost or [::1])",
        ));
        check(&[("DYNAMODB_ENDPOINT", "127.0.0.1:4566")], endpoint);
        check(&[("DYNAMODB_ENDPOINT", "http://host/path")], endpoint);
        check(&[("DYNAMODB_ENDPOINT", "https://host/path")], endpoint);
        // Personal data never crosses a network in clear: http only to this machine.
        for remote in [
            "http://dynamodb.eu-west-1.amazonaws.com",
            "http://10.0.0.5:8000",
            "http://127.0.0.1.example.com",
            "http://localhost.example.com:4566",
            "http://128.0.0.1",
            "http://[::2]:8000",
            "http://127.0.0.1:0",
            "http://127.0.0.1:99999",
            "http://127.0.0.256",
            "http://[::1",
        ] {
            check(&[("DYNAMODB_ENDPOINT", remote)], endpoint);
        }
        for local in [
            "http://127.0.0.1:4566",
            "http://127.8.9.10",
            "http://localhost:8000/",
            "http://LOCALHOST",
            "http://[::1]:4566",
            "http://[::1]",
            "https://dynamodb.eu-west-1.amazonaws.com",
            "https://ddb.internal.example:8443",
        ] {
            check(&[("DYNAMODB_ENDPOINT", local)], Ok(()));
        }
        check(&[("RETENTION_DAYS", "0")], Err(("RETENTION_DAYS", "whole days from 1 to 3650")));
        check(&[("RETENTION_DAYS", "thirty")], Err(("RETENTION_DAYS", "whole days from 1 to 3650")));
        check(&[("MAX_BODY_BYTES", "2000000")], Err(("MAX_BODY_BYTES", "bytes from 1 to 1048576")));
        check(&[("STORE_TIMEOUT_MS", "-1")], Err(("STORE_TIMEOUT_MS", "milliseconds from 1 to 60000")));
        check(
            &[("WEBHOOK_BASIC_CREDENTIALS", "nocolon")],
            Err(("WEBHOOK_BASIC_CREDENTIALS", "comma-separated user:password pairs")),
        );
        check(&[("WEBHOOK_HEADER_NAME", "X Bad")], Err(("WEBHOOK_HEADER_NAME", "an HTTP header name")));
        check(&[("WEBHOOK_HEADER_VALUES", "v")], Err(("WEBHOOK_HEADER_NAME", "set when WEBHOOK_HEADER_VALUES is")));
        check(&[("WEBHOOK_HEADER_NAME", "X-K")], Err(("WEBHOOK_HEADER_VALUES", "set when WEBHOOK_HEADER_NAME is")));
        check(
            &[("WEBHOOK_SIGNING_SECRETS", "whsec_***")],
            Err(("WEBHOOK_SIGNING_SECRETS", "comma-separated whsec_<base64> secrets")),
        );
        check(&[], Ok(()));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn no_auth_method_loads_but_refuses_everything() {
        let mut vars = minimal();
        vars.remove("WEBHOOK_BEARER_TOKENS");
        let config = load(&vars).unwrap();
        assert!(!config.policy.auth(Profile::StaticForms).unwrap().is_configured());
    }
}

#[cfg(test)]
mod profile_tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    /// The configuration from the minimal required variables and `changes`.
    fn load(changes: &[(&'static str, &'static str)]) -> Result<Config, ConfigError> {
        let mut vars = std::collections::HashMap::from([
            ("RECEIPTS_TABLE", "receipts"),
            ("AWS_REGION", "eu-west-1"),
            ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
            ("WEBHOOK_BEARER_TOKENS", "t1"),
        ]);
        vars.extend(changes.iter().copied());
        Config::load(|name| vars.get(name).map(|v| v.to_string()))
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn profiles_are_enabled_by_name_each_with_its_secrets() {
        // Unset: Static Forms only, as before profiles existed.
        let config = load(&[]).unwrap();
        assert_eq!(config.policy.senders.iter().map(|(p, _)| *p).collect::<Vec<_>>(), [Profile::StaticForms]);
        let config = load(&[
            ("WEBHOOK_PROFILES", " tally, standard-webhooks ,typeform"),
            ("STANDARD_WEBHOOKS_SECRETS", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw, whsec_c2Vjb25k"),
            ("TYPEFORM_SECRETS", "tf-1"),
            ("TALLY_SECRETS", "ta-1,ta-2"),
        ])
        .unwrap();
        let enabled: Vec<Profile> = config.policy.senders.iter().map(|(p, _)| *p).collect();
        assert_eq!(enabled, [Profile::Tally, Profile::StandardWebhooks, Profile::Typeform]);
        assert_eq!(config.policy.auth(Profile::StaticForms), None, "not enabled");
        let sw = config.policy.auth(Profile::StandardWebhooks).unwrap();
        assert_eq!(sw.signing_secrets.len(), 2);
        assert!(sw.bearer_tokens.is_empty(), "Static Forms' tokens are Static Forms' only");
        let tf = config.policy.auth(Profile::Typeform).unwrap().body_signature.clone().unwrap();
        assert_eq!((tf.header.as_str(), tf.scheme.prefix, tf.secrets.len()), ("typeform-signature", "sha256=", 1));
        let ta = config.policy.auth(Profile::Tally).unwrap().body_signature.clone().unwrap();
        assert_eq!((ta.header.as_str(), ta.scheme.prefix, ta.secrets.len()), ("tally-signature", "", 2));
        // Enabled without a secret: loads, and refuses every delivery (healthz says so).
        let bare = load(&[("WEBHOOK_PROFILES", "tally")]).unwrap();
        assert!(!bare.policy.auth(Profile::Tally).unwrap().is_configured());
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn formstack_s_signature_header_is_the_one_the_webhook_names() {
        let header = |changes: &[(&'static str, &'static str)]| {
            let mut all = vec![("WEBHOOK_PROFILES", "formstack"), ("FORMSTACK_SECRETS", "k")];
            all.extend_from_slice(changes);
            load(&all).map(|c| c.policy.auth(Profile::Formstack).unwrap().body_signature.clone().unwrap().header)
        };
        assert_eq!(header(&[]).unwrap(), "x-fs-signature");
        assert_eq!(header(&[("FORMSTACK_SIGNATURE_HEADER", " X-My-Signature ")]).unwrap(), "x-my-signature");
        let config =
            load(&[("WEBHOOK_PROFILES", "formstack"), ("FORMSTACK_SIGNATURE_HEADER", "X-My-Signature")]).unwrap();
        let read: Vec<&str> = config.policy.header_names(Profile::Formstack).collect();
        assert!(read.contains(&"x-my-signature"), "the edge collects the named header: {read:?}");
        assert_eq!(
            header(&[("FORMSTACK_SIGNATURE_HEADER", "X Bad")]).map_err(|e| (e.variable, e.expected)),
            Err(("FORMSTACK_SIGNATURE_HEADER", "an HTTP header name"))
        );
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn bad_profile_lists_name_the_variable() {
        let expected = Profile::EXPECTED;
        assert!(expected.starts_with("comma-separated profiles: staticforms, "), "{expected}");
        assert!(Profile::ALL.iter().all(|p| expected.contains(p.name())), "{expected}");
        for bad in ["typeforms", "tally,tally", "StaticForms"] {
            assert_eq!(
                load(&[("WEBHOOK_PROFILES", bad)]).map(|_| ()).map_err(|e| (e.variable, e.expected)),
                Err(("WEBHOOK_PROFILES", expected)),
                "{bad}"
            );
        }
        assert_eq!(load(&[("WEBHOOK_PROFILES", " , ")]).map(|_| ()).map_err(|e| e.variable), Err("WEBHOOK_PROFILES"));
        assert_eq!(
            load(&[("WEBHOOK_PROFILES", "standard-webhooks"), ("STANDARD_WEBHOOKS_SECRETS", "whsec_***")])
                .map(|_| ())
                .map_err(|e| e.variable),
            Err("STANDARD_WEBHOOKS_SECRETS")
        );
    }
}
