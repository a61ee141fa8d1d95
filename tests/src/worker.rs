//! The stream worker as the tests drive it: a poller on a test's store, passes until quiet,
//! a crash between the upsert and the receipt update, and the SQLite leads it wrote.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use stream_worker::handler::Handler;
use stream_worker::poll::{Pass, Poller};
use stream_worker::receipts::{DynamoReceipts, Mark, Marked, ReceiptStore, ReceiptStoreError};
use stream_worker::sink::LeadSink;

use crate::aws::{put_item, receipt, sdk_config};
use crate::delivery;
use crate::ministack::Ministack;
use crate::process::{now_millis, TempDir};

/// The receipts table a [`World`] creates.
pub const TABLE: &str = "receipts";

/// A store with a receipts table, SDK clients signing with an IAM key, and a private folder:
/// where the stream worker's tests run.
pub struct World {
    pub store: Ministack,
    pub config: aws_config::SdkConfig,
    pub dir: TempDir,
}

impl World {
    /// A new store and table; `name` names the private folder.
    pub async fn start(name: &str) -> World {
        let store = Ministack::start();
        store.create_receipts_table(TABLE);
        let key = store.worker_access_key("worker", TABLE);
        let config = sdk_config(&store, &key).await;
        World { store, config, dir: TempDir::new(name) }
    }

    /// A poller keeping its checkpoint in the private folder (a new one reads where the last stopped).
    pub fn poller(&self) -> Poller {
        poller(&self.config, TABLE, self.dir.0.join("checkpoint.json"))
    }

    pub fn receipts(&self) -> DynamoReceipts {
        receipts(&self.config, TABLE)
    }

    /// Stores a receipt for `id` as the edge would; returns its key.
    pub fn deliver(&self, id: &str) -> String {
        let receipt = receipt(&delivery::body(id, delivery::VISITOR_MESSAGE, 1_796_019_713), now_millis());
        put_item(&self.store, TABLE, &receipt.to_item());
        receipt.key
    }

    /// Stores a receipt for `id` whose form holds `name`, `email`, `message` and `more` fields
    /// (as the edge would); returns its key.
    pub fn deliver_form(&self, id: &str, name: &str, email: &str, message: &str, more: &[(&str, &str)]) -> String {
        let mut body: serde_json::Value =
            serde_json::from_slice(&delivery::body(id, message, 1_796_019_713)).expect("a delivery is JSON");
        body["data"]["formData"]["name"] = serde_json::json!(name);
        body["data"]["formData"]["email"] = serde_json::json!(email);
        for (field, value) in more {
            body["data"]["formData"][*field] = serde_json::json!(value);
        }
        let receipt = receipt(body.to_string().as_bytes(), now_millis());
        put_item(&self.store, TABLE, &receipt.to_item());
        receipt.key
    }

    /// The receipt's status and failure reason.
    pub fn status(&self, id: &str) -> Option<(String, Option<String>)> {
        let item = self.store.get(TABLE, &delivery::key(id))?;
        Some((item["status"]["S"].as_str()?.to_owned(), item["failureReason"]["S"].as_str().map(str::to_owned)))
    }

    pub fn sqlite_path(&self) -> String {
        self.dir.0.join("leads.db").display().to_string()
    }

    pub fn sqlite_leads(&self) -> Vec<(String, String, i64)> {
        sqlite_leads(&self.dir.0.join("leads.db"))
    }
}

/// A poller for `table`, keeping its checkpoint at `checkpoint`, retrying failures at once.
pub fn poller(config: &aws_config::SdkConfig, table: &str, checkpoint: PathBuf) -> Poller {
    Poller {
        dynamodb: aws_sdk_dynamodb::Client::new(config),
        streams: aws_sdk_dynamodbstreams::Client::new(config),
        table: table.to_owned(),
        checkpoint,
        retry_pause: Duration::ZERO,
        iterators: Default::default(),
    }
}

/// The real receipt store for `table`.
pub fn receipts(config: &aws_config::SdkConfig, table: &str) -> DynamoReceipts {
    DynamoReceipts::new(aws_sdk_dynamodb::Client::new(config), table)
}

/// Runs passes until one finds nothing to do; panics if the stream never goes quiet.
pub async fn drain<S: LeadSink + Sync, R: ReceiptStore + Sync>(poller: &Poller, handler: &Handler<S, R>) -> Vec<Pass> {
    let mut passes = Vec::new();
    for _ in 0..50 {
        let pass = poller.pass(handler).await.unwrap();
        passes.push(pass);
        if pass == Pass::default() {
            return passes;
        }
    }
    panic!("the stream did not go quiet: {passes:?}");
}

/// Fails the first `n` receipt updates, as a worker that crashes after the upsert would.
pub struct CrashBeforeMark<R> {
    inner: R,
    remaining: AtomicUsize,
}

impl<R> CrashBeforeMark<R> {
    pub fn new(inner: R, crashes: usize) -> CrashBeforeMark<R> {
        CrashBeforeMark { inner, remaining: AtomicUsize::new(crashes) }
    }
}

impl<R: ReceiptStore + Sync> ReceiptStore for CrashBeforeMark<R> {
    async fn get(&self, key: &str) -> Result<Option<shared::dynamo::Item>, ReceiptStoreError> {
        self.inner.get(key).await
    }

    async fn finished(&self, receipts: &[(&str, &str)]) -> Result<HashSet<String>, ReceiptStoreError> {
        self.inner.finished(receipts).await
    }

    async fn mark(&self, key: &str, at: &str, mark: Mark<'_>, now: &str) -> Result<Marked, ReceiptStoreError> {
        if self.remaining.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok() {
            return Err(ReceiptStoreError("crash_injected"));
        }
        self.inner.mark(key, at, mark, now).await
    }
}

/// Leads in a SQLite sink: `(external_id, email, upsert_count)`, by id.
pub fn sqlite_leads(path: &Path) -> Vec<(String, String, i64)> {
    let connection = rusqlite::Connection::open(path).unwrap();
    let mut statement =
        connection.prepare("SELECT external_id, email, upsert_count FROM leads ORDER BY external_id").unwrap();
    statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?))).unwrap().map(Result::unwrap).collect()
}

/// The stream worker's binary in local mode (`stream-worker poll`) against a test's store,
/// writing leads to an HTTP sink with a Standard Webhooks secret; its output goes to files in
/// `dir`. Killed and reaped when dropped, so a failing test leaves it running no longer.
pub struct PollerProcess {
    child: std::process::Child,
    out: PathBuf,
    err: PathBuf,
}

impl PollerProcess {
    pub fn start(
        store: &Ministack,
        key: &crate::ministack::AccessKey,
        sink_url: &str,
        sink_secret: &str,
        dir: &Path,
    ) -> Self {
        let (out, err) = (dir.join("poll.out"), dir.join("poll.err"));
        let child = std::process::Command::new(crate::process::stream_worker_binary())
            .arg("poll")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ENDPOINT_URL_DYNAMODB", store.endpoint())
            .env("AWS_ENDPOINT_URL_DYNAMODB_STREAMS", store.endpoint())
            .env("AWS_ACCESS_KEY_ID", &key.id)
            .env("AWS_SECRET_ACCESS_KEY", &key.secret)
            .env("RECEIPTS_TABLE", TABLE)
            .env("LEAD_SINK", sink_url)
            .env("WEBHOOK_SINK_SECRET", sink_secret)
            .env("POLL_CHECKPOINT", dir.join("checkpoint.json"))
            .stdin(std::process::Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap();
        PollerProcess { child, out, err }
    }

    /// Its process ID.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its exit status, if it exits within `within`.
    pub fn exit_within(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let until = std::time::Instant::now() + within;
        loop {
            match self.child.try_wait().unwrap() {
                Some(status) => return Some(status),
                None if std::time::Instant::now() >= until => return None,
                None => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// Everything it wrote so far, stdout then stderr.
    pub fn output(&self) -> String {
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        read(&self.out) + &read(&self.err)
    }
}

/// Dropped, it is killed (`SIGKILL`: a crash, not a stop; its lock is never given back by it).
impl Drop for PollerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
