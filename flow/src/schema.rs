//! Validation of a flow file against the published JSON Schema, before it is read.

use crate::error::Diagnostic;
use serde_json::Value;
use std::sync::OnceLock;

fn validator() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| {
        jsonschema::validator_for(&crate::format::json_schema()).expect("the generated schema is a valid JSON Schema")
    })
}

/// Every place where `value` breaks the flow schema, with its JSON path, in the order of the
/// paths (keys by name, array items by index): the same whether or not serde_json keeps
/// objects' key order (a crate built with it in the same workspace turns it on for all).
pub(crate) fn validate(value: &Value) -> Vec<Diagnostic> {
    let mut found: Vec<(Vec<Result<usize, String>>, Diagnostic)> = validator()
        .iter_errors(value)
        .map(|e| {
            let pointer = e.instance_path().as_str().to_owned();
            let order = pointer
                .split('/')
                .skip(1)
                .map(|p| p.parse::<usize>().map_err(|_| p.to_owned()))
                .collect();
            let path = json_path(&pointer);
            let id = id_at(value, &path);
            (order, Diagnostic::new(path, id.as_deref(), e.to_string()))
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found.into_iter().map(|(_, d)| d).collect()
}

/// `/nodes/2/data` as `$.nodes[2].data`.
pub(crate) fn json_path(pointer: &str) -> String {
    let mut out = String::from("$");
    for part in pointer.split('/').skip(1) {
        let part = part.replace("~1", "/").replace("~0", "~");
        if part.parse::<usize>().is_ok() {
            out.push_str(&format!("[{part}]"));
        } else if !part.is_empty() && part.chars().all(|c| c.is_alphanumeric() || c == '_') {
            out.push('.');
            out.push_str(&part);
        } else {
            out.push_str(&format!("[{}]", Value::String(part)));
        }
    }
    out
}

/// The id of the node or edge a path points into, when it has one.
fn id_at(value: &Value, path: &str) -> Option<String> {
    for list in ["nodes", "edges"] {
        let prefix = format!("$.{list}[");
        if let Some(rest) = path.strip_prefix(&prefix) {
            let i: usize = rest.split(']').next()?.parse().ok()?;
            return value[list][i]["id"].as_str().map(str::to_owned);
        }
    }
    None
}
