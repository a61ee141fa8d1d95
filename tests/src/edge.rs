//! The built edge Worker running in workerd (through Miniflare), one instance per test.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::http::{send, Answer};
use crate::process::repo_root;
use crate::process::TempDir;

/// A running Worker, stopped by PID on drop.
pub struct Edge {
    pub url: String,
    child: Child,
    stdin: Option<ChildStdin>,
    logs: Arc<Mutex<Vec<String>>>,
    /// Every line the runner and workerd wrote, on either stream (log hygiene reads them all).
    output: Arc<Mutex<Vec<String>>>,
    _dir: TempDir,
}

impl Edge {
    /// Starts the built Worker with these bindings (`[vars]` and secrets alike).
    pub fn start(bindings: &[(&str, String)]) -> Edge {
        Edge::start_with(bindings, None)
    }

    /// Starts `producer` tailed by the Tail Worker (tail/index.mjs) with `tail_bindings`: the
    /// edge with `bindings`, or a stand-in Worker that throws on every request.
    pub fn start_tailed(producer: Producer, bindings: &[(&str, String)], tail_bindings: &[(&str, String)]) -> Edge {
        let name = match producer {
            Producer::Edge => "edge",
            Producer::Throws => "throws",
        };
        Edge::start_with(bindings, Some(serde_json::json!({"producer": name, "bindings": object(tail_bindings)})))
    }

    fn start_with(bindings: &[(&str, String)], tail: Option<serde_json::Value>) -> Edge {
        let root = repo_root();
        let built = root.join("edge/build/index.js");
        assert!(built.exists(), "{} is missing: build the Worker first (`make build-edge`)", built.display());
        let dir = TempDir::new("edge");
        let file = dir.0.join("bindings.json");
        std::fs::write(&file, object(bindings).to_string()).unwrap();
        let mut command = Command::new("node");
        command.arg(root.join("tests/support/edge-runner.mjs")).arg(&file);
        if let Some(tail) = tail {
            let tail_file = dir.0.join("tail.json");
            std::fs::write(&tail_file, tail.to_string()).unwrap();
            command.arg(tail_file);
        }
        let mut child = command
            .env("WRANGLER_SEND_METRICS", "false")
            .env("CLOUDFLARE_CF_FETCH_ENABLED", "false")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("node runs (install Node.js 20)");
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let logs = Arc::new(Mutex::new(Vec::new()));
        let output: Arc<Mutex<Vec<String>>> = Arc::default();
        let (ready_tx, ready_rx) = mpsc::channel();
        let sink = Arc::clone(&logs);
        let everything = Arc::clone(&output);
        std::thread::spawn(move || {
            // Still shown with the test's output, as before; kept as well.
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("{line}");
                everything.lock().unwrap().push(line);
            }
        });
        let everything = Arc::clone(&output);
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                everything.lock().unwrap().push(line.clone());
                if let Some(url) = line.strip_prefix("READY ") {
                    let _ = ready_tx.send(url.to_owned());
                } else if let Some(log) = line.strip_prefix("LOG ") {
                    sink.lock().unwrap().push(log.to_owned());
                }
            }
        });
        let url = ready_rx.recv_timeout(Duration::from_secs(30)).expect("the Worker starts within 30 s");
        let stdin = child.stdin.take();
        Edge { url, child, stdin, logs, output, _dir: dir }
    }

    /// `POST /webhooks/staticforms`.
    pub fn deliver(&self, headers: &[(&str, &str)], body: &[u8]) -> Answer {
        self.request("POST", "/webhooks/staticforms", headers, body)
    }

    /// Any request; panics if the Worker does not answer at all.
    pub fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Answer {
        send(method, &format!("{}{path}", self.url), headers, body).expect("the Worker answers")
    }

    /// The runner's process ID (workerd runs as its child).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Every line the runner and the runtime have written so far, on stdout and stderr.
    pub fn output(&self) -> Vec<String> {
        self.output.lock().unwrap().clone()
    }

    /// The log lines written so far, each `<level> <line>`; waits until there are `at_least`.
    pub fn logs(&self, at_least: usize) -> Vec<String> {
        crate::process::wait_until("the Worker's log lines", 10, || self.logs.lock().unwrap().len() >= at_least);
        self.logs.lock().unwrap().clone()
    }

    /// The log lines of every request so far, which must be exactly `n`: a sentinel request
    /// (`GET /healthz`, one line of its own) is sent after them, and its line must come next,
    /// so an extra line an earlier request writes late fails here instead of passing unseen.
    pub fn logs_exactly(&self, n: usize) -> Vec<String> {
        let before = self.logs.lock().unwrap().len();
        assert!(before <= n, "{before} log lines before the sentinel, expected {n}: {:#?}", self.logs(0));
        assert_eq!(self.request("GET", "/healthz", &[], &[]).status, 200, "the sentinel request");
        let lines = self.logs(n + 1);
        assert_eq!(lines.len(), n + 1, "one line per request, then the sentinel's: {lines:#?}");
        assert!(
            lines[n].contains("\"outcome\":\"ok\"") && lines[n].contains("\"status\":200"),
            "the sentinel's line must come right after the {n} requests' lines: {lines:#?}"
        );
        lines[..n].to_vec()
    }
}

/// What the Tail Worker tails in [`Edge::start_tailed`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Producer {
    /// The built edge Worker.
    Edge,
    /// A Worker that throws on every request (the edge cannot log such an invocation itself).
    Throws,
}

fn object(bindings: &[(&str, String)]) -> serde_json::Value {
    bindings.iter().map(|(k, v)| ((*k).to_owned(), serde_json::Value::String(v.clone()))).collect()
}

impl Drop for Edge {
    /// Closing the runner's stdin makes it dispose of Miniflare, which stops workerd; killing
    /// the runner outright would leave workerd running. The kill is only the fallback.
    fn drop(&mut self) {
        drop(self.stdin.take());
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
