//! The console's pages, as HTML written by maud (every value escaped: visitors wrote the
//! forms), from receipts already read: the filtered, paged list and one receipt with its
//! redrive button. No script anywhere.

use maud::{html, Markup, DOCTYPE};
use serde::Deserialize;
use serde_json::Value;
use shared::profile::Profile;
use shared::receipt::ReceiptStatus;

use crate::cli::{self, Since};
use crate::listing::{Cursor, Page, View, SCAN_BUDGET};
use crate::operate::Redriven;

/// Receipts per page.
pub const PAGE: usize = 50;

/// The console's stylesheet, served at `/console.css` (the policy allows no inline style).
pub const CSS: &str = "body{font:15px/1.45 system-ui,sans-serif;margin:1.5rem auto;max-width:72rem;padding:0 1rem;color:#1d2330}
h1{font-size:1.3rem}h1 a{color:inherit;text-decoration:none}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid #dde1e8;vertical-align:top}
th{font-weight:600;background:#f3f5f8}td.id{font-family:ui-monospace,monospace;word-break:break-all}
.FAILED{color:#b3261e;font-weight:600}.COMPLETED{color:#1e6b34}.RECEIVED{color:#8a5a00}
form.filter,form.lookup{display:flex;gap:.8rem;align-items:end;margin:1rem 0}label{display:flex;flex-direction:column;font-size:.85rem}
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
    /// Where the page starts (a [`Cursor`]'s text, from the previous page's link).
    pub after: Option<String>,
}

/// What the list shows: receipts of a profile, a status (none: those that need attention;
/// `all`: every one, by a scan), received since a time or an age (as `receipts list --since`
/// takes it), one page.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    pub profile: Option<Profile>,
    pub status: Option<ReceiptStatus>,
    /// Every status (`status=all`): a scan.
    pub all: bool,
    /// The text given, and what it means.
    pub since: Option<(String, Since)>,
    /// Where the page starts; none: the first page.
    pub after: Option<Cursor>,
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
        let (status, all) = match given(&query.status) {
            Some(all) if all.eq_ignore_ascii_case("all") => (None, true),
            Some(status) => (Some(cli::status(&status)?), false),
            None => (None, false),
        };
        let since = match given(&query.since) {
            Some(text) => Some((text.clone(), cli::since(&text)?)),
            None => None,
        };
        let mut filter = Filter { profile, status, all, since, after: None };
        if let Some(after) = query.after.as_deref().filter(|a| !a.is_empty()) {
            filter.after = Some(
                Cursor::parse(filter.view(), after)
                    .ok_or("That page link is not valid: start again from the first page.")?,
            );
        }
        Ok(filter)
    }

    /// How the store reads this filter's pages.
    pub fn view(&self) -> View {
        View::of(self.status, self.all)
    }

    /// The query string of this filter's page that starts `after` (none: the first).
    pub fn query(&self, after: Option<&Cursor>) -> String {
        let mut pairs: Vec<(&str, String)> = Vec::new();
        if let Some(profile) = self.profile {
            pairs.push(("profile", profile.name().to_owned()));
        }
        if let Some(status) = self.status {
            pairs.push(("status", status.as_str().to_owned()));
        } else if self.all {
            pairs.push(("status", "all".to_owned()));
        }
        if let Some((text, _)) = &self.since {
            pairs.push(("since", text.clone()));
        }
        if let Some(after) = after {
            pairs.push(("after", after.to_text()));
        }
        serde_urlencoded::to_string(pairs).unwrap_or_default()
    }
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

/// The list: the filter form, a submission's lookup, one page of `rows` (`page` says where the
/// next starts and what the store read for it), and links to the first and next pages.
/// `error` is a filter that could not be read (the rows are then empty).
pub fn list(rows: &[Value], filter: &Filter, page: &Page, error: Option<&str>) -> Markup {
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
                    option value="" { "RECEIVED or FAILED" }
                    @for status in [ReceiptStatus::Received, ReceiptStatus::Failed, ReceiptStatus::Completed] {
                        option value=(status.as_str()) selected[filter.status == Some(status)] { (status.as_str()) }
                    }
                    option value="all" selected[filter.all] { "any (a scan)" }
                }
            }
            label { "Received since (2h, 7d or 2026-11-30T06:00:00Z)"
                input type="text" name="since" value=(filter.since.as_ref().map_or("", |(t, _)| t.as_str()));
            }
            button type="submit" { "Show" }
        }
        form.lookup method="get" action="/receipt" {
            label { "Open one submission: profile"
                select name="profile" {
                    @for profile in Profile::ALL { option value=(profile.name()) { (profile.name()) } }
                }
            }
            label { "Submission ID" input type="text" name="id"; }
            button type="submit" { "Open" }
        }
        @if let Some(error) = error { p.error { (error) } }
        @if matches!(filter.view(), View::Scan(_)) {
            p.notice { "A scan: receipts in the table's order, not by time; each page reads at most " (SCAN_BUDGET) " items." }
        }
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
        @if rows.is_empty() && error.is_none() {
            @if page.next.is_some() {
                p { "None in this stretch of the table (a scan page reads at most " (SCAN_BUDGET) " items): go on with next →." }
            } @else {
                p { "No receipts match." }
            }
        }
        nav.pages {
            @if filter.after.is_some() { a rel="first" href={ "/?" (filter.query(None)) } { "← first page" } }
            @if let Some(next) = &page.next { a rel="next" href={ "/?" (filter.query(Some(next))) } { "next →" } }
        }
        @if error.is_none() {
            p.read { "This page read " (page.items_read) " items from the store." }
        }
    };
    layout("Receipts", body)
}

/// One receipt (`receipts show`'s fields; the form's contents only when `shown` holds
/// `payload`), the result of a redrive just run, and the redrive button with the form token
/// (a read-only console has none: the page names the command instead).
pub fn receipt(shown: &Value, redriven: Option<&Redriven>, form_token: Option<&str>) -> Markup {
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
            @if let Some(form_token) = form_token {
                form method="post" action="/redrive" {
                    input type="hidden" name="profile" value=(profile);
                    input type="hidden" name="id" value=(id);
                    input type="hidden" name="form_token" value=(form_token);
                    button type="submit" { "Redrive" }
                    " (what " code { "stream-worker receipts redrive" } " does)"
                }
            } @else {
                p.notice { "A read-only console: redrive with " code { "stream-worker receipts redrive" } "." }
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

    fn query(profile: &str, status: &str, since: &str, after: &str) -> ListQuery {
        let some = |v: &str| Some(v.to_owned());
        ListQuery { profile: some(profile), status: some(status), since: some(since), after: some(after) }
    }

    #[test]
    fn a_filter_is_read_from_the_form_and_written_back_into_links() {
        assert_eq!(Filter::read(&ListQuery::default()), Ok(Filter::default()));
        assert_eq!(Filter::read(&query("", " ", "", "")), Ok(Filter::default()), "empty fields filter nothing");
        assert_eq!(Filter::default().view(), View::Attention, "no status: what needs attention, by index");
        let cursor = "2026-12-01T00:00:00.000Z tally:a&b";
        let filter = Filter::read(&query("tally", "failed", "2h", cursor)).unwrap();
        assert_eq!(filter.profile, Some(Profile::Tally));
        assert_eq!(filter.status, Some(ReceiptStatus::Failed));
        assert_eq!(filter.since, Some(("2h".into(), Since::Ago(std::time::Duration::from_secs(7_200)))));
        let after = Cursor::Before { at: "2026-12-01T00:00:00.000Z".into(), key: "tally:a&b".into() };
        assert_eq!(filter.after, Some(after.clone()));
        assert_eq!(
            filter.query(Some(&after)),
            "profile=tally&status=FAILED&since=2h&after=2026-12-01T00%3A00%3A00.000Z+tally%3Aa%26b"
        );
        assert_eq!(filter.query(None), "profile=tally&status=FAILED&since=2h");
        let at = Filter::read(&query("", "", "2026-11-30T06:00:00Z", "")).unwrap();
        assert_eq!(at.query(None), "since=2026-11-30T06%3A00%3A00Z");
        let all = Filter::read(&query("", "ALL", "", "typeform:x")).unwrap();
        assert_eq!(
            (all.all, all.view(), all.after.clone()),
            (true, View::Scan(None), Some(Cursor::After { key: "typeform:x".into() }))
        );
        assert_eq!(all.query(None), "status=all");
        let completed = Filter::read(&query("", "COMPLETED", "", "")).unwrap();
        assert_eq!(completed.view(), View::Scan(Some(ReceiptStatus::Completed)));
        for (bad, says) in [
            (query("nope", "", "", ""), "\"nope\" is not a sender profile"),
            (query("", "DONE", "", ""), "is not a status"),
            (query("", "", "yesterday", ""), "neither an ISO-8601"),
            (query("", "", "", "no-space"), "page link is not valid"),
        ] {
            let error = Filter::read(&bad).unwrap_err();
            assert!(error.contains(says), "{error}");
        }
    }

    fn row(profile: &str, id: &str, at: &str) -> Value {
        json!({"profile": profile, "submissionId": id, "status": "FAILED", "receivedAt": at, "failureReason": "sink_rejected"})
    }

    #[test]
    fn what_visitors_wrote_is_shown_as_text() {
        let evil = "<script>alert(1)</script>\"><img src=x onerror=alert(2)>";
        let rows = [row("staticforms", evil, "2026-12-01T00:00:00.000Z")];
        let page = list(&rows, &Filter::default(), &Page::default(), None).into_string();
        assert!(!page.contains("<script") && !page.contains("<img"), "{page}");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{page}");
        // The link's query is encoded, then escaped as an attribute.
        assert!(page.contains("href=\"/receipt?profile=staticforms&amp;id=%3Cscript%3E"), "{page}");
        let shown = json!({"profile": "staticforms", "submissionId": evil, "status": "FAILED", "failureReason": "sink_rejected",
                           "payload": {"data": {"message": evil}}});
        let page = receipt(&shown, None, Some("tok\"en")).into_string();
        assert!(!page.contains("<script") && !page.contains("<img"), "{page}");
        assert!(page.contains("value=\"tok&quot;en\""), "{page}");
        assert!(page.contains("&lt;/script&gt;"), "{page}");
        assert!(
            !page.contains("<script")
                && !list(&[], &Filter::default(), &Page::default(), Some(evil)).into_string().contains("<script")
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
        let page = receipt(&failed, None, Some("form-1")).into_string();
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
        let page = receipt(&done, None, Some("form-1")).into_string();
        assert!(!page.contains("/redrive") && page.contains("ada@example.com") && page.contains("The form's contents"));
        // Read-only: no form and no token; the command instead.
        let page = receipt(&failed, None, None).into_string();
        assert!(!page.contains("/redrive") && !page.contains("form_token"), "{page}");
        assert!(
            page.contains("A read-only console: redrive with <code>stream-worker receipts redrive</code>"),
            "{page}"
        );
        let redriven = Redriven {
            profile: "tally",
            submission_id: "2wgx4n".into(),
            was: "FAILED".into(),
            outcome: "failed",
            reason: Some("sink_rejected".into()),
        };
        let page = receipt(&done, Some(&redriven), Some("form-1")).into_string();
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
    fn the_list_keeps_the_filter_in_its_form_and_links_the_first_and_next_pages() {
        let filter = Filter::read(&query("typeform", "RECEIVED", "7d", "2026-12-01T00:00:00.000Z typeform:b")).unwrap();
        let next = Page {
            next: Some(Cursor::Before { at: "2026-11-30T00:00:00.000Z".into(), key: "typeform:a".into() }),
            items_read: 61,
            ..Page::default()
        };
        let page = list(&[row("typeform", "a", "x")], &filter, &next, None).into_string();
        assert!(page.contains("<option value=\"typeform\" selected>"), "{page}");
        assert!(page.contains("<option value=\"RECEIVED\" selected>"), "{page}");
        assert!(page.contains("name=\"since\" value=\"7d\""), "{page}");
        assert!(page.contains("rel=\"first\" href=\"/?profile=typeform&amp;status=RECEIVED&amp;since=7d\""), "{page}");
        assert!(
            page.contains("rel=\"next\" href=\"/?profile=typeform&amp;status=RECEIVED&amp;since=7d&amp;after=2026-11-30T00%3A00%3A00.000Z+typeform%3Aa\""),
            "next: {page}"
        );
        assert!(page.contains("This page read 61 items from the store."), "{page}");
        assert!(!page.contains("A scan:"), "{page}");
        let first = list(&[], &Filter::default(), &Page::default(), None).into_string();
        assert!(
            first.contains("No receipts match.") && !first.contains("rel=\"first\"") && !first.contains("rel=\"next\"")
        );
        assert!(first.contains("<form class=\"lookup\" method=\"get\" action=\"/receipt\">"), "{first}");
        let scan = Filter::read(&query("", "all", "", "")).unwrap();
        assert!(list(&[], &scan, &Page::default(), None)
            .into_string()
            .contains("A scan: receipts in the table's order"));
        // A scan page that used its budget before finding one: not "none match".
        let stretch = Page { next: Some(Cursor::After { key: "tally:x".into() }), ..Page::default() };
        let empty = list(&[], &scan, &stretch, None).into_string();
        assert!(
            empty.contains("None in this stretch of the table") && !empty.contains("No receipts match."),
            "{empty}"
        );
        assert!(!list(&[], &Filter::default(), &Page::default(), Some("bad"))
            .into_string()
            .contains("No receipts match."));
        assert!(CSS.contains("table{") && CSS.contains("form.lookup"));
    }
}
