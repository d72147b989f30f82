//! Tools a model may call: the [`Tool`] trait and its [`ToolSpec`] (name, description, JSON
//! Schema of the arguments), [`tool_fn`] to make one from a typed async fn, the [`ToolNode`]
//! that runs a model's tool calls, and the [`tools_condition`] route.

mod node;

pub use node::{tools_condition, ToolNode, ToolsRoute};

use crate::message::Content;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use weir_runtime::{BoxError, Context};

/// What a model is told about a tool: OpenAI's `function` object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// A JSON Schema of its arguments (an object).
    pub parameters: Value,
}

/// A tool: a spec for the model, and an async call with JSON arguments. Implement it by hand
/// for a tool that needs the node's [`Context`] (to ask a person with
/// [`Context::interrupt`]), or make one with [`tool_fn`].
pub trait Tool: Send + Sync + 'static {
    /// The name, description and argument schema.
    fn spec(&self) -> &ToolSpec;

    /// Runs the tool on `args`, inside the node that runs it.
    ///
    /// # Errors
    /// [`ToolError::invalid_args`] when `args` do not fit; [`ToolError::failed`] for the tool's own
    /// error (an [`Interrupt`](weir_runtime::Interrupt) passed this way pauses the run).
    fn call<'a>(&'a self, args: Map<String, Value>, ctx: &'a Context) -> BoxFuture<'a, Result<Content, ToolError>>;
}

/// Why a tool call failed.
#[derive(Debug)]
pub struct ToolError {
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    InvalidArgs(String),
    Failed(BoxError),
    Duplicate(String),
}

impl ToolError {
    /// The arguments do not fit the tool's schema.
    pub fn invalid_args(why: impl fmt::Display) -> Self {
        Self {
            kind: Kind::InvalidArgs(why.to_string()),
        }
    }

    /// The tool ran and failed.
    pub fn failed(e: impl Into<BoxError>) -> Self {
        Self {
            kind: Kind::Failed(e.into()),
        }
    }

    pub(crate) fn duplicate(name: &str) -> Self {
        Self {
            kind: Kind::Duplicate(name.to_owned()),
        }
    }

    /// Whether the arguments did not fit.
    pub fn is_invalid_args(&self) -> bool {
        matches!(self.kind, Kind::InvalidArgs(_))
    }

    /// Whether this is an [`Interrupt`](weir_runtime::Interrupt) raised inside the tool, which
    /// must reach the runtime to pause the run.
    pub fn is_interrupt(&self) -> bool {
        matches!(&self.kind, Kind::Failed(e) if e.is::<weir_runtime::Interrupt>())
    }

    /// The error as the node returns it: the tool's own error unchanged (so an interrupt stays
    /// an interrupt), or this.
    pub fn into_box(self) -> BoxError {
        match self.kind {
            Kind::Failed(e) => e,
            _ => Box::new(self),
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::InvalidArgs(e) => write!(f, "invalid arguments: {e}"),
            Kind::Failed(e) => write!(f, "{e}"),
            Kind::Duplicate(n) => write!(f, "two tools are named `{n}`"),
        }
    }
}

impl std::error::Error for ToolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            Kind::Failed(e) => Some(&**e),
            _ => None,
        }
    }
}

type CallFn = dyn Fn(Map<String, Value>) -> BoxFuture<'static, Result<Content, ToolError>> + Send + Sync;

/// A tool made by [`tool_fn`] from a typed async fn.
pub struct FnTool {
    spec: ToolSpec,
    call: Box<CallFn>,
}

impl fmt::Debug for FnTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnTool")
            .field("name", &self.spec.name)
            .finish_non_exhaustive()
    }
}

impl Tool for FnTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn call<'a>(&'a self, args: Map<String, Value>, _: &'a Context) -> BoxFuture<'a, Result<Content, ToolError>> {
        (self.call)(args)
    }
}

/// The JSON Schema of `A`, as a tool's `parameters`: an object schema without `$schema` and
/// `title`.
pub fn parameters_of<A: JsonSchema>() -> Value {
    let mut v =
        serde_json::to_value(schemars::schema_for!(A)).unwrap_or_else(|_| serde_json::json!({"type": "object"}));
    if let Value::Object(m) = &mut v {
        m.remove("$schema");
        m.remove("title");
    }
    v
}

/// A tool from an async fn of typed arguments: `A`'s JSON Schema (schemars) is the tool's
/// parameters; the model's arguments are deserialized into `A` (a mismatch is
/// [`ToolError::invalid_args`]); a string result is the tool message's text, any other is its
/// JSON.
///
/// ```
/// use weir_agent::tool::{tool_fn, Tool};
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Add { a: i64, b: i64 }
/// let add = tool_fn("add", "Adds two numbers.", |x: Add| async move { Ok::<_, std::io::Error>(x.a + x.b) });
/// assert_eq!(add.spec().parameters["properties"]["a"]["type"], "integer");
/// ```
pub fn tool_fn<A, F, Fut, R, E>(name: impl Into<String>, description: impl Into<String>, f: F) -> Arc<dyn Tool>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, E>> + Send + 'static,
    R: Serialize,
    E: Into<BoxError>,
{
    let spec = ToolSpec {
        name: name.into(),
        description: description.into(),
        parameters: parameters_of::<A>(),
    };
    let f = Arc::new(f);
    let call = move |args: Map<String, Value>| -> BoxFuture<'static, Result<Content, ToolError>> {
        let f = f.clone();
        Box::pin(async move {
            let typed: A = serde_json::from_value(Value::Object(args)).map_err(ToolError::invalid_args)?;
            let out = f(typed).await.map_err(ToolError::failed)?;
            match serde_json::to_value(out).map_err(ToolError::failed)? {
                Value::String(s) => Ok(Content::Text(s)),
                other => Ok(Content::Text(other.to_string())),
            }
        })
    };
    Arc::new(FnTool {
        spec,
        call: Box::new(call),
    })
}
