//! weir's stream events ([`SubgraphEvent`]s) as LangGraph's SSE payloads (§1.4 of the server
//! contract): which runtime modes a request needs, and one [`Translate`] per run that turns each
//! event into the `values`, `updates`, `custom`, `tasks`, `checkpoints`, `debug`, `events` (see
//! [`super::chain`]) and `messages` (see [`super::messages`]) events asked for, a subgraph's
//! under `<name>|<node>:<task key>`. It remembers the last values (for the run's end and the
//! checkpoints' values), the last checkpoint (for parent links) and each task's update (for its
//! `tasks` result).

use super::chain::Chains;
use super::messages::Messages;
use super::state::checkpoint_ref;
use super::{Mode, RunEvent};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use weir_runtime::checkpoint::{Source, Timestamp};
use weir_runtime::{MessageMeta, Paused, StreamMode, SubgraphEvent};

/// The runtime modes a request for `modes` needs: always the values (the run's end carries
/// them), the rest as asked.
pub(crate) fn runtime_modes(modes: &[Mode]) -> StreamMode {
    let mut m = StreamMode::VALUES;
    for mode in modes {
        m = m | match mode {
            Mode::Updates => StreamMode::UPDATES,
            Mode::Custom => StreamMode::CUSTOM,
            Mode::Tasks => StreamMode::UPDATES | StreamMode::TASKS,
            Mode::Checkpoints => StreamMode::CHECKPOINTS,
            Mode::Debug => StreamMode::UPDATES | StreamMode::TASKS | StreamMode::CHECKPOINTS,
            Mode::Events => StreamMode::UPDATES | StreamMode::TASKS,
            Mode::MessagesTuple | Mode::Messages => StreamMode::MESSAGES,
            Mode::Tools => StreamMode::TOOLS,
            Mode::Values => StreamMode::VALUES,
        };
    }
    m
}

/// The translation of one run's events.
pub(crate) struct Translate {
    modes: Vec<Mode>,
    thread_id: String,
    /// Whether the client asked for subgraphs' events (`stream_subgraphs`): without, a
    /// subgraph's events feed the `events` mode's chains only.
    subgraphs: bool,
    /// The state after the last step (`null` before the first).
    pub(crate) values: Value,
    last_checkpoint: Option<String>,
    /// Each task's update, by task node, until its end is reported.
    results: HashMap<String, Value>,
    /// The `events` mode's chains, when asked for, and the run's input for the first.
    chains: Option<(Chains, Value)>,
    /// Each subgraph's state after its last step, by namespace: its tasks' input, its
    /// checkpoints' values.
    scoped: HashMap<String, Value>,
    /// The message events, when `messages-tuple` or `messages` is asked for.
    messages: Option<Messages>,
}

impl Translate {
    /// The translation of a run on `thread_id` asking for `modes`, and for its subgraphs'
    /// events when `subgraphs`.
    pub(crate) fn new(modes: Vec<Mode>, thread_id: String, subgraphs: bool) -> Self {
        Self {
            modes,
            thread_id,
            subgraphs,
            scoped: HashMap::new(),
            values: Value::Null,
            last_checkpoint: None,
            results: HashMap::new(),
            chains: None,
            messages: None,
        }
    }

    /// Asks for the message events of a run with `metadata` (the run's: `graph_id`,
    /// `assistant_id`, `run_id`, …), which each chunk's metadata carries.
    pub(crate) fn with_messages(mut self, metadata: &Map<String, Value>) -> Self {
        if self.wants(Mode::MessagesTuple) || self.wants(Mode::Messages) {
            self.messages = Some(Messages::new(metadata));
        }
        self
    }

    /// Asks for the `events` mode's chains of run `run_id` with `metadata`, started by `input`.
    pub(crate) fn with_chains(mut self, run_id: &str, metadata: &Map<String, Value>, input: Value) -> Self {
        if self.wants(Mode::Events) {
            self.chains = Some((Chains::new(run_id, &self.thread_id, metadata), input));
        }
        self
    }

    /// The run began: the graph's `on_chain_start`.
    pub(crate) fn begin(&self, out: &mut Vec<RunEvent>) {
        if let Some((chains, input)) = &self.chains {
            Self::emit(out, "events", "", chains.start(input));
        }
    }

    /// The run ended without an error: the graph's `on_chain_end` with the last values.
    pub(crate) fn finish(&self, out: &mut Vec<RunEvent>) {
        if let Some((chains, _)) = &self.chains {
            Self::emit(out, "events", "", chains.end(&self.values));
        }
    }

    fn wants(&self, mode: Mode) -> bool {
        self.modes.contains(&mode)
    }

    fn emit(out: &mut Vec<RunEvent>, event: &str, ns: &str, data: Value) {
        let event = if ns.is_empty() {
            event.to_owned()
        } else {
            format!("{event}|{ns}")
        };
        out.push(RunEvent::Stream { event, data });
    }

    /// Whether the events of the graph at `ns` are shown (beyond the `events` mode's chains).
    fn shows(&self, ns: &str) -> bool {
        ns.is_empty() || self.subgraphs
    }

    /// The state the tasks of the graph at `ns` read.
    fn input_of(&self, ns: &str) -> &Value {
        if ns.is_empty() {
            &self.values
        } else {
            self.scoped.get(ns).unwrap_or(&Value::Null)
        }
    }

    /// The whole state after a step.
    pub(crate) fn values(&mut self, ns: &str, values: Value, out: &mut Vec<RunEvent>) {
        // A graph's step ended, so did the subgraphs its tasks ran: their states go.
        if ns.is_empty() {
            self.values = values.clone();
            self.scoped.clear();
        } else {
            let deeper = format!("{ns}|");
            self.scoped.retain(|scope, _| !scope.starts_with(&deeper));
            self.scoped.insert(ns.to_owned(), values.clone());
        }
        if self.wants(Mode::Values) && self.shows(ns) {
            Self::emit(out, "values", ns, values);
        }
    }

    /// A node's update; `key`, its task's (given whenever the run streams tasks), finds the task
    /// among several of one node in a step (`Send`s).
    pub(crate) fn update(&mut self, ns: &str, key: Option<&str>, node: &str, update: Value, out: &mut Vec<RunEvent>) {
        let task = key.unwrap_or(node);
        if let Some((chains, _)) = self.chains.as_mut() {
            for e in chains.task_update(ns, task, node, &update) {
                Self::emit(out, "events", "", e);
            }
        }
        if !self.shows(ns) {
            return;
        }
        if self.wants(Mode::Tasks) || self.wants(Mode::Debug) {
            self.results.insert(format!("{ns}/{task}"), update.clone());
        }
        if self.wants(Mode::Updates) {
            Self::emit(out, "updates", ns, json!({ node: update }));
        }
    }

    /// What a node emitted.
    pub(crate) fn custom(&self, ns: &str, value: Value, out: &mut Vec<RunEvent>) {
        if self.wants(Mode::Custom) && self.shows(ns) {
            Self::emit(out, "custom", ns, value);
        }
    }

    /// A message chunk a node emitted: `messages` with `[chunk, metadata]`, and the legacy
    /// mode's `messages/…` events.
    pub(crate) fn message(&mut self, ns: &str, chunk: Value, meta: &MessageMeta, out: &mut Vec<RunEvent>) {
        if !self.shows(ns) {
            return;
        }
        let Some(messages) = self.messages.as_mut() else { return };
        let metadata = messages.metadata(&self.thread_id, meta);
        if self.modes.contains(&Mode::Messages) {
            let chunk = chunk.clone();
            for (event, data) in messages.legacy(chunk, metadata.clone()) {
                Self::emit(out, event, ns, data);
            }
        }
        if self.modes.contains(&Mode::MessagesTuple) {
            Self::emit(out, "messages", ns, json!([chunk, metadata]));
        }
    }

    /// A tool call's report (`tool-started`, `tool-finished`, …): a `tools` event with it as
    /// the agent layer made it.
    pub(crate) fn tool(&self, ns: &str, event: Value, out: &mut Vec<RunEvent>) {
        if self.wants(Mode::Tools) && self.shows(ns) {
            Self::emit(out, "tools", ns, event);
        }
    }

    /// A task's start (`key`: its id as LangGraph shows it, UUID-shaped).
    pub(crate) fn task_start(&mut self, ns: &str, step: i64, key: &str, node: &str, out: &mut Vec<RunEvent>) {
        if self.chains.is_some() {
            let input = self.input_of(ns).clone();
            if let Some((chains, _)) = self.chains.as_mut() {
                Self::emit(out, "events", "", chains.task_start(ns, (step, key, node), &input));
            }
        }
        if !self.shows(ns) {
            return;
        }
        let payload = json!({
            "id": key, "name": node, "input": self.input_of(ns),
            "triggers": [format!("branch:to:{node}")], "metadata": {},
        });
        self.task_event(ns, step, "task", payload, out);
    }

    /// A task's end (`key`: its start's).
    pub(crate) fn task_end(
        &mut self,
        ns: &str,
        step: i64,
        (key, node): (&str, &str),
        error: Option<&str>,
        out: &mut Vec<RunEvent>,
    ) {
        if let Some((chains, _)) = self.chains.as_mut() {
            if let Some(e) = chains.task_end(ns, key, node) {
                Self::emit(out, "events", "", e);
            }
        }
        if !self.shows(ns) {
            return;
        }
        let result = self.results.remove(&format!("{ns}/{key}")).unwrap_or(Value::Null);
        let payload = json!({"id": key, "name": node, "error": error, "result": result, "interrupts": []});
        self.task_event(ns, step, "task_result", payload, out);
    }

    fn task_event(&self, ns: &str, step: i64, kind: &str, payload: Value, out: &mut Vec<RunEvent>) {
        if self.wants(Mode::Debug) {
            Self::emit(out, "debug", ns, debug(step, kind, payload.clone()));
        }
        if self.wants(Mode::Tasks) {
            Self::emit(out, "tasks", ns, payload);
        }
    }

    /// A checkpoint written after `step`, with the nodes next and their tasks' keys.
    pub(crate) fn checkpoint(
        &mut self,
        ns: &str,
        (step, id, source): (i64, &str, Source),
        (next, keys): (&[String], &[String]),
        out: &mut Vec<RunEvent>,
    ) {
        if !self.shows(ns) {
            return;
        }
        let config =
            |id: &str| json!({"configurable": {"checkpoint_ns": ns, "thread_id": self.thread_id, "checkpoint_id": id}});
        let parent = if ns.is_empty() {
            self.last_checkpoint.clone()
        } else {
            None
        };
        let tasks: Vec<Value> = next
            .iter()
            .zip(keys)
            .map(|(n, key)| json!({"id": key, "name": n, "interrupts": [], "state": null}))
            .collect();
        let mut payload = json!({
            "config": config(id),
            "parent_config": parent.as_deref().map(config),
            "values": self.input_of(ns),
            "metadata": {"source": source.as_str(), "step": step, "parents": {}},
            "next": next,
            "tasks": tasks,
        });
        if self.wants(Mode::Checkpoints) {
            Self::emit(out, "checkpoints", ns, payload.clone());
        }
        if self.wants(Mode::Debug) {
            payload["checkpoint"] = checkpoint_ref(&self.thread_id, id);
            payload["parent_checkpoint"] = parent
                .as_deref()
                .map_or(Value::Null, |p| checkpoint_ref(&self.thread_id, p));
            Self::emit(out, "debug", ns, debug(step, "checkpoint", payload));
        }
        if ns.is_empty() {
            self.last_checkpoint = Some(id.to_owned());
        }
    }

    /// The run paused: `{"__interrupt__": […]}` as an update, and the values with it.
    pub(crate) fn paused(&mut self, pauses: &[Paused], out: &mut Vec<RunEvent>) {
        let interrupts: Vec<Value> = pauses
            .iter()
            .filter(|p| p.question.is_some())
            .map(|p| json!({"value": p.question, "id": p.id, "response_schema": null}))
            .collect();
        if interrupts.is_empty() {
            return;
        }
        if self.wants(Mode::Updates) {
            Self::emit(out, "updates", "", json!({"__interrupt__": interrupts}));
        }
        if self.wants(Mode::Values) {
            let values = super::with_interrupts(self.values.clone(), Value::Array(interrupts));
            Self::emit(out, "values", "", values);
        }
    }

    /// A subgraph's event, under its namespace (weir's segments `ns` with their tasks' `keys`).
    pub(crate) fn subgraph(
        &mut self,
        (ns, keys): (&[String], &[String]),
        event: SubgraphEvent,
        out: &mut Vec<RunEvent>,
    ) {
        let ns = namespace(ns, keys);
        match event {
            SubgraphEvent::Values { state, .. } => self.values(&ns, state, out),
            SubgraphEvent::Update { node, key, update, .. } => self.update(&ns, key.as_deref(), &node, update, out),
            SubgraphEvent::TaskStart { step, key, node, .. } => self.task_start(&ns, step, &key, &node, out),
            SubgraphEvent::TaskEnd {
                step, key, node, error, ..
            } => self.task_end(&ns, step, (&key, &node), error.as_deref(), out),
            SubgraphEvent::Checkpoint {
                step,
                id,
                source,
                next,
                keys,
            } => self.checkpoint(&ns, (step, &id, source), (&next, &keys), out),
            SubgraphEvent::Custom { value, .. } => self.custom(&ns, value, out),
            SubgraphEvent::Message { chunk, meta } => self.message(&ns, chunk, &meta, out),
            SubgraphEvent::Tool { event, .. } => self.tool(&ns, event, out),
        }
    }
}

/// weir's namespace segments (`<node>:<task id>:<step>`) with their tasks' keys as LangGraph's
/// namespace: `<node>:<task key>` per level, levels joined with `|`. The key is the task's id in
/// its `tasks` events and its thread's state, so a subgraph's events name the task that runs it.
pub(crate) fn namespace(ns: &[String], keys: &[String]) -> String {
    let levels: Vec<String> = ns
        .iter()
        .zip(keys)
        .map(|(segment, key)| format!("{}:{key}", segment.split(':').next().unwrap_or(segment)))
        .collect();
    levels.join("|")
}

/// A `debug` event: `{step, timestamp, type, payload}`.
fn debug(step: i64, kind: &str, payload: Value) -> Value {
    json!({"step": step, "timestamp": Timestamp::now().to_string(), "type": kind, "payload": payload})
}
