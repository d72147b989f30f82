//! What a store holds: [`Item`]s under hierarchical namespaces, the namespace rules
//! ([`validate_namespace`]), and the timestamps' wire form (`2026-12-01T18:28:49.013559+00:00`,
//! as LangGraph's server writes them).

use super::StoreError;
use crate::checkpoint::Timestamp;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The root label no namespace may start with: LangGraph keeps it for itself.
pub const RESERVED_ROOT: &str = "langgraph";

/// A stored value (LangGraph's `Item`): where it lives, its JSON object, and when it was made
/// and last written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// The namespace, from the root label down.
    pub namespace: Vec<String>,
    /// The key, unique within the namespace.
    pub key: String,
    /// The value, a JSON object.
    pub value: serde_json::Value,
    /// When the item was first put.
    #[serde(with = "wire_time")]
    pub created_at: Timestamp,
    /// When the item was last put.
    #[serde(with = "wire_time")]
    pub updated_at: Timestamp,
}

/// An item found by a search (LangGraph's `SearchItem`): the item and, for a natural-language
/// query on a store with an index, its similarity to the query (`None` otherwise).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchItem {
    /// The item.
    #[serde(flatten)]
    pub item: Item,
    /// The cosine similarity of the item's closest indexed field to the query.
    pub score: Option<f64>,
}

/// Checks `namespace` against LangGraph's rules: not empty, every label non-empty and without
/// `.` (backends and the HTTP API join labels with dots) or NUL, and no reserved root.
///
/// # Errors
/// An invalid-input [`StoreError`] naming the namespace and the rule it breaks.
///
/// # Examples
///
/// ```
/// use weir_runtime::store::validate_namespace;
///
/// assert!(validate_namespace(&["users".into(), "u1".into()]).is_ok());
/// let e = validate_namespace(&["users".into(), "a.b".into()]).unwrap_err();
/// assert_eq!(e.to_string(), "namespace (\"users\", \"a.b\"): label \"a.b\" contains a `.`");
/// ```
pub fn validate_namespace(namespace: &[String]) -> Result<(), StoreError> {
    check_namespace(namespace)
}

/// [`validate_namespace`] over labels of any string type.
pub(crate) fn check_namespace<S: AsRef<str>>(namespace: &[S]) -> Result<(), StoreError> {
    let fail = |why: String| Err(StoreError::invalid(format!("namespace {}: {why}", show(namespace))));
    if namespace.is_empty() {
        return fail("must have at least one label".into());
    }
    for label in namespace {
        let label = label.as_ref();
        if label.is_empty() {
            return fail("a label is empty".into());
        }
        if label.contains('.') {
            return fail(format!("label {label:?} contains a `.`"));
        }
        if label.contains('\0') {
            return fail(format!("label {label:?} contains a NUL character"));
        }
    }
    if namespace[0].as_ref() == RESERVED_ROOT {
        return fail(format!("the root label `{RESERVED_ROOT}` is reserved"));
    }
    Ok(())
}

/// A namespace as Python writes a tuple, for messages: `("users", "u1")`.
pub(crate) fn show<S: AsRef<str>>(namespace: &[S]) -> String {
    let labels: Vec<String> = namespace.iter().map(|l| format!("{:?}", l.as_ref())).collect();
    format!("({})", labels.join(", "))
}

/// The dot-joined form backends store (`users.u1`, the PostgreSQL `prefix` column).
pub(crate) fn join<S: std::borrow::Borrow<str>>(namespace: &[S]) -> String {
    namespace.join(".")
}

/// The dot-joined form of a namespace an item is read or written in, once it is checked
/// ([`check_namespace`]).
pub(crate) fn item_prefix<S: AsRef<str> + std::borrow::Borrow<str>>(namespace: &[S]) -> Result<String, StoreError> {
    check_namespace(namespace)?;
    Ok(join(namespace))
}

/// The labels of a dot-joined namespace.
pub(crate) fn split(prefix: &str) -> Vec<String> {
    prefix.split('.').map(str::to_owned).collect()
}

/// Timestamps as LangGraph's server writes them: RFC 3339 with microseconds and `+00:00`;
/// read back with `+00:00` or `Z`.
pub mod wire_time {
    use super::*;

    /// Writes `t` as `2026-12-01T18:28:49.013559+00:00`.
    pub fn to_text(t: Timestamp) -> String {
        let text = t.to_string();
        format!("{}+00:00", text.trim_end_matches('Z'))
    }

    /// Reads a timestamp written by [`to_text`] or with a `Z`.
    pub fn from_text(text: &str) -> Option<Timestamp> {
        match text.strip_suffix("+00:00") {
            Some(head) => Timestamp::parse(&format!("{head}Z")),
            None => Timestamp::parse(text),
        }
    }

    /// Serde's `serialize_with`.
    pub fn serialize<S: Serializer>(t: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&to_text(*t))
    }

    /// Serde's `deserialize_with`.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        let text = String::deserialize(d)?;
        from_text(&text).ok_or_else(|| serde::de::Error::custom(format!("not a timestamp: {text:?}")))
    }
}
