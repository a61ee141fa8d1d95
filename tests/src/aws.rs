//! AWS SDK clients pointed at a test's ministack, with receipts written the way the edge does.

use aws_credential_types::Credentials;
use shared::dynamo::{item_to_wire, Item};
use shared::envelope::parse_envelope;
use shared::key::expected_key;
use shared::receipt::Receipt;

use crate::ministack::{AccessKey, Ministack};

/// The SDK configuration for `store`, signing with `key`.
pub async fn sdk_config(store: &Ministack, key: &AccessKey) -> aws_config::SdkConfig {
    sdk_config_at(&store.endpoint(), key).await
}

/// The SDK configuration for a store reached at `endpoint` (a fault proxy in front of it),
/// signing with `key`, with the worker's operation timeout, so a hung answer ends the call.
pub async fn sdk_config_at(endpoint: &str, key: &AccessKey) -> aws_config::SdkConfig {
    let timeouts = aws_config::timeout::TimeoutConfig::builder()
        .operation_timeout(stream_worker::sink::DYNAMODB_OPERATION_TIMEOUT)
        .build();
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(Credentials::new(&key.id, &key.secret, None, None, "tests"))
        .timeout_config(timeouts)
        .load()
        .await
}

/// A receipt for `body` as the edge would store it at `now_millis`.
pub fn receipt(body: &[u8], now_millis: u64) -> Receipt {
    let envelope = parse_envelope(body).expect("a valid delivery");
    let key = expected_key(&envelope.submission_id);
    Receipt::new(&envelope, key, "req-test", now_millis, 30)
}

/// The lead the stream worker maps from the receipt of a delivery for `id`.
pub fn sample_lead(id: &str) -> shared::lead::Lead {
    let receipt = receipt(&crate::delivery::body(id, crate::delivery::VISITOR_MESSAGE, 1), 0);
    shared::profile::registry::lead_from_receipt(&receipt, &shared::profile::registry::LeadMapping::default()).unwrap()
}

/// Writes `item` with the root key (setup, not what is under test).
pub fn put_item(store: &Ministack, table: &str, item: &Item) {
    let wire: serde_json::Value = serde_json::from_str(&item_to_wire(item).to_text()).unwrap();
    store.ok("DynamoDB_20120810.PutItem", &serde_json::json!({"TableName": table, "Item": wire}));
}

/// Writes `items` with the root key, 25 to a `BatchWriteItem` call (setup of a large table),
/// writing again whatever the store left unprocessed.
pub fn put_items(store: &Ministack, table: &str, items: &[Item]) {
    for chunk in items.chunks(25) {
        let mut requests: Vec<serde_json::Value> = chunk
            .iter()
            .map(|item| {
                let wire: serde_json::Value = serde_json::from_str(&item_to_wire(item).to_text()).unwrap();
                serde_json::json!({"PutRequest": {"Item": wire}})
            })
            .collect();
        while !requests.is_empty() {
            let answer =
                store.ok("DynamoDB_20120810.BatchWriteItem", &serde_json::json!({"RequestItems": {table: requests}}));
            requests = answer["UnprocessedItems"][table].as_array().cloned().unwrap_or_default();
        }
    }
}
