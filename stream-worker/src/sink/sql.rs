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
    /// A PostgreSQL server; the connection is re-opened when it drops.
    Postgres { url: String, client: tokio::sync::Mutex<Option<tokio_postgres::Client>> },
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

    /// Connects to PostgreSQL at `url` and creates the schema.
    pub async fn postgres(url: &str) -> anyhow::Result<SqlSink> {
        let client = connect_postgres(url).await?;
        client.batch_execute(POSTGRES_SCHEMA).await?;
        Ok(SqlSink::Postgres { url: url.to_owned(), client: tokio::sync::Mutex::new(Some(client)) })
    }
}

async fn connect_postgres(url: &str) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    tokio::spawn(async move {
        // The connection ends when the client drops or the server goes away; the next upsert
        // sees a closed client and reconnects.
        let _ = connection.await;
    });
    Ok(client)
}

impl LeadSink for SqlSink {
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
            SqlSink::Postgres { url, client } => {
                let mut guard = client.lock().await;
                if guard.as_ref().is_none_or(tokio_postgres::Client::is_closed) {
                    *guard = Some(connect_postgres(url).await.map_err(|e| classify_postgres(&e))?);
                }
                let Some(client) = guard.as_ref() else { unreachable!("set just above") };
                client
                    .execute(POSTGRES_UPSERT, &[&lead.external_id, &lead.name, &lead.email, &lead.message, &extra])
                    .await
                    .map(|_| ())
                    .map_err(|e| classify_postgres(&e))
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
/// this lead; connection errors and everything else may pass.
fn classify_postgres(error: &tokio_postgres::Error) -> SinkError {
    match error.code().map(|c| &c.code()[..2]) {
        Some("22" | "23") => SinkError::Permanent { reason: "sink_rejected" },
        _ => SinkError::Retryable { reason: "sink_unavailable", retry_after: None },
    }
}
