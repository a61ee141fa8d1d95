//! A DynamoDB Streams stand-in for what ministack cannot do: a stream whose shard was split, so
//! the poller's ordering across a parent and its child can be tested. It speaks the JSON
//! protocol the SDK uses (`DescribeTable`, `DescribeStream`, `GetShardIterator`, `GetRecords`)
//! for fixed shards of records; a parent shard is closed, its child open.

use serde_json::{json, Value};

use crate::stub_http::{StubRequest, StubResponse, StubServer};

pub const EMPTY_PAGE: &str = "empty-page";

pub const STREAM_ARN: &str = "arn:aws:dynamodb:us-east-1:123456789012:table/receipts/stream/2026-11-30T00:00:00.000";

/// One shard: its ID, parent, and records (`(sequence number, new image as wire JSON)`). A
/// record whose sequence number is [`EMPTY_PAGE`] is no record: `GetRecords` there answers an
/// empty page with a `NextShardIterator` past it, as DynamoDB Streams may in an open shard.
#[derive(Clone)]
pub struct Shard {
    pub id: String,
    pub parent: Option<String>,
    pub records: Vec<(String, Value)>,
    pub closed: bool,
}

/// Serves `shards` until dropped.
pub fn start(shards: Vec<Shard>) -> StubServer {
    StubServer::start(move |request: StubRequest| {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let target = request.header("x-amz-target").unwrap_or_default().to_owned();
        let shard = |id: &str| shards.iter().find(|s| s.id == id);
        let answer = match target.rsplit('.').next().unwrap_or_default() {
            "DescribeTable" => json!({"Table": {
                "TableName": body["TableName"], "LatestStreamArn": STREAM_ARN,
                "StreamSpecification": {"StreamEnabled": true, "StreamViewType": "NEW_AND_OLD_IMAGES"}
            }}),
            "DescribeStream" => json!({"StreamDescription": {
                "StreamArn": STREAM_ARN, "StreamStatus": "ENABLED", "StreamViewType": "NEW_AND_OLD_IMAGES",
                "Shards": shards.iter().map(|s| {
                    let mut entry = json!({"ShardId": s.id, "SequenceNumberRange": {"StartingSequenceNumber": "0"}});
                    if let Some(parent) = &s.parent {
                        entry["ParentShardId"] = json!(parent);
                    }
                    entry
                }).collect::<Vec<_>>()
            }}),
            "GetShardIterator" => {
                let Some(s) = shard(body["ShardId"].as_str().unwrap_or_default()) else {
                    return StubResponse::json(400, json!({"__type": "ResourceNotFoundException"}));
                };
                let position = match body["ShardIteratorType"].as_str() {
                    Some("AFTER_SEQUENCE_NUMBER") => {
                        let after = body["SequenceNumber"].as_str().unwrap_or_default();
                        s.records.iter().position(|(seq, _)| seq == after).map_or(0, |i| i + 1)
                    }
                    _ => 0,
                };
                json!({"ShardIterator": format!("{}|{position}", s.id)})
            }
            "GetRecords" => {
                let iterator = body["ShardIterator"].as_str().unwrap_or_default();
                let (id, position) = iterator.split_once('|').unwrap_or((iterator, "0"));
                let Some(s) = shard(id) else {
                    return StubResponse::json(400, json!({"__type": "ExpiredIteratorException"}));
                };
                let from: usize = position.parse().unwrap_or(0);
                if s.records.get(from).is_some_and(|(seq, _)| seq == EMPTY_PAGE) {
                    return StubResponse::json(
                        200,
                        json!({"Records": [], "NextShardIterator": format!("{id}|{}", from + 1)}),
                    );
                }
                let limit = body["Limit"].as_u64().unwrap_or(100) as usize;
                let page: Vec<Value> = s.records.iter().skip(from).take(limit).take_while(|(seq, _)| seq != EMPTY_PAGE).map(|(seq, image)| json!({
                    "eventID": format!("e{seq}"), "eventName": "INSERT", "eventVersion": "1.1",
                    "eventSource": "aws:dynamodb", "awsRegion": "us-east-1",
                    "dynamodb": {"ApproximateCreationDateTime": 1796019713, "Keys": {"pk": image["pk"]},
                        "NewImage": image, "SequenceNumber": seq, "SizeBytes": 100, "StreamViewType": "NEW_AND_OLD_IMAGES"}
                })).collect();
                let end = (from + page.len()).min(s.records.len());
                let next = if page.is_empty() && s.closed { Value::Null } else { json!(format!("{id}|{end}")) };
                json!({"Records": page, "NextShardIterator": next})
            }
            other => return StubResponse::json(400, json!({"__type": "UnknownOperationException", "message": other})),
        };
        StubResponse::json(200, answer)
    })
}
