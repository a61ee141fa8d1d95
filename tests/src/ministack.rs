//! A private ministack (DynamoDB, Streams, IAM, Secrets Manager, CloudWatch Logs; SigV4 checked)
//! per test, on its own port.

use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

use crate::http::{send, Answer};
use crate::process::{free_port, repo_root, wait_until, TempDir};

/// The receipts table's definition, shared with `scripts/dev.sh`.
pub const RECEIPTS_TABLE: &str = include_str!("../../deploy/receipts-table.json");

/// A running ministack, stopped by PID on drop.
pub struct Ministack {
    pub port: u16,
    child: Child,
    _dir: TempDir,
}

/// An IAM user's access key: the store checks signatures made with it.
#[derive(Clone, Debug)]
pub struct AccessKey {
    pub id: String,
    pub secret: String,
}

impl Ministack {
    /// Starts a new instance with signature checks on. Panics if the venv is missing.
    pub fn start() -> Ministack {
        Ministack::start_with(Some("dynamodb,dynamodbstreams,iam,secretsmanager,logs"))
    }

    /// A whole local AWS: every service (CloudFormation with the SAM transform, Lambda running
    /// `provided.al2023` functions as local processes, stream mappings, S3, SQS, ...), IAM
    /// policies evaluated, and the functions' SDKs pointed back at it.
    pub fn start_whole_aws() -> Ministack {
        Ministack::start_with(None)
    }

    fn start_with(services: Option<&str>) -> Ministack {
        let binary = repo_root().join(".tools/ministack/bin/ministack");
        assert!(binary.exists(), "{} is missing: run `make setup`", binary.display());
        let dir = TempDir::new("ministack");
        let port = free_port();
        let mut command = Command::new(binary);
        command
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .env("AUTH", "true")
            .env("BIND_HOST", "127.0.0.1")
            .env("GATEWAY_PORT", port.to_string())
            .env("TMPDIR", &dir.0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        match services {
            Some(services) => command.env("SERVICES", services),
            // The functions it runs reach it through the SDK's standard variable.
            None => command.env("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{port}")),
        };
        let child = command.spawn().unwrap();
        let ministack = Ministack { port, child, _dir: dir };
        let health = format!("{}/_ministack/health", ministack.endpoint());
        wait_until("ministack", 20, || send("GET", &health, &[], b"").is_some_and(|a| a.status == 200));
        ministack
    }

    /// The server's process ID.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Calls a DynamoDB or Streams action with the root key (never signature-checked), for the
    /// tests' own setup and inspection.
    pub fn call(&self, target: &str, body: &Value) -> Answer {
        let auth = "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=0";
        send(
            "POST",
            &format!("{}/", self.endpoint()),
            &[
                ("Content-Type", "application/x-amz-json-1.0"),
                ("X-Amz-Target", target),
                ("X-Amz-Date", "20260101T000000Z"),
                ("Authorization", auth),
            ],
            body.to_string().as_bytes(),
        )
        .expect("ministack answers")
    }

    /// Like [`Ministack::call`], but panics unless the answer is 200.
    pub fn ok(&self, target: &str, body: &Value) -> Value {
        let answer = self.call(target, body);
        assert_eq!(answer.status, 200, "{target}: {}", answer.body);
        answer.json()
    }

    /// Creates a receipts table like production's (`deploy/receipts-table.json`, which the
    /// template test holds equal to `template.yaml`): key `pk`, stream with new and old images,
    /// the sparse `pending` index, TTL on `expiresAt`.
    pub fn create_receipts_table(&self, name: &str) {
        let mut table: Value = serde_json::from_str(RECEIPTS_TABLE).expect("deploy/receipts-table.json is JSON");
        table["TableName"] = json!(name);
        self.ok("DynamoDB_20120810.CreateTable", &table);
        self.ok(
            "DynamoDB_20120810.UpdateTimeToLive",
            &json!({"TableName": name, "TimeToLiveSpecification": {"Enabled": true, "AttributeName": "expiresAt"}}),
        );
    }

    /// Creates a Secrets Manager secret holding `text`; returns its ARN.
    pub fn create_secret(&self, name: &str, text: &str) -> String {
        let answer = self.ok("secretsmanager.CreateSecret", &json!({"Name": name, "SecretString": text}));
        answer["ARN"].as_str().expect("CreateSecret answers with an ARN").to_owned()
    }

    /// Every item in `table`, in DynamoDB JSON.
    pub fn scan(&self, table: &str) -> Vec<Value> {
        let answer = self.ok("DynamoDB_20120810.Scan", &json!({"TableName": table, "ConsistentRead": true}));
        answer["Items"].as_array().cloned().unwrap_or_default()
    }

    /// The item with key `pk`, if any.
    pub fn get(&self, table: &str, pk: &str) -> Option<Value> {
        let answer = self.ok(
            "DynamoDB_20120810.GetItem",
            &json!({"TableName": table, "Key": {"pk": {"S": pk}}, "ConsistentRead": true}),
        );
        answer.get("Item").cloned()
    }

    /// Creates an IAM user whose one inline policy is `policy` and returns a new access key for
    /// it. Test identities get production's policies (`crate::policies`), never all of DynamoDB.
    pub fn access_key_with(&self, user: &str, policy: &Value) -> AccessKey {
        let key = self.iam_access_key_without_policy(user);
        let document = policy.to_string();
        self.iam(&[
            ("Action", "PutUserPolicy"),
            ("UserName", user),
            ("PolicyName", "role"),
            ("PolicyDocument", &document),
        ]);
        key
    }

    /// The edge's IAM user as `template.yaml`'s `EdgeUser` is: exactly `dynamodb:PutItem` on
    /// the table `table`, nothing else. Every test that runs the Worker signs with such a key,
    /// so a call the edge's code adds (a GetItem on the duplicate path, say) fails here as it
    /// would in production.
    pub fn edge_access_key(&self, user: &str, table: &str) -> AccessKey {
        self.access_key_with(user, &crate::policies::policy(crate::policies::Role::Edge, table))
    }

    /// The local stream worker's user: the deployed stream function's statements on the table
    /// `table`, plus `DescribeTable` for poll mode (`crate::policies::poll_mode_policy`).
    pub fn worker_access_key(&self, user: &str, table: &str) -> AccessKey {
        self.access_key_with(user, &crate::policies::poll_mode_policy(table))
    }

    /// A deployed function's user: exactly `role`'s statements in `template.yaml` on `table`.
    pub fn role_access_key(&self, user: &str, role: crate::policies::Role, table: &str) -> AccessKey {
        self.access_key_with(user, &crate::policies::policy(role, table))
    }

    /// An operator's user (`crate::policies::operator_policy`).
    pub fn operator_access_key(&self, user: &str, table: &str) -> AccessKey {
        self.access_key_with(user, &crate::policies::operator_policy(table))
    }

    /// Creates an IAM user with no policy at all (give it some with [`Ministack::allow`]) and
    /// returns a new access key for it.
    pub fn iam_access_key_without_policy(&self, user: &str) -> AccessKey {
        self.iam(&[("Action", "CreateUser"), ("UserName", user)]);
        let xml = self.iam(&[("Action", "CreateAccessKey"), ("UserName", user)]);
        AccessKey { id: xml_value(&xml, "AccessKeyId"), secret: xml_value(&xml, "SecretAccessKey") }
    }

    /// A new access key for the one IAM user whose name holds `part` (a stack's `EdgeUser`,
    /// named `<stack>-EdgeUser-<suffix>` by CloudFormation).
    pub fn access_key_of_user_named(&self, part: &str) -> AccessKey {
        let user = self.user_named(part);
        let xml = self.iam(&[("Action", "CreateAccessKey"), ("UserName", &user)]);
        AccessKey { id: xml_value(&xml, "AccessKeyId"), secret: xml_value(&xml, "SecretAccessKey") }
    }

    /// The IDs of the access keys of the one IAM user whose name holds `part`.
    pub fn access_key_ids_of_user_named(&self, part: &str) -> Vec<String> {
        let user = self.user_named(part);
        let xml = self.iam(&[("Action", "ListAccessKeys"), ("UserName", &user)]);
        xml.split("<AccessKeyId>")
            .skip(1)
            .filter_map(|rest| rest.split_once("</AccessKeyId>"))
            .map(|(id, _)| id.to_owned())
            .collect()
    }

    /// Deletes the access key `id` of the one IAM user whose name holds `part`.
    pub fn delete_access_key_of_user_named(&self, part: &str, id: &str) {
        let user = self.user_named(part);
        self.iam(&[("Action", "DeleteAccessKey"), ("UserName", &user), ("AccessKeyId", id)]);
    }

    /// The name of the one IAM user whose name holds `part`.
    fn user_named(&self, part: &str) -> String {
        let users = self.iam(&[("Action", "ListUsers")]);
        let names: Vec<&str> = users
            .split("<UserName>")
            .skip(1)
            .filter_map(|rest| rest.split_once("</UserName>").map(|(name, _)| name))
            .filter(|name| name.contains(part))
            .collect();
        let [user] = names.as_slice() else { panic!("one IAM user named *{part}*, not {names:?}") };
        (*user).to_owned()
    }

    /// The name of the one Lambda function whose name holds `part` (a stack's
    /// `ReconcileFunction`, named `<stack>-ReconcileFunction-<suffix>` by CloudFormation).
    pub fn function_named(&self, part: &str) -> String {
        let answer = self.rest("GET", "/2015-03-31/functions/", "lambda", b"");
        assert_eq!(answer.status, 200, "ListFunctions: {}", answer.body);
        let listed = answer.json();
        let names: Vec<&str> = listed["Functions"]
            .as_array()
            .expect("ListFunctions lists Functions")
            .iter()
            .filter_map(|f| f["FunctionName"].as_str())
            .filter(|name| name.contains(part))
            .collect();
        let [name] = names.as_slice() else { panic!("one function named *{part}*, not {names:?}") };
        (*name).to_owned()
    }

    /// Invokes the function `name` with `payload` as Lambda's Invoke does (synchronously), as the
    /// root user; the answer's `X-Amz-Function-Error` header is set when the function failed.
    pub fn invoke(&self, name: &str, payload: &Value) -> Answer {
        let path = format!("/2015-03-31/functions/{name}/invocations");
        self.rest("POST", &path, "lambda", payload.to_string().as_bytes())
    }

    /// Every log line the functions wrote, per log group (CloudWatch Logs' `FilterLogEvents`).
    pub fn log_lines(&self) -> Vec<(String, String)> {
        let groups = self.ok("Logs_20140328.DescribeLogGroups", &json!({}));
        let mut lines = Vec::new();
        for group in groups["logGroups"].as_array().cloned().unwrap_or_default() {
            let name = group["logGroupName"].as_str().expect("a log group's name").to_owned();
            let mut token: Option<String> = None;
            loop {
                let mut request = json!({"logGroupName": name});
                if let Some(token) = &token {
                    request["nextToken"] = json!(token);
                }
                let page = self.ok("Logs_20140328.FilterLogEvents", &request);
                for event in page["events"].as_array().cloned().unwrap_or_default() {
                    lines.push((name.clone(), event["message"].as_str().unwrap_or_default().to_owned()));
                }
                match page["nextToken"].as_str() {
                    Some(next) if token.as_deref() != Some(next) => token = Some(next.to_owned()),
                    _ => break,
                }
            }
        }
        lines
    }

    /// Every CloudWatch dashboard, name and body (`ListDashboards`, `GetDashboard`), as the root user.
    pub fn dashboards(&self) -> Vec<(String, Value)> {
        let cloudwatch = |action: &str, body: &Value| {
            let auth = "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/monitoring/aws4_request, SignedHeaders=host;x-amz-date, Signature=0";
            let target = format!("GraniteServiceVersion20100801.{action}");
            let headers = [
                ("Content-Type", "application/x-amz-json-1.0"),
                ("X-Amz-Target", target.as_str()),
                ("X-Amz-Date", "20260101T000000Z"),
                ("Authorization", auth),
            ];
            let answer = send("POST", &format!("{}/", self.endpoint()), &headers, body.to_string().as_bytes())
                .expect("ministack answers");
            assert_eq!(answer.status, 200, "{action}: {}", answer.body);
            answer.json()
        };
        let listed = cloudwatch("ListDashboards", &json!({}));
        let names: Vec<String> = listed["DashboardEntries"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|d| d["DashboardName"].as_str().map(str::to_owned))
            .collect();
        names
            .into_iter()
            .map(|name| {
                let got = cloudwatch("GetDashboard", &json!({"DashboardName": name}));
                let body = got["DashboardBody"].as_str().expect("a dashboard's body");
                (name, serde_json::from_str(body).expect("the deployed dashboard's body is JSON"))
            })
            .collect()
    }

    fn rest(&self, method: &str, path: &str, service: &str, body: &[u8]) -> Answer {
        let auth = format!(
            "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/{service}/aws4_request, SignedHeaders=host;x-amz-date, Signature=0"
        );
        let headers =
            [("Content-Type", "application/json"), ("X-Amz-Date", "20260101T000000Z"), ("Authorization", &auth)];
        send(method, &format!("{}{path}", self.endpoint()), &headers, body).expect("ministack answers")
    }

    /// Adds an inline policy `name` to `user` allowing `action` on `resource`.
    pub fn allow(&self, user: &str, name: &str, action: &str, resource: &str) {
        let policy = json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": action, "Resource": resource}]});
        self.iam(&[
            ("Action", "PutUserPolicy"),
            ("UserName", user),
            ("PolicyName", name),
            ("PolicyDocument", &policy.to_string()),
        ]);
    }

    /// The outputs of the CloudFormation stack `name` (`DescribeStacks`), by key.
    pub fn stack_outputs(&self, name: &str) -> std::collections::BTreeMap<String, String> {
        let xml = self.query_api("cloudformation", "2010-05-15", &[("Action", "DescribeStacks"), ("StackName", name)]);
        xml.split("<OutputKey>")
            .skip(1)
            .filter_map(|rest| {
                let (key, rest) = rest.split_once("</OutputKey>")?;
                let value = rest.split_once("<OutputValue>")?.1.split_once("</OutputValue>")?.0;
                Some((key.to_owned(), value.replace("&amp;", "&")))
            })
            .collect()
    }

    fn iam(&self, params: &[(&str, &str)]) -> String {
        self.query_api("iam", "2010-05-08", params)
    }

    /// A call to one of the AWS query-protocol APIs (`service`, API `version`); the XML answer.
    fn query_api(&self, service: &str, version: &str, params: &[(&str, &str)]) -> String {
        let mut form = format!("Version={version}");
        for (name, value) in params {
            form.push_str(&format!("&{name}={}", url_encode(value)));
        }
        let answer = send(
            "POST",
            &format!("{}/", self.endpoint()),
            &[
                ("Content-Type", "application/x-www-form-urlencoded"),
                ("X-Amz-Date", "20260101T000000Z"),
                ("Authorization", &format!("AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/{service}/aws4_request, SignedHeaders=host;x-amz-date, Signature=0")),
            ],
            form.as_bytes(),
        )
        .expect("ministack answers");
        assert_eq!(answer.status, 200, "{service} {params:?}: {}", answer.body);
        answer.body
    }
}

impl Drop for Ministack {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn xml_value(xml: &str, tag: &str) -> String {
    let open = format!("<{tag}>");
    let start = xml.find(&open).unwrap_or_else(|| panic!("no {tag} in {xml}")) + open.len();
    let end = xml[start..].find('<').unwrap() + start;
    xml[start..end].to_owned()
}

fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
