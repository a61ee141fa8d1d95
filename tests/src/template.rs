//! `template.yaml` read as data: the roles' statements (`crate::policies`) and the metrics its
//! alarms watch, so the tests hold the code to what is deployed, not to a copy of it.

use serde_yaml_ng::Value as Yaml;

/// `template.yaml`, parsed (CloudFormation's tags kept as YAML tags).
pub fn template() -> Yaml {
    let path = crate::process::repo_root().join("template.yaml");
    let text = std::fs::read_to_string(&path).expect("template.yaml");
    serde_yaml_ng::from_str(&text).expect("template.yaml is YAML")
}

/// A metric an alarm watches: its name and its dimensions (name, value), sorted.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct AlarmMetric {
    pub alarm: String,
    pub name: String,
    pub dimensions: Vec<(String, String)>,
}

/// Every `AWS::CloudWatch::Alarm` on a metric of `namespace` (the code's own metrics, not
/// AWS's), with dimensions written as plain values.
pub fn alarm_metrics(namespace: &str) -> Vec<AlarmMetric> {
    let template = template();
    let resources = template["Resources"].as_mapping().expect("template.yaml has Resources");
    let mut metrics = Vec::new();
    for (alarm, resource) in resources {
        let properties = &resource["Properties"];
        if resource["Type"].as_str() != Some("AWS::CloudWatch::Alarm")
            || properties["Namespace"].as_str() != Some(namespace)
        {
            continue;
        }
        let mut dimensions: Vec<(String, String)> = properties["Dimensions"]
            .as_sequence()
            .map(|all| {
                all.iter()
                    .map(|d| {
                        let value =
                            d["Value"].as_str().unwrap_or_else(|| panic!("{alarm:?}: a dimension value as text"));
                        (d["Name"].as_str().expect("a dimension's Name").to_owned(), value.to_owned())
                    })
                    .collect()
            })
            .unwrap_or_default();
        dimensions.sort();
        metrics.push(AlarmMetric {
            alarm: alarm.as_str().expect("a resource's name").to_owned(),
            name: properties["MetricName"].as_str().expect("an alarm's MetricName").to_owned(),
            dimensions,
        });
    }
    metrics
}

/// A metric of the code's namespace a dashboard widget shows: its name and its dimensions
/// (name, value), sorted; a value of `None` is a SEARCH expression's dimension without a
/// filter (every value the code writes, an outcome or a reason, gets its own line).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct WidgetMetric {
    pub widget: String,
    pub name: String,
    pub dimensions: Vec<(String, Option<String>)>,
}

/// The `Dashboard` resource's body as CloudWatch receives it: `Fn::Sub`'s references replaced
/// by stand-ins (`<Name>`), its `${!...}` by `${...}`, and the silence alarm's optional entry
/// left out.
pub fn dashboard_body() -> serde_json::Value {
    let template = template();
    let body = &template["Resources"]["Dashboard"]["Properties"]["DashboardBody"];
    let Yaml::Tagged(sub) = body else { panic!("the dashboard's body is a !Sub, not {body:?}") };
    let text = sub.value[0].as_str().expect("!Sub's first item, the body's text");
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let end = rest[at..].find('}').expect("a closed ${...}") + at;
        let name = &rest[at + 2..end];
        match name.strip_prefix('!') {
            Some(literal) => out.push_str(&format!("${{{literal}}}")),
            None if name == "SilenceAlarmEntry" => {}
            None => out.push_str(&format!("<{name}>")),
        }
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("the dashboard's body is JSON: {e}\n{out}"))
}

/// Every metric of `namespace` a widget of the dashboard shows: metric arrays (`[namespace,
/// name, dimension, value, ..., {options}]`, written out in full: no `.` or `...`) and
/// `SEARCH('{namespace,dimension,...} MetricName="..." dimension="..."', ...)` expressions.
pub fn dashboard_metrics(namespace: &str) -> Vec<WidgetMetric> {
    let body = dashboard_body();
    let mut found = Vec::new();
    for widget in body["widgets"].as_array().expect("widgets") {
        let title = widget["properties"]["title"].as_str().unwrap_or("-").to_owned();
        for metric in widget["properties"]["metrics"].as_array().into_iter().flatten() {
            let parts = metric.as_array().expect("a widget's metric is an array");
            if let Some(expression) = parts[0]["expression"].as_str() {
                let (space, search) =
                    search_metric(expression).unwrap_or_else(|| panic!("{title}: a SEARCH this reads: {expression}"));
                assert!(KNOWN.contains(&space.as_str()), "{title}: namespace {space:?}");
                if space == namespace {
                    found.push(WidgetMetric { widget: title.clone(), ..search });
                }
                continue;
            }
            let texts: Vec<&str> = parts.iter().filter_map(|p| p.as_str()).collect();
            assert!(!texts.contains(&".") && !texts.contains(&"..."), "{title}: write metrics out in full");
            assert!(KNOWN.contains(&texts[0]) && texts.len().is_multiple_of(2), "{title}: {texts:?}");
            if texts[0] != namespace {
                continue;
            }
            let mut dimensions: Vec<(String, Option<String>)> =
                texts[2..].chunks(2).map(|pair| (pair[0].to_owned(), Some(pair[1].to_owned()))).collect();
            dimensions.sort();
            found.push(WidgetMetric { widget: title.clone(), name: texts[1].to_owned(), dimensions });
        }
    }
    found
}

/// The namespaces a widget may show: the code's own, Lambda's and DynamoDB's. Any other is a misspelling.
const KNOWN: [&str; 3] = ["WebhookReceiver", "AWS/Lambda", "AWS/DynamoDB"];

/// The namespace and the metric a SEARCH expression selects: `{namespace,dim,...}` names the
/// dimensions, `MetricName="..."` the metric, `dim="value"` a filter; `None` when it has no
/// metric name, or filters on a dimension its schema does not name (CloudWatch would find
/// nothing).
fn search_metric(expression: &str) -> Option<(String, WidgetMetric)> {
    let schema = expression.split_once('{')?.1.split_once('}')?;
    let mut names = schema.0.split(',').map(str::trim);
    let namespace = names.next()?.to_owned();
    let names: Vec<&str> = names.collect();
    let filters: Vec<(&str, &str)> = schema
        .1
        .split_whitespace()
        .filter_map(|term| term.split_once('='))
        .map(|(k, v)| (k, v.trim_matches(|c| c == '"' || c == '\'' || c == ',').split('"').next().unwrap_or("")))
        .collect();
    let name = filters.iter().find(|(k, _)| *k == "MetricName").map(|(_, v)| (*v).to_owned())?;
    if filters.iter().any(|(k, v)| (*k != "MetricName" && !names.contains(k)) || v.is_empty()) {
        return None;
    }
    let mut dimensions: Vec<(String, Option<String>)> = names
        .iter()
        .map(|d| ((*d).to_owned(), filters.iter().find(|(k, _)| k == d).map(|(_, v)| (*v).to_owned())))
        .collect();
    dimensions.sort();
    Some((namespace, WidgetMetric { widget: String::new(), name, dimensions }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_names_its_namespace_metric_and_dimensions_and_refuses_a_filter_outside_them() {
        let expression = r#"SEARCH('{WebhookReceiver,reason,service} MetricName="LeadsFailed" service="stream-worker"', 'Sum', 300)"#;
        let (namespace, metric) = search_metric(expression).unwrap();
        assert_eq!((namespace.as_str(), metric.name.as_str()), ("WebhookReceiver", "LeadsFailed"));
        let service = ("service".to_owned(), Some("stream-worker".to_owned()));
        assert_eq!(metric.dimensions, [("reason".to_owned(), None), service]);
        let misspelt = r#"SEARCH('{WebhookReceiver,service} MetricName="X" servce="stream-worker"', 'Sum', 300)"#;
        assert!(search_metric(misspelt).is_none());
        assert!(search_metric(r#"SEARCH('{WebhookReceiver,service} service="stream-worker"', 'Sum', 300)"#).is_none());
        assert!(search_metric("METRICS()").is_none());
        // The template's own dashboard reads whole, on the code's namespace.
        assert!(dashboard_metrics("WebhookReceiver").len() >= 10);
    }
}

#[cfg(test)]
mod agreement {
    use super::*;

    /// The stream worker's own copies of the template's numbers agree with it: reconcile's
    /// margin rests on them (`stream_worker::operate::RECONCILE_MIN_AGE`).
    #[test]
    fn the_stream_s_maximum_record_age_and_function_timeout_are_the_code_s() {
        let resources = template()["Resources"].clone();
        let stream =
            |r: &Yaml| r["Properties"]["Events"].as_mapping()?.values().find(|e| e["Type"] == "DynamoDB").cloned();
        let (function, mapping) = resources
            .as_mapping()
            .unwrap()
            .values()
            .find_map(|r| Some((r.clone(), stream(r)?)))
            .expect("the function of the stream's event source mapping");
        let age = mapping["Properties"]["MaximumRecordAgeInSeconds"].as_u64().unwrap();
        assert_eq!(age, stream_worker::operate::STREAM_MAX_RECORD_AGE.as_secs());
        let timeout = function["Properties"]["Timeout"].as_u64().unwrap();
        assert_eq!(timeout, stream_worker::operate::STREAM_FUNCTION_TIMEOUT.as_secs());
    }
}
