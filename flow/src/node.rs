//! What a flow node is once its type's factory built it: the function it runs, the part it
//! plays in the wiring (plain, start, end, a branch), what it is known to write, and why its
//! `data` may be refused. The types below the registry and the built-ins; they import neither.

use crate::state::Schema;
use futures::future::BoxFuture;
use serde_json::{Map, Value};
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use weir_runtime::BoxError;

/// A JSON object: a node's view of the state, and the writes it returns (field → value).
pub type Fields = Map<String, Value>;

/// A node's function: the state's fields, and the run's context (`null` for a node that reads
/// none, see [`NodeImpl::context_paths`]).
pub(crate) type RunFn = Arc<dyn Fn(Fields, Value) -> BoxFuture<'static, Result<Fields, BoxError>> + Send + Sync>;

/// A path into the run's context that a node reads (`context.user.id` is `["user", "id"]`),
/// with where below the node's `data` it is read (`.branches[0].when`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ContextPath {
    pub(crate) path: Vec<String>,
    pub(crate) at: String,
}

impl ContextPath {
    /// `context.user.id`.
    pub(crate) fn dotted(&self) -> String {
        std::iter::once("context")
            .chain(self.path.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(".")
    }

    /// Why `context` does not have this path: which key is missing where, and the keys there are.
    pub(crate) fn missing_in(&self, context: &Value) -> Option<String> {
        let mut here = context;
        for (depth, key) in self.path.iter().enumerate() {
            let at = if depth == 0 {
                "the run's context".to_owned()
            } else {
                format!("`context.{}`", self.path[..depth].join("."))
            };
            let Value::Object(fields) = here else {
                return Some(format!("{at} is {}, not an object with a key `{key}`", kind_of(here)));
            };
            match fields.get(key) {
                Some(v) => here = v,
                None if fields.is_empty() && depth == 0 => {
                    return Some(format!("the run's context has no key `{key}` (the run has no context)"))
                }
                None => {
                    let keys: Vec<String> = fields.keys().map(|k| format!("`{k}`")).collect();
                    return Some(format!("{at} has no key `{key}`; its keys are {}", keys.join(", ")));
                }
            }
        }
        None
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// What a node does when it runs, built by its type's factory.
///
/// A node reads the state's fields (those that hold a value) as a JSON object and returns the
/// fields it writes. What runs next is decided by the flow's edges; the built-in `condition` and
/// `output` types also choose among their out-edges.
pub struct NodeImpl {
    pub(crate) run: Option<RunFn>,
    pub(crate) role: Role,
    pub(crate) writes: Vec<StaticWrite>,
    /// An `output` node's message.
    pub(crate) message: Option<Arc<Message>>,
    /// The paths into the run's context that the node's expressions and templates read: each
    /// must be in the context, or the node fails naming it. The node gets the context only
    /// when it reads it (`reads_context`).
    pub(crate) context_paths: Vec<ContextPath>,
    pub(crate) reads_context: bool,
}

impl fmt::Debug for NodeImpl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeImpl")
            .field("role", &self.role)
            .field("writes", &self.writes)
            .finish_non_exhaustive()
    }
}

impl NodeImpl {
    /// A node that writes what `f` returns.
    ///
    /// # Examples
    ///
    /// ```
    /// use weir_flow::NodeImpl;
    /// let shout = NodeImpl::sync(|state| {
    ///     let text = state["text"].as_str().unwrap_or_default().to_uppercase();
    ///     Ok([("text".to_owned(), text.into())].into_iter().collect())
    /// });
    /// # let _ = shout;
    /// ```
    pub fn sync<F>(f: F) -> Self
    where
        F: Fn(&Fields) -> Result<Fields, BoxError> + Send + Sync + 'static,
    {
        let f = Arc::new(f);
        Self::with_run(Arc::new(move |state: Fields, _| {
            let out = f(&state);
            Box::pin(async move { out })
        }))
    }

    /// A node that writes what the future `f` returns resolves to (a model call, an HTTP request).
    pub fn future<F, Fut>(f: F) -> Self
    where
        F: Fn(Fields) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Fields, BoxError>> + Send + 'static,
    {
        Self::with_run(Arc::new(move |state: Fields, _| Box::pin(f(state))))
    }

    /// A node that writes nothing.
    pub fn noop() -> Self {
        Self {
            run: None,
            role: Role::Plain,
            writes: Vec::new(),
            message: None,
            context_paths: Vec::new(),
            reads_context: false,
        }
    }

    /// Declares the fields the node writes: the loader checks they exist, and two nodes that can
    /// run in the same step must not both write a `last` field.
    pub fn writes<'a>(mut self, fields: impl IntoIterator<Item = &'a str>) -> Self {
        self.writes.extend(fields.into_iter().map(|f| StaticWrite {
            field: f.to_owned(),
            literal: None,
            path: String::new(),
        }));
        self
    }

    pub(crate) fn with_run(run: RunFn) -> Self {
        Self {
            run: Some(run),
            role: Role::Plain,
            writes: Vec::new(),
            message: None,
            context_paths: Vec::new(),
            reads_context: false,
        }
    }
}

/// A field a node writes, known when it is loaded: for the type and co-running write checks.
#[derive(Debug, Clone)]
pub(crate) struct StaticWrite {
    pub(crate) field: String,
    /// The value, when it is a literal known at load time.
    pub(crate) literal: Option<Value>,
    /// Where, below the node's `data` (`.assign.count`), empty for the whole node.
    pub(crate) path: String,
}

/// What part a node plays in the wiring.
#[derive(Clone)]
pub(crate) enum Role {
    Plain,
    Start,
    End,
    /// Chooses one of its handles after it runs.
    Branch(Arc<Brancher>),
}

impl fmt::Debug for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Plain => "Plain",
            Self::Start => "Start",
            Self::End => "End",
            Self::Branch(_) => "Branch",
        })
    }
}

/// Why a node's `data` was refused: a message, and where below `data` (`.branches[1].when`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataError {
    pub(crate) path: String,
    pub(crate) message: String,
}

impl DataError {
    /// An error about the value at `path` below the node's `data` (`""` for `data` itself,
    /// `.model` for a key).
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl From<String> for DataError {
    fn from(message: String) -> Self {
        Self::new("", message)
    }
}

impl From<&str> for DataError {
    fn from(message: &str) -> Self {
        Self::new("", message)
    }
}

/// What builds a node of one type from its `data`.
pub(crate) type Factory = Arc<dyn Fn(&Fields, &Schema) -> Result<NodeImpl, Vec<DataError>> + Send + Sync>;

/// What a branching node chose after it ran.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Choice {
    /// Follow the edges of this handle.
    Handle(String),
    /// Wait for a person to pick one of the choices.
    Pause,
}

/// The state's fields, the run's context (`null` when the node reads none), and a person's choice.
type ChooseFn = dyn Fn(&Fields, &Value, Option<&Value>) -> Result<Choice, BoxError> + Send + Sync;

/// How a `condition` or `output` node picks among its out-edges.
pub(crate) struct Brancher {
    /// `condition` or `output`, for messages.
    pub(crate) kind: &'static str,
    /// What a handle is called in messages: `branch` or `choice`.
    pub(crate) noun: &'static str,
    /// Each handle, with the path of its declaration below `data`.
    pub(crate) handles: Vec<(String, String)>,
    /// The handle taken when no other is (`else`), which the data need not declare; like the
    /// others it needs an edge.
    pub(crate) optional: Option<String>,
    /// Chooses from the state and the run's context (and, for an output node, the person's choice).
    pub(crate) choose: Box<ChooseFn>,
}

impl fmt::Debug for Brancher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Brancher")
            .field("kind", &self.kind)
            .field("handles", &self.handles)
            .finish_non_exhaustive()
    }
}

/// An `output` node's message: a template, the field it is also written to, the choices
/// offered with it, and whether the run pauses after it.
pub(crate) struct Message {
    pub(crate) env: minijinja::Environment<'static>,
    pub(crate) to: Option<String>,
    /// `(id, label)`.
    pub(crate) choices: Vec<(String, String)>,
    /// Whether the run pauses once the message is out, for a choice or an acknowledgement.
    pub(crate) asks: bool,
}

/// The suffix of the hidden node that asks a pausing `output` node's question, after the
/// output ran (seed 003's "fake output" node): `<id>#ask`. The loader refuses node ids that
/// end with it, so it never names a node of the flow.
pub(crate) const ASK_SUFFIX: &str = "#ask";

/// The flow node a runtime node stands for: a pausing output's asking node stands for the output.
pub(crate) fn flow_node(runtime_node: &str) -> &str {
    runtime_node.strip_suffix(ASK_SUFFIX).unwrap_or(runtime_node)
}

impl fmt::Debug for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Message")
            .field("to", &self.to)
            .field("choices", &self.choices)
            .field("asks", &self.asks)
            .finish_non_exhaustive()
    }
}

impl Message {
    pub(crate) fn render(&self, state: &Fields, context: &Value) -> Result<String, BoxError> {
        let ctx = template_context(state, context);
        Ok(self
            .env
            .get_template("message")
            .and_then(|t| t.render(ctx))
            .map_err(|e| format!("message template failed: {e}"))?)
    }
}

/// What a template sees: every field that holds a value by name and, in a template that reads
/// the run's context (`context` is not `null`), the context as `context` and the fields also
/// as `state` (so that a field named `context` is read as `state.context`).
pub(crate) fn template_context(state: &Fields, context: &Value) -> minijinja::Value {
    if context.is_null() {
        return minijinja::Value::from(minijinja::value::Serde(state));
    }
    let mut all = state.clone();
    all.entry("state").or_insert_with(|| Value::Object(state.clone()));
    all.insert("context".to_owned(), context.clone());
    minijinja::Value::from(minijinja::value::Serde(all))
}

/// The paths into the run's context a template reads (`{{ context.user.id }}`), for `at`.
pub(crate) fn template_context_paths(template: &minijinja::Template<'_, '_>, at: &str) -> Vec<ContextPath> {
    let mut paths: Vec<ContextPath> = template
        .undeclared_variables(true)
        .into_iter()
        .filter_map(|v| {
            let rest = v.strip_prefix("context.")?;
            Some(ContextPath {
                path: rest.split('.').map(str::to_owned).collect(),
                at: at.to_owned(),
            })
        })
        .collect();
    paths.sort_by(|a, b| a.path.cmp(&b.path));
    paths
}

/// Whether a template reads the run's context at all.
pub(crate) fn template_reads_context(template: &minijinja::Template<'_, '_>) -> bool {
    template.undeclared_variables(false).contains("context")
}
