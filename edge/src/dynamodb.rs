//! The one network call: send a signed `PutItem` to DynamoDB with a deadline, classify the answer.

use core::future::{poll_fn, Future};
use core::pin::pin;
use core::task::Poll;
use std::time::Duration;

use shared::put_item::StoreRequest;
use shared::store::{classify_put, PermanentStoreError, PutOutcome, RetryableStoreError, StoreError};
use worker::wasm_bindgen::JsValue;
use worker::{AbortController, Delay, Fetch, Headers, Method, Request, RequestInit, RequestRedirect};

use crate::isolate::Ready;

/// Sends `request` and says what the store did with it. Never fails: a store that cannot be
/// reached, answers late or answers nonsense is one of the `Failed` outcomes.
pub async fn put(ready: &Ready, request: &StoreRequest, now_millis: u64) -> PutOutcome {
    let headers = ready.signer.sign(request, now_millis);
    let Some(fetch) = build(ready.signer.url(), request, &headers) else {
        return PutOutcome::Failed(StoreError::Permanent(PermanentStoreError::InvalidRequest));
    };
    let controller = AbortController::default();
    let signal = controller.signal();
    let call = async {
        let mut response = fetch.send_with_signal(&signal).await?;
        let status = response.status_code();
        // The body is read inside the deadline too: a store that sends headers and then
        // stalls has not proven anything.
        let body = response.bytes().await?;
        Ok::<_, worker::Error>((status, body))
    };
    let deadline = Delay::from(Duration::from_millis(u64::from(ready.config.store_timeout_ms)));
    match first(call, deadline).await {
        First::A(Ok((status, body))) => classify_put(status, &body),
        First::A(Err(_)) => PutOutcome::Failed(StoreError::Retryable(RetryableStoreError::Network)),
        First::B(()) => {
            controller.abort();
            PutOutcome::Failed(StoreError::Retryable(RetryableStoreError::Timeout))
        }
    }
}

fn build(url: &str, request: &StoreRequest, signed: &[(&str, String)]) -> Option<Fetch> {
    let headers = Headers::new();
    for (name, value) in signed {
        headers.set(name, value).ok()?;
    }
    let mut init = RequestInit::new();
    // A redirect is never followed: whatever answers for the store with a 3xx proves nothing,
    // and following it would send the signed request somewhere else (the core answers 503).
    init.with_method(Method::Post)
        .with_headers(headers)
        .with_body(Some(JsValue::from_str(&request.body)))
        .with_redirect(RequestRedirect::Manual);
    Request::new_with_init(url, &init).ok().map(Fetch::Request)
}

/// Which of two futures finished first.
enum First<A, B> {
    A(A),
    B(B),
}

/// Polls both futures until one is ready; the other is dropped.
async fn first<A: Future, B: Future>(a: A, b: B) -> First<A::Output, B::Output> {
    let (mut a, mut b) = (pin!(a), pin!(b));
    poll_fn(|cx| {
        if let Poll::Ready(out) = a.as_mut().poll(cx) {
            return Poll::Ready(First::A(out));
        }
        if let Poll::Ready(out) = b.as_mut().poll(cx) {
            return Poll::Ready(First::B(out));
        }
        Poll::Pending
    })
    .await
}
