//! A subgraph's stream events on their way to the stream of the run that called it: as JSON (the
//! subgraph's state type is not its caller's), under the namespace of the task that ran it.

use crate::checkpoint::Source;
use futures::future::BoxFuture;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// An event of a subgraph's run, in the stream of the run that called it when that run streams
/// subgraphs ([`RunConfig::subgraphs`](crate::RunConfig::subgraphs)). The events of
/// [`Event`](crate::Event), with the subgraph's state and updates as JSON objects: see
/// [`writes_json`](crate::writes_json).
#[derive(Debug, Clone, PartialEq)]
pub enum SubgraphEvent {
    /// The subgraph's whole state after step `step`.
    Values {
        /// The subgraph's step.
        step: i64,
        /// Its state, `{field: value}`.
        state: serde_json::Value,
    },
    /// What node `node` of the subgraph wrote.
    Update {
        /// The subgraph's step.
        step: i64,
        /// The node.
        node: String,
        /// The task's key, when the stream reports tasks (see
        /// [`Event::Update`](crate::Event::Update)).
        key: Option<String>,
        /// Its update, `{field: value}` for the fields it wrote.
        update: serde_json::Value,
        /// Replayed from the saved writes of a step that did not complete.
        cached: bool,
    },
    /// A task of the subgraph started.
    TaskStart {
        /// The subgraph's step.
        step: i64,
        /// The task's id.
        id: String,
        /// The task's key, LangGraph's task id (see [`Event::TaskStart`](crate::Event::TaskStart)).
        key: String,
        /// Its node.
        node: String,
    },
    /// A task of the subgraph ended.
    TaskEnd {
        /// The subgraph's step.
        step: i64,
        /// The task's id.
        id: String,
        /// The task's key, its start's.
        key: String,
        /// Its node.
        node: String,
        /// How long it ran.
        duration: Duration,
        /// Its error, when it failed.
        error: Option<String>,
    },
    /// The subgraph wrote a checkpoint (under its own checkpoint namespace).
    Checkpoint {
        /// The subgraph's step it was written after.
        step: i64,
        /// Its id.
        id: String,
        /// What wrote it.
        source: Source,
        /// The subgraph's nodes that run next.
        next: Vec<String>,
        /// The keys of the tasks that run next, in the order of `next`.
        keys: Vec<String>,
    },
    /// A node of the subgraph emitted an event.
    Custom {
        /// The subgraph's step.
        step: i64,
        /// The node.
        node: String,
        /// What it emitted.
        value: serde_json::Value,
    },
    /// A node of the subgraph emitted a message chunk (mode
    /// [`MESSAGES`](crate::StreamMode::MESSAGES)); `meta.ns` is the namespace of its task.
    Message {
        /// The chunk.
        chunk: serde_json::Value,
        /// Where it comes from.
        meta: Arc<crate::MessageMeta>,
    },
    /// A node of the subgraph reported a tool call's progress (mode
    /// [`TOOLS`](crate::StreamMode::TOOLS)); `meta.ns` is the namespace of its task.
    Tool {
        /// The report.
        event: serde_json::Value,
        /// Where it comes from.
        meta: Arc<crate::MessageMeta>,
    },
}

/// Sends a subgraph's event, with its namespace and its levels' task keys, to the root run's
/// stream; `false` once that stream was dropped.
pub(crate) type ForwardFn =
    Arc<dyn Fn(Vec<String>, Vec<String>, SubgraphEvent) -> BoxFuture<'static, bool> + Send + Sync>;

/// What a task gets to stream the events of a subgraph it runs: where they go, the namespace
/// they go under (one segment per subgraph level, this task's last), and the stream modes.
#[derive(Clone)]
pub(crate) struct Forward {
    pub(crate) send: ForwardFn,
    pub(crate) ns: Arc<[String]>,
    /// The key of the task of each level of `ns` (LangGraph's task id, see
    /// [`Event::TaskStart`](crate::Event::TaskStart)).
    pub(crate) keys: Arc<[String]>,
    /// The root stream's modes, as [`StreamMode`](crate::StreamMode)'s bits.
    pub(crate) modes: u8,
    /// The run's thread, for the metadata of the subgraph's message chunks.
    pub(crate) thread: Option<Arc<str>>,
}

impl fmt::Debug for Forward {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Forward")
            .field("ns", &self.ns)
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}
