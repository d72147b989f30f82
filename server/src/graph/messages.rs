//! The `messages-tuple` and legacy `messages` SSE events (§1.4 of the server contract) of the
//! message chunks a graph's nodes emit ([`weir_runtime::Event::Message`]): the chunk with
//! LangGraph's metadata as `[chunk, metadata]`, or, for the legacy mode, the metadata once per
//! message and the message accumulated so far (`messages/partial`) or whole
//! (`messages/complete`). The chunks are LangChain's message dicts, as the agent layer emits
//! them; the accumulation here merges those dicts as LangChain's `AIMessageChunk.__add__`.

use super::events::namespace;
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use weir_runtime::MessageMeta;

/// The message events of one run.
pub(crate) struct Messages {
    /// The run's metadata (`graph_id`, `assistant_id`, `run_id`, `thread_id`, the run's own).
    metadata: Map<String, Value>,
    /// The legacy mode's messages still streaming, by id, in arrival order (one leaves with
    /// its last chunk).
    partial: Vec<(String, Value)>,
    /// The ids whose `messages/metadata` was sent.
    announced: HashSet<String>,
}

impl Messages {
    /// The message events of a run with `metadata`.
    pub(crate) fn new(metadata: &Map<String, Value>) -> Self {
        Self {
            metadata: metadata.clone(),
            partial: Vec::new(),
            announced: HashSet::new(),
        }
    }

    /// The metadata of a chunk from the task `meta` on `thread_id`: the run's, then LangGraph's
    /// `langgraph_*` keys and `checkpoint_ns`.
    pub(crate) fn metadata(&self, thread_id: &str, meta: &MessageMeta) -> Value {
        let mut m = self.metadata.clone();
        m.entry("thread_id")
            .or_insert_with(|| json!(meta.thread_id.as_deref().unwrap_or(thread_id)));
        let ns = namespace(&meta.ns, &meta.keys);
        m.insert("langgraph_step".into(), json!(meta.step));
        m.insert("langgraph_node".into(), json!(meta.node));
        m.insert("langgraph_triggers".into(), json!(meta.triggers));
        m.insert("langgraph_path".into(), json!(meta.path));
        m.insert("langgraph_checkpoint_ns".into(), json!(ns));
        m.insert("checkpoint_ns".into(), json!(ns));
        Value::Object(m)
    }

    /// The legacy mode's events for `chunk` with `metadata`: `(event name, data)` pairs.
    pub(crate) fn legacy(&mut self, chunk: Value, metadata: Value) -> Vec<(&'static str, Value)> {
        let id = chunk.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
        let mut out = Vec::with_capacity(2);
        if self.announced.insert(id.clone()) {
            out.push(("messages/metadata", json!({ id.clone(): {"metadata": metadata} })));
        }
        let is_chunk = chunk
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| t.ends_with("MessageChunk"));
        if !is_chunk {
            out.push(("messages/complete", json!([chunk])));
            return out;
        }
        let whole = match self.partial.iter_mut().find(|(i, _)| *i == id) {
            Some((_, so_far)) => {
                merge(so_far, chunk);
                so_far.clone()
            }
            None => {
                self.partial.push((id.clone(), chunk.clone()));
                chunk
            }
        };
        // The message's last chunk: nothing more will merge into it.
        if whole.get("chunk_position").and_then(Value::as_str) == Some("last") {
            self.partial.retain(|(i, _)| *i != id);
        }
        out.push(("messages/partial", json!([as_message(whole)])));
        out
    }
}

/// Merges the later chunk `b` into `a`: text appended, tool-call fragments of one index joined,
/// usage summed, metadata merged key by key, the first id and name kept.
fn merge(a: &mut Value, b: Value) {
    let (Some(a), Value::Object(b)) = (a.as_object_mut(), b) else {
        return;
    };
    for (key, later) in b {
        match key.as_str() {
            "content" => merge_content(a.entry("content").or_insert(json!("")), later),
            "tool_call_chunks" => merge_fragments(a.entry("tool_call_chunks").or_insert(json!([])), later),
            "usage_metadata" => merge_usage(a.entry("usage_metadata").or_insert(Value::Null), later),
            "additional_kwargs" | "response_metadata" => {
                if let (Some(Value::Object(to)), Value::Object(from)) = (a.get_mut(&key), later) {
                    to.extend(from);
                }
            }
            "chunk_position" if !later.is_null() => {
                a.insert(key, later);
            }
            _ => {
                let slot = a.entry(key).or_insert(Value::Null);
                if slot.is_null() {
                    *slot = later;
                }
            }
        }
    }
}

fn merge_content(a: &mut Value, b: Value) {
    match (a, b) {
        (Value::String(a), Value::String(b)) => a.push_str(&b),
        (Value::Array(a), Value::Array(b)) => a.extend(b),
        (Value::Array(a), Value::String(b)) if !b.is_empty() => a.push(json!({"type": "text", "text": b})),
        (a @ Value::String(_), Value::Array(b)) => {
            let text = std::mem::take(a);
            let mut blocks: Vec<Value> = Vec::with_capacity(b.len() + 1);
            if text.as_str().is_some_and(|t| !t.is_empty()) {
                blocks.push(json!({"type": "text", "text": text}));
            }
            blocks.extend(b);
            *a = Value::Array(blocks);
        }
        _ => {}
    }
}

/// Joins tool-call fragments by `index`: the first id and name kept, the argument text appended.
fn merge_fragments(a: &mut Value, b: Value) {
    let (Value::Array(a), Value::Array(b)) = (a, b) else {
        return;
    };
    for fragment in b {
        let index = fragment.get("index").filter(|i| !i.is_null()).cloned();
        let same = index.and_then(|i| a.iter_mut().find(|c| c.get("index") == Some(&i)));
        let (Some(Value::Object(c)), Value::Object(f)) = (same, &fragment) else {
            a.push(fragment);
            continue;
        };
        for (key, v) in f {
            match (key.as_str(), c.get_mut(key)) {
                ("args", Some(Value::String(s))) => s.push_str(v.as_str().unwrap_or_default()),
                (_, Some(slot)) if !slot.is_null() => {}
                _ => {
                    c.insert(key.clone(), v.clone());
                }
            }
        }
    }
}

/// Sums two `usage_metadata` objects number by number.
fn merge_usage(a: &mut Value, b: Value) {
    match (a, b) {
        (_, Value::Null) => {}
        (a @ Value::Null, b) => *a = b,
        (Value::Object(a), Value::Object(b)) => {
            for (key, v) in b {
                match (a.get_mut(&key), v.as_i64()) {
                    (Some(slot), Some(n)) if slot.is_i64() => *slot = json!(slot.as_i64().unwrap_or(0) + n),
                    (None, _) => {
                        a.insert(key, v);
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

/// The accumulated chunk as the whole message LangGraph's legacy mode shows: `"type": "ai"`,
/// the tool calls parsed from the joined fragments (those that do not parse as invalid), no
/// fragments or chunk position.
fn as_message(chunk: Value) -> Value {
    let Value::Object(mut c) = chunk else {
        return chunk;
    };
    let fragments = match c.remove("tool_call_chunks") {
        Some(Value::Array(f)) => f,
        _ => Vec::new(),
    };
    c.remove("chunk_position");
    let (mut calls, mut invalid) = (Vec::new(), Vec::new());
    for f in fragments {
        let args = f.get("args").and_then(Value::as_str).unwrap_or_default();
        let parsed = if args.is_empty() {
            Ok(json!({}))
        } else {
            serde_json::from_str::<Value>(args)
        };
        match parsed {
            Ok(args @ Value::Object(_)) => calls.push(json!({
                "name": f.get("name"), "args": args, "id": f.get("id"), "type": "tool_call",
            })),
            _ => invalid.push(json!({
                "name": f.get("name"), "args": f.get("args"), "id": f.get("id"),
                "error": null, "type": "invalid_tool_call",
            })),
        }
    }
    let mut out = Map::with_capacity(c.len() + 3);
    for (key, v) in c {
        match key.as_str() {
            "type" => out.insert(key, json!("ai")),
            "tool_calls" => out.insert(key, Value::Array(std::mem::take(&mut calls))),
            "invalid_tool_calls" => out.insert(key, Value::Array(std::mem::take(&mut invalid))),
            _ => out.insert(key, v),
        };
    }
    Value::Object(out)
}
