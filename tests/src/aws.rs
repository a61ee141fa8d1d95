//! AWS SDK clients pointed at a test's ministack, with receipts written the way the edge does.

use aws_credential_types::Credentials;
use shared::dynamo::{item_to_wire, Item};
use shared::envelope::parse_envelope;
use shared::key::expected_key;
use shared::receipt::Receipt;

use crate::ministack::{AccessKey, Ministack};

/// The SDK configuration for `store`, signing with `key`.
pub async fn sdk_config(store: &Ministack, key: &AccessKey) -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(store.endpoint())
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(Credentials::new(&key.id, &key.secret, None, None, "tests"))
        .load()
        .await
}

/// A receipt for `body` as the edge would store it at `now_millis`.
pub fn receipt(body: &[u8], now_millis: u64) -> Receipt {
    let envelope = parse_envelope(body).expect("a valid delivery");
    let key = expected_key(&envelope.submission_id);
    Receipt::new(&envelope, key, "req-test", now_millis, 30)
}

/// Writes `item` with the root key (setup, not what is under test).
pub fn put_item(store: &Ministack, table: &str, item: &Item) {
    let wire: serde_json::Value = serde_json::from_str(&item_to_wire(item).to_text()).unwrap();
    store.ok("DynamoDB_20120810.PutItem", &serde_json::json!({"TableName": table, "Item": wire}));
}
