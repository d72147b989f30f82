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
#[cfg(test)]
pub(crate) fn matches(value: &Value, filter: &Map<String, Value>) -> bool {
    Compiled::new(filter).matches(value)
}

/// A filter read once for a search that tests it on many items: each field's path split into
/// names, each condition's operators recognised. Its verdicts are [`meets`]'s.
#[derive(Debug)]
pub(crate) struct Compiled<'f> {
    conditions: Vec<(Path<'f>, Test<'f>)>,
}

/// Where a condition's field is: a path of names, or one with indices or wildcards.
#[derive(Debug)]
enum Path<'f> {
    Names(Vec<&'f str>),
    General(&'f str),
}

/// What a condition asks of the field it finds.
#[derive(Debug)]
enum Test<'f> {
    /// Operators (an object with a `$` key), each with its operand.
    Ops(Vec<(Op, &'f Value)>),
    /// Any other condition: a nested object or a bare value, as [`meets`] reads it.
    Other(&'f Value),
}

/// A filter's operator; `Other` is a key without `$` beside operators, which nothing meets.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Gte,
    Lt,
    Lte,
    Other,
}

impl<'f> Compiled<'f> {
    /// `filter` (checked by [`check_filter`]) read once.
    pub(crate) fn new(filter: &'f Map<String, Value>) -> Self {
        let conditions = filter
            .iter()
            .map(|(field, condition)| {
                // A path of names alone (the common case) is followed without collecting.
                let path = if field.contains('[') {
                    Path::General(field)
                } else {
                    Path::Names(field.split('.').filter(|name| !name.is_empty()).collect())
                };
                let test = match condition {
                    Value::Object(ops) if ops.keys().any(|k| k.starts_with('$')) => {
                        Test::Ops(ops.iter().map(|(op, operand)| (Op::of(op), operand)).collect())
                    }
                    other => Test::Other(other),
                };
                (path, test)
            })
            .collect();
        Self { conditions }
    }

    /// Whether `value` meets every condition.
    pub(crate) fn matches(&self, value: &Value) -> bool {
        self.conditions.iter().all(|(path, test)| {
            let found = match path {
                Path::Names(names) => names.iter().try_fold(value, |v, name| v.get(name)),
                Path::General(path) => values_at(value, path).into_iter().next(),
            };
            match test {
                Test::Ops(ops) => ops.iter().all(|(op, operand)| op.apply(found, operand)),
                Test::Other(condition) => meets(found, condition),
            }
        })
    }
}

impl Op {
    fn of(op: &str) -> Self {
        match op {
            "$eq" => Op::Eq,
            "$ne" => Op::Ne,
            "$gt" => Op::Gt,
            "$gte" => Op::Gte,
            "$lt" => Op::Lt,
            "$lte" => Op::Lte,
            _ => Op::Other,
        }
    }

    /// Whether `found` (`None`: missing) meets this operator with `operand`.
    fn apply(self, found: Option<&Value>, operand: &Value) -> bool {
        let Some(found) = found else {
            // A missing field is unequal to everything and ordered against nothing.
            return self == Op::Ne;
        };
        let ordered = |test: fn(Ordering) -> bool| order(found, operand).is_some_and(test);
        match self {
            Op::Eq => equal(found, operand),
            Op::Ne => !equal(found, operand),
            Op::Gt => ordered(|o| o == Ordering::Greater),
            Op::Gte => ordered(|o| o != Ordering::Less),
            Op::Lt => ordered(|o| o == Ordering::Less),
            Op::Lte => ordered(|o| o != Ordering::Greater),
            Op::Other => false,
        }
    }
}

fn meets(found: Option<&Value>, condition: &Value) -> bool {
    match condition {
        Value::Object(ops) if ops.keys().any(|k| k.starts_with('$')) => {
            ops.iter().all(|(op, operand)| Op::of(op).apply(found, operand))
        }
        Value::Object(fields) => match found {
            Some(Value::Object(_)) => fields.iter().all(|(k, c)| meets(found.and_then(|f| f.get(k)), c)),
            _ => false,
        },
        bare => found.is_some_and(|f| equal(f, bare)),
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
            let found = values_at(&v, path).into_iter().next();
            for condition in [json!({"$ne": null}), json!({"$eq": 1}), json!(1), json!({"c": 1})] {
                let mut filter = Map::new();
                filter.insert(path.to_owned(), condition.clone());
                assert_eq!(matches(&v, &filter), meets(found, &condition), "{path:?} {condition}");
            }
        }
    }

    #[test]
    fn a_compiled_filter_agrees_with_each_condition_read_alone() {
        let items = [
            json!({"n": 5, "s": "b", "f": 1.5, "m": {"k": 1}, "z": null, "t": true, "a": [1, {"x": "y"}]}),
            json!({"n": "5", "s": 2, "m": [1], "a": []}),
            json!({}),
        ];
        let conditions = [
            json!(5),
            json!("b"),
            json!(null),
            json!({"$eq": 5.0}),
            json!({"$ne": "b"}),
            json!({"$gt": 4, "$lte": 5}),
            json!({"$gte": "a", "$lt": "c"}),
            json!({"$lt": 2}),
            json!({"$gt": 1, "x": 2}),
            json!({"k": 1}),
            json!([1]),
        ];
        for field in ["n", "s", "f", "m", "m.k", "z", "t", "a[1].x", "a[*]", "missing"] {
            for condition in &conditions {
                let mut filter = Map::new();
                filter.insert(field.to_owned(), condition.clone());
                let compiled = Compiled::new(&filter);
                for item in &items {
                    let alone = meets(values_at(item, field).into_iter().next(), condition);
                    assert_eq!(compiled.matches(item), alone, "{field} {condition} on {item}");
                }
            }
        }
    }

    #[test]
    fn an_unknown_operator_is_refused_naming_it_and_the_field() {
        let e = check_filter(&filter(json!({"n": {"$in": [1]}}))).unwrap_err();
        assert!(e.is_invalid());
        assert!(e.to_string().contains("`n`: unknown operator `$in`"), "{e}");
    }
}
