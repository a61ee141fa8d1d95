//! The identities' IAM policies, as production has them: read from `template.yaml`, so a test
//! signs with exactly what a deployed function or the edge may do, and a call the code adds
//! without a statement fails here as it would in AWS.
//!
//! ministack evaluates these policies (`AUTH=true`) for IAM users' keys. Two differences from
//! AWS, both named here: the stream worker's local poll mode also gets `dynamodb:DescribeTable`
//! on the table (the mapping finds the stream in production; `stream-worker poll` asks the
//! table for it); and ministack checks DynamoDB Streams actions against the resource `*`, not
//! the stream's ARN, so a statement on the stream also names `*` (its actions stay exactly the
//! role's).

use serde_json::{json, Value};
use serde_yaml_ng::Value as Yaml;

use crate::template::template;

/// The ARN of the table `table` in the tests' region, in any account.
pub fn table_arn(table: &str) -> String {
    format!("arn:aws:dynamodb:us-east-1:*:table/{table}")
}

/// A role of `template.yaml` whose statements a test identity gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// `StreamWorkerRole`: the stream function's.
    StreamWorker,
    /// `ReconcileRole`: the scheduled reconcile function's.
    Reconcile,
    /// `EdgeUser`: the edge's key.
    Edge,
}

impl Role {
    fn resource(self) -> &'static str {
        match self {
            Role::StreamWorker => "StreamWorkerRole",
            Role::Reconcile => "ReconcileRole",
            Role::Edge => "EdgeUser",
        }
    }
}

/// The role's policy document for the table `table`: its DynamoDB and Secrets Manager
/// statements, with the template's references made this store's ARNs (the sink secret, any
/// secret in the tests' region). SQS and CloudWatch Logs statements are left out: no test
/// identity calls them.
pub fn policy(role: Role, table: &str) -> Value {
    let template = template();
    let resource = &template["Resources"][role.resource()]["Properties"]["Policies"];
    let mut statements = Vec::new();
    for policy in resource.as_sequence().expect("the role has policies") {
        let listed = &policy["PolicyDocument"]["Statement"];
        for statement in listed.as_sequence().expect("statements") {
            let actions: Vec<String> = strings(&statement["Action"]);
            let kept: Vec<&String> =
                actions.iter().filter(|a| a.starts_with("dynamodb:") || a.starts_with("secretsmanager:")).collect();
            if kept.is_empty() {
                continue;
            }
            let resources: Vec<String> = match &statement["Resource"] {
                Yaml::Sequence(items) => items.iter().flat_map(|r| arns(r, table)).collect(),
                one => arns(one, table),
            };
            statements.push(json!({"Effect": "Allow", "Action": kept, "Resource": resources}));
        }
    }
    assert!(!statements.is_empty(), "{role:?} has no DynamoDB statement in template.yaml");
    json!({"Version": "2012-10-17", "Statement": statements})
}

/// `EdgeLogsUser`'s policy (the edge's Tail Worker) for the log group `group` and its stream
/// `stream` in the tests' region: exactly the template's actions and resources.
pub fn edge_logs_policy(group: &str, stream: &str) -> Value {
    let template = template();
    let policies = &template["Resources"]["EdgeLogsUser"]["Properties"]["Policies"];
    let [policy] = policies.as_sequence().expect("EdgeLogsUser has policies").as_slice() else {
        panic!("EdgeLogsUser has one policy")
    };
    let [statement] = policy["PolicyDocument"]["Statement"].as_sequence().expect("statements").as_slice() else {
        panic!("EdgeLogsUser's policy has one statement")
    };
    let resources: Vec<String> = statement["Resource"]
        .as_sequence()
        .expect("a list of resources")
        .iter()
        .map(|resource| {
            let Yaml::Tagged(tagged) = resource else { panic!("a !Sub resource, not {resource:?}") };
            assert_eq!(tagged.tag.to_string(), "!Sub", "{resource:?}");
            tagged
                .value
                .as_str()
                .expect("a !Sub string")
                .replace("${AWS::Partition}", "aws")
                .replace("${AWS::Region}", "us-east-1")
                .replace("${AWS::AccountId}", "*")
                .replace("${EdgeLogGroup}", group)
                .replace("${EdgeLogStream}", stream)
        })
        .collect();
    assert!(resources.iter().all(|r| !r.contains("${")), "a reference this helper does not map: {resources:?}");
    json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": strings(&statement["Action"]), "Resource": resources}]})
}

/// [`policy`] of the stream worker, plus `DescribeTable` for its local poll mode.
pub fn poll_mode_policy(table: &str) -> Value {
    let mut document = policy(Role::StreamWorker, table);
    let describe = json!({"Effect": "Allow", "Action": ["dynamodb:DescribeTable"], "Resource": [table_arn(table)]});
    document["Statement"].as_array_mut().expect("statements").push(describe);
    document
}

/// What an operator's key needs for `stream-worker receipts` and `reconcile` (no role of the
/// template: docs/operating.md lists it): read the table and the `pending` index, update
/// receipts; never put or delete one.
pub fn operator_policy(table: &str) -> Value {
    json!({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow",
        "Action": ["dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:Query", "dynamodb:Scan", "dynamodb:DescribeTable"],
        "Resource": [table_arn(table), format!("{}/index/*", table_arn(table))]
    }]})
}

fn strings(value: &Yaml) -> Vec<String> {
    match value {
        Yaml::String(one) => vec![one.clone()],
        Yaml::Sequence(items) => items.iter().filter_map(|i| i.as_str().map(str::to_owned)).collect(),
        other => panic!("an action list, not {other:?}"),
    }
}

/// A statement's resource as this store's ARNs.
fn arns(resource: &Yaml, table: &str) -> Vec<String> {
    let Yaml::Tagged(tagged) = resource else { panic!("a resource reference, not {resource:?}") };
    let text = tagged.value.as_str().unwrap_or_default();
    let table = table_arn(table);
    match (tagged.tag.to_string().as_str(), text) {
        ("!GetAtt", "ReceiptsTable.Arn") => vec![table],
        // `*` for ministack, which checks Streams actions against it (see the module's doc).
        ("!GetAtt", "ReceiptsTable.StreamArn") => vec![format!("{table}/stream/*"), String::from("*")],
        ("!Sub", sub) => vec![sub.replace("${ReceiptsTable.Arn}", &table)],
        ("!Ref", "SinkSecretArn") => vec![String::from("arn:aws:secretsmanager:us-east-1:*:secret:*")],
        (tag, text) => panic!("template.yaml: a resource this helper does not map: {tag} {text}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_roles_read_from_the_template() {
        let edge = policy(Role::Edge, "t");
        assert_eq!(
            edge["Statement"],
            json!([{"Effect": "Allow", "Action": ["dynamodb:PutItem"], "Resource": [table_arn("t")]}])
        );
        let worker = policy(Role::StreamWorker, "t").to_string();
        for action in
            ["dynamodb:GetRecords", "dynamodb:GetItem", "dynamodb:UpdateItem", "secretsmanager:GetSecretValue"]
        {
            assert!(worker.contains(action), "{worker}");
        }
        assert!(!worker.contains("dynamodb:Query") && !worker.contains("dynamodb:PutItem"), "{worker}");
        let logs = edge_logs_policy("g", "s");
        assert_eq!(logs["Statement"][0]["Action"], json!(["logs:PutLogEvents"]), "{logs}");
        assert_eq!(logs["Statement"][0]["Resource"][0], json!("arn:aws:logs:us-east-1:*:log-group:g:log-stream:s"));
        let reconcile = policy(Role::Reconcile, "t").to_string();
        assert!(reconcile.contains(&format!("{}/index/pending", table_arn("t"))), "{reconcile}");
        assert!(!reconcile.contains("dynamodb:Scan"), "{reconcile}");
    }
}
