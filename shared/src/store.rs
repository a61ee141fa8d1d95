//! What the store's answer to a `PutItem` means: stored, duplicate, or which kind of failure.

use alloc::string::String;

use crate::dynamo::{item_from_wire, AttributeValue, Item};
use crate::json::{self, Json};
use crate::receipt::ReceiptStatus;

/// The result of one conditional put.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PutOutcome {
    /// The receipt is durably stored.
    Stored,
    /// A live receipt already held the key; this is what the decision needs of it.
    Duplicate(ExistingReceipt),
    /// The store did not store the receipt.
    Failed(StoreError),
}

/// The parts of a stored receipt that decide a duplicate's answer, read from the `ALL_OLD`
/// item. Only these three plain attributes are read, so a receipt whose payload this code could
/// not read (one stored by another version) is still answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExistingReceipt {
    /// `fingerprint`.
    pub fingerprint: String,
    /// `status`.
    pub status: ReceiptStatus,
    /// `receivedAt`.
    pub received_at: String,
}

impl ExistingReceipt {
    /// Reads the three attributes; `None` if any is missing or of the wrong type.
    pub fn from_item(item: &Item) -> Option<ExistingReceipt> {
        let text = |name: &str| item.get(name).and_then(AttributeValue::as_s);
        Some(ExistingReceipt {
            fingerprint: String::from(text("fingerprint")?),
            status: ReceiptStatus::parse(text("status")?)?,
            received_at: String::from(text("receivedAt")?),
        })
    }
}

/// Why the store did not store a receipt. Whether to retry is decided by the variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreError {
    /// The same request may succeed later: the sender should retry (503).
    Retryable(RetryableStoreError),
    /// The request will keep failing until someone changes the configuration (503 with
    /// `Retry-After`: the sender keeps the delivery while it is fixed).
    Permanent(PermanentStoreError),
}

/// Store failures that pass, or answers that prove nothing: the sender tries again (503).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryableStoreError {
    /// Throttling: `ThrottlingException`, `ProvisionedThroughputExceededException`,
    /// `RequestLimitExceeded`, `LimitExceededException`, or HTTP 429.
    Throttled,
    /// A concurrent write got in the way: `TransactionConflictException`, or
    /// `ReplicatedWriteConflictException` from a global table's other region.
    WriteConflict,
    /// The store answered 5xx (`InternalServerError`, `ServiceUnavailable`, ...).
    Unavailable,
    /// No answer before the deadline.
    Timeout,
    /// The connection failed.
    Network,
    /// An answer that is not DynamoDB's: a redirect, a status DynamoDB does not send, a body
    /// that is not JSON, or a 200 whose body is not a `PutItem` result (one carrying `__type`).
    /// Something between the receiver and the store answered; nothing proves a write.
    UnexpectedAnswer,
    /// A condition failure whose `ALL_OLD` item lacks a readable `fingerprint`, `status` or
    /// `receivedAt`, or has a fingerprint of a version this code cannot compute: the delivery
    /// can be neither acknowledged as a duplicate nor refused as a reused key.
    UnreadableDuplicate,
}

/// Store failures that need a person (503 with `Retry-After`, as a configuration fault).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PermanentStoreError {
    /// The request was refused as malformed (`ValidationException`, `SerializationException`),
    /// or the table's design refuses it (`ItemCollectionSizeLimitExceededException`: a local
    /// secondary index's 10 GB collection is full). The core checks each item against
    /// DynamoDB's rules before writing, so a validation error means the core and the store
    /// disagree: a defect or a misconfigured table.
    InvalidRequest,
    /// The table does not exist (`ResourceNotFoundException`).
    TableNotFound,
    /// The credentials or signature were refused (`AccessDeniedException`,
    /// `UnrecognizedClientException`, `InvalidSignatureException`, ...).
    AccessDenied,
    /// A DynamoDB error type this code does not know.
    UnknownError,
}

impl StoreError {
    /// True when the sender should simply try again.
    pub fn is_retryable(self) -> bool {
        matches!(self, StoreError::Retryable(_))
    }

    /// A stable name for logs.
    pub fn reason(self) -> &'static str {
        match self {
            StoreError::Retryable(RetryableStoreError::Throttled) => "store_throttled",
            StoreError::Retryable(RetryableStoreError::WriteConflict) => "store_write_conflict",
            StoreError::Retryable(RetryableStoreError::Unavailable) => "store_unavailable",
            StoreError::Retryable(RetryableStoreError::Timeout) => "store_timeout",
            StoreError::Retryable(RetryableStoreError::Network) => "store_network_error",
            StoreError::Retryable(RetryableStoreError::UnexpectedAnswer) => "store_unexpected_answer",
            StoreError::Retryable(RetryableStoreError::UnreadableDuplicate) => "store_unreadable_duplicate",
            StoreError::Permanent(PermanentStoreError::InvalidRequest) => "store_invalid_request",
            StoreError::Permanent(PermanentStoreError::TableNotFound) => "store_table_not_found",
            StoreError::Permanent(PermanentStoreError::AccessDenied) => "store_access_denied",
            StoreError::Permanent(PermanentStoreError::UnknownError) => "store_unknown_error",
        }
    }
}

/// The error's `__type`, without the `com.amazonaws.dynamodb.v20120810#` prefix that AWS adds
/// and some compatible servers leave out.
pub fn error_type(body: &Json) -> Option<&str> {
    let full = body.get("__type").and_then(Json::as_str)?;
    Some(full.rsplit_once('#').map_or(full, |(_, short)| short))
}

/// Classifies DynamoDB's answer to a `PutItem` built by [`crate::put_item::put_item`].
///
/// Only a 200 whose body is a JSON object without `__type` is a stored receipt. Every answer
/// that is not recognisably DynamoDB's is retryable: it proves nothing either way.
pub fn classify_put(status: u16, body: &[u8]) -> PutOutcome {
    use PermanentStoreError as P;
    use RetryableStoreError as R;
    let retry = |e| PutOutcome::Failed(StoreError::Retryable(e));
    let permanent = |e| PutOutcome::Failed(StoreError::Permanent(e));
    if status >= 500 {
        return retry(R::Unavailable);
    }
    if status == 429 {
        return retry(R::Throttled);
    }
    // DynamoDB answers errors with 400 (AWS's front end sends some signature errors as 403).
    if !matches!(status, 200 | 400 | 403) {
        return retry(R::UnexpectedAnswer);
    }
    // The wire form of an `ALL_OLD` item nests deeper than the body it holds.
    let Some(parsed) = json::parse_wire(body).ok().filter(|b| matches!(b, Json::Object(_))) else {
        return retry(R::UnexpectedAnswer);
    };
    let error = error_type(&parsed);
    if status == 200 {
        return if parsed.get("__type").is_some() { retry(R::UnexpectedAnswer) } else { PutOutcome::Stored };
    }
    match error {
        Some("ConditionalCheckFailedException") => {
            let existing = parsed.get("Item").and_then(|i| item_from_wire(i).ok());
            match existing.as_ref().and_then(ExistingReceipt::from_item) {
                Some(existing) => PutOutcome::Duplicate(existing),
                None => retry(R::UnreadableDuplicate),
            }
        }
        Some(
            "ThrottlingException"
            | "ProvisionedThroughputExceededException"
            | "RequestLimitExceeded"
            | "LimitExceededException",
        ) => retry(R::Throttled),
        Some("TransactionConflictException" | "ReplicatedWriteConflictException") => retry(R::WriteConflict),
        Some("InternalServerError" | "ServiceUnavailable" | "ServiceUnavailableException") => retry(R::Unavailable),
        Some("ValidationException" | "SerializationException" | "ItemCollectionSizeLimitExceededException") => {
            permanent(P::InvalidRequest)
        }
        Some("ResourceNotFoundException") => permanent(P::TableNotFound),
        Some(
            "AccessDeniedException"
            | "UnrecognizedClientException"
            | "InvalidSignatureException"
            | "IncompleteSignatureException"
            | "MissingAuthenticationTokenException"
            | "ExpiredTokenException"
            | "InvalidClientTokenId"
            | "SignatureDoesNotMatch",
        ) => permanent(P::AccessDenied),
        Some(_) => permanent(P::UnknownError),
        // A 400 without an error type is not DynamoDB's answer.
        None => retry(R::UnexpectedAnswer),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use wasm_bindgen_test::wasm_bindgen_test;

    use crate::json::parse;
    use alloc::string::String;

    const ITEM: &str = include_str!("../tests/fixtures/receipt_item.json");
    const LEGACY_ITEM: &str = include_str!("../tests/fixtures/receipt_item_legacy_map.json");

    fn check(status: u16, body: &str, expected: Result<(), StoreError>) {
        let got = match classify_put(status, body.as_bytes()) {
            PutOutcome::Stored => Ok(()),
            PutOutcome::Duplicate(_) => panic!("unexpected duplicate for {body}"),
            PutOutcome::Failed(e) => Err(e),
        };
        assert_eq!(got, expected, "{status} {body}");
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn table_of_answers() {
        use PermanentStoreError as P;
        use RetryableStoreError as R;
        let (retry, perm) = (StoreError::Retryable, StoreError::Permanent);
        let typed = |t: &str| format!(r#"{{"__type":"com.amazonaws.dynamodb.v20120810#{t}","message":"m"}}"#);
        check(200, "{}", Ok(()));
        check(200, r#"{"ConsumedCapacity":{"TableName":"t","CapacityUnits":1}}"#, Ok(()));
        check(200, "", Err(retry(R::UnexpectedAnswer)));
        check(200, "<html>", Err(retry(R::UnexpectedAnswer)));
        check(200, "[]", Err(retry(R::UnexpectedAnswer)));
        check(200, &typed("ValidationException"), Err(retry(R::UnexpectedAnswer)));
        check(200, r#"{"__type":"anything"}"#, Err(retry(R::UnexpectedAnswer)));
        check(500, "", Err(retry(R::Unavailable)));
        check(503, &typed("ServiceUnavailable"), Err(retry(R::Unavailable)));
        check(429, "", Err(retry(R::Throttled)));
        check(400, &typed("ThrottlingException"), Err(retry(R::Throttled)));
        check(400, &typed("ProvisionedThroughputExceededException"), Err(retry(R::Throttled)));
        check(400, &typed("RequestLimitExceeded"), Err(retry(R::Throttled)));
        check(400, &typed("LimitExceededException"), Err(retry(R::Throttled)));
        check(400, &typed("TransactionConflictException"), Err(retry(R::WriteConflict)));
        check(400, &typed("ReplicatedWriteConflictException"), Err(retry(R::WriteConflict)));
        check(400, &typed("InternalServerError"), Err(retry(R::Unavailable)));
        check(400, &typed("ServiceUnavailableException"), Err(retry(R::Unavailable)));
        check(400, &typed("ValidationException"), Err(perm(P::InvalidRequest)));
        check(400, &typed("SerializationException"), Err(perm(P::InvalidRequest)));
        check(400, &typed("ItemCollectionSizeLimitExceededException"), Err(perm(P::InvalidRequest)));
        check(400, &typed("ResourceNotFoundException"), Err(perm(P::TableNotFound)));
        for denied in [
            "AccessDeniedException",
            "UnrecognizedClientException",
            "InvalidSignatureException",
            "IncompleteSignatureException",
            "MissingAuthenticationTokenException",
            "ExpiredTokenException",
            "InvalidClientTokenId",
            "SignatureDoesNotMatch",
        ] {
            check(400, &typed(denied), Err(perm(P::AccessDenied)));
        }
        check(400, r#"{"__type":"InvalidSignatureException"}"#, Err(perm(P::AccessDenied)));
        check(400, &typed("SomethingNew"), Err(perm(P::UnknownError)));
        check(400, "{}", Err(retry(R::UnexpectedAnswer)));
        check(400, "not json", Err(retry(R::UnexpectedAnswer)));
        // Redirects and statuses DynamoDB does not send prove nothing.
        for status in [301, 302, 303, 307, 308, 401, 403, 404, 204, 201, 100] {
            check(status, "{}", Err(retry(R::UnexpectedAnswer)));
        }
        check(403, r#"{"__type":"InvalidSignatureException"}"#, Err(perm(P::AccessDenied)));
        check(403, "<html>Forbidden</html>", Err(retry(R::UnexpectedAnswer)));
        // A condition failure without the old item cannot be compared with the new delivery.
        check(400, &typed("ConditionalCheckFailedException"), Err(retry(R::UnreadableDuplicate)));
        let without = |drop: &str| {
            let mut item = parse(ITEM.as_bytes()).unwrap();
            if let Json::Object(map) = &mut item {
                map.remove(drop);
            }
            format!(r#"{{"__type":"ConditionalCheckFailedException","Item":{}}}"#, item.to_text())
        };
        for attribute in ["fingerprint", "status", "receivedAt"] {
            check(400, &without(attribute), Err(retry(R::UnreadableDuplicate)));
        }
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn duplicates_carry_the_old_receipt_with_or_without_prefix() {
        for type_name in
            ["com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException", "ConditionalCheckFailedException"]
        {
            for item in [ITEM, LEGACY_ITEM] {
                let body =
                    format!(r#"{{"__type":"{type_name}","message":"The conditional request failed","Item":{item}}}"#);
                match classify_put(400, body.as_bytes()) {
                    PutOutcome::Duplicate(existing) => {
                        assert_eq!(existing.status, ReceiptStatus::Received);
                        assert_eq!(existing.received_at, "2026-11-30T06:21:53.123Z");
                        assert!(existing
                            .fingerprint
                            .ends_with("c80585abdefd0a19a9b7ae9d1e4c79c10a2765ef34bbad001b781d745ed6097d"));
                    }
                    other => panic!("{other:?}"),
                }
            }
        }
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn a_duplicate_is_read_whatever_its_payload_holds() {
        // A payload this code cannot read (another version's, or nested past the body limit)
        // does not stop the duplicate from being answered.
        let deep = "[".repeat(40) + &"]".repeat(40);
        for payload in
            [String::from(r#"{"S":"not json"}"#), String::from(r#"{"N":"1"}"#), format!(r#"{{"S":"{deep}"}}"#)]
        {
            let mut item = parse(ITEM.as_bytes()).unwrap();
            if let Json::Object(map) = &mut item {
                map.insert("payload".into(), parse(payload.as_bytes()).unwrap());
            }
            let body = format!(r#"{{"__type":"ConditionalCheckFailedException","Item":{}}}"#, item.to_text());
            assert!(matches!(classify_put(400, body.as_bytes()), PutOutcome::Duplicate(_)), "{payload}");
        }
        // A legacy map payload nested as deep as a body may be: 31 body levels, 63 on the wire.
        let mut nested = String::from(r#"{"S":"x"}"#);
        for _ in 0..crate::json::MAX_DEPTH {
            nested = format!(r#"{{"M":{{"a":{nested}}}}}"#);
        }
        let mut item = parse(ITEM.as_bytes()).unwrap();
        if let Json::Object(map) = &mut item {
            map.insert("payload".into(), crate::json::parse_wire(nested.as_bytes()).unwrap());
        }
        let body = format!(r#"{{"__type":"ConditionalCheckFailedException","Item":{}}}"#, item.to_text());
        assert!(matches!(classify_put(400, body.as_bytes()), PutOutcome::Duplicate(_)));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn reasons_are_distinct_and_retryability_follows_the_type() {
        use PermanentStoreError as P;
        use RetryableStoreError as R;
        let all = [
            StoreError::Retryable(R::Throttled),
            StoreError::Retryable(R::WriteConflict),
            StoreError::Retryable(R::Unavailable),
            StoreError::Retryable(R::Timeout),
            StoreError::Retryable(R::Network),
            StoreError::Retryable(R::UnexpectedAnswer),
            StoreError::Retryable(R::UnreadableDuplicate),
            StoreError::Permanent(P::InvalidRequest),
            StoreError::Permanent(P::TableNotFound),
            StoreError::Permanent(P::AccessDenied),
            StoreError::Permanent(P::UnknownError),
        ];
        let mut reasons: alloc::vec::Vec<_> = all.iter().map(|e| e.reason()).collect();
        reasons.sort();
        reasons.dedup();
        assert_eq!(reasons.len(), all.len());
        assert_eq!(all.iter().filter(|e| e.is_retryable()).count(), 7);
    }
}
