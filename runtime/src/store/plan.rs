//! A search filter planned for SQL: the conditions a backend can evaluate in its own query
//! (`json_extract` on SQLite, `jsonb` on PostgreSQL) with exactly the meaning
//! [`matches`](super::filter::matches) gives them, or nothing when the filter uses a form the
//! backends leave to Rust (array indices and wildcards, nested-object conditions, arrays or
//! objects as operands).

use serde_json::{Map, Value};

/// What a field is compared with.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Operand {
    /// A number, compared by its `f64` value (`1 == 1.0`).
    Num(f64),
    /// A string, ordered by its bytes.
    Str(String),
    /// `true` or `false`: equal only to itself, ordered against nothing.
    Bool(bool),
    /// JSON `null`: equal only to itself, ordered against nothing.
    Null,
}

/// How a condition compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cmp {
    Gt,
    Gte,
    Lt,
    Lte,
}

impl Cmp {
    /// The SQL operator.
    pub(crate) fn sql(self) -> &'static str {
        match self {
            Cmp::Gt => ">",
            Cmp::Gte => ">=",
            Cmp::Lt => "<",
            Cmp::Lte => "<=",
        }
    }
}

/// One condition on the field at `path` (object keys from the value's root). A missing field
/// is unequal to everything and ordered against nothing.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cond {
    /// The field is present and equal to the operand.
    Eq(Vec<String>, Operand),
    /// The field is missing or unequal to the operand.
    Ne(Vec<String>, Operand),
    /// The field is present, of the operand's kind (number or string), and compares so.
    Order(Vec<String>, Cmp, Operand),
    /// Never true (an operator that compares with nothing, e.g. `$gt` with `true`).
    Never,
}

/// The conditions of `filter` (checked beforehand), all of which must hold; `None` when some
/// part of it must be evaluated in Rust.
pub(crate) fn plan(filter: &Map<String, Value>) -> Option<Vec<Cond>> {
    let mut conds = Vec::new();
    for (field, condition) in filter {
        let path = path(field)?;
        match condition {
            Value::Object(ops) if ops.keys().any(|k| k.starts_with('$')) => {
                for (op, operand) in ops {
                    conds.push(op_cond(&path, op, operand)?);
                }
            }
            Value::Object(_) | Value::Array(_) => return None,
            bare => conds.push(Cond::Eq(path, operand(bare)?)),
        }
    }
    Some(conds)
}

fn op_cond(path: &[String], op: &str, operand_value: &Value) -> Option<Cond> {
    let operand = operand(operand_value)?;
    let cmp = match op {
        "$eq" => return Some(Cond::Eq(path.to_vec(), operand)),
        "$ne" => return Some(Cond::Ne(path.to_vec(), operand)),
        "$gt" => Cmp::Gt,
        "$gte" => Cmp::Gte,
        "$lt" => Cmp::Lt,
        "$lte" => Cmp::Lte,
        // A key that is no operator beside operators: `matches` holds it never true.
        _ => return Some(Cond::Never),
    };
    Some(match operand {
        Operand::Num(_) | Operand::Str(_) => Cond::Order(path.to_vec(), cmp, operand),
        Operand::Bool(_) | Operand::Null => Cond::Never,
    })
}

fn operand(v: &Value) -> Option<Operand> {
    Some(match v {
        Value::Number(n) => Operand::Num(n.as_f64()?),
        Value::String(s) => Operand::Str(s.clone()),
        Value::Bool(b) => Operand::Bool(*b),
        Value::Null => Operand::Null,
        Value::Array(_) | Value::Object(_) => return None,
    })
}

/// A dotted field as object keys; `None` for indices, wildcards, empty labels, and labels a
/// SQL path would read differently (all digits: PostgreSQL takes them as array indices; a `"`
/// or `\` would need quoting in SQLite's path).
fn path(field: &str) -> Option<Vec<String>> {
    field
        .split('.')
        .map(|label| {
            let plain = !label.is_empty()
                && !label.contains(['[', ']', '"', '\\'])
                && !label.trim_start_matches('-').bytes().all(|b| b.is_ascii_digit());
            plain.then(|| label.to_owned())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn planned(v: Value) -> Option<Vec<Cond>> {
        plan(v.as_object().unwrap())
    }

    fn p(s: &str) -> Vec<String> {
        s.split('.').map(str::to_owned).collect()
    }

    #[test]
    fn operators_and_bare_values_become_conditions() {
        let conds = planned(json!({"a.b": 1, "s": {"$gte": "x", "$ne": null}, "t": {"$lt": true}})).unwrap();
        assert_eq!(
            conds,
            [
                Cond::Eq(p("a.b"), Operand::Num(1.0)),
                Cond::Order(p("s"), Cmp::Gte, Operand::Str("x".into())),
                Cond::Ne(p("s"), Operand::Null),
                Cond::Never,
            ]
        );
    }

    #[test]
    fn forms_left_to_rust_give_no_plan() {
        for filter in [
            json!({"a[0]": 1}),
            json!({"a[*].b": 1}),
            json!({"m": {"k": 1}}),
            json!({"tags": ["x"]}),
            json!({"n": {"$eq": [1]}}),
            json!({"a..b": 1}),
            json!({"list.0": 1}),
            json!({"q\"uote": 1}),
        ] {
            assert_eq!(planned(filter.clone()), None, "{filter}");
        }
    }
}
