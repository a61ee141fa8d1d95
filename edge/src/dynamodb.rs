//! The one network call: send a signed `PutItem` to DynamoDB with a deadline, classify the answer.
//!
//! The call goes through the runtime's own `fetch` (the `web_sys` types `worker` re-exports)
//! rather than `worker::Fetch`: `worker::Response::bytes` reads a body through a stream reader,
//! chunk by chunk, at a measured few percent of the Worker's CPU per delivery (`make bench`);
//! `arrayBuffer()` reads it in one call.

use shared::put_item::StoreRequest;
use shared::store::{classify_put, PermanentStoreError, PutOutcome, RetryableStoreError, StoreError};
use worker::js_sys::{self, Uint8Array};
use worker::wasm_bindgen::JsCast;
use worker::wasm_bindgen_futures::JsFuture;
use worker::web_sys::{AbortSignal, Headers, RequestInit, RequestRedirect, Response, WorkerGlobalScope};

use crate::isolate::Ready;

/// Sends `request` and says what the store did with it. Never fails: a store that cannot be
/// reached, answers late or answers nonsense is one of the `Failed` outcomes.
pub async fn put(ready: &Ready, request: &StoreRequest, now_millis: u64) -> PutOutcome {
    let headers = ready.signer.sign(request, now_millis);
    // The deadline covers the answer's body too: a store that sends headers and then stalls
    // has not proven anything. The runtime's timeout signal aborts both, with no timer or
    // closure of our own.
    let signal = AbortSignal::timeout_with_u32(ready.config.store_timeout_ms);
    let Some(init) = init(request, &headers, &signal) else {
        return PutOutcome::Failed(StoreError::Permanent(PermanentStoreError::InvalidRequest));
    };
    match send(ready.signer.url(), &init).await {
        Ok((status, body)) => classify_put(status, &body),
        Err(()) if signal.aborted() => PutOutcome::Failed(StoreError::Retryable(RetryableStoreError::Timeout)),
        Err(()) => PutOutcome::Failed(StoreError::Retryable(RetryableStoreError::Network)),
    }
}

/// The request: `POST`, the signed headers, the body, the deadline. A redirect is never
/// followed: whatever answers for the store with a 3xx proves nothing, and following it would
/// send the signed request somewhere else (the core answers 503).
fn init(request: &StoreRequest, signed: &[(&str, String)], signal: &AbortSignal) -> Option<RequestInit> {
    let headers = Headers::new().ok()?;
    for (name, value) in signed {
        headers.set(name, value).ok()?;
    }
    let init = RequestInit::new();
    init.set_method("POST");
    init.set_headers(&headers);
    // As bytes: copied once into JavaScript, not decoded into a string to be encoded again.
    init.set_body(&Uint8Array::from(request.body.as_bytes()));
    init.set_redirect(RequestRedirect::Manual);
    init.set_signal(Some(signal));
    Some(init)
}

/// Sends the request; the status and the whole body, or `Err` if either failed to arrive.
async fn send(url: &str, init: &RequestInit) -> Result<(u16, Vec<u8>), ()> {
    let scope: WorkerGlobalScope = js_sys::global().unchecked_into();
    let answer = JsFuture::from(scope.fetch_with_str_and_init(url, init)).await.map_err(|_| ())?;
    let response: Response = answer.dyn_into().map_err(|_| ())?;
    let status = response.status();
    let buffer = JsFuture::from(response.array_buffer().map_err(|_| ())?).await.map_err(|_| ())?;
    Ok((status, Uint8Array::new(&buffer).to_vec()))
}
