//! The SQL sinks' batches against real PostgreSQL: a stream batch's leads in one statement, a
//! lead PostgreSQL refuses failing alone, the statement counted by the database itself, and SQL's
//! metacharacters stored as typed by both SQL sinks.

use shared::json::Json;
use shared::lead::Lead;
use stream_worker::config::SinkConfig;
use stream_worker::handler::Handler;
use stream_worker::sink::postgres::PostgresTarget;
use stream_worker::sink::{BatchItem, LeadSink, Sink, SinkError};
use tests::aws::{put_item, receipt, sample_lead};
use tests::postgres::Postgres;
use tests::process::TempDir;
use tests::worker::{self, World, TABLE};
use tests::{delivery, now_millis};

/// The user's own `leads` table, made before the worker's first lead (the worker keeps it), with
/// a statement-level trigger that counts the `INSERT` statements that commit.
const COUNTED_TABLE: &str = "
    CREATE TABLE leads (
        external_id TEXT NOT NULL PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL,
        message TEXT NOT NULL, extra JSONB NOT NULL,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(), updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        upsert_count BIGINT NOT NULL DEFAULT 1);
    CREATE TABLE statements (n BIGINT NOT NULL);
    INSERT INTO statements VALUES (0);
    CREATE FUNCTION count_statement() RETURNS trigger LANGUAGE plpgsql AS
        $$ BEGIN UPDATE statements SET n = n + 1; RETURN NULL; END $$;
    CREATE TRIGGER count_statement AFTER INSERT ON leads
        FOR EACH STATEMENT EXECUTE FUNCTION count_statement();";

async fn client(postgres: &Postgres) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(&postgres.url(), tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

/// `(committed INSERT statements, the leads' (external_id, upsert_count))`.
async fn counted(postgres: &Postgres) -> (i64, Vec<(String, i64)>) {
    let client = client(postgres).await;
    let n: i64 = client.query_one("SELECT n FROM statements", &[]).await.unwrap().get(0);
    let rows = client.query("SELECT external_id, upsert_count FROM leads ORDER BY 1", &[]).await.unwrap();
    (n, rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

async fn counted_postgres() -> (Postgres, Sink) {
    let postgres = Postgres::start();
    client(&postgres).await.batch_execute(COUNTED_TABLE).await.unwrap();
    let target = PostgresTarget::parse(&postgres.url(), None).unwrap();
    let sink = Sink::connect(&SinkConfig::Postgres { target }).await.unwrap();
    (postgres, sink)
}

#[tokio::test]
async fn postgres_writes_a_stream_batch_in_one_statement_and_a_lead_it_refuses_fails_alone() {
    let w = World::start("sql-batches").await;
    let (postgres, sink) = counted_postgres().await;
    let handler = Handler { backoff: Default::default(), mapping: Default::default(), sink, receipts: w.receipts() };
    for i in 0..4 {
        w.deliver(&format!("sub_sql_{i}"));
    }
    worker::drain(&w.poller(), &handler).await;
    let ids = |range: std::ops::Range<usize>, count| range.map(|i| (format!("sub_sql_{i}"), count)).collect::<Vec<_>>();
    assert_eq!(counted(&postgres).await, (1, ids(0..4, 1)), "four leads, one statement");

    // A NUL byte is valid JSON (`\u0000`) and a text value PostgreSQL refuses (22021): the
    // batch's statement fails whole, then each lead goes alone and only that one fails.
    let nul = receipt(&delivery::body("sub_sql_nul", "before\u{0}after", 1_796_019_713), now_millis());
    put_item(&w.store, TABLE, &nul.to_item());
    for i in 4..6 {
        w.deliver(&format!("sub_sql_{i}"));
    }
    worker::drain(&w.poller(), &handler).await;
    assert_eq!(w.status("sub_sql_nul"), Some(("FAILED".into(), Some("sink_rejected".into()))));
    for i in 0..6 {
        assert_eq!(w.status(&format!("sub_sql_{i}")), Some(("COMPLETED".into(), None)), "sub_sql_{i}");
    }
    // The first batch's statement, then the two that went alone and committed (a refused
    // statement commits nothing, its count included).
    assert_eq!(counted(&postgres).await, (3, ids(0..6, 1)));
}

#[tokio::test]
async fn postgres_leads_of_one_batch_that_name_one_row_are_each_upserted_in_order() {
    let (postgres, sink) = counted_postgres().await;
    // The user's key column compares without case (a nondeterministic ICU collation, as
    // `citext` would): `sub_Twin` and `sub_twin` are one row to PostgreSQL.
    client(&postgres)
        .await
        .batch_execute(
            "CREATE COLLATION no_case (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
             ALTER TABLE leads ALTER COLUMN external_id TYPE TEXT COLLATE no_case;",
        )
        .await
        .unwrap();
    for (a, b) in [("sub_twin", "sub_twin"), ("sub_Case", "sub_case")] {
        let (first, mut second) = (sample_lead(a), sample_lead(b));
        second.message = "changed".into();
        let items = [BatchItem { lead: &first, receipt_key: "a" }, BatchItem { lead: &second, receipt_key: "b" }];
        // One statement may not update a row twice (PostgreSQL refuses it, 21000, on every
        // try): such a batch goes a lead at a time, in the batch's order.
        assert_eq!(sink.upsert_batch(&items, None).await, [Ok(()), Ok(())], "{a} {b}");
    }
    let query = "SELECT external_id, message, upsert_count FROM leads ORDER BY 1";
    let rows = client(&postgres).await.query(query, &[]).await.unwrap();
    let rows: Vec<(String, String, i64)> = rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect();
    let changed = |id: &str| (id.to_owned(), "changed".to_owned(), 2);
    assert_eq!(rows, [changed("sub_Case"), changed("sub_twin")], "one row each, the later lead's content last");
}

#[tokio::test]
async fn postgres_a_lead_that_goes_alone_and_may_pass_stops_the_rest() {
    let (postgres, sink) = counted_postgres().await;
    // The user's trigger answers "try again" (serialization failure) for one lead.
    client(&postgres)
        .await
        .batch_execute(
            "CREATE FUNCTION busy() RETURNS trigger LANGUAGE plpgsql AS
                 $$ BEGIN RAISE EXCEPTION 'busy' USING ERRCODE = '40001'; END $$;
             CREATE TRIGGER busy BEFORE INSERT ON leads FOR EACH ROW
                 WHEN (NEW.external_id = 'sub_b_busy') EXECUTE FUNCTION busy();",
        )
        .await
        .unwrap();
    let (mut refused, busy, after) = (sample_lead("sub_a_nul"), sample_lead("sub_b_busy"), sample_lead("sub_c_after"));
    refused.message = "\u{0}".into();
    let items: Vec<BatchItem<'_>> =
        [&refused, &busy, &after].into_iter().map(|lead| BatchItem { lead, receipt_key: "k" }).collect();
    let (rejected, retry) = (
        SinkError::Permanent { reason: "sink_rejected" },
        SinkError::Retryable { reason: "sink_unavailable", retry_after: None },
    );
    // The statement is refused for the NUL; alone, the first lead fails, the second is to be
    // retried, and the third is not tried (it is retried with it: the stream keeps order).
    assert_eq!(sink.upsert_batch(&items, None).await, [Err(rejected), Err(retry), Err(retry)]);
    assert_eq!(counted(&postgres).await, (0, vec![]));
}

#[tokio::test]
async fn postgres_leads_that_must_go_alone_start_only_while_time_allows() {
    let (postgres, sink) = counted_postgres().await;
    let (clean, mut refused) = (sample_lead("sub_clean"), sample_lead("sub_refused"));
    refused.name = "\u{0}".into();
    let items = [BatchItem { lead: &clean, receipt_key: "a" }, BatchItem { lead: &refused, receipt_key: "b" }];
    // A second is left: the statement and the receipt's update would not fit, so neither lead
    // goes alone; both are retried for the deadline (the next invocation has its own time).
    let soon = tokio::time::Instant::now() + std::time::Duration::from_secs(1);
    let deadline = SinkError::Retryable { reason: "deadline", retry_after: None };
    assert_eq!(sink.upsert_batch(&items, Some(soon)).await, [Err(deadline), Err(deadline)]);
    assert_eq!(counted(&postgres).await, (0, vec![]));
    let rejected = SinkError::Permanent { reason: "sink_rejected" };
    assert_eq!(sink.upsert_batch(&items, None).await, [Ok(()), Err(rejected)]);
    assert_eq!(counted(&postgres).await, (1, vec![("sub_clean".into(), 1)]));
}

/// A lead whose every field holds SQL's metacharacters (quotes, `;`, `--`, `\`, `$1`, `?1`)
/// and, but the key (a submission ID is at most 1,024 bytes), a 1 MiB value: bound as
/// parameters, each is stored as typed. With `nul`, a NUL byte too (SQLite stores it;
/// PostgreSQL refuses it, held by the tests above).
fn hostile_lead(id: &str, nul: bool) -> Lead {
    let nasty = format!("O'Brien\"; DROP TABLE leads; -- \\' $1 ?1 %s{}", if nul { "\u{0}" } else { "" });
    let big = |text: &str| format!("{text}{}", "'\\;-".repeat(1 << 18));
    let mut lead = sample_lead(id);
    lead.name = big(&nasty);
    lead.email = big("o'brien;--@example.com");
    lead.message = big(&format!("'); DELETE FROM leads WHERE ('1'='1\\{nasty}"));
    lead.extra.insert("x'); DROP TABLE leads; --".into(), Json::String(big("'")));
    lead.extra.insert("note".into(), Json::String(nasty));
    lead
}

/// The leads the table holds, as the worker wrote them: (external_id, name, email, message, extra).
type Row = (String, String, String, String, serde_json::Value);

fn as_row(lead: &Lead) -> Row {
    let extra = serde_json::from_str(&Json::Object(lead.extra.clone()).to_text()).unwrap();
    (lead.external_id.clone(), lead.name.clone(), lead.email.clone(), lead.message.clone(), extra)
}

#[tokio::test]
async fn sql_metacharacters_and_a_megabyte_value_are_stored_as_typed_postgres() {
    let (postgres, sink) = counted_postgres().await;
    let leads = [
        sample_lead("sub_a_before"),
        hostile_lead("sub_b'; DROP TABLE leads; -- \\ $1 ?1", false),
        sample_lead("sub_c"),
    ];
    let items: Vec<BatchItem<'_>> = leads.iter().map(|lead| BatchItem { lead, receipt_key: "k" }).collect();
    assert_eq!(sink.upsert_batch(&items, None).await, [Ok(()), Ok(()), Ok(())]);
    assert_eq!(sink.upsert(&leads[1], "k").await, Ok(()), "a replay of it updates its row");
    let query = "SELECT external_id, name, email, message, extra::text FROM leads ORDER BY 1";
    let rows = client(&postgres).await.query(query, &[]).await.unwrap();
    let extra = |r: &tokio_postgres::Row| serde_json::from_str(r.get(4)).unwrap();
    let rows: Vec<Row> = rows.iter().map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), extra(r))).collect();
    assert_eq!(rows, leads.iter().map(as_row).collect::<Vec<_>>());
    assert_eq!(counted(&postgres).await.0, 2, "the table and its trigger are still there");
}

#[tokio::test]
async fn sql_metacharacters_a_nul_and_a_megabyte_value_are_stored_as_typed_sqlite() {
    let dir = TempDir::new("metacharacters");
    let path = dir.0.join("leads.db").display().to_string();
    let sink = Sink::connect(&SinkConfig::Sqlite { path: path.clone() }).await.unwrap();
    let leads = [
        sample_lead("sub_a_before"),
        hostile_lead("sub_b'; DROP TABLE leads; -- \\ $1 ?1", true),
        sample_lead("sub_c"),
    ];
    let items: Vec<BatchItem<'_>> = leads.iter().map(|lead| BatchItem { lead, receipt_key: "k" }).collect();
    assert_eq!(sink.upsert_batch(&items, None).await, [Ok(()), Ok(()), Ok(())]);
    assert_eq!(sink.upsert(&leads[1], "k").await, Ok(()), "a replay of it updates its row");
    let connection = rusqlite::Connection::open(&path).unwrap();
    let mut statement =
        connection.prepare("SELECT external_id, name, email, message, extra FROM leads ORDER BY 1").unwrap();
    let rows: Vec<Row> = statement
        .query_map([], |r| {
            let extra: String = r.get(4)?;
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, serde_json::from_str(&extra).unwrap()))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(rows, leads.iter().map(as_row).collect::<Vec<_>>());
    let counts: Vec<i64> = connection
        .prepare("SELECT upsert_count FROM leads ORDER BY external_id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(counts, [1, 2, 1]);
}
