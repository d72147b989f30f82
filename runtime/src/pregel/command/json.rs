//! A [`RunCommand`] from LangGraph's JSON (`{"resume": …, "update": …, "goto": …}`, the
//! `command` of a server's run request): the update decoded field by field through the state's
//! update type, the goto as node names and `Send`s, every error naming the JSON path at fault
//! (`command.update.<field>`, `command.goto[1]`).

use super::{Answer, RunCommand};
use crate::error::Error;
use crate::graph::compile::GraphInner;
use crate::graph::{CompiledGraph, Goto, NodeId};
use crate::state::{ChannelKind, FieldInfo, State, Update};
use serde_json::{json, Map, Value};

impl<S: State> CompiledGraph<S> {
    /// Decodes LangGraph's JSON command (the `command` of a run request) into a
    /// [`RunCommand`] for this graph:
    ///
    /// - `resume`: one answer, or an object of answers by pause id (see [`Answer::from_json`]);
    /// - `update`: an object `{field: value}` (or LangGraph's list of `[field, value]` pairs),
    ///   each value decoded as the field's write; a reducer field's value is folded in, or
    ///   replaces the value when given as `{"__overwrite__": value}`;
    /// - `goto`: a node's name, a `Send` (`{"node": name, "input": value}`, or `"arg"`), or a
    ///   list of those;
    /// - `graph`: only `null` (there is no parent graph to send the command to).
    ///
    /// # Errors
    /// A JSON shape that does not fit, an unknown key, field or node, or a value its field or
    /// `Send` does not take: the error names the path at fault, as in `command.update.count:
    /// invalid type: string "x", expected u32` or ``command.goto[1]: unknown node `serch` ``.
    ///
    /// # Examples
    ///
    /// ```
    /// # weir_runtime::__doc_state!();
    /// use weir_runtime::GraphBuilder;
    /// let mut g = GraphBuilder::<Doc>::new();
    /// g.add_node("write", |_: &Doc| DocUpdate::default());
    /// g.add_edge(weir_runtime::START, "write");
    /// let app = g.compile().unwrap();
    /// let json = serde_json::json!({"resume": "yes", "update": {"text": "hi"}, "goto": "write"});
    /// let command = app.command_from_json(&json).unwrap();
    /// assert_eq!(command.goto.len(), 1);
    /// let bad = serde_json::json!({"update": {"txt": "hi"}});
    /// let err = app.command_from_json(&bad).unwrap_err();
    /// assert!(err.to_string().starts_with("`command.update.txt`: the state has no field `txt`"));
    /// ```
    pub fn command_from_json(&self, command: &Value) -> Result<RunCommand<S>, Error> {
        let Value::Object(map) = command else {
            return Err(at("command", format!("expected an object, found {}", kind(command))));
        };
        let mut out = RunCommand::new();
        for (key, value) in map {
            match (key.as_str(), value) {
                ("resume" | "update" | "goto" | "graph", Value::Null) => {}
                ("resume", v) => out.resume = Some(Answer::from_json(v.clone())),
                ("update", v) => out.update = Some(update_from_json::<S>(&self.inner.fields, v)?),
                ("goto", v) => out.goto = gotos_from_json(&self.inner, v)?,
                ("graph", _) => {
                    return Err(at(
                        "command.graph",
                        "there is no parent graph: a run's command applies to its own graph".into(),
                    ))
                }
                (other, _) => {
                    return Err(at(
                        &format!("command.{other}"),
                        "unknown key; a command has `resume`, `update` and `goto`".into(),
                    ))
                }
            }
        }
        Ok(out)
    }
}

/// The error at JSON path `path`.
fn at(path: &str, message: String) -> Error {
    Error::config(format!("`{path}`: {message}"))
}

/// What kind of JSON value `v` is, for errors.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// `command.update`: an object of fields, or a list of `[field, value]` pairs, each decoded as
/// one write through the state's update type and merged in order.
fn update_from_json<S: State>(fields: &[FieldInfo], value: &Value) -> Result<S::Update, Error> {
    let mut writes: Vec<(String, &str, &Value)> = Vec::new();
    match value {
        Value::Object(map) => {
            for (name, v) in map {
                writes.push((format!("command.update.{name}"), name, v));
            }
        }
        Value::Array(pairs) => {
            for (i, pair) in pairs.iter().enumerate() {
                let path = format!("command.update[{i}]");
                match pair.as_array().map(Vec::as_slice) {
                    Some([Value::String(name), v]) => writes.push((path, name, v)),
                    _ => {
                        return Err(at(
                            &path,
                            format!("expected a `[field, value]` pair, found {}", kind(pair)),
                        ))
                    }
                }
            }
        }
        other => {
            return Err(at(
                "command.update",
                format!("expected an object of fields, found {}", kind(other)),
            ))
        }
    }
    // The update with no write, as it serializes: every field `"None"`.
    let template = match serde_json::to_value(S::Update::default()) {
        Ok(Value::Object(map)) if map.values().all(|v| v == "None") => map,
        _ => {
            return Err(at(
                "command.update",
                "this state's update does not decode from `{field: value}`".into(),
            ))
        }
    };
    let mut out = S::Update::default();
    for (path, name, v) in writes {
        let Some(field) = fields
            .iter()
            .find(|f| f.name() == name)
            .filter(|_| template.contains_key(name))
        else {
            let names: Vec<&str> = fields.iter().map(FieldInfo::name).collect();
            return Err(at(
                &path,
                format!(
                    "the state has no field `{name}`; its fields are `{}`",
                    names.join("`, `")
                ),
            ));
        };
        let mut one = template.clone();
        one.insert(name.to_owned(), json!({ "One": write_of(field, v) }));
        let update: S::Update = serde_json::from_value(Value::Object(one)).map_err(|e| at(&path, e.to_string()))?;
        out.merge(update);
    }
    Ok(out)
}

/// A field's write for the JSON value `v`: a reducer's value is folded in, or, in LangGraph's
/// overwrite forms, replaces the value.
fn write_of(field: &FieldInfo, v: &Value) -> Value {
    if field.kind != ChannelKind::Reducer {
        return v.clone();
    }
    match v.as_object().and_then(overwrite) {
        Some(value) => json!({ "Overwrite": value }),
        None => json!({ "Reduce": v }),
    }
}

/// The value of LangGraph's `{"__overwrite__": v}` or `{"type": "__overwrite__", "value": v}`.
fn overwrite(o: &Map<String, Value>) -> Option<&Value> {
    match o.len() {
        1 => o.get("__overwrite__"),
        2 if o.get("type").is_some_and(|t| t == "__overwrite__") => o.get("value"),
        _ => None,
    }
}

/// `command.goto`: one destination or a list of them.
fn gotos_from_json<S: State>(g: &GraphInner<S>, value: &Value) -> Result<Vec<Goto<S>>, Error> {
    match value {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| goto_from_json(g, v, &format!("command.goto[{i}]")))
            .collect(),
        one => Ok(vec![goto_from_json(g, one, "command.goto")?]),
    }
}

/// One destination: a node's name, or a `Send` `{"node": name, "input": value}` (`"arg"` too).
fn goto_from_json<S: State>(g: &GraphInner<S>, v: &Value, path: &str) -> Result<Goto<S>, Error> {
    let node = |name: &str, path: &str| match g.node_ids.get(name) {
        Some(&n) if (n as usize) < g.n_user => Ok(n),
        _ => Err(at(
            path,
            format!(
                "unknown node `{name}`; the nodes are `{}`",
                g.user_node_names().join("`, `")
            ),
        )),
    };
    let o = match v {
        Value::String(name) => return Ok(Goto::Node(NodeId(node(name, path)?))),
        Value::Object(o) => o,
        other => {
            return Err(at(
                path,
                format!(
                    "expected a node's name or a `Send` (`{{\"node\": …, \"input\": …}}`), found {}",
                    kind(other)
                ),
            ))
        }
    };
    if let Some(key) = o.keys().find(|k| !matches!(k.as_str(), "node" | "input" | "arg")) {
        return Err(at(
            &format!("{path}.{key}"),
            "unknown key; a `Send` has `node` and `input`".into(),
        ));
    }
    let Some(name) = o.get("node").and_then(Value::as_str) else {
        return Err(at(
            &format!("{path}.node"),
            "a `Send` needs `node`, a node's name".into(),
        ));
    };
    let n = node(name, &format!("{path}.node"))?;
    let Some(arg) = o.get("input").or_else(|| o.get("arg")) else {
        return Ok(Goto::Node(NodeId(n)));
    };
    let Some(decode) = &g.decoders[n as usize] else {
        return Err(at(
            path,
            format!("node `{name}` takes no `Send`s: add it with `add_send_node`"),
        ));
    };
    let input_path = if o.contains_key("input") { "input" } else { "arg" };
    decode(arg.clone())
        .map(Goto::Send)
        .map_err(|e| at(&format!("{path}.{input_path}"), e))
}
