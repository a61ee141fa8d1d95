//! The `#[event(fetch)]` handler: collect the request, let the core decide, store, render, log.

use core::future::poll_fn;
use core::pin::Pin;
use std::rc::Rc;

use futures_core::Stream;
use shared::decision::{Outcome, Response as Decision, TooLarge};
use shared::headers::Headers as CoreHeaders;
use shared::log::{safe_request_id, LogRecord};
use shared::receive::{self, declared_too_large, declared_within_limit, receive, route, Delivery, Route, Step};
use worker::{console_error, console_log, event, js_sys, Context, Env, Headers, Request, Response, Result};

use crate::dynamodb;
use crate::isolate::{self, Ready};

#[event(fetch)]
async fn fetch(request: Request, env: Env, _ctx: Context) -> Result<Response> {
    let started = clock_millis();
    let request_id =
        request.headers().get("cf-ray").ok().flatten().and_then(|id| safe_request_id(&id)).unwrap_or_else(generated_id);
    let (outcome, submission_id, store_ms) = handle(request, &env, &request_id, started).await;
    let decision = outcome.response();
    let record = LogRecord {
        request_id,
        submission_id,
        outcome: decision.code,
        reason: outcome.reason(),
        status: decision.status,
        duration_ms: clock_millis().saturating_sub(started),
        at_ms: started,
        store_ms,
    };
    if decision.status >= 500 {
        console_error!("{}", record.to_json_line());
    } else {
        console_log!("{}", record.to_json_line());
    }
    render(decision)
}

/// Runs one request through the core; returns the outcome, once known the submission ID, and
/// when the store was asked, how long it took to answer (milliseconds).
async fn handle(
    request: Request,
    env: &Env,
    request_id: &str,
    now_millis: u64,
) -> (Outcome, Option<String>, Option<u64>) {
    match check(request, env, request_id, now_millis).await {
        Checked::Respond(outcome, submission_id) => (outcome, submission_id, None),
        Checked::Store(store) => {
            let (ready, pending) = *store;
            // The Workers clock advances across I/O, so this is the store's round trip. The
            // request is signed at this time, not the delivery's arrival: a body that took
            // minutes to arrive must not make the signature expire (AWS allows 5 minutes).
            let sent = clock_millis();
            let answer = dynamodb::put(&ready, &pending.request, sent).await;
            let store_ms = clock_millis().saturating_sub(sent);
            (pending.finish(answer), Some(pending.submission_id), Some(store_ms))
        }
    }
}

/// What the core's checks leave to do.
enum Checked {
    /// Answer with this outcome; nothing is stored.
    Respond(Outcome, Option<String>),
    /// Send this PutItem with this configuration (boxed: the variants differ in size).
    Store(Box<(Rc<Ready>, receive::PendingPut)>),
}

/// Runs the core's checks on the request.
async fn check(mut request: Request, env: &Env, request_id: &str, now_millis: u64) -> Checked {
    // The configuration (kept per isolate) says which profiles' routes exist.
    let loaded = isolate::load(env);
    let routed = match loaded.as_ref() {
        Ok(ready) => ready.config.policy.route(request.method().as_ref(), &request.path()),
        Err(_) => route(request.method().as_ref(), &request.path()),
    };
    let profile = match routed {
        Route::Reject(rejection) => return Checked::Respond(rejection.outcome(), None),
        Route::Health => None,
        Route::Webhook(profile) => Some(profile),
    };
    let Some(profile) = profile else {
        return Checked::Respond(
            receive::health(loaded.as_ref().map(|r| &r.config.policy).map_err(|e| e.variable)),
            None,
        );
    };
    let ready = match loaded {
        Ok(ready) => ready,
        Err(error) => return Checked::Respond(Outcome::ConfigInvalid(error.variable), None),
    };
    let declared = request.headers().get("content-length").ok().flatten();
    if declared_too_large(&ready.config.policy, declared.as_deref()) {
        return Checked::Respond(Outcome::PayloadTooLarge(TooLarge::Body), None);
    }
    let chunked = request.headers().get("transfer-encoding").ok().flatten();
    let whole = declared_within_limit(&ready.config.policy, declared.as_deref(), chunked.as_deref());
    let body = match read_body(&mut request, ready.config.policy.max_body_bytes, whole).await {
        Ok(Some(body)) => body,
        Ok(None) => return Checked::Respond(Outcome::PayloadTooLarge(TooLarge::Body), None),
        Err(()) => return Checked::Respond(Outcome::BodyUnreadable, None),
    };
    // Only the headers the core reads: one crossing each, not one per header the request has.
    let incoming = request.headers();
    let headers = CoreHeaders::new(
        ready
            .config
            .policy
            .header_names(profile)
            .filter_map(|name| incoming.get(name).ok().flatten().map(|v| (name, v))),
    );
    let delivery = Delivery { profile, headers: &headers, body: &body, request_id, now_millis };
    match receive(&ready.config.policy, &delivery) {
        Step::Respond(outcome, submission_id) => Checked::Respond(outcome, submission_id),
        Step::Store(pending) => Checked::Store(Box::new((ready, pending))),
    }
}

/// Reads the body, but no more than `limit` bytes: `Ok(None)` when it is longer. `whole` (the
/// core's [`declared_within_limit`]): in one piece, one crossing; otherwise chunk by chunk,
/// given up as soon as it is longer, so the Worker never buffers more than the limit.
async fn read_body(request: &mut Request, limit: usize, whole: bool) -> core::result::Result<Option<Vec<u8>>, ()> {
    if whole {
        let body = request.bytes().await.map_err(|_| ())?;
        return Ok((body.len() <= limit).then_some(body));
    }
    let mut stream = match request.stream() {
        Ok(stream) => stream,
        // A POST without a body is an empty body; the envelope check refuses it.
        Err(_) if request.inner().body().is_none() => return Ok(Some(Vec::new())),
        Err(_) => return Err(()),
    };
    let mut body = Vec::new();
    while let Some(chunk) = poll_fn(|cx| Pin::new(&mut stream).poll_next(cx)).await {
        let chunk = chunk.map_err(|_| ())?;
        if body.len() + chunk.len() > limit {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}

/// The runtime's clock in milliseconds (`Date.now()`: one call, no `Date` object).
fn clock_millis() -> u64 {
    js_sys::Date::now() as u64
}

/// A request ID when the platform gave none (`cf-ray` is absent when running locally).
fn generated_id() -> String {
    let part = || (js_sys::Math::random() * f64::from(u32::MAX)) as u32;
    format!("local-{:08x}{:08x}", part(), part())
}

fn render(decision: Decision) -> Result<Response> {
    let headers = Headers::new();
    headers.set("content-type", "application/json")?;
    for (name, value) in &decision.headers {
        headers.set(name, value)?;
    }
    Ok(Response::from_bytes(decision.body.into_bytes())?.with_status(decision.status).with_headers(headers))
}
