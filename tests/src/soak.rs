//! The soak: the whole path under load while faults run on a schedule, and the proof that
//! nothing was lost. `make soak` runs it large (tests/benches/soak.rs); the integration suite
//! runs it small (tests/soak_small/main.rs).
//!
//! Senders (threads, each a sender that retries until it gets a 2xx) deliver through the built
//! Worker, which writes through a fault proxy to the SigV4-checking store; the stream worker's
//! binary polls the stream and writes leads through a second fault proxy to a Standard Webhooks
//! receiver. Both proxies cycle through faults, each phase `phase` long. Afterwards: every 2xx
//! has its receipt, every receipt is completed, receipts == leads (distinct `webhook-id`s at
//! the sink) == distinct submissions, each submission's sink requests carry one
//! `Idempotency-Key` and one `webhook-id`, no submission was stored twice by the Worker or
//! answered 202 twice, and every process's memory was sampled across the run.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::delivery::{self, BEARER};
use crate::http::send;
use crate::ministack::Ministack;
use crate::proxy::{FaultProxy, Mode};
use crate::stack::{Stack, TABLE};
use crate::stub_http::WebhookStandIn;
use crate::worker::PollerProcess;

mod report;

pub use report::Report;

/// How big and how long.
#[derive(Clone, Debug)]
pub struct Params {
    /// Distinct submissions.
    pub submissions: usize,
    /// Share of submissions delivered twice; half of those copies race their original.
    pub duplicates: f64,
    /// Senders at once.
    pub concurrency: usize,
    /// How long each fault phase lasts.
    pub phase: Duration,
    /// The longest the deliveries may take before the run stops sending.
    pub send_limit: Duration,
    /// Afterwards, the longest the stream worker may go without completing another receipt.
    pub drain_limit: Duration,
    /// Run on `template.yaml` deployed to a whole local AWS ([`crate::stack::Deployed`]: its
    /// mapping invokes the stream function) instead of the store with the stream worker's
    /// binary polling it. The sink's faults are then latency only: the local AWS's mapping
    /// moves past the record a function reports failed and every later record of its batch
    /// (`docs/where-it-runs.md`), so a sink call given up would leave those receipts waiting
    /// for reconcile, not for a retry.
    pub deployed: bool,
}

impl Params {
    /// What `make test` runs: a few thousand deliveries, in well under a minute.
    pub fn small() -> Params {
        Params {
            submissions: 1_500,
            duplicates: 0.3,
            concurrency: 32,
            phase: Duration::from_millis(1_500),
            send_limit: Duration::from_secs(300),
            drain_limit: Duration::from_secs(60),
            deployed: false,
        }
    }

    /// [`Params::small`] on the deployed stack, smaller: the local AWS is one Python process
    /// serving the Worker, the mapping and the function's calls.
    pub fn small_deployed() -> Params {
        Params {
            submissions: 600,
            concurrency: 16,
            phase: Duration::from_millis(600),
            deployed: true,
            ..Params::small()
        }
    }

    /// What `make soak` runs: 20,000 deliveries in a few minutes (the issue's figure is
    /// deliveries, duplicates included: 15,385 submissions and 4,615 copies).
    pub fn full() -> Params {
        Params {
            submissions: 15_385,
            duplicates: 0.3,
            concurrency: 64,
            phase: Duration::from_secs(5),
            send_limit: Duration::from_secs(900),
            drain_limit: Duration::from_secs(120),
            deployed: false,
        }
    }
}

/// One fault a proxy can be in, with the name the report gives it.
struct Fault(&'static str, Mode);

fn store_faults() -> Vec<Fault> {
    let error = |kind: &str| format!(r#"{{"__type":"com.amazonaws.dynamodb.v20120810#{kind}","message":"soak"}}"#);
    vec![
        // A failing phase first, so even a short run meets faults.
        Fault("store refuses connections", Mode::Refuse),
        Fault("none", Mode::PassThrough),
        Fault("store latency 300 ms", Mode::Delay(Duration::from_millis(300))),
        Fault("none", Mode::PassThrough),
        Fault("store answer dropped after the write", Mode::DropResponse { times: usize::MAX }),
        Fault("none", Mode::PassThrough),
        Fault("store throttles", Mode::Answer(400, error("ThrottlingException"))),
        Fault("none", Mode::PassThrough),
        Fault("store 5xx burst", Mode::Answer(500, error("InternalServerError"))),
    ]
}

/// The sink's faults on the deployed stack: latency only (see [`Params::deployed`]).
fn deployed_sink_faults() -> Vec<Fault> {
    vec![Fault("sink latency 200 ms", Mode::Delay(Duration::from_millis(200))), Fault("none", Mode::PassThrough)]
}

fn sink_faults() -> Vec<Fault> {
    vec![
        Fault("sink rate-limits (429)", Mode::Answer(429, r#"{"error":"rate_limited"}"#.into())),
        Fault("none", Mode::PassThrough),
        Fault("none", Mode::PassThrough),
        Fault("sink answer dropped after the write", Mode::DropResponse { times: usize::MAX }),
        Fault("none", Mode::PassThrough),
        Fault("sink 503", Mode::Answer(503, r#"{"error":"unavailable"}"#.into())),
        Fault("sink latency 200 ms", Mode::Delay(Duration::from_millis(200))),
        Fault("sink refuses connections", Mode::Refuse),
    ]
}

/// One job for a sender: deliver this submission, with a second sender racing it when `race`.
#[derive(Clone)]
struct Job {
    id: String,
    race: bool,
}

/// Every attempt's outcome: (store fault at send time, status or `none`, submission ID).
type Attempts = Arc<Mutex<Vec<(&'static str, String, String)>>>;

/// Sends `id` until a 2xx, backing off on 5xx and on no answer; a 4xx ends it (it is never
/// right for these deliveries). Returns whether it was acknowledged, or why not.
fn deliver_until_acknowledged(
    url: &str,
    id: &str,
    fault: &Mutex<&'static str>,
    attempts: &Attempts,
    stop: &AtomicBool,
) -> Result<(), String> {
    let headers = [
        ("Content-Type".to_owned(), "application/json".to_owned()),
        ("Authorization".to_owned(), format!("Bearer {BEARER}")),
        ("Idempotency-Key".to_owned(), delivery::key(id)),
    ];
    let refs: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let body = delivery::body(id, delivery::VISITOR_MESSAGE, 1_796_000_000);
    let mut wait = Duration::from_millis(50);
    for _ in 0..60 {
        let active = *fault.lock().unwrap();
        let answer = send("POST", url, &refs, &body);
        let status = answer.as_ref().map_or_else(|| "none".to_owned(), |a| a.status.to_string());
        attempts.lock().unwrap().push((active, status.clone(), id.to_owned()));
        match answer.map(|a| a.status) {
            Some(200..=299) => return Ok(()),
            Some(status @ 400..=499) => return Err(format!("answered {status}")),
            _ if stop.load(Ordering::Relaxed) => return Err("the run's time ran out".into()),
            _ => {
                std::thread::sleep(wait);
                wait = (wait * 2).min(Duration::from_secs(1));
            }
        }
    }
    Err("60 attempts without a 2xx".into())
}

/// Resident memory of each of `roots` with all its descendants, in MiB, from one pass over /proc.
fn resident_mib(roots: &[u32]) -> Vec<f64> {
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    let mut rss: BTreeMap<u32, u64> = BTreeMap::new();
    for pid in
        std::fs::read_dir("/proc").into_iter().flatten().filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
    {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // After the command name (which may hold spaces): state, then the parent's PID.
        let parent = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
        children.entry(parent.unwrap_or(0)).or_default().push(pid);
        let kib = std::fs::read_to_string(format!("/proc/{pid}/status")).ok().and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        });
        rss.insert(pid, kib.unwrap_or(0));
    }
    roots
        .iter()
        .map(|&root| {
            let (mut tree, mut index) = (vec![root], 0);
            while index < tree.len() {
                tree.extend(children.get(&tree[index]).into_iter().flatten());
                index += 1;
            }
            tree.iter().map(|p| rss.get(p).copied().unwrap_or(0)).sum::<u64>() as f64 / 1024.0
        })
        .collect()
}

/// (first quarter's median, last quarter's median, max) of a series.
fn memory_summary(samples: &[f64]) -> (f64, f64, f64) {
    let median = |part: &[f64]| {
        let mut sorted = part.to_vec();
        sorted.sort_by(f64::total_cmp);
        sorted.get(sorted.len() / 2).copied().unwrap_or(0.0)
    };
    let quarter = (samples.len() / 4).max(1).min(samples.len());
    (
        median(&samples[..quarter]),
        median(&samples[samples.len() - quarter..]),
        samples.iter().copied().fold(0.0, f64::max),
    )
}

/// Every receipt's (submission ID, status), read page by page.
fn receipts(store: &Ministack) -> Vec<(String, String)> {
    let mut all = Vec::new();
    let mut start: Option<Value> = None;
    loop {
        let mut request = json!({"TableName": TABLE, "ConsistentRead": true,
            "ProjectionExpression": "submissionId, #s", "ExpressionAttributeNames": {"#s": "status"}});
        if let Some(key) = start.take() {
            request["ExclusiveStartKey"] = key;
        }
        let page = store.ok("DynamoDB_20120810.Scan", &request);
        for item in page["Items"].as_array().into_iter().flatten() {
            let text = |name: &str| item[name]["S"].as_str().unwrap_or_default().to_owned();
            all.push((text("submissionId"), text("status")));
        }
        match page.get("LastEvaluatedKey") {
            Some(key) if !key.is_null() => start = Some(key.clone()),
            _ => return all,
        }
    }
}

/// Runs the soak; `progress` is told what is happening.
pub fn run(params: &Params, mut progress: impl FnMut(&str)) -> Report {
    let started = Instant::now();
    let sink = WebhookStandIn::start();
    let sink_proxy = FaultProxy::start(sink.server.port);
    let sink_url = format!("{}/leads", sink_proxy.endpoint());
    let path = if params.deployed {
        let settings = json!({"LEAD_SINK": sink_url, "WEBHOOK_SINK_SECRET": delivery::signing_secret()});
        let bindings = [("STORE_TIMEOUT_MS", "2000".to_owned())];
        Path::Deployed(Box::new(crate::stack::Deployed::start_untailed(&settings, true, &bindings)))
    } else {
        let stack = Stack::builder("soak").through_proxy().start();
        let worker =
            PollerProcess::start(&stack.store, &stack.worker_key, &sink_url, &delivery::signing_secret(), &stack.dir.0);
        Path::Polled(Box::new(stack), Mutex::new(Some(worker)))
    };
    let (store, edge, store_proxy) = path.parts();

    // The plan: every submission once; a share twice, half of those racing the original and
    // half sent again later (a sender's retry after the fact).
    let ids: Vec<String> = (0..params.submissions).map(|i| format!("soak-{i:05}")).collect();
    let copies = (params.submissions as f64 * params.duplicates).round() as usize;
    let mut jobs: VecDeque<Job> = VecDeque::new();
    let mut later = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let copied = i * copies / params.submissions.max(1) != (i + 1) * copies / params.submissions.max(1);
        let race = copied && i % 2 == 0;
        jobs.push_back(Job { id: id.clone(), race });
        if copied && !race {
            later.push(Job { id: id.clone(), race: false });
        }
        // Each later copy goes out a little after its original.
        if i % 50 == 49 {
            jobs.extend(later.drain(..));
        }
    }
    jobs.extend(later);
    let deliveries = jobs.len() + jobs.iter().filter(|j| j.race).count();
    let params_text = format!(
        "{} submissions, {deliveries} deliveries ({:.0} % copies, half racing), {} senders; fault phases of {:.1} s; \
         {}",
        params.submissions,
        params.duplicates * 100.0,
        params.concurrency,
        params.phase.as_secs_f64(),
        if params.deployed {
            "template.yaml deployed to a local AWS, the Worker's store timeout 2 s, the deployed stream function (invoked by \
             the stack's mapping) into a Standard Webhooks receiver whose faults are latency only"
        } else {
            "the Worker's store timeout 1 s; the stream worker in poll mode into a Standard Webhooks receiver"
        }
    );
    progress(&params_text);

    // Faults: each proxy cycles through its list, the sink's half a phase behind.
    let stop = Arc::new(AtomicBool::new(false));
    let _stop_on_panic = RaiseOnDrop(Arc::clone(&stop));
    let store_fault: Arc<Mutex<&'static str>> = Arc::new(Mutex::new("none"));
    let sink_phases: Arc<Mutex<BTreeMap<String, usize>>> = Arc::default();
    let scheduler = {
        let (stop, store_fault, sink_phases) = (Arc::clone(&stop), Arc::clone(&store_fault), Arc::clone(&sink_phases));
        let (store_proxy_mode, sink_proxy_mode) = (store_proxy.mode_handle(), sink_proxy.mode_handle());
        let (phase, deployed) = (params.phase, params.deployed);
        std::thread::spawn(move || {
            let (store_list, sink_list) =
                (store_faults(), if deployed { deployed_sink_faults() } else { sink_faults() });
            let mut step = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let Fault(name, mode) = &store_list[step % store_list.len()];
                *store_fault.lock().unwrap() = name;
                *store_proxy_mode.lock().unwrap() = mode.clone();
                std::thread::sleep(phase / 2);
                let Fault(sink_name, sink_mode) = &sink_list[step % sink_list.len()];
                *sink_phases.lock().unwrap().entry((*sink_name).to_owned()).or_default() += 1;
                *sink_proxy_mode.lock().unwrap() = sink_mode.clone();
                std::thread::sleep(phase / 2);
                step += 1;
            }
            *store_proxy_mode.lock().unwrap() = Mode::PassThrough;
            *sink_proxy_mode.lock().unwrap() = Mode::PassThrough;
        })
    };

    // Memory, sampled every half second until the end.
    let sampling = Arc::new(AtomicBool::new(true));
    let sampled = Arc::new(AtomicBool::new(false));
    let _stop_sampling_on_panic = RaiseOnDrop(Arc::clone(&sampled));
    // The deployed stream function is a process per invocation: only the poller is sampled.
    let mut processes = vec![("workerd (edge)", edge.pid()), ("ministack (store)", store.pid())];
    processes.extend(path.worker_pid().map(|pid| ("stream worker", pid)));
    let sampler = {
        let (sampling, sampled) = (Arc::clone(&sampling), Arc::clone(&sampled));
        std::thread::spawn(move || {
            let mut samples: Vec<Vec<f64>> = vec![Vec::new(); processes.len()];
            let roots: Vec<u32> = processes.iter().map(|(_, pid)| *pid).collect();
            while sampling.load(Ordering::Relaxed) && !sampled.load(Ordering::Relaxed) {
                for (series, mib) in samples.iter_mut().zip(resident_mib(&roots)) {
                    series.push(mib);
                }
                std::thread::sleep(Duration::from_millis(500));
            }
            processes.iter().map(|(name, _)| (*name).to_owned()).zip(samples).collect::<Vec<_>>()
        })
    };

    // The senders.
    let url = format!("{}/webhooks/staticforms", edge.url);
    let queue = Arc::new(Mutex::new(jobs));
    let attempts: Attempts = Arc::default();
    let acknowledged: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let gave_up: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let send_started = Instant::now();
    let too_long = Arc::new(AtomicBool::new(false));
    std::thread::scope(|scope| {
        for _ in 0..params.concurrency {
            scope.spawn(|| loop {
                if send_started.elapsed() > params.send_limit {
                    too_long.store(true, Ordering::Relaxed);
                    let unsent: Vec<Job> = queue.lock().unwrap().drain(..).collect();
                    let why = || "not sent: the run's time ran out".to_owned();
                    gave_up.lock().unwrap().extend(unsent.into_iter().map(|job| (job.id, why())));
                    return;
                }
                let Some(job) = queue.lock().unwrap().pop_front() else { return };
                let result = std::thread::scope(|race| {
                    let copy = job.race.then(|| {
                        race.spawn(|| deliver_until_acknowledged(&url, &job.id, &store_fault, &attempts, &too_long))
                    });
                    let first = deliver_until_acknowledged(&url, &job.id, &store_fault, &attempts, &too_long);
                    let second = copy.map_or(Ok(()), |c| c.join().unwrap_or_else(|_| Err("sender panicked".into())));
                    first.and(second)
                });
                match result {
                    Ok(()) => {
                        let mut acknowledged = acknowledged.lock().unwrap();
                        // Each thousandth new submission is told once (a copy adds none).
                        if acknowledged.insert(job.id.clone()) && acknowledged.len().is_multiple_of(1000) {
                            progress_tick(acknowledged.len());
                        }
                    }
                    Err(why) => gave_up.lock().unwrap().push((job.id.clone(), why)),
                }
            });
        }
    });
    let send_seconds = send_started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let _ = scheduler.join();
    progress(&format!("sent in {send_seconds:.1} s; draining (faults off)"));

    // Drain: every receipt completed by the stream worker, given up only when it stops
    // making progress for `drain_limit`.
    let drain_started = Instant::now();
    let completed = |seen: &[(String, String)]| seen.iter().filter(|(_, status)| status == "COMPLETED").count();
    let mut seen = receipts(store);
    let (mut last_progress, mut best) = (Instant::now(), completed(&seen));
    let mut drain_seconds = None;
    while last_progress.elapsed() < params.drain_limit {
        if seen.len() >= params.submissions && completed(&seen) == seen.len() {
            drain_seconds = Some(drain_started.elapsed().as_secs_f64());
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
        seen = receipts(store);
        if completed(&seen) > best {
            (last_progress, best) = (Instant::now(), completed(&seen));
        }
    }
    sampling.store(false, Ordering::Relaxed);
    let memory = sampler.join().unwrap_or_default();
    path.stop_worker();

    // Exactly once, counted where it happens. At the sink, from its raw requests (refused
    // ones included): each submission's requests carry one `Idempotency-Key` and one
    // `webhook-id`, each naming that submission only; the receiver keeps one lead per
    // `webhook-id` (as a Standard Webhooks receiver deduplicates), with the same content on
    // every request that carried it.
    let (requests, accepted) = {
        let state = sink.state.lock().unwrap();
        (state.requests.clone(), state.accepted.clone())
    };
    let mut sink_identities = sink_identity_problems(&requests);
    let mut leads: BTreeMap<String, String> = BTreeMap::new();
    let mut conflicting = BTreeSet::new();
    for request in &accepted {
        let message_id = request.header("webhook-id").unwrap_or_default().to_owned();
        let text = String::from_utf8_lossy(&request.body).into_owned();
        if leads.get(&message_id).is_some_and(|before| *before != text) {
            conflicting.insert(message_id.clone());
        }
        leads.insert(message_id, text);
    }
    // On the deployed stack the sink loses no answer (its faults are latency only), so each
    // lead is one request: a second one would be the mapping or the function repeating it.
    if params.deployed && accepted.len() != leads.len() {
        sink_identities.push(format!("{} sink requests for {} leads", accepted.len(), leads.len()));
    }
    // At the edge, from the Worker's own lines: never two `stored` for one submission (none
    // is possible: when the store's answer is dropped after the write, the Worker never
    // learns it stored, and the sender's retry is a duplicate).
    let mut stored_lines: BTreeMap<String, usize> = BTreeMap::new();
    for line in edge.logs(0) {
        let record = line.find('{').and_then(|at| serde_json::from_str::<Value>(&line[at..]).ok());
        if let Some(record) = record.filter(|r| r["outcome"] == "stored") {
            *stored_lines.entry(record["submissionId"].as_str().unwrap_or_default().to_owned()).or_default() += 1;
        }
    }
    let stored_twice: Vec<String> = stored_lines.iter().filter(|(_, n)| **n > 1).map(|(id, _)| id.clone()).collect();

    let stored: BTreeSet<&str> = seen.iter().map(|(id, _)| id.as_str()).collect();
    let acknowledged = acknowledged.lock().unwrap().clone();
    let attempts = attempts.lock().unwrap().clone();
    let mut by_status: BTreeMap<String, usize> = BTreeMap::new();
    let mut by_fault: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    let mut created: BTreeMap<&str, usize> = BTreeMap::new();
    for (fault, status, id) in &attempts {
        *by_status.entry(status.clone()).or_default() += 1;
        *by_fault.entry((*fault).to_owned()).or_default().entry(status.clone()).or_default() += 1;
        if status == "202" {
            *created.entry(id.as_str()).or_default() += 1;
        }
    }
    // At the senders: never two 202s for one submission (none is possible: a 202 whose answer
    // was dropped reaches its sender as a later 200).
    let created_twice: Vec<String> = created.iter().filter(|(_, n)| **n > 1).map(|(id, _)| (*id).to_owned()).collect();
    let report = Report {
        params_text,
        by_status,
        by_fault,
        sink_phases: sink_phases.lock().unwrap().clone(),
        submissions: params.submissions,
        deliveries,
        acknowledged: acknowledged.len(),
        gave_up: gave_up.lock().unwrap().clone(),
        receipts: seen.len(),
        completed: seen.iter().filter(|(_, status)| status == "COMPLETED").count(),
        lost: acknowledged.iter().filter(|id| !stored.contains(id.as_str())).cloned().collect(),
        leads: leads.len(),
        sink_requests: accepted.len(),
        conflicting_leads: conflicting.into_iter().collect(),
        sink_identities,
        stored_twice,
        created_twice,
        send_seconds,
        drain_seconds,
        memory: memory.into_iter().map(|(name, series)| (name, memory_summary(&series))).collect(),
    };
    progress(&format!("done in {:.1} s", started.elapsed().as_secs_f64()));
    report
}

/// Where the soak runs: the store with the stream worker's binary polling it, or the deployed
/// stack (each boxed: they are large).
enum Path {
    Polled(Box<Stack>, Mutex<Option<PollerProcess>>),
    Deployed(Box<crate::stack::Deployed>),
}

impl Path {
    /// The store (or the whole local AWS), the Worker, and the fault proxy between them.
    fn parts(&self) -> (&Ministack, &crate::edge::Edge, &FaultProxy) {
        match self {
            Path::Polled(stack, _) => (&stack.store, &stack.edge, stack.proxy()),
            Path::Deployed(deployed) => {
                (&deployed.aws, &deployed.edge, deployed.store_proxy.as_ref().expect("started through a proxy"))
            }
        }
    }

    fn worker_pid(&self) -> Option<u32> {
        match self {
            Path::Polled(_, worker) => worker.lock().unwrap().as_ref().map(PollerProcess::pid),
            Path::Deployed(_) => None,
        }
    }

    /// Stops the poller, so the sink's requests are all in (the deployed function has none).
    fn stop_worker(&self) {
        if let Path::Polled(_, worker) = self {
            drop(worker.lock().unwrap().take());
        }
    }
}

/// What breaks "one submission, one identity" in the sink's raw requests: a submission whose
/// requests carry more than one `Idempotency-Key` or `webhook-id`, a `webhook-id` or key
/// shared by two submissions, a key that is not the submission's receipt key, or a
/// `webhook-signature` the reference library (with the sink's secret) does not make for that
/// request (the time left out: the run outlasts the library's five-minute window).
fn sink_identity_problems(requests: &[crate::stub_http::StubRequest]) -> Vec<String> {
    let signer = standardwebhooks::Webhook::new(&delivery::signing_secret()).expect("the sink's secret is whsec_");
    let mut keys: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut message_ids: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut by_message_id: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut problems = Vec::new();
    for request in requests {
        let lead: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let id = lead["externalId"].as_str().unwrap_or_default().to_owned();
        let key = request.header("idempotency-key").unwrap_or_default().to_owned();
        let message_id = request.header("webhook-id").unwrap_or_default().to_owned();
        if key != delivery::key(&id) {
            problems.push(format!("{id}: Idempotency-Key {key:?}"));
        }
        let timestamp = request.header("webhook-timestamp").and_then(|t| t.parse::<i64>().ok()).unwrap_or_default();
        let made = signer.sign(&message_id, timestamp, &request.body).unwrap_or_default();
        if !request.header("webhook-signature").unwrap_or_default().split(' ').any(|s| s == made) {
            problems.push(format!("{id}: a webhook-signature that does not verify"));
        }
        keys.entry(id.clone()).or_default().insert(key);
        message_ids.entry(id.clone()).or_default().insert(message_id.clone());
        by_message_id.entry(message_id).or_default().insert(id);
    }
    for (id, seen) in keys.iter().chain(&message_ids).filter(|(_, seen)| seen.len() != 1) {
        problems.push(format!("{id}: {} identities {seen:?}", seen.len()));
    }
    for (message_id, ids) in by_message_id.iter().filter(|(_, ids)| ids.len() != 1) {
        problems.push(format!("webhook-id {message_id} names {ids:?}"));
    }
    problems.sort();
    problems.dedup();
    problems
}

/// Raises its flag when dropped: the threads that watch it stop even if the run panics.
struct RaiseOnDrop(Arc<AtomicBool>);

impl Drop for RaiseOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

fn progress_tick(done: usize) {
    eprintln!("soak: {done} submissions acknowledged");
}
