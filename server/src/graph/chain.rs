//! The `events` stream mode: LangChain's `astream_events` v2 events, built from weir's task
//! events as LangGraph's server sends them. The graph is one chain (named after the graph id)
//! with an `on_chain_start` carrying the input and an `on_chain_end` carrying the final values;
//! each task is a chain of its own (named after its node, tagged `graph:step:<n>`, its parent
//! the run) with `on_chain_start` (the state it read), `on_chain_stream` (its update as the
//! chunk) and `on_chain_end` (the update as the output). A subgraph's tasks are chains too,
//! children of the chain of the task that runs the subgraph (LangGraph's: the subgraph is that
//! node's runnable), so `parent_ids` lists the run, then each enclosing task's chain.
//! Each event carries the run's metadata; a task's adds LangGraph's `langgraph_step`,
//! `langgraph_node`, `langgraph_triggers`, `langgraph_path` and `langgraph_checkpoint_ns`
//! (`<node>:<task id>`, a subgraph's task's prefixed with its enclosing tasks', `|` between).

use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// One run's `events`: what it needs to name and link each chain.
pub(crate) struct Chains {
    /// The graph's chain name (its graph id, `LangGraph` without one).
    name: String,
    run_id: String,
    metadata: Map<String, Value>,
    /// The open task chains by `<scope>/<task key>` (see [`Chains::task_start`]).
    open: HashMap<String, Open>,
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

    /// A task's `on_chain_start`: node `node` at `step` (task `key`, LangGraph's task id) of the
    /// graph at `scope` (`""` for the run's graph, a subgraph's namespace as its events' names
    /// carry it, `inner:<uuid>|…`) read `input`. A subgraph's task is a child of the chain of
    /// the task that runs the subgraph: its `parent_ids` go on from that chain's, and its
    /// `langgraph_checkpoint_ns` is that chain's, `|`, its own `<node>:<key>`.
    pub(crate) fn task_start(&mut self, scope: &str, (step, key, node): (i64, &str, &str), input: &Value) -> Value {
        let parent = parent_of(scope).and_then(|p| self.open.get(&p));
        let (parents, checkpoint_ns) = match parent {
            Some(p) => {
                let mut parents = p.parents.clone();
                parents.push(p.run.clone());
                (parents, format!("{}|{node}:{key}", p.checkpoint_ns))
            }
            None => (vec![self.run_id.clone()], format!("{node}:{key}")),
        };
        let mut metadata = self.metadata.clone();
        metadata.insert("langgraph_step".into(), json!(step));
        metadata.insert("langgraph_node".into(), json!(node));
        metadata.insert("langgraph_triggers".into(), json!([format!("branch:to:{node}")]));
        metadata.insert("langgraph_path".into(), json!(["__pregel_pull", node]));
        metadata.insert("langgraph_checkpoint_ns".into(), json!(checkpoint_ns));
        let chain = Open {
            run: chain_run_id(&self.run_id, key),
            metadata: Value::Object(metadata),
            tags: json!([format!("graph:step:{step}")]),
            input: input.clone(),
            parents,
            checkpoint_ns,
        };
        let event = chain.event("on_chain_start", node, json!({"input": input}));
        self.open.insert(format!("{scope}/{key}"), chain);
        event
    }

    /// The update of task `key` (of node `node`): its `on_chain_stream` and `on_chain_end` (none
    /// for a task not open).
    pub(crate) fn task_update(&mut self, scope: &str, key: &str, node: &str, update: &Value) -> Vec<Value> {
        let Some(chain) = self.open.remove(&format!("{scope}/{key}")) else {
            return Vec::new();
        };
        vec![
            chain.event("on_chain_stream", node, json!({"chunk": update})),
            chain.event("on_chain_end", node, json!({"output": update, "input": chain.input})),
        ]
    }

    /// The end of task `key` (of node `node`) without an update (it failed or wrote nothing):
    /// its `on_chain_end`.
    pub(crate) fn task_end(&mut self, scope: &str, key: &str, node: &str) -> Option<Value> {
        let chain = self.open.remove(&format!("{scope}/{key}"))?;
        Some(chain.event("on_chain_end", node, json!({"output": null, "input": chain.input})))
    }
}

/// An open task chain.
struct Open {
    /// Its run id.
    run: String,
    metadata: Value,
    tags: Value,
    /// The state it read.
    input: Value,
    /// Its ancestors' run ids, the run's first.
    parents: Vec<String>,
    /// Its `langgraph_checkpoint_ns`.
    checkpoint_ns: String,
}

impl Open {
    fn event(&self, event: &str, node: &str, data: Value) -> Value {
        json!({
            "event": event, "data": data, "run_id": self.run, "name": node, "tags": self.tags,
            "metadata": self.metadata, "parent_ids": self.parents,
        })
    }
}

/// The key in [`Chains::open`] of the task that runs the graph at `scope` (`<scope above>/<its
/// key>`), `None` for the run's own graph: `scope`'s last level names the task
/// (`<node>:<task key>`).
fn parent_of(scope: &str) -> Option<String> {
    if scope.is_empty() {
        return None;
    }
    let (above, last) = scope.rsplit_once('|').unwrap_or(("", scope));
    let key = last.split_once(':').map_or(last, |(_, key)| key);
    Some(format!("{above}/{key}"))
}

/// The run id of the chain of the task whose key is `key` in run `run_id`: UUID-shaped and
/// fixed by the two, so a replayed stream names the same chains.
fn chain_run_id(run_id: &str, key: &str) -> String {
    uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, format!("{run_id}|{key}").as_bytes()).to_string()
}
