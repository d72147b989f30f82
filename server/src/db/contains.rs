//! JSON containment, PostgreSQL's `jsonb @>`, in Rust: the metadata and values filters of the
//! searches. The PostgreSQL backend leaves it to the database; the SQLite backend registers
//! [`contains`] as an SQL function, so both backends answer a filter alike.

use serde_json::Value;

/// Whether `doc` contains `pattern` as PostgreSQL's `jsonb @>` decides: an object contains an
/// object whose every key it has with a value containing the pattern's; an array contains an
/// array each of whose elements is contained by one of its own; scalars must be equal (numbers
/// by value, so `1` matches `1.0`). One difference: PostgreSQL also lets a top-level array
/// contain a bare scalar; the filters, always objects, never ask that.
///
/// # Examples
///
/// ```
/// use serde_json::json;
/// use weir_server::db::contains;
///
/// let metadata = json!({"user": "u1", "tags": ["a", "b"], "n": 2});
/// assert!(contains(&metadata, &json!({"user": "u1"})));
/// assert!(contains(&metadata, &json!({"tags": ["b"], "n": 2.0})));
/// assert!(!contains(&metadata, &json!({"user": "u2"})));
/// ```
pub fn contains(doc: &Value, pattern: &Value) -> bool {
    match (doc, pattern) {
        (Value::Object(doc), Value::Object(pattern)) => pattern
            .iter()
            .all(|(key, want)| doc.get(key).is_some_and(|have| contains(have, want))),
        (Value::Array(doc), Value::Array(pattern)) => {
            pattern.iter().all(|want| doc.iter().any(|have| contains(have, want)))
        }
        (Value::Number(a), Value::Number(b)) => a == b || a.as_f64().is_some_and(|a| Some(a) == b.as_f64()),
        (Value::Object(_) | Value::Array(_), _) | (_, Value::Object(_) | Value::Array(_)) => false,
        (a, b) => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::contains;
    use serde_json::json;

    #[test]
    fn nested_objects_are_contained_key_by_key() {
        let doc = json!({"a": {"b": 1, "c": 2}, "d": "x"});
        assert!(contains(&doc, &json!({"a": {"b": 1}})));
        assert!(contains(&doc, &json!({})));
        assert!(!contains(&doc, &json!({"a": {"b": 2}})));
        assert!(!contains(&doc, &json!({"e": null})));
    }

    #[test]
    fn arrays_contain_each_element_anywhere_and_scalars_match_by_value() {
        assert!(contains(&json!([1, 2, 3]), &json!([3, 1])));
        assert!(contains(
            &json!([[1, 2], {"k": "v", "w": 1}]),
            &json!([[2], {"k": "v"}])
        ));
        assert!(!contains(&json!([1, 2]), &json!([4])));
        assert!(contains(&json!({"n": 1}), &json!({"n": 1.0})));
        assert!(!contains(&json!({"n": "1"}), &json!({"n": 1})));
        assert!(!contains(&json!({"n": [1]}), &json!({"n": 1})));
        assert!(contains(&json!({"n": null}), &json!({"n": null})));
    }
}
