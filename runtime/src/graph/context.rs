//! What a node sees of the run it is part of: its [`Context`] (node, step, stream writer,
//! interrupts, the store, the run context), and the run's checkpointer, thread and durability that a subgraph saves under.

use super::interrupt::Scratch;
use crate::checkpoint::Checkpointer;
use crate::signal::Interrupt;
use crate::store::{Store, StoreError};
use futures::future::BoxFuture;
use serde::{de::DeserializeOwned, Serialize};
use std::fmt;
use std::sync::Arc;

/// When a checkpointed run writes its checkpoints (LangGraph's `durability`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Each checkpoint is written before the next step starts.
    Sync,
    /// Checkpoints are written in the background, in order, while the next step runs; the run
    /// waits for the last one before it returns.
    #[default]
    Async,
    /// Only the last checkpoint of the run is written, when it ends (done, failed or paused).
    Exit,
}

/// What a node can know of the run it is part of, and how it talks to it.
#[derive(Debug, Clone)]
pub struct Context {
    pub(crate) node: Arc<str>,
    /// The task's index among the step's `Send`s; `None` for a node triggered by its edges.
    pub(crate) push: Option<usize>,
    pub(crate) step: i64,
    /// The last step the run may take (LangGraph's `stop`): see [`Context::remaining_steps`].
    pub(crate) stop: i64,
    /// The run's recursion limit, which a subgraph run by this task inherits.
    pub(crate) limit: usize,
    pub(crate) scratch: Option<Arc<Scratch>>,
    pub(crate) run: Option<Arc<RunInfo>>,
    /// The checkpoint the task's step started from, in a checkpointed run (none before a
    /// thread's first): part of its idempotency key.
    pub(crate) base: Option<Arc<str>>,
    /// What a streamed run gives its tasks; `None` when nobody listens. Rarely set, and behind
    /// one pointer: every task of a step carries its context through its group.
    pub(crate) streams: Option<Arc<Streams>>,
    /// The run's store, shared across threads and runs.
    pub(crate) store: Option<Arc<dyn Store>>,
    /// The run's context ([`RunConfig::context`](crate::RunConfig::context)), type-erased.
    pub(crate) context: Option<super::ErasedContext>,
}

/// What a task of a streamed run streams through: its node's custom events, its message chunks,
/// its tool reports, and the events of a subgraph it runs.
#[derive(Debug)]
pub(crate) struct Streams {
    pub(crate) emitter: Option<Emitter>,
    /// Where its message chunks go, when the run streams messages.
    pub(crate) messages: Option<Emitter>,
    /// Where its tool reports go, when the run streams tools.
    pub(crate) tools: Option<Emitter>,
    /// Where a subgraph this task runs streams its events, when the run streams subgraphs.
    pub(crate) forward: Option<super::Forward>,
}

impl Streams {
    /// What a task streams through, or `None` when it streams nothing.
    pub(crate) fn of(
        emitter: Option<Emitter>,
        (messages, tools): (Option<Emitter>, Option<Emitter>),
        forward: Option<super::Forward>,
    ) -> Option<Arc<Self>> {
        (emitter.is_some() || messages.is_some() || tools.is_some() || forward.is_some()).then(|| {
            Arc::new(Self {
                emitter,
                messages,
                tools,
                forward,
            })
        })
    }

    /// Where a subgraph run by the task of `ctx` streams its events, if anywhere.
    pub(crate) fn forward(ctx: &Context) -> Option<&super::Forward> {
        ctx.streams.as_ref().and_then(|s| s.forward.as_ref())
    }

    fn emitter(ctx: &Context) -> Option<&Emitter> {
        ctx.streams.as_ref().and_then(|s| s.emitter.as_ref())
    }

    fn messages(ctx: &Context) -> Option<&Emitter> {
        ctx.streams.as_ref().and_then(|s| s.messages.as_ref())
    }

    fn tools(ctx: &Context) -> Option<&Emitter> {
        ctx.streams.as_ref().and_then(|s| s.tools.as_ref())
    }
}

/// Where a checkpointed run's tasks run: what a subgraph needs to save under one. One per run,
/// shared by its tasks' contexts.
#[derive(Debug)]
pub(crate) struct RunInfo {
    pub(crate) checkpointer: Arc<dyn Checkpointer>,
    pub(crate) thread: Arc<str>,
    pub(crate) ns: Arc<str>,
    pub(crate) durability: Durability,
    /// Whether every task's writes are kept for the thread's history (`RunConfig::task_results`).
    pub(crate) task_results: bool,
    /// Pairs for the metadata of the run's checkpoints.
    pub(crate) metadata: std::collections::BTreeMap<String, String>,
}

impl Context {
    /// The name of the running node.
    pub fn node(&self) -> &str {
        &self.node
    }
    /// The step the node runs in (0 is the first step after the input).
    pub fn step(&self) -> i64 {
        self.step
    }

    /// How many steps the run may still take, counting this one's successors and the step after
    /// the last that finds nothing to do (LangGraph's managed value `RemainingSteps`:
    /// `stop - step`). A run may take steps up to `stop`, which is its first step plus the
    /// recursion limit plus one: a new run's input is step -1, so its first node (step 1, after
    /// the start step 0) sees `limit - 1`; a resumed run counts from its own first step (the
    /// step after the checkpoint it loaded), so its first node sees `limit + 1`; a subgraph
    /// counts its own steps, under the recursion limit of the run it is part of. The last step a
    /// task can run in sees 0.
    ///
    /// An agent reads it to wrap up before the limit: a node that must be followed by one more
    /// step to finish checks `remaining_steps() >= 2`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use weir_runtime::{Context, GraphBuilder, RunConfig, START, END};
    /// # weir_runtime::__doc_state!();
    /// let mut g = GraphBuilder::<Doc>::new();
    /// g.add_node("a", |_: &Doc, ctx: &Context| {
    ///     let seen = format!("{} {} {}", ctx.step(), ctx.remaining_steps(), ctx.is_last_step());
    ///     DocUpdate::default().text(seen)
    /// });
    /// g.add_edge(START, "a").add_edge("a", END);
    /// let app = g.compile().unwrap();
    /// # let rt = tokio::runtime::Runtime::new().unwrap();
    /// let out = rt.block_on(app.invoke(Doc::default(), &RunConfig::default().recursion_limit(5))).unwrap();
    /// assert_eq!(out.text, "1 4 false");
    /// ```
    pub fn remaining_steps(&self) -> i64 {
        self.stop.saturating_sub(self.step)
    }

    /// Whether this is the step before the run's last (LangGraph's managed value `IsLastStep`:
    /// `step == stop - 1`, so [`remaining_steps`](Self::remaining_steps) is 1). A task that
    /// sees `true` has exactly one step after its own: a node it leads to can still run, and
    /// that node's own successor would pass the recursion limit. Like LangGraph, the very last
    /// step (`remaining_steps() == 0`) sees `false`.
    pub fn is_last_step(&self) -> bool {
        self.step == self.stop.saturating_sub(1)
    }

    /// The recursion limit of the run this task is part of ([`RunConfig::recursion_limit`]).
    ///
    /// [`RunConfig::recursion_limit`]: crate::RunConfig::recursion_limit
    pub fn recursion_limit(&self) -> usize {
        self.limit
    }

    /// A key for this task's external side effects (a payment, an email, a ticket): give it to
    /// the service as its idempotency key (Stripe's `Idempotency-Key`, a unique column) and the
    /// effect happens once however often the task runs. It is the same for every run of this
    /// task: its retries, the run that resumes it after an interrupt, an error or a crash of
    /// the process (in this process or another one reading the same checkpointer), and it
    /// differs between tasks: another node, another `Send` of the step, a later step, another
    /// thread, a subgraph's task, and a task of a fork (a replay from an earlier checkpoint or a
    /// state edit starts from a new checkpoint: new work). It is a UUID-shaped hash of the
    /// thread, the namespace, the checkpoint the step started from, the step and the task's id,
    /// and the task's `key` in the stream's events ([`Event::TaskStart`](crate::Event::TaskStart))
    /// and the thread's state ([`TaskSnapshot::key`](crate::TaskSnapshot::key)): LangGraph's
    /// task id, which a server shows.
    ///
    /// `None` when the run has no checkpointer: nothing can resume it, so no later run of the
    /// task could know it. Under [`Durability::Exit`] only a run's last checkpoint is saved:
    /// retries and the resume after a crash keep the key, but a resume after an error or an
    /// interrupt starts from the checkpoint the run wrote as it ended, so its tasks get new
    /// keys; keep the default durability where a side effect must happen once.
    ///
    /// # Examples
    ///
    /// ```
    /// # use weir_runtime::{Context, GraphBuilder, RunConfig, START, END};
    /// # use weir_runtime::checkpoint::MemorySaver;
    /// # weir_runtime::__doc_state!();
    /// let mut g = GraphBuilder::<Doc>::new();
    /// g.add_node("charge", |_: &Doc, ctx: &Context| {
    ///     let key = ctx.idempotency_key().expect("a checkpointed run");
    ///     // payments.charge(amount, key) …
    ///     DocUpdate::default().text(key)
    /// });
    /// g.add_edge(START, "charge").add_edge("charge", END);
    /// let app = g.compile().unwrap().with_checkpointer(MemorySaver::new());
    /// # let rt = tokio::runtime::Runtime::new().unwrap();
    /// let out = rt.block_on(app.invoke(Doc::default(), &RunConfig::thread("t1"))).unwrap();
    /// assert_eq!(out.text.len(), 36);
    /// ```
    pub fn idempotency_key(&self) -> Option<String> {
        let run = self.run.as_ref()?;
        let task = super::task_key::task_id(&self.node, self.push);
        Some(super::task_key::idempotency_key(
            &run.thread,
            &run.ns,
            self.base.as_deref(),
            self.step,
            &task,
        ))
    }

    /// The store of the run (LangGraph's `runtime.store`): long-term memory shared by every
    /// thread and run of the graph, attached with
    /// [`CompiledGraph::with_store`](crate::CompiledGraph::with_store) or
    /// [`RunConfig::store`](crate::RunConfig::store), and passed down to subgraphs. Its typed
    /// helpers `get_as` and `put_as` read and write serde values.
    ///
    /// # Errors
    /// When the run has no store, naming the node.
    pub fn store(&self) -> Result<&Arc<dyn Store>, StoreError> {
        self.store.as_ref().ok_or_else(|| {
            StoreError::invalid(format!(
                "node `{}` asked for the store, but the run has none: attach one with \
                 `CompiledGraph::with_store` or `RunConfig::store`",
                self.node
            ))
        })
    }

    /// The run's context as a `T` (LangGraph's `runtime.context`), or `None` when the run has
    /// no context or one of another type. A node of a graph that declares a context reads it
    /// typed instead, as its third argument (`|state, ctx: &Context, c: &C|`), which the
    /// builder checks against the graph's context type at compile time; this lookup is for the
    /// code that only has a `Context` (a tool, a helper shared by graphs), and cannot fail
    /// otherwise than with `None`.
    pub fn context<T: std::any::Any>(&self) -> Option<&T> {
        self.context.as_ref().and_then(|c| c.get())
    }

    /// The run's context as a `C`, for a node that reads it typed: an error naming the node
    /// when the run carries none of that type (a subgraph declaring another context type than
    /// its parent's).
    pub(crate) fn typed_context<C: std::any::Any>(&self) -> Result<&C, crate::BoxError> {
        super::ErasedContext::typed(self.context.as_ref(), format_args!("node `{}`", self.node))
    }

    /// Emits `value` to the run's stream, in `custom` mode (LangGraph's stream writer): LLM tokens,
    /// progress. Waits while the consumer is behind. Does nothing when nobody streams `custom`
    /// events, or when `value` cannot be serialized.
    pub async fn emit(&self, value: impl Serialize) {
        if let (Some(e), Ok(v)) = (Streams::emitter(self), serde_json::to_value(value)) {
            e.emit(v).await;
        }
    }

    /// Whether anybody listens to [`emit`](Self::emit): to skip building events nobody reads.
    pub fn is_streaming(&self) -> bool {
        Streams::emitter(self).is_some()
    }

    /// Emits a chat model's message chunk to the run's stream, in `messages` mode (LangGraph's
    /// `messages` stream mode): the stream gets it as [`Event::Message`](crate::Event::Message),
    /// with the node, step, triggers, path, namespace and thread of this task. The agent layer's
    /// model calls emit each chunk as LangChain's `AIMessageChunk` dict; a whole message (a
    /// tool's answer) may be emitted too. Waits while the consumer is behind. Does nothing when
    /// nobody streams messages (check [`streams_messages`](Self::streams_messages) to skip
    /// building chunks), or when `chunk` cannot be serialized.
    pub async fn emit_message(&self, chunk: impl Serialize) {
        if let (Some(e), Ok(v)) = (Streams::messages(self), serde_json::to_value(chunk)) {
            e.emit(v).await;
        }
    }

    /// Whether anybody listens to [`emit_message`](Self::emit_message).
    pub fn streams_messages(&self) -> bool {
        Streams::messages(self).is_some()
    }

    /// Reports a tool call's progress to the run's stream, in `tools` mode (LangGraph's `tools`
    /// stream mode): the stream gets it as [`Event::Tool`](crate::Event::Tool), with this
    /// task's metadata. The agent layer's tool node reports each call's start
    /// (`{"event": "tool-started", "tool_call_id", "tool_name", "input"}`) and its end
    /// (`tool-finished` with the tool message as `output`, or `tool-error` with a `message`).
    /// Waits while the consumer is behind. Does nothing when nobody streams tools, or when
    /// `event` cannot be serialized.
    pub async fn emit_tool(&self, event: impl Serialize) {
        if let (Some(e), Ok(v)) = (Streams::tools(self), serde_json::to_value(event)) {
            e.emit(v).await;
        }
    }

    /// Whether anybody listens to [`emit_tool`](Self::emit_tool).
    pub fn streams_tools(&self) -> bool {
        Streams::tools(self).is_some()
    }

    /// Pauses the run to ask `question`, and returns the answer once the thread is resumed with
    /// one (LangGraph's `interrupt`). Typed both ways: the question is saved through serde, and
    /// an answer that is not an `A` is an error naming the node.
    ///
    /// The first time, this returns the [`Interrupt`] pause: propagate it with `?`. The run stops
    /// with [`Outcome::Paused`](crate::Outcome::Paused); resuming the thread runs the node again
    /// from the top, and this call then returns the answer. Several interrupts in one node are
    /// answered in order, one resume each.
    ///
    /// # Errors
    /// The pause itself; an answer of another type; a graph without a checkpointer.
    pub fn interrupt<Q: Serialize, A: DeserializeOwned>(&self, question: Q) -> Result<A, Interrupt> {
        match &self.scratch {
            Some(s) => s.ask(&self.node, question),
            None => Err(Interrupt::no_checkpointer()),
        }
    }
}

/// Sends a node's custom events to the stream.
#[derive(Clone)]
pub(crate) struct Emitter(pub(crate) Arc<dyn Fn(serde_json::Value) -> BoxFuture<'static, bool> + Send + Sync>);

impl Emitter {
    pub(crate) async fn emit(&self, value: serde_json::Value) -> bool {
        (self.0)(value).await
    }
}

impl fmt::Debug for Emitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Emitter")
    }
}
