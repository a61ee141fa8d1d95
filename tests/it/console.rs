//! `stream-worker console`, the built binary against ministack (SigV4, the operator's IAM
//! key) with a SQLite sink, driven by headless Chromium through chromedriver: log in with the
//! printed token, filter, open a receipt whose form holds markup and script (shown as text,
//! never run), redrive a FAILED receipt to COMPLETED while the stream runs, and a reload does
//! not redrive again. Over plain HTTP, the gate: a wrong Host, no session, a used or wrong
//! login token, a POST from another origin or without the form token are refused.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fantoccini::Locator;
use shared::receipt::PENDING_SHARD;
use stream_worker::config::SinkConfig;
use stream_worker::handler::Handler;
use stream_worker::sink::Sink;
use tests::aws::{put_item, receipt, sdk_config};
use tests::browser::Browser;
use tests::delivery;
use tests::worker;

use crate::operate::{world, Refusing, World};

/// What a visitor typed into the form's message: markup, a script, an attribute breakout.
const MARKUP: &str = "<script>window.pwned=1</script><b>bold</b>\"><img src=x onerror=\"window.pwned=2\">";

/// The console, stopped by its own PID when dropped; its stderr read at the end.
struct Console {
    child: Child,
    port: u16,
    login: String,
}

impl Console {
    /// `stream-worker console` with these arguments, and the sink's settings unless
    /// `read_only` (a read-only console needs only the table).
    fn start(w: &World, args: &[&str]) -> Console {
        let mut command = w.command(&[&["console"], args].concat());
        if args.contains(&"--read-only") {
            command.env_remove("LEAD_SINK");
        }
        let child =
            command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("stream-worker console starts");
        // Held from here on, so a failure below still stops it.
        let mut console = Console { child, port: 0, login: String::new() };
        let mut line = String::new();
        BufReader::new(console.child.stdout.take().unwrap()).read_line(&mut line).expect("the login URL");
        if line.is_empty() {
            // It ended before printing (the pipe closed): what it said.
            let mut why = String::new();
            let _ = console.child.stderr.take().unwrap().read_to_string(&mut why);
            panic!("stream-worker console printed no URL: {why}");
        }
        let url = line.trim().to_owned();
        let rest = url.strip_prefix("http://127.0.0.1:").unwrap_or_else(|| panic!("a URL on 127.0.0.1: {url:?}"));
        let (port, path) = rest.split_once('/').expect("a path after the port");
        assert!(path.starts_with("login?token=") && path.len() > 70, "a login link with a long token: {url}");
        console.port = port.parse().unwrap();
        console.login = url;
        console
    }

    fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Stops the console; what it wrote on stderr.
    fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut text = String::new();
        let _ = self.child.stderr.take().unwrap().read_to_string(&mut text);
        text
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether an answer carries the gate's headers: no script, no framing, no sniffing, no cache.
fn guarded(answer: &str) -> bool {
    let head = answer.split("\r\n\r\n").next().unwrap_or("").to_ascii_lowercase();
    [
        "content-security-policy: default-src 'none'; style-src 'self'",
        "x-frame-options: deny",
        "x-content-type-options: nosniff",
        "cache-control: no-store",
        "referrer-policy: same-origin",
    ]
    .iter()
    .all(|header| head.contains(header))
}

/// One request with exactly these headers (a `Host` of our choosing): the status and the
/// whole answer, head and body.
fn raw(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let url = format!("http://127.0.0.1:{port}{path}");
    let answer = tests::http::send_raw_bytes(method, &url, headers, body.as_bytes()).expect("the console answers");
    let head: String = answer.headers.iter().map(|(name, value)| format!("{name}: {value}\r\n")).collect();
    (answer.status, format!("{head}\r\n{}", answer.body))
}

#[tokio::test(flavor = "multi_thread")]
async fn an_operator_finds_a_failed_receipt_in_the_browser_and_redrives_it_once() {
    let w = world();
    let config = sdk_config(&w.store, &w.worker_key).await;
    let sqlite = || SinkConfig::Sqlite { path: w.leads_db().display().to_string() };
    let marked = receipt(&delivery::body("sub_markup", MARKUP, 1_796_019_713), tests::now_millis() - 20_000);
    put_item(&w.store, "receipts", &marked.to_item());
    w.deliver("sub_fine", 10_000);
    // Between the two: "received since" this shows sub_fine alone.
    let between = shared::time::iso8601_millis(tests::now_millis() - 15_000);
    // The stream's pass: the sink refuses sub_markup (FAILED) and writes sub_fine.
    let poller = worker::poller(&config, "receipts", w.dir.0.join("checkpoint.json"));
    let refusing = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: Refusing { inner: Sink::connect(&sqlite()).await.unwrap(), refuse: &["sub_markup"] },
        receipts: worker::receipts(&config, "receipts"),
    };
    worker::drain(&poller, &refusing).await;
    assert_eq!((w.status("sub_markup"), w.status("sub_fine")), ("FAILED".into(), "COMPLETED".into()));
    // From now on the stream runs with a sink that accepts everything, as the deployed
    // function would once the cause is fixed.
    let healthy = Handler {
        backoff: Default::default(),
        mapping: Default::default(),
        sink: Sink::connect(&sqlite()).await.unwrap(),
        receipts: worker::receipts(&config, "receipts"),
    };
    let running = Arc::new(AtomicBool::new(true));
    let stream = {
        let running = running.clone();
        tokio::spawn(async move {
            while running.load(Ordering::SeqCst) {
                poller.pass(&healthy).await.unwrap();
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
    };

    let console = Console::start(&w, &["--wait", "60s"]);
    let (port, base) = (console.port, console.base());
    let host = format!("127.0.0.1:{port}");
    let login_path = console.login.strip_prefix(&base).unwrap().to_owned();

    // The gate, before anyone logs in: another Host (a DNS-rebinding page) is refused, even
    // with the right token; no session is refused; a wrong token is refused and does not use
    // up the right one.
    // It listens on 127.0.0.1 alone: another loopback address reaches nothing.
    assert!(std::net::TcpStream::connect(("127.0.0.2", port)).is_err(), "listening beyond 127.0.0.1");
    let (status, answer) = raw(port, "GET", &login_path, &[("Host", &format!("rebind.example:{port}"))], "");
    assert_eq!(status, 421, "{answer}");
    assert!(!answer.to_ascii_lowercase().contains("set-cookie") && guarded(&answer), "{answer}");
    let (status, answer) = raw(port, "GET", "/", &[("Host", &host)], "");
    assert_eq!(status, 401, "{answer}");
    assert!(answer.contains("Reload this page") && guarded(&answer), "{answer}");
    let payload = "/receipt?profile=staticforms&id=sub_markup&payload=1";
    let (status, answer) = raw(port, "GET", payload, &[("Host", &host)], "");
    assert!(status == 401 && !answer.contains("pwned") && !answer.contains("sub_markup"), "{answer}");
    let (status, answer) = raw(port, "GET", "/login?token=0000", &[("Host", &host)], "");
    assert!(status == 401 && guarded(&answer), "{answer}");

    let browser = Browser::start().await;
    let c = &browser.client;
    // Logging in: the token becomes a cookie script cannot read, and the address bar loses it.
    c.goto(&console.login).await.unwrap();
    assert_eq!(c.current_url().await.unwrap().as_str(), format!("{base}/"));
    let cookies = c.get_all_cookies().await.unwrap();
    let name = format!("console_session_{port}");
    let session = cookies.iter().find(|k| k.name() == name).expect("the session cookie, named for the port");
    assert_eq!((session.http_only(), session.same_site()), (Some(true), Some(cookie::SameSite::Strict)));
    let session = format!("{name}={}", session.value());
    // The first view is what needs attention (RECEIVED and FAILED, from their indexes): the
    // COMPLETED sub_fine is under "any (a scan)".
    let page = browser.source().await;
    assert!(page.contains("sub_markup") && !page.contains("sub_fine"), "{page}");
    assert!(page.contains("This page read "), "{page}");
    // The login link worked once.
    let (status, _) = raw(port, "GET", &login_path, &[("Host", &host)], "");
    assert_eq!(status, 401, "a used login token");
    // The time and profile filters, as the form sends them.
    let get = |path: &str| raw(port, "GET", path, &[("Host", &host), ("Cookie", &session)], "");
    let (status, recent) = get(&format!("/?status=all&since={between}"));
    assert!(status == 200 && recent.contains("sub_fine") && !recent.contains("sub_markup"), "{recent}");
    let (status, both) = get("/?profile=staticforms&status=all");
    assert!(status == 200 && both.contains("sub_fine") && both.contains("sub_markup"), "{both}");
    let (status, typeform) = get("/?profile=typeform&status=");
    assert!(status == 200 && typeform.contains("No receipts match.") && !typeform.contains("sub_fine"), "{typeform}");
    let (status, wrong) = get("/?since=yesterday");
    assert!(status == 400 && wrong.contains("neither an ISO-8601"), "{wrong}");
    // The session cookie reaches every port of 127.0.0.1 (RFC 6265), so a page another local
    // server serves could make the browser GET the console with it: the browser says so in
    // Sec-Fetch-Site (another port is `same-site`), and that is refused. Chromium sends
    // `none` and `same-origin` for the console's own flow (the browser steps above and below).
    for site in ["same-site", "cross-site"] {
        let headers = [("Host", host.as_str()), ("Cookie", session.as_str()), ("Sec-Fetch-Site", site)];
        let (status, answer) = raw(port, "GET", "/?status=FAILED", &headers, "");
        assert!(status == 403 && !answer.contains("sub_markup") && guarded(&answer), "{site}: {answer}");
    }
    let own = [("Host", host.as_str()), ("Cookie", session.as_str()), ("Sec-Fetch-Site", "same-origin")];
    assert_eq!(raw(port, "GET", "/?status=FAILED", &own, "").0, 200);

    // Filtering by status: only the FAILED one.
    c.find(Locator::Css("select[name=status]")).await.unwrap().select_by_value("FAILED").await.unwrap();
    c.find(Locator::Css("form.filter button")).await.unwrap().click().await.unwrap();
    browser.until_url("the filtered list", |url| url.contains("status=FAILED")).await;
    let page = browser.source().await;
    assert!(page.contains("sub_markup") && page.contains("sink_rejected") && !page.contains("sub_fine"), "{page}");
    // docs/console.png is this page (CONSOLE_SCREENSHOT=docs/console.png).
    if let Ok(path) = std::env::var("CONSOLE_SCREENSHOT") {
        std::fs::write(path, c.screenshot().await.unwrap()).unwrap();
    }

    // The receipt, then its form's contents: what the visitor wrote is shown as text.
    c.find(Locator::LinkText("sub_markup")).await.unwrap().click().await.unwrap();
    browser.until_url("the receipt's page", |url| url.contains("/receipt?") && url.contains("id=sub_markup")).await;
    assert!(!browser.source().await.contains("window.pwned"), "no form contents until asked");
    c.find(Locator::LinkText("Show the form's contents")).await.unwrap().click().await.unwrap();
    browser.until_url("the form's contents", |url| url.contains("payload=1")).await;
    let shown = c.find(Locator::Css("pre")).await.unwrap().text().await.unwrap();
    assert!(shown.contains("<script>window.pwned=1</script><b>bold</b>"), "{shown}");
    assert!(c.find_all(Locator::Css("script, img, b")).await.unwrap().is_empty(), "markup became elements");
    let pwned = c.execute("return typeof window.pwned", vec![]).await.unwrap();
    assert_eq!(pwned, "undefined", "the visitor's script ran");

    // Redrive: the button runs `receipts redrive`, the stream settles it, the page says so.
    let before = w.store.get("receipts", &delivery::key("sub_markup")).unwrap();
    c.find(Locator::Css("form[action='/redrive'] button")).await.unwrap().click().await.unwrap();
    // Back to the receipt's page (a GET, without the form's contents), not left on the POST.
    browser
        .until_url("the receipt after the redrive", |url| url.contains("/receipt?") && !url.contains("payload"))
        .await;
    let page = browser.source().await;
    assert!(page.contains("Redrive: FAILED → completed"), "{page}");
    assert!(page.contains("<td class=\"COMPLETED\">COMPLETED</td>"), "{page}");
    assert_eq!(w.status("sub_markup"), "COMPLETED");
    let after = w.store.get("receipts", &delivery::key("sub_markup")).unwrap();
    assert!(before.get("redrivenAt").is_none() && after["redrivenAt"]["S"].is_string(), "{after}");
    assert!(after.get(PENDING_SHARD).is_none());

    // A reload is a GET of the receipt: no second redrive (the console logs each), and the
    // notice is not shown again.
    c.refresh().await.unwrap();
    let page = browser.source().await;
    assert!(
        !page.contains("Redrive:") && page.contains("COMPLETED") && !page.contains("action=\"/redrive\""),
        "{page}"
    );
    assert_eq!(w.leads(), [delivery::lead("sub_fine", 1), delivery::lead("sub_markup", 1)]);

    // A POST needs the console's origin and the form token, even with the session cookie.
    let form = "profile=staticforms&id=sub_markup";
    let post = |headers: &[(&str, &str)], body: &str| raw(port, "POST", "/redrive", headers, body);
    let content = ("Content-Type", "application/x-www-form-urlencoded");
    let origin = format!("http://{host}");
    let (status, answer) = post(&[("Host", &host), ("Cookie", &session), ("Origin", &origin), content], form);
    assert!(status == 403 && answer.contains("form's token") && guarded(&answer), "no form token: {answer}");
    let json = ("Content-Type", "application/json");
    let (status, answer) = post(&[("Host", &host), ("Cookie", &session), ("Origin", &origin), json], "{}");
    assert!(status == 403 && answer.contains("form's token"), "a body that is no form: {answer}");
    let token = c.find(Locator::Css("input[name=form_token]")).await;
    assert!(token.is_err(), "a COMPLETED receipt has no redrive form");
    let with_token = format!("{form}&form_token=0000");
    let (status, _) = post(&[("Host", &host), ("Cookie", &session), ("Origin", &origin), content], &with_token);
    assert_eq!(status, 403, "a wrong form token");
    let (status, answer) =
        post(&[("Host", &host), ("Cookie", &session), ("Origin", "http://evil.example"), content], form);
    assert!(status == 403 && answer.contains("did not come from this console") && guarded(&answer), "{answer}");
    let (status, answer) = post(&[("Host", &host), ("Cookie", &session), content], form);
    assert!(status == 403 && answer.contains("did not come from this console"), "no origin: {answer}");
    let (status, _) = post(&[("Host", "evil.example"), ("Cookie", &session), ("Origin", &origin), content], form);
    assert_eq!(status, 421, "another Host");
    let (status, _) = post(&[("Host", &host), ("Origin", &origin), content], form);
    assert_eq!(status, 401, "no session");
    // Every answer forbids script and framing, pages and refusals alike.
    let (status, answer) = get("/");
    assert!(status == 200 && guarded(&answer), "{answer}");

    browser.stop().await;
    running.store(false, Ordering::SeqCst);
    stream.await.unwrap();
    let log = console.stop();
    assert_eq!(log.matches("console: redrive").count(), 1, "one redrive: {log}");
    assert!(!log.contains(delivery::VISITOR_EMAIL) && !log.contains("pwned"), "no form contents in the log: {log}");
}

/// `console --read-only`, started without the sink's settings: it lists and shows receipts,
/// offers no redrive (no form, no form token), and refuses a redrive POST that is otherwise
/// well formed: the receipt stays FAILED and nothing is written.
#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_console_needs_no_sink_and_redrives_nothing() {
    let w = world();
    w.deliver("sub_waiting", 10_000);
    let mut failed = receipt(&delivery::body("sub_refused", "Hello", 1_796_019_713), tests::now_millis() - 20_000);
    failed.status = shared::receipt::ReceiptStatus::Failed;
    failed.failed_at = Some(shared::time::iso8601_millis(tests::now_millis() - 10_000));
    failed.failure_reason = Some("sink_rejected".into());
    put_item(&w.store, "receipts", &failed.to_item());

    let console = Console::start(&w, &["--read-only"]);
    let port = console.port;
    let host = format!("127.0.0.1:{port}");
    let login_path = console.login.strip_prefix(&console.base()).unwrap().to_owned();
    let (status, answer) = raw(port, "GET", &login_path, &[("Host", &host)], "");
    assert_eq!(status, 303, "{answer}");
    let name = format!("console_session_{port}=");
    let cookie = answer
        .lines()
        .find_map(|line| line.to_ascii_lowercase().starts_with("set-cookie:").then(|| line[11..].trim().to_owned()))
        .expect("a session cookie");
    let session = cookie.split(';').next().unwrap().to_owned();
    assert!(session.starts_with(&name), "{session}");
    let get = |path: &str| raw(port, "GET", path, &[("Host", &host), ("Cookie", &session)], "");

    let (status, list) = get("/");
    assert!(status == 200 && list.contains("sub_waiting") && list.contains("sub_refused"), "{list}");
    let (status, failed) = get("/?status=FAILED");
    assert!(status == 200 && failed.contains("sub_refused") && !failed.contains("sub_waiting"), "{failed}");
    let (status, page) = get("/receipt?profile=staticforms&id=sub_refused");
    assert!(status == 200 && page.contains("sink_rejected") && guarded(&page), "{page}");
    assert!(!page.contains("action=\"/redrive\"") && !page.contains("form_token"), "no redrive form: {page}");
    assert!(page.contains("A read-only console: redrive with"), "{page}");

    let form = "profile=staticforms&id=sub_refused&form_token=0000";
    let headers = [
        ("Host", host.as_str()),
        ("Cookie", session.as_str()),
        ("Origin", &format!("http://{host}")),
        ("Content-Type", "application/x-www-form-urlencoded"),
    ];
    let (status, answer) = raw(port, "POST", "/redrive", &headers, form);
    assert!(status == 403 && answer.contains("read-only") && guarded(&answer), "{answer}");
    assert_eq!(w.status("sub_refused"), "FAILED");
    assert!(w.store.get("receipts", &delivery::key("sub_refused")).unwrap().get("redrivenAt").is_none());
    assert!(!w.leads_db().exists(), "no sink was opened");
    let log = console.stop();
    assert!(log.contains("the console (read-only) is at the URL above"), "{log}");
}
