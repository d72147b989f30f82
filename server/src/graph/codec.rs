//! How a served graph's state crosses JSON: the [`Codec`] a bridge is built with decodes the
//! client's input and state edits into the state's update, and encodes states and updates back.
//! A typed graph's codec is serde's ([`typed`](super::typed)), a flow's its declared fields
//! ([`flow`](super::flow)).

use super::{GraphError, Schemas};
use serde_json::{Map, Value};
use weir_runtime::{RunContext, State};

/// The JSON side of a graph's state.
pub trait Codec<S: State>: Send + Sync + 'static {
    /// `json` (an object of fields, found at `path` of the request: `input`, `values`,
    /// `command.update`) as the state's update; [`GraphError::Invalid`] names the field at fault
    /// (`input.topic: invalid type: …`).
    fn decode(&self, json: &Value, path: &str) -> Result<S::Update, GraphError>;

    /// The whole state, `{field: value}`.
    fn values(&self, state: &S) -> Value;

    /// An update, `{field: value}` for the fields it writes (a LangGraph `updates` payload).
    fn update(&self, update: &S::Update) -> Value;

    /// The state's JSON Schemas.
    fn schemas(&self) -> Schemas;

    /// The state's field names, in order (what LangGraph's `EmptyInputError` lists). By default
    /// the state type's own.
    fn field_names(&self) -> Vec<String> {
        S::FIELDS.iter().map(|f| f.name().to_owned()).collect()
    }

    /// A run's `context` object (LangGraph API 0.4+ `runs.create` body, over the assistant's)
    /// as the run context the graph's nodes read: [`GraphError::Invalid`] names the field at
    /// fault (`context.user_id: missing field`). By default the graph takes no context.
    fn context(&self, _context: &Map<String, Value>) -> Result<RunContext, GraphError> {
        Ok(RunContext::default())
    }
}

/// `value`'s JSON type name, for messages.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The input schema LangGraph gives a graph: the state's, every property optional.
pub(crate) fn all_optional(state: &Value) -> Value {
    let mut input = state.clone();
    if let Some(o) = input.as_object_mut() {
        o.remove("required");
    }
    input
}
