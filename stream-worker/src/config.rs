//! The stream worker's configuration, from the environment, validated at start.
//!
//! AWS settings (`AWS_REGION`, `AWS_ENDPOINT_URL_DYNAMODB`, credentials) are the AWS SDK's own
//! and are read by `aws-config`; this module reads the rest. Errors name the variable and what
//! it expected, never the value.

use std::fmt;

pub use shared::config::ConfigError;
use shared::profile::registry::LeadMapping;
use shared::profile::standard_webhooks::LeadPointers;
use shared::secret::SigningSecret;

/// What the worker needs beyond the AWS SDK's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// `RECEIPTS_TABLE`.
    pub table: String,
    /// `LEAD_SINK` and the sink's own variables.
    pub sink: SinkConfig,
    /// `STANDARD_WEBHOOKS_LEAD_FIELDS`: where a `standard-webhooks` payload keeps the lead's
    /// fields, as `name=/data/name,email=/data/email,message=/data/message,extra=/data`
    /// (JSON pointers; those not given keep these defaults).
    pub mapping: LeadMapping,
}

/// Where leads go.
#[derive(Clone, PartialEq, Eq)]
pub enum SinkConfig {
    /// `sqlite://<path>`.
    Sqlite { path: String },
    /// `postgres://...` (or `postgresql://...`), with `sslmode` and the CA file read
    /// (`POSTGRES_CA_FILE` or `sslrootcert`).
    Postgres { target: crate::sink::postgres::PostgresTarget },
    /// `hubspot`: `HUBSPOT_TOKEN`, `HUBSPOT_BASE_URL`, `HUBSPOT_ID_PROPERTY` (a unique ticket
    /// property), `HUBSPOT_TICKET_PIPELINE`, `HUBSPOT_TICKET_STAGE`.
    HubSpot { token: String, base_url: String, id_property: String, pipeline: String, stage: String },
    /// `salesforce`: `SALESFORCE_INSTANCE_URL` (the org's My Domain URL), `SALESFORCE_CLIENT_ID`,
    /// `SALESFORCE_CLIENT_SECRET` (a connected app with the client credentials flow),
    /// `SALESFORCE_API_VERSION`, `SALESFORCE_EXTERNAL_ID_FIELD`.
    Salesforce {
        instance_url: String,
        client_id: String,
        client_secret: String,
        api_version: String,
        external_id_field: String,
    },
    /// Any `https://` (or, for local tests, `http://127.0.0.1`) URL: POST the lead as JSON,
    /// signed per Standard Webhooks with `WEBHOOK_SINK_SECRET`.
    Webhook { url: String, secret: SigningSecret },
}

impl fmt::Debug for SinkConfig {
    /// Tokens and database URLs (which may hold passwords) are not printed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self {
            SinkConfig::Sqlite { path } => return write!(f, "Sqlite({path})"),
            SinkConfig::Postgres { .. } => "Postgres",
            SinkConfig::HubSpot { .. } => "HubSpot",
            SinkConfig::Salesforce { .. } => "Salesforce",
            SinkConfig::Webhook { .. } => "Webhook",
        };
        write!(f, "{kind}([redacted])")
    }
}

/// Default HubSpot API base URL.
pub const HUBSPOT_BASE_URL: &str = "https://api.hubapi.com";
/// Default HubSpot ticket property that holds the submission ID (a unique property).
pub const HUBSPOT_ID_PROPERTY: &str = "static_forms_submission_id";
/// Default ticket pipeline (`0`, the portal's support pipeline) and its first stage (`1`).
pub const HUBSPOT_TICKET_PIPELINE: &str = "0";
/// See [`HUBSPOT_TICKET_PIPELINE`].
pub const HUBSPOT_TICKET_STAGE: &str = "1";
/// Default Salesforce REST API version.
pub const SALESFORCE_API_VERSION: &str = "60.0";
/// Default Salesforce Lead external ID field.
pub const SALESFORCE_EXTERNAL_ID_FIELD: &str = "Static_Forms_Submission_Id__c";

impl Config {
    /// Reads the configuration through `lookup` (name to value; empty counts as unset).
    pub fn load(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let get = |name: &str| lookup(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        let require =
            |variable: &'static str, expected: &'static str| get(variable).ok_or(ConfigError { variable, expected });
        let table = require("RECEIPTS_TABLE", "the receipts table's name")?;
        let sink_text =
            require("LEAD_SINK", "sqlite://<path>, postgres://..., hubspot, salesforce, or an https:// URL")?;
        let url = |variable: &'static str, default: Option<&str>| match get(variable).or(default.map(str::to_owned)) {
            Some(u) if is_http_url(&u) => Ok(u.trim_end_matches('/').to_owned()),
            _ => Err(ConfigError { variable, expected: "an https:// URL" }),
        };
        let sink = if let Some(path) = sink_text.strip_prefix("sqlite://") {
            if path.is_empty() {
                return Err(ConfigError { variable: "LEAD_SINK", expected: "sqlite://<path to a database file>" });
            }
            SinkConfig::Sqlite { path: path.to_owned() }
        } else if sink_text.starts_with("postgres://") || sink_text.starts_with("postgresql://") {
            let target = crate::sink::postgres::PostgresTarget::parse(&sink_text, get("POSTGRES_CA_FILE"))
                .map_err(|e| ConfigError { variable: "LEAD_SINK", expected: e.0 })?;
            SinkConfig::Postgres { target }
        } else if sink_text == "hubspot" {
            SinkConfig::HubSpot {
                token: require("HUBSPOT_TOKEN", "a HubSpot private app token")?,
                base_url: url("HUBSPOT_BASE_URL", Some(HUBSPOT_BASE_URL))?,
                id_property: get("HUBSPOT_ID_PROPERTY").unwrap_or_else(|| HUBSPOT_ID_PROPERTY.to_owned()),
                pipeline: get("HUBSPOT_TICKET_PIPELINE").unwrap_or_else(|| HUBSPOT_TICKET_PIPELINE.to_owned()),
                stage: get("HUBSPOT_TICKET_STAGE").unwrap_or_else(|| HUBSPOT_TICKET_STAGE.to_owned()),
            }
        } else if sink_text == "salesforce" {
            let version = get("SALESFORCE_API_VERSION").unwrap_or_else(|| SALESFORCE_API_VERSION.to_owned());
            // 52.0 is the first version with the Duplicate Rule Header: below it a person's second
            // submission would be refused by the standard duplicate rule on every attempt.
            let digits = version.split('.').all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
            let major = version.split('.').next().and_then(|m| m.parse::<u32>().ok());
            if !digits || major.is_none_or(|m| m < 52) {
                return Err(ConfigError {
                    variable: "SALESFORCE_API_VERSION",
                    expected: "a version such as 60.0, at least 52.0 (the duplicate rule header's)",
                });
            }
            SinkConfig::Salesforce {
                instance_url: url("SALESFORCE_INSTANCE_URL", None)?,
                client_id: require("SALESFORCE_CLIENT_ID", "the connected app's consumer key")?,
                client_secret: require("SALESFORCE_CLIENT_SECRET", "the connected app's consumer secret")?,
                api_version: version,
                external_id_field: get("SALESFORCE_EXTERNAL_ID_FIELD")
                    .unwrap_or_else(|| SALESFORCE_EXTERNAL_ID_FIELD.to_owned()),
            }
        } else if is_http_url(&sink_text) {
            let expected = "a Standard Webhooks whsec_<base64> secret the receiver verifies";
            let secret = require("WEBHOOK_SINK_SECRET", expected)?;
            let secret =
                SigningSecret::parse(&secret).map_err(|_| ConfigError { variable: "WEBHOOK_SINK_SECRET", expected })?;
            SinkConfig::Webhook { url: sink_text, secret }
        } else {
            return Err(ConfigError {
                variable: "LEAD_SINK",
                expected: "sqlite://<path>, postgres://..., hubspot, salesforce, or an https:// URL",
            });
        };
        let standard_webhooks = match get("STANDARD_WEBHOOKS_LEAD_FIELDS") {
            None => LeadPointers::default(),
            Some(text) => LeadPointers::parse(&text).map_err(|_| ConfigError {
                variable: "STANDARD_WEBHOOKS_LEAD_FIELDS",
                expected: "comma-separated name=, email=, message=, extra=, form= JSON pointers such as /data/email",
            })?,
        };
        Ok(Config { table, sink, mapping: LeadMapping { standard_webhooks } })
    }
}

/// `https://...`, or `http://` to a loopback host (local stand-ins and tests only): the host
/// itself, not a prefix of it, so `http://127.0.0.1.example.com` is refused.
pub fn is_http_url(text: &str) -> bool {
    let rest = text.strip_prefix("https://").or_else(|| {
        text.strip_prefix("http://").filter(|r| {
            let authority = r.split('/').next().unwrap_or_default();
            let host = authority.rsplit_once(':').map_or(authority, |(host, _)| host);
            matches!(host, "127.0.0.1" | "localhost")
        })
    });
    rest.is_some_and(|r| !r.is_empty() && !r.contains(char::is_whitespace))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn load(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        Config::load(|name| map.get(name).cloned())
    }

    fn sink(vars: &[(&str, &str)]) -> Result<SinkConfig, (&'static str, &'static str)> {
        let mut all = vec![("RECEIPTS_TABLE", "receipts")];
        all.extend_from_slice(vars);
        load(&all).map(|c| c.sink).map_err(|e| (e.variable, e.expected))
    }

    #[test]
    fn every_sink() {
        assert_eq!(
            sink(&[("LEAD_SINK", "sqlite://.dev/leads.db")]),
            Ok(SinkConfig::Sqlite { path: ".dev/leads.db".into() })
        );
        assert_eq!(
            sink(&[("LEAD_SINK", "postgres://u:p@127.0.0.1:5432/db")]),
            Ok(SinkConfig::Postgres {
                target: crate::sink::postgres::PostgresTarget {
                    url: "postgres://u:p@127.0.0.1:5432/db".into(),
                    tls: crate::sink::postgres::TlsMode::Disable
                }
            })
        );
        assert_eq!(
            sink(&[("LEAD_SINK", "hubspot"), ("HUBSPOT_TOKEN", "pat")]),
            Ok(SinkConfig::HubSpot {
                token: "pat".into(),
                base_url: "https://api.hubapi.com".into(),
                id_property: "static_forms_submission_id".into(),
                pipeline: "0".into(),
                stage: "1".into(),
            })
        );
        assert_eq!(
            sink(&[
                ("LEAD_SINK", "salesforce"),
                ("SALESFORCE_INSTANCE_URL", "https://acme.my.salesforce.com/"),
                ("SALESFORCE_CLIENT_ID", "id"),
                ("SALESFORCE_CLIENT_SECRET", "secret")
            ]),
            Ok(SinkConfig::Salesforce {
                instance_url: "https://acme.my.salesforce.com".into(),
                client_id: "id".into(),
                client_secret: "secret".into(),
                api_version: "60.0".into(),
                external_id_field: "Static_Forms_Submission_Id__c".into()
            })
        );
        assert_eq!(
            sink(&[("LEAD_SINK", "https://crm.example.com/leads"), ("WEBHOOK_SINK_SECRET", SECRET)]),
            Ok(SinkConfig::Webhook { url: "https://crm.example.com/leads".into(), secret: secret() })
        );
    }

    const SECRET: &str = "whsec_c2luay1zaWduaW5nLWtleQ==";

    fn secret() -> SigningSecret {
        SigningSecret::parse(SECRET).unwrap()
    }

    #[test]
    fn errors_name_the_variable() {
        assert_eq!(load(&[("LEAD_SINK", "sqlite://x")]).map_err(|e| e.variable), Err("RECEIPTS_TABLE"));
        assert_eq!(sink(&[]).map_err(|e| e.0), Err("LEAD_SINK"));
        assert_eq!(sink(&[("LEAD_SINK", "mysql://x")]).map_err(|e| e.0), Err("LEAD_SINK"));
        assert_eq!(
            sink(&[("LEAD_SINK", "postgres://u@db.example.com/x?sslmode=prefer")]),
            Err(("LEAD_SINK", "sslmode must be disable, require or verify-full"))
        );
        assert_eq!(sink(&[("LEAD_SINK", "sqlite://")]).map_err(|e| e.0), Err("LEAD_SINK"));
        assert_eq!(sink(&[("LEAD_SINK", "http://crm.example.com")]).map_err(|e| e.0), Err("LEAD_SINK"));
        assert_eq!(sink(&[("LEAD_SINK", "http://127.0.0.1.example.com/x")]).map_err(|e| e.0), Err("LEAD_SINK"));
        assert_eq!(
            sink(&[("LEAD_SINK", "http://localhost:9/leads"), ("WEBHOOK_SINK_SECRET", SECRET)]),
            Ok(SinkConfig::Webhook { url: "http://localhost:9/leads".into(), secret: secret() })
        );
        // The receiver must be able to tell the worker from anyone: no secret, no sink.
        assert_eq!(
            sink(&[("LEAD_SINK", "https://crm.example.com/leads")]).map_err(|e| e.0),
            Err("WEBHOOK_SINK_SECRET")
        );
        assert_eq!(
            sink(&[("LEAD_SINK", "https://crm.example.com/leads"), ("WEBHOOK_SINK_SECRET", "plain")]).map_err(|e| e.0),
            Err("WEBHOOK_SINK_SECRET")
        );
        assert_eq!(sink(&[("LEAD_SINK", "hubspot")]).map_err(|e| e.0), Err("HUBSPOT_TOKEN"));
        assert_eq!(
            sink(&[("LEAD_SINK", "hubspot"), ("HUBSPOT_TOKEN", "t"), ("HUBSPOT_BASE_URL", "ftp://x")]).map_err(|e| e.0),
            Err("HUBSPOT_BASE_URL")
        );
        assert_eq!(sink(&[("LEAD_SINK", "salesforce")]).map_err(|e| e.0), Err("SALESFORCE_INSTANCE_URL"));
        assert_eq!(
            sink(&[("LEAD_SINK", "salesforce"), ("SALESFORCE_INSTANCE_URL", "https://x")]).map_err(|e| e.0),
            Err("SALESFORCE_CLIENT_ID")
        );
        assert_eq!(
            sink(&[
                ("LEAD_SINK", "salesforce"),
                ("SALESFORCE_INSTANCE_URL", "https://x"),
                ("SALESFORCE_CLIENT_ID", "i")
            ])
            .map_err(|e| e.0),
            Err("SALESFORCE_CLIENT_SECRET")
        );
        assert_eq!(
            sink(&[
                ("LEAD_SINK", "salesforce"),
                ("SALESFORCE_INSTANCE_URL", "https://x"),
                ("SALESFORCE_CLIENT_ID", "i"),
                ("SALESFORCE_CLIENT_SECRET", "s"),
                ("SALESFORCE_API_VERSION", "v60")
            ])
            .map_err(|e| e.0),
            Err("SALESFORCE_API_VERSION")
        );
        // The duplicate rule header exists from 52.0.
        assert_eq!(salesforce_version("51.0"), Err("SALESFORCE_API_VERSION"));
        assert_eq!(salesforce_version("52.0"), Ok(()));
        assert_eq!(salesforce_version("62.0"), Ok(()));
    }

    #[test]
    fn standard_webhooks_lead_fields() {
        let base = [("RECEIPTS_TABLE", "r"), ("LEAD_SINK", "sqlite://x")];
        let config = load(&base).unwrap();
        assert_eq!(config.mapping.standard_webhooks, LeadPointers::default());
        let with = |value| load(&[base[0], base[1], ("STANDARD_WEBHOOKS_LEAD_FIELDS", value)]);
        let pointers = with("email=/data/contact/email, extra=").unwrap().mapping.standard_webhooks;
        assert_eq!((pointers.email.as_str(), pointers.extra.as_str()), ("/data/contact/email", ""));
        assert_eq!(pointers.name, "/data/name");
        for bad in ["email=data/x", "phone=/p", "email=/a,email=/b"] {
            assert_eq!(with(bad).map_err(|e| e.variable), Err("STANDARD_WEBHOOKS_LEAD_FIELDS"), "{bad}");
        }
    }

    #[test]
    fn secrets_are_not_printed() {
        let config = load(&[("RECEIPTS_TABLE", "r"), ("LEAD_SINK", "postgres://u:hunter2@h/db")]).unwrap();
        assert!(!format!("{config:?}").contains("hunter2"));
        let config =
            load(&[("RECEIPTS_TABLE", "r"), ("LEAD_SINK", "https://x/y"), ("WEBHOOK_SINK_SECRET", SECRET)]).unwrap();
        assert!(!format!("{config:?}").contains("c2luay1"));
        let config = load(&[
            ("RECEIPTS_TABLE", "r"),
            ("LEAD_SINK", "salesforce"),
            ("SALESFORCE_INSTANCE_URL", "https://x"),
            ("SALESFORCE_CLIENT_ID", "client-id-7"),
            ("SALESFORCE_CLIENT_SECRET", "client-secret-9"),
        ])
        .unwrap();
        assert!(!format!("{config:?}").contains("client-secret-9"));
        let config =
            load(&[("RECEIPTS_TABLE", "r"), ("LEAD_SINK", "hubspot"), ("HUBSPOT_TOKEN", "pat-na1-secret")]).unwrap();
        assert!(!format!("{config:?}").contains("pat-na1-secret"));
        // What is printed instead: the kind, and a SQLite path (no secret in it).
        assert!(format!("{:?}", config.sink).starts_with("HubSpot([redacted])"));
        let sqlite = load(&[("RECEIPTS_TABLE", "r"), ("LEAD_SINK", "sqlite:///tmp/leads.db")]).unwrap();
        assert_eq!(format!("{:?}", sqlite.sink), "Sqlite(/tmp/leads.db)");
    }

    /// A Salesforce sink's configuration with `SALESFORCE_API_VERSION` set to `v`.
    fn salesforce_version(v: &str) -> Result<(), &'static str> {
        sink(&[
            ("LEAD_SINK", "salesforce"),
            ("SALESFORCE_INSTANCE_URL", "https://x"),
            ("SALESFORCE_CLIENT_ID", "i"),
            ("SALESFORCE_CLIENT_SECRET", "s"),
            ("SALESFORCE_API_VERSION", v),
        ])
        .map_err(|e| e.0)
        .map(|_| ())
    }

    #[test]
    fn a_salesforce_api_version_is_digits_and_dots_from_52() {
        for bad in ["62.", "62..0", ".62", "62.x", "62.0a"] {
            assert_eq!(salesforce_version(bad), Err("SALESFORCE_API_VERSION"), "{bad:?}");
        }
        assert_eq!(salesforce_version("62"), Ok(()));
    }

    #[test]
    fn an_http_url_is_https_or_a_local_http_one_with_something_after_the_scheme() {
        for good in ["https://x", "https://crm.example.com/leads", "http://127.0.0.1:9/x", "http://localhost/x"] {
            assert!(is_http_url(good), "{good}");
        }
        for bad in ["https://", "http://", "https://a b", "https://x\t", "http://example.com/x", "ftp://x", "x"] {
            assert!(!is_http_url(bad), "{bad:?}");
        }
    }
}
