//! Sink secrets from AWS Secrets Manager, so tokens and database URLs are not plain environment
//! variables of the function: `SINK_SECRET_ARN` names a secret whose value is a JSON object of
//! setting names to values (`{"LEAD_SINK": "postgres://...", "HUBSPOT_TOKEN": "..."}`). A name
//! in the secret takes precedence over the same name in the environment.

use std::collections::BTreeMap;

/// The setting that names the secret.
pub const SINK_SECRET_ARN: &str = "SINK_SECRET_ARN";

/// Reads a secret's text: a JSON object whose values are all strings. The error says what is
/// wrong with its shape, never a value.
pub fn parse(text: &str) -> Result<BTreeMap<String, String>, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|_| "the secret's value is not JSON".to_owned())?;
    let serde_json::Value::Object(fields) = value else {
        return Err("the secret's value is not a JSON object of setting names to values".into());
    };
    fields
        .into_iter()
        .map(|(name, value)| match value {
            serde_json::Value::String(text) => Ok((name, text)),
            _ => Err(format!("the secret's {name:?} is not a string")),
        })
        .collect()
}

/// Fetches the secret `arn` (its current version).
pub async fn fetch(aws: &aws_config::SdkConfig, arn: &str) -> anyhow::Result<BTreeMap<String, String>> {
    let client = aws_sdk_secretsmanager::Client::new(aws);
    let output = client.get_secret_value().secret_id(arn).send().await.map_err(|error| {
        let code = error.as_service_error().and_then(|e| aws_sdk_secretsmanager::error::ProvideErrorMetadata::code(e));
        anyhow::anyhow!("{SINK_SECRET_ARN}: the secret could not be read ({})", code.unwrap_or("unreachable"))
    })?;
    let text = output
        .secret_string()
        .ok_or_else(|| anyhow::anyhow!("{SINK_SECRET_ARN}: the secret has no text value (SecretString)"))?;
    parse(text).map_err(|why| anyhow::anyhow!("{SINK_SECRET_ARN}: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_an_object_of_strings() {
        let read = parse(r#"{"LEAD_SINK":"hubspot","HUBSPOT_TOKEN":"pat-1"}"#).unwrap();
        assert_eq!(read.get("HUBSPOT_TOKEN").map(String::as_str), Some("pat-1"));
        assert_eq!(read.len(), 2);
        assert!(parse("pat-1").unwrap_err().contains("not JSON"));
        assert!(parse(r#"["a"]"#).unwrap_err().contains("not a JSON object"));
        let error = parse(r#"{"PORT":5432,"TOKEN":"pat-secret"}"#).unwrap_err();
        assert!(error.contains("\"PORT\" is not a string") && !error.contains("pat-secret"), "{error}");
    }
}
