//! The workers-rs floor for the edge benchmark (`make bench`): exactly what the JavaScript
//! floor (`bench/floor-js/worker.js`) does, through the `worker` crate. It reads one header and
//! the body, sends one constant, pre-signed PutItem to the store, and maps the store's status.
//! The difference between this and the JavaScript floor is what the Rust binding costs; the
//! difference between the edge and this is the edge's own work.

use worker::wasm_bindgen::JsValue;
use worker::{event, Context, Env, Fetch, Headers, Method, Request, RequestInit, Response, Result};

#[event(fetch)]
async fn fetch(mut request: Request, env: Env, _ctx: Context) -> Result<Response> {
    let _key = request.headers().get("idempotency-key")?;
    let _body = request.bytes().await?;
    let var = |name: &str| env.var(name).map(|v| v.to_string());
    let headers = Headers::new();
    headers.set("content-type", &var("PUT_CONTENT_TYPE")?)?;
    headers.set("x-amz-target", &var("PUT_TARGET")?)?;
    headers.set("x-amz-date", &var("PUT_DATE")?)?;
    headers.set("authorization", &var("PUT_AUTHORIZATION")?)?;
    let mut init = RequestInit::new();
    init.with_method(Method::Post).with_headers(headers).with_body(Some(JsValue::from_str(&var("PUT_BODY")?)));
    let mut stored = Fetch::Request(Request::new_with_init(&var("STORE_URL")?, &init)?).send().await?;
    let _ = stored.bytes().await?;
    let status = if stored.status_code() == 200 { 202 } else { 503 };
    let answer = Response::from_bytes(format!("{{\"status\":{status}}}").into_bytes())?.with_status(status);
    answer.headers().set("content-type", "application/json")?;
    Ok(answer)
}
