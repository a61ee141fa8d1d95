//! A fault proxy between the Worker and the store (or the stream worker and a sink): forwards each HTTP request to the real
//! store, or misbehaves in one of the ways a network or a store can, switchable while running.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// How the proxy treats the next requests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Forward the request and the answer.
    PassThrough,
    /// Forward the request to the store, then drop the answer: the write happened, the caller
    /// never learns it. Switches back to `PassThrough` after `times` requests.
    DropResponse { times: usize },
    /// Close the connection without forwarding (a store that is down, seen from the Worker).
    Refuse,
    /// Hold the connection and never answer (a store that hangs).
    Hang,
    /// Send a 200's head and the first bytes of its body, then hold the connection (a store
    /// that stalls in the middle of its answer).
    StallBody,
    /// Answer with this status and body without forwarding.
    Answer(u16, String),
    /// Answer with this redirect status and `Location`, without forwarding.
    Redirect(u16, String),
    /// Answer requests whose bytes contain the text with this status and body; forward the rest.
    AnswerWhen(String, u16, String),
    /// Forward the request after this long (a slow network or a slow store).
    Delay(Duration),
    /// A replica behind the table, as DynamoDB's eventually consistent reads may be: a
    /// `GetItem` that does not ask for `ConsistentRead` is answered `{}` (the item not there
    /// yet), without forwarding; consistent reads and everything else are forwarded.
    StaleReads,
    /// Hold each request whose bytes contain the text until `count` such requests have
    /// arrived (or 4 s have passed, less than the SDK's 5-second operation timeout the stream
    /// worker sets), then forward them all: a race made to happen every time
    /// ([`FaultProxy::gathered`] says how many came).
    Together(String, usize),
}

/// A proxy on 127.0.0.1, stopped when dropped.
pub struct FaultProxy {
    pub port: u16,
    mode: Arc<Mutex<Mode>>,
    stop: Arc<AtomicBool>,
    /// Connections the proxy accepted (whatever it did with them).
    pub accepted: Arc<AtomicUsize>,
    /// Requests that reached the real store.
    pub forwarded: Arc<AtomicUsize>,
    gathered: Arc<(Mutex<usize>, Condvar)>,
}

impl FaultProxy {
    /// Proxies to `upstream_port` on 127.0.0.1.
    pub fn start(upstream_port: u16) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let mode = Arc::new(Mutex::new(Mode::PassThrough));
        let stop = Arc::new(AtomicBool::new(false));
        let (accepted, forwarded) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (mode_in, stop_in) = (Arc::clone(&mode), Arc::clone(&stop));
        let (accepted_in, forwarded_in) = (Arc::clone(&accepted), Arc::clone(&forwarded));
        let gathered: Arc<(Mutex<usize>, Condvar)> = Arc::default();
        let gathered_in = Arc::clone(&gathered);
        std::thread::spawn(move || {
            let mut held = Vec::new();
            while !stop_in.load(Ordering::Relaxed) {
                let Ok((client, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(2));
                    continue;
                };
                accepted_in.fetch_add(1, Ordering::Relaxed);
                let current = {
                    let mut mode = mode_in.lock().unwrap();
                    let current = mode.clone();
                    if let Mode::DropResponse { times } = &mut *mode {
                        *times -= 1;
                        if *times == 0 {
                            *mode = Mode::PassThrough;
                        }
                    }
                    current
                };
                match current {
                    Mode::Hang => held.push(client),
                    Mode::StallBody => {
                        let mut client = client;
                        let _ = client.set_nonblocking(false);
                        let head = "HTTP/1.1 200 OK\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: 100\r\n\r\n{\"Attr";
                        let _ = client.write_all(head.as_bytes());
                        held.push(client);
                    }
                    Mode::Refuse => drop(client),
                    mode => {
                        let (forwarded, gathered) = (Arc::clone(&forwarded_in), Arc::clone(&gathered_in));
                        std::thread::spawn(move || serve(client, upstream_port, &mode, &forwarded, &gathered));
                    }
                }
            }
        });
        FaultProxy { port, mode, stop, accepted, forwarded, gathered }
    }

    pub fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    /// The mode itself, for a thread that switches it on a schedule.
    pub fn mode_handle(&self) -> Arc<Mutex<Mode>> {
        Arc::clone(&self.mode)
    }

    /// How many requests [`Mode::Together`] has held so far.
    pub fn gathered(&self) -> usize {
        *self.gathered.0.lock().unwrap()
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn serve(
    mut client: TcpStream,
    upstream_port: u16,
    mode: &Mode,
    forwarded: &AtomicUsize,
    gathered: &(Mutex<usize>, Condvar),
) {
    let _ = client.set_nonblocking(false);
    let _ = client.set_read_timeout(Some(Duration::from_secs(10)));
    let Some(request) = read_message(&mut client) else { return };
    if let Mode::Redirect(status, location) = mode {
        let response = format!(
            "HTTP/1.1 {status} Redirect\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        let _ = client.write_all(response.as_bytes());
        return;
    }
    let answer = match mode {
        Mode::Answer(status, body) => Some((*status, body)),
        Mode::AnswerWhen(text, status, body) if request.windows(text.len()).any(|w| w == text.as_bytes()) => {
            Some((*status, body))
        }
        _ => None,
    };
    if let Some((status, body)) = answer {
        let response = format!(
            "HTTP/1.1 {status} Fault\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = client.write_all(response.as_bytes());
        return;
    }
    if let Mode::Delay(delay) = mode {
        std::thread::sleep(*delay);
    }
    if *mode == Mode::StaleReads && is_eventually_consistent_get(&request) {
        let body = "{}";
        let response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = client.write_all(response.as_bytes());
        return;
    }
    if let Mode::Together(text, count) = mode {
        if request.windows(text.len()).any(|w| w == text.as_bytes()) {
            let (arrived, all_here) = gathered;
            let mut arrived = arrived.lock().unwrap();
            *arrived += 1;
            all_here.notify_all();
            let _ = all_here.wait_timeout_while(arrived, Duration::from_secs(4), |n| *n < *count).unwrap();
        }
    }
    let Ok(mut upstream) = TcpStream::connect(("127.0.0.1", upstream_port)) else { return };
    let _ = upstream.set_read_timeout(Some(Duration::from_secs(10)));
    // One request per connection keeps the proxy simple: ask both sides to close after it.
    let request = force_close(&request);
    if upstream.write_all(&request).is_err() {
        return;
    }
    forwarded.fetch_add(1, Ordering::Relaxed);
    let Some(response) = read_message(&mut upstream) else { return };
    if matches!(mode, Mode::DropResponse { .. }) {
        // The store has done the write; the caller sees the connection end with no answer.
        let _ = client.shutdown(std::net::Shutdown::Both);
        return;
    }
    let _ = client.write_all(&response);
}

/// True for a DynamoDB `GetItem` without `"ConsistentRead": true` in its body.
fn is_eventually_consistent_get(request: &[u8]) -> bool {
    let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") else { return false };
    let head = String::from_utf8_lossy(&request[..end]).to_ascii_lowercase();
    let get_item = head.lines().any(|l| l.replace(' ', "") == "x-amz-target:dynamodb_20120810.getitem");
    let body: serde_json::Value = serde_json::from_slice(&request[end + 4..]).unwrap_or_default();
    get_item && body["ConsistentRead"] != serde_json::Value::Bool(true)
}

/// Reads one HTTP message (head and a `Content-Length` body).
fn read_message(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut message = Vec::new();
    let mut buffer = [0u8; 8192];
    loop {
        if let Some(end) = message.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&message[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if message.len() >= end + 4 + length {
                message.truncate(end + 4 + length);
                return Some(message);
            }
        }
        let n = stream.read(&mut buffer).ok()?;
        if n == 0 {
            return None;
        }
        message.extend_from_slice(&buffer[..n]);
    }
}

/// The request with `Connection: close` in place of any `Connection` header.
fn force_close(request: &[u8]) -> Vec<u8> {
    let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") else { return request.to_vec() };
    let head = String::from_utf8_lossy(&request[..end]);
    let mut lines: Vec<&str> =
        head.split("\r\n").filter(|l| !l.to_ascii_lowercase().starts_with("connection:")).collect();
    lines.push("Connection: close");
    let mut out = lines.join("\r\n").into_bytes();
    out.extend_from_slice(b"\r\n\r\n");
    out.extend_from_slice(&request[end + 4..]);
    out
}
