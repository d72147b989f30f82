//! What changed between two states, computed by the server so that the studio never ships two
//! whole states of megabytes to the browser to compare them: [`diff`] lists the changes as
//! JSON-pointer paths (RFC 6901) with the value before and after, and [`abbreviate`] cuts a value
//! down to what a person can read — long strings, long lists and objects with many keys are
//! truncated, each cut marked by a `{"$truncated": {…}}` object that says what was there.

use serde_json::{json, Map, Value};

/// How much of a value the studio shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// The characters of a string shown (its head); a longer one is truncated.
    pub(crate) chars: usize,
    /// The items of a list, or the keys of an object, shown; the rest are truncated.
    pub(crate) items: usize,
    /// The changes listed; the rest are counted.
    pub(crate) changes: usize,
}

/// What the studio's API shows.
pub(crate) const LIMITS: Limits = Limits {
    chars: 2_000,
    items: 100,
    changes: 200,
};

/// The marker's key: an object whose only key is this one stands for what was cut.
pub(crate) const TRUNCATED: &str = "$truncated";

/// `value` with every string longer than `limits.chars` characters replaced by
/// `{"$truncated": {"type": "string", "length", "omitted", "head"}}`, every list longer than
/// `limits.items` cut to its first items followed by `{"$truncated": {"type": "array", "length",
/// "omitted"}}`, and every object with more keys cut to its first keys followed by the key
/// `"$truncated"` holding `{"type": "object", "length", "omitted"}`. Lengths count characters,
/// items or keys; `omitted` is how many were left out.
pub(crate) fn abbreviate(value: &Value, limits: &Limits) -> Value {
    match value {
        Value::String(s) => {
            // Counting stops at the first character past the limit: a short string costs its
            // length, a 10 MB one as much as the head shown.
            let Some((cut, _)) = s.char_indices().nth(limits.chars) else {
                return value.clone();
            };
            let length = s.chars().count();
            json!({TRUNCATED: {"type": "string", "length": length, "omitted": length - limits.chars, "head": &s[..cut]}})
        }
        Value::Array(items) => {
            let mut shown: Vec<Value> = items.iter().take(limits.items).map(|v| abbreviate(v, limits)).collect();
            if items.len() > limits.items {
                let omitted = items.len() - limits.items;
                shown.push(json!({TRUNCATED: {"type": "array", "length": items.len(), "omitted": omitted}}));
            }
            Value::Array(shown)
        }
        Value::Object(fields) => {
            let mut shown: Map<String, Value> = fields
                .iter()
                .take(limits.items)
                .map(|(k, v)| (k.clone(), abbreviate(v, limits)))
                .collect();
            if fields.len() > limits.items {
                let omitted = fields.len() - limits.items;
                shown.insert(
                    TRUNCATED.to_owned(),
                    json!({"type": "object", "length": fields.len(), "omitted": omitted}),
                );
            }
            Value::Object(shown)
        }
        other => other.clone(),
    }
}

/// One change: at `path` (a JSON pointer into the state; `""` is the whole state), `before`
/// became `after`; an added value has no `before`, a removed one no `after`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Change {
    /// Where, as a JSON pointer.
    pub(crate) path: String,
    /// The value there before, `None` for an added one.
    pub(crate) before: Option<Value>,
    /// The value there after, `None` for a removed one.
    pub(crate) after: Option<Value>,
}

impl Change {
    /// `add`, `remove` or `change`.
    pub(crate) fn kind(&self) -> &'static str {
        match (&self.before, &self.after) {
            (None, _) => "add",
            (_, None) => "remove",
            _ => "change",
        }
    }

    /// `{"path", "kind", "before"?, "after"?}` with the values abbreviated.
    pub(crate) fn to_json(&self, limits: &Limits) -> Value {
        let mut out = json!({"path": self.path, "kind": self.kind()});
        if let Some(v) = &self.before {
            out["before"] = abbreviate(v, limits);
        }
        if let Some(v) = &self.after {
            out["after"] = abbreviate(v, limits);
        }
        out
    }
}

/// The changes from `before` (`None`: nothing, as before a thread's first checkpoint) to
/// `after`, at most `limits.changes` of them, and how many more there were.
///
/// Objects are compared key by key. A list that grew with its old items unchanged (an
/// appending reducer) lists its new items only, one that shrank from the end its removed
/// items, one of the same length item by item; any other list changed as a whole.
pub(crate) fn diff(before: Option<&Value>, after: &Value, limits: &Limits) -> (Vec<Change>, usize) {
    let mut out = Changes {
        list: Vec::new(),
        more: 0,
        max: limits.changes,
    };
    let empty = Value::Object(Map::new());
    match before {
        None if after.is_object() => compare(&empty, after, "", &mut out),
        None => out.push(String::new(), None, Some(after)),
        Some(before) => compare(before, after, "", &mut out),
    }
    (out.list, out.more)
}

/// The changes found so far.
struct Changes {
    list: Vec<Change>,
    more: usize,
    max: usize,
}

impl Changes {
    fn push(&mut self, path: String, before: Option<&Value>, after: Option<&Value>) {
        if self.list.len() < self.max {
            self.list.push(Change {
                path,
                before: before.cloned(),
                after: after.cloned(),
            });
        } else {
            self.more += 1;
        }
    }
}

/// `path` with the reference token `token` appended, escaped as RFC 6901 says.
fn child(path: &str, token: &str) -> String {
    format!("{path}/{}", token.replace('~', "~0").replace('/', "~1"))
}

fn compare(before: &Value, after: &Value, path: &str, out: &mut Changes) {
    if before == after {
        return;
    }
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            for (k, old) in b {
                match a.get(k) {
                    Some(new) => compare(old, new, &child(path, k), out),
                    None => out.push(child(path, k), Some(old), None),
                }
            }
            for (k, new) in a.iter().filter(|(k, _)| !b.contains_key(*k)) {
                out.push(child(path, k), None, Some(new));
            }
        }
        (Value::Array(b), Value::Array(a)) if a.len() > b.len() && a[..b.len()] == b[..] => {
            for (i, new) in a.iter().enumerate().skip(b.len()) {
                out.push(child(path, &i.to_string()), None, Some(new));
            }
        }
        (Value::Array(b), Value::Array(a)) if a.len() < b.len() && b[..a.len()] == a[..] => {
            for (i, old) in b.iter().enumerate().skip(a.len()) {
                out.push(child(path, &i.to_string()), Some(old), None);
            }
        }
        (Value::Array(b), Value::Array(a)) if a.len() == b.len() => {
            for (i, (old, new)) in b.iter().zip(a).enumerate() {
                compare(old, new, &child(path, &i.to_string()), out);
            }
        }
        _ => out.push(path.to_owned(), Some(before), Some(after)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Limits = Limits {
        chars: 5,
        items: 3,
        changes: 4,
    };

    fn paths(changes: &[Change]) -> Vec<(&str, &'static str)> {
        changes.iter().map(|c| (c.path.as_str(), c.kind())).collect()
    }

    #[test]
    fn fields_are_compared_one_by_one_with_json_pointer_paths() {
        let before = json!({"a": 1, "b": {"x": "old", "y": true}, "gone": null, "same": [1, 2]});
        let after = json!({"a": 2, "b": {"x": "new", "y": true}, "same": [1, 2], "new/~key": "v"});
        let (changes, more) = diff(Some(&before), &after, &LIMITS);
        assert_eq!(
            paths(&changes),
            [
                ("/a", "change"),
                ("/b/x", "change"),
                ("/gone", "remove"),
                ("/new~1~0key", "add")
            ]
        );
        assert_eq!(more, 0);
        assert_eq!(changes[1].before, Some(json!("old")));
        assert_eq!(changes[1].after, Some(json!("new")));
        assert_eq!(changes[2].after, None);
        assert_eq!(
            changes[3].to_json(&LIMITS),
            json!({"path": "/new~1~0key", "kind": "add", "after": "v"})
        );
    }

    #[test]
    fn a_list_that_grew_shows_its_new_items_only() {
        let before = json!({"log": ["a", "b"]});
        let after = json!({"log": ["a", "b", "c", {"d": 1}]});
        let (changes, _) = diff(Some(&before), &after, &LIMITS);
        assert_eq!(paths(&changes), [("/log/2", "add"), ("/log/3", "add")]);
        assert_eq!(changes[1].after, Some(json!({"d": 1})));
    }

    #[test]
    fn lists_that_shrank_kept_their_length_or_changed_otherwise() {
        let shrank = diff(Some(&json!([1, 2, 3])), &json!([1]), &LIMITS).0;
        assert_eq!(paths(&shrank), [("/1", "remove"), ("/2", "remove")]);
        let edited = diff(Some(&json!([1, {"k": 2}, 3])), &json!([1, {"k": 5}, 3]), &LIMITS).0;
        assert_eq!(paths(&edited), [("/1/k", "change")]);
        let replaced = diff(Some(&json!([1, 2, 3])), &json!([9, 8]), &LIMITS).0;
        assert_eq!(paths(&replaced), [("", "change")]);
        assert_eq!(replaced[0].before, Some(json!([1, 2, 3])));
    }

    #[test]
    fn a_first_checkpoint_adds_every_field_and_equal_states_differ_in_nothing() {
        let state = json!({"a": 1, "b": [2]});
        assert_eq!(paths(&diff(None, &state, &LIMITS).0), [("/a", "add"), ("/b", "add")]);
        assert_eq!(paths(&diff(None, &json!(3), &LIMITS).0), [("", "add")]);
        assert_eq!(diff(Some(&state), &state.clone(), &LIMITS), (vec![], 0));
        assert_eq!(paths(&diff(Some(&json!(1)), &json!("1"), &LIMITS).0), [("", "change")]);
    }

    #[test]
    fn changes_past_the_limit_are_counted_not_listed() {
        let before = json!({"log": []});
        let after = json!({"log": (0..10).collect::<Vec<_>>()});
        let (changes, more) = diff(Some(&before), &after, &SMALL);
        assert_eq!(changes.len(), 4);
        assert_eq!(more, 6);
        assert_eq!(changes[3].path, "/log/3");
    }

    #[test]
    fn long_strings_lists_and_objects_are_truncated_with_a_marker() {
        assert_eq!(abbreviate(&json!("short"), &SMALL), json!("short"));
        assert_eq!(
            abbreviate(&json!("héllo world"), &SMALL),
            json!({"$truncated": {"type": "string", "length": 11, "omitted": 6, "head": "héllo"}})
        );
        assert_eq!(
            abbreviate(&json!([1, 2, 3, 4, 5]), &SMALL),
            json!([1, 2, 3, {"$truncated": {"type": "array", "length": 5, "omitted": 2}}])
        );
        assert_eq!(abbreviate(&json!([1, 2, 3]), &SMALL), json!([1, 2, 3]));
        assert_eq!(
            abbreviate(&json!({"a": 1, "b": "0123456789", "c": 3, "d": 4}), &SMALL),
            json!({"a": 1, "b": {"$truncated": {"type": "string", "length": 10, "omitted": 5, "head": "01234"}}, "c": 3,
                   "$truncated": {"type": "object", "length": 4, "omitted": 1}})
        );
    }

    #[test]
    fn a_change_of_a_huge_value_shows_both_sides_abbreviated() {
        let big = "x".repeat(10_000);
        let (changes, _) = diff(Some(&json!({"doc": "tiny"})), &json!({"doc": big}), &SMALL);
        let shown = changes[0].to_json(&SMALL);
        assert_eq!(shown["before"], json!("tiny"));
        assert_eq!(shown["after"][TRUNCATED]["length"], json!(10_000));
        assert_eq!(shown["after"][TRUNCATED]["head"], json!("xxxxx"));
    }
}
