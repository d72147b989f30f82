//! How a flow's slots combine a step's writes: the reducers a flow may declare (`last`,
//! `append`, `add`, `merge`) and the hidden step counter's, as functions over JSON values that
//! the runtime's reducer channel calls in task order.

use crate::format::ReducerKind;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

/// How a slot combines a step's writes: the declared reducers, and the hidden counter's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Reduce {
    Last,
    Append,
    Add,
    Merge,
    /// `{key: n}` objects, added key by key.
    Count,
}

impl From<ReducerKind> for Reduce {
    fn from(r: ReducerKind) -> Self {
        match r {
            ReducerKind::Last => Self::Last,
            ReducerKind::Append => Self::Append,
            ReducerKind::Add => Self::Add,
            ReducerKind::Merge => Self::Merge,
        }
    }
}

/// `append`: a list write is concatenated, anything else pushed.
pub(super) fn append(v: &mut Value, w: Value) {
    if !v.is_array() {
        *v = Value::Array(Vec::new());
    }
    if let Value::Array(items) = v {
        match w {
            Value::Array(more) => items.extend(more),
            one => items.push(one),
        }
    }
}

/// `add`: integers stay integers while they fit, otherwise floats.
pub(super) fn add(v: &mut Value, w: Value) {
    *v = match (&*v, &w) {
        (Value::Null, _) => w,
        (Value::Number(a), Value::Number(b)) => sum(a, b),
        _ => w,
    };
}

fn sum(a: &Number, b: &Number) -> Value {
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        if let Some(s) = x.checked_add(y) {
            return Value::from(s);
        }
    }
    let s = a.as_f64().unwrap_or(0.0) + b.as_f64().unwrap_or(0.0);
    Number::from_f64(s).map_or(Value::Null, Value::Number)
}

/// `merge`: a shallow merge of objects.
pub(super) fn merge(v: &mut Value, w: Value) {
    match (v, w) {
        (Value::Object(a), Value::Object(b)) => a.extend(b),
        (v, w) => *v = w,
    }
}

/// The hidden counter: objects of numbers, added key by key; `null` starts it again (a run's
/// input writes it, so that `max_steps` counts per run, not per thread).
pub(super) fn count(v: &mut Value, w: Value) {
    if w.is_null() || !v.is_object() {
        *v = Value::Object(Map::new());
    }
    if let (Value::Object(a), Value::Object(b)) = (v, w) {
        for (k, n) in b {
            let e = a.entry(k).or_insert(Value::from(0));
            add(e, n);
        }
    }
}
