//! What each row of a search or list answers with: `select`, the fields kept, checked against
//! the fields the row type has (LangGraph's 422 for a name that is none of them), and a thread
//! search's `extract` ([`Extract`]), values picked out of each thread by path.

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

/// How many paths an `extract` may name (LangGraph's limit).
const MAX_EXTRACT_PATHS: usize = 10;

/// The fields whose insides an `extract` path may reach into.
const EXTRACTABLE: [&str; 4] = ["values", "metadata", "config", "interrupts"];

/// `extract` of `POST /threads/search` (the SDK's `threads.search(extract=…)`): aliases of paths
/// into each thread (`{"last": "values.messages[-1].content"}`: dots for keys, brackets for
/// indexes, negative from the end), whose values each row answers with under `extracted`
/// (`null` where a path leads nowhere), as LangGraph's server does. A chat UI's thread list
/// reads a thread's last message this way without its whole state.
#[derive(Debug)]
pub(super) struct Extract(Vec<(String, String)>);

impl Extract {
    /// The body field `extract`, checked as LangGraph checks it: an object of at most 10 aliases,
    /// each an identifier that is not one of `fields` (the row's own), each path a string
    /// starting with `values`, `metadata`, `config` or `interrupts`. A 422 names what is wrong.
    pub(super) fn parse(extract: Option<&Value>, fields: &[&str]) -> Result<Option<Self>, ApiError> {
        let invalid = |what: String| Err(ApiError::invalid(format!("body field `extract`{what}")));
        let paths = match extract {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Object(paths)) => paths,
            Some(other) => return invalid(format!(": expected an object of aliases and paths, got `{other}`")),
        };
        if paths.len() > MAX_EXTRACT_PATHS {
            return invalid(format!(": at most {MAX_EXTRACT_PATHS} paths, got {}", paths.len()));
        }
        let mut out = Vec::with_capacity(paths.len());
        for (alias, path) in paths {
            let identifier = alias
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && alias.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !identifier {
                return invalid(format!(
                    ": the alias `{alias}` is no identifier (letters, digits and `_`, not first a digit)"
                ));
            }
            if fields.contains(&alias.as_str()) || alias == "extracted" {
                return invalid(format!(".{alias}: the alias is a field of the thread's own"));
            }
            let Some(path) = path.as_str().filter(|p| !p.is_empty()) else {
                return invalid(format!(".{alias}: expected a non-empty path, got `{path}`"));
            };
            if !EXTRACTABLE.contains(&root(path)) {
                return invalid(format!(
                    ".{alias}: the path `{path}` starts with none of {}",
                    EXTRACTABLE.join(", ")
                ));
            }
            out.push((alias.clone(), path.to_owned()));
        }
        Ok(Some(Extract(out)))
    }

    /// Whether a path reads `field` (a search that leaves a field unread must read it then).
    pub(super) fn reads(&self, field: &str) -> bool {
        self.0.iter().any(|(_, path)| root(path) == field)
    }

    /// What `row` answers under `extracted`: each alias's value.
    pub(super) fn from(&self, row: &Value) -> Value {
        let found = self
            .0
            .iter()
            .map(|(alias, path)| (alias.clone(), value_at(row, path).cloned().unwrap_or(Value::Null)));
        Value::Object(found.collect())
    }
}

/// The field a path starts with.
fn root(path: &str) -> &str {
    path.split(['.', '[']).next().unwrap_or(path)
}

/// The value `path` leads to in `row`: each `.key` into an object, each `[i]` into an array
/// (`-1` the last); `None` where it leads nowhere, and for a key starting with `_`.
fn value_at<'v>(row: &'v Value, path: &str) -> Option<&'v Value> {
    let mut steps = path.split(['.', '[']);
    let mut at = row.get(steps.next()?)?;
    for step in steps.filter(|s| !s.is_empty()) {
        if step.starts_with('_') {
            return None;
        }
        at = match step.strip_suffix(']') {
            Some(index) => {
                let items = at.as_array()?;
                let index: i64 = index.trim_end_matches(']').parse().ok()?;
                let from_end = usize::try_from(index.unsigned_abs()).ok()?;
                let i = if index < 0 {
                    items.len().checked_sub(from_end)?
                } else {
                    from_end
                };
                items.get(i)?
            }
            None => at.as_object()?.get(step)?,
        };
    }
    Some(at)
}

#[cfg(test)]
mod tests {
    use super::{value_at, Extract};
    use serde_json::json;

    #[test]
    fn paths_lead_through_keys_and_indexes_or_nowhere() {
        let row = json!({
            "values": {"messages": [{"content": "hi"}, {"content": "bye", "_secret": 1}], "n": 3},
            "metadata": {"a.b": 1},
        });
        let cases = [
            ("values.messages[-1].content", Some(json!("bye"))),
            ("values.messages[0].content", Some(json!("hi"))),
            ("values.messages[-2]", Some(json!({"content": "hi"}))),
            ("values.messages[2]", None),
            ("values.messages[-3]", None),
            ("values.messages[x]", None),
            ("values.n[0]", None),
            ("values.n.m", None),
            ("values.messages[1]._secret", None),
            ("values", Some(row["values"].clone())),
            ("config.x", None),
        ];
        for (path, expected) in cases {
            assert_eq!(value_at(&row, path).cloned(), expected, "{path}");
        }
    }

    #[test]
    fn an_extract_is_refused_naming_what_is_wrong() {
        let fields = ["thread_id", "values"];
        let cases = [
            (json!(["values"]), "expected an object"),
            (json!({"1st": "values.a"}), "`1st` is no identifier"),
            (json!({"values": "values.a"}), ".values: the alias is a field"),
            (json!({"extracted": "values.a"}), ".extracted: the alias is a field"),
            (json!({"a": ""}), ".a: expected a non-empty path"),
            (json!({"a": 1}), ".a: expected a non-empty path"),
            (json!({"a": "status"}), ".a: the path `status` starts with none of"),
        ];
        for (extract, message) in cases {
            let e = Extract::parse(Some(&extract), &fields).unwrap_err();
            assert!(e.detail.contains(message), "{extract}: {}", e.detail);
        }
        let many: serde_json::Map<_, _> = (0..11).map(|i| (format!("a{i}"), json!("values.a"))).collect();
        let e = Extract::parse(Some(&many.into()), &fields).unwrap_err();
        assert!(e.detail.contains("at most 10 paths, got 11"), "{}", e.detail);
        let ok = Extract::parse(Some(&json!({"last": "values.m[-1]", "who": "metadata.user"})), &fields).unwrap();
        assert!(ok.unwrap().reads("values"));
    }
}
