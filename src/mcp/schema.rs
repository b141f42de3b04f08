//! Tool schemas as strict clients read them. schemars marks integers with formats of its own
//! (`uint64`, `uint32`, `double`, …) that JSON Schema does not define; Gemini CLI's validator
//! prints a warning for each on every start. Only the formats JSON Schema defines are kept
//! (the bounds stay: `minimum` says what `uint64` meant).

use serde_json::{Map, Value};

/// The `format` values of JSON Schema 2020-12 (section 7.3).
const STANDARD_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// The schema with every non-standard `format` removed, at any depth.
pub fn standard_formats(schema: &Map<String, Value>) -> Map<String, Value> {
    let mut schema = schema.clone();
    strip(&mut schema);
    schema
}

fn strip(schema: &mut Map<String, Value>) {
    if schema
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|format| !STANDARD_FORMATS.contains(&format))
    {
        schema.remove("format");
    }
    for value in schema.values_mut() {
        strip_value(value);
    }
}

fn strip_value(value: &mut Value) {
    match value {
        Value::Object(object) => strip(object),
        Value::Array(items) => items.iter_mut().for_each(strip_value),
        _ => {}
    }
}

/// Every `format` in the schema, at any depth.
#[cfg(test)]
pub fn formats(value: &Value) -> Vec<String> {
    match value {
        Value::Object(object) => object
            .iter()
            .flat_map(|(key, value)| match (key.as_str(), value) {
                ("format", Value::String(format)) => vec![format.clone()],
                _ => formats(value),
            })
            .collect(),
        Value::Array(items) => items.iter().flat_map(formats).collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_standard_formats_stay_and_bounds_with_them() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer", "format": "uint64", "minimum": 0},
                "at": {"type": "string", "format": "date-time"},
                "either": {"anyOf": [{"type": "integer", "format": "uint32"}, {"type": "string"}]}
            },
            "$defs": {"D": {"type": "number", "format": "double"}}
        });
        let cleaned = Value::Object(standard_formats(schema.as_object().unwrap()));
        assert_eq!(formats(&cleaned), ["date-time"]);
        assert_eq!(cleaned["properties"]["n"]["minimum"], 0);
    }
}
