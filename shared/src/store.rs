//! What the store's answer to a `PutItem` means: stored, duplicate, or which kind of failure.

use alloc::boxed::Box;

use crate::dynamo::item_from_wire;
use crate::json::{self, Json};
use crate::receipt::Receipt;

/// The result of one conditional put.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PutOutcome {
    /// The receipt is durably stored.
    Stored,
    /// A live receipt already held the key; this is it, as DynamoDB returned it.
    Duplicate(Box<Receipt>),
    /// The store did not store the receipt.
    Failed(StoreError),
}

/// Why the store did not store a receipt. Whether to retry is decided by the variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreError {
    /// The same request may succeed later: the sender should retry (503).
    Retryable(RetryableStoreError),
    /// The request will keep failing until someone changes the configuration (500).
    Permanent(PermanentStoreError),
}

/// Store failures that pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryableStoreError {
    /// Throttling: `ThrottlingException`, `ProvisionedThroughputExceededException`,
    /// `RequestLimitExceeded`, or HTTP 429.
    Throttled,
    /// The store answered 5xx (`InternalServerError`, `ServiceUnavailable`, ...).
    Unavailable,
    /// No answer before the deadline.
    Timeout,
    /// The connection failed.
    Network,
}

/// Store failures that need a person.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PermanentStoreError {
    /// The request was refused as malformed (`ValidationException`, `SerializationException`).
    InvalidRequest,
    /// The table does not exist (`ResourceNotFoundException`).
    TableNotFound,
    /// The credentials or signature were refused (`AccessDeniedException`,
    /// `UnrecognizedClientException`, `InvalidSignatureException`, ...).
    AccessDenied,
    /// A duplicate came back without a readable receipt, so it cannot be compared.
    UnreadableDuplicate,
    /// Any other answer: an unknown error type, a status DynamoDB does not send, a body that
    /// is not JSON.
    UnexpectedResponse,
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
            StoreError::Retryable(RetryableStoreError::Unavailable) => "store_unavailable",
            StoreError::Retryable(RetryableStoreError::Timeout) => "store_timeout",
            StoreError::Retryable(RetryableStoreError::Network) => "store_network_error",
            StoreError::Permanent(PermanentStoreError::InvalidRequest) => "store_invalid_request",
            StoreError::Permanent(PermanentStoreError::TableNotFound) => "store_table_not_found",
            StoreError::Permanent(PermanentStoreError::AccessDenied) => "store_access_denied",
            StoreError::Permanent(PermanentStoreError::UnreadableDuplicate) => "store_unreadable_duplicate",
            StoreError::Permanent(PermanentStoreError::UnexpectedResponse) => "store_unexpected_response",
        }
    }
}

/// The error's `__type`, without the `com.amazonaws.dynamodb.v20120810#` prefix that AWS adds
/// and some compatible servers leave out.
pub fn error_type(body: &Json) -> Option<&str> {
    let full = body.get("__type").and_then(Json::as_str)?;
    Some(full.rsplit_once('#').map_or(full, |(_, short)| short))
}

/// Classifies DynamoDB's answer to a `PutItem` built by [`crate::put_item::put_receipt`].
pub fn classify_put(status: u16, body: &[u8]) -> PutOutcome {
    use PermanentStoreError as P;
    use RetryableStoreError as R;
    let failed = |e| PutOutcome::Failed(e);
    if status >= 500 {
        return failed(StoreError::Retryable(R::Unavailable));
    }
    if status == 429 {
        return failed(StoreError::Retryable(R::Throttled));
    }
    let parsed = json::parse(body).ok().filter(|b| matches!(b, Json::Object(_)));
    let Some(parsed) = parsed else {
        // A success that is not DynamoDB's JSON is not proof of durability.
        return failed(StoreError::Permanent(P::UnexpectedResponse));
    };
    if status == 200 {
        return PutOutcome::Stored;
    }
    if status != 400 {
        return failed(StoreError::Permanent(P::UnexpectedResponse));
    }
    match error_type(&parsed) {
        Some("ConditionalCheckFailedException") => {
            match parsed.get("Item").map(item_from_wire).and_then(Result::ok).map(|i| Receipt::from_item(&i)) {
                Some(Ok(receipt)) => PutOutcome::Duplicate(Box::new(receipt)),
                _ => failed(StoreError::Permanent(P::UnreadableDuplicate)),
            }
        }
        Some(
            "ThrottlingException"
            | "ProvisionedThroughputExceededException"
            | "RequestLimitExceeded"
            | "LimitExceededException"
            | "TransactionConflictException",
        ) => failed(StoreError::Retryable(R::Throttled)),
        Some("InternalServerError" | "ServiceUnavailable" | "ServiceUnavailableException") => {
            failed(StoreError::Retryable(R::Unavailable))
        }
        Some("ValidationException" | "SerializationException" | "ItemCollectionSizeLimitExceededException") => {
            failed(StoreError::Permanent(P::InvalidRequest))
        }
        Some("ResourceNotFoundException") => failed(StoreError::Permanent(P::TableNotFound)),
        Some(
            "AccessDeniedException"
            | "UnrecognizedClientException"
            | "InvalidSignatureException"
            | "IncompleteSignatureException"
            | "MissingAuthenticationTokenException"
            | "ExpiredTokenException"
            | "InvalidClientTokenId"
            | "SignatureDoesNotMatch",
        ) => failed(StoreError::Permanent(P::AccessDenied)),
        _ => failed(StoreError::Permanent(P::UnexpectedResponse)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use wasm_bindgen_test::wasm_bindgen_test;

    const ITEM: &str = include_str!("../tests/fixtures/receipt_item.json");

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
        check(200, "", Err(perm(P::UnexpectedResponse)));
        check(200, "<html>", Err(perm(P::UnexpectedResponse)));
        check(500, "", Err(retry(R::Unavailable)));
        check(503, &typed("ServiceUnavailable"), Err(retry(R::Unavailable)));
        check(429, "", Err(retry(R::Throttled)));
        check(400, &typed("ThrottlingException"), Err(retry(R::Throttled)));
        check(400, &typed("ProvisionedThroughputExceededException"), Err(retry(R::Throttled)));
        check(400, &typed("RequestLimitExceeded"), Err(retry(R::Throttled)));
        check(400, &typed("InternalServerError"), Err(retry(R::Unavailable)));
        check(400, &typed("ValidationException"), Err(perm(P::InvalidRequest)));
        check(400, &typed("ResourceNotFoundException"), Err(perm(P::TableNotFound)));
        check(400, &typed("AccessDeniedException"), Err(perm(P::AccessDenied)));
        check(400, &typed("UnrecognizedClientException"), Err(perm(P::AccessDenied)));
        check(403, r#"{"__type":"InvalidSignatureException"}"#, Err(perm(P::UnexpectedResponse)));
        check(400, r#"{"__type":"InvalidSignatureException"}"#, Err(perm(P::AccessDenied)));
        check(400, &typed("SomethingNew"), Err(perm(P::UnexpectedResponse)));
        check(400, "{}", Err(perm(P::UnexpectedResponse)));
        check(302, "{}", Err(perm(P::UnexpectedResponse)));
        // A condition failure without the old item cannot be compared with the new delivery.
        check(400, &typed("ConditionalCheckFailedException"), Err(perm(P::UnreadableDuplicate)));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn duplicates_carry_the_old_receipt_with_or_without_prefix() {
        for type_name in
            ["com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException", "ConditionalCheckFailedException"]
        {
            let body =
                format!(r#"{{"__type":"{type_name}","message":"The conditional request failed","Item":{ITEM}}}"#);
            match classify_put(400, body.as_bytes()) {
                PutOutcome::Duplicate(receipt) => {
                    assert_eq!(receipt.submission_id, "sub_8fK2qLw9Xc");
                    assert_eq!(receipt.received_at, "2026-11-30T06:21:53.123Z");
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn reasons_are_distinct_and_retryability_follows_the_type() {
        use PermanentStoreError as P;
        use RetryableStoreError as R;
        let all = [
            StoreError::Retryable(R::Throttled),
            StoreError::Retryable(R::Unavailable),
            StoreError::Retryable(R::Timeout),
            StoreError::Retryable(R::Network),
            StoreError::Permanent(P::InvalidRequest),
            StoreError::Permanent(P::TableNotFound),
            StoreError::Permanent(P::AccessDenied),
            StoreError::Permanent(P::UnreadableDuplicate),
            StoreError::Permanent(P::UnexpectedResponse),
        ];
        let mut reasons: alloc::vec::Vec<_> = all.iter().map(|e| e.reason()).collect();
        reasons.sort();
        reasons.dedup();
        assert_eq!(reasons.len(), all.len());
        assert_eq!(all.iter().filter(|e| e.is_retryable()).count(), 4);
    }
}
