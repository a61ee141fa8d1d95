//! SQL sinks: a `leads` table keyed by `external_id`, written with one upsert per lead.
//!
//! `INSERT ... ON CONFLICT (external_id) DO UPDATE` makes a redelivered record update the same
//! row (and count it in `upsert_count`) instead of adding a second one. The schema is created
//! on first use.

use std::sync::{Arc, Mutex};

use tokio::time::Instant;

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
    /// schema checked) when it drops or a statement times out. Records share the one
    /// connection (statements are pipelined); the lock is held only to connect.
    Postgres { target: PostgresTarget, connection: tokio::sync::Mutex<Connection> },
}

/// The shared PostgreSQL connection, and the last failed attempt to open one.
#[derive(Default)]
pub struct Connection {
    client: Option<Arc<tokio_postgres::Client>>,
    failed: Option<(Instant, SinkError)>,
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
        SqlSink::Postgres { target, connection: tokio::sync::Mutex::default() }
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
                let now = iso8601_millis(crate::metrics::now_millis());
                let connection = connection
                    .lock()
                    .map_err(|_| SinkError::Retryable { reason: "sink_unavailable", retry_after: None })?;
                connection
                    .execute(SQLITE_UPSERT, (&lead.external_id, &lead.name, &lead.email, &lead.message, &extra, &now))
                    .map(|_| ())
                    .map_err(|e| classify_sqlite(&e))
            }
            SqlSink::Postgres { target, connection } => {
                let asked = Instant::now();
                let connected = {
                    let mut guard = connection.lock().await;
                    match (&guard.client, &guard.failed) {
                        (Some(client), _) if !client.is_closed() => Arc::clone(client),
                        // An attempt failed while this record waited for it: one attempt per
                        // wave of records, so a database that is down costs each record one
                        // connect at most, not one per record queued before it.
                        (_, Some((at, error))) if *at >= asked => return Err(*error),
                        _ => match connect_postgres(target).await {
                            Ok(client) => {
                                let client = Arc::new(client);
                                *guard = Connection { client: Some(Arc::clone(&client)), failed: None };
                                client
                            }
                            Err(error) => {
                                *guard = Connection { client: None, failed: Some((Instant::now(), error)) };
                                return Err(error);
                            }
                        },
                    }
                };
                let result = within_statement_timeout(
                    connected
                        .execute(POSTGRES_UPSERT, &[&lead.external_id, &lead.name, &lead.email, &lead.message, &extra]),
                )
                .await;
                // After a timeout the connection's state is unknown: the next lead opens a new one.
                if matches!(result, Err(SinkError::Retryable { reason: "sink_timeout", .. })) {
                    let mut guard = connection.lock().await;
                    if guard.client.as_ref().is_some_and(|c| Arc::ptr_eq(c, &connected)) {
                        guard.client = None;
                    }
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
    classify_sqlstate(error.code().map(|c| c.code()), &error.to_string())
}

/// [`classify_postgres`] on the error's SQLSTATE (`None` for the driver's own errors) and text.
fn classify_sqlstate(code: Option<&str>, text: &str) -> SinkError {
    let retry = |reason| SinkError::Retryable { reason, retry_after: None };
    match code {
        Some("57014") => retry("sink_timeout"),
        Some(code) if code.starts_with("22") || code.starts_with("23") => {
            SinkError::Permanent { reason: "sink_rejected" }
        }
        Some(code) if code.starts_with("28") => retry("sink_unauthorized"),
        Some("3D000") => retry("sink_config_invalid"),
        // The driver's own words for a failed handshake (not the server's, not the input).
        None if text.to_ascii_lowercase().contains("tls") => retry("sink_tls_failed"),
        _ => retry("sink_unavailable"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn retry(reason: &'static str) -> SinkError {
        SinkError::Retryable { reason, retry_after: None }
    }

    #[test]
    fn a_sql_record_may_take_a_connect_two_statements_and_the_store_update() {
        let target = PostgresTarget::parse("postgres://u@127.0.0.1/leads", None).unwrap();
        // Connect 5 s, schema check and upsert 5 s each with 1 s to spare, the store 11 s.
        assert_eq!(SqlSink::postgres(target).record_budget(), std::time::Duration::from_secs(28));
    }

    #[test]
    fn postgres_errors_about_the_lead_are_permanent_and_the_rest_retried_with_their_reason() {
        let rejected = SinkError::Permanent { reason: "sink_rejected" };
        // Class 22: a NUL byte in text (22021), a value too long (22001); class 23: a constraint.
        for code in ["22021", "22001", "22P02", "23505", "23502"] {
            assert_eq!(classify_sqlstate(Some(code), "db error"), rejected, "{code}");
        }
        // A restart (57P01 admin shutdown, 57P03 cannot connect now), a full disk (53100),
        // serialization and deadlocks (40001, 40P01), too many connections (53300): retried.
        for code in ["57P01", "57P03", "53100", "40001", "40P01", "53300", "08006", "XX000"] {
            assert_eq!(classify_sqlstate(Some(code), "db error"), retry("sink_unavailable"), "{code}");
        }
        assert_eq!(classify_sqlstate(Some("57014"), "canceling statement"), retry("sink_timeout"));
        assert_eq!(classify_sqlstate(Some("28P01"), "password authentication failed"), retry("sink_unauthorized"));
        assert_eq!(classify_sqlstate(Some("28000"), "no pg_hba.conf entry"), retry("sink_unauthorized"));
        assert_eq!(classify_sqlstate(Some("3D000"), "database does not exist"), retry("sink_config_invalid"));
        // The driver's own errors carry no SQLSTATE: a failed handshake, or a lost connection.
        assert_eq!(classify_sqlstate(None, "error performing TLS handshake"), retry("sink_tls_failed"));
        assert_eq!(classify_sqlstate(None, "connection closed"), retry("sink_unavailable"));
        // "tls" in a server's message is not a handshake.
        assert_eq!(classify_sqlstate(Some("42P01"), "relation tls_leads does not exist"), retry("sink_unavailable"));
    }

    #[test]
    fn sqlite_errors_about_the_lead_are_permanent_and_a_busy_database_is_retried() {
        let db = rusqlite::Connection::open_in_memory().unwrap();
        db.execute_batch("CREATE TABLE t (id TEXT PRIMARY KEY NOT NULL, n INTEGER)").unwrap();
        db.execute("INSERT INTO t VALUES ('a', 1)", []).unwrap();
        let duplicate = db.execute("INSERT INTO t VALUES ('a', 2)", []).unwrap_err();
        assert_eq!(classify_sqlite(&duplicate), SinkError::Permanent { reason: "sink_rejected" });
        let null = db.execute("INSERT INTO t VALUES (NULL, 2)", []).unwrap_err();
        assert_eq!(classify_sqlite(&null), SinkError::Permanent { reason: "sink_rejected" });
        let busy = rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY), None);
        assert_eq!(classify_sqlite(&busy), retry("sink_unavailable"));
        let full = rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL), None);
        assert_eq!(classify_sqlite(&full), retry("sink_unavailable"));
        let too_big = rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_TOOBIG), None);
        assert_eq!(classify_sqlite(&too_big), SinkError::Permanent { reason: "sink_rejected" });
        let mismatch = rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_MISMATCH), None);
        assert_eq!(classify_sqlite(&mismatch), SinkError::Permanent { reason: "sink_rejected" });
    }
}
