//! The stacks the suites run the path on, built in one place. [`Stack`]: the signature-checking
//! store with a receipts table and IAM keys at their production policies (the edge's `PutItem`
//! only, the stream worker's role), optionally a fault proxy between the Worker and the store,
//! the built Worker bound to it, and a private folder; the stream worker's side (poller,
//! handler, sink) is the caller's, as each suite drives it differently. [`Deployed`]:
//! `template.yaml` deployed to a whole local AWS by `scripts/deploy-aws.sh`, whose mapping runs
//! the stream function, and the Worker signing with a key of the stack's `EdgeUser`, tailed by
//! its Tail Worker signing with a key of the stack's `EdgeLogsUser`.

use std::collections::BTreeMap;
use std::process::Command;

use stream_worker::config::SinkConfig;
use stream_worker::handler::Handler;
use stream_worker::poll::Poller;
use stream_worker::receipts::DynamoReceipts;
use stream_worker::sink::Sink;

use crate::aws::sdk_config;
use crate::delivery::{self, BASIC_PASSWORD, BASIC_USER, BEARER, HEADER_NAME, HEADER_VALUE};
use crate::edge::{Edge, Producer};
use crate::ministack::{AccessKey, Ministack};
use crate::process::TempDir;
use crate::proxy::FaultProxy;
use crate::worker;

/// The receipts table every stack creates and its Worker writes.
pub const TABLE: &str = "receipts";

/// The Worker's bindings for a store at `endpoint` reached with `key`: the table, the region,
/// the key, a 1 s store deadline and the Static Forms bearer token [`BEARER`]. `extra` adds
/// bindings or replaces these, by name.
pub fn edge_bindings(endpoint: &str, key: &AccessKey, extra: &[(&'static str, String)]) -> Vec<(&'static str, String)> {
    let mut all: BTreeMap<&'static str, String> = BTreeMap::from([
        ("RECEIPTS_TABLE", TABLE.to_owned()),
        ("AWS_REGION", "us-east-1".to_owned()),
        ("DYNAMODB_ENDPOINT", endpoint.to_owned()),
        ("AWS_ACCESS_KEY_ID", key.id.clone()),
        ("AWS_SECRET_ACCESS_KEY", key.secret.clone()),
        ("STORE_TIMEOUT_MS", "1000".to_owned()),
        ("WEBHOOK_BEARER_TOKENS", BEARER.to_owned()),
    ]);
    all.extend(extra.iter().cloned());
    all.into_iter().collect()
}

/// The Tail Worker's bindings: put the edge's lines into `group`'s `stream` at the CloudWatch
/// Logs `endpoint`, signing with `key`.
pub fn tail_bindings(endpoint: &str, key: &AccessKey, group: &str, stream: &str) -> Vec<(&'static str, String)> {
    vec![
        ("AWS_ACCESS_KEY_ID", key.id.clone()),
        ("AWS_SECRET_ACCESS_KEY", key.secret.clone()),
        ("AWS_REGION", "us-east-1".to_owned()),
        ("EDGE_LOG_GROUP", group.to_owned()),
        ("EDGE_LOG_STREAM", stream.to_owned()),
        ("LOGS_ENDPOINT", endpoint.to_owned()),
    ]
}

/// Every other Static Forms method besides the bearer token: Basic, the custom header and
/// Standard Webhooks signatures, with the credentials of [`crate::delivery`].
pub fn every_static_forms_method() -> Vec<(&'static str, String)> {
    vec![
        ("WEBHOOK_BASIC_CREDENTIALS", format!("{BASIC_USER}:{BASIC_PASSWORD}")),
        ("WEBHOOK_HEADER_NAME", HEADER_NAME.into()),
        ("WEBHOOK_HEADER_VALUES", HEADER_VALUE.into()),
        ("WEBHOOK_SIGNING_SECRETS", delivery::signing_secret()),
    ]
}

/// What [`Stack::builder`] starts.
pub struct Builder {
    name: &'static str,
    proxied: bool,
    bindings: Vec<(&'static str, String)>,
}

impl Builder {
    /// The Worker reaches the store through a [`FaultProxy`] (passing everything until told
    /// otherwise).
    pub fn through_proxy(mut self) -> Builder {
        self.proxied = true;
        self
    }

    /// More Worker bindings, or others in place of [`edge_bindings`]'s, by name.
    pub fn bindings(mut self, extra: impl IntoIterator<Item = (&'static str, String)>) -> Builder {
        self.bindings.extend(extra);
        self
    }

    /// Starts the store, the table, the keys, the proxy if asked for, and the Worker.
    pub fn start(self) -> Stack {
        let store = Ministack::start();
        store.create_receipts_table(TABLE);
        let edge_key = store.edge_access_key("edge", TABLE);
        let worker_key = store.worker_access_key("worker", TABLE);
        let proxy = self.proxied.then(|| FaultProxy::start(store.port));
        let endpoint = proxy.as_ref().map_or_else(|| store.endpoint(), FaultProxy::endpoint);
        let edge = Edge::start(&edge_bindings(&endpoint, &edge_key, &self.bindings));
        Stack { store, edge_key, worker_key, store_proxy: proxy, edge, dir: TempDir::new(self.name), config: None }
    }

    /// [`Builder::start`], and the stream worker's SDK configuration ([`Stack::config`]).
    pub async fn start_with_worker(self) -> Stack {
        let mut stack = self.start();
        stack.config = Some(sdk_config(&stack.store, &stack.worker_key).await);
        stack
    }
}

/// A running stack; each part stops when it is dropped.
pub struct Stack {
    pub store: Ministack,
    /// The edge's key: `dynamodb:PutItem` on the table, as `template.yaml`'s `EdgeUser`.
    pub edge_key: AccessKey,
    /// The stream worker's key: `StreamWorkerRole`'s statements.
    pub worker_key: AccessKey,
    /// Between the Worker and the store, when built [`Builder::through_proxy`] ([`Stack::proxy`]).
    pub store_proxy: Option<FaultProxy>,
    pub edge: Edge,
    /// A private folder, named by the builder's `name`.
    pub dir: TempDir,
    config: Option<aws_config::SdkConfig>,
}

impl Stack {
    /// A stack to build; `name` names its private folder.
    pub fn builder(name: &'static str) -> Builder {
        Builder { name, proxied: false, bindings: Vec::new() }
    }

    /// The fault proxy between the Worker and the store; panics when built without one.
    pub fn proxy(&self) -> &FaultProxy {
        self.store_proxy.as_ref().expect("a stack built through_proxy()")
    }

    /// The SDK configuration the stream worker's side signs with ([`Stack::worker_key`]);
    /// panics when built without it ([`Builder::start_with_worker`]).
    pub fn config(&self) -> &aws_config::SdkConfig {
        self.config.as_ref().expect("a stack built start_with_worker()")
    }

    /// A poller keeping its checkpoint in the private folder.
    pub fn poller(&self) -> Poller {
        worker::poller(self.config(), TABLE, self.dir.0.join("checkpoint.json"))
    }

    /// The receipts, as the stream worker's side reads and marks them.
    pub fn receipts(&self) -> DynamoReceipts {
        worker::receipts(self.config(), TABLE)
    }

    /// The stream worker's handler writing to `leads.db` in the private folder.
    pub async fn sqlite_handler(&self) -> Handler<Sink, DynamoReceipts> {
        let path = self.dir.0.join("leads.db").display().to_string();
        Handler {
            backoff: Default::default(),
            mapping: Default::default(),
            sink: Sink::connect(&SinkConfig::Sqlite { path }).await.expect("a SQLite sink in the private folder"),
            receipts: self.receipts(),
        }
    }
}

/// `template.yaml` deployed to a whole local AWS (ministack, IAM evaluated) with
/// `scripts/deploy-aws.sh`'s local mode, the functions being the stream worker's binary the
/// suite tests, and the built Worker signing with a key of the stack's own `EdgeUser`
/// (`PutItem` on the table, nothing else).
pub struct Deployed {
    pub aws: Ministack,
    /// Between the Worker and the local AWS, when started with one.
    pub store_proxy: Option<FaultProxy>,
    pub edge: Edge,
}

impl Deployed {
    /// Deploys with `sink_settings` (a JSON object: `LEAD_SINK` and its variables) as the sink
    /// secret, then starts the Worker (through a fault proxy when `proxied`) with `extra`
    /// bindings besides [`edge_bindings`]'s, and the Worker's default store deadline (5 s: the
    /// whole local AWS answers slower than a store alone) unless `extra` names one.
    /// The Worker is tailed by its Tail Worker, signing with a key of the stack's
    /// `EdgeLogsUser`, into the stack's `EdgeLogGroup`.
    pub fn start(sink_settings: &serde_json::Value, proxied: bool, extra: &[(&'static str, String)]) -> Deployed {
        Deployed::start_with(sink_settings, proxied, extra, true)
    }

    /// [`Deployed::start`] without the Tail Worker (the soak measures the path, not the
    /// shipping of its log lines).
    pub fn start_untailed(
        sink_settings: &serde_json::Value,
        proxied: bool,
        extra: &[(&'static str, String)],
    ) -> Deployed {
        Deployed::start_with(sink_settings, proxied, extra, false)
    }

    fn start_with(
        sink_settings: &serde_json::Value,
        proxied: bool,
        extra: &[(&'static str, String)],
        tailed: bool,
    ) -> Deployed {
        let aws = Ministack::start_whole_aws();
        let secret = aws.create_secret("webhooks/sink", &sink_settings.to_string());
        deploy(&aws, &secret);
        let key = aws.access_key_of_user_named("EdgeUser");
        let store_proxy = proxied.then(|| FaultProxy::start(aws.port));
        let endpoint = store_proxy.as_ref().map_or_else(|| aws.endpoint(), FaultProxy::endpoint);
        let mut bindings = vec![("STORE_TIMEOUT_MS", "5000".to_owned())];
        bindings.extend(extra.iter().cloned());
        let edge_bindings = edge_bindings(&endpoint, &key, &bindings);
        let edge = if tailed {
            let outputs = aws.stack_outputs("webhooks");
            let logs_key = aws.access_key_of_user_named("EdgeLogsUser");
            let (group, stream) = (&outputs["EdgeLogGroupName"], &outputs["EdgeLogStreamName"]);
            Edge::start_tailed(
                Producer::Edge,
                &edge_bindings,
                &tail_bindings(&aws.endpoint(), &logs_key, group, stream),
            )
        } else {
            Edge::start(&edge_bindings)
        };
        Deployed { aws, store_proxy, edge }
    }
}

/// Deploys the stack with `scripts/deploy-aws.sh` (its local mode) to `aws`, the function being
/// the binary the suite tests and the sink's settings the secret `sink_secret_arn`.
pub fn deploy(aws: &Ministack, sink_secret_arn: &str) {
    let output = Command::new(crate::process::repo_root().join("scripts/deploy-aws.sh"))
        .current_dir(crate::process::repo_root())
        .env("AWS_ENDPOINT_URL", aws.endpoint())
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .env("SINK_SECRET_ARN", sink_secret_arn)
        .env("STACK_NAME", "webhooks")
        .env("TABLE_NAME", TABLE)
        .env("LAMBDA_BOOTSTRAP", crate::process::stream_worker_binary())
        .output()
        .expect("scripts/deploy-aws.sh runs");
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "the local deploy failed:\n{text}");
    assert!(text.contains("Successfully created/updated stack"), "{text}");
}
