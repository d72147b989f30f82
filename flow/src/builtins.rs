//! The built-in node types: `start`, `end`, `condition` (CEL expressions), `set` (minijinja
//! templates), `output` (a message, and a person's choice). `note` has no factory: the loader
//! skips it. An `end` node finishes the run; an edge out of one is a load error.

use crate::format::FieldType;
use crate::node::{template_context, template_context_paths, template_reads_context};
use crate::node::{Brancher, Choice, ContextPath, DataError, Factory, Fields, Message, NodeImpl, Role, StaticWrite};
use crate::state::{Reduce, Schema};
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;
use weir_runtime::BoxError;

/// The built-in types and their factories.
pub(crate) fn builtins() -> Vec<(&'static str, Factory)> {
    let start: Factory = Arc::new(|_, _| {
        Ok(NodeImpl {
            role: Role::Start,
            ..NodeImpl::noop()
        })
    });
    let end: Factory = Arc::new(|_, _| {
        Ok(NodeImpl {
            role: Role::End,
            ..NodeImpl::noop()
        })
    });
    vec![
        ("start", start),
        ("end", end),
        ("condition", Arc::new(condition)),
        ("set", Arc::new(set)),
        ("output", Arc::new(output)),
    ]
}

fn parse<T: for<'de> Deserialize<'de>>(data: &Fields) -> Result<T, Vec<DataError>> {
    serde_json::from_value(Value::Object(data.clone()))
        .map_err(|e| vec![DataError::new("", format!("invalid `data`: {e}"))])
}

// ---------------------------------------------------------------------------------------------
// condition

#[derive(Deserialize)]
struct ConditionData {
    branches: Vec<BranchData>,
    #[serde(default, rename = "else")]
    else_handle: Option<String>,
}

#[derive(Deserialize)]
struct BranchData {
    id: String,
    when: String,
}

/// `condition`: `{"branches": [{"id": "urgent", "when": "priority == 'high'"}], "else": "other"}`.
/// Branches are tried in order; the first whose CEL expression is true is taken; when none is,
/// the `else` handle (default `else`) is. Every branch, `else` included, needs an edge: a
/// condition without one for `else` is a load error naming the node and the branch.
/// Expressions see every field that holds a value by name, all of them as `state`, and the
/// run's context as `context` (`context.tier == 'pro'`; a field named `context` is then read as
/// `state.context`). A path into the context it does not have fails the node, naming the path.
fn condition(data: &Fields, _: &Schema) -> Result<NodeImpl, Vec<DataError>> {
    let d: ConditionData = parse(data)?;
    let mut errors = Vec::new();
    let mut programs = Vec::new();
    let mut handles = Vec::new();
    let mut context_paths = Vec::new();
    let mut reads_context = false;
    if d.branches.is_empty() {
        errors.push(DataError::new(".branches", "a condition needs at least one branch"));
    }
    for (i, b) in d.branches.iter().enumerate() {
        let path = format!(".branches[{i}]");
        if handles.iter().any(|(h, _)| h == &b.id) {
            errors.push(DataError::new(
                format!("{path}.id"),
                format!("branch `{}` is declared twice", b.id),
            ));
        }
        match cel::Program::compile(&b.when) {
            Ok(p) => {
                reads_context |= p.references().has_variable("context");
                let mut paths = Vec::new();
                cel_context_paths(p.expression(), &mut paths);
                for read in paths {
                    let read = ContextPath {
                        path: read,
                        at: format!("{path}.when"),
                    };
                    if !context_paths.contains(&read) {
                        context_paths.push(read);
                    }
                }
                programs.push((b.id.clone(), p));
            }
            Err(e) => errors.push(DataError::new(
                format!("{path}.when"),
                format!(
                    "branch `{}` has an invalid expression: {}",
                    b.id,
                    one_line(&e.to_string())
                ),
            )),
        }
        handles.push((b.id.clone(), path));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let else_handle = d.else_handle.unwrap_or_else(|| "else".to_owned());
    let fallback = else_handle.clone();
    let choose = move |state: &Fields, context: &Value, _: Option<&Value>| -> Result<Choice, BoxError> {
        let mut ctx = cel::Context::default();
        let mut all = std::collections::HashMap::with_capacity(state.len());
        for (k, v) in state {
            let v = cel_value(v);
            ctx.add_variable_from_value(k.as_str(), v.clone());
            all.insert(k.clone(), v);
        }
        ctx.add_variable_from_value("state", all);
        if !context.is_null() {
            ctx.add_variable_from_value("context", cel_value(context));
        }
        for (id, p) in &programs {
            match p.execute(&ctx) {
                Ok(cel::Value::Bool(true)) => return Ok(Choice::Handle(id.clone())),
                Ok(cel::Value::Bool(false)) => {}
                Ok(other) => return Err(format!("branch `{id}`'s expression gave {other:?}, not a bool").into()),
                Err(e) => return Err(format!("branch `{id}`'s expression failed: {e}").into()),
            }
        }
        Ok(Choice::Handle(fallback.clone()))
    };
    Ok(NodeImpl {
        role: Role::Branch(Arc::new(Brancher {
            kind: "condition",
            noun: "branch",
            handles,
            optional: Some(else_handle),
            choose: Box::new(choose),
        })),
        context_paths,
        reads_context,
        ..NodeImpl::noop()
    })
}

/// The paths into `context` that `e` reads (`context.user.tier` is `["user", "tier"]`): the
/// longest chains of field selections from the identifier `context`, less those a `has(..)` or
/// `in` test in the expression asks about (`has(context.vip) && context.vip` and
/// `'vip' in context && context['vip']` read an optional key).
fn cel_context_paths(e: &cel::IdedExpr, out: &mut Vec<Vec<String>>) {
    let (mut read, mut tested) = (Vec::new(), Vec::new());
    walk_context_paths(e, &mut read, &mut tested);
    for path in read {
        if !tested.iter().any(|t: &Vec<String>| path.starts_with(t)) && !out.contains(&path) {
            out.push(path);
        }
    }
}

/// The chain of field selections `e` makes from the identifier `context`, if it is one: by
/// name (`context.user`) or by a constant key (`context['user']`).
fn context_chain(e: &cel::IdedExpr) -> Option<Vec<String>> {
    use cel::common::ast::{operators, Expr, LiteralValue};
    let mut path = Vec::new();
    let mut here = e;
    loop {
        match &here.expr {
            Expr::Select(sel) if !sel.test => {
                path.push(sel.field.clone());
                here = &sel.operand;
            }
            Expr::Call(call) if call.func_name == operators::INDEX && call.target.is_none() && call.args.len() == 2 => {
                let Expr::Literal(LiteralValue::String(key)) = &call.args[1].expr else {
                    return None;
                };
                path.push(key.inner().to_owned());
                here = &call.args[0];
            }
            Expr::Ident(name) if name == "context" && !path.is_empty() => {
                path.reverse();
                return Some(path);
            }
            _ => return None,
        }
    }
}

fn walk_context_paths(e: &cel::IdedExpr, read: &mut Vec<Vec<String>>, tested: &mut Vec<Vec<String>>) {
    use cel::common::ast::{operators, EntryExpr, Expr, LiteralValue};
    let mut walk = |x: &cel::IdedExpr| walk_context_paths(x, read, tested);
    match &e.expr {
        // `has(context.a.b)`: asks whether `b` is there; `context.a` must be.
        Expr::Select(sel) if sel.test => match context_chain(&sel.operand) {
            Some(mut path) => {
                read.push(path.clone());
                path.push(sel.field.clone());
                tested.push(path);
            }
            None if matches!(&sel.operand.expr, Expr::Ident(n) if n == "context") => {
                tested.push(vec![sel.field.clone()]);
            }
            None => walk(&sel.operand),
        },
        Expr::Select(sel) => match context_chain(e) {
            Some(path) => read.push(path),
            None => walk(&sel.operand),
        },
        // `'b' in context.a`: asks whether `b` is there; `context.a` must be.
        Expr::Call(call) if call.func_name == operators::IN && call.args.len() == 2 => {
            let key = match &call.args[0].expr {
                Expr::Literal(LiteralValue::String(key)) => Some(key.inner().to_owned()),
                _ => None,
            };
            let container = match &call.args[1].expr {
                Expr::Ident(name) if name == "context" => Some(Vec::new()),
                _ => context_chain(&call.args[1]),
            };
            match (key, container) {
                (Some(key), Some(mut path)) => {
                    if !path.is_empty() {
                        read.push(path.clone());
                    }
                    path.push(key);
                    tested.push(path);
                }
                _ => call.args.iter().for_each(&mut walk),
            }
        }
        Expr::Call(call) => match context_chain(e) {
            Some(path) => read.push(path),
            None => {
                call.target.iter().for_each(|t| walk(t));
                call.args.iter().for_each(&mut walk);
            }
        },
        Expr::Comprehension(c) => {
            for part in [&c.iter_range, &c.accu_init, &c.loop_cond, &c.loop_step, &c.result] {
                walk(part);
            }
        }
        Expr::List(list) => list.elements.iter().for_each(&mut walk),
        Expr::Map(map) => {
            for entry in &map.entries {
                match &entry.expr {
                    EntryExpr::StructField(f) => walk(&f.value),
                    EntryExpr::MapEntry(m) => {
                        walk(&m.key);
                        walk(&m.value);
                    }
                }
            }
        }
        Expr::Struct(st) => {
            for entry in &st.entries {
                if let EntryExpr::StructField(f) = &entry.expr {
                    walk(&f.value);
                }
            }
        }
        Expr::Unspecified | Expr::Ident(_) | Expr::Literal(_) => {}
    }
}

/// A state value as an expression sees it. A JSON integer is a CEL `int` when it fits one (a
/// `uint` only beyond `i64::MAX`), so that `n % 5 == 0` and `n - 1` work on a count: CEL has no
/// arithmetic between `uint` and an `int` literal, and cel's own conversion makes every
/// non-negative JSON integer a `uint`.
pub(crate) fn cel_value(v: &Value) -> cel::Value {
    match v {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => cel::Value::Int(i),
            (None, Some(u)) => cel::Value::UInt(u),
            (None, None) => cel::Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => cel::Value::from(s.as_str()),
        Value::Array(items) => cel::Value::List(Arc::new(items.iter().map(cel_value).collect())),
        Value::Object(fields) => cel::Value::from(
            fields
                .iter()
                .map(|(k, v)| (k.as_str(), cel_value(v)))
                .collect::<std::collections::HashMap<_, _>>(),
        ),
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

// ---------------------------------------------------------------------------------------------
// set

#[derive(Deserialize)]
struct SetData {
    assign: serde_json::Map<String, Value>,
}

/// `set`: `{"assign": {"summary": "{{ title }}: {{ body }}", "count": "{{ count + 1 }}",
/// "done": true}}`. A string is a minijinja template over the state's fields; its output is the
/// value of a `string` field, and is read as JSON for fields of other types (an `append` field
/// takes the text itself as one item when it is not JSON). Anything else is
/// written as it is (and must have the field's type, which the loader checks). A template
/// reads the run's context as `context` (`{{ context.user_id }}`), as a condition does.
fn set(data: &Fields, schema: &Schema) -> Result<NodeImpl, Vec<DataError>> {
    let d: SetData = parse(data)?;
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::SemiStrict);
    let mut errors = Vec::new();
    let mut writes = Vec::new();
    let mut assigns = Vec::new();
    let mut context_paths = Vec::new();
    let mut reads_context = false;
    for (field, value) in &d.assign {
        let path = format!(".assign.{field}");
        let ty = schema.declared(field).map(|f| (f.ty, f.reducer));
        match value {
            Value::String(source) => {
                if let Err(e) = env.add_template_owned(field.clone(), source.clone()) {
                    errors.push(DataError::new(&path, format!("invalid template for `{field}`: {e}")));
                } else if let Ok(t) = env.get_template(field) {
                    reads_context |= template_reads_context(&t);
                    context_paths.extend(template_context_paths(&t, &path));
                }
                writes.push(StaticWrite {
                    field: field.clone(),
                    literal: None,
                    path,
                });
                assigns.push((field.clone(), None, ty));
            }
            literal => {
                writes.push(StaticWrite {
                    field: field.clone(),
                    literal: Some(literal.clone()),
                    path,
                });
                assigns.push((field.clone(), Some(literal.clone()), ty));
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let env = Arc::new(env);
    let run = move |state: &Fields, context: &Value| -> Result<Fields, BoxError> {
        let ctx = template_context(state, context);
        let mut out = Fields::new();
        for (field, literal, ty) in &assigns {
            let value = match literal {
                Some(v) => v.clone(),
                None => {
                    let text = env
                        .get_template(field)
                        .and_then(|t| t.render(ctx.clone()))
                        .map_err(|e| format!("template for `{field}` failed: {e}"))?;
                    match ty {
                        Some((FieldType::String, _)) | None => Value::String(text),
                        // An append field takes one item: JSON if it reads as JSON, else the text.
                        Some((_, Reduce::Append)) => serde_json::from_str(text.trim()).unwrap_or(Value::String(text)),
                        Some((ty, _)) => serde_json::from_str(text.trim())
                            .map_err(|_| format!("template for `{field}` gave `{text}`, which is not a {ty}"))?,
                    }
                }
            };
            out.insert(field.clone(), value);
        }
        Ok(out)
    };
    let run = Arc::new(run);
    let mut node = NodeImpl::with_run(Arc::new(move |state: Fields, context: Value| {
        let out = run(&state, &context);
        Box::pin(async move { out })
    }));
    node.writes = writes;
    node.context_paths = context_paths;
    node.reads_context = reads_context;
    Ok(node)
}

// ---------------------------------------------------------------------------------------------
// output

#[derive(Deserialize)]
struct OutputData {
    message: String,
    #[serde(default)]
    to: Option<String>,
    #[serde(default)]
    choices: Vec<ChoiceData>,
    #[serde(default)]
    pause: Option<bool>,
}

#[derive(Deserialize)]
struct ChoiceData {
    id: String,
    #[serde(default)]
    label: Option<String>,
}

/// `output`: `{"message": "Refund {{ amount }} to {{ customer }}?", "to": "transcript",
/// "choices": [{"id": "approve", "label": "Approve"}, {"id": "reject"}]}`. Emits the rendered
/// message (and writes it to the `to` field, when given). With choices, the run then pauses for
/// a person's choice (seed 003: the message is out and its write applied before the question is
/// asked) and follows the edges whose `sourceHandle` is the chosen id. Without choices,
/// `"pause": true` pauses the same way for an acknowledgement, then follows the plain edges.
fn output(data: &Fields, _: &Schema) -> Result<NodeImpl, Vec<DataError>> {
    let d: OutputData = parse(data)?;
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::SemiStrict);
    let mut errors = Vec::new();
    let (mut context_paths, mut reads_context) = (Vec::new(), false);
    if let Err(e) = env.add_template_owned("message", d.message.clone()) {
        errors.push(DataError::new(".message", format!("invalid template: {e}")));
    } else if let Ok(t) = env.get_template("message") {
        reads_context = template_reads_context(&t);
        context_paths = template_context_paths(&t, ".message");
    }
    let mut writes = Vec::new();
    if let Some(to) = &d.to {
        writes.push(StaticWrite {
            field: to.clone(),
            literal: Some(Value::String(String::new())),
            path: ".to".to_owned(),
        });
    }
    let mut handles: Vec<(String, String)> = Vec::new();
    for (i, c) in d.choices.iter().enumerate() {
        if handles.iter().any(|(h, _)| h == &c.id) {
            errors.push(DataError::new(
                format!(".choices[{i}].id"),
                format!("choice `{}` is declared twice", c.id),
            ));
        }
        handles.push((c.id.clone(), format!(".choices[{i}]")));
    }
    if d.pause == Some(false) && !d.choices.is_empty() {
        errors.push(DataError::new(
            ".pause",
            "an output with choices always pauses for the choice; remove `pause` or set it to true",
        ));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let message = Arc::new(Message {
        asks: !d.choices.is_empty() || d.pause == Some(true),
        env,
        to: d.to,
        choices: d
            .choices
            .iter()
            .map(|c| (c.id.clone(), c.label.clone().unwrap_or_else(|| c.id.clone())))
            .collect(),
    });
    let role = if handles.is_empty() {
        Role::Plain
    } else {
        let ids: Vec<String> = handles.iter().map(|(h, _)| h.clone()).collect();
        Role::Branch(Arc::new(Brancher {
            kind: "output",
            noun: "choice",
            handles,
            optional: None,
            choose: Box::new(move |_, _, choice| match choice {
                None | Some(Value::Null) => Ok(Choice::Pause),
                Some(Value::String(c)) if ids.contains(c) => Ok(Choice::Handle(c.clone())),
                Some(other) => Err(format!(
                    "the choice {other} is not one of {}",
                    ids.iter().map(|i| format!("`{i}`")).collect::<Vec<_>>().join(", ")
                )
                .into()),
            }),
        }))
    };
    Ok(NodeImpl {
        role,
        writes,
        message: Some(message),
        context_paths,
        reads_context,
        ..NodeImpl::noop()
    })
}
