//! `stream-worker console`: a small web page over the receipts, on 127.0.0.1 only. The list
//! (filtered by profile, status and time, paged in the store: [`crate::listing`]), one receipt (the form's
//! contents on request), and a redrive button that runs what `receipts redrive` runs (none in
//! a read-only console, which needs only the table, not the sink's settings). As safe
//! as the command line: the gate ([`guard`]) answers only this console's Host and a browser's
//! `Sec-Fetch-Site` of its own pages, trades a one-time login token for an `HttpOnly`,
//! `SameSite=Strict` cookie that ends after 30 minutes unused, takes a POST only from
//! its own origin with its form token, and every answer forbids script. The pages are
//! [`pages`]'; this file is the wiring (axum), run by tests/it/console.rs in Chromium.

pub mod guard;
pub mod pages;

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::extract::{Form, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use maud::Markup;
use serde::Deserialize;
use shared::profile::Profile;

use crate::handler::Handler;
use crate::inventory::OperateError;
use crate::listing::{Ask, Page};
use crate::metrics::now_millis;
use crate::operate::{self, RedriveMode, Redriven};
use crate::receipts::DynamoReceipts;
use crate::sink::Sink;
use guard::{Gate, Refusal};
use pages::{Filter, ListQuery};

/// What the console may do: only read the receipts, or redrive them too (with the handler a
/// redrive runs on, and how long it waits for the stream's verdict).
pub enum Access {
    ReadOnly(DynamoReceipts),
    Redrive { handler: Box<Handler<Sink, DynamoReceipts>>, wait: Duration },
}

impl Access {
    fn receipts(&self) -> &DynamoReceipts {
        match self {
            Access::ReadOnly(receipts) => receipts,
            Access::Redrive { handler, .. } => &handler.receipts,
        }
    }
}

/// The console's state: its gate, what it may do, and the result of the last redrive, shown
/// once on its receipt's page.
struct Console {
    gate: Mutex<Gate>,
    access: Access,
    redriven: Mutex<Option<(String, Redriven)>>,
}

/// Serves the console on 127.0.0.1:`port` (0: a free port) until `shutdown` resolves. Prints
/// the login URL on stdout first.
pub async fn serve(
    access: Access,
    port: u16,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let port = listener.local_addr()?.port();
    let gate = Gate::new(port, random_token()?, random_token()?, random_token()?);
    let link = gate.login_path().unwrap_or_default();
    print_url(&format!("http://127.0.0.1:{port}{link}"));
    let mode = if matches!(access, Access::ReadOnly(_)) { " (read-only)" } else { "" };
    eprintln!("stream-worker: the console{mode} is at the URL above (it works once; Ctrl-C stops the console)");
    let console = Arc::new(Console { gate: Mutex::new(gate), access, redriven: Mutex::new(None) });
    let app = Router::new()
        .route("/", get(list))
        .route("/receipt", get(receipt))
        .route("/redrive", post(redrive))
        .route("/login", get(login))
        .route("/console.css", get(css))
        .layer(middleware::from_fn_with_state(console.clone(), gatekeeper))
        .with_state(console);
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await?;
    Ok(())
}

/// Every request: the Host first, then the browser's `Sec-Fetch-Site`, then the session (but
/// for the login link and the stylesheet); every answer gets the gate's headers.
async fn gatekeeper(State(console): State<Arc<Console>>, request: Request, next: Next) -> Response {
    let mut response = match admit(&console, &request) {
        Ok(()) => next.run(request).await,
        Err(refusal) => refused(refusal),
    };
    for (name, value) in guard::HEADERS {
        response.headers_mut().insert(name, HeaderValue::from_static(value));
    }
    response
}

/// The gate's verdict on a request's Host and session cookie.
fn admit(console: &Console, request: &Request) -> Result<(), Refusal> {
    let text = |name| request.headers().get(name).and_then(|v: &HeaderValue| v.to_str().ok());
    let open = matches!(request.uri().path(), "/login" | "/console.css");
    let mut gate = console.gate.lock().unwrap_or_else(|e| e.into_inner());
    gate.host(text(header::HOST))?;
    gate.fetch_site(text(HeaderName::from_static("sec-fetch-site")))?;
    if open {
        Ok(())
    } else {
        gate.session(text(header::COOKIE), now_millis())
    }
}

#[derive(Deserialize)]
struct LoginQuery {
    token: Option<String>,
}

/// The login link: the token becomes the session cookie, and the browser goes to the list
/// (so the token leaves the address bar and the history's last entry).
async fn login(State(console): State<Arc<Console>>, query: Result<Query<LoginQuery>, QueryRejection>) -> Response {
    let token = query.ok().and_then(|Query(q)| q.token).unwrap_or_default();
    let traded = console.gate.lock().unwrap_or_else(|e| e.into_inner()).login(&token, now_millis());
    match traded {
        Ok(cookie) => {
            (StatusCode::SEE_OTHER, [(header::LOCATION, "/".to_owned()), (header::SET_COOKIE, cookie)]).into_response()
        }
        Err(refusal) => refused(refusal),
    }
}

async fn css() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], pages::CSS).into_response()
}

async fn list(State(console): State<Arc<Console>>, query: Result<Query<ListQuery>, QueryRejection>) -> Response {
    let none = Page::default();
    let Ok(Query(query)) = query else {
        let error = "The filter could not be read (a field given twice?).";
        return page(StatusCode::BAD_REQUEST, pages::list(&[], &Filter::default(), &none, Some(error)));
    };
    let filter = match Filter::read(&query) {
        Ok(filter) => filter,
        Err(error) => return page(StatusCode::BAD_REQUEST, pages::list(&[], &Filter::default(), &none, Some(&error))),
    };
    let ask = Ask {
        view: filter.view(),
        profile: filter.profile,
        since: filter.since.as_ref().map(|(_, since)| since.cutoff(now_millis())),
        after: filter.after.clone(),
        size: pages::PAGE,
    };
    match console.access.receipts().page(&ask).await {
        Ok(read) => {
            let rows: Vec<_> = read.items.iter().map(operate::summary).collect();
            page(StatusCode::OK, pages::list(&rows, &filter, &read, None))
        }
        Err(error) => failed(&error),
    }
}

#[derive(Deserialize)]
struct ReceiptQuery {
    profile: String,
    id: String,
    payload: Option<String>,
}

async fn receipt(State(console): State<Arc<Console>>, query: Result<Query<ReceiptQuery>, QueryRejection>) -> Response {
    let Some((Query(query), profile)) = query.ok().and_then(|q| Profile::parse(&q.profile).map(|p| (q, p))) else {
        return page(
            StatusCode::NOT_FOUND,
            pages::message("Not found", "No such receipt: the link needs a sender profile and a submission ID."),
        );
    };
    let key = profile.key(&query.id);
    match console.access.receipts().find(&key, &query.id).await {
        Ok(item) => {
            let shown = operate::describe(&item, query.payload.as_deref() == Some("1"));
            // The result of a redrive, once: a reload shows the receipt as it is.
            let mut last = console.redriven.lock().unwrap_or_else(|e| e.into_inner());
            let redriven = last.take_if(|(of, _)| *of == key).map(|(_, r)| r);
            // A read-only console offers no redrive, so its pages carry no form token.
            let token = match console.access {
                Access::ReadOnly(_) => None,
                Access::Redrive { .. } => {
                    Some(console.gate.lock().unwrap_or_else(|e| e.into_inner()).form_token().to_owned())
                }
            };
            page(StatusCode::OK, pages::receipt(&shown, redriven.as_ref(), token.as_deref()))
        }
        Err(error) => failed(&error),
    }
}

#[derive(Deserialize, Default)]
struct RedriveForm {
    profile: Option<String>,
    id: Option<String>,
    form_token: Option<String>,
}

/// The redrive button: what `receipts redrive <id> --profile <name>` runs, then back to the
/// receipt's page (a GET: reloading it does not post again).
async fn redrive(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    form: Result<Form<RedriveForm>, FormRejection>,
) -> Response {
    // A read-only console redrives nothing, whatever the form says.
    let Access::Redrive { handler, wait } = &console.access else {
        return refused(Refusal::ReadOnly);
    };
    let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
    // A body that is no form has no form token either: refused as such.
    let form = form.map(|Form(form)| form).unwrap_or_default();
    let checked = console.gate.lock().unwrap_or_else(|e| e.into_inner()).post(origin, form.form_token.as_deref());
    if let Err(refusal) = checked {
        return refused(refusal);
    }
    let (Some(profile), Some(id)) = (form.profile.as_deref().and_then(Profile::parse), form.id) else {
        return page(StatusCode::BAD_REQUEST, pages::message("No such receipt", "The form names no receipt."));
    };
    let key = profile.key(&id);
    let mode = RedriveMode { only_failed: false, force: false, wait: *wait };
    match operate::redrive(handler, std::slice::from_ref(&key), mode, |_, _| {}).await {
        Ok(mut results) if !results.is_empty() => {
            let result = results.remove(0);
            eprintln!(
                "stream-worker: console: redrive {} {:?}: {} -> {}",
                result.profile, result.submission_id, result.was, result.outcome
            );
            *console.redriven.lock().unwrap_or_else(|e| e.into_inner()) = Some((key, result));
            let to = pages::receipt_link(profile.name(), &id, false);
            (StatusCode::SEE_OTHER, [(header::LOCATION, to)]).into_response()
        }
        Ok(_) => page(StatusCode::NOT_FOUND, pages::message("Not found", "No such receipt.")),
        Err(error) => failed(&error),
    }
}

fn page(status: StatusCode, markup: Markup) -> Response {
    (status, Html(markup.into_string())).into_response()
}

fn refused(refusal: Refusal) -> Response {
    let status = StatusCode::from_u16(refusal.status()).unwrap_or(StatusCode::FORBIDDEN);
    page(status, pages::message("Refused", refusal.message()))
}

/// A read or a redrive the table refused: the error says what to check, as the command's does.
fn failed(error: &OperateError) -> Response {
    let status = match error {
        OperateError::UnknownSubmission { .. } => StatusCode::NOT_FOUND,
        _ => StatusCode::BAD_GATEWAY,
    };
    page(status, pages::message("Could not read the receipts", &error.to_string()))
}

fn random_token() -> anyhow::Result<String> {
    let mut random = [0u8; 32];
    getrandom::getrandom(&mut random).map_err(|e| anyhow::anyhow!("no randomness for the console's tokens: {e}"))?;
    Ok(shared::hex::encode(&random))
}

/// The login URL, on stdout (flushed: a script reads it while the console runs).
#[allow(clippy::print_stdout)]
fn print_url(url: &str) {
    use std::io::Write;
    println!("{url}");
    let _ = std::io::stdout().flush();
}
