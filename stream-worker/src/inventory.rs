//! The receipts table as an operator sees it: the waiting receipts (from the sparse `pending`
//! index), the count of `FAILED` ones (from the sparse `failed` index, which `--scan` fills
//! with those that failed before it), the reads a listing stands on (an index's keys, receipts
//! by key, a scan; [`crate::listing`] lists), one receipt by submission ID, and reopening a
//! `FAILED` one.

use std::collections::HashMap;
use std::fmt;

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::types::AttributeValue;
use shared::dynamo::Item;
use shared::receipt::{
    pending_shard, ReceiptStatus, FAILED_INDEX, FAILED_SHARD, PENDING_INDEX, PENDING_SHARD, PENDING_SHARDS,
};

use crate::receipts::{from_sdk, old_text, DynamoReceipts};

/// Why an operator command could not do its work. Messages name the table and what to check,
/// never a credential or form content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OperateError {
    /// The table (or its `pending` index) does not exist where the SDK looked.
    NoSuchTable { table: String },
    /// The credentials were refused, or they may not do this on the table.
    AccessDenied { table: String, code: String },
    /// The table has no `index` (the sparse `pending` or `failed` one: DynamoDB refuses the
    /// query on it).
    NoIndex { table: String, index: &'static str },
    /// The `index` exists but DynamoDB is still filling it (a stack update that added it
    /// returns before the index is `ACTIVE`).
    IndexBuilding { table: String, index: &'static str },
    /// No receipt for this submission ID.
    UnknownSubmission { submission_id: String },
    /// The store could not be reached, or answered with another error.
    Store { code: String },
}

impl fmt::Display for OperateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OperateError::NoSuchTable { table } => write!(
                f,
                "table {table:?} (or its {PENDING_INDEX:?} index) was not found: check RECEIPTS_TABLE and AWS_REGION"
            ),
            OperateError::NoIndex { table, index } => {
                write!(f, "table {table:?} has no {index:?} index (create or update the table from template.yaml)")?;
                if *index == PENDING_INDEX {
                    f.write_str(", or use reconcile --scan")?;
                }
                Ok(())
            }
            OperateError::IndexBuilding { table, index } => write!(
                f,
                "table {table:?}'s {index:?} index is still being built (DynamoDB fills a new index after the stack update that added it): it answers once it is ACTIVE"
            ),
            OperateError::AccessDenied { table, code } => {
                write!(f, "the AWS credentials may not do this on table {table:?} ({code})")
            }
            OperateError::UnknownSubmission { submission_id } => {
                write!(f, "no receipt for submission ID {submission_id:?}")
            }
            OperateError::Store { code } => write!(f, "the store did not answer as expected ({code})"),
        }
    }
}

impl std::error::Error for OperateError {}

/// Maps an SDK error to what the operator must do about it.
pub(crate) fn operate_error<E, R>(table: &str, error: &SdkError<E, R>) -> OperateError
where
    E: aws_sdk_dynamodb::error::ProvideErrorMetadata,
{
    error_of_code(table, error.as_service_error().map(|service| service.code().unwrap_or("unknown")))
}

/// What the store's error code (`None`: no answer) means for the operator.
fn error_of_code(table: &str, code: Option<&str>) -> OperateError {
    let Some(code) = code.map(str::to_owned) else { return OperateError::Store { code: "unreachable".into() } };
    match code.as_str() {
        "ResourceNotFoundException" => OperateError::NoSuchTable { table: table.to_owned() },
        "AccessDeniedException"
        | "UnrecognizedClientException"
        | "InvalidSignatureException"
        | "ExpiredTokenException"
        | "MissingAuthenticationTokenException" => OperateError::AccessDenied { table: table.to_owned(), code },
        _ => OperateError::Store { code },
    }
}

/// A page's continuation (DynamoDB's `LastEvaluatedKey`).
type PageKey = Option<HashMap<String, AttributeValue>>;

/// What a refused query on the sparse `index` means: the request is fixed, so a
/// `ValidationException` is about the index, missing or (its `message` says "backfilling")
/// still being filled.
pub(crate) fn index_error(error: OperateError, message: &str, table: &str, index: &'static str) -> OperateError {
    match error {
        OperateError::Store { code } if code == "ValidationException" => {
            if message.contains("backfilling") {
                OperateError::IndexBuilding { table: table.to_owned(), index }
            } else {
                OperateError::NoIndex { table: table.to_owned(), index }
            }
        }
        other => other,
    }
}

/// The receipt keys (`pk`) of a page of an index.
fn keys_of(page: &aws_sdk_dynamodb::operation::query::QueryOutput) -> Vec<String> {
    page.items()
        .iter()
        .filter_map(|item| match item.get("pk") {
            Some(AttributeValue::S(key)) => Some(key.clone()),
            _ => None,
        })
        .collect()
}

/// What [`DynamoReceipts::list`] returns for one receipt: everything but the payload.
pub const LISTED: &str =
    "pk, #profile, submissionId, #status, receivedAt, completedAt, failedAt, failureReason, requestId, redrivenAt";

impl DynamoReceipts {
    /// Keys of receipts still `RECEIVED` with `receivedAt` before `cutoff` (ISO-8601), from the
    /// sparse index: one query per shard, paged, reading only the index's keys.
    pub async fn overdue(&self, cutoff: &str) -> Result<Vec<String>, OperateError> {
        let mut keys = Vec::new();
        self.each_shard(PENDING_INDEX, PENDING_SHARD, Some(("<", cutoff)), None, |page| keys.extend(keys_of(&page)))
            .await?;
        Ok(keys)
    }

    /// Keys of the receipts in the sparse `index` (partition key `shard`) received at or after
    /// `since`, when given: one query per shard, paged, reading only the index's keys.
    pub(crate) async fn indexed(
        &self,
        index: &'static str,
        shard: &str,
        since: Option<&str>,
    ) -> Result<Vec<String>, OperateError> {
        let mut keys = Vec::new();
        let range = since.map(|since| (">=", since));
        self.each_shard(index, shard, range, None, |page| keys.extend(keys_of(&page))).await?;
        Ok(keys)
    }

    /// How many receipts are `FAILED` and not past their expiry (`now_secs`: TTL deletes an
    /// expired item only within about two days, and a redrive refuses it meanwhile), from their
    /// sparse index, which holds `expiresAt`: one `COUNT` query per shard, paged (each page reads
    /// up to 1 MB of index entries; its `Count` is those the filter kept).
    pub async fn failed_count(&self, now_secs: u64) -> Result<u64, OperateError> {
        let mut count = 0u64;
        let unexpired = Some(now_secs);
        self.each_shard(FAILED_INDEX, FAILED_SHARD, None, unexpired, |page| {
            count += u64::try_from(page.count()).unwrap_or_default()
        })
        .await?;
        Ok(count)
    }

    /// Queries every shard of the sparse `index` (partition key `shard`, sort key `receivedAt`,
    /// compared with `range`'s operator and value when given), page by page, handing each page
    /// to `page`; `count_unexpired_at` asks for the number of entries only, of those whose
    /// `expiresAt` is after it (epoch seconds).
    async fn each_shard(
        &self,
        index: &'static str,
        shard: &str,
        range: Option<(&str, &str)>,
        count_unexpired_at: Option<u64>,
        mut page: impl FnMut(aws_sdk_dynamodb::operation::query::QueryOutput),
    ) -> Result<(), OperateError> {
        for value in 0..PENDING_SHARDS {
            let mut request = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(index)
                .expression_attribute_names("#shard", shard)
                .expression_attribute_values(":shard", AttributeValue::S(format!("{value:x}")));
            request = match range {
                Some((operator, at)) => request
                    .key_condition_expression(format!("#shard = :shard AND receivedAt {operator} :at"))
                    .expression_attribute_values(":at", AttributeValue::S(at.to_owned())),
                None => request.key_condition_expression("#shard = :shard"),
            };
            if let Some(now_secs) = count_unexpired_at {
                request = request
                    .select(aws_sdk_dynamodb::types::Select::Count)
                    .filter_expression("expiresAt > :now")
                    .expression_attribute_values(":now", AttributeValue::N(now_secs.to_string()));
            }
            let mut start: PageKey = None;
            loop {
                let output = request.clone().set_exclusive_start_key(start).send().await.map_err(|e| {
                    use aws_sdk_dynamodb::error::ProvideErrorMetadata;
                    let message = e.as_service_error().and_then(|e| e.message()).unwrap_or_default();
                    index_error(operate_error(&self.table, &e), message, &self.table, index)
                })?;
                start = output.last_evaluated_key.clone();
                page(output);
                if start.is_none() {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Keys of receipts still `RECEIVED` before `cutoff`, by reading the whole table: for
    /// receipts written before the `pending` index existed. Costs a read of every item.
    pub async fn overdue_by_scan(&self, cutoff: &str) -> Result<Vec<String>, OperateError> {
        let items = self.scan(Some(ReceiptStatus::Received), None, Some(cutoff), "pk").await?;
        Ok(items.iter().filter_map(|item| item.get("pk").and_then(|v| v.as_s()).map(str::to_owned)).collect())
    }

    /// Puts every `FAILED` receipt that is not in the `failed` index (failed before the index
    /// existed) into it, by reading the whole table; how many it put. Each update is
    /// conditional on the receipt still being `FAILED` and outside the index.
    pub async fn index_failed_by_scan(&self) -> Result<u64, OperateError> {
        let items = self.scan(Some(ReceiptStatus::Failed), None, None, "pk, failedShard").await?;
        let mut indexed = 0;
        for item in items.iter().filter(|item| !item.contains_key(FAILED_SHARD)) {
            let Some(key) = item.get("pk").and_then(|v| v.as_s()) else { continue };
            let update = self
                .client
                .update_item()
                .table_name(&self.table)
                .key("pk", AttributeValue::S(key.to_owned()))
                .condition_expression("#status = :failed AND attribute_not_exists(#failedShard)")
                .update_expression("SET #failedShard = :shard")
                .expression_attribute_names("#status", "status")
                .expression_attribute_names("#failedShard", FAILED_SHARD)
                .expression_attribute_values(":failed", AttributeValue::S(ReceiptStatus::Failed.as_str().into()))
                .expression_attribute_values(":shard", AttributeValue::S(pending_shard(key)));
            match update.send().await {
                Ok(_) => indexed += 1,
                Err(error) => match error.as_service_error() {
                    // Redriven or indexed meanwhile: nothing to do.
                    Some(failed) if failed.is_conditional_check_failed_exception() => {}
                    _ => return Err(operate_error(&self.table, &error)),
                },
            }
        }
        Ok(indexed)
    }

    /// The receipts `keys` (their [`LISTED`] attributes), read consistently, 16 at a time; those
    /// no longer in one of `statuses` (or gone) are left out.
    pub(crate) async fn read_listed(
        &self,
        keys: &[String],
        statuses: &[ReceiptStatus],
    ) -> Result<Vec<Item>, OperateError> {
        use futures_util::stream::{self, StreamExt, TryStreamExt};
        // Owned keys: a closure over borrowed ones is not `Send` for every lifetime (the console's
        // handlers need it to be).
        let read = stream::iter(keys.iter().cloned().map(|key| self.read_one(key))).buffered(16);
        let items: Vec<Option<Item>> = read.try_collect().await?;
        let in_status = |item: &Item| {
            let status = item.get("status").and_then(|v| v.as_s());
            statuses.iter().any(|wanted| status == Some(wanted.as_str()))
        };
        Ok(items.into_iter().flatten().filter(in_status).collect())
    }

    /// The receipt `key`'s [`LISTED`] attributes, read consistently; `None` when it is gone.
    async fn read_one(&self, key: String) -> Result<Option<Item>, OperateError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(key))
            .projection_expression(LISTED)
            .expression_attribute_names("#profile", "profile")
            .expression_attribute_names("#status", "status")
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| operate_error(&self.table, &e))?;
        Ok(output.item.map(|item| item.into_iter().map(|(k, v)| (k, from_sdk(v))).collect()))
    }

    pub(crate) async fn scan(
        &self,
        status: Option<ReceiptStatus>,
        since: Option<&str>,
        before: Option<&str>,
        projection: &str,
    ) -> Result<Vec<Item>, OperateError> {
        let mut filters = Vec::new();
        let mut request = self.client.scan().table_name(&self.table).projection_expression(projection);
        if let Some(status) = status {
            filters.push("#status = :status");
            request = request.expression_attribute_values(":status", AttributeValue::S(status.as_str().into()));
        }
        if let Some(since) = since {
            filters.push("receivedAt >= :since");
            request = request.expression_attribute_values(":since", AttributeValue::S(since.into()));
        }
        if let Some(before) = before {
            filters.push("receivedAt < :before");
            request = request.expression_attribute_values(":before", AttributeValue::S(before.into()));
        }
        if projection.contains("#status") || status.is_some() {
            request = request.expression_attribute_names("#status", "status");
        }
        if projection.contains("#profile") {
            request = request.expression_attribute_names("#profile", "profile");
        }
        if !filters.is_empty() {
            request = request.filter_expression(filters.join(" AND "));
        }
        let mut items = Vec::new();
        let mut start: PageKey = None;
        loop {
            let page = request
                .clone()
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| operate_error(&self.table, &e))?;
            items.extend(
                page.items
                    .unwrap_or_default()
                    .into_iter()
                    .map(|i| i.into_iter().map(|(k, v)| (k, from_sdk(v))).collect()),
            );
            start = page.last_evaluated_key;
            if start.is_none() {
                return Ok(items);
            }
        }
    }

    /// The receipt `key` as stored now, or [`OperateError::UnknownSubmission`].
    pub async fn find(&self, key: &str, submission_id: &str) -> Result<Item, OperateError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(key.to_owned()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| operate_error(&self.table, &e))?;
        match output.item {
            Some(item) => Ok(item.into_iter().map(|(k, v)| (k, from_sdk(v))).collect()),
            None => Err(OperateError::UnknownSubmission { submission_id: submission_id.to_owned() }),
        }
    }

    /// Moves the `FAILED` receipt `key` back to `RECEIVED`, into the `pending` index, noting
    /// `redrivenAt` (`now`), if it is still the one that was read: received at `received_at`
    /// and failed at `failed_at` (so one that was redriven and failed again since is not
    /// reopened twice), and not past its expiry (`now_secs`: TTL's to delete).
    pub async fn reopen(
        &self,
        key: &str,
        received_at: &str,
        failed_at: Option<&str>,
        now: &str,
        now_secs: u64,
    ) -> Result<Reopen, OperateError> {
        let s = |v: &str| AttributeValue::S(v.to_owned());
        let same_failure = match failed_at {
            Some(_) => "failedAt = :failedAt",
            None => "attribute_not_exists(failedAt)",
        };
        let mut update = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(key))
            .condition_expression(format!(
                "attribute_exists(pk) AND receivedAt = :receivedAt AND #status = :failed AND {same_failure} AND expiresAt > :nowSecs"
            ))
            .update_expression(
                "SET #status = :received, #shard = :shard, redrivenAt = :now REMOVE failedAt, failureReason, #failedShard",
            )
            .expression_attribute_names("#failedShard", FAILED_SHARD)
            .expression_attribute_names("#status", "status")
            .expression_attribute_names("#shard", PENDING_SHARD)
            .expression_attribute_values(":receivedAt", s(received_at))
            .expression_attribute_values(":failed", s(ReceiptStatus::Failed.as_str()))
            .expression_attribute_values(":received", s(ReceiptStatus::Received.as_str()))
            .expression_attribute_values(":shard", s(&pending_shard(key)))
            .expression_attribute_values(":now", s(now))
            .expression_attribute_values(":nowSecs", AttributeValue::N(now_secs.to_string()))
            .return_values_on_condition_check_failure(
                aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure::AllOld,
            );
        if let Some(failed_at) = failed_at {
            update = update.expression_attribute_values(":failedAt", s(failed_at));
        }
        match update.send().await {
            Ok(_) => Ok(Reopen::Done),
            Err(error) => match error.as_service_error() {
                Some(aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(
                    failed,
                )) => {
                    // The item as it was: still that FAILED receipt means only its expiry failed.
                    let text = |name| old_text(failed.item(), name);
                    let same = text("receivedAt") == Some(received_at)
                        && text("status") == Some("FAILED")
                        && text("failedAt") == failed_at;
                    Ok(if same { Reopen::Expired } else { Reopen::Changed })
                }
                _ => Err(operate_error(&self.table, &error)),
            },
        }
    }
}

/// What [`DynamoReceipts::reopen`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reopen {
    /// The receipt is `RECEIVED` again, in the `pending` index.
    Done,
    /// It is no longer that `FAILED` receipt (redriven, replaced or deleted meanwhile).
    Changed,
    /// It is past its expiry: TTL's to delete, not to bring back.
    Expired,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_index_query_says_whether_the_index_is_missing_or_still_building() {
        let validation = || OperateError::Store { code: "ValidationException".into() };
        // DynamoDB's messages, as it answers a query on a missing and on a backfilling index.
        let missing = "The table does not have the specified index: failed";
        let building = "Cannot read from backfilling global secondary index: failed";
        assert_eq!(
            index_error(validation(), missing, "t", FAILED_INDEX),
            OperateError::NoIndex { table: "t".into(), index: FAILED_INDEX }
        );
        assert_eq!(
            index_error(validation(), building, "t", FAILED_INDEX),
            OperateError::IndexBuilding { table: "t".into(), index: FAILED_INDEX }
        );
        let throttled = OperateError::Store { code: "ThrottlingException".into() };
        assert_eq!(index_error(throttled.clone(), building, "t", FAILED_INDEX), throttled);
        let said = OperateError::IndexBuilding { table: "t".into(), index: FAILED_INDEX }.to_string();
        assert!(said.contains("\"failed\" index is still being built") && said.contains("ACTIVE"), "{said}");
    }

    #[test]
    fn an_index_page_gives_its_receipts_keys() {
        use aws_sdk_dynamodb::operation::query::QueryOutput;
        let entry = |pk: AttributeValue| HashMap::from([("pk".to_owned(), pk)]);
        let page = QueryOutput::builder()
            .items(entry(AttributeValue::S("tally:r1".into())))
            .items(entry(AttributeValue::N("7".into())))
            .items(HashMap::new())
            .items(entry(AttributeValue::S("tally:r2".into())))
            .build();
        assert_eq!(keys_of(&page), ["tally:r1", "tally:r2"]);
        assert!(keys_of(&QueryOutput::builder().build()).is_empty());
    }

    #[test]
    fn the_store_s_error_codes_say_what_the_operator_must_check() {
        let table = "receipts";
        assert_eq!(
            error_of_code(table, Some("ResourceNotFoundException")),
            OperateError::NoSuchTable { table: table.into() }
        );
        for code in [
            "AccessDeniedException",
            "UnrecognizedClientException",
            "InvalidSignatureException",
            "ExpiredTokenException",
            "MissingAuthenticationTokenException",
        ] {
            assert_eq!(
                error_of_code(table, Some(code)),
                OperateError::AccessDenied { table: table.into(), code: code.into() }
            );
        }
        assert_eq!(
            error_of_code(table, Some("ThrottlingException")),
            OperateError::Store { code: "ThrottlingException".into() }
        );
        assert_eq!(error_of_code(table, None), OperateError::Store { code: "unreachable".into() });

        let said = |error: OperateError| error.to_string();
        assert!(said(error_of_code(table, Some("ResourceNotFoundException")))
            .contains("check RECEIPTS_TABLE and AWS_REGION"));
        assert!(said(OperateError::NoIndex { table: table.into(), index: PENDING_INDEX }).ends_with(
            "has no \"pending\" index (create or update the table from template.yaml), or use reconcile --scan"
        ));
        assert!(said(OperateError::NoIndex { table: table.into(), index: FAILED_INDEX })
            .ends_with("has no \"failed\" index (create or update the table from template.yaml)"));
        assert_eq!(
            said(error_of_code(table, Some("ExpiredTokenException"))),
            "the AWS credentials may not do this on table \"receipts\" (ExpiredTokenException)"
        );
        assert!(said(OperateError::UnknownSubmission { submission_id: "s1".into() }).contains("\"s1\""));
        assert!(said(error_of_code(table, None)).contains("unreachable"));
    }
}
