//! A small blocking HTTP client for tests: every status is an answer, never an error.

use std::time::Duration;

/// Request headers, owned.
pub type HeaderList = Vec<(String, String)>;

/// One HTTP answer.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    /// The first header named `name`, any case.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.body))
    }
}

/// Sends a request with a `Content-Length`; `None` when the connection itself failed.
pub fn send(method: &str, url: &str, headers: &[(&str, &str)], body: &[u8]) -> Option<Answer> {
    answer(request(method, url, headers).send_bytes(body))
}

/// Sends the body with chunked transfer encoding (no `Content-Length`).
pub fn send_chunked(method: &str, url: &str, headers: &[(&str, &str)], body: &[u8]) -> Option<Answer> {
    answer(request(method, url, headers).send(body))
}

fn request(method: &str, url: &str, headers: &[(&str, &str)]) -> ureq::Request {
    let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(30)).build();
    let mut request = agent.request(method, url);
    for (name, value) in headers {
        request = request.set(name, value);
    }
    request
}

fn answer(result: Result<ureq::Response, ureq::Error>) -> Option<Answer> {
    let response = match result {
        Ok(response) => response,
        Err(ureq::Error::Status(_, response)) => response,
        Err(ureq::Error::Transport(_)) => return None,
    };
    let status = response.status();
    let headers = response
        .headers_names()
        .into_iter()
        .map(|name| {
            let value = response.header(&name).unwrap_or_default().to_owned();
            (name, value)
        })
        .collect();
    let body = response.into_string().unwrap_or_default();
    Some(Answer { status, headers, body })
}

/// Sends a request over a plain socket, header values written as their UTF-8 bytes (the HTTP
/// client above refuses bytes outside ASCII, which HTTP allows as `obs-text`). Reads the answer
/// to the end (`Connection: close`); `None` when the connection itself failed. A `Host` among
/// `headers` replaces the URL's (a request for another name, as a DNS-rebinding page sends).
pub fn send_raw_bytes(method: &str, url: &str, headers: &[(&str, &str)], body: &[u8]) -> Option<Answer> {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://")?;
    let (authority, path) = rest.split_once('/').map_or((rest, "/".to_owned()), |(a, p)| (a, format!("/{p}")));
    let mut stream = std::net::TcpStream::connect(authority).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n").into_bytes();
    if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("host")) {
        request.extend_from_slice(format!("Host: {authority}\r\n").as_bytes());
    }
    for (name, value) in headers {
        request.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    request.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
    request.extend_from_slice(body);
    // A server may answer (413 from the declared length) and close before reading the whole
    // body: the write then fails, and the answer is still there to read.
    let _ = stream.write_all(&request);
    let mut raw = Vec::new();
    // A reset after the answer (the unread body) still leaves the answer read.
    let _ = stream.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw);
    let (head, rest) = text.split_once("\r\n\r\n")?;
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> =
        lines.filter_map(|l| l.split_once(':')).map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned())).collect();
    let chunked = headers.iter().any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if chunked { dechunk(rest) } else { rest.to_owned() };
    Some(Answer { status, headers, body })
}

/// The payload of a chunked body.
fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else { break };
        if size == 0 || after.len() < size {
            break;
        }
        out.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    out
}
