//! [`Session`]: a thread's runs, event by event as the bus carries them, turned into the
//! protocol's events (LangGraph's `EventStreamingSession`). Each event is an envelope
//! `{"type": "event", "event_id", "seq", "method", "params": {"namespace", "timestamp", "data",
//! "node"?}}`; `seq` climbs across the runs of one connection, and `event_id` is the bus event's
//! id (`<ms>-<seq>`, then `.1`, `.2`… for the further envelopes made of the same bus event), or
//! `synth:<run id>:…` for what the session itself says (the lifecycle, the input requests, the
//! checkpoints), so two connections replaying the same run name its events alike.
//!
//! What each channel carries:
//! - `lifecycle`: the run `running` as it starts, then `completed`, `failed` (with the error) or
//!   `interrupted` as it ends; a subgraph `started` at its first event and `completed` when its
//!   parent's update for it comes, or as the run ends.
//! - `input` (`input.requested`): each interrupt (`{interrupt_id, payload}`), taken out of the
//!   `values` and `updates` events that carry it.
//! - `values`, `updates` (`{node}` beside the node's update): the state in the protocol's shape
//!   ([`super::state`]).
//! - `messages`: content-block events ([`super::messages`]), and each tool result as a `tool`
//!   message under the namespace `[…, "tools:<call id>"]`.
//! - `tools`: the tool node's reports of each call (`tool-started`, then `tool-finished` or
//!   `tool-error`), as the runs' `tools` mode carries them.
//! - `checkpoints`: `{id, parent_id?, step, source}` for each checkpoint written.
//! - `tasks` as the run's `tasks` events; `custom` as `{payload}`.

use super::messages::MessageEvents;
use super::state::normalize_state;
use crate::model::RunStatus;
use serde_json::{json, Value};
use std::collections::HashSet;

/// A namespace in a key: its segments joined by NUL (LangGraph's `to_namespace_key`).
fn ns_key(ns: &[String]) -> String {
    ns.join("\0")
}

/// A namespace segment without its task id (`node:<task id>` → `node`).
fn segment_name(segment: &str) -> &str {
    segment.split(':').next().unwrap_or(segment)
}

/// What the session knows of a subgraph of the run: where it is, and its last lifecycle event.
struct Subgraph {
    ns: Vec<String>,
    status: String,
}

impl Subgraph {
    fn open(&self) -> bool {
        self.status == "started"
    }
}

/// The run the session follows now.
struct RunView {
    run_id: String,
    graph_name: String,
    /// The run's last lifecycle event.
    status: String,
    /// The subgraphs seen, in the order they were.
    subgraphs: Vec<Subgraph>,
    /// The ids of the interrupts the run announced (a run's interrupt comes in its `updates`
    /// and again in its `values`: announced once).
    interrupts: HashSet<String>,
    /// The run's end was said (an interrupt, an error, or its outcome).
    ended: bool,
    /// The checkpoints sent, by namespace key and id (each once).
    checkpoints: HashSet<(String, String)>,
    messages: MessageEvents,
}

/// A thread's runs turned into protocol events, for one connection.
#[derive(Default)]
pub(super) struct Session {
    seq: u64,
    run: Option<RunView>,
    /// The bus event being turned (its id, and how many envelopes were made of it).
    source: Option<(String, usize)>,
}

impl Session {
    /// The `seq` of the last event made.
    pub(super) fn seq(&self) -> u64 {
        self.seq
    }

    /// The run the session follows now, if any.
    pub(super) fn run_id(&self) -> Option<&str> {
        self.run.as_ref().map(|r| r.run_id.as_str())
    }

    /// The run's graph and its subgraphs, each with its namespace, last lifecycle event and
    /// graph name, nested (`agent.getTree`); `None` before a run was seen.
    pub(super) fn tree(&self) -> Option<Value> {
        let run = self.run.as_ref()?;
        fn children(run: &RunView, ns: &[String]) -> Vec<Value> {
            let mut below: Vec<&Subgraph> = run
                .subgraphs
                .iter()
                .filter(|s| s.ns.len() == ns.len() + 1 && s.ns.starts_with(ns))
                .collect();
            below.sort_by(|a, b| a.ns.cmp(&b.ns));
            below
                .into_iter()
                .map(|s| {
                    let mut node = json!({
                        "namespace": s.ns,
                        "status": s.status,
                        "graph_name": segment_name(s.ns.last().map_or("", String::as_str)),
                    });
                    let more = children(run, &s.ns);
                    if !more.is_empty() {
                        node["children"] = Value::Array(more);
                    }
                    node
                })
                .collect()
        }
        let mut root = json!({"namespace": [], "status": run.status, "graph_name": run.graph_name});
        let below = children(run, &[]);
        if !below.is_empty() {
            root["children"] = Value::Array(below);
        }
        Some(root)
    }

    /// A run starts (its first event, `metadata`): its root `lifecycle` `running`. A run seen
    /// already (a second attempt of it, after its worker died) goes on as it was.
    pub(super) fn begin_run(&mut self, run_id: &str, graph_name: &str) -> Vec<Value> {
        if self.run_id() == Some(run_id) {
            return Vec::new();
        }
        self.run = Some(RunView {
            run_id: run_id.to_owned(),
            graph_name: graph_name.to_owned(),
            status: "running".to_owned(),
            subgraphs: Vec::new(),
            interrupts: HashSet::new(),
            ended: false,
            checkpoints: HashSet::new(),
            messages: MessageEvents::default(),
        });
        self.source = None;
        let mut out = Vec::new();
        self.lifecycle(&[], "running", None, &mut out);
        out
    }

    /// The run failed (its `error` event): its root `lifecycle` `failed`, with the error.
    pub(super) fn fail(&mut self, data: &str) -> Vec<Value> {
        let mut out = Vec::new();
        let Some(run) = self.run.as_mut() else { return out };
        if run.ended {
            return out;
        }
        run.ended = true;
        let error = serde_json::from_str::<Value>(data).ok();
        let message = match &error {
            Some(e) => e
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| e.to_string(), str::to_owned),
            None => data.to_owned(),
        };
        self.close_subgraphs(&mut out);
        self.lifecycle(&[], "failed", Some(message), &mut out);
        out
    }

    /// The run ended with `status`: its subgraphs still open `completed`, then its root
    /// `lifecycle` (`completed`, `failed`, or `interrupted`), unless an interrupt or an error
    /// said it already.
    pub(super) fn end_run(&mut self, status: RunStatus) -> Vec<Value> {
        let mut out = Vec::new();
        let Some(run) = self.run.as_mut() else { return out };
        if run.ended {
            return out;
        }
        let (event, error) = match status {
            RunStatus::Success => ("completed", None),
            RunStatus::Interrupted => ("interrupted", None),
            RunStatus::Error => ("failed", None),
            RunStatus::Timeout => ("failed", Some("the run timed out".to_owned())),
            RunStatus::Pending | RunStatus::Running => return out,
        };
        run.ended = true;
        self.close_subgraphs(&mut out);
        self.lifecycle(&[], event, error, &mut out);
        out
    }

    /// The protocol events of one of the run's bus events (`event` with its namespace suffix,
    /// `data` its JSON text, `id` its bus id). Events of modes the protocol has no channel for
    /// (`debug`, `events`, the legacy `messages/*`) make none.
    pub(super) fn ingest(&mut self, id: &str, event: &str, data: &str) -> Vec<Value> {
        let mut out = Vec::new();
        if self.run.is_none() {
            return out;
        }
        let mut parts = event.split('|');
        let method = parts.next().unwrap_or_default();
        let ns: Vec<String> = parts.map(str::to_owned).collect();
        if !matches!(
            method,
            "values" | "updates" | "messages" | "custom" | "tasks" | "checkpoints" | "tools"
        ) {
            return out;
        }
        let Ok(data) = serde_json::from_str::<Value>(data) else {
            return out;
        };
        self.source = Some((id.to_owned(), 0));
        self.enter(&ns, &mut out);
        match method {
            "values" => self.values(&ns, data, &mut out),
            "updates" => self.updates(&ns, data, &mut out),
            "messages" => {
                let chunk = data.get(0).cloned().unwrap_or(Value::Null);
                let events = self.run.as_mut().map(|r| r.messages.take(&chunk)).unwrap_or_default();
                for e in events {
                    self.push("messages", &ns, e, None, None, &mut out);
                }
            }
            "custom" => self.push("custom", &ns, json!({ "payload": data }), None, None, &mut out),
            "tasks" => self.push("tasks", &ns, data, None, None, &mut out),
            "checkpoints" => self.checkpoint(&ns, &data, &mut out),
            "tools" => self.tool(&ns, data, &mut out),
            _ => {}
        }
        self.source = None;
        out
    }

    fn values(&mut self, ns: &[String], data: Value, out: &mut Vec<Value>) {
        let requests = interrupt_requests(data.get("__interrupt__"));
        self.input_requested(ns, requests, out);
        let values = normalize_state(data);
        if values.as_object().is_none_or(|o| !o.is_empty()) {
            self.push("values", ns, values, None, None, out);
        }
    }

    fn updates(&mut self, ns: &[String], data: Value, out: &mut Vec<Value>) {
        let (node, values) = match data {
            Value::Object(map) if map.len() == 1 => {
                let (node, values) = map.into_iter().next().unwrap_or_default();
                (Some(node), values)
            }
            other => (None, other),
        };
        if node.as_deref() == Some("__interrupt__") {
            self.input_requested(ns, interrupt_requests(Some(&values)), out);
            return;
        }
        let values = if values.is_object() {
            values
        } else {
            json!({ "value": values })
        };
        let requests = interrupt_requests(values.get("__interrupt__"));
        self.input_requested(ns, requests, out);
        let values = normalize_state(values);
        if values.as_object().is_none_or(|o| !o.is_empty()) {
            self.push("updates", ns, values, node.clone(), None, out);
        }
        if let Some(node) = node {
            self.child_completed(ns, &node, out);
        }
    }

    /// A tool call's report, as the tool node made it; a tool's result is also a `tool`
    /// message on `messages`, under the namespace `[…, "tools:<call id>"]` (LangGraph's
    /// server mirrors it so, for the message views).
    fn tool(&mut self, ns: &[String], data: Value, out: &mut Vec<Value>) {
        let finished = data.get("event").and_then(Value::as_str) == Some("tool-finished");
        let output = data.get("output").filter(|o| o.is_object()).cloned();
        let call_id = data
            .get("tool_call_id")
            .or_else(|| output.as_ref().and_then(|o| o.get("tool_call_id")))
            .and_then(Value::as_str)
            .map(str::to_owned);
        self.push("tools", ns, data, None, None, out);
        let (true, Some(output)) = (finished, output) else {
            return;
        };
        let message_id = output
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
            .map(str::to_owned)
            .or_else(|| call_id.as_ref().map(|c| format!("tool-{c}")));
        let Some(message_id) = message_id else { return };
        let content = match output.get("content") {
            Some(Value::String(text)) => text.clone(),
            None | Some(Value::Null) => String::new(),
            Some(other) => other.to_string(),
        };
        let mut start = json!({"event": "message-start", "role": "tool", "id": message_id});
        let mut message_ns = ns.to_vec();
        if let Some(call_id) = &call_id {
            start["tool_call_id"] = json!(call_id);
            message_ns.push(format!("tools:{call_id}"));
        }
        let text = json!({"type": "text", "text": content});
        let events = [
            start,
            json!({"event": "content-block-start", "index": 0, "content": {"type": "text", "text": ""}}),
            json!({"event": "content-block-delta", "index": 0, "content": text}),
            json!({"event": "content-block-finish", "index": 0, "content": text}),
            json!({"event": "message-finish", "metadata": {}}),
        ];
        for e in events {
            self.push("messages", &message_ns, e, None, None, out);
        }
    }

    fn checkpoint(&mut self, ns: &[String], data: &Value, out: &mut Vec<Value>) {
        let id_of = |config: Option<&Value>| {
            config
                .and_then(|c| c.pointer("/configurable/checkpoint_id"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let Some(id) = id_of(data.get("config")) else { return };
        let Some(run) = self.run.as_mut() else { return };
        if !run.checkpoints.insert((ns_key(ns), id.clone())) {
            return;
        }
        let mut envelope = json!({
            "id": id,
            "step": data.pointer("/metadata/step").cloned().unwrap_or(json!(0)),
            "source": data.pointer("/metadata/source").cloned().unwrap_or(json!("loop")),
        });
        if let Some(parent) = id_of(data.get("parent_config")) {
            envelope["parent_id"] = json!(parent);
        }
        let event_id = format!("checkpoint|{}|{id}", ns_key(ns));
        self.push("checkpoints", ns, envelope, None, Some(event_id), out);
    }

    /// Announces the interrupts not announced yet, then the run `interrupted`: the run stopped
    /// to wait for `input.respond`.
    fn input_requested(&mut self, ns: &[String], requests: Vec<(String, Value)>, out: &mut Vec<Value>) {
        let mut any = false;
        for (interrupt_id, request) in requests {
            let Some(run) = self.run.as_mut() else { return };
            if !run.interrupts.insert(interrupt_id.clone()) {
                continue;
            }
            let event_id = format!("input|{}|{interrupt_id}", ns_key(ns));
            self.push("input.requested", ns, request, None, Some(event_id), out);
            any = true;
        }
        if any {
            self.lifecycle(&[], "interrupted", None, out);
            if let Some(run) = self.run.as_mut() {
                run.ended = true;
            }
        }
    }

    /// Notes the subgraphs an event at `ns` shows: each prefix of `ns` seen for the first time
    /// is `started`.
    fn enter(&mut self, ns: &[String], out: &mut Vec<Value>) {
        for len in 1..=ns.len() {
            let prefix = &ns[..len];
            let Some(run) = self.run.as_mut() else { return };
            if run.subgraphs.iter().any(|s| s.ns == prefix) {
                continue;
            }
            run.subgraphs.push(Subgraph {
                ns: prefix.to_vec(),
                status: "started".to_owned(),
            });
            let last = &prefix[len - 1];
            let mut data = json!({"event": "started", "namespace": prefix, "graph_name": segment_name(last)});
            if let Some((_, task)) = last.split_once(':') {
                data["trigger_call_id"] = json!(task);
            }
            // Named after the bus event that showed the subgraph, as LangGraph's names it after
            // the upstream event that announced it.
            self.push("lifecycle", prefix, data, None, None, out);
        }
    }

    /// `node`'s update came at `parent`: the oldest subgraph still open that `node` ran there is
    /// `completed`.
    fn child_completed(&mut self, parent: &[String], node: &str, out: &mut Vec<Value>) {
        if node.starts_with("__") {
            return;
        }
        let Some(run) = self.run.as_ref() else { return };
        let child = run.subgraphs.iter().find(|s| {
            s.open()
                && s.ns.len() == parent.len() + 1
                && s.ns.starts_with(parent)
                && segment_name(&s.ns[parent.len()]) == node
        });
        if let Some(ns) = child.map(|s| s.ns.clone()) {
            self.lifecycle(&ns, "completed", None, out);
        }
    }

    /// Every subgraph still open `completed`, the deepest first.
    fn close_subgraphs(&mut self, out: &mut Vec<Value>) {
        let Some(run) = self.run.as_ref() else { return };
        let mut open: Vec<Vec<String>> = run
            .subgraphs
            .iter()
            .filter(|s| s.open())
            .map(|s| s.ns.clone())
            .collect();
        open.sort_by_key(|ns| std::cmp::Reverse(ns.len()));
        for ns in open {
            self.lifecycle(&ns, "completed", None, out);
        }
    }

    /// A `lifecycle` event of the graph at `ns` (`[]`: the run's own).
    fn lifecycle(&mut self, ns: &[String], event: &str, error: Option<String>, out: &mut Vec<Value>) {
        let Some(run) = self.run.as_mut() else { return };
        let graph_name = match ns.last() {
            None => run.graph_name.clone(),
            Some(last) => segment_name(last).to_owned(),
        };
        match run.subgraphs.iter_mut().find(|s| s.ns == ns) {
            Some(sub) => event.clone_into(&mut sub.status),
            None if ns.is_empty() => event.clone_into(&mut run.status),
            None => {}
        }
        let mut data = json!({"event": event, "graph_name": graph_name});
        if let Some(error) = error {
            data["error"] = json!(error);
        }
        let event_id = format!("lc|{}|{event}", ns_key(ns));
        self.push("lifecycle", ns, data, None, Some(event_id), out);
    }

    /// One envelope. `synth` names an event the session makes itself (its id
    /// `synth:<run id>:<synth>`); any other is named after the bus event being turned.
    fn push(
        &mut self,
        method: &str,
        ns: &[String],
        data: Value,
        node: Option<String>,
        synth: Option<String>,
        out: &mut Vec<Value>,
    ) {
        self.seq += 1;
        let run_id = self.run.as_ref().map(|r| r.run_id.as_str()).unwrap_or_default();
        let event_id = match (synth, self.source.as_mut()) {
            (Some(synth), _) => format!("synth:{run_id}:{synth}"),
            (None, Some((id, made))) => {
                let event_id = if *made == 0 { id.clone() } else { format!("{id}.{made}") };
                *made += 1;
                event_id
            }
            (None, None) => format!("synth:{run_id}:{}", self.seq),
        };
        let mut params = json!({
            "namespace": ns,
            "timestamp": timestamp_ms(),
            "data": data,
        });
        if let Some(node) = node {
            params["node"] = json!(node);
        }
        out.push(json!({
            "type": "event",
            "event_id": event_id,
            "seq": self.seq,
            "method": method,
            "params": params,
        }));
    }
}

/// The interrupts in an `__interrupt__` list as `(id, {interrupt_id, payload})`.
fn interrupt_requests(list: Option<&Value>) -> Vec<(String, Value)> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|entry| {
            let id = entry.get("id")?.as_str()?;
            let mut request = json!({ "interrupt_id": id });
            if let Some(value) = entry.get("value") {
                request["payload"] = value.clone();
            }
            Some((id.to_owned(), request))
        })
        .collect()
}

fn timestamp_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests;
