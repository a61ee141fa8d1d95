//! SQL sinks: a `leads` table keyed by `external_id`, a stream batch's leads written together.
//!
//! `INSERT ... ON CONFLICT (external_id) DO UPDATE` makes a redelivered record update the same
//! row (and count it in `upsert_count`) instead of adding a second one. A batch is one
//! transaction (SQLite: a statement per lead, one commit) or one statement (PostgreSQL: the
//! rows as arrays), so the database commits once per batch; each lead still gets its own
//! answer. The schema is created on first use.

use std::sync::{Arc, Mutex};

use tokio::time::Instant;

use shared::json::Json;
use shared::lead::Lead;
use shared::time::iso8601_millis;

use super::contract::{BatchItem, LeadSink, SinkError, RECEIPT_UPDATE_BUDGET};
use super::postgres::{ConnectError, PostgresTarget, STATEMENT_TIMEOUT};

/// Leads per batch: a quarter of a stream batch (the mapping's `BatchSize` is 100), so the
/// receipts of one batch are marked while the next one is written (the handler overlaps them),
/// at four statements or commits per stream batch instead of a hundred.
pub const BATCH_SIZE: usize = 25;

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
    SELECT id, name, email, message, extra::jsonb
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS t(id, name, email, message, extra)
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
    /// connection (one statement per batch); the lock is held only to connect.
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
        connection.busy_timeout(SQLITE_OPEN_WAIT)?;
        // WAL lets readers (a dashboard, `make demo`) look while the worker writes. Another
        // process opening the same new file at once (an operator's two redrives, the poller
        // and a redrive) may be refused here at once, busy timeout or not: both read the file,
        // both want it alone to turn on WAL, and SQLite refuses one rather than deadlock. So
        // the setup is tried again until the other is done.
        retry_while_busy(SQLITE_OPEN_WAIT, || {
            connection.pragma_update(None, "journal_mode", "WAL")?;
            connection.execute(SQLITE_SCHEMA, []).map(|_| ())
        })?;
        Ok(SqlSink::Sqlite(Mutex::new(connection)))
    }

    /// PostgreSQL at `target`; nothing is opened until the first lead.
    pub fn postgres(target: PostgresTarget) -> SqlSink {
        SqlSink::Postgres { target, connection: tokio::sync::Mutex::default() }
    }
}

/// How long opening a SQLite file waits for another process that holds it.
const SQLITE_OPEN_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Runs `setup` again while SQLite answers busy (refused at once to avoid a deadlock), for up to
/// `wait`; any other answer, or the last busy one, is returned.
fn retry_while_busy(
    wait: std::time::Duration,
    mut setup: impl FnMut() -> rusqlite::Result<()>,
) -> rusqlite::Result<()> {
    let deadline = std::time::Instant::now() + wait;
    // Bounded in tries as well (one per 20 ms of the wait), so it ends whatever the clock says.
    let tries = wait.as_millis() / 20 + 1;
    let mut answer = setup();
    for _ in 1..tries {
        match &answer {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(20));
                answer = setup();
            }
            _ => break,
        }
    }
    answer
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
        super::postgres::CONNECT_TIMEOUT + 2 * statement + RECEIPT_UPDATE_BUDGET
    }

    fn batch_size(&self) -> usize {
        BATCH_SIZE
    }

    /// A lead is a batch of one: the same statement, the same transaction.
    async fn upsert(&self, lead: &Lead, receipt_key: &str) -> Result<(), SinkError> {
        let items = [BatchItem { lead, receipt_key }];
        let mut results = self.upsert_batch(&items, None).await;
        results.pop().unwrap_or(Err(SinkError::Retryable { reason: "sink_unexpected_answer", retry_after: None }))
    }

    async fn upsert_batch<'a>(
        &'a self,
        items: &'a [BatchItem<'a>],
        deadline: Option<Instant>,
    ) -> Vec<Result<(), SinkError>> {
        match self {
            SqlSink::Sqlite(connection) => sqlite_batch(connection, items),
            SqlSink::Postgres { target, connection } => postgres_batch(target, connection, items, deadline).await,
        }
    }
}

/// The rows of one SQLite transaction: each lead's own statement, so a lead the database
/// refuses (a constraint) fails alone, and one commit for all. An error that may pass (busy,
/// full, I/O) can end the transaction, so it is every lead's answer, as is a failed commit. A
/// refusal that ends the transaction (a user's trigger raising `ROLLBACK`) is that lead's
/// answer, and every other lead's is to retry: what they wrote is gone.
fn sqlite_batch(connection: &Mutex<rusqlite::Connection>, items: &[BatchItem<'_>]) -> Vec<Result<(), SinkError>> {
    let every = |error: SinkError| vec![Err(error); items.len()];
    let unavailable = SinkError::Retryable { reason: "sink_unavailable", retry_after: None };
    let Ok(mut connection) = connection.lock() else { return every(unavailable) };
    let now = iso8601_millis(crate::metrics::now_millis());
    // IMMEDIATE: the write lock first (waiting out the busy timeout), so no write of the
    // batch is the one to find the database locked.
    let Ok(transaction) = connection.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate) else {
        return every(unavailable);
    };
    let mut results = Vec::with_capacity(items.len());
    {
        let Ok(mut statement) = transaction.prepare_cached(SQLITE_UPSERT) else { return every(unavailable) };
        for BatchItem { lead, .. } in items {
            let extra = Json::Object(lead.extra.clone()).to_text();
            match statement.execute((&lead.external_id, &lead.name, &lead.email, &lead.message, &extra, &now)) {
                Ok(_) => results.push(Ok(())),
                Err(e) => match classify_sqlite(&e) {
                    refused @ SinkError::Permanent { .. } if !transaction.is_autocommit() => results.push(Err(refused)),
                    refused @ SinkError::Permanent { .. } => {
                        let mut answers = every(unavailable);
                        answers[results.len()] = Err(refused);
                        return answers;
                    }
                    // Dropping the transaction rolls back what it wrote.
                    retry => return every(retry),
                },
            }
        }
    }
    match transaction.commit() {
        Ok(()) => results,
        Err(_) => every(unavailable),
    }
}

/// The leads in one statement. When PostgreSQL refuses it for a lead's content (a NUL byte,
/// a constraint), each lead goes alone so only that one fails; so do the leads when two name
/// one row (a statement may not update a row twice: equal IDs, or IDs equal under the column's
/// collation). With a `deadline`, a lead starts alone only while its statement and the
/// receipt update fit before it; after an error that may pass, the rest are not tried.
async fn postgres_batch(
    target: &PostgresTarget,
    connection: &tokio::sync::Mutex<Connection>,
    items: &[BatchItem<'_>],
    deadline: Option<Instant>,
) -> Vec<Result<(), SinkError>> {
    let client = match postgres_client(target, connection).await {
        Ok(client) => client,
        Err(error) => return vec![Err(error); items.len()],
    };
    match postgres_upsert(connection, &client, items).await {
        Err(SinkError::Permanent { .. } | SinkError::Retryable { reason: ROW_TWICE, .. }) if items.len() > 1 => {}
        answer => return vec![answer; items.len()],
    }
    let statement = STATEMENT_TIMEOUT + std::time::Duration::from_secs(1) + RECEIPT_UPDATE_BUDGET;
    let mut results = Vec::with_capacity(items.len());
    for item in items {
        if deadline.is_some_and(|deadline| Instant::now() + statement > deadline) {
            results.resize(items.len(), Err(SinkError::Retryable { reason: "deadline", retry_after: None }));
            break;
        }
        let answer = postgres_upsert(connection, &client, std::slice::from_ref(item)).await;
        if let Err(retry @ SinkError::Retryable { .. }) = answer {
            // The connection or the server failed: the rest would fail the same way.
            results.resize(items.len(), Err(retry));
            break;
        }
        results.push(answer);
    }
    results
}

/// The shared connection, opened (with the schema checked) if there is none. An attempt that
/// failed while this caller waited for it is its answer too: one attempt per wave of callers,
/// so a database that is down costs each batch one connect at most, not one per batch queued
/// before it.
async fn postgres_client(
    target: &PostgresTarget,
    connection: &tokio::sync::Mutex<Connection>,
) -> Result<Arc<tokio_postgres::Client>, SinkError> {
    let asked = Instant::now();
    let mut guard = connection.lock().await;
    match (&guard.client, &guard.failed) {
        (Some(client), _) if !client.is_closed() => Ok(Arc::clone(client)),
        (_, Some((at, error))) if *at >= asked => Err(*error),
        _ => match connect_postgres(target).await {
            Ok(client) => {
                let client = Arc::new(client);
                *guard = Connection { client: Some(Arc::clone(&client)), failed: None };
                Ok(client)
            }
            Err(error) => {
                *guard = Connection { client: None, failed: Some((Instant::now(), error)) };
                Err(error)
            }
        },
    }
}

/// One `INSERT ... SELECT FROM unnest(...)` of `items`' leads, rows in key order (so two
/// statements touching the same rows take their locks in one order). After a timeout the
/// connection's state is unknown: the next caller opens a new one.
async fn postgres_upsert(
    connection: &tokio::sync::Mutex<Connection>,
    client: &Arc<tokio_postgres::Client>,
    items: &[BatchItem<'_>],
) -> Result<(), SinkError> {
    let mut leads: Vec<&Lead> = items.iter().map(|item| item.lead).collect();
    leads.sort_unstable_by(|a, b| a.external_id.cmp(&b.external_id));
    let column = |field: fn(&Lead) -> &str| leads.iter().map(|lead| field(lead)).collect::<Vec<&str>>();
    let extras: Vec<String> = leads.iter().map(|lead| Json::Object(lead.extra.clone()).to_text()).collect();
    let extras: Vec<&str> = extras.iter().map(String::as_str).collect();
    let (ids, names) = (column(|l| &l.external_id), column(|l| &l.name));
    let (emails, messages) = (column(|l| &l.email), column(|l| &l.message));
    let result =
        within_statement_timeout(client.execute(POSTGRES_UPSERT, &[&ids, &names, &emails, &messages, &extras])).await;
    if matches!(result, Err(SinkError::Retryable { reason: "sink_timeout", .. })) {
        let mut guard = connection.lock().await;
        if guard.client.as_ref().is_some_and(|c| Arc::ptr_eq(c, client)) {
            guard.client = None;
        }
    }
    result.map(|_| ())
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

/// PostgreSQL's "ON CONFLICT DO UPDATE command cannot affect row a second time" (21000): two
/// leads of one statement name one row.
const ROW_TWICE: &str = "sink_row_twice";

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
        Some("21000") => retry(ROW_TWICE),
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

    fn leads(ids: &[&str]) -> Vec<Lead> {
        ids.iter()
            .map(|id| Lead {
                external_id: (*id).into(),
                name: "Ada".into(),
                email: "ada@example.com".into(),
                message: "hi".into(),
                extra: Default::default(),
                roles: Default::default(),
                form: String::new(),
            })
            .collect()
    }

    fn batch(sink: &SqlSink, leads: &[Lead]) -> Vec<Result<(), SinkError>> {
        let SqlSink::Sqlite(connection) = sink else { unreachable!() };
        let items: Vec<BatchItem<'_>> = leads.iter().map(|lead| BatchItem { lead, receipt_key: "k" }).collect();
        sqlite_batch(connection, &items)
    }

    fn rows(sink: &SqlSink) -> Vec<(String, i64)> {
        let SqlSink::Sqlite(connection) = sink else { unreachable!() };
        let connection = connection.lock().unwrap();
        let mut statement = connection.prepare("SELECT external_id, upsert_count FROM leads ORDER BY 1").unwrap();
        statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?))).unwrap().map(Result::unwrap).collect()
    }

    /// An in-memory SQLite sink whose table was made by its user with `extra_sql` after it.
    fn sqlite_with(extra_sql: &str) -> SqlSink {
        let connection = rusqlite::Connection::open_in_memory().unwrap();
        connection.execute(SQLITE_SCHEMA, []).unwrap();
        connection.execute_batch(extra_sql).unwrap();
        SqlSink::Sqlite(Mutex::new(connection))
    }

    #[test]
    fn a_sqlite_batch_gives_each_lead_its_own_answer_and_a_lead_the_table_refuses_fails_alone() {
        // The user's own rule on their table: the row is refused, its neighbours are written.
        let sink = sqlite_with(
            "CREATE TRIGGER no_spam BEFORE INSERT ON leads WHEN new.external_id = 'spam'
             BEGIN SELECT RAISE(ABORT, 'no spam'); END;",
        );
        let rejected = SinkError::Permanent { reason: "sink_rejected" };
        assert_eq!(batch(&sink, &leads(&["a", "spam", "c"])), [Ok(()), Err(rejected), Ok(())]);
        assert_eq!(rows(&sink), [("a".into(), 1), ("c".into(), 1)]);
        // Again, and one lead twice in one batch: each row upserted, never added.
        assert_eq!(batch(&sink, &leads(&["c", "a", "c"])), [Ok(()), Ok(()), Ok(())]);
        assert_eq!(rows(&sink), [("a".into(), 2), ("c".into(), 3)]);
    }

    #[test]
    fn an_error_that_may_pass_mid_batch_rolls_the_batch_back_and_retries_every_lead() {
        // A trigger whose arithmetic overflows for one lead fails at run time with an error
        // that is not a constraint (SQLITE_ERROR, classed with busy, full and I/O errors as one
        // that may pass): the leads written before it are not kept.
        let sink = sqlite_with(
            "CREATE TRIGGER overflow AFTER INSERT ON leads WHEN new.external_id = 'b'
             BEGIN SELECT abs(-9223372036854775807 - 1); END;",
        );
        assert_eq!(batch(&sink, &leads(&["a", "b", "c"])), vec![Err(retry("sink_unavailable")); 3]);
        assert_eq!(rows(&sink), [], "one transaction: nothing of the batch is kept");
        assert_eq!(batch(&sink, &leads(&["a", "c"])), [Ok(()), Ok(())], "the connection is usable after");
        assert_eq!(rows(&sink), [("a".into(), 1), ("c".into(), 1)]);
    }

    #[test]
    fn a_refusal_that_ends_the_transaction_fails_its_lead_and_retries_the_others() {
        // The user's trigger refuses one lead with ROLLBACK: the transaction is gone, so the
        // leads before it were not kept and the ones after must not be written outside it.
        let sink = sqlite_with(
            "CREATE TRIGGER no_spam BEFORE INSERT ON leads WHEN new.external_id = 'spam'
             BEGIN SELECT RAISE(ROLLBACK, 'no spam'); END;",
        );
        let rejected = SinkError::Permanent { reason: "sink_rejected" };
        let answers = batch(&sink, &leads(&["a", "spam", "c"]));
        assert_eq!(answers, [Err(retry("sink_unavailable")), Err(rejected), Err(retry("sink_unavailable"))]);
        assert_eq!(rows(&sink), []);
        assert_eq!(batch(&sink, &leads(&["a", "c"])), [Ok(()), Ok(())], "the rest, without the refused lead");
        assert_eq!(rows(&sink), [("a".into(), 1), ("c".into(), 1)]);
    }

    #[test]
    fn a_sqlite_database_another_writer_holds_is_retried_for_every_lead() {
        let path = std::env::temp_dir().join(format!("sql-busy-{}.db", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let sink = SqlSink::sqlite(&path.display().to_string()).unwrap();
        if let SqlSink::Sqlite(connection) = &sink {
            connection.lock().unwrap().busy_timeout(std::time::Duration::ZERO).unwrap();
        }
        let other = rusqlite::Connection::open(&path).unwrap();
        other.execute_batch("BEGIN IMMEDIATE; INSERT INTO leads VALUES ('x','','','','{}','','',1);").unwrap();
        assert_eq!(batch(&sink, &leads(&["a", "b"])), vec![Err(retry("sink_unavailable")); 2]);
        other.execute_batch("COMMIT").unwrap();
        assert_eq!(batch(&sink, &leads(&["a"])), [Ok(())]);
        assert_eq!(rows(&sink), [("a".into(), 1), ("x".into(), 1)]);
        drop((sink, other));
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }

    #[test]
    fn a_busy_setup_is_tried_again_until_it_passes_or_the_wait_ends() {
        let error = |code| Err(rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None));
        let wait = std::time::Duration::from_millis(200);
        // Busy twice, then through: three tries.
        let mut tries = 0;
        let answer = retry_while_busy(wait, || {
            tries += 1;
            if tries < 3 {
                error(rusqlite::ffi::SQLITE_BUSY)
            } else {
                Ok(())
            }
        });
        assert_eq!((answer.is_ok(), tries), (true, 3));
        // Any other error at once: one try.
        let mut tries = 0;
        let answer = retry_while_busy(wait, || {
            tries += 1;
            error(rusqlite::ffi::SQLITE_CORRUPT)
        });
        assert_eq!((answer.is_err(), tries), (true, 1));
        // Busy for good: tried until the wait ends, then the busy answer.
        let (started, mut tries) = (std::time::Instant::now(), 0);
        let answer = retry_while_busy(wait, || {
            tries += 1;
            error(rusqlite::ffi::SQLITE_BUSY)
        });
        let busy =
            matches!(answer, Err(rusqlite::Error::SqliteFailure(e, _)) if e.code == rusqlite::ErrorCode::DatabaseBusy);
        assert!(busy && tries > 1 && started.elapsed() >= wait, "{tries} tries");
    }

    #[test]
    fn connections_opening_one_new_sqlite_file_at_once_all_open_it() {
        // Two processes opening one new file at once (tests/it/operate_faults.rs's two
        // redrives): each reads it, then wants it alone to turn on WAL, and SQLite refuses one
        // of them at once, without its busy timeout, rather than deadlock.
        for round in 0..20 {
            let path = std::env::temp_dir().join(format!("sql-open-{}-{round}.db", std::process::id()));
            let _ = std::fs::remove_file(&path);
            let opened: Vec<Result<(), String>> = std::thread::scope(|scope| {
                let openers: Vec<_> = (0..6)
                    .map(|_| {
                        scope.spawn(|| {
                            SqlSink::sqlite(&path.display().to_string()).map(|_| ()).map_err(|e| e.to_string())
                        })
                    })
                    .collect();
                openers.into_iter().map(|o| o.join().unwrap()).collect()
            });
            assert_eq!(opened, vec![Ok(()); 6], "round {round}");
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
            }
        }
    }

    #[tokio::test]
    async fn a_single_sqlite_upsert_is_a_batch_of_one() {
        let sink = sqlite_with("");
        let lead = &leads(&["solo"])[0];
        assert_eq!(sink.upsert(lead, "k").await, Ok(()));
        assert_eq!(sink.upsert(lead, "k").await, Ok(()));
        assert_eq!(rows(&sink), [("solo".into(), 2)]);
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
        assert_eq!(classify_sqlstate(Some("21000"), "cannot affect row a second time"), retry("sink_row_twice"));
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
