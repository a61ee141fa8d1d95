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
