//! One page of receipts, as the console shows them, reading only what the page shows:
//! `RECEIVED` and `FAILED` ones newest first from their sparse indexes (every shard read at
//! once, newest first, up to a page and the entries tied with its last; the shards merged, the
//! page's receipts then read one by one),
//! `COMPLETED` ones or every status by a bounded scan in the table's order, a page at a time.
//! Each page says how many items it read, and where the next one starts. And the whole list
//! `receipts list` prints, by the same indexes or (asked for) a scan.

use aws_sdk_dynamodb::types::AttributeValue;
use shared::dynamo::Item;
use shared::profile::Profile;
use shared::receipt::{ReceiptStatus, FAILED_INDEX, FAILED_SHARD, PENDING_INDEX, PENDING_SHARD, PENDING_SHARDS};

use crate::inventory::{index_error, operate_error, OperateError, LISTED};
use crate::receipts::{from_sdk, DynamoReceipts};

/// Items a scan page may read (it stops earlier when its page is full).
pub const SCAN_BUDGET: usize = 1_000;

/// What a page lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// Receipts waiting or refused (`RECEIVED` and `FAILED`), from both indexes.
    Attention,
    /// One status of the two indexed ones.
    Indexed(ReceiptStatus),
    /// `COMPLETED` receipts (`Some`), or every status (`None`): a scan.
    Scan(Option<ReceiptStatus>),
}

impl View {
    /// The view of a status filter: `RECEIVED` and `FAILED` by their index, `COMPLETED` by a
    /// scan, none given: the receipts that need attention (`all`: every one, by a scan).
    pub fn of(status: Option<ReceiptStatus>, all: bool) -> View {
        match status {
            Some(ReceiptStatus::Completed) => View::Scan(Some(ReceiptStatus::Completed)),
            Some(status) => View::Indexed(status),
            None if all => View::Scan(None),
            None => View::Attention,
        }
    }

    /// The statuses the view's indexes hold (a receipt read in another is left out).
    fn statuses(self) -> Vec<ReceiptStatus> {
        self.indexes().iter().map(|(status, _, _)| *status).collect()
    }

    fn indexes(self) -> &'static [(ReceiptStatus, &'static str, &'static str)] {
        const RECEIVED: (ReceiptStatus, &str, &str) = (ReceiptStatus::Received, PENDING_INDEX, PENDING_SHARD);
        const FAILED: (ReceiptStatus, &str, &str) = (ReceiptStatus::Failed, FAILED_INDEX, FAILED_SHARD);
        match self {
            View::Attention => &[RECEIVED, FAILED],
            View::Indexed(ReceiptStatus::Received) => &[RECEIVED],
            View::Indexed(ReceiptStatus::Failed) => &[FAILED],
            View::Indexed(ReceiptStatus::Completed) | View::Scan(_) => &[],
        }
    }
}

/// Where the next page starts: after this receipt, newest first (`receivedAt`, then its key),
/// or, in a scan, after this key in the table's order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cursor {
    Before { at: String, key: String },
    After { key: String },
}

impl Cursor {
    /// As a link carries it: `<receivedAt> <key>`, or the key alone after a scan.
    pub fn to_text(&self) -> String {
        match self {
            Cursor::Before { at, key } => format!("{at} {key}"),
            Cursor::After { key } => key.clone(),
        }
    }

    /// Reads [`Cursor::to_text`]'s text back for `view`.
    pub fn parse(view: View, text: &str) -> Option<Cursor> {
        match view {
            View::Scan(_) => Some(Cursor::After { key: text.to_owned() }).filter(|_| !text.is_empty()),
            _ => {
                let (at, key) = text.split_once(' ')?;
                (!at.is_empty() && !key.is_empty()).then(|| Cursor::Before { at: at.to_owned(), key: key.to_owned() })
            }
        }
    }
}

/// What a page asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ask {
    pub view: View,
    pub profile: Option<Profile>,
    /// Received at or after (ISO-8601).
    pub since: Option<String>,
    pub after: Option<Cursor>,
    pub size: usize,
}

/// One page: its receipts (without payloads), where the next starts, and how many items the
/// store read for it (index entries and receipts, or items a scan looked at).
#[derive(Clone, Debug, Default)]
pub struct Page {
    pub items: Vec<Item>,
    pub next: Option<Cursor>,
    pub items_read: u64,
}

/// An index entry: when the receipt was received, and its key.
type Entry = (String, String);

/// A listed receipt's place in time: when it was received, then its key (an entry's order).
fn order(item: &Item) -> (Option<&str>, Option<&str>) {
    let text = |name| item.get(name).and_then(|v| v.as_s());
    (text("receivedAt"), text("pk"))
}

/// Whether `entry` comes after `cursor` newest first (strictly older, or as old with a smaller
/// key), and is of `profile` when given.
fn wanted(entry: &Entry, cursor: Option<&Cursor>, profile: Option<Profile>) -> bool {
    let after = match cursor {
        Some(Cursor::Before { at, key }) => (&entry.0, &entry.1) < (at, key),
        _ => true,
    };
    after && profile.is_none_or(|p| entry.1.starts_with(p.key_prefix()))
}

/// The newest `size` of `entries` (each once), and whether more follow.
fn newest(mut entries: Vec<Entry>, size: usize) -> (Vec<Entry>, bool) {
    entries.sort_by(|a, b| b.cmp(a));
    entries.dedup();
    let more = entries.len() > size;
    entries.truncate(size);
    (entries, more)
}

impl DynamoReceipts {
    /// Every receipt (without its payload) `view` holds, received at or after `since`, oldest
    /// first (`receipts list`). `RECEIVED` and `FAILED` ones are found in their sparse index
    /// and read one by one (consistently: one that changed since the index listed it is left
    /// out), so the cost is the receipts listed, not the table; `COMPLETED` ones, or every
    /// status, by a scan, which reads the whole table.
    pub async fn list(&self, view: View, since: Option<&str>) -> Result<Vec<Item>, OperateError> {
        let mut items = match view {
            View::Scan(status) => self.scan(status, since, None, LISTED).await?,
            view => {
                let mut keys = Vec::new();
                for (_, index, shard) in view.indexes() {
                    keys.extend(self.indexed(index, shard, since).await?);
                }
                // A receipt just failed can still be in the pending index (an index lags its
                // table): listed once.
                keys.sort();
                keys.dedup();
                self.read_listed(&keys, &view.statuses()).await?
            }
        };
        items.sort_by(|a, b| order(a).cmp(&order(b)));
        Ok(items)
    }

    /// One page of receipts, as `ask` says.
    pub async fn page(&self, ask: &Ask) -> Result<Page, OperateError> {
        match ask.view {
            View::Scan(status) => self.scan_page(status, ask).await,
            view => self.index_page(view, ask).await,
        }
    }

    async fn index_page(&self, view: View, ask: &Ask) -> Result<Page, OperateError> {
        // Every shard of every index the view reads, at once.
        let shards = view.indexes().iter().flat_map(|(_, index, shard)| {
            (0..PENDING_SHARDS).map(move |value| self.newest_of_shard(index, shard, format!("{value:x}"), ask))
        });
        let mut entries = Vec::new();
        let mut items_read = 0;
        for (found, read) in futures_util::future::try_join_all(shards).await? {
            entries.extend(found);
            items_read += read;
        }
        let (shown, more) = newest(entries, ask.size);
        let keys: Vec<String> = shown.iter().map(|(_, key)| key.clone()).collect();
        let mut items = self.read_listed(&keys, &view.statuses()).await?;
        items_read += keys.len() as u64;
        items.sort_by(|a, b| order(b).cmp(&order(a)));
        let next = shown.last().filter(|_| more).map(|(at, key)| Cursor::Before { at: at.clone(), key: key.clone() });
        Ok(Page { items, next, items_read })
    }

    /// The newest entries of one shard of `index` that `ask` wants: read newest first, a page
    /// and two more at a time, until a page and one more are found and every entry received in
    /// the same millisecond as the last of them too ([`shard_read`]); and how many entries the
    /// store read for them.
    async fn newest_of_shard(
        &self,
        index: &'static str,
        shard: &str,
        value: String,
        ask: &Ask,
    ) -> Result<(Vec<Entry>, u64), OperateError> {
        let before = match &ask.after {
            Some(Cursor::Before { at, .. }) => Some(at.as_str()),
            _ => None,
        };
        let Some((range, values)) = received_range(ask.since.as_deref(), before) else {
            return Ok((Vec::new(), 0));
        };
        // A page, one more (is there a next page?), and one to see past its millisecond.
        let limit = i32::try_from(ask.size + 2).unwrap_or(i32::MAX);
        let mut request = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(index)
            .scan_index_forward(false)
            .limit(limit)
            .key_condition_expression(format!("#shard = :shard{range}"))
            .expression_attribute_names("#shard", shard)
            .expression_attribute_values(":shard", AttributeValue::S(value));
        for (name, at) in values {
            request = request.expression_attribute_values(name, AttributeValue::S(at.to_owned()));
        }
        let (mut found, mut read, mut start) = (Vec::new(), 0u64, None);
        loop {
            let output = request.clone().set_exclusive_start_key(start).send().await.map_err(|e| {
                use aws_sdk_dynamodb::error::ProvideErrorMetadata;
                let message = e.as_service_error().and_then(|e| e.message()).unwrap_or_default();
                index_error(operate_error(&self.table, &e), message, &self.table, index)
            })?;
            read += u64::try_from(output.scanned_count()).unwrap_or_default();
            let mut last_at = None;
            for item in output.items() {
                if let (Some(AttributeValue::S(at)), Some(AttributeValue::S(key))) =
                    (item.get("receivedAt"), item.get("pk"))
                {
                    let entry = (at.clone(), key.clone());
                    if wanted(&entry, ask.after.as_ref(), ask.profile) {
                        found.push(entry);
                    }
                    last_at = Some(at.clone());
                }
            }
            start = output.last_evaluated_key;
            if start.is_none() || shard_read(&found, ask.size, last_at.as_deref()) {
                return Ok((found, read));
            }
        }
    }

    /// A page of a scan: from the cursor's key in the table's order, until the page is full,
    /// the table ends, or [`SCAN_BUDGET`] items were read ([`scan_limit`] per request). When a
    /// request finds more than the page lacks, the page keeps what it lacks and the next page
    /// starts after the last one kept, so none is skipped.
    async fn scan_page(&self, status: Option<ReceiptStatus>, ask: &Ask) -> Result<Page, OperateError> {
        let mut filters = Vec::new();
        let mut request = self
            .client
            .scan()
            .table_name(&self.table)
            .projection_expression(LISTED)
            .expression_attribute_names("#profile", "profile")
            .expression_attribute_names("#status", "status");
        if let Some(status) = status {
            filters.push("#status = :status");
            request = request.expression_attribute_values(":status", AttributeValue::S(status.as_str().into()));
        }
        if let Some(since) = &ask.since {
            filters.push("receivedAt >= :since");
            request = request.expression_attribute_values(":since", AttributeValue::S(since.clone()));
        }
        if let Some(profile) = ask.profile {
            filters.push("begins_with(pk, :prefix)");
            request = request.expression_attribute_values(":prefix", AttributeValue::S(profile.key_prefix().into()));
        }
        if !filters.is_empty() {
            request = request.filter_expression(filters.join(" AND "));
        }
        let mut start = match &ask.after {
            Some(Cursor::After { key }) => Some([("pk".to_owned(), AttributeValue::S(key.clone()))].into()),
            _ => None,
        };
        let mut page = Page::default();
        for round in 0.. {
            let lacking = ask.size.saturating_sub(page.items.len());
            let budget = SCAN_BUDGET.saturating_sub(usize::try_from(page.items_read).unwrap_or(usize::MAX));
            let output = request
                .clone()
                .limit(scan_limit(lacking, budget, round))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| operate_error(&self.table, &e))?;
            page.items_read += u64::try_from(output.scanned_count()).unwrap_or_default();
            let mut matched: Vec<Item> = output
                .items
                .unwrap_or_default()
                .into_iter()
                .map(|i| i.into_iter().map(|(k, v)| (k, from_sdk(v))).collect())
                .collect();
            let key_of = |item: &Item| item.get("pk").and_then(|v| v.as_s()).map(str::to_owned);
            // More than the page lacks: keep what it lacks, and go on after the last kept.
            let mut next = output.last_evaluated_key.as_ref().and_then(|key| match key.get("pk") {
                Some(AttributeValue::S(key)) => Some(key.clone()),
                _ => None,
            });
            if matched.len() > lacking {
                matched.truncate(lacking);
                next = matched.last().and_then(key_of);
            }
            page.items.extend(matched);
            let read = usize::try_from(page.items_read).unwrap_or(usize::MAX);
            if next.is_none() || page.items.len() >= ask.size || read >= SCAN_BUDGET {
                page.next = next.map(|key| Cursor::After { key });
                break;
            }
            start = next.map(|key| [("pk".to_owned(), AttributeValue::S(key))].into());
        }
        Ok(page)
    }
}

/// The key condition on `receivedAt` of a page received at or after `since` and no later than
/// the cursor's `before` (each when given): the condition's text and its values; `None` when
/// nothing can be both (DynamoDB refuses a `BETWEEN` whose bounds are reversed).
fn received_range<'a>(
    since: Option<&'a str>,
    before: Option<&'a str>,
) -> Option<(&'static str, Vec<(&'static str, &'a str)>)> {
    Some(match (since, before) {
        (Some(since), Some(before)) if since > before => return None,
        (Some(since), Some(before)) => {
            (" AND receivedAt BETWEEN :since AND :before", vec![(":since", since), (":before", before)])
        }
        (Some(since), None) => (" AND receivedAt >= :since", vec![(":since", since)]),
        (None, Some(before)) => (" AND receivedAt <= :before", vec![(":before", before)]),
        (None, None) => ("", Vec::new()),
    })
}

/// Whether a shard read newest first has given all a page needs: more than `size` wanted
/// entries (`found`, in the order read), and the last entry read (`last_at`, wanted or not)
/// received strictly before the last of the first `size + 1`, so every entry that shares its
/// millisecond was read too (DynamoDB orders ties of the sort key in no documented way).
fn shard_read(found: &[Entry], size: usize, last_at: Option<&str>) -> bool {
    found.get(size).is_some_and(|(boundary, _)| last_at.is_some_and(|at| at < boundary.as_str()))
}

/// How many items a scan request may evaluate: what the page lacks at first, doubling each
/// round (a filter that keeps few items needs fewer calls), never past what is left of the
/// page's budget (and at least one).
fn scan_limit(lacking: usize, budget: usize, round: u32) -> i32 {
    let wanted = lacking.max(1).saturating_mul(1usize.checked_shl(round).unwrap_or(usize::MAX));
    i32::try_from(wanted.min(budget).max(1)).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(at: &str, key: &str) -> Entry {
        (at.to_owned(), key.to_owned())
    }

    #[test]
    fn a_cursor_survives_its_link_and_a_wrong_one_is_none() {
        let before = Cursor::Before { at: "2026-12-01T00:00:00.000Z".into(), key: "tally:a b".into() };
        assert_eq!(Cursor::parse(View::Attention, &before.to_text()), Some(before.clone()));
        assert_eq!(Cursor::parse(View::Indexed(ReceiptStatus::Failed), &before.to_text()), Some(before));
        let after = Cursor::After { key: "typeform:x y".into() };
        assert_eq!(Cursor::parse(View::Scan(None), &after.to_text()), Some(after));
        for wrong in ["", "2026-12-01T00:00:00.000Z", " tally:a", "2026-12-01T00:00:00.000Z "] {
            assert_eq!(Cursor::parse(View::Attention, wrong), None, "{wrong:?}");
        }
        assert_eq!(Cursor::parse(View::Scan(None), ""), None);
    }

    #[test]
    fn a_status_filter_picks_an_index_or_a_scan_only_when_asked() {
        assert_eq!(View::of(None, false), View::Attention);
        assert_eq!(View::of(None, true), View::Scan(None));
        assert_eq!(View::of(Some(ReceiptStatus::Received), false), View::Indexed(ReceiptStatus::Received));
        assert_eq!(View::of(Some(ReceiptStatus::Failed), true), View::Indexed(ReceiptStatus::Failed));
        assert_eq!(View::of(Some(ReceiptStatus::Completed), false), View::Scan(Some(ReceiptStatus::Completed)));
        let names = |view: View| view.indexes().iter().map(|(_, index, _)| *index).collect::<Vec<_>>();
        assert_eq!(names(View::Attention), [PENDING_INDEX, FAILED_INDEX]);
        assert_eq!(View::Attention.statuses(), [ReceiptStatus::Received, ReceiptStatus::Failed]);
        assert_eq!(View::Indexed(ReceiptStatus::Failed).statuses(), [ReceiptStatus::Failed]);
        assert_eq!(names(View::Indexed(ReceiptStatus::Failed)), [FAILED_INDEX]);
        assert!(names(View::Scan(None)).is_empty());
    }

    #[test]
    fn the_next_page_starts_strictly_after_the_cursor_newest_first() {
        let cursor = Cursor::Before { at: "2026-12-01T00:00:00.002Z".into(), key: "tally:m".into() };
        let at = |t: &str| format!("2026-12-01T00:00:00.00{t}Z");
        assert!(wanted(&entry(&at("1"), "tally:z"), Some(&cursor), None), "older");
        assert!(wanted(&entry(&at("2"), "tally:a"), Some(&cursor), None), "as old, a smaller key");
        assert!(!wanted(&entry(&at("2"), "tally:m"), Some(&cursor), None), "the cursor itself");
        assert!(!wanted(&entry(&at("2"), "tally:n"), Some(&cursor), None), "as old, a larger key");
        assert!(!wanted(&entry(&at("3"), "tally:a"), Some(&cursor), None), "newer");
        assert!(wanted(&entry(&at("3"), "tally:a"), None, Some(Profile::Tally)));
        assert!(!wanted(&entry(&at("3"), "typeform:a"), None, Some(Profile::Tally)));
    }

    #[test]
    fn the_key_condition_bounds_received_at_by_the_filter_and_the_cursor() {
        let (since, before) = ("2026-12-01T00:00:00.000Z", "2026-12-02T00:00:00.000Z");
        assert_eq!(received_range(None, None), Some(("", vec![])));
        assert_eq!(received_range(Some(since), None), Some((" AND receivedAt >= :since", vec![(":since", since)])));
        assert_eq!(received_range(None, Some(before)), Some((" AND receivedAt <= :before", vec![(":before", before)])));
        assert_eq!(
            received_range(Some(since), Some(before)),
            Some((" AND receivedAt BETWEEN :since AND :before", vec![(":since", since), (":before", before)]))
        );
        assert!(received_range(Some(since), Some(since)).is_some(), "equal bounds are one millisecond");
        assert_eq!(received_range(Some(before), Some(since)), None, "reversed: nothing, and no refused query");
    }

    #[test]
    fn a_shard_is_read_until_a_page_and_one_more_and_every_tie_of_the_last() {
        let at = |t: &str| format!("2026-12-01T00:00:0{t}.000Z");
        let found = vec![entry(&at("5"), "k:a"), entry(&at("4"), "k:b"), entry(&at("4"), "k:c")];
        assert!(!shard_read(&found[..2], 2, Some(&at("4"))), "not a page and one more yet");
        assert!(!shard_read(&found, 2, Some(&at("4"))), "the last read shares the boundary's millisecond");
        assert!(shard_read(&found, 2, Some(&at("3"))), "read past the boundary's millisecond");
        assert!(shard_read(&found, 1, Some(&at("3"))));
        assert!(!shard_read(&found, 2, None), "nothing read in the last request");
        assert!(!shard_read(&found, 3, Some(&at("1"))), "fewer than a page and one more");
    }

    #[test]
    fn a_scan_asks_for_what_the_page_lacks_doubling_within_its_budget() {
        assert_eq!(scan_limit(50, SCAN_BUDGET, 0), 50, "an unfiltered page reads what it shows");
        assert_eq!(scan_limit(3, SCAN_BUDGET, 0), 3);
        assert_eq!(scan_limit(3, SCAN_BUDGET, 1), 6);
        assert_eq!(scan_limit(3, SCAN_BUDGET, 4), 48);
        assert_eq!(scan_limit(3, 20, 4), 20, "never past the budget left");
        assert_eq!(scan_limit(3, 0, 0), 1);
        assert_eq!(scan_limit(0, 10, 0), 1);
        assert_eq!(scan_limit(50, SCAN_BUDGET, 200), 1_000, "a shift past the width is the budget");
    }

    #[test]
    fn a_listed_receipt_is_placed_by_its_time_then_its_key() {
        let item = |at: &str, key: &str| -> Item {
            [("receivedAt", at), ("pk", key)]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), shared::dynamo::AttributeValue::S(v.to_owned())))
                .collect()
        };
        let (older, newer) = (item("2026-12-01T00:00:00.000Z", "tally:z"), item("2026-12-01T00:00:00.001Z", "tally:a"));
        assert_eq!(order(&older), (Some("2026-12-01T00:00:00.000Z"), Some("tally:z")));
        assert!(order(&older) < order(&newer));
        assert!(order(&item("2026-12-01T00:00:00.001Z", "tally:b")) > order(&newer), "a tie goes by key");
    }

    #[test]
    fn the_newest_of_every_shard_make_the_page_each_once() {
        let entries = vec![
            entry("2026-12-01T00:00:01.000Z", "tally:a"),
            entry("2026-12-01T00:00:03.000Z", "tally:b"),
            entry("2026-12-01T00:00:02.000Z", "tally:c"),
            entry("2026-12-01T00:00:03.000Z", "tally:b"),
            entry("2026-12-01T00:00:03.000Z", "tally:d"),
        ];
        let (page, more) = newest(entries.clone(), 3);
        let keys: Vec<&str> = page.iter().map(|(_, k)| k.as_str()).collect();
        assert_eq!((keys, more), (vec!["tally:d", "tally:b", "tally:c"], true));
        assert!(!newest(entries, 4).1, "four distinct entries fill a page of four");
    }
}
