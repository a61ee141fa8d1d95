//! `stream-worker`: the Lambda function (no arguments; the reconcile function when Lambda's
//! `_HANDLER` is `reconcile`), `poll` for local runs, and the operator's commands
//! (`reconcile`, `receipts list|show|redrive`, `console`, `profiles`). `stream-worker --help` says how.

// The handler's batch futures nest deeper than the default limit of trait queries allows.
#![recursion_limit = "256"]

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::time::Instant;

use anyhow::{anyhow, bail};
use aws_lambda_events::event::dynamodb::Event;
use lambda_runtime::{service_fn, LambdaEvent};
use shared::receipt::ReceiptStatus;
use stream_worker::cli::{self, Command, RedriveTarget};
use stream_worker::config::Config;
use stream_worker::console::Access;
use stream_worker::handler::Handler;
use stream_worker::inventory::OperateError;
use stream_worker::listing::View;
use stream_worker::metrics::now_millis;
use stream_worker::operate;
use stream_worker::poll::Poller;
use stream_worker::receipts::DynamoReceipts;
use stream_worker::sink::Sink;

/// How old a receipt must be before the scheduled reconcile takes it, unless
/// `RECONCILE_OLDER_THAN` says otherwise: past the event source mapping's maximum record age
/// (1 h in `template.yaml`), so reconcile never takes a receipt the stream still retries.
const RECONCILE_OLDER_THAN: &str = "2h";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `--help` prints and exits 0; a mistake prints what is wrong and the usage, and exits 2.
    let command = cli::parse(&args).unwrap_or_else(|error| error.exit());
    if let Command::Profiles { example } = &command {
        let example = example.as_ref().map(|(id, answer)| (id.as_str(), answer.as_str()));
        print_out(serde_json::to_string_pretty(&stream_worker::profiles::describe(example))? + "\n");
        return Ok(());
    }
    // Every DynamoDB call ends within its timeout, so a record's time can be budgeted.
    let timeouts = aws_config::timeout::TimeoutConfig::builder()
        .operation_timeout(stream_worker::sink::DYNAMODB_OPERATION_TIMEOUT)
        .build();
    let aws = aws_config::defaults(aws_config::BehaviorVersion::latest()).timeout_config(timeouts).load().await;
    let dynamodb = aws_sdk_dynamodb::Client::new(&aws);

    // Reading receipts needs only the table; everything else also needs the sink.
    if let Command::List { .. } | Command::Show { as_lead: false, .. } | Command::Console { read_only: true, .. } =
        command
    {
        let table = std::env::var("RECEIPTS_TABLE").ok().filter(|t| !t.trim().is_empty());
        let table = table.ok_or_else(|| anyhow!("RECEIPTS_TABLE: expected the receipts table's name"))?;
        let receipts = DynamoReceipts::new(dynamodb, table.trim());
        if let Command::Console { port, .. } = command {
            return stream_worker::console::serve(Access::ReadOnly(receipts), port, shutdown()).await;
        }
        return inspect(command, &receipts).await;
    }
    let secrets = match std::env::var(stream_worker::secrets::SINK_SECRET_ARN).ok().filter(|a| !a.is_empty()) {
        Some(arn) => stream_worker::secrets::fetch(&aws, &arn).await?,
        None => BTreeMap::new(),
    };
    // Fail fast, before taking any work, with an error that names the variable.
    let config = Config::load(|name| secrets.get(name).cloned().or_else(|| std::env::var(name).ok()))?;
    let lambda = command == Command::Lambda;
    if lambda && matches!(config.sink, stream_worker::config::SinkConfig::Sqlite { .. }) {
        // A SQLite file in Lambda lives in one execution environment's /tmp: every other
        // environment, and the next cold start, would write leads somewhere else.
        bail!("LEAD_SINK must not be sqlite:// in Lambda mode: use PostgreSQL, a CRM or an https:// URL");
    }
    let mapping = stream_worker::mapping::load(|name| secrets.get(name).cloned().or_else(|| std::env::var(name).ok()))?;
    stream_worker::mapping::check_forms(&mapping, &config.mapping)?;
    let sink = Sink::connect(&config.sink).await?.with_mapping(mapping)?;
    if command == Command::MappingCheck {
        use stream_worker::sink::CheckError;
        let lines = sink.mapping_lines().await.map_err(|e| match e {
            CheckError::Wrong(text) | CheckError::Unreachable(text) | CheckError::Doubtful(text) => anyhow!(text),
        })?;
        print_out(lines.iter().map(|l| format!("{l}\n")).collect());
        return Ok(());
    }
    check_sink(&sink).await?;
    // After the start-up check, so the preview writes what the worker would (its Phone).
    if let Command::Show { profile, submission_id, as_lead: true, .. } = &command {
        let item =
            DynamoReceipts::new(dynamodb, &config.table).find(&profile.key(submission_id), submission_id).await?;
        let shown = operate::as_lead(&item, &config.mapping, &sink).await.map_err(|why| anyhow!(why))?;
        print_out(serde_json::to_string_pretty(&shown)? + "\n");
        return Ok(());
    }
    let handler = Handler {
        backoff: Default::default(),
        sink,
        receipts: DynamoReceipts::new(dynamodb.clone(), &config.table),
        mapping: config.mapping.clone(),
    };

    match command {
        Command::Lambda if std::env::var("_HANDLER").is_ok_and(|h| h == "reconcile") => {
            reconcile_function(&handler).await
        }
        Command::Lambda => stream_function(&handler, &config.table).await,
        Command::Poll => {
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
            poller.run(&handler, Duration::from_millis(250), shutdown()).await
        }
        Command::Reconcile { older_than, scan, json } => {
            let cutoff = shared::time::iso8601_millis(now_millis().saturating_sub(older_than.as_millis() as u64));
            let now_secs = now_millis() / 1000;
            let report = operate::reconcile(&handler, &cutoff, scan, None, now_secs, progress("reconcile")).await?;
            print_out(if json { format!("{}\n", report.to_json()) } else { report.to_text() });
            match report.failed_count_error {
                // A new index DynamoDB is still filling: the count comes with a later run.
                None | Some(OperateError::IndexBuilding { .. }) => Ok(()),
                Some(error) => Err(error.into()),
            }
        }
        Command::Redrive { target, wait, force, json } => {
            let only_failed = matches!(target, RedriveTarget::AllFailed);
            let keys = match target {
                RedriveTarget::One(profile, id) => vec![profile.key(&id)],
                RedriveTarget::AllFailed => {
                    let failed = handler.receipts.list(View::Indexed(ReceiptStatus::Failed), None).await?;
                    failed.iter().filter_map(|i| i.get("pk").and_then(|v| v.as_s()).map(str::to_owned)).collect()
                }
            };
            let mode = operate::RedriveMode { only_failed, force, wait };
            let results = operate::redrive(&handler, &keys, mode, progress("redrive")).await?;
            let text = if json {
                format!("{}\n", serde_json::Value::Array(results.iter().map(operate::Redriven::to_json).collect()))
            } else {
                let mut text: String = results
                    .iter()
                    .map(|r| {
                        format!(
                            "{} {}  {} -> {}{}\n",
                            r.profile,
                            r.submission_id.escape_debug(),
                            r.was,
                            r.outcome,
                            reason(r.reason.as_deref())
                        )
                    })
                    .collect();
                text.push_str(&format!("{} receipt(s) redriven\n", results.len()));
                text
            };
            print_out(text);
            Ok(())
        }
        Command::Console { port, wait, .. } => {
            stream_worker::console::serve(Access::Redrive { handler: Box::new(handler), wait }, port, shutdown()).await
        }
        Command::List { .. } | Command::Show { .. } | Command::Profiles { .. } | Command::MappingCheck => {
            unreachable!("handled above")
        }
    }
}

/// `receipts list` and `receipts show`.
async fn inspect(command: Command, receipts: &DynamoReceipts) -> anyhow::Result<()> {
    let text = match command {
        Command::List { status, all, since, json } => {
            let since = since.map(|s| s.cutoff(now_millis()));
            let items = receipts.list(View::of(status, all), since.as_deref()).await?;
            if json {
                format!("{}\n", operate::list_json(&items))
            } else {
                operate::list_table(&items)
            }
        }
        Command::Show { profile, submission_id, payload, json, .. } => {
            let item = receipts.find(&profile.key(&submission_id), &submission_id).await?;
            let shown = operate::describe(&item, payload);
            if json {
                format!("{shown}\n")
            } else {
                operate::describe_text(&shown)
            }
        }
        _ => unreachable!("only list and show read without a sink"),
    };
    print_out(text);
    Ok(())
}

/// A misconfigured sink would fail every lead: refuse to start, saying what to fix. A sink
/// that cannot be asked right now (or not within Lambda's init time) is no reason to stop
/// ([`stream_worker::sink::start_verdict`] decides).
async fn check_sink(sink: &Sink) -> anyhow::Result<()> {
    use stream_worker::sink::{start_verdict, START_CHECK_LIMIT};
    let check = tokio::time::timeout(START_CHECK_LIMIT, sink.check_configuration()).await.ok();
    match start_verdict(check) {
        Ok(None) => Ok(()),
        Ok(Some(line)) => {
            eprintln!("stream-worker: {line}");
            Ok(())
        }
        Err(problem) => bail!(problem),
    }
}

/// The function behind the stream's event source mapping.
async fn stream_function(handler: &Handler<Sink, DynamoReceipts>, table: &str) -> anyhow::Result<()> {
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
    .map_err(|e| anyhow!(e))
}

/// The function the schedule invokes: one reconcile run within the invocation's time, its
/// metrics as EMF lines, its report as the result.
async fn reconcile_function(handler: &Handler<Sink, DynamoReceipts>) -> anyhow::Result<()> {
    let age = std::env::var("RECONCILE_OLDER_THAN").unwrap_or_else(|_| RECONCILE_OLDER_THAN.into());
    let older_than = cli::age(&age).map_err(|why| anyhow!("RECONCILE_OLDER_THAN: {why}"))?;
    cli::reconcile_age(older_than).map_err(|why| anyhow!("RECONCILE_OLDER_THAN: {why}"))?;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<serde_json::Value>| async move {
        let deadline = instant_of(event.context.deadline);
        let now = now_millis();
        let cutoff = shared::time::iso8601_millis(now.saturating_sub(older_than.as_millis() as u64));
        // The index only: the function's role may not scan (`reconcile --scan` is an operator's run).
        let report =
            operate::reconcile(handler, &cutoff, false, Some(deadline), now / 1000, |_, _| {}).await.map_err(|e| {
                eprintln!("stream-worker: reconcile failed: {e}");
                lambda_runtime::Error::from(e.to_string())
            })?;
        print_out(report.emf_lines(now).iter().map(|l| format!("{l}\n")).collect());
        // Its metrics are written; a count that failed for another reason than a new index still
        // being filled is the run's error (ReconcileErrorsAlarm), so it is not missed.
        match &report.failed_count_error {
            Some(building @ OperateError::IndexBuilding { .. }) => {
                eprintln!("stream-worker: FAILED receipts not counted this run: {building}");
            }
            Some(error) => {
                eprintln!("stream-worker: reconcile could not count the FAILED receipts: {error}");
                return Err(lambda_runtime::Error::from(error.to_string()));
            }
            None => {}
        }
        Ok::<_, lambda_runtime::Error>(report.to_json())
    }))
    .await
    .map_err(|e| anyhow!(e))
}

/// Progress on stderr for long runs ([`operate::progress_line`]).
fn progress(what: &'static str) -> impl FnMut(usize, usize) {
    move |done, total| {
        if let Some(line) = operate::progress_line(what, done, total) {
            eprintln!("{line}");
        }
    }
}

fn reason(reason: Option<&str>) -> String {
    reason.map(|r| format!(" ({r})")).unwrap_or_default()
}

/// The command's result, on stdout.
#[allow(clippy::print_stdout)]
fn print_out(text: String) {
    print!("{text}");
}

/// Lambda gives the deadline in epoch milliseconds; the handler measures with `Instant`.
fn instant_of(deadline_ms: u64) -> Instant {
    let now_ms = now_millis();
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
