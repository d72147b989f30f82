//! Reading a value by field path (`metadata.title`, `chapters[*].content`, `authors[0].name`)
//! and matching a search filter against it (`$eq $ne $gt $gte $lt $lte`, a bare value meaning
//! equality), as LangGraph's in-memory store does; every backend filters through here.

use super::StoreError;
use serde_json::{Map, Value};
use std::cmp::Ordering;

/// The texts to embed for `path` in `value`: strings as they are, anything else as JSON; `$`
/// is the whole value. A path that finds nothing gives nothing.
pub(crate) fn texts_at(value: &Value, path: &str) -> Vec<String> {
    let found = if path == "$" {
        vec![value]
    } else {
        values_at(value, path)
    };
    found
        .into_iter()
        .filter(|v| !v.is_null())
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// Every value `path` reaches in `value`; `[*]` fans out over an array.
fn values_at<'v>(value: &'v Value, path: &str) -> Vec<&'v Value> {
    let mut current = vec![value];
    for segment in path.split('.') {
        let (name, indices) = match segment.find('[') {
            Some(i) => (&segment[..i], &segment[i..]),
            None => (segment, ""),
        };
        if !name.is_empty() {
            current = current.into_iter().filter_map(|v| v.get(name)).collect();
        }
        for index in indices.split('[').filter(|s| !s.is_empty()) {
            let index = index.trim_end_matches(']');
            current = current
                .into_iter()
                .flat_map(|v| -> Vec<&Value> {
                    let Some(array) = v.as_array() else { return Vec::new() };
                    match index {
                        "*" => array.iter().collect(),
                        i => i
                            .parse::<i64>()
                            .ok()
                            .and_then(|i| {
                                let i = if i < 0 { array.len() as i64 + i } else { i };
                                usize::try_from(i).ok().and_then(|i| array.get(i))
                            })
                            .into_iter()
                            .collect(),
                    }
                })
                .collect();
        }
    }
    current
}

/// Checks a filter's operators once, before any item is read: an unknown `$op` names itself.
pub(crate) fn check_filter(filter: &Map<String, Value>) -> Result<(), StoreError> {
    for (field, condition) in filter {
        if let Value::Object(ops) = condition {
            for op in ops.keys().filter(|k| k.starts_with('$')) {
                if !matches!(op.as_str(), "$eq" | "$ne" | "$gt" | "$gte" | "$lt" | "$lte") {
                    return Err(StoreError::invalid(format!(
                        "filter on `{field}`: unknown operator `{op}`; use $eq, $ne, $gt, $gte, $lt or $lte"
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Whether `value` meets every condition of `filter` (checked by [`check_filter`]).
pub(crate) fn matches(value: &Value, filter: &Map<String, Value>) -> bool {
    filter
        .iter()
        .all(|(field, condition)| meets(first_at(value, field), condition))
}

/// The first value `path` reaches in `value`. A path of field names alone (the common case)
/// is followed without collecting anything: a search reads it for every item it scans.
fn first_at<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    if path.contains('[') {
        return values_at(value, path).into_iter().next();
    }
    path.split('.')
        .filter(|name| !name.is_empty())
        .try_fold(value, |v, name| v.get(name))
}

fn meets(found: Option<&Value>, condition: &Value) -> bool {
    match condition {
        Value::Object(ops) if ops.keys().any(|k| k.starts_with('$')) => {
            ops.iter().all(|(op, operand)| apply(found, op, operand))
        }
        Value::Object(fields) => match found {
            Some(Value::Object(_)) => fields.iter().all(|(k, c)| meets(found.and_then(|f| f.get(k)), c)),
            _ => false,
        },
        bare => found.is_some_and(|f| equal(f, bare)),
    }
}

fn apply(found: Option<&Value>, op: &str, operand: &Value) -> bool {
    let Some(found) = found else {
        // A missing field is unequal to everything and ordered against nothing.
        return op == "$ne";
    };
    match op {
        "$eq" => equal(found, operand),
        "$ne" => !equal(found, operand),
        _ => match order(found, operand) {
            Some(o) => match op {
                "$gt" => o == Ordering::Greater,
                "$gte" => o != Ordering::Less,
                "$lt" => o == Ordering::Less,
                "$lte" => o != Ordering::Greater,
                _ => false,
            },
            None => false,
        },
    }
}

/// JSON equality, numbers compared by value (`1 == 1.0`).
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// Numbers by value, strings by their text; other pairs have no order.
fn order(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64()?.partial_cmp(&y.as_f64()?),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn filter(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn paths_reach_nested_fields_array_elements_and_wildcards() {
        let v = json!({"title": "t", "meta": {"a": 1}, "ch": [{"c": "x"}, {"c": "y"}], "au": [{"n": "ann"}]});
        assert_eq!(texts_at(&v, "meta.a"), ["1"]);
        assert_eq!(texts_at(&v, "ch[*].c"), ["x", "y"]);
        assert_eq!(texts_at(&v, "au[0].n"), ["ann"]);
        assert_eq!(texts_at(&v, "ch[-1].c"), ["y"]);
        assert!(texts_at(&v, "nope.x").is_empty());
        assert_eq!(texts_at(&json!({"a": 1}), "$"), [r#"{"a":1}"#]);
    }

    #[test]
    fn operators_compare_numbers_and_strings_and_bare_values_mean_equality() {
        let v = json!({"n": 5, "s": "b", "tags": ["x"], "m": {"k": 1}});
        assert!(matches(&v, &filter(json!({"n": 5.0, "s": "b"}))));
        assert!(matches(&v, &filter(json!({"n": {"$gt": 4, "$lte": 5}}))));
        assert!(!matches(&v, &filter(json!({"n": {"$lt": 5}}))));
        assert!(matches(&v, &filter(json!({"s": {"$gte": "a", "$ne": "c"}}))));
        assert!(matches(&v, &filter(json!({"m.k": 1, "m": {"k": 1}, "tags": ["x"]}))));
        assert!(!matches(&v, &filter(json!({"missing": 1}))));
        assert!(matches(&v, &filter(json!({"missing": {"$ne": 1}}))));
        assert!(!matches(&v, &filter(json!({"s": {"$gt": 1}}))));
    }

    #[test]
    fn a_path_of_names_finds_what_the_general_walk_finds() {
        let v = json!({"a": {"b": {"c": 1}}, "l": [1, 2], "": {"x": 2}, "d.e": 3});
        for path in [
            "a", "a.b", "a.b.c", "a..b", ".a", "a.b.c.d", "l", "l.0", "x", "", "d.e", "a.b.c.",
        ] {
            assert_eq!(first_at(&v, path), values_at(&v, path).into_iter().next(), "{path:?}");
        }
    }

    #[test]
    fn an_unknown_operator_is_refused_naming_it_and_the_field() {
        let e = check_filter(&filter(json!({"n": {"$in": [1]}}))).unwrap_err();
        assert!(e.is_invalid());
        assert!(e.to_string().contains("`n`: unknown operator `$in`"), "{e}");
    }
}
