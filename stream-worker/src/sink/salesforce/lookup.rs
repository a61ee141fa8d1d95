//! The query that settles a create refused as a duplicate of its external ID: whether a Lead
//! holds the submission already (a replay, or another create of it that won).
//!
//! `GET /services/data/vNN.N/query?q=SELECT <field> FROM Lead WHERE <field> IN ('a', ...)`:
//! one call for a collection's refused records, as many as fit in one query (a WHERE clause's
//! strings end at 4,000 characters, and REST URIs at 16,384 bytes); the rest are retried. A
//! unique case-sensitive field compares with case in SOQL; each found value is matched to its
//! ID exactly all the same. A refused query is never the lead's: retried.

use serde_json::Value;

use super::api::{classify_answer, Salesforce};
use crate::sink::contract::SinkError;
use crate::sink::http::transport_error;

/// The longest query the sink sends, counted as its URL-encoded length: the instance URL,
/// the path and `?q=` fit in what is left of Salesforce's 16,384 bytes.
pub const MAX_QUERY_URL_CHARS: usize = 12_000;

/// The longest WHERE clause the sink sends, in characters: SOQL refuses strings in a WHERE
/// clause over 4,000 (SOQL and SOSL Reference, "conditionExpression").
pub const MAX_WHERE_CHARS: usize = 3_900;

const UNEXPECTED: SinkError = SinkError::Retryable { reason: "sink_unexpected_answer", retry_after: None };

/// `text` as a SOQL string literal: quoted, with `\` and `'` (and the controls SOQL names)
/// escaped.
pub fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            _ => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// How long `text` is once form-encoded in a query string, at most: `A-Z a-z 0-9 * - . _` as
/// themselves, every other byte as `%XX` (a space as `+` or `%20`).
fn encoded_len(text: &str) -> usize {
    text.bytes().map(|b| if b.is_ascii_alphanumeric() || b"*-._".contains(&b) { 1 } else { 3 }).sum()
}

/// The query for the first of `ids` (external ID values) that fit in [`MAX_WHERE_CHARS`] and
/// [`MAX_QUERY_URL_CHARS`], and how many it holds (at least one).
pub fn query<'a>(field: &str, ids: impl IntoIterator<Item = &'a str>) -> (String, usize) {
    let select = format!("SELECT {field} FROM Lead ");
    let mut clause = format!("WHERE {field} IN (");
    let mut held = 0;
    for id in ids {
        let item = if held == 0 { literal(id) } else { format!(",{}", literal(id)) };
        let chars = clause.chars().count() + item.chars().count() + 1;
        let encoded = encoded_len(&select) + encoded_len(&clause) + encoded_len(&item) + 3;
        if held > 0 && (chars > MAX_WHERE_CHARS || encoded > MAX_QUERY_URL_CHARS) {
            break;
        }
        clause.push_str(&item);
        held += 1;
    }
    (format!("{select}{clause})"), held)
}

/// Each ID's verdict from the query's answer: one Lead holding it exactly is the submission's
/// (done, untouched); several are `sink_multiple_matches`; none is retried with the ID's
/// reason (another create of the ID not committed yet, a Lead the integration user cannot
/// see, a duplicate rule's refusal).
pub fn verdicts(answer: &Value, field: &str, ids: &[(String, &'static str)]) -> Vec<Result<(), SinkError>> {
    let value = |record: &Value| {
        let fields = record.as_object()?;
        fields.iter().find(|(name, _)| name.eq_ignore_ascii_case(field))?.1.as_str().map(str::to_owned)
    };
    let found: Vec<String> = answer["records"].as_array().into_iter().flatten().filter_map(value).collect();
    ids.iter()
        .map(|(id, otherwise)| match found.iter().filter(|f| *f == id).count() {
            0 => Err(SinkError::Retryable { reason: otherwise, retry_after: None }),
            1 => Ok(()),
            _ => Err(SinkError::Permanent { reason: "sink_multiple_matches" }),
        })
        .collect()
}

/// The error of a refused create whose ID the query had no room for: the org's setup's own
/// reason (what a person must fix), or `sink_lookup_deferred` for a duplicate of the external
/// ID, which the next try asks about.
pub fn unasked(otherwise: &'static str) -> SinkError {
    let reason = if otherwise == DUPLICATE { "sink_lookup_deferred" } else { otherwise };
    SinkError::Retryable { reason, retry_after: None }
}

/// The reason a create refused as a duplicate of the external ID is retried with when no Lead
/// holds it (another create of the ID not committed yet, or a Lead the user cannot see).
pub const DUPLICATE: &str = "sink_concurrent_upsert";

/// A refused query's error: as its answer means (a limit, an outage, the org's setup), but
/// never `FAILED`, since the query is the sink's own and never the lead's content.
pub fn query_refused(verdict: Result<(), SinkError>) -> SinkError {
    match verdict {
        Err(SinkError::Retryable { reason, retry_after }) => SinkError::Retryable { reason, retry_after },
        _ => SinkError::Retryable { reason: "sink_lookup_refused", retry_after: None },
    }
}

impl Salesforce {
    /// Whether Leads hold `ids`: one verdict per ID ([`verdicts`]); IDs past what one query
    /// holds are retried ([`unasked`]). A session that ended gets a new token unless
    /// `refreshed` says one was already fetched.
    pub(super) async fn look_up(
        &self,
        ids: &[(String, &'static str)],
        refreshed: &mut bool,
    ) -> Vec<Result<(), SinkError>> {
        let field = self.field().to_owned();
        let (soql, held) = query(&field, ids.iter().map(|(id, _)| id.as_str()));
        let mut results = match self.query_once(&soql, refreshed).await {
            Ok(answer) => verdicts(&answer, &field, &ids[..held]),
            Err(error) => vec![Err(error); held],
        };
        results.extend(ids[held..].iter().map(|(_, otherwise)| Err(unasked(otherwise))));
        results
    }

    async fn query_once(&self, soql: &str, refreshed: &mut bool) -> Result<Value, SinkError> {
        let mut fresh = false;
        loop {
            let response = self.query(soql, fresh).await?;
            let status = response.status().as_u16();
            if status == 401 && !*refreshed {
                (fresh, *refreshed) = (true, true);
                continue;
            }
            let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_owned);
            let text = response.text().await.map_err(|e| transport_error(&e))?;
            if status == 200 {
                return serde_json::from_str(&text).map_err(|_| UNEXPECTED);
            }
            return Err(query_refused(classify_answer(status, retry_after.as_deref(), &text, self.field())));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_are_soql_literals_with_quotes_and_backslashes_escaped() {
        assert_eq!(literal("sub_1"), "'sub_1'");
        assert_eq!(literal(r"it's a\b"), r"'it\'s a\\b'");
        assert_eq!(literal("a\nb\rc\td"), r"'a\nb\rc\td'");
        assert_eq!(literal("é'"), r"'é\''");
    }

    #[test]
    fn one_query_holds_the_ids_that_fit_in_its_where_clause_and_a_url() {
        assert_eq!(
            query("F__c", ["a", "it's"]),
            (String::from(r"SELECT F__c FROM Lead WHERE F__c IN ('a','it\'s')"), 2)
        );
        let clause = |soql: &str| soql.split_once(" Lead ").map_or(0, |(_, c)| c.chars().count());
        // 200 IDs of 40 characters: the WHERE clause's 4,000 characters hold fewer.
        let ids: Vec<String> = (0..200).map(|i| format!("{i:040}")).collect();
        let (soql, held) = query("F__c", ids.iter().map(String::as_str));
        assert!(held > 50 && held < 200, "{held}");
        assert!(clause(&soql) <= MAX_WHERE_CHARS, "{}", clause(&soql));
        assert!(clause(&soql) + 43 > MAX_WHERE_CHARS, "the next one did not fit");
        // IDs of non-ASCII characters, or of `~` and spaces, fill the URL first.
        for repeated in ["é", "~", " "] {
            let long: Vec<String> = (0..200).map(|i| format!("{i:03}{}", repeated.repeat(252))).collect();
            let (soql, held) = query("F__c", long.iter().map(String::as_str));
            assert!((1..200).contains(&held), "{held}");
            assert!(encoded_len(&soql) + 3 <= MAX_QUERY_URL_CHARS, "{}", encoded_len(&soql));
            let next = format!(",{}", literal(&long[held]));
            let over = encoded_len(&soql) + encoded_len(&next) + 3 > MAX_QUERY_URL_CHARS;
            assert!(over || clause(&soql) + next.chars().count() > MAX_WHERE_CHARS, "the next one did not fit");
        }
        assert_eq!(encoded_len("aZ9*-._"), 7);
        assert_eq!(encoded_len("~ é'"), 15);
        let huge = "x".repeat(MAX_QUERY_URL_CHARS);
        assert_eq!(query("F__c", [huge.as_str()]).1, 1, "a lone ID is always asked");
    }

    #[test]
    fn the_limits_hold_to_the_character() {
        let clause = |soql: &str| soql.split_once(" Lead ").map_or(0, |(_, c)| c.chars().count());
        // A WHERE clause of exactly 3,900 characters, its `)` included, holds both IDs; one
        // more character and the second waits.
        for (second, held) in [(879, 2), (880, 1)] {
            let ids = ["x".repeat(3000), "y".repeat(second)];
            let (soql, n) = query("F__c", ids.iter().map(String::as_str));
            assert_eq!(n, held, "{second}");
            if held == 2 {
                assert_eq!(clause(&soql), MAX_WHERE_CHARS);
            }
        }
        // A URL of exactly 12,000 encoded characters, its `)` included, holds both; one more
        // and the second waits.
        for (extra, held) in [(1, 2), (2, 1)] {
            let ids = ["é".repeat(1000), format!("{}{}", "é".repeat(988), "a".repeat(extra))];
            let (soql, n) = query("F__c", ids.iter().map(String::as_str));
            assert_eq!(n, held, "{extra}");
            if held == 2 {
                assert_eq!(encoded_len(&soql), MAX_QUERY_URL_CHARS);
            }
        }
    }

    #[test]
    fn an_id_the_query_had_no_room_for_keeps_the_org_s_reason() {
        let retry = |reason| SinkError::Retryable { reason, retry_after: None };
        assert_eq!(unasked(DUPLICATE), retry("sink_lookup_deferred"));
        assert_eq!(unasked("sink_org_validation_rule"), retry("sink_org_validation_rule"));
    }

    #[test]
    fn a_refused_query_is_retried_never_the_lead_s() {
        let retry = |reason| SinkError::Retryable { reason, retry_after: None };
        assert_eq!(query_refused(Err(retry("sink_rate_limited"))), retry("sink_rate_limited"));
        assert_eq!(query_refused(Err(SinkError::Permanent { reason: "sink_rejected" })), retry("sink_lookup_refused"));
        assert_eq!(query_refused(Ok(())), retry("sink_lookup_refused"));
        let malformed = r#"[{"errorCode":"MALFORMED_QUERY","message":"m"}]"#;
        assert_eq!(query_refused(classify_answer(400, None, malformed, "F__c")), retry("sink_lookup_refused"));
        assert_eq!(query_refused(classify_answer(414, None, "", "F__c")), retry("sink_lookup_refused"));
    }

    #[test]
    fn each_id_is_matched_exactly_and_counted() {
        let answer = json!({"totalSize": 4, "done": true, "records": [
            {"attributes": {"type": "Lead"}, "f__c": "abc"},
            {"attributes": {"type": "Lead"}, "F__c": "ABC"},
            {"attributes": {"type": "Lead"}, "F__c": "two"},
            {"attributes": {"type": "Lead"}, "F__c": "two"},
        ]});
        let ids: Vec<(String, &'static str)> =
            [("abc", "r1"), ("Abc", "r2"), ("two", "r3"), ("none", "r4")].map(|(id, r)| (id.to_owned(), r)).into();
        let retried = |reason| Err(SinkError::Retryable { reason, retry_after: None });
        assert_eq!(
            verdicts(&answer, "F__c", &ids),
            [Ok(()), retried("r2"), Err(SinkError::Permanent { reason: "sink_multiple_matches" }), retried("r4")]
        );
        assert_eq!(verdicts(&json!({}), "F__c", &ids[..1]), [retried("r1")]);
    }
}
