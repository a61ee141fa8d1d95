//! A tiny HTTP/1.1 server for stand-ins of third-party APIs, on 127.0.0.1 and an ephemeral port,
//! the "fail next" answers the stand-ins share, and a strict webhook receiver.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

/// One request as the stand-in sees it.
#[derive(Clone, Debug)]
pub struct StubRequest {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl StubRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// A stand-in's answer: status, extra headers, JSON body.
pub struct StubResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl StubResponse {
    pub fn json(status: u16, body: serde_json::Value) -> StubResponse {
        StubResponse { status, headers: vec![], body: body.to_string() }
    }

    /// The same answer with one more header.
    pub fn with_header(mut self, name: &str, value: &str) -> StubResponse {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
}

/// Failures a stand-in answers before behaving as documented: the next `count` requests it
/// would otherwise serve get `status` (each stand-in gives it its service's body), with
/// `Retry-After: <retry_after>` when set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FailNext {
    pub count: usize,
    pub status: u16,
    /// Seconds, as the header's text.
    pub retry_after: Option<String>,
}

impl FailNext {
    /// The next `count` requests answer `status`.
    pub fn new(count: usize, status: u16) -> FailNext {
        FailNext { count, status, retry_after: None }
    }

    /// Each failure also says `Retry-After: <seconds>`.
    pub fn with_retry_after(mut self, seconds: u64) -> FailNext {
        self.retry_after = Some(seconds.to_string());
        self
    }

    /// Uses up one failure: its status and `Retry-After`; `None` once none are left.
    pub fn take(&mut self) -> Option<(u16, Option<String>)> {
        if self.count == 0 {
            return None;
        }
        self.count -= 1;
        Some((self.status, self.retry_after.clone()))
    }
}

/// A strict webhook receiver: 405 with `Allow: POST` to any other method, 415 to a body that
/// is not declared `application/json` (parameters such as `charset` allowed), 400 to a body that
/// is not JSON, 200 otherwise; `fail_next` answers well-formed POSTs first (429 and 503 as an
/// outage or a throttle would, 400 or 422 as a receiver refusing the content).
pub struct WebhookStandIn {
    pub server: StubServer,
    pub state: Arc<Mutex<WebhookState>>,
}

#[derive(Default)]
pub struct WebhookState {
    /// Every request that reached it, in order, refused ones included.
    pub requests: Vec<StubRequest>,
    /// The requests it accepted (answered 200).
    pub accepted: Vec<StubRequest>,
    pub fail_next: FailNext,
}

impl WebhookStandIn {
    pub fn start() -> WebhookStandIn {
        let state = Arc::new(Mutex::new(WebhookState::default()));
        let shared = Arc::clone(&state);
        let server = StubServer::start(move |request: StubRequest| {
            let mut state = shared.lock().unwrap();
            state.requests.push(request.clone());
            if request.method != "POST" {
                return StubResponse::json(405, json!({"error": "method_not_allowed"})).with_header("Allow", "POST");
            }
            let media_type = request.header("content-type").and_then(|t| t.split(';').next()).map(str::trim);
            if !media_type.is_some_and(|t| t.eq_ignore_ascii_case("application/json")) {
                return StubResponse::json(415, json!({"error": "unsupported_media_type"}));
            }
            if let Some((status, retry_after)) = state.fail_next.take() {
                let error = match status {
                    429 => "rate_limited",
                    500..=599 => "unavailable",
                    _ => "refused",
                };
                let response = StubResponse::json(status, json!({"error": error}));
                return match retry_after {
                    Some(seconds) => response.with_header("Retry-After", &seconds),
                    None => response,
                };
            }
            if serde_json::from_slice::<serde_json::Value>(&request.body).is_err() {
                return StubResponse::json(400, json!({"error": "invalid_json"}));
            }
            state.accepted.push(request);
            StubResponse::json(200, json!({"received": true}))
        });
        WebhookStandIn { server, state }
    }

    /// The URL to configure the webhook sink with.
    pub fn url(&self) -> String {
        format!("{}/leads", self.server.url())
    }

    /// Answers the next well-formed POSTs with `failure`.
    pub fn fail_next(&self, failure: FailNext) {
        self.state.lock().unwrap().fail_next = failure;
    }
}

/// Serves `handler` on a thread until dropped, one connection at a time.
pub struct StubServer {
    pub port: u16,
    stop: Arc<AtomicBool>,
}

impl StubServer {
    pub fn start(handler: impl Fn(StubRequest) -> StubResponse + Send + 'static) -> StubServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                let Ok((stream, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                };
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut reader = BufReader::new(stream);
                let Some(request) = read_request(&mut reader) else { continue };
                let response = handler(request);
                let mut head = format!(
                    "HTTP/1.1 {} Stub\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
                    response.status,
                    response.body.len()
                );
                for (name, value) in &response.headers {
                    head.push_str(&format!("{name}: {value}\r\n"));
                }
                head.push_str("\r\n");
                let mut stream = reader.into_inner();
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(response.body.as_bytes());
            }
        });
        StubServer { port, stop }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for StubServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn read_request(reader: &mut impl BufRead) -> Option<StubRequest> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next()?.to_owned(), parts.next()?.to_owned());
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    let length = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(StubRequest { method, path, headers, body })
}
