//! Connecting to PostgreSQL: `sslmode` as libpq users know it, over rustls, with timeouts.
//!
//! - `sslmode=disable`: plain TCP.
//! - `sslmode=require`: TLS, the server's certificate not checked (encryption only).
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
    /// TLS without checking the certificate.
    Require,
    /// TLS with the chain and host name checked; `ca_file` adds a private CA.
    VerifyFull { ca_file: Option<String> },
}

/// A PostgreSQL URL as the sink uses it: the URL for the driver (without the TLS parameters
/// it does not understand) and the TLS mode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostgresTarget {
    pub url: String,
    pub tls: TlsMode,
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
        let tls = match mode.as_deref() {
            Some("disable") => TlsMode::Disable,
            Some("require") => TlsMode::Require,
            Some("verify-full") => TlsMode::VerifyFull { ca_file },
            Some(_) => return Err(UrlError("sslmode must be disable, require or verify-full")),
            None if is_loopback(base) => TlsMode::Disable,
            None => TlsMode::VerifyFull { ca_file },
        };
        let url = if kept.is_empty() { base.to_owned() } else { format!("{base}?{}", kept.join("&")) };
        url.parse::<tokio_postgres::Config>().map_err(|_| UrlError("a postgres://user@host:port/database URL"))?;
        Ok(PostgresTarget { url, tls })
    }

    /// Opens a connection, within [`CONNECT_TIMEOUT`], with [`STATEMENT_TIMEOUT`] set on it.
    pub async fn connect(&self) -> Result<tokio_postgres::Client, ConnectError> {
        let mut config: tokio_postgres::Config = self.url.parse().map_err(ConnectError::Postgres)?;
        config.connect_timeout(CONNECT_TIMEOUT);
        config.options(format!("-c statement_timeout={}", STATEMENT_TIMEOUT.as_millis()));
        let connecting = async {
            match &self.tls {
                TlsMode::Disable => {
                    config.ssl_mode(SslMode::Disable);
                    let (client, connection) = config.connect(tokio_postgres::NoTls).await?;
                    tokio::spawn(connection);
                    Ok(client)
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
        match tokio::time::timeout(CONNECT_TIMEOUT + Duration::from_secs(1), connecting).await {
            Ok(result) => result,
            Err(_) => Err(ConnectError::Timeout),
        }
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

/// True if the URL's host is this machine.
fn is_loopback(base: &str) -> bool {
    let after_scheme = base.split_once("://").map_or(base, |(_, rest)| rest);
    let authority = after_scheme.split('/').next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let host = match host_port.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or_default(),
        None => host_port.split(':').next().unwrap_or_default(),
    };
    host == "localhost" || host == "::1" || host.starts_with("127.") || host.is_empty() || host.starts_with("%2F")
}

fn client_config(tls: &TlsMode) -> Result<ClientConfig, &'static str> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|_| "no TLS protocol version")?;
    Ok(match tls {
        TlsMode::Require => {
            builder.dangerous().with_custom_certificate_verifier(Arc::new(EncryptOnly(provider))).with_no_client_auth()
        }
        TlsMode::VerifyFull { ca_file } => {
            let mut roots = RootCertStore::empty();
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
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
            builder.with_root_certificates(roots).with_no_client_auth()
        }
        TlsMode::Disable => return Err("TLS is disabled"),
    })
}

/// `sslmode=require`: any certificate is accepted (the handshake's signatures are still
/// checked, so the connection is encrypted to whoever holds the certificate's key).
#[derive(Debug)]
struct EncryptOnly(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(url: &str) -> Result<(String, TlsMode), UrlError> {
        PostgresTarget::parse(url, None).map(|t| (t.url, t.tls))
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
            Ok(("postgres://u@db.example.com/leads?application_name=w".into(), TlsMode::Require))
        );
        assert_eq!(
            parse("postgresql://u@127.0.0.1/leads?sslmode=verify-full&sslrootcert=/etc/rds.pem"),
            Ok(("postgresql://u@127.0.0.1/leads".into(), full(Some("/etc/rds.pem"))))
        );
        assert_eq!(parse("postgres://u@db.example.com/leads?sslmode=disable").map(|t| t.1), Ok(TlsMode::Disable));
        for refused in ["prefer", "allow", "verify-ca", ""] {
            let url = format!("postgres://u@db.example.com/leads?sslmode={refused}");
            assert_eq!(parse(&url), Err(UrlError("sslmode must be disable, require or verify-full")), "{refused}");
        }
        assert_eq!(
            PostgresTarget::parse("postgres://u@db.example.com/x", Some("/ca.pem".into())).map(|t| t.tls),
            Ok(full(Some("/ca.pem")))
        );
        assert!(parse("postgres://u@db.example.com:notaport/x").is_err());
    }
}
