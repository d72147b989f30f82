//! `select`: the fields of each row a search or list answers with, checked against the fields
//! the row type has (LangGraph's 422 for a name that is none of them).

use super::ApiError;
use serde_json::Value;

/// Keeps only the `select`ed fields of each row (all when `select` is absent). A name that is
/// not one of `fields` is refused (422, as LangGraph's), naming it and `at`, where it was given
/// (`body field \`select\``).
pub(super) fn select_fields(
    rows: Vec<Value>,
    select: Option<&[String]>,
    fields: &[&str],
    at: &str,
) -> Result<Vec<Value>, ApiError> {
    let Some(select) = select else { return Ok(rows) };
    if let Some(unknown) = select.iter().find(|s| !fields.contains(&s.as_str())) {
        return Err(ApiError::invalid(format!(
            "{at}: `{unknown}` is not a field; the fields are {}",
            fields.join(", ")
        )));
    }
    Ok(rows
        .into_iter()
        .map(|row| match row {
            Value::Object(map) => Value::Object(map.into_iter().filter(|(k, _)| select.contains(k)).collect()),
            other => other,
        })
        .collect())
}
