//! Serving a JSON flow: [`Serve`] for a loaded [`Flow`], its codec checking input against the
//! flow's declared fields (the flow's own check, whose message names the field) and writing a
//! node's update as `{field: value}` with weir's hidden fields left out.
//!
//! A flow whose `output` nodes pause for a person must be loaded with the saver it is served on
//! (`LoadOptions { checkpointer: Some(saver.clone()), .. }`): the node learns at load time whether
//! it can pause, and without a checkpointer fails the run instead.

use super::bridge::Bridge;
use super::codec::{all_optional, Codec};
use super::typed::Serve;
use super::{GraphError, Schemas, ServedGraph};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use weir_flow::{Flow, FlowState, FlowUpdate};
use weir_runtime::checkpoint::Checkpointer;
use weir_runtime::store::Store;
use weir_runtime::RunContext;

impl Serve for Flow {
    fn into_served_with(self, saver: Arc<dyn Checkpointer>, store: Option<Arc<dyn Store>>) -> Arc<dyn ServedGraph> {
        let mut graph = self.graph().with_checkpointer_arc(saver.clone());
        if let Some(store) = store {
            graph = graph.with_store(store);
        }
        let fields = self
            .schema()
            .field_names()
            .into_iter()
            .filter_map(|n| Some((self.schema().index(n)?, n.to_owned())))
            .collect();
        Arc::new(Bridge::new(graph, saver, FlowCodec { flow: self, fields }))
    }
}

/// A flow's codec: its input check, and its declared fields by slot.
struct FlowCodec {
    flow: Flow,
    /// `(slot, name)` of each declared field.
    fields: Vec<(usize, String)>,
}

impl Codec<FlowState> for FlowCodec {
    fn decode(&self, json: &Value, path: &str) -> Result<FlowUpdate, GraphError> {
        self.flow
            .input(json)
            .map_err(|e| GraphError::Invalid(format!("{path}: {e}")))
    }

    /// A flow has no typed context: its conditions and templates read the run's `context`
    /// object as `context` (`context.plan == 'pro'`, `{{ context.user_id }}`), and the code its
    /// nodes call as JSON, `ctx.context::<serde_json::Value>()`.
    fn context(&self, context: &Map<String, Value>) -> Result<RunContext, GraphError> {
        Ok(RunContext::new(Value::Object(context.clone())).erase())
    }

    /// The flow's declared fields (its state type has none of its own).
    fn field_names(&self) -> Vec<String> {
        self.fields.iter().map(|(_, name)| name.clone()).collect()
    }

    fn values(&self, state: &FlowState) -> Value {
        Value::Object(state.to_json())
    }

    /// From the update's serde form, `{"writes": [[slot, value], …]}`: the declared fields'
    /// writes, a field written twice as the list of its writes.
    fn update(&self, update: &FlowUpdate) -> Value {
        let serialized = serde_json::to_value(update).unwrap_or(Value::Null);
        let writes = serialized
            .get("writes")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut by_field: Vec<(&str, Vec<Value>)> = Vec::new();
        for w in writes {
            let (Some(slot), Some(value)) = (w.get(0).and_then(Value::as_u64), w.get(1)) else {
                continue;
            };
            let Some((_, name)) = self.fields.iter().find(|(s, _)| *s as u64 == slot) else {
                continue;
            };
            match by_field.iter_mut().find(|(n, _)| *n == name.as_str()) {
                Some((_, values)) => values.push(value.clone()),
                None => by_field.push((name, vec![value.clone()])),
            }
        }
        let out: Map<String, Value> = by_field
            .into_iter()
            .map(|(n, mut v)| (n.to_owned(), if v.len() == 1 { v.remove(0) } else { Value::Array(v) }))
            .collect();
        Value::Object(out)
    }

    fn schemas(&self) -> Schemas {
        let schema = self.flow.schema();
        let properties: Map<String, Value> = self
            .fields
            .iter()
            .map(|(_, n)| (n.clone(), schema.field_json_schema(n).unwrap_or_else(|| json!({}))))
            .collect();
        let state = json!({"title": "flow_state", "type": "object", "properties": properties});
        Schemas {
            input: all_optional(&state),
            output: state.clone(),
            state,
            config: Value::Null,
            context: self.flow.context_schema().cloned().unwrap_or(Value::Null),
        }
    }
}
