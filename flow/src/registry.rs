//! The node-type registry: a type string, as a flow's node names it, to a factory that builds
//! the node from its `data`.

use crate::builtins;
use crate::node::{DataError, Factory, Fields, NodeImpl};
use crate::state::Schema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

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
        for (kind, factory) in builtins::builtins() {
            r.factories.insert(kind.to_owned(), factory);
        }
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
