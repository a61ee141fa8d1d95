//! The stream worker's throughput against the store's own ceiling (`make bench`).
//!
//! Receipts are written to a real DynamoDB-compatible store (ministack, SigV4 checked) as the
//! edge writes them; the handler then turns them into leads (SQLite, PostgreSQL) and marks them
//! completed, fed as Lambda feeds it: batches of 1, 10 and 100 stream records. Beside it, in
//! the same run, the store's ceiling: the same number of conditional `UpdateItem`s (the
//! receipt update the handler makes) from a minimal client at the same concurrency, and the
//! handler one record at a time. The ceiling and the SQL runs are interleaved in rounds and
//! each figure is the median of its rounds, so a slow minute of a shared machine lands on all
//! of them alike. Writes JSON to `BENCH_STREAM_OUT`; `BENCH_QUICK=1` runs fewer records and one
//! round. Every server runs on 127.0.0.1 and is stopped when the bench ends.

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::future::Future;
use std::time::{Duration, Instant};

use aws_lambda_events::event::dynamodb::Event;
use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::{json, Value};
use shared::dynamo::item_to_wire;
use shared::lead::Lead;
use shared::receipt::PENDING_SHARD;
use stream_worker::config::SinkConfig;
use stream_worker::handler::{Handler, MAX_CONCURRENT_RECORDS};
use stream_worker::sink::postgres::PostgresTarget;
use stream_worker::sink::{LeadSink, Sink, SinkError};
use tests::aws::{put_item, receipt};
use tests::crm::{HubSpotStandIn, SalesforceStandIn};
use tests::postgres::Postgres;
use tests::worker::{sqlite_leads, World, TABLE};
use tests::{delivery, now_millis};

/// CPU time of this process so far (user + system), from /proc.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // Fields after the command name (which may hold spaces): utime is the 14th field overall.
    let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // Linux reports these in clock ticks of 1/100 s (USER_HZ).
    Duration::from_millis(ticks * 10)
}

/// Writes a receipt for each ID as the edge would (setup, not timed); returns the stream
/// records Lambda would deliver for them.
fn receipts(world: &World, ids: &[String]) -> Vec<Value> {
    ids.iter()
        .enumerate()
        .map(|(i, id)| {
            let receipt = receipt(&delivery::body(id, delivery::VISITOR_MESSAGE, 1_796_019_713), now_millis());
            let item = receipt.to_item();
            put_item(&world.store, TABLE, &item);
            let image: Value = serde_json::from_str(&item_to_wire(&item).to_text()).unwrap();
            json!({
                "eventID": format!("e{i}"),
                "eventName": "INSERT",
                "eventVersion": "1.1",
                "eventSource": "aws:dynamodb",
                "awsRegion": "us-east-1",
                "eventSourceARN": format!("arn:aws:dynamodb:us-east-1:000000000000:table/{TABLE}/stream/2026-11-30T00:00:00.000"),
                "dynamodb": {
                    "Keys": {"pk": {"S": receipt.key}},
                    "SequenceNumber": format!("{:021}", i + 1),
                    "SizeBytes": 512,
                    "StreamViewType": "NEW_AND_OLD_IMAGES",
                    "NewImage": image,
                },
            })
        })
        .collect()
}

/// A sink that takes one record at a time: the handler as it was before records of different
/// submissions ran concurrently (the "one-at-a-time loop").
struct OneAtATime<S>(S);

impl<S: LeadSink + Sync> LeadSink for OneAtATime<S> {
    fn upsert(&self, lead: &Lead, receipt_key: &str) -> impl Future<Output = Result<(), SinkError>> + Send {
        self.0.upsert(lead, receipt_key)
    }

    fn record_budget(&self) -> Duration {
        self.0.record_budget()
    }

    fn concurrency(&self) -> usize {
        1
    }
}

/// Feeds `records` to the handler in batches of `batch`; records/s and CPU µs per record.
async fn run<S: LeadSink + Sync>(world: &World, sink: S, records: Vec<Value>, batch: usize) -> (f64, f64) {
    let handler =
        Handler { backoff: Default::default(), mapping: Default::default(), sink, receipts: world.receipts() };
    let count = records.len();
    let events: Vec<Event> =
        records.chunks(batch).map(|chunk| serde_json::from_value(json!({ "Records": chunk })).unwrap()).collect();
    let (started, cpu) = (Instant::now(), cpu_time());
    for event in events {
        let (response, _) = handler.handle_counted(event, None).await;
        assert!(response.batch_item_failures.is_empty(), "a record failed: {response:?}");
    }
    let (elapsed, spent) = (started.elapsed(), cpu_time() - cpu);
    (count as f64 / elapsed.as_secs_f64(), spent.as_secs_f64() * 1e6 / count as f64)
}

/// The store's ceiling: `ids`' receipts updated as the handler updates them (conditional
/// `UpdateItem`), `concurrency` at a time, from a bare SDK client. Updates/s.
async fn ceiling(world: &World, ids: &[String], concurrency: usize) -> (f64, f64) {
    let client = aws_sdk_dynamodb::Client::new(&world.config);
    let keys: Vec<(String, String)> = ids
        .iter()
        .map(|id| {
            let item = world.store.get(TABLE, &delivery::key(id)).unwrap();
            (delivery::key(id), item["receivedAt"]["S"].as_str().unwrap().to_owned())
        })
        .collect();
    let next = std::sync::Arc::new(std::sync::Mutex::new(keys.into_iter()));
    let (started, cpu) = (Instant::now(), cpu_time());
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..concurrency {
        let (client, next) = (client.clone(), std::sync::Arc::clone(&next));
        workers.spawn(async move {
            loop {
                let Some((key, received_at)) = next.lock().unwrap().next() else { return };
                client
                    .update_item()
                    .table_name(TABLE)
                    .key("pk", AttributeValue::S(key))
                    .update_expression(format!("SET #status = :completed, completedAt = :now REMOVE {PENDING_SHARD}"))
                    .condition_expression("attribute_exists(pk) AND receivedAt = :receivedAt AND #status = :received")
                    .expression_attribute_names("#status", "status")
                    .expression_attribute_values(":completed", AttributeValue::S("COMPLETED".into()))
                    .expression_attribute_values(":received", AttributeValue::S("RECEIVED".into()))
                    .expression_attribute_values(":receivedAt", AttributeValue::S(received_at))
                    .expression_attribute_values(":now", AttributeValue::S("2026-11-30T00:00:00.000Z".into()))
                    .send()
                    .await
                    .unwrap();
            }
        });
    }
    workers.join_all().await;
    let spent = cpu_time() - cpu;
    (ids.len() as f64 / started.elapsed().as_secs_f64(), spent.as_secs_f64() * 1e6 / ids.len() as f64)
}

fn ids(prefix: &str, count: usize) -> Vec<String> {
    (0..count).map(|i| format!("{prefix}-{i:05}")).collect()
}

/// How many of `ids`' receipts are `COMPLETED` (read one by one, consistently).
fn completed(world: &World, ids: &[String]) -> usize {
    ids.iter().filter(|id| world.status(id).is_some_and(|(status, _)| status == "COMPLETED")).count()
}

/// The CRM sinks against their stand-ins with the documented limits on (HubSpot: 100 requests
/// per rolling 10 s, 429 beyond; Salesforce: the daily API allocation, counted), before (one
/// lead per call, as the sinks were: [`OneAtATime`]) and after (batches): leads/s, API calls
/// per lead, 429s answered, and duplicates (CRM records beyond one per submission: must be 0).
/// The batch runs feed waiting receipts as Lambda does (stream batches of 100); the one-by-one
/// runs take fewer receipts, since at four calls a lead HubSpot's pacing (the day's 250,000
/// calls spread over 24 hours) holds them to about 0.7 leads/s.
async fn crm_runs(world: &World, quick: bool, holds: &mut bool) -> Vec<Value> {
    let (batched, one_by_one) = if quick { (200, 10) } else { (500, 20) };
    let mut rows = Vec::new();
    for (crm, mode, count) in [
        ("hubspot", "one-by-one", one_by_one),
        ("hubspot", "batched", batched),
        ("salesforce", "one-by-one", one_by_one),
        ("salesforce", "batched", batched),
    ] {
        let run_ids = ids(&format!("{crm}-{mode}"), count);
        let records = receipts(world, &run_ids);
        let hubspot = HubSpotStandIn::start("pat-bench", "static_forms_submission_id");
        let salesforce = SalesforceStandIn::start("sf-client", "sf-secret", "60.0", "Submission_Id__c");
        let config = match crm {
            "hubspot" => hubspot.sink_config(),
            _ => salesforce.sink_config(),
        };
        let sink = Sink::connect(&config).await.unwrap();
        let (per_s, cpu_us) = match mode {
            "one-by-one" => run(world, OneAtATime(sink), records, 100).await,
            _ => run(world, sink, records, 100).await,
        };
        let done = completed(world, &run_ids);
        let (calls, throttled, records_in_crm) = match crm {
            "hubspot" => {
                let state = hubspot.state.lock().unwrap();
                (state.requests as u64, state.throttled, state.tickets.len())
            }
            _ => {
                let state = salesforce.state.lock().unwrap();
                (state.api_used + state.issued as u64, 0, state.leads.len())
            }
        };
        let duplicates = records_in_crm.saturating_sub(count);
        *holds &= done == count && records_in_crm == count;
        let calls_per_lead = calls as f64 / count as f64;
        println!(
            "stream bench: {crm:10} {mode:10} {count:4} leads: {per_s:6.1} leads/s, {calls_per_lead:.3} calls/lead, {throttled} 429s, {duplicates} duplicates, {done}/{count} completed"
        );
        rows.push(json!({"sink": crm, "mode": mode, "leads": count, "leads_per_s": per_s, "cpu_us_per_record": cpu_us,
            "api_calls": calls, "calls_per_lead": calls_per_lead, "throttled_429": throttled,
            "duplicates": duplicates, "completed": done}));
    }
    rows
}

/// Rounds of the ceiling and the SQL runs (a quick run: one).
const ROUNDS: usize = 5;

/// The median of `values` (the lower middle of an even count).
fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut values: Vec<f64> = values.collect();
    values.sort_by(f64::total_cmp);
    values.get(values.len().saturating_sub(1) / 2).copied().unwrap_or(0.0)
}

/// The whole bench's time limit: past it, the process ends (its servers with it).
const TIME_LIMIT: Duration = Duration::from_secs(900);

#[tokio::main]
async fn main() {
    std::thread::spawn(|| {
        std::thread::sleep(TIME_LIMIT);
        println!("stream bench: over its {} s limit, stopping", TIME_LIMIT.as_secs());
        std::process::exit(2);
    });
    let quick = std::env::var("BENCH_QUICK").is_ok_and(|v| !v.is_empty());
    let count = if quick { 200 } else { 600 };
    let world = World::start("bench-stream").await;
    let postgres = Postgres::start();
    let postgres_target = PostgresTarget::parse(&postgres.url(), None).unwrap();
    let sqlite_path = world.sqlite_path();
    let mut holds = true;
    let mut leads_expected: std::collections::BTreeMap<&str, usize> = Default::default();
    println!("stream bench: {count} records per run, concurrency {MAX_CONCURRENT_RECORDS}");

    let serial_ids = ids("ceiling-serial", count);
    receipts(&world, &serial_ids);
    let (serial_ceiling_per_s, _) = ceiling(&world, &serial_ids, 1).await;
    let configs: Vec<(&str, &str, usize)> = [("sqlite", "concurrent"), ("postgres", "concurrent")]
        .into_iter()
        .flat_map(|(sink, mode)| [1, 10, 100].map(|batch| (sink, mode, batch)))
        .chain([("sqlite", "one-at-a-time", 100)])
        .collect();
    let mut ceilings = Vec::new();
    let mut measured: Vec<Vec<(f64, f64)>> = vec![Vec::new(); configs.len()];
    let rounds = if quick { 1 } else { ROUNDS };
    for round in 0..rounds {
        let ceiling_ids = ids(&format!("ceiling-{round}"), count);
        receipts(&world, &ceiling_ids);
        let (per_s, cpu_us) = ceiling(&world, &ceiling_ids, MAX_CONCURRENT_RECORDS).await;
        println!("stream bench: round {round}: store ceiling {per_s:.0} updates/s ({cpu_us:.0} µs CPU/update)");
        ceilings.push((per_s, cpu_us));
        for (config, figures) in configs.iter().zip(&mut measured) {
            let (sink_name, mode, batch) = *config;
            let run_ids = ids(&format!("{sink_name}-{mode}-{batch}-{round}"), count);
            let records = receipts(&world, &run_ids);
            let config = match sink_name {
                "sqlite" => SinkConfig::Sqlite { path: sqlite_path.clone() },
                _ => SinkConfig::Postgres { target: postgres_target.clone() },
            };
            let sink = Sink::connect(&config).await.unwrap();
            let (per_s, cpu_us) = if mode == "one-at-a-time" {
                run(&world, OneAtATime(sink), records, batch).await
            } else {
                run(&world, sink, records, batch).await
            };
            let done = completed(&world, &run_ids);
            holds &= done == count;
            *leads_expected.entry(sink_name).or_default() += count;
            println!(
                "stream bench: round {round}: {sink_name:8} {mode:13} batch {batch:3}: {per_s:6.0} records/s, {cpu_us:5.0} µs CPU/record, {done}/{count} completed ({:.0} % of the round's ceiling)",
                100.0 * per_s / ceilings[round].0
            );
            figures.push((per_s, cpu_us));
        }
    }
    let (ceiling_per_s, ceiling_cpu_us) = (median(ceilings.iter().map(|c| c.0)), median(ceilings.iter().map(|c| c.1)));
    println!(
        "stream bench: store ceiling {ceiling_per_s:.0} updates/s at {MAX_CONCURRENT_RECORDS} ({ceiling_cpu_us:.0} µs CPU/update), {serial_ceiling_per_s:.0} one at a time (medians of {rounds})"
    );
    let mut rows = Vec::new();
    for ((sink_name, mode, batch), figures) in configs.into_iter().zip(measured) {
        let (per_s, cpu_us) = (median(figures.iter().map(|f| f.0)), median(figures.iter().map(|f| f.1)));
        // Each round's run against that round's own ceiling (measured minutes apart, not an
        // hour), then the median of those shares: a slow minute of the shared machine counts
        // once, not against every run.
        let shares: Vec<f64> = figures.iter().zip(&ceilings).map(|(f, c)| f.0 / c.0).collect();
        let share = median(shares.iter().copied());
        println!(
            "stream bench: {sink_name:8} {mode:13} batch {batch:3}: {per_s:6.0} records/s, {cpu_us:5.0} µs CPU/record, {:.0} % of its round's ceiling (medians of {})",
            100.0 * share,
            figures.len()
        );
        let per_round: Vec<f64> = figures.iter().map(|f| f.0).collect();
        rows.push(json!({"sink": sink_name, "mode": mode, "batch": batch, "records_per_s": per_s,
            "share_of_ceiling": share, "shares": shares, "cpu_us_per_record": cpu_us, "completed": count,
            "records": count, "rounds": per_round}));
    }
    let crm_rows = crm_runs(&world, quick, &mut holds).await;
    let sqlite_leads = sqlite_leads(std::path::Path::new(&sqlite_path)).len();
    let (client, connection) = tokio_postgres::connect(&postgres.url(), tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let postgres_leads: i64 = client.query_one("SELECT count(*) FROM leads", &[]).await.unwrap().get(0);
    let expected_postgres = leads_expected.get("postgres").copied().unwrap_or(0);
    holds &= postgres_leads == expected_postgres as i64;
    let expected_sqlite = leads_expected.get("sqlite").copied().unwrap_or(0);
    holds &= sqlite_leads == expected_sqlite;
    let report = json!({
        "records_per_run": count,
        "concurrency": MAX_CONCURRENT_RECORDS,
        "store_ceiling_updates_per_s": ceiling_per_s,
        "store_ceiling_one_at_a_time_updates_per_s": serial_ceiling_per_s,
        "store_ceiling_cpu_us_per_update": ceiling_cpu_us,
        "store_ceiling_rounds": ceilings.iter().map(|c| c.0).collect::<Vec<f64>>(),
        "rounds": rounds,
        "runs": rows,
        "crm_runs": crm_rows,
        "sqlite_leads": sqlite_leads,
        "sqlite_leads_expected": expected_sqlite,
        "postgres_leads": postgres_leads,
        "postgres_leads_expected": expected_postgres,
        "holds": holds,
    });
    if let Ok(path) = std::env::var("BENCH_STREAM_OUT") {
        std::fs::write(path, serde_json::to_string_pretty(&report).unwrap()).unwrap();
    }
    drop(postgres);
    assert!(holds, "a receipt was not completed or a lead is missing: {report}");
}
