//! Connecting to PostgreSQL: `sslmode` as libpq users know it, over rustls, with timeouts.
//!
//! - `sslmode=disable`: plain TCP.
//! - `sslmode=require`: TLS; the server's certificate is not checked, unless a CA file is
//!   given, when its chain is checked against it (libpq does the same: `require` with a root
//!   certificate behaves as `verify-ca`), the host name not.
//! - `sslmode=verify-full`: TLS, the certificate chain checked against the system's roots plus
//!   `sslrootcert=<file>` in the URL or `POSTGRES_CA_FILE` (private CAs such as RDS's), and the
//!   host name against the certificate.
//! - No `sslmode`: `verify-full`, except to a loopback host (`disable`), as a local server
//!   usually has no certificate and a remote one must prove who it is.
//!
//! `prefer` and `allow` (libpq's silent fallbacks to plain text) and `verify-ca` are refused.

use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres::config::SslMode;

/// How long opening a connection (TCP, TLS, startup) may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one statement may run, enforced by the server (`statement_timeout`) and, should the
/// server not answer at all, by the client.
pub const STATEMENT_TIMEOUT: Duration = Duration::from_secs(5);

/// How to protect the connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TlsMode {
    /// Plain TCP.
    Disable,
    /// TLS without checking the certificate, or with `ca_file` its chain (not the name).
    Require { ca_file: Option<String> },
    /// TLS with the chain and host name checked; `ca_file` adds a private CA.
    VerifyFull { ca_file: Option<String> },
}

/// A PostgreSQL URL as the sink uses it: the URL for the driver (without the TLS parameters
/// it does not understand) and the TLS mode. Its `Debug` leaves the URL out (it may hold a
/// password).
#[derive(Clone, PartialEq, Eq)]
pub struct PostgresTarget {
    pub url: String,
    pub tls: TlsMode,
}

impl std::fmt::Debug for PostgresTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresTarget").field("tls", &self.tls).finish_non_exhaustive()
    }
}

/// Why a PostgreSQL URL is not usable (the message names the parameter, never the URL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UrlError(pub &'static str);

impl PostgresTarget {
    /// Reads `sslmode` and `sslrootcert` from `url`'s query; `ca_file` is `POSTGRES_CA_FILE`.
    pub fn parse(url: &str, ca_file: Option<String>) -> Result<PostgresTarget, UrlError> {
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let mut kept = Vec::new();
        let (mut mode, mut root) = (None, None);
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("sslmode", value)) => mode = Some(value.to_owned()),
                Some(("sslrootcert", value)) => root = Some(value.to_owned()),
                _ => kept.push(pair),
            }
        }
        let ca_file = root.or(ca_file);
        if let Some(file) = &ca_file {
            // Read now, so a wrong path stops the worker at start instead of failing every lead.
            let certs = CertificateDer::pem_file_iter(file).map(|i| i.filter(Result::is_ok).count()).unwrap_or(0);
            if certs == 0 {
                return Err(UrlError("POSTGRES_CA_FILE (or sslrootcert) must be a readable PEM file of certificates"));
            }
        }
        let url = if kept.is_empty() { base.to_owned() } else { format!("{base}?{}", kept.join("&")) };
        let config =
            url.parse::<tokio_postgres::Config>().map_err(|_| UrlError("a postgres://user@host:port/database URL"))?;
        let tls = match mode.as_deref() {
            Some("disable") => TlsMode::Disable,
            Some("require") => TlsMode::Require { ca_file },
            Some("verify-full") => TlsMode::VerifyFull { ca_file },
            Some(_) => return Err(UrlError("sslmode must be disable, require or verify-full")),
            None if is_local(&config) => TlsMode::Disable,
            None => TlsMode::VerifyFull { ca_file },
        };
        Ok(PostgresTarget { url, tls })
    }

    /// Opens a connection, within [`CONNECT_TIMEOUT`], with [`STATEMENT_TIMEOUT`] set on it.
    pub async fn connect(&self) -> Result<tokio_postgres::Client, ConnectError> {
        let mut config: tokio_postgres::Config = self.url.parse().map_err(ConnectError::Postgres)?;
        config.connect_timeout(CONNECT_TIMEOUT);
        let connecting = async {
            match &self.tls {
                TlsMode::Disable => {
                    config.ssl_mode(SslMode::Disable);
                    let (client, connection) = config.connect(tokio_postgres::NoTls).await?;
                    tokio::spawn(connection);
                    Ok::<_, ConnectError>(client)
                }
                tls => {
                    config.ssl_mode(SslMode::Require);
                    let tls_config = client_config(tls).map_err(ConnectError::Tls)?;
                    let connector = tokio_postgres_rustls::MakeRustlsConnect::new(tls_config);
                    let (client, connection) = config.connect(connector).await?;
                    tokio::spawn(connection);
                    Ok(client)
                }
            }
        };
        let client = match tokio::time::timeout(CONNECT_TIMEOUT + Duration::from_secs(1), connecting).await {
            Ok(result) => result?,
            Err(_) => return Err(ConnectError::Timeout),
        };
        // Set per session rather than in the URL's `options`, which a pooler such as PgBouncer
        // may refuse and which would replace the user's own.
        let statement = format!("SET statement_timeout = {}", STATEMENT_TIMEOUT.as_millis());
        match tokio::time::timeout(STATEMENT_TIMEOUT, client.batch_execute(&statement)).await {
            Ok(result) => result?,
            Err(_) => return Err(ConnectError::Timeout),
        }
        Ok(client)
    }
}

/// Why a connection could not be opened.
#[derive(Debug)]
pub enum ConnectError {
    /// The driver's error (refused, authentication, TLS handshake, timeout inside the driver).
    Postgres(tokio_postgres::Error),
    /// The CA file could not be read.
    Tls(&'static str),
    /// No connection within the deadline.
    Timeout,
}

impl From<tokio_postgres::Error> for ConnectError {
    fn from(error: tokio_postgres::Error) -> ConnectError {
        ConnectError::Postgres(error)
    }
}

/// True if every host the driver would try is this machine: `localhost`, a loopback address,
/// or a Unix socket. Anything else (a name, a remote address, no host at all) is not.
fn is_local(config: &tokio_postgres::Config) -> bool {
    use tokio_postgres::config::Host;
    let hosts = config.get_hosts();
    !hosts.is_empty()
        && hosts.iter().all(|host| match host {
            Host::Tcp(name) => {
                // A URL's `[::1]` reaches here without its brackets (the driver removes them).
                name == "localhost" || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
            }
            Host::Unix(_) => true,
        })
}

fn client_config(tls: &TlsMode) -> Result<ClientConfig, &'static str> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|_| "no TLS protocol version")?;
    Ok(match tls {
        TlsMode::Require { ca_file } => {
            let chain = match ca_file {
                None => None,
                Some(file) => Some(
                    rustls::client::WebPkiServerVerifier::builder_with_provider(
                        Arc::new(roots(false, Some(file))?),
                        Arc::clone(&provider),
                    )
                    .build()
                    .map_err(|_| "POSTGRES_CA_FILE (or sslrootcert) holds no usable certificate")?,
                ),
            };
            let verifier = Arc::new(RequireVerifier { chain, provider });
            builder.dangerous().with_custom_certificate_verifier(verifier).with_no_client_auth()
        }
        TlsMode::VerifyFull { ca_file } => {
            builder.with_root_certificates(roots(true, ca_file.as_deref())?).with_no_client_auth()
        }
        TlsMode::Disable => return Err("TLS is disabled"),
    })
}

/// Trust anchors: the system's (if `system`), plus the certificates of `ca_file`.
fn roots(system: bool, ca_file: Option<&str>) -> Result<RootCertStore, &'static str> {
    let mut roots = RootCertStore::empty();
    if system {
        for cert in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(cert);
        }
    }
    if let Some(file) = ca_file {
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(file)
            .map_err(|_| "POSTGRES_CA_FILE (or sslrootcert) must be a readable PEM file")?
            .collect::<Result<_, _>>()
            .map_err(|_| "POSTGRES_CA_FILE (or sslrootcert) must hold PEM certificates")?;
        for cert in certs {
            roots.add(cert).map_err(|_| "POSTGRES_CA_FILE (or sslrootcert) holds an unusable certificate")?;
        }
    }
    Ok(roots)
}

/// `sslmode=require`: without a CA file any certificate is accepted; with one (libpq's
/// `verify-ca`) the chain must lead to it, and the name is not compared with the host. Either
/// way the handshake's signatures are checked, so the connection is encrypted to whoever holds
/// the certificate's key.
#[derive(Debug)]
struct RequireVerifier {
    chain: Option<Arc<rustls::client::WebPkiServerVerifier>>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl ServerCertVerifier for RequireVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        use rustls::{CertificateError, Error};
        let Some(chain) = &self.chain else { return Ok(ServerCertVerified::assertion()) };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(url: &str) -> Result<(String, TlsMode), UrlError> {
        PostgresTarget::parse(url, None).map(|t| (t.url, t.tls))
    }

    #[test]
    fn the_debug_form_names_the_tls_mode_and_never_the_url() {
        let target = PostgresTarget::parse("postgres://u:hunter2@db.example.com/leads", None).unwrap();
        let text = format!("{target:?}");
        assert_eq!(text, "PostgresTarget { tls: VerifyFull { ca_file: None }, .. }");
        assert!(!text.contains("hunter2"));
    }

    #[test]
    fn sslmode_as_libpq_users_know_it() {
        let full = |ca: Option<&str>| TlsMode::VerifyFull { ca_file: ca.map(str::to_owned) };
        assert_eq!(
            parse("postgres://u@db.example.com/leads"),
            Ok(("postgres://u@db.example.com/leads".into(), full(None)))
        );
        assert_eq!(
            parse("postgres://u@127.0.0.1:5432/leads"),
            Ok(("postgres://u@127.0.0.1:5432/leads".into(), TlsMode::Disable))
        );
        assert_eq!(parse("postgres://u@localhost/leads").map(|t| t.1), Ok(TlsMode::Disable));
        assert_eq!(
            parse("postgres://u@db.example.com/leads?sslmode=require&application_name=w"),
            Ok(("postgres://u@db.example.com/leads?application_name=w".into(), TlsMode::Require { ca_file: None }))
        );
        // A CA file that cannot be read stops the worker at start.
        assert_eq!(
            parse("postgresql://u@127.0.0.1/leads?sslmode=verify-full&sslrootcert=/nonexistent/rds.pem"),
            Err(UrlError("POSTGRES_CA_FILE (or sslrootcert) must be a readable PEM file of certificates"))
        );
        // Only loopback addresses, localhost and sockets are local; no host is not.
        assert_eq!(parse("postgres://u@127.8.0.1/x").map(|t| t.1), Ok(TlsMode::Disable));
        assert_eq!(parse("postgres://u@[::1]:5432/x").map(|t| t.1), Ok(TlsMode::Disable));
        assert_eq!(parse("postgres://u@127.0.0.1.example.com/x").map(|t| t.1), Ok(full(None)));
        assert_eq!(parse("postgres://u:pw@/x?host=db.example.com").map(|t| t.1), Ok(full(None)));
        assert_eq!(parse("postgres://u@localhost,db.example.com/x").map(|t| t.1), Ok(full(None)));
        assert!(!format!("{:?}", PostgresTarget::parse("postgres://u:hunter2@h/x", None).unwrap()).contains("hunter2"));
        assert_eq!(parse("postgres://u@db.example.com/leads?sslmode=disable").map(|t| t.1), Ok(TlsMode::Disable));
        for refused in ["prefer", "allow", "verify-ca", ""] {
            let url = format!("postgres://u@db.example.com/leads?sslmode={refused}");
            assert_eq!(parse(&url), Err(UrlError("sslmode must be disable, require or verify-full")), "{refused}");
        }

        assert!(parse("postgres://u@db.example.com:notaport/x").is_err());
    }
}
