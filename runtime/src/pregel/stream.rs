//! Streaming a run: typed events as the run goes, through a bounded channel, so a slow consumer
//! slows the run down instead of growing memory; dropping the stream stops the run cleanly
//! between two steps, with its last checkpoint intact.

use super::outcome::Outcome;
use crate::checkpoint::Source;
use crate::error::Error;
use crate::graph::{Emitter, Forward, ForwardFn, SubgraphEvent};
use crate::signal::Paused;
use crate::state::State;
use futures::Stream;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;
use tokio::sync::mpsc;

mod json;
mod message;
mod step;
pub use json::writes_json;
pub use message::MessageMeta;
pub(crate) use message::TaskEmits;
pub(crate) use step::{announce, fresh_checkpoint, report};

/// What a stream reports (LangGraph's `stream_mode`s). Combine them with `|`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StreamMode(u8);

impl StreamMode {
    /// The whole state after each step.
    pub const VALUES: Self = Self(1);
    /// Each node's update, tagged by node, once per task.
    pub const UPDATES: Self = Self(2);
    /// Each task's start and end, with its duration and error.
    pub const TASKS: Self = Self(4);
    /// Each checkpoint written, with the nodes that run next.
    pub const CHECKPOINTS: Self = Self(8);
    /// The events nodes emit themselves through [`Context::emit`](crate::Context::emit).
    pub const CUSTOM: Self = Self(16);
    /// The message chunks nodes emit through
    /// [`Context::emit_message`](crate::Context::emit_message): a chat model's tokens.
    pub const MESSAGES: Self = Self(32);
    /// The tool calls nodes report through [`Context::emit_tool`](crate::Context::emit_tool)
    /// (LangGraph's `tools` mode): each call's start, end or error as the agent layer's tool
    /// node runs it.
    pub const TOOLS: Self = Self(64);
    /// Every mode.
    pub const ALL: Self = Self(127);

    /// Whether `self` includes every mode of `other`.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for StreamMode {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

/// One event of a streamed run. Their order within a step, and the LangGraph event each one is,
/// are in `docs/streaming.md`.
pub enum Event<S: State> {
    /// The state after step `step`.
    Values {
        /// The step.
        step: i64,
        /// The whole state (shared: cloning the event is cheap).
        state: Arc<S>,
    },
    /// What node `node` wrote in step `step`. An error handler's update is reported under the
    /// handler's name, `__error_handler__<node>` (LangGraph's).
    Update {
        /// The step.
        step: i64,
        /// The node.
        node: String,
        /// The task's key (see [`TaskStart`](Self::TaskStart)), when the stream reports tasks
        /// (the `tasks`, `debug` or `events` modes), so that an update finds its task among
        /// several of one node (`Send`s) in a step; `None` otherwise.
        key: Option<String>,
        /// Its update.
        update: S::Update,
        /// The task did not run: its writes were saved by the step's earlier, incomplete run (a
        /// pause or a failure) and are replayed, or come from the node cache. Cached updates
        /// come first in their step, with no task end (LangGraph's
        /// `"__metadata__": {"cached": true}`).
        cached: bool,
    },
    /// A task started. A task whose writes were saved by the step's earlier run does not start
    /// again, and an error handler has no start of its own (as in LangGraph).
    TaskStart {
        /// The step.
        step: i64,
        /// The task's id in its step (`pull:<node>`, `push:<index>`), under which its pending
        /// writes are saved and [`CompiledGraph::resume_task`](crate::CompiledGraph::resume_task)
        /// names it.
        id: String,
        /// The task's key, UUID-shaped: LangGraph's task id, shown by the task's start and end,
        /// the checkpoint before its step ([`Checkpoint::keys`](Self::Checkpoint)) and the
        /// thread's state ([`TaskSnapshot::key`](crate::TaskSnapshot::key)). In a checkpointed
        /// run it is the task's [idempotency key](crate::Context::idempotency_key), so a retried
        /// or resumed task keeps it.
        key: String,
        /// Its node.
        node: String,
    },
    /// A task ended: a node's task, or an error handler's, which follows the failed task's end
    /// (its `error` is the failure handled) as a task of its own, id `<task id>:error_handler`.
    TaskEnd {
        /// The step.
        step: i64,
        /// The task's id.
        id: String,
        /// The task's key (see [`TaskStart`](Self::TaskStart)): its start's; an error
        /// handler's is the key of `<task id>:error_handler`.
        key: String,
        /// Its node.
        node: String,
        /// How long it ran (all attempts).
        duration: Duration,
        /// Its error, when it failed.
        error: Option<String>,
    },
    /// A checkpoint was written; `next` are the nodes of the step that follows it.
    Checkpoint {
        /// The step it was written after.
        step: i64,
        /// Its id.
        id: String,
        /// What wrote it.
        source: Source,
        /// The nodes that run next.
        next: Vec<String>,
        /// The keys of the tasks that run next, in the order of `next` (see
        /// [`TaskStart`](Self::TaskStart)).
        keys: Vec<String>,
    },
    /// An event a node emitted.
    Custom {
        /// The step.
        step: i64,
        /// The node.
        node: String,
        /// What it emitted.
        value: serde_json::Value,
    },
    /// A message chunk a node emitted (mode `MESSAGES`): a chat model's token, as JSON
    /// (LangChain's `AIMessageChunk` dict, from the agent layer), with where it comes from.
    Message {
        /// The chunk.
        chunk: serde_json::Value,
        /// The task that emitted it (shared by its chunks).
        meta: Arc<MessageMeta>,
    },
    /// A tool call's progress a node reported (mode `TOOLS`): LangGraph's `tools` payload,
    /// `{"event": "tool-started" | "tool-output-delta" | "tool-finished" | "tool-error",
    /// "tool_call_id", …}`, as the agent layer's tool node reports it, with where it comes
    /// from.
    Tool {
        /// The payload.
        event: serde_json::Value,
        /// The task that reported it (shared by its reports).
        meta: Arc<MessageMeta>,
    },
    /// The run paused; resume the thread to go on. The last event of its stream.
    Paused(Vec<Paused>),
    /// An event of a subgraph run by a task of this run (or of a subgraph of it), when the run
    /// streams subgraphs ([`RunConfig::subgraphs`](crate::RunConfig::subgraphs)); it comes as it
    /// happens, before the update of the task that runs the subgraph.
    Subgraph {
        /// Where it comes from: one segment per level, `<node>:<task id>:<step>` of the task that
        /// runs the subgraph (LangGraph's `("<node>:<task id>",)`); `<task id>:<step>` is that
        /// level's segment of the subgraph's checkpoint namespace.
        ns: Vec<String>,
        /// The key of the task of each level of `ns`, in the same order: LangGraph's task id
        /// (see [`TaskStart`](Self::TaskStart)), so a level is LangGraph's `<node>:<key>`.
        keys: Vec<String>,
        /// The event.
        event: SubgraphEvent,
    },
}

impl<S: State> Event<S> {
    /// The namespace of the graph the event comes from: empty for the run's own graph, one
    /// segment per subgraph level for a [`Subgraph`](Self::Subgraph) event.
    pub fn ns(&self) -> &[String] {
        match self {
            Self::Subgraph { ns, .. } => ns,
            _ => &[],
        }
    }
}

impl<S: State> fmt::Debug for Event<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Values { step, state } => f
                .debug_struct("Values")
                .field("step", step)
                .field("state", state)
                .finish(),
            Self::Update {
                step,
                node,
                key,
                update,
                cached,
            } => f
                .debug_struct("Update")
                .field("step", step)
                .field("node", node)
                .field("key", key)
                .field("update", update)
                .field("cached", cached)
                .finish(),
            Self::TaskStart { step, id, key, node } => f
                .debug_struct("TaskStart")
                .field("step", step)
                .field("id", id)
                .field("key", key)
                .field("node", node)
                .finish(),
            Self::TaskEnd {
                step,
                id,
                key,
                node,
                duration,
                error,
            } => f
                .debug_struct("TaskEnd")
                .field("step", step)
                .field("id", id)
                .field("key", key)
                .field("node", node)
                .field("duration", duration)
                .field("error", error)
                .finish(),
            Self::Checkpoint {
                step,
                id,
                source,
                next,
                keys,
            } => f
                .debug_struct("Checkpoint")
                .field("step", step)
                .field("id", id)
                .field("source", source)
                .field("next", next)
                .field("keys", keys)
                .finish(),
            Self::Custom { step, node, value } => f
                .debug_struct("Custom")
                .field("step", step)
                .field("node", node)
                .field("value", value)
                .finish(),
            Self::Message { chunk, meta } => f
                .debug_struct("Message")
                .field("chunk", chunk)
                .field("meta", meta)
                .finish(),
            Self::Tool { event, meta } => f
                .debug_struct("Tool")
                .field("event", event)
                .field("meta", meta)
                .finish(),
            Self::Paused(p) => f.debug_tuple("Paused").field(p).finish(),
            Self::Subgraph { ns, keys, event } => f
                .debug_struct("Subgraph")
                .field("ns", ns)
                .field("keys", keys)
                .field("event", event)
                .finish(),
        }
    }
}

pub(crate) type Item<S> = Result<Event<S>, Error>;

/// Where a streamed run sends its events: the stream's channel, or, for a subgraph's run, the
/// stream of the run that called it.
pub(crate) struct Sink<S: State> {
    out: Out<S>,
    pub(crate) modes: StreamMode,
    /// Subgraphs' events go to the root stream too: how its tasks send them there.
    forward: Option<ForwardFn>,
    /// The run's thread, for the metadata of message chunks.
    thread: Option<Arc<str>>,
}

enum Out<S: State> {
    /// The root run's stream.
    Root(mpsc::Sender<Item<S>>),
    /// A subgraph's run: its events go, as JSON and under its namespace, to the root stream.
    Forward(Forward, Arc<[crate::state::FieldInfo]>),
}

impl<S: State> Clone for Out<S> {
    fn clone(&self) -> Self {
        match self {
            Self::Root(tx) => Self::Root(tx.clone()),
            Self::Forward(f, fields) => Self::Forward(f.clone(), fields.clone()),
        }
    }
}

impl<S: State> Out<S> {
    /// Sends `event`, waiting while the consumer is behind; `false` once the stream was dropped.
    async fn send(&self, event: Event<S>) -> bool {
        match self {
            Self::Root(tx) => tx.send(Ok(event)).await.is_ok(),
            Self::Forward(f, fields) => match json::erase(event, fields) {
                Some(e) => (f.send)(f.ns.to_vec(), f.keys.to_vec(), e).await,
                // A subgraph's pause is its caller's: the caller reports it.
                None => true,
            },
        }
    }
}

impl<S: State> Sink<S> {
    /// The run's thread, when it has one.
    pub(crate) fn thread(&self) -> Option<&str> {
        self.thread.as_deref()
    }

    /// The sink of a root run streaming `modes` into `tx` (and its subgraphs' events when
    /// `subgraphs`).
    pub(crate) fn new(tx: mpsc::Sender<Item<S>>, modes: StreamMode, subgraphs: bool, thread: Option<Arc<str>>) -> Self {
        let forward = subgraphs.then(|| {
            let tx = tx.clone();
            let send: ForwardFn = Arc::new(move |ns, keys, event| {
                let tx = tx.clone();
                Box::pin(async move { tx.send(Ok(Event::Subgraph { ns, keys, event })).await.is_ok() })
            });
            send
        });
        Self {
            out: Out::Root(tx),
            modes,
            forward,
            thread,
        }
    }
    /// The sink of a subgraph's run, forwarding to its caller's stream (`fields`: the
    /// subgraph's state fields, to write its updates as JSON).
    pub(crate) fn forwarding(to: Forward, fields: Arc<[crate::state::FieldInfo]>) -> Self {
        Self {
            modes: StreamMode(to.modes),
            forward: Some(to.send.clone()),
            thread: to.thread.clone(),
            out: Out::Forward(to, fields),
        }
    }
    pub(crate) fn wants(&self, mode: StreamMode) -> bool {
        self.modes.contains(mode)
    }
    /// Sends an event, waiting while the consumer is behind. Returns `false` once the stream
    /// was dropped.
    pub(crate) async fn send(&self, event: Event<S>) -> bool {
        self.out.send(event).await
    }
    pub(crate) fn is_closed(&self) -> bool {
        match &self.out {
            Out::Root(tx) => tx.is_closed(),
            // A subgraph's run stops with its caller's task, whose step the dropped stream drops.
            Out::Forward(..) => false,
        }
    }
    /// The root stream's channel, to watch for the stream being dropped.
    pub(crate) fn watch(&self) -> Option<mpsc::Sender<Item<S>>> {
        match &self.out {
            Out::Root(tx) => Some(tx.clone()),
            Out::Forward(..) => None,
        }
    }
    /// The emitter nodes of step `step` get through their context.
    pub(crate) fn emitter(&self, node: Arc<str>, step: i64) -> Option<Emitter> {
        if !self.wants(StreamMode::CUSTOM) {
            return None;
        }
        let out = self.out.clone();
        Some(Emitter(Arc::new(move |value| {
            let out = out.clone();
            let node = node.to_string();
            Box::pin(async move { out.send(Event::Custom { step, node, value }).await })
        })))
    }
    /// The emitter of the message chunks or tool reports (`kind`) of the task `id` (node
    /// `node`, `push`: its index among the step's `Send`s, `key`: its key) in step `step`, when
    /// the run streams their mode.
    pub(crate) fn task_emitter(
        &self,
        kind: TaskEmits,
        node: &str,
        (id, key): (&str, &str),
        push: Option<usize>,
        step: i64,
    ) -> Option<Emitter> {
        if !self.wants(kind.mode()) {
            return None;
        }
        let task = message::TaskOf { node, push, step };
        let thread = self.thread.as_deref().map(str::to_owned);
        let (ns, keys) = (self.task_ns(node, id, step), self.task_keys(key));
        Some(message::emitter(&self.out, &task, (ns, keys), thread, kind))
    }
    /// The namespace of the task `id` of node `node` in step `step`: this run's, then the
    /// task's own segment.
    fn task_ns(&self, node: &str, id: &str, step: i64) -> Vec<String> {
        let segment = format!("{node}:{id}:{step}");
        match &self.out {
            Out::Root(_) => vec![segment],
            Out::Forward(f, _) => f.ns.iter().cloned().chain([segment]).collect(),
        }
    }
    /// The keys of the levels of the namespace of the task whose key is `key`: this run's, then
    /// `key`.
    fn task_keys(&self, key: &str) -> Vec<String> {
        match &self.out {
            Out::Root(_) => vec![key.to_owned()],
            Out::Forward(f, _) => f.keys.iter().cloned().chain([key.to_owned()]).collect(),
        }
    }
    /// Whether the subgraphs this run's tasks run stream their events here.
    pub(crate) fn streams_subgraphs(&self) -> bool {
        self.forward.is_some()
    }
    /// Where a subgraph run by the task `id` (key `key`) of node `node` in step `step` streams
    /// its events, when this run streams subgraphs.
    pub(crate) fn forward(&self, node: &str, (id, key): (&str, &str), step: i64) -> Option<Forward> {
        let send = self.forward.clone()?;
        Some(Forward {
            send,
            ns: self.task_ns(node, id, step).into(),
            keys: self.task_keys(key).into(),
            modes: self.modes.0,
            thread: self.thread.clone(),
        })
    }
}

/// A streamed run: a [`Stream`] of [`Event`]s, ending after the run's last event (an error
/// ends it too). Dropping it stops the run cleanly between two steps.
pub struct RunStream<S: State> {
    rx: mpsc::Receiver<Item<S>>,
    outcome: Option<tokio::task::JoinHandle<Result<Outcome<S>, Error>>>,
}

impl<S: State> fmt::Debug for RunStream<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunStream").finish_non_exhaustive()
    }
}

impl<S: State> RunStream<S> {
    pub(crate) fn new(
        rx: mpsc::Receiver<Item<S>>,
        outcome: tokio::task::JoinHandle<Result<Outcome<S>, Error>>,
    ) -> Self {
        Self {
            rx,
            outcome: Some(outcome),
        }
    }

    /// Waits for the run to end (draining the remaining events) and returns its outcome.
    ///
    /// # Errors
    /// The run's error.
    pub async fn outcome(mut self) -> Result<Outcome<S>, Error> {
        while self.rx.recv().await.is_some() {}
        let handle = self.outcome.take().expect("the outcome is taken once");
        handle.await.map_err(|e| Error::run_lost(e.to_string()))?
    }

    /// Stops the run as dropping the stream does (the step under way is aborted and applies
    /// nothing), then waits until it has ended: when this returns, every checkpoint and pending
    /// write the run made is stored (or failed), so a caller may delete the thread's newer
    /// checkpoints (a server's rollback) without a late write landing after it.
    ///
    /// # Errors
    /// The run's error (a run stopped mid-way ends as drained).
    pub async fn stop(mut self) -> Result<Outcome<S>, Error> {
        self.rx.close();
        while self.rx.recv().await.is_some() {}
        let handle = self.outcome.take().expect("the outcome is taken once");
        handle.await.map_err(|e| Error::run_lost(e.to_string()))?
    }
}

impl<S: State> Stream for RunStream<S> {
    type Item = Result<Event<S>, Error>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

/// The capacity of a stream's channel: how far a run may get ahead of its consumer.
pub(crate) const CAPACITY: usize = 64;
