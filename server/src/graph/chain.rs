//! The `events` stream mode: LangChain's `astream_events` v2 events, built from weir's task
//! events as LangGraph's server sends them. The graph is one chain (named after the graph id)
//! with an `on_chain_start` carrying the input and an `on_chain_end` carrying the final values;
//! each task of the root graph is a chain of its own (named after its node, tagged
//! `graph:step:<n>`, its parent the run) with `on_chain_start` (the state it read),
//! `on_chain_stream` (its update as the chunk) and `on_chain_end` (the update as the output).
//! Each event carries the run's metadata; a task's adds LangGraph's `langgraph_step`,
//! `langgraph_node`, `langgraph_triggers`, `langgraph_path` and `langgraph_checkpoint_ns`.

use super::events::task_uuid;
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// One run's `events`: what it needs to name and link each chain.
pub(crate) struct Chains {
    /// The graph's chain name (its graph id, `LangGraph` without one).
    name: String,
    run_id: String,
    metadata: Map<String, Value>,
    /// The open task chains by node: `(run id, metadata, tags, input)`.
    open: HashMap<String, (String, Value, Value, Value)>,
}

impl Chains {
    /// The chains of run `run_id` on `thread_id`, with the run's metadata (its `graph_id` names
    /// the graph's chain).
    pub(crate) fn new(run_id: &str, thread_id: &str, metadata: &Map<String, Value>) -> Self {
        let mut metadata = metadata.clone();
        metadata.insert("run_id".into(), json!(run_id));
        metadata.insert("thread_id".into(), json!(thread_id));
        let name = metadata
            .get("graph_id")
            .and_then(Value::as_str)
            .unwrap_or("LangGraph")
            .to_owned();
        Self {
            name,
            run_id: run_id.to_owned(),
            metadata,
            open: HashMap::new(),
        }
    }

    /// The graph's `on_chain_start` with the run's input.
    pub(crate) fn start(&self, input: &Value) -> Value {
        json!({
            "event": "on_chain_start", "data": {"input": input}, "name": self.name, "tags": [],
            "run_id": self.run_id, "metadata": self.metadata, "parent_ids": [],
        })
    }

    /// The graph's `on_chain_end` with the final values.
    pub(crate) fn end(&self, output: &Value) -> Value {
        json!({
            "event": "on_chain_end", "data": {"output": output}, "run_id": self.run_id, "name": self.name,
            "tags": [], "metadata": self.metadata, "parent_ids": [],
        })
    }

    /// A task's `on_chain_start`: node `node` at `step` (task `id`, on `thread_id`) read `input`.
    pub(crate) fn task_start(&mut self, (step, id, node): (i64, &str, &str), thread_id: &str, input: &Value) -> Value {
        let segment = format!("{node}:{id}:{step}");
        let task_run = task_uuid(&self.run_id, &segment);
        let mut metadata = self.metadata.clone();
        metadata.insert("langgraph_step".into(), json!(step));
        metadata.insert("langgraph_node".into(), json!(node));
        metadata.insert("langgraph_triggers".into(), json!([format!("branch:to:{node}")]));
        metadata.insert("langgraph_path".into(), json!(["__pregel_pull", node]));
        metadata.insert(
            "langgraph_checkpoint_ns".into(),
            json!(format!("{node}:{}", task_uuid(thread_id, &segment))),
        );
        let (metadata, tags) = (Value::Object(metadata), json!([format!("graph:step:{step}")]));
        let event = self.task_event(
            "on_chain_start",
            node,
            (&task_run, &metadata, &tags),
            json!({"input": input}),
        );
        self.open
            .insert(node.to_owned(), (task_run, metadata, tags, input.clone()));
        event
    }

    /// A task's update: its `on_chain_stream` and `on_chain_end` (none for a task not open).
    pub(crate) fn task_update(&mut self, node: &str, update: &Value) -> Vec<Value> {
        let Some((run, metadata, tags, input)) = self.open.remove(node) else {
            return Vec::new();
        };
        let ids = (run.as_str(), &metadata, &tags);
        vec![
            self.task_event("on_chain_stream", node, ids, json!({"chunk": update})),
            self.task_event("on_chain_end", node, ids, json!({"output": update, "input": input})),
        ]
    }

    /// A task's end without an update (it failed or wrote nothing): its `on_chain_end`.
    pub(crate) fn task_end(&mut self, node: &str) -> Option<Value> {
        let (run, metadata, tags, input) = self.open.remove(node)?;
        let data = json!({"output": null, "input": input});
        Some(self.task_event("on_chain_end", node, (&run, &metadata, &tags), data))
    }

    fn task_event(&self, event: &str, node: &str, (run, metadata, tags): (&str, &Value, &Value), data: Value) -> Value {
        json!({
            "event": event, "data": data, "run_id": run, "name": node, "tags": tags,
            "metadata": metadata, "parent_ids": [self.run_id],
        })
    }
}
