//! One page of receipts, as the console shows them, reading only what the page shows:
//! `RECEIVED` and `FAILED` ones newest first from their sparse indexes (each shard read
//! newest first up to one page, the shards merged, the page's receipts then read one by one),
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
                let statuses: Vec<ReceiptStatus> = view.indexes().iter().map(|(status, _, _)| *status).collect();
                self.read_listed(&keys, &statuses).await?
            }
        };
        items.sort_by(|a, b| {
            let at = |i: &Item| i.get("receivedAt").and_then(|v| v.as_s()).map(str::to_owned);
            at(a).cmp(&at(b))
        });
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
        let mut entries = Vec::new();
        let mut items_read = 0;
        for (_, index, shard) in view.indexes() {
            for value in 0..PENDING_SHARDS {
                let (found, read) = self.newest_of_shard(index, shard, &format!("{value:x}"), ask).await?;
                entries.extend(found);
                items_read += read;
            }
        }
        let (shown, more) = newest(entries, ask.size);
        let keys: Vec<String> = shown.iter().map(|(_, key)| key.clone()).collect();
        let statuses: Vec<ReceiptStatus> = view.indexes().iter().map(|(status, _, _)| *status).collect();
        let mut items = self.read_listed(&keys, &statuses).await?;
        items_read += keys.len() as u64;
        items.sort_by(|a, b| {
            let at = |i: &Item| i.get("receivedAt").and_then(|v| v.as_s()).map(str::to_owned);
            (at(b), b.get("pk").and_then(|v| v.as_s())).cmp(&(at(a), a.get("pk").and_then(|v| v.as_s())))
        });
        let next = shown.last().filter(|_| more).map(|(at, key)| Cursor::Before { at: at.clone(), key: key.clone() });
        Ok(Page { items, next, items_read })
    }

    /// Up to `ask.size + 1` entries of one shard of `index` that `ask` wants, newest first, and
    /// how many entries the store read for them (a page of `size + 1` at a time).
    async fn newest_of_shard(
        &self,
        index: &'static str,
        shard: &str,
        value: &str,
        ask: &Ask,
    ) -> Result<(Vec<Entry>, u64), OperateError> {
        let before = match &ask.after {
            Some(Cursor::Before { at, .. }) => Some(at),
            _ => None,
        };
        if ask.since.as_ref().zip(before).is_some_and(|(since, at)| since > at) {
            // Nothing can be both (and DynamoDB refuses such a BETWEEN).
            return Ok((Vec::new(), 0));
        }
        let limit = i32::try_from(ask.size + 1).unwrap_or(i32::MAX);
        let mut condition = String::from("#shard = :shard");
        let mut request = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(index)
            .scan_index_forward(false)
            .limit(limit)
            .expression_attribute_names("#shard", shard)
            .expression_attribute_values(":shard", AttributeValue::S(value.to_owned()));
        match (&ask.since, before) {
            (Some(since), Some(at)) => {
                condition.push_str(" AND receivedAt BETWEEN :since AND :before");
                request = request
                    .expression_attribute_values(":since", AttributeValue::S(since.clone()))
                    .expression_attribute_values(":before", AttributeValue::S(at.clone()));
            }
            (Some(since), None) => {
                condition.push_str(" AND receivedAt >= :since");
                request = request.expression_attribute_values(":since", AttributeValue::S(since.clone()));
            }
            (None, Some(at)) => {
                condition.push_str(" AND receivedAt <= :before");
                request = request.expression_attribute_values(":before", AttributeValue::S(at.clone()));
            }
            (None, None) => {}
        }
        let request = request.key_condition_expression(condition);
        let (mut found, mut read, mut start) = (Vec::new(), 0u64, None);
        loop {
            let output = request.clone().set_exclusive_start_key(start).send().await.map_err(|e| {
                use aws_sdk_dynamodb::error::ProvideErrorMetadata;
                let message = e.as_service_error().and_then(|e| e.message()).unwrap_or_default();
                index_error(operate_error(&self.table, &e), message, &self.table, index)
            })?;
            read += u64::try_from(output.scanned_count()).unwrap_or_default();
            for item in output.items() {
                if let (Some(AttributeValue::S(at)), Some(AttributeValue::S(key))) =
                    (item.get("receivedAt"), item.get("pk"))
                {
                    let entry = (at.clone(), key.clone());
                    if wanted(&entry, ask.after.as_ref(), ask.profile) {
                        found.push(entry);
                    }
                }
            }
            start = output.last_evaluated_key;
            if found.len() > ask.size || start.is_none() {
                return Ok((found, read));
            }
        }
    }

    /// A page of a scan: from the cursor's key in the table's order, until the page is full,
    /// the table ends, or [`SCAN_BUDGET`] items were read. Each request asks for at most the
    /// receipts the page still lacks, so none read is skipped by the next page.
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
        loop {
            let lacking = ask.size.saturating_sub(page.items.len()).max(1);
            let budget = SCAN_BUDGET.saturating_sub(page.items_read as usize).max(1);
            let limit = i32::try_from(lacking.min(budget)).unwrap_or(i32::MAX);
            let output = request
                .clone()
                .limit(limit)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| operate_error(&self.table, &e))?;
            page.items_read += u64::try_from(output.scanned_count()).unwrap_or_default();
            page.items.extend(
                output
                    .items
                    .unwrap_or_default()
                    .into_iter()
                    .map(|i| i.into_iter().map(|(k, v)| (k, from_sdk(v))).collect()),
            );
            start = output.last_evaluated_key;
            let last = start.as_ref().and_then(|key| match key.get("pk") {
                Some(AttributeValue::S(key)) => Some(key.clone()),
                _ => None,
            });
            if last.is_none() || page.items.len() >= ask.size || page.items_read as usize >= SCAN_BUDGET {
                page.next = last.map(|key| Cursor::After { key });
                return Ok(page);
            }
        }
    }
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
