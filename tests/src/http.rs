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
