//! SQL sinks: a `leads` table keyed by `external_id`, written with one upsert per lead.
//!
//! `INSERT ... ON CONFLICT (external_id) DO UPDATE` makes a redelivered record update the same
//! row (and count it in `upsert_count`) instead of adding a second one. The schema is created
//! on first use.

use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use shared::json::Json;
use shared::lead::Lead;
use shared::time::iso8601_millis;

use super::postgres::{ConnectError, PostgresTarget, STATEMENT_TIMEOUT};
use super::{LeadSink, SinkError};

const SQLITE_SCHEMA: &str = "CREATE TABLE IF NOT EXISTS leads (
    external_id  TEXT    NOT NULL PRIMARY KEY,
    name         TEXT    NOT NULL,
    email        TEXT    NOT NULL,
    message      TEXT    NOT NULL,
    extra        TEXT    NOT NULL,
    created_at   TEXT    NOT NULL,
    updated_at   TEXT    NOT NULL,
    upsert_count INTEGER NOT NULL
)";

const SQLITE_UPSERT: &str = "INSERT INTO leads
    (external_id, name, email, message, extra, created_at, updated_at, upsert_count)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, 1)
    ON CONFLICT (external_id) DO UPDATE SET
        name = excluded.name, email = excluded.email, message = excluded.message,
        extra = excluded.extra, updated_at = excluded.updated_at,
        upsert_count = leads.upsert_count + 1";

const POSTGRES_SCHEMA: &str = "CREATE TABLE IF NOT EXISTS leads (
    external_id  TEXT        NOT NULL PRIMARY KEY,
    name         TEXT        NOT NULL,
    email        TEXT        NOT NULL,
    message      TEXT        NOT NULL,
    extra        JSONB       NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    upsert_count BIGINT      NOT NULL DEFAULT 1
)";

const POSTGRES_UPSERT: &str = "INSERT INTO leads (external_id, name, email, message, extra)
    VALUES ($1, $2, $3, $4, $5::text::jsonb)
    ON CONFLICT (external_id) DO UPDATE SET
        name = excluded.name, email = excluded.email, message = excluded.message,
        extra = excluded.extra, updated_at = now(),
        upsert_count = leads.upsert_count + 1";

/// A SQL database holding the `leads` table.
pub enum SqlSink {
    /// An embedded SQLite file.
    Sqlite(Mutex<rusqlite::Connection>),
    /// A PostgreSQL server, connected on first use; the connection is re-opened (and the
    /// schema checked) when it drops or a statement times out.
    Postgres { target: PostgresTarget, client: tokio::sync::Mutex<Option<tokio_postgres::Client>> },
}

impl SqlSink {
    /// Opens (creating if needed) the SQLite file at `path` and its schema.
    pub fn sqlite(path: &str) -> anyhow::Result<SqlSink> {
        if let Some(parent) = std::path::Path::new(path).parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        let connection = rusqlite::Connection::open(path)?;
        // WAL lets readers (a dashboard, `make demo`) look while the worker writes.
        connection.pragma_update(None, "journal_mode", "WAL")?;
        connection.busy_timeout(std::time::Duration::from_secs(5))?;
        connection.execute(SQLITE_SCHEMA, [])?;
        Ok(SqlSink::Sqlite(Mutex::new(connection)))
    }

    /// PostgreSQL at `target`; nothing is opened until the first lead.
    pub fn postgres(target: PostgresTarget) -> SqlSink {
        SqlSink::Postgres { target, client: tokio::sync::Mutex::new(None) }
    }
}

/// A new connection with the schema in place.
async fn connect_postgres(target: &PostgresTarget) -> Result<tokio_postgres::Client, SinkError> {
    let client = target.connect().await.map_err(|e| match e {
        ConnectError::Postgres(e) => classify_postgres(&e),
        ConnectError::Tls(_) => SinkError::Retryable { reason: "sink_tls_config", retry_after: None },
        ConnectError::Timeout => SinkError::Retryable { reason: "sink_timeout", retry_after: None },
    })?;
    within_statement_timeout(client.batch_execute(POSTGRES_SCHEMA)).await?;
    Ok(client)
}

/// Runs a statement, giving up a little after the server's own `statement_timeout` in case the
/// server does not answer at all.
async fn within_statement_timeout<T>(
    statement: impl std::future::Future<Output = Result<T, tokio_postgres::Error>>,
) -> Result<T, SinkError> {
    match tokio::time::timeout(STATEMENT_TIMEOUT + std::time::Duration::from_secs(1), statement).await {
        Ok(result) => result.map_err(|e| classify_postgres(&e)),
        Err(_) => Err(SinkError::Retryable { reason: "sink_timeout", retry_after: None }),
    }
}

impl LeadSink for SqlSink {
    fn record_budget(&self) -> std::time::Duration {
        // A connect, the schema check and the upsert, each at its timeout, then the update.
        let statement = STATEMENT_TIMEOUT + std::time::Duration::from_secs(1);
        super::postgres::CONNECT_TIMEOUT + 2 * statement + super::RECEIPT_UPDATE_BUDGET
    }

    async fn upsert(&self, lead: &Lead, _receipt_key: &str) -> Result<(), SinkError> {
        let extra = Json::Object(lead.extra.clone()).to_text();
        match self {
            SqlSink::Sqlite(connection) => {
                let now =
                    iso8601_millis(SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64));
                let connection = connection
                    .lock()
                    .map_err(|_| SinkError::Retryable { reason: "sink_unavailable", retry_after: None })?;
                connection
                    .execute(SQLITE_UPSERT, (&lead.external_id, &lead.name, &lead.email, &lead.message, &extra, &now))
                    .map(|_| ())
                    .map_err(|e| classify_sqlite(&e))
            }
            SqlSink::Postgres { target, client } => {
                let mut guard = client.lock().await;
                let connected = match guard.take() {
                    Some(client) if !client.is_closed() => client,
                    _ => connect_postgres(target).await?,
                };
                let result = within_statement_timeout(
                    connected
                        .execute(POSTGRES_UPSERT, &[&lead.external_id, &lead.name, &lead.email, &lead.message, &extra]),
                )
                .await;
                // After a timeout the connection's state is unknown: the next lead opens a new one.
                if !matches!(result, Err(SinkError::Retryable { reason: "sink_timeout", .. })) {
                    *guard = Some(connected);
                }
                result.map(|_| ())
            }
        }
    }
}

/// Constraint and type errors are about this lead; everything else (busy, locked, I/O, full
/// disk) may pass.
fn classify_sqlite(error: &rusqlite::Error) -> SinkError {
    use rusqlite::ErrorCode;
    match error.sqlite_error_code() {
        Some(ErrorCode::ConstraintViolation | ErrorCode::TypeMismatch | ErrorCode::TooBig) => {
            SinkError::Permanent { reason: "sink_rejected" }
        }
        _ => SinkError::Retryable { reason: "sink_unavailable", retry_after: None },
    }
}

/// SQLSTATE classes 22 (data exception, e.g. a NUL byte in text) and 23 (integrity) are about
/// this lead. Everything else may pass, each with the reason an operator needs: `57014` (the
/// statement timed out), class 28 (credentials refused), `3D000` (no such database), a TLS
/// handshake that failed (an unknown CA, a wrong name), and connection errors.
fn classify_postgres(error: &tokio_postgres::Error) -> SinkError {
    let retry = |reason| SinkError::Retryable { reason, retry_after: None };
    match error.code().map(|c| c.code()) {
        Some("57014") => retry("sink_timeout"),
        Some(code) if code.starts_with("22") || code.starts_with("23") => {
            SinkError::Permanent { reason: "sink_rejected" }
        }
        Some(code) if code.starts_with("28") => retry("sink_unauthorized"),
        Some("3D000") => retry("sink_config_invalid"),
        // The driver's own words for a failed handshake (not the server's, not the input).
        None if error.to_string().to_ascii_lowercase().contains("tls") => retry("sink_tls_failed"),
        _ => retry("sink_unavailable"),
    }
}
