//! What the HTTP sinks share: one client, and one reading of statuses and `Retry-After`.

use std::time::Duration;

use super::contract::SinkError;

/// How long one HTTP call to a sink may take (the contract's [`super::contract::CALL_TIMEOUT`]).
pub use super::contract::CALL_TIMEOUT as TIMEOUT;

/// The HTTP client, built once. It never follows a redirect: a client following a 301, 302
/// or 303 turns the POST into a GET, and a 2xx from wherever it lands would mark a receipt
/// `COMPLETED` with no lead written. A 3xx is answered as a configuration error instead.
pub fn client() -> anyhow::Result<reqwest::Client> {
    client_with_timeout(TIMEOUT)
}

/// [`client`] with another per-call timeout, for a caller that needs a hung sink to end sooner
/// (the tests). The worker uses [`client`]: record budgets are computed from [`TIMEOUT`].
pub fn client_with_timeout(timeout: Duration) -> anyhow::Result<reqwest::Client> {
    Ok(reqwest::Client::builder().timeout(timeout).redirect(reqwest::redirect::Policy::none()).build()?)
}

/// Classifies a non-success status. 429, 5xx, 408, 409, 423 (HubSpot's answer to a burst of
/// upserts: "include a delay of at least 2 seconds") and 425 pass with time; so do 401 and
/// 403, which mean the sink's credentials need a fix, not that the lead is wrong (marking
/// every lead `FAILED` while a token is expired would be the wrong outcome), 3xx, which
/// means the sink's URL needs a fix (redirects are never followed), 405, which refuses the
/// method (every call is a POST or PUT, the same for every lead: a wrong URL,
/// `sink_method_not_allowed`), and 415, which refuses the request's format
/// (`Content-Type: application/json`, the same for every lead: `sink_unsupported_media_type`):
/// the sink or its URL needs a fix, not the lead. Other 4xx are permanent for this lead.
pub fn classify_status(status: u16, retry_after: Option<&str>) -> SinkError {
    match status {
        429 | 500..=599 | 408 | 409 | 423 | 425 => {
            SinkError::Retryable { reason: "sink_unavailable", retry_after: parse_retry_after(retry_after) }
        }
        401 | 403 => SinkError::Retryable { reason: "sink_unauthorized", retry_after: None },
        405 => SinkError::Retryable { reason: "sink_method_not_allowed", retry_after: None },
        415 => SinkError::Retryable { reason: "sink_unsupported_media_type", retry_after: None },
        300..=399 => SinkError::Retryable { reason: "sink_redirected", retry_after: None },
        _ => SinkError::Permanent { reason: "sink_rejected" },
    }
}

/// A transport failure (connect, timeout, reset): always retryable.
pub fn transport_error(error: &reqwest::Error) -> SinkError {
    let reason = if error.is_timeout() { "sink_timeout" } else { "sink_unreachable" };
    SinkError::Retryable { reason, retry_after: None }
}

/// Sends `request`; a 2xx is success, anything else is classified.
pub async fn send(request: reqwest::RequestBuilder) -> Result<reqwest::Response, SinkError> {
    let response = request.send().await.map_err(|e| transport_error(&e))?;
    let status = response.status().as_u16();
    if (200..300).contains(&status) {
        return Ok(response);
    }
    let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_owned);
    Err(classify_status(status, retry_after.as_deref()))
}

/// `Retry-After` in seconds (the HTTP-date form is not honoured: it needs a clock agreement).
pub fn parse_retry_after(value: Option<&str>) -> Option<Duration> {
    value?.trim().parse::<u64>().ok().map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses() {
        let retry = |s, h| matches!(classify_status(s, h), SinkError::Retryable { .. });
        for status in [429, 500, 502, 503, 504, 408, 409, 423, 425, 401, 403] {
            assert!(retry(status, None), "{status}");
        }
        for status in [301, 302, 303, 307, 308, 300] {
            assert_eq!(
                classify_status(status, None),
                SinkError::Retryable { reason: "sink_redirected", retry_after: None },
                "{status}"
            );
        }
        for status in [400, 404, 410, 413, 422] {
            assert_eq!(classify_status(status, None), SinkError::Permanent { reason: "sink_rejected" }, "{status}");
        }
        // The request's method or format is refused: the same for every lead, so never FAILED.
        assert_eq!(
            classify_status(405, None),
            SinkError::Retryable { reason: "sink_method_not_allowed", retry_after: None }
        );
        assert_eq!(
            classify_status(415, Some("5")),
            SinkError::Retryable { reason: "sink_unsupported_media_type", retry_after: None }
        );
        assert_eq!(classify_status(403, None), SinkError::Retryable { reason: "sink_unauthorized", retry_after: None });
        assert_eq!(
            classify_status(429, Some("7")),
            SinkError::Retryable { reason: "sink_unavailable", retry_after: Some(Duration::from_secs(7)) }
        );
        assert_eq!(parse_retry_after(Some("Wed, 21 Oct 2026 07:28:00 GMT")), None);
        assert_eq!(parse_retry_after(Some(" 3 ")), Some(Duration::from_secs(3)));
    }
}
