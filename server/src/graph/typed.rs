//! Serving a typed graph: [`Serve`] turns a [`CompiledGraph<S, X>`] whose state (and run context
//! `X`) is serde and schemars into an `Arc<dyn ServedGraph>` on the server's checkpointer, with
//! serde's [`Codec`]: JSON fields decoded into the state's update, and a run's `context` object
//! into an `X`, with the path of a bad field kept.

use super::bridge::Bridge;
use super::codec::{all_optional, type_name, Codec};
use super::{GraphError, Schemas, ServedGraph};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};
use std::marker::PhantomData;
use std::sync::Arc;
use weir_runtime::checkpoint::Checkpointer;
use weir_runtime::store::Store;
use weir_runtime::{ChannelKind, CompiledGraph, ContextValue, FieldInfo, RunContext, State};

/// A graph the server can serve, on the checkpointer (and store) the server gives it.
pub trait Serve {
    /// The graph as the server serves it, its threads kept by `saver`, its nodes' long-term
    /// memory (`ctx.store()`) in `store` when given.
    fn into_served_with(self, saver: Arc<dyn Checkpointer>, store: Option<Arc<dyn Store>>) -> Arc<dyn ServedGraph>;

    /// The graph as the server serves it, its threads kept by `saver`, with no store.
    fn into_served(self, saver: Arc<dyn Checkpointer>) -> Arc<dyn ServedGraph>
    where
        Self: Sized,
    {
        self.into_served_with(saver, None)
    }
}

impl<S, X> Serve for CompiledGraph<S, X>
where
    S: State + Serialize + DeserializeOwned + schemars::JsonSchema,
    X: ContextValue + DeserializeOwned + schemars::JsonSchema,
{
    fn into_served_with(self, saver: Arc<dyn Checkpointer>, store: Option<Arc<dyn Store>>) -> Arc<dyn ServedGraph> {
        let mut graph = self.with_checkpointer_arc(saver.clone());
        if let Some(store) = store {
            graph = graph.with_store(store);
        }
        // The bridge runs the graph untyped; its codec decodes each run's context into an `X`.
        let graph = graph.erase_context();
        Arc::new(Bridge::new(graph, saver, SerdeCodec::<S, X>(PhantomData)))
    }
}

/// serde's codec for a derived state: an update is `{field: Writes}`, one `One` per field
/// given; a run's context is an `X` (`()`: the graph declares none, and takes none).
pub(crate) struct SerdeCodec<S, X = ()>(PhantomData<fn() -> (S, X)>);

/// Whether `X` is `()`: a graph that declares no context.
fn declares_none<X: 'static>() -> bool {
    std::any::TypeId::of::<X>() == std::any::TypeId::of::<()>()
}

/// A run's `context` object as the graph's context type `X` (none for `()`), with the path of
/// a field that does not fit in the error (`context.user_id: …`).
pub(crate) fn decode_context<X>(context: &Map<String, Value>) -> Result<RunContext, GraphError>
where
    X: ContextValue + DeserializeOwned,
{
    if declares_none::<X>() {
        return Ok(RunContext::default());
    }
    let value: X = serde_path_to_error::deserialize(Value::Object(context.clone())).map_err(|e| {
        let at = e.path().to_string();
        let at = if at == "." { String::new() } else { format!(".{at}") };
        GraphError::Invalid(format!("context{at}: {}", e.into_inner()))
    })?;
    Ok(RunContext::new(value).erase())
}

/// The context type's schema (`null` for `()`, a graph that declares none).
pub(crate) fn context_schema<X: schemars::JsonSchema + 'static>() -> Value {
    if declares_none::<X>() {
        Value::Null
    } else {
        serde_json::to_value(schemars::schema_for!(X)).unwrap_or(Value::Null)
    }
}

impl<S, X> Codec<S> for SerdeCodec<S, X>
where
    S: State + Serialize + DeserializeOwned + schemars::JsonSchema,
    X: ContextValue + DeserializeOwned + schemars::JsonSchema,
{
    fn context(&self, context: &Map<String, Value>) -> Result<RunContext, GraphError> {
        decode_context::<X>(context)
    }

    fn decode(&self, json: &Value, path: &str) -> Result<S::Update, GraphError> {
        let Value::Object(given) = json else {
            return Err(GraphError::Invalid(format!(
                "{path}: expected an object of the state's fields, not {}",
                type_name(json)
            )));
        };
        let names: Vec<&str> = S::FIELDS.iter().map(FieldInfo::name).collect();
        if let Some(unknown) = given.keys().find(|k| !names.contains(&k.as_str())) {
            return Err(GraphError::Invalid(format!(
                "{path}.{unknown}: unknown field; the state's fields are {}",
                names.join(", ")
            )));
        }
        let mut writes = Map::with_capacity(names.len());
        for field in S::FIELDS {
            let w = match given.get(field.name()) {
                // A reducer's write is folded in (`Reduce`), as a node's update is.
                Some(v) if field.kind == ChannelKind::Reducer => tagged("One", tagged("Reduce", v.clone())),
                Some(v) => tagged("One", v.clone()),
                None => Value::String("None".to_owned()),
            };
            writes.insert(field.name().to_owned(), w);
        }
        serde_path_to_error::deserialize(Value::Object(writes)).map_err(|e| {
            // The field, the wrapping above (`One`, `Reduce`), then the path inside the value.
            let at = e.path().to_string();
            let (field, inside) = at.split_once('.').unwrap_or((&at, ""));
            let inside = inside.strip_prefix("One").unwrap_or(inside);
            let inside = inside.strip_prefix(".Reduce").unwrap_or(inside);
            GraphError::Invalid(format!("{path}.{field}{inside}: {}", e.into_inner()))
        })
    }

    fn values(&self, state: &S) -> Value {
        serde_json::to_value(state).unwrap_or(Value::Null)
    }

    fn update(&self, update: &S::Update) -> Value {
        weir_runtime::writes_json(S::FIELDS, update)
    }

    fn schemas(&self) -> Schemas {
        let state = serde_json::to_value(schemars::schema_for!(S)).unwrap_or(Value::Null);
        Schemas {
            input: all_optional(&state),
            output: state.clone(),
            state,
            config: Value::Null,
            context: context_schema::<X>(),
        }
    }
}

/// `{tag: value}`: a serde enum variant.
fn tagged(tag: &str, value: Value) -> Value {
    Value::Object(Map::from_iter([(tag.to_owned(), value)]))
}
