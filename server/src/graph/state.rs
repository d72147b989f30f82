//! A thread's state as LangGraph's server shows it (ThreadState, §1.3 of the server contract):
//! a weir [`StateSnapshot`] with its values encoded, its tasks with their paths and interrupts,
//! and the checkpoint and parent links `useStream` builds its branches from; and the lighter
//! entry of the studio's timeline, read from a checkpoint's record alone.

use super::codec::Codec;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use weir_runtime::checkpoint::CheckpointRecord;
use weir_runtime::{Paused, State, StateSnapshot};

/// The checkpoint metadata key under which a run's non-string metadata is kept, as one JSON
/// object (the runtime's metadata values are strings); the ThreadState shows its pairs.
pub(crate) const JSON_METADATA: &str = "__json_metadata__";

/// An interrupt as the state shows it: `{id, value}`.
pub(crate) fn interrupt(p: &Paused) -> Value {
    json!({"id": p.id, "value": p.question.clone().unwrap_or(Value::Null)})
}

/// `{checkpoint_id, thread_id, checkpoint_ns}`.
pub(crate) fn checkpoint_ref(thread_id: &str, id: &str) -> Value {
    json!({"checkpoint_id": id, "thread_id": thread_id, "checkpoint_ns": ""})
}

/// The ThreadState of `snap`, its values and its tasks' results (the updates of those whose
/// writes are saved) encoded by `codec`: each task's `id` is its key (the id its `tasks` events
/// show); a task of a node in `subgraphs` shows its subgraph's `checkpoint_ns`
/// (`<node>:<task key>`, as its events' names carry it) in its `state`.
pub(crate) fn thread_state<S: State>(
    thread_id: &str,
    snap: &StateSnapshot<S>,
    codec: &dyn Codec<S>,
    subgraphs: &[&str],
) -> Value {
    let tasks: Vec<Value> = snap
        .tasks
        .iter()
        .map(|t| {
            let sub = subgraphs.contains(&t.name.as_str()).then(|| {
                let ns = format!("{}:{}", t.name, t.key);
                json!({"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}})
            });
            json!({
                "id": t.key,
                "name": t.name,
                "path": ["__pregel_pull", t.name],
                "error": t.error,
                "interrupts": t.pause.iter().map(interrupt).collect::<Vec<_>>(),
                "checkpoint": null,
                "state": sub,
                "result": t.result.as_ref().map(|u| codec.update(u)),
            })
        })
        .collect();
    let parent = snap.parent_id.as_deref();
    json!({
        "values": codec.values(&snap.values),
        "next": snap.next,
        "tasks": tasks,
        "metadata": metadata(thread_id, snap.source.as_str(), snap.step, &snap.metadata),
        "created_at": snap.created_at,
        "checkpoint": checkpoint_ref(thread_id, &snap.checkpoint_id),
        "parent_checkpoint": parent.map(|p| checkpoint_ref(thread_id, p)),
        "interrupts": snap.pauses.iter().filter(|p| p.question.is_some()).map(interrupt).collect::<Vec<_>>(),
        "checkpoint_id": snap.checkpoint_id,
        "parent_checkpoint_id": parent,
    })
}

/// A ThreadState's `metadata`: the source and step, and the checkpoint's own pairs (those a
/// run kept as JSON under [`JSON_METADATA`] shown as the JSON they were). Its `thread_id` is
/// the thread read, as LangGraph's copy rewrites it: a copied thread's checkpoints keep the
/// run's metadata, which named the thread copied.
fn metadata(thread_id: &str, source: &str, step: i64, pairs: &BTreeMap<String, String>) -> Value {
    let mut out = json!({"source": source, "step": step, "parents": {}});
    for (k, v) in pairs {
        if k == JSON_METADATA {
            if let Ok(Value::Object(pairs)) = serde_json::from_str::<Value>(v) {
                for (k, v) in pairs {
                    out[k] = v;
                }
            }
        } else {
            out[k] = Value::String(v.clone());
        }
    }
    out["thread_id"] = json!(thread_id);
    out
}

/// A checkpoint as a page of the studio's timeline lists it: a ThreadState's links, `metadata`
/// and `created_at`, and `writes`, the nodes whose writes it applied; none of its `values`,
/// `next` or `tasks`, which take rebuilding its channels.
pub(crate) fn timeline_entry(r: &CheckpointRecord) -> Value {
    let parent = r.parent_id.as_deref();
    json!({
        "checkpoint": checkpoint_ref(&r.thread_id, &r.id),
        "parent_checkpoint": parent.map(|p| checkpoint_ref(&r.thread_id, p)),
        "checkpoint_id": &*r.id,
        "parent_checkpoint_id": parent,
        "metadata": metadata(&r.thread_id, r.source.as_str(), r.step, &r.metadata),
        "created_at": r.created_at.to_string(),
        "writes": r.writes.iter().map(|w| &**w).collect::<Vec<_>>(),
    })
}

/// Whether `metadata` holds every pair of `filter`.
pub(crate) fn matches(metadata: &Value, filter: &serde_json::Map<String, Value>) -> bool {
    filter.iter().all(|(k, v)| metadata.get(k) == Some(v))
}
