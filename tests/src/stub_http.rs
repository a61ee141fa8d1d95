//! The HTTP server the stand-ins of third-party APIs run on (hyper, on 127.0.0.1 and an
//! ephemeral port, connections served concurrently), the "fail next" answers the stand-ins
//! share, and a strict webhook receiver.

use std::collections::BTreeMap;
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
    /// Submissions refused for as long as they are listed: `Idempotency-Key` -> status.
    pub refusing: std::collections::BTreeMap<String, u16>,
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
            let listed = request.header("idempotency-key").and_then(|key| state.refusing.get(key).copied());
            if let Some((status, retry_after)) = listed.map(|status| (status, None)).or_else(|| state.fail_next.take())
            {
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

    /// Answers every POST for the submission `key` (its `Idempotency-Key`) with `status` until
    /// [`WebhookStandIn::accept`] lifts it.
    pub fn refuse(&self, key: &str, status: u16) {
        self.state.lock().unwrap().refusing.insert(key.to_owned(), status);
    }

    /// Lifts [`WebhookStandIn::refuse`] for `key`.
    pub fn accept(&self, key: &str) {
        self.state.lock().unwrap().refusing.remove(key);
    }

    /// How many requests for the submission `key` reached it, refused ones included.
    pub fn attempts(&self, key: &str) -> usize {
        self.state.lock().unwrap().requests.iter().filter(|r| r.header("idempotency-key") == Some(key)).count()
    }

    /// Answers the next well-formed POSTs with `failure`.
    pub fn fail_next(&self, failure: FailNext) {
        self.state.lock().unwrap().fail_next = failure;
    }
}

/// Serves `handler` until dropped: hyper's HTTP/1.1 server on its own runtime thread, every
/// connection served at the same time as the others (keep-alive included), as the services
/// the stand-ins stand for do. The handler runs on a blocking thread per request, so it may
/// lock and sleep: two requests can be inside it at once, which is what lets a stand-in see
/// overlapping calls (Salesforce's row locks, HubSpot's races).
pub struct StubServer {
    pub port: u16,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

type Handler = dyn Fn(StubRequest) -> StubResponse + Send + Sync + 'static;

impl StubServer {
    pub fn start(handler: impl Fn(StubRequest) -> StubResponse + Send + Sync + 'static) -> StubServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let handler: Arc<Handler> = Arc::new(handler);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a runtime for the stand-in");
            runtime.block_on(serve(listener, handler, stopped));
            // Dropping the runtime ends every connection still open.
            runtime.shutdown_timeout(Duration::from_secs(1));
        });
        StubServer { port, stop: Some(stop), thread: Some(thread) }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for StubServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Accepts connections until `stopped`, each served on a task of its own.
async fn serve(
    listener: std::net::TcpListener,
    handler: Arc<Handler>,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
    loop {
        let stream = tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => continue,
            },
        };
        let handler = Arc::clone(&handler);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| answer(Arc::clone(&handler), request));
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
        });
    }
}

/// One request: read whole, handed to the handler on a blocking thread, answered as JSON unless
/// the handler names another `Content-Type`.
async fn answer(
    handler: Arc<Handler>,
    request: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<http_body_util::Full<bytes::Bytes>>, std::convert::Infallible> {
    use http_body_util::BodyExt;
    let (parts, body) = request.into_parts();
    let body = body.collect().await.map(|b| b.to_bytes().to_vec()).unwrap_or_default();
    let headers = parts
        .headers
        .iter()
        .map(|(n, v)| (n.as_str().to_owned(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect();
    let path = parts.uri.path_and_query().map_or_else(|| parts.uri.to_string(), |p| p.as_str().to_owned());
    let request = StubRequest { method: parts.method.as_str().to_owned(), path, headers, body };
    let response = match tokio::task::spawn_blocking(move || handler(request)).await {
        Ok(response) => response,
        // A stand-in that panics is a broken test, never a sink's 500 to retry: end the run
        // loudly.
        Err(error) if error.is_panic() => {
            eprintln!("a stand-in's handler panicked: stopping the test run");
            std::process::abort();
        }
        // The stand-in is stopping (its runtime shuts down): the client gets a 503.
        Err(_) => StubResponse::json(503, json!({"error": "the stand-in is stopping"})),
    };
    let mut builder = hyper::Response::builder().status(response.status);
    if !response.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("content-type")) && !response.body.is_empty() {
        builder = builder.header("Content-Type", "application/json");
    }
    for (name, value) in &response.headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    let body = http_body_util::Full::new(bytes::Bytes::from(response.body));
    Ok(builder.body(body).unwrap_or_else(|_| hyper::Response::new(http_body_util::Full::default())))
}

/// `%XX` sequences as bytes, then UTF-8.
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// An `application/x-www-form-urlencoded` body as a map.
pub(crate) fn form_decode(body: &[u8]) -> BTreeMap<String, String> {
    String::from_utf8_lossy(body)
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (percent_decode(&k.replace('+', " ")), percent_decode(&v.replace('+', " "))))
        .collect()
}
