//! The console's gate, decided without I/O: the only Hosts and Origins it answers, the browser's
//! `Sec-Fetch-Site` on every request, the one-time login token traded for a session cookie that
//! ends after [`IDLE_MILLIS`] unused, the form token of every POST, and the headers every
//! answer carries.

use cookie::{Cookie, SameSite};
use subtle::ConstantTimeEq;

/// The session cookie's name, before the console's port: browsers keep cookies apart by name
/// and host, not by port, so two consoles at once each keep their own.
pub const COOKIE: &str = "console_session_";

/// The headers on every answer: no script, style only from the console itself, no framing,
/// forms only to itself, a referrer only within the console (a link out would not carry a
/// receipt's URL; `no-referrer` would make browsers send `Origin: null` with the console's own
/// forms), no cache (receipts are personal data).
pub const HEADERS: [(&str, &str); 6] = [
    (
        "content-security-policy",
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    ("x-content-type-options", "nosniff"),
    ("x-frame-options", "DENY"),
    ("referrer-policy", "same-origin"),
    ("cache-control", "no-store"),
    ("cross-origin-opener-policy", "same-origin"),
];

/// A session unused this long ends (30 minutes): a console left open in a browser does not
/// stay logged in for the rest of the day.
pub const IDLE_MILLIS: u64 = 30 * 60 * 1000;

/// Why a request is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A `Host` other than 127.0.0.1 or localhost on the console's port (a DNS rebinding page).
    WrongHost,
    /// No session cookie, or not this console's.
    NotLoggedIn,
    /// The login token is wrong, or was used already.
    BadLoginToken,
    /// A POST whose `Origin` is not the console's own (another site's form).
    CrossOrigin,
    /// A POST without this session's form token.
    NoFormToken,
    /// A browser said the request came from another page than the console's own
    /// (`Sec-Fetch-Site` other than `same-origin` or `none`): another site, or another server on
    /// 127.0.0.1 (browsers send cookies to every port of a host, RFC 6265).
    OtherSite,
    /// The session was not used for [`IDLE_MILLIS`].
    Idle,
    /// A redrive asked of a console started with `--read-only`.
    ReadOnly,
}

impl Refusal {
    /// The answer's status.
    pub fn status(self) -> u16 {
        match self {
            Refusal::WrongHost => 421,
            Refusal::NotLoggedIn | Refusal::BadLoginToken | Refusal::Idle => 401,
            Refusal::CrossOrigin | Refusal::NoFormToken | Refusal::OtherSite | Refusal::ReadOnly => 403,
        }
    }

    /// What the page says.
    pub fn message(self) -> &'static str {
        match self {
            Refusal::WrongHost => "This console answers only at 127.0.0.1 or localhost.",
            Refusal::NotLoggedIn => {
                "Not logged in. Just logged in? Reload this page (a browser sends no SameSite=Strict cookie after a link from another site). Otherwise open the URL the console printed; it works once, so restart the console for a new one."
            }
            Refusal::BadLoginToken => {
                "That login link is not valid (each works once): restart the console for a new one."
            }
            Refusal::CrossOrigin => "Refused: the form did not come from this console.",
            Refusal::NoFormToken => "Refused: the form's token is missing or wrong; reload the page and try again.",
            Refusal::OtherSite => {
                "Refused: the request came from another page than this console's. Open the console's URL yourself (from the terminal or the address bar)."
            }
            Refusal::Idle => "The session ended after 30 minutes unused: restart the console for a new login URL.",
            Refusal::ReadOnly => {
                "Refused: this console is read-only (--read-only). Redrive with `stream-worker receipts redrive`, or from a console started with the sink's settings."
            }
        }
    }
}

/// The console's secrets and its port.
pub struct Gate {
    port: u16,
    /// The login token, until it is used.
    login: Option<String>,
    session: String,
    form: String,
    /// When the session was last used (epoch milliseconds), once logged in.
    last_used: Option<u64>,
}

impl Gate {
    /// A gate for a console on `port`, with three random tokens: the login link's, the
    /// session cookie's, and the forms'.
    pub fn new(port: u16, login: String, session: String, form: String) -> Gate {
        Gate { port, login: Some(login), session, form, last_used: None }
    }

    /// The path and query of the login link (`None` once it was used).
    pub fn login_path(&self) -> Option<String> {
        self.login.as_ref().map(|token| format!("/login?token={token}"))
    }

    /// The forms' token.
    pub fn form_token(&self) -> &str {
        &self.form
    }

    /// The session cookie's name: [`COOKIE`] and the port.
    pub fn cookie_name(&self) -> String {
        format!("{COOKIE}{}", self.port)
    }

    /// Whether `host` (the `Host` header) names this console: `127.0.0.1` or `localhost` with
    /// its port (without one only on port 80).
    pub fn host(&self, host: Option<&str>) -> Result<(), Refusal> {
        let host = host.ok_or(Refusal::WrongHost)?;
        let (name, port) = match host.rsplit_once(':') {
            Some((name, port)) => (name, port.parse::<u16>().ok()),
            None => (host, Some(80)),
        };
        let local = name == "127.0.0.1" || name.eq_ignore_ascii_case("localhost");
        if local && port == Some(self.port) {
            Ok(())
        } else {
            Err(Refusal::WrongHost)
        }
    }

    /// Whether a browser's `Sec-Fetch-Site` (`fetch_site`) lets the request in: `same-origin`
    /// (the console's own pages) or `none` (a URL the user opened: the login link from the
    /// terminal, the address bar, a bookmark). `same-site` is refused too: another port of
    /// 127.0.0.1 is the same site. Without the header (not a browser, or an old one) the other
    /// checks decide.
    pub fn fetch_site(&self, fetch_site: Option<&str>) -> Result<(), Refusal> {
        match fetch_site {
            None => Ok(()),
            Some(site) if site.eq_ignore_ascii_case("same-origin") || site.eq_ignore_ascii_case("none") => Ok(()),
            Some(_) => Err(Refusal::OtherSite),
        }
    }

    /// Trades the login token for the session cookie (a `Set-Cookie` value), once, at `now`
    /// (epoch milliseconds).
    pub fn login(&mut self, token: &str, now: u64) -> Result<String, Refusal> {
        let matches = self.login.as_deref().is_some_and(|login| same(login, token));
        if !matches {
            return Err(Refusal::BadLoginToken);
        }
        self.login = None;
        self.last_used = Some(now);
        let cookie = Cookie::build((self.cookie_name(), self.session.clone()))
            .http_only(true)
            .same_site(SameSite::Strict)
            .path("/")
            .build();
        Ok(cookie.to_string())
    }

    /// Whether the `Cookie` header holds this console's session, used within [`IDLE_MILLIS`]
    /// before `now` (epoch milliseconds); a request it admits uses it again. Once idle, the
    /// session stays ended.
    pub fn session(&mut self, cookies: Option<&str>, now: u64) -> Result<(), Refusal> {
        let name = self.cookie_name();
        let mut all = Cookie::split_parse(cookies.unwrap_or(""));
        let found = all.any(|c| c.is_ok_and(|c| c.name() == name && same(c.value(), &self.session)));
        if !found {
            return Err(Refusal::NotLoggedIn);
        }
        match self.last_used {
            Some(last) if now.saturating_sub(last) <= IDLE_MILLIS => {
                self.last_used = Some(now.max(last));
                Ok(())
            }
            _ => {
                self.last_used = None;
                Err(Refusal::Idle)
            }
        }
    }

    /// Whether a POST is this console's own form: its `Origin` is the console (browsers send
    /// one with every POST), and it carries the form token.
    pub fn post(&self, origin: Option<&str>, form_token: Option<&str>) -> Result<(), Refusal> {
        let origin = origin.ok_or(Refusal::CrossOrigin)?;
        let host = origin.strip_prefix("http://").ok_or(Refusal::CrossOrigin)?;
        self.host(Some(host)).map_err(|_| Refusal::CrossOrigin)?;
        match form_token {
            Some(token) if same(token, &self.form) => Ok(()),
            _ => Err(Refusal::NoFormToken),
        }
    }
}

/// Equal, in time that does not depend on where they differ.
fn same(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate() -> Gate {
        Gate::new(8123, "login-1".into(), "session-1".into(), "form-1".into())
    }

    #[test]
    fn only_the_loopback_names_on_the_console_s_port_are_answered() {
        let g = gate();
        for good in ["127.0.0.1:8123", "localhost:8123", "LOCALHOST:8123"] {
            assert_eq!(g.host(Some(good)), Ok(()), "{good}");
        }
        for bad in [
            "evil.example:8123",
            "127.0.0.1:8124",
            "127.0.0.1",
            "localhost",
            "127.0.0.2:8123",
            "[::1]:8123",
            "localhost.evil.example:8123",
            "127.0.0.1:8123:1",
            "",
        ] {
            assert_eq!(g.host(Some(bad)), Err(Refusal::WrongHost), "{bad}");
        }
        assert_eq!(g.host(None), Err(Refusal::WrongHost));
        let on_80 = Gate::new(80, "l".into(), "s".into(), "f".into());
        assert_eq!((on_80.host(Some("localhost")), on_80.host(Some("localhost:80"))), (Ok(()), Ok(())));
    }

    #[test]
    fn the_login_token_works_once_for_a_strict_http_only_cookie() {
        let mut g = gate();
        assert_eq!(g.login_path().as_deref(), Some("/login?token=login-1"));
        assert_eq!(g.login("login-2", 0), Err(Refusal::BadLoginToken));
        assert_eq!(g.login("login-", 0), Err(Refusal::BadLoginToken));
        let cookie = g.login("login-1", 0).unwrap();
        let parsed = Cookie::parse(cookie.as_str()).unwrap();
        assert_eq!((parsed.name(), parsed.value()), ("console_session_8123", "session-1"));
        assert_eq!(
            (parsed.http_only(), parsed.same_site(), parsed.path()),
            (Some(true), Some(SameSite::Strict), Some("/"))
        );
        assert_eq!(g.login("login-1", 0), Err(Refusal::BadLoginToken), "used once");
        assert_eq!(g.login_path(), None);
    }

    #[test]
    fn the_session_is_the_cookie_s_exact_value() {
        let mut g = gate();
        // Not logged in yet: the right cookie is not a session.
        assert_eq!(g.session(Some("console_session_8123=session-1"), 0), Err(Refusal::Idle));
        g.login("login-1", 0).unwrap();
        assert_eq!(g.session(Some("a=1; console_session_8123=session-1"), 0), Ok(()));
        assert_eq!(g.session(Some("console_session_8123=session-1"), 0), Ok(()));
        for bad in [
            "console_session_8123=session-2",
            "console_session_8123=session-",
            "console_session_8124=session-1",
            "console_session=session-1",
            "other=session-1",
            "",
            "garbage;;=",
        ] {
            assert_eq!(g.session(Some(bad), 0), Err(Refusal::NotLoggedIn), "{bad}");
        }
        assert_eq!(g.session(None, 0), Err(Refusal::NotLoggedIn));
    }

    #[test]
    fn a_session_unused_for_thirty_minutes_ends_for_good() {
        let mut g = gate();
        let cookie = Some("console_session_8123=session-1");
        g.login("login-1", 1_000).unwrap();
        // Each use starts the idle time again: 29 minutes, then 30 minutes exactly, are in time.
        assert_eq!(g.session(cookie, 1_000 + 29 * 60_000), Ok(()));
        assert_eq!(g.session(cookie, 1_000 + 59 * 60_000), Ok(()));
        // A request whose clock reads earlier (two at once) does not move the time back.
        assert_eq!(g.session(cookie, 1_000), Ok(()));
        assert_eq!(g.session(cookie, 1_000 + 59 * 60_000 + IDLE_MILLIS), Ok(()));
        // One millisecond past 30 minutes unused: ended, and it stays ended.
        let last = 1_000 + 59 * 60_000 + IDLE_MILLIS;
        assert_eq!(g.session(cookie, last + IDLE_MILLIS + 1), Err(Refusal::Idle));
        assert_eq!(g.session(cookie, last + IDLE_MILLIS + 2), Err(Refusal::Idle));
        assert_eq!(g.session(cookie, last), Err(Refusal::Idle));
        // A wrong cookie is still "not logged in", not "idle".
        assert_eq!(g.session(Some("console_session_8123=x"), last), Err(Refusal::NotLoggedIn));
        assert_eq!(IDLE_MILLIS, 1_800_000);
    }

    #[test]
    fn only_the_console_s_own_pages_and_urls_the_user_opened_pass_sec_fetch_site() {
        let g = gate();
        for good in [Some("same-origin"), Some("none"), Some("Same-Origin"), None] {
            assert_eq!(g.fetch_site(good), Ok(()), "{good:?}");
        }
        // Another port of 127.0.0.1 is `same-site`: the case the cookie alone does not stop.
        for bad in ["same-site", "cross-site", "", "same-origin, cross-site"] {
            assert_eq!(g.fetch_site(Some(bad)), Err(Refusal::OtherSite), "{bad}");
        }
    }

    #[test]
    fn a_post_needs_the_console_s_origin_and_the_form_token() {
        let g = gate();
        assert_eq!(g.post(Some("http://127.0.0.1:8123"), Some("form-1")), Ok(()));
        assert_eq!(g.post(Some("http://localhost:8123"), Some("form-1")), Ok(()));
        for origin in ["http://evil.example", "https://127.0.0.1:8123", "null", "http://127.0.0.1:9999"] {
            assert_eq!(g.post(Some(origin), Some("form-1")), Err(Refusal::CrossOrigin), "{origin}");
        }
        assert_eq!(g.post(None, Some("form-1")), Err(Refusal::CrossOrigin));
        assert_eq!(g.post(Some("http://127.0.0.1:8123"), None), Err(Refusal::NoFormToken));
        assert_eq!(g.post(Some("http://127.0.0.1:8123"), Some("form-2")), Err(Refusal::NoFormToken));
        assert_eq!(g.form_token(), "form-1");
    }

    #[test]
    fn refusals_have_their_statuses_and_say_what_to_do() {
        let all = [
            (Refusal::WrongHost, 421),
            (Refusal::NotLoggedIn, 401),
            (Refusal::BadLoginToken, 401),
            (Refusal::CrossOrigin, 403),
            (Refusal::NoFormToken, 403),
            (Refusal::OtherSite, 403),
            (Refusal::Idle, 401),
            (Refusal::ReadOnly, 403),
        ];
        for (refusal, status) in all {
            assert_eq!(refusal.status(), status, "{refusal:?}");
        }
        assert!(Refusal::NotLoggedIn.message().contains("Reload this page"));
        assert!(Refusal::NotLoggedIn.message().contains("URL the console printed"));
        assert!(Refusal::BadLoginToken.message().contains("restart"));
        assert!(Refusal::WrongHost.message().contains("127.0.0.1"));
        assert!(Refusal::CrossOrigin.message().contains("did not come from this console"));
        assert!(Refusal::NoFormToken.message().contains("reload"));
        assert!(Refusal::OtherSite.message().contains("another page"));
        assert!(Refusal::Idle.message().contains("30 minutes"));
        assert!(Refusal::ReadOnly.message().contains("read-only") && Refusal::ReadOnly.message().contains("redrive"));
    }

    #[test]
    fn every_answer_forbids_script() {
        assert!(HEADERS[0].1.starts_with("default-src 'none'") && !HEADERS[0].1.contains("script-src"));
    }
}
