//! Metrics as CloudWatch Embedded Metric Format: fields of a JSON log line that CloudWatch Logs
//! turns into metrics, so measuring costs no API call and no dependency.
//!
//! A line carries the `_aws` block (timestamp, namespace, the names of its dimensions and
//! metrics) and, as top-level members, each dimension's value and each metric's value. Callers
//! pass names and values they chose; nothing from a delivery's form data is ever one of them.

use alloc::string::String;
use core::fmt::Write as _;

use crate::json::write_string;

/// The namespace every metric of this project is published under.
pub const NAMESPACE: &str = "WebhookReceiver";

/// A metric's unit, as CloudWatch names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// A count of events.
    Count,
    /// A duration in milliseconds.
    Milliseconds,
}

impl Unit {
    fn as_str(self) -> &'static str {
        match self {
            Unit::Count => "Count",
            Unit::Milliseconds => "Milliseconds",
        }
    }
}

/// One metric value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metric<'a> {
    /// Its name (also the member that holds the value).
    pub name: &'a str,
    /// Its unit.
    pub unit: Unit,
    /// Its value.
    pub value: u64,
}

/// Appends, to a JSON object being written in `line` (open, not yet closed), the `_aws` block
/// declaring `dimension_sets` (each a list of names of members the object already has or that
/// the caller adds; CloudWatch makes one metric per set) and `metrics`, then each metric's value
/// as a member. `line` must not be empty of members: a comma is written first.
pub fn append_emf(line: &mut String, timestamp_ms: u64, dimension_sets: &[&[&str]], metrics: &[Metric<'_>]) {
    let _ = write!(line, ",\"_aws\":{{\"Timestamp\":{timestamp_ms},\"CloudWatchMetrics\":[{{\"Namespace\":");
    write_string(NAMESPACE, line);
    line.push_str(",\"Dimensions\":[");
    for (i, set) in dimension_sets.iter().enumerate() {
        line.push_str(if i > 0 { ",[" } else { "[" });
        for (j, name) in set.iter().enumerate() {
            if j > 0 {
                line.push(',');
            }
            write_string(name, line);
        }
        line.push(']');
    }
    line.push_str("],\"Metrics\":[");
    for (i, metric) in metrics.iter().enumerate() {
        if i > 0 {
            line.push(',');
        }
        line.push_str("{\"Name\":");
        write_string(metric.name, line);
        line.push_str(",\"Unit\":");
        write_string(metric.unit.as_str(), line);
        line.push('}');
    }
    line.push_str("]}]}");
    for metric in metrics {
        line.push(',');
        write_string(metric.name, line);
        let _ = write!(line, ":{}", metric.value);
    }
}

/// A whole EMF line: `dimensions` (name, value) as members, then [`append_emf`].
pub fn emf_line(timestamp_ms: u64, dimensions: &[(&str, &str)], metrics: &[Metric<'_>]) -> String {
    let mut line = String::from("{");
    for (i, (name, value)) in dimensions.iter().enumerate() {
        if i > 0 {
            line.push(',');
        }
        write_string(name, &mut line);
        line.push(':');
        write_string(value, &mut line);
    }
    if dimensions.is_empty() {
        // `append_emf` starts with a comma; an object needs a member before it.
        line.push_str("\"emf\":1");
    }
    let names: alloc::vec::Vec<&str> = dimensions.iter().map(|(name, _)| *name).collect();
    append_emf(&mut line, timestamp_ms, &[&names], metrics);
    line.push('}');
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::{parse, Json};
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test(unsupported = test)]
    fn a_line_declares_its_dimensions_and_metrics_and_carries_their_values() {
        let line = emf_line(
            1_796_019_713_123,
            &[("service", "stream-worker"), ("reason", "sink_refused")],
            &[Metric { name: "LeadsFailed", unit: Unit::Count, value: 3 }],
        );
        assert_eq!(
            line,
            concat!(
                r#"{"service":"stream-worker","reason":"sink_refused","_aws":{"Timestamp":1796019713123,"#,
                r#""CloudWatchMetrics":[{"Namespace":"WebhookReceiver","Dimensions":[["service","reason"]],"#,
                r#""Metrics":[{"Name":"LeadsFailed","Unit":"Count"}]}]},"LeadsFailed":3}"#
            )
        );
        let json = parse(line.as_bytes()).unwrap();
        let directive = json.get("_aws").and_then(|a| a.get("CloudWatchMetrics"));
        assert!(matches!(directive, Some(Json::Array(d)) if d.len() == 1));
    }

    #[wasm_bindgen_test(unsupported = test)]
    fn several_metrics_and_no_dimension() {
        let line = emf_line(
            5,
            &[],
            &[
                Metric { name: "A", unit: Unit::Count, value: 0 },
                Metric { name: "B", unit: Unit::Milliseconds, value: 12 },
            ],
        );
        let json = parse(line.as_bytes()).unwrap();
        let number = |name| match json.get(name) {
            Some(Json::Number(n)) => Some(String::from(n.as_str())),
            _ => None,
        };
        assert_eq!(number("A").as_deref(), Some("0"));
        assert_eq!(number("B").as_deref(), Some("12"));
        assert!(line.contains(r#""Dimensions":[[]]"#), "{line}");
        assert!(line.contains(r#"{"Name":"B","Unit":"Milliseconds"}"#), "{line}");
    }
}
