//! Stand-ins for a store that misbehaves: one that never answers, one that always answers the
//! same thing. Both listen on 127.0.0.1 and stop when dropped.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A server running on a thread until dropped.
pub struct FaultServer {
    pub port: u16,
    stop: Arc<AtomicBool>,
    /// Requests (connections) it has seen.
    pub hits: Arc<AtomicUsize>,
}

impl FaultServer {
    /// Accepts connections and never answers: a store that hangs.
    pub fn silent() -> FaultServer {
        FaultServer::spawn(None)
    }

    /// Answers every request with `status` and a JSON `body`.
    pub fn canned(status: u16, body: &str) -> FaultServer {
        FaultServer::spawn(Some((status, body.to_owned())))
    }

    /// `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn spawn(answer: Option<(u16, String)>) -> FaultServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let hits = Arc::new(AtomicUsize::new(0));
        let (stop_flag, hit_count) = (Arc::clone(&stop), Arc::clone(&hits));
        std::thread::spawn(move || {
            let mut held = Vec::new();
            while !stop_flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        hit_count.fetch_add(1, Ordering::Relaxed);
                        match &answer {
                            None => held.push(stream),
                            Some((status, body)) => answer_once(stream, *status, body),
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        FaultServer { port, stop, hits }
    }
}

impl Drop for FaultServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn answer_once(mut stream: TcpStream, status: u16, body: &str) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    // Read the request head and its declared body, then answer.
    let mut request = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let Ok(n) = stream.read(&mut buffer) else { return };
        if n == 0 {
            return;
        }
        request.extend_from_slice(&buffer[..n]);
        if let Some(end) = find(&request, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&request[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if request.len() >= end + 4 + length {
                break;
            }
        }
    }
    let response = format!(
        "HTTP/1.1 {status} Canned\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes());
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
