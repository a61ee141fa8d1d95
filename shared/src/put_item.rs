//! The conditional `PutItem` that stores a receipt, as DynamoDB's JSON API wants it.

use alloc::collections::BTreeMap;
use alloc::string::String;

use crate::dynamo::{item_to_wire, Item};
use crate::json::{Json, Number};

/// `Content-Type` of every DynamoDB JSON API request.
pub const CONTENT_TYPE: &str = "application/x-amz-json-1.0";
/// `X-Amz-Target` of `PutItem`.
pub const PUT_ITEM_TARGET: &str = "DynamoDB_20120810.PutItem";
/// Stores the receipt unless a live one holds the key. A receipt whose TTL has passed but which
/// DynamoDB has not deleted yet (deletion can lag by days) must not block a new delivery.
pub const PUT_CONDITION: &str = "attribute_not_exists(pk) OR expiresAt < :now";

/// A request for the shell to sign and send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreRequest {
    /// The `X-Amz-Target` header.
    pub target: &'static str,
    /// The JSON body.
    pub body: String,
}

/// The `PutItem` request for a receipt's `item` ([`crate::receipt::Receipt::to_item`]) in
/// `table` at `now_unix_secs`. On a failed condition DynamoDB returns the existing item
/// (`ALL_OLD`), so a duplicate is answered in one round trip.
pub fn put_item(table: &str, item: &Item, now_unix_secs: i64) -> StoreRequest {
    let now = Json::String(String::from(Number::from_i64(now_unix_secs).as_str()));
    let values = BTreeMap::from([(String::from(":now"), Json::Object(BTreeMap::from([(String::from("N"), now)])))]);
    let body = Json::Object(BTreeMap::from([
        (String::from("TableName"), Json::string(table)),
        (String::from("Item"), item_to_wire(item)),
        (String::from("ConditionExpression"), Json::string(PUT_CONDITION)),
        (String::from("ExpressionAttributeValues"), Json::Object(values)),
        (String::from("ReturnValuesOnConditionCheckFailure"), Json::string("ALL_OLD")),
    ]));
    StoreRequest { target: PUT_ITEM_TARGET, body: body.to_text() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dynamo::item_from_wire;
    use crate::envelope::parse_envelope;
    use crate::json::parse;
    use crate::receipt::Receipt;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test(unsupported = test)]
    fn body_has_every_part() {
        let envelope =
            parse_envelope(br#"{"event":"form.submitted","data":{"submissionId":"s1","formData":{"a":"b"}}}"#).unwrap();
        let receipt = Receipt::new(&envelope, "staticforms:form.submitted:s1".into(), "r", 5_000, 1);
        let request = put_item("receipts", &receipt.to_item(), 5);
        assert_eq!(request.target, "DynamoDB_20120810.PutItem");
        let body = parse(request.body.as_bytes()).unwrap();
        let text = |k: &str| body.get(k).and_then(Json::as_str);
        assert_eq!(text("TableName"), Some("receipts"));
        assert_eq!(text("ConditionExpression"), Some("attribute_not_exists(pk) OR expiresAt < :now"));
        assert_eq!(text("ReturnValuesOnConditionCheckFailure"), Some("ALL_OLD"));
        assert_eq!(body.get("ExpressionAttributeValues").map(Json::to_text).as_deref(), Some(r#"{":now":{"N":"5"}}"#));
        let item = item_from_wire(body.get("Item").unwrap()).unwrap();
        assert_eq!(Receipt::from_item(&item), Ok(receipt));
    }
}
