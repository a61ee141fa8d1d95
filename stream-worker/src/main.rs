//! `stream-worker`: the Lambda function (no arguments), or `stream-worker poll` for local runs.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

use anyhow::bail;
use aws_lambda_events::event::dynamodb::Event;
use lambda_runtime::{service_fn, LambdaEvent};
use stream_worker::config::Config;
use stream_worker::handler::Handler;
use stream_worker::poll::Poller;
use stream_worker::receipts::DynamoReceipts;
use stream_worker::sink::Sink;

const USAGE: &str = "usage: stream-worker [poll]   (no argument: run as the Lambda function)";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let poll = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [] => false,
        ["poll"] => true,
        _ => bail!("{USAGE}"),
    };
    // Fail fast, before taking any work, with an error that names the variable.
    let config = Config::load(|name| std::env::var(name).ok())?;
    if !poll && matches!(config.sink, stream_worker::config::SinkConfig::Sqlite { .. }) {
        // A SQLite file in Lambda lives in one execution environment's /tmp: every other
        // environment, and the next cold start, would write leads somewhere else.
        bail!("LEAD_SINK must not be sqlite:// in Lambda mode: use PostgreSQL, a CRM or an https:// URL");
    }
    // Every DynamoDB call ends within its timeout, so a record's time can be budgeted.
    let timeouts = aws_config::timeout::TimeoutConfig::builder()
        .operation_timeout(stream_worker::sink::DYNAMODB_OPERATION_TIMEOUT)
        .build();
    let aws = aws_config::defaults(aws_config::BehaviorVersion::latest()).timeout_config(timeouts).load().await;
    let dynamodb = aws_sdk_dynamodb::Client::new(&aws);
    let sink = Sink::connect(&config.sink).await?;
    // A misconfigured sink would fail every lead: refuse to start, saying what to fix. A sink
    // that cannot be asked right now (or not within Lambda's init time) is no reason to stop.
    let check = tokio::time::timeout(Duration::from_secs(4), sink.check_configuration()).await;
    match check {
        Ok(Ok(())) => {}
        Ok(Err(stream_worker::sink::CheckError::Wrong(problem))) => {
            bail!("the lead sink's configuration cannot work: {problem}")
        }
        Ok(Err(stream_worker::sink::CheckError::Unreachable(why))) => {
            eprintln!("stream-worker: the lead sink's configuration could not be checked ({why}); starting anyway");
        }
        Err(_) => eprintln!("stream-worker: the lead sink's configuration check took too long; starting anyway"),
    }
    let handler = Handler { sink, receipts: DynamoReceipts::new(dynamodb.clone(), &config.table) };

    if poll {
        let poller = Poller {
            dynamodb,
            streams: aws_sdk_dynamodbstreams::Client::new(&aws),
            table: config.table.clone(),
            checkpoint: std::env::var("POLL_CHECKPOINT")
                .unwrap_or_else(|_| ".dev/stream-checkpoint.json".into())
                .into(),
            retry_pause: Duration::from_secs(1),
            iterators: Default::default(),
        };
        eprintln!("stream-worker: polling the stream of {}", config.table);
        return poller.run(&handler, Duration::from_millis(250), shutdown()).await;
    }

    let handler = &handler;
    let table = config.table.as_str();
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Event>| async move {
        let deadline = instant_of(event.context.deadline);
        // Records from another table's stream: the event source mapping is wrong. Fail the
        // invocation loudly (function errors alarm) rather than write leads from it.
        if let Some(arn) = event
            .payload
            .records
            .iter()
            .map(|r| r.event_source_arn.as_deref().unwrap_or(""))
            .find(|arn| !stream_worker::handler::is_stream_of(arn, table))
        {
            eprintln!("stream-worker: a record from {arn:?} is not from the stream of RECEIPTS_TABLE");
            return Err(lambda_runtime::Error::from("records from another table's stream"));
        }
        Ok::<_, lambda_runtime::Error>(handler.handle(event.payload, Some(deadline)).await)
    }))
    .await
    .map_err(|e| anyhow::anyhow!(e))
}

/// Lambda gives the deadline in epoch milliseconds; the handler measures with `Instant`.
fn instant_of(deadline_ms: u64) -> Instant {
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    Instant::now() + Duration::from_millis(deadline_ms.saturating_sub(now_ms))
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
    }
}
