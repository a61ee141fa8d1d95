//! The console's pages, as HTML written by maud (every value escaped: visitors wrote the
//! forms), from receipts already read: the filtered, paged list and one receipt with its
//! redrive button. No script anywhere.

use maud::{html, Markup, DOCTYPE};
use serde::Deserialize;
use serde_json::Value;
use shared::profile::Profile;
use shared::receipt::ReceiptStatus;

use crate::cli::{self, Since};
use crate::operate::Redriven;

/// Receipts per page.
pub const PAGE: usize = 50;

/// The console's stylesheet, served at `/console.css` (the policy allows no inline style).
pub const CSS: &str = "body{font:15px/1.45 system-ui,sans-serif;margin:1.5rem auto;max-width:72rem;padding:0 1rem;color:#1d2330}
h1{font-size:1.3rem}h1 a{color:inherit;text-decoration:none}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid #dde1e8;vertical-align:top}
th{font-weight:600;background:#f3f5f8}td.id{font-family:ui-monospace,monospace;word-break:break-all}
.FAILED{color:#b3261e;font-weight:600}.COMPLETED{color:#1e6b34}.RECEIVED{color:#8a5a00}
form.filter{display:flex;gap:.8rem;align-items:end;margin:1rem 0}label{display:flex;flex-direction:column;font-size:.85rem}
pre{background:#f3f5f8;padding:.8rem;overflow:auto;white-space:pre-wrap;word-break:break-all}
.notice{padding:.6rem .8rem;background:#eef4ff;border:1px solid #bcd0f5;margin:1rem 0}
.error{padding:.6rem .8rem;background:#fdecea;border:1px solid #f3b8b2;margin:1rem 0}
nav.pages{display:flex;gap:1rem;margin:1rem 0}button{padding:.35rem .9rem}";

/// The list's query string, as sent by the filter form and the paging links.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ListQuery {
    pub profile: Option<String>,
    pub status: Option<String>,
    pub since: Option<String>,
    pub page: Option<String>,
}

/// What the list shows: receipts of a profile, a status, received since a time or an age
/// (as `receipts list --since` takes it), newest first, one page.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    pub profile: Option<Profile>,
    pub status: Option<ReceiptStatus>,
    /// The text given, and what it means.
    pub since: Option<(String, Since)>,
    /// From 0.
    pub page: usize,
}

impl Filter {
    /// Reads the query; an empty field is no filter. The error says which field is wrong.
    pub fn read(query: &ListQuery) -> Result<Filter, String> {
        let given =
            |field: &Option<String>| field.as_deref().map(str::trim).filter(|v| !v.is_empty()).map(str::to_owned);
        let profile = match given(&query.profile) {
            Some(name) => Some(Profile::parse(&name).ok_or(format!("{name:?} is not a sender profile"))?),
            None => None,
        };
        let status = match given(&query.status) {
            Some(status) => Some(cli::status(&status)?),
            None => None,
        };
        let since = match given(&query.since) {
            Some(text) => Some((text.clone(), cli::since(&text)?)),
            None => None,
        };
        let page = match given(&query.page) {
            Some(page) => page.parse().map_err(|_| format!("{page:?} is not a page number"))?,
            None => 0,
        };
        Ok(Filter { profile, status, since, page })
    }

    /// The query string of this filter on page `page`.
    pub fn query(&self, page: usize) -> String {
        let mut pairs: Vec<(&str, String)> = Vec::new();
        if let Some(profile) = self.profile {
            pairs.push(("profile", profile.name().to_owned()));
        }
        if let Some(status) = self.status {
            pairs.push(("status", status.as_str().to_owned()));
        }
        if let Some((text, _)) = &self.since {
            pairs.push(("since", text.clone()));
        }
        if page > 0 {
            pairs.push(("page", page.to_string()));
        }
        serde_urlencoded::to_string(pairs).unwrap_or_default()
    }
}

/// This filter's page of `rows` (`receipts list --json`'s objects, already of its status and
/// time): of its profile, newest first; and whether an older page follows.
pub fn page_of(mut rows: Vec<Value>, filter: &Filter) -> (Vec<Value>, bool) {
    if let Some(profile) = filter.profile {
        rows.retain(|row| row["profile"] == profile.name());
    }
    rows.sort_by(|a, b| b["receivedAt"].as_str().cmp(&a["receivedAt"].as_str()));
    let start = filter.page.saturating_mul(PAGE);
    let more = rows.len() > start.saturating_add(PAGE);
    (rows.into_iter().skip(start).take(PAGE).collect(), more)
}

/// The link to one receipt's page (with its form's contents when `payload`).
pub fn receipt_link(profile: &str, submission_id: &str, payload: bool) -> String {
    let mut pairs = vec![("profile", profile), ("id", submission_id)];
    if payload {
        pairs.push(("payload", "1"));
    }
    format!("/receipt?{}", serde_urlencoded::to_string(pairs).unwrap_or_default())
}

fn layout(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · webhook receipts" }
                link rel="stylesheet" href="/console.css";
            }
            body {
                h1 { a href="/" { "Webhook receipts" } }
                (body)
            }
        }
    }
}

/// A page that only says `message` (a refusal, a receipt not found).
pub fn message(title: &str, message: &str) -> Markup {
    layout(title, html! { p.error { (message) } })
}

/// The list: the filter form, one page of `rows`, and links to the newer and older pages.
/// `error` is a filter that could not be read (the rows are then empty).
pub fn list(rows: &[Value], filter: &Filter, more: bool, error: Option<&str>) -> Markup {
    let text = |row: &Value, name: &str| row[name].as_str().unwrap_or("-").to_owned();
    let body = html! {
        form.filter method="get" action="/" {
            label { "Profile"
                select name="profile" {
                    option value="" { "any" }
                    @for profile in Profile::ALL {
                        option value=(profile.name()) selected[filter.profile == Some(profile)] { (profile.name()) }
                    }
                }
            }
            label { "Status"
                select name="status" {
                    option value="" { "any" }
                    @for status in [ReceiptStatus::Received, ReceiptStatus::Completed, ReceiptStatus::Failed] {
                        option value=(status.as_str()) selected[filter.status == Some(status)] { (status.as_str()) }
                    }
                }
            }
            label { "Received since (2h, 7d or 2026-11-30T06:00:00Z)"
                input type="text" name="since" value=(filter.since.as_ref().map_or("", |(t, _)| t.as_str()));
            }
            button type="submit" { "Show" }
        }
        @if let Some(error) = error { p.error { (error) } }
        table {
            thead { tr { th { "Profile" } th { "Submission ID" } th { "Status" } th { "Received" } th { "Finished" } th { "Reason" } } }
            tbody {
                @for row in rows {
                    @let (profile, id) = (text(row, "profile"), text(row, "submissionId"));
                    @let status = text(row, "status");
                    tr {
                        td { (profile) }
                        td.id { a href=(receipt_link(&profile, &id, false)) { (id) } }
                        td class=(status) { (status) }
                        td { (text(row, "receivedAt")) }
                        td { (row["completedAt"].as_str().or(row["failedAt"].as_str()).unwrap_or("-")) }
                        td { (text(row, "failureReason")) }
                    }
                }
            }
        }
        @if rows.is_empty() && error.is_none() { p { "No receipts match." } }
        nav.pages {
            @if filter.page > 0 { a rel="prev" href={ "/?" (filter.query(filter.page - 1)) } { "← newer" } }
            @if more { a rel="next" href={ "/?" (filter.query(filter.page + 1)) } { "older →" } }
        }
    };
    layout("Receipts", body)
}

/// One receipt (`receipts show`'s fields; the form's contents only when `shown` holds
/// `payload`), the result of a redrive just run, and the redrive button with the form token.
pub fn receipt(shown: &Value, redriven: Option<&Redriven>, form_token: &str) -> Markup {
    let text = |name: &str| shown[name].as_str().unwrap_or("").to_owned();
    let (profile, id) = (text("profile"), text("submissionId"));
    let fields = [
        ("Profile", "profile"),
        ("Submission ID", "submissionId"),
        ("Status", "status"),
        ("Received", "receivedAt"),
        ("Completed", "completedAt"),
        ("Failed", "failedAt"),
        ("Failure reason", "failureReason"),
        ("Redriven", "redrivenAt"),
        ("Request ID", "requestId"),
        ("Lead key", "leadKey"),
    ];
    let body = html! {
        @if let Some(r) = redriven {
            p.notice { "Redrive: " (r.was) " → " (r.outcome) @if let Some(reason) = &r.reason { " (" (reason) ")" } }
        }
        table {
            @for (label, name) in fields {
                @if let Some(value) = shown[name].as_str() {
                    tr { th { (label) } td class=(if name == "status" { value } else { "" }) { (value) } }
                }
            }
        }
        @if text("status") != ReceiptStatus::Completed.as_str() {
            form method="post" action="/redrive" {
                input type="hidden" name="profile" value=(profile);
                input type="hidden" name="id" value=(id);
                input type="hidden" name="form_token" value=(form_token);
                button type="submit" { "Redrive" }
                " (what " code { "stream-worker receipts redrive" } " does)"
            }
        }
        @match shown.get("payload") {
            Some(payload) => {
                h2 { "The form's contents" }
                pre { (serde_json::to_string_pretty(payload).unwrap_or_default()) }
            }
            None => p { a href=(receipt_link(&profile, &id, true)) { "Show the form's contents" } },
        }
    };
    layout(&id, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn query(profile: &str, status: &str, since: &str, page: &str) -> ListQuery {
        let some = |v: &str| Some(v.to_owned());
        ListQuery { profile: some(profile), status: some(status), since: some(since), page: some(page) }
    }

    #[test]
    fn a_filter_is_read_from_the_form_and_written_back_into_links() {
        assert_eq!(Filter::read(&ListQuery::default()), Ok(Filter::default()));
        assert_eq!(Filter::read(&query("", " ", "", "")), Ok(Filter::default()), "empty fields filter nothing");
        let filter = Filter::read(&query("tally", "failed", "2h", "3")).unwrap();
        assert_eq!(filter.profile, Some(Profile::Tally));
        assert_eq!(filter.status, Some(ReceiptStatus::Failed));
        assert_eq!(filter.since, Some(("2h".into(), Since::Ago(std::time::Duration::from_secs(7_200)))));
        assert_eq!(filter.page, 3);
        assert_eq!(filter.query(4), "profile=tally&status=FAILED&since=2h&page=4");
        assert_eq!(filter.query(0), "profile=tally&status=FAILED&since=2h");
        let at = Filter::read(&query("", "", "2026-11-30T06:00:00Z", "")).unwrap();
        assert_eq!(at.query(0), "since=2026-11-30T06%3A00%3A00Z");
        for (bad, says) in [
            (query("nope", "", "", ""), "\"nope\" is not a sender profile"),
            (query("", "DONE", "", ""), "is not a status"),
            (query("", "", "yesterday", ""), "neither an ISO-8601"),
            (query("", "", "", "-1"), "\"-1\" is not a page number"),
        ] {
            let error = Filter::read(&bad).unwrap_err();
            assert!(error.contains(says), "{error}");
        }
    }

    fn row(profile: &str, id: &str, at: &str) -> Value {
        json!({"profile": profile, "submissionId": id, "status": "FAILED", "receivedAt": at, "failureReason": "sink_rejected"})
    }

    #[test]
    fn a_page_is_one_profile_s_newest_first() {
        let rows: Vec<Value> = (0..PAGE + 3)
            .map(|n| {
                row(
                    if n % 2 == 0 { "tally" } else { "typeform" },
                    &format!("s{n:03}"),
                    &format!("2026-12-01T00:00:{n:03}Z"),
                )
            })
            .collect();
        let every = Filter::default();
        let (first, more) = page_of(rows.clone(), &every);
        assert_eq!((first.len(), more), (PAGE, true));
        assert_eq!(first[0]["submissionId"], format!("s{:03}", PAGE + 2), "newest first");
        let (last, more) = page_of(rows.clone(), &Filter { page: 1, ..every.clone() });
        assert_eq!((last.len(), more), (3, false));
        assert_eq!(last[2]["submissionId"], "s000");
        let exact: Vec<Value> = rows.iter().take(PAGE).cloned().collect();
        assert!(!page_of(exact, &every).1, "a full last page has nothing after it");
        let tally = Filter { profile: Some(Profile::Tally), ..every.clone() };
        let (only, _) = page_of(rows.clone(), &tally);
        assert!(only.iter().all(|r| r["profile"] == "tally") && only.len() == (PAGE + 3).div_ceil(2), "{}", only.len());
        assert_eq!(page_of(rows, &Filter { page: usize::MAX, ..every }).0.len(), 0);
    }

    #[test]
    fn what_visitors_wrote_is_shown_as_text() {
        let evil = "<script>alert(1)</script>\"><img src=x onerror=alert(2)>";
        let rows = [row("staticforms", evil, "2026-12-01T00:00:00.000Z")];
        let page = list(&rows, &Filter::default(), false, None).into_string();
        assert!(!page.contains("<script") && !page.contains("<img"), "{page}");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{page}");
        // The link's query is encoded, then escaped as an attribute.
        assert!(page.contains("href=\"/receipt?profile=staticforms&amp;id=%3Cscript%3E"), "{page}");
        let shown = json!({"profile": "staticforms", "submissionId": evil, "status": "FAILED", "failureReason": "sink_rejected",
                           "payload": {"data": {"message": evil}}});
        let page = receipt(&shown, None, "tok\"en").into_string();
        assert!(!page.contains("<script") && !page.contains("<img"), "{page}");
        assert!(page.contains("value=\"tok&quot;en\""), "{page}");
        assert!(page.contains("&lt;/script&gt;"), "{page}");
        assert!(
            !page.contains("<script")
                && !list(&[], &Filter::default(), false, Some(evil)).into_string().contains("<script")
        );
        let said = message("Refused", evil).into_string();
        assert!(
            !said.contains("<script") && said.contains("&lt;script&gt;alert(1)") && said.contains("<title>Refused"),
            "{said}"
        );
    }

    #[test]
    fn a_receipt_page_shows_its_fields_the_payload_on_request_and_the_redrive_button_unless_completed() {
        let failed = json!({"profile": "tally", "submissionId": "2wgx4n", "status": "FAILED", "failureReason": "sink_rejected",
                            "receivedAt": "2026-12-01T00:00:00.000Z", "completedAt": null});
        let page = receipt(&failed, None, "form-1").into_string();
        assert!(page.contains("<td class=\"FAILED\">FAILED</td>") && page.contains("sink_rejected"), "{page}");
        assert!(!page.contains("Completed<"), "absent fields are left out: {page}");
        assert!(
            page.contains("action=\"/redrive\"") && page.contains("name=\"form_token\" value=\"form-1\""),
            "{page}"
        );
        assert!(page.contains("href=\"/receipt?profile=tally&amp;id=2wgx4n&amp;payload=1\""), "{page}");
        assert!(!page.contains("The form's contents"));
        let mut done = failed.clone();
        done["status"] = json!("COMPLETED");
        done["payload"] = json!({"email": "ada@example.com"});
        let page = receipt(&done, None, "form-1").into_string();
        assert!(!page.contains("/redrive") && page.contains("ada@example.com") && page.contains("The form's contents"));
        let redriven = Redriven {
            profile: "tally",
            submission_id: "2wgx4n".into(),
            was: "FAILED".into(),
            outcome: "failed",
            reason: Some("sink_rejected".into()),
        };
        let page = receipt(&done, Some(&redriven), "form-1").into_string();
        assert!(page.contains("Redrive: FAILED → failed (sink_rejected)"), "{page}");
    }

    #[test]
    fn an_odd_submission_id_survives_its_link() {
        for id in ["a&b=c#d", "50% off?", "é/../x", "+ +", &"x".repeat(1_024), "profile=tally"] {
            let link = receipt_link("typeform", id, true);
            let query = link.strip_prefix("/receipt?").unwrap();
            assert!(!query.contains('#') && !query.contains(' '), "{link}");
            let read: Vec<(String, String)> = serde_urlencoded::from_str(query).unwrap();
            let expected =
                [("profile", "typeform"), ("id", id), ("payload", "1")].map(|(k, v)| (k.to_owned(), v.to_owned()));
            assert_eq!(read, expected, "{link}");
        }
    }

    #[test]
    fn the_last_possible_page_links_back_without_overflow() {
        let last = Filter { page: usize::MAX, ..Filter::default() };
        let page = list(&[], &last, false, None).into_string();
        assert!(page.contains(&format!("page={}", usize::MAX - 1)) && !page.contains("rel=\"next\""), "{page}");
    }

    #[test]
    fn the_list_keeps_the_filter_in_its_form_and_pages() {
        let filter = Filter::read(&query("typeform", "RECEIVED", "7d", "1")).unwrap();
        let page = list(&[row("typeform", "a", "x")], &filter, true, None).into_string();
        assert!(page.contains("<option value=\"typeform\" selected>"), "{page}");
        assert!(page.contains("<option value=\"RECEIVED\" selected>"), "{page}");
        assert!(page.contains("name=\"since\" value=\"7d\""), "{page}");
        assert!(page.contains("href=\"/?profile=typeform&amp;status=RECEIVED&amp;since=7d\""), "newer: {page}");
        assert!(
            page.contains("href=\"/?profile=typeform&amp;status=RECEIVED&amp;since=7d&amp;page=2\""),
            "older: {page}"
        );
        let first = list(&[], &Filter::default(), false, None).into_string();
        assert!(
            first.contains("No receipts match.") && !first.contains("rel=\"prev\"") && !first.contains("rel=\"next\"")
        );
        assert!(!list(&[], &Filter::default(), false, Some("bad")).into_string().contains("No receipts match."));
        assert!(CSS.contains("table{"));
    }
}
