//! The `messages` stream mode: a chat model's chunks, emitted by a node through its context
//! ([`Context::emit_message`](crate::Context::emit_message)), each with the metadata of the task
//! that produced it (LangGraph's `(message_chunk, metadata)` pairs); and the `tools` mode, a tool
//! call's reports ([`Context::emit_tool`](crate::Context::emit_tool)) with the same metadata. The
//! runtime carries both as JSON: what a chunk or a report is (LangChain's `AIMessageChunk` dict,
//! LangGraph's `tool-started` payload) is the agent layer's.

use super::{Event, Out};
use crate::graph::Emitter;
use crate::state::State;
use std::sync::Arc;

/// Where a message chunk comes from: the task that emitted it, as LangGraph's metadata of a
/// `messages` event names it (`langgraph_node`, `langgraph_step`, `langgraph_triggers`,
/// `langgraph_path`, `langgraph_checkpoint_ns`, `thread_id`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageMeta {
    /// The node.
    pub node: String,
    /// The step of the graph the node runs in.
    pub step: i64,
    /// What triggered the task: `["branch:to:<node>"]` for a node triggered by its edges,
    /// `["__pregel_push"]` for a `Send`.
    pub triggers: Vec<String>,
    /// The task's path: `["__pregel_pull", "<node>"]`, or `["__pregel_push", <index>]` for a
    /// `Send`.
    pub path: Vec<serde_json::Value>,
    /// The task's namespace, outermost first: the segments of the subgraphs it runs in (as in
    /// [`Event::Subgraph`]), then its own, `<node>:<task id>:<step>`.
    pub ns: Vec<String>,
    /// The key of the task of each level of `ns`, in the same order, its own last: LangGraph's
    /// task ids (see [`Event::TaskStart`]), so a level of LangGraph's
    /// `langgraph_checkpoint_ns` is `<node>:<key>`.
    pub keys: Vec<String>,
    /// The run's thread, when it has one.
    pub thread_id: Option<String>,
}

impl MessageMeta {
    /// The task's checkpoint namespace in weir's form: [`ns`](Self::ns) joined with `|`.
    pub fn checkpoint_ns(&self) -> String {
        self.ns.join("|")
    }
}

/// What a task's emitter carries.
#[derive(Debug, Clone, Copy)]
pub(crate) enum TaskEmits {
    /// Message chunks ([`Event::Message`]).
    Message,
    /// Tool reports ([`Event::Tool`]).
    Tool,
}

impl TaskEmits {
    /// The stream mode that carries it.
    pub(crate) const fn mode(self) -> super::StreamMode {
        match self {
            TaskEmits::Message => super::StreamMode::MESSAGES,
            TaskEmits::Tool => super::StreamMode::TOOLS,
        }
    }
}

/// The task a [`MessageMeta`] is made for.
pub(super) struct TaskOf<'a> {
    pub(super) node: &'a str,
    pub(super) push: Option<usize>,
    pub(super) step: i64,
}

/// The emitter of task `task`'s message chunks or tool reports (`kind`) into `out` (`ns`: the
/// task's namespace, `keys`: its levels' task keys), with its metadata made once and shared by
/// what it emits.
pub(super) fn emitter<S: State>(
    out: &Out<S>,
    task: &TaskOf<'_>,
    (ns, keys): (Vec<String>, Vec<String>),
    thread_id: Option<String>,
    kind: TaskEmits,
) -> Emitter {
    let (triggers, path) = match task.push {
        None => (
            vec![format!("branch:to:{}", task.node)],
            vec!["__pregel_pull".into(), task.node.into()],
        ),
        Some(i) => (vec!["__pregel_push".to_owned()], vec!["__pregel_push".into(), i.into()]),
    };
    let meta = Arc::new(MessageMeta {
        node: task.node.to_owned(),
        step: task.step,
        triggers,
        path,
        ns,
        keys,
        thread_id,
    });
    let out = out.clone();
    Emitter(Arc::new(move |chunk| {
        let (out, meta) = (out.clone(), meta.clone());
        let event = match kind {
            TaskEmits::Message => Event::Message { chunk, meta },
            TaskEmits::Tool => Event::Tool { event: chunk, meta },
        };
        Box::pin(async move { out.send(event).await })
    }))
}
