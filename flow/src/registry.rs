//! The node-type registry: a type string, as a flow's node names it, to a factory that builds
//! the node from its `data`.

use crate::nodes;
use crate::state::Schema;
use futures::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use weir_runtime::BoxError;

/// A JSON object: a node's view of the state, and the writes it returns (field → value).
pub type Fields = Map<String, Value>;

pub(crate) type RunFn = Arc<dyn Fn(Fields) -> BoxFuture<'static, Result<Fields, BoxError>> + Send + Sync>;

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
    pub(crate) message: Option<Arc<nodes::Message>>,
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
        Self::with_run(Arc::new(move |state: Fields| {
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
        Self::with_run(Arc::new(move |state: Fields| Box::pin(f(state))))
    }

    /// A node that writes nothing.
    pub fn noop() -> Self {
        Self {
            run: None,
            role: Role::Plain,
            writes: Vec::new(),
            message: None,
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
    Branch(Arc<nodes::Brancher>),
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

type Factory = Arc<dyn Fn(&Fields, &Schema) -> Result<NodeImpl, Vec<DataError>> + Send + Sync>;

/// Node types by name. [`Registry::new`] has the built-in types; register your own with
/// [`register`](Registry::register).
///
/// # Examples
///
/// ```
/// use weir_flow::{NodeImpl, Registry};
///
/// #[derive(serde::Deserialize)]
/// struct Greet { field: String }
///
/// let mut registry = Registry::new();
/// registry.register("greet", |data: Greet| {
///     Ok(NodeImpl::sync(move |_state| {
///         Ok([(data.field.clone(), "hello".into())].into_iter().collect())
///     }))
/// });
/// assert!(registry.types().contains(&"greet"));
/// ```
#[derive(Clone)]
pub struct Registry {
    factories: BTreeMap<String, Factory>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry").field("types", &self.types()).finish()
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    /// The built-in types: `start`, `end`, `condition`, `set`, `output` (and `note`, which the
    /// loader skips).
    pub fn new() -> Self {
        let mut r = Self {
            factories: BTreeMap::new(),
        };
        nodes::register_builtins(&mut r);
        r
    }

    /// Registers the type `kind`: `factory` builds a node from its `data`, deserialized as `D`
    /// (a `data` that does not deserialize is a load error naming the node). Replaces an earlier
    /// registration of the same name.
    pub fn register<D, F>(&mut self, kind: &str, factory: F) -> &mut Self
    where
        D: DeserializeOwned,
        F: Fn(D) -> Result<NodeImpl, DataError> + Send + Sync + 'static,
    {
        self.register_raw(kind, move |data: &Fields, _: &Schema| {
            let d: D = serde_json::from_value(Value::Object(data.clone()))
                .map_err(|e| vec![DataError::new("", format!("invalid `data`: {e}"))])?;
            factory(d).map_err(|e| vec![e])
        })
    }

    pub(crate) fn register_raw<F>(&mut self, kind: &str, factory: F) -> &mut Self
    where
        F: Fn(&Fields, &Schema) -> Result<NodeImpl, Vec<DataError>> + Send + Sync + 'static,
    {
        self.factories.insert(kind.to_owned(), Arc::new(factory));
        self
    }

    /// The registered type names, sorted.
    pub fn types(&self) -> Vec<&str> {
        let mut t: Vec<&str> = self.factories.keys().map(String::as_str).collect();
        t.push("note");
        t.sort_unstable();
        t
    }

    pub(crate) fn build(&self, kind: &str, data: &Fields, schema: &Schema) -> Option<Result<NodeImpl, Vec<DataError>>> {
        self.factories.get(kind).map(|f| f(data, schema))
    }
}
