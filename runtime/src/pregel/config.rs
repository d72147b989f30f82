use super::interrupt::Scratch;
use super::stream::Emitter;
use crate::checkpoint::Checkpointer;
use crate::signal::Interrupt;
use crate::state::{State, Update};
use serde::{de::DeserializeOwned, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// How one run goes: its thread, recursion limit, durability, interrupts, and a handle to drain it.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The most supersteps a run may take (LangGraph's `recursion_limit`, default 25).
    pub recursion_limit: usize,
    /// Requests a clean stop between two steps.
    pub drain: Option<DrainHandle>,
    /// The thread the run belongs to; required when the graph has a checkpointer.
    pub thread_id: Option<String>,
    /// Run from this past checkpoint of the thread instead of its latest (time travel: a fork).
    pub checkpoint_id: Option<String>,
    /// When checkpoints are written.
    pub durability: Durability,
    /// Pause before these nodes, in this run (besides the graph's own).
    pub interrupt_before: Vec<String>,
    /// Pause after these nodes, in this run (besides the graph's own).
    pub interrupt_after: Vec<String>,
    /// The checkpoint namespace: `""` for a graph run on its own; a subgraph's runs are saved
    /// under the namespace of the task that runs them.
    pub ns: String,
}

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            recursion_limit: 25,
            drain: None,
            thread_id: None,
            checkpoint_id: None,
            durability: Durability::Async,
            interrupt_before: Vec::new(),
            interrupt_after: Vec::new(),
            ns: String::new(),
        }
    }
}

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

impl RunConfig {
    /// The default configuration on thread `id`.
    pub fn thread(id: impl Into<String>) -> Self {
        Self {
            thread_id: Some(id.into()),
            ..Self::default()
        }
    }
    /// Sets the recursion limit.
    pub fn recursion_limit(mut self, limit: usize) -> Self {
        self.recursion_limit = limit;
        self
    }
    /// Runs from this past checkpoint of the thread (a fork).
    pub fn checkpoint_id(mut self, id: impl Into<String>) -> Self {
        self.checkpoint_id = Some(id.into());
        self
    }
    /// Sets the durability.
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }
    /// Pauses before `node` in this run.
    pub fn interrupt_before(mut self, node: impl Into<String>) -> Self {
        self.interrupt_before.push(node.into());
        self
    }
    /// Pauses after `node` in this run.
    pub fn interrupt_after(mut self, node: impl Into<String>) -> Self {
        self.interrupt_after.push(node.into());
        self
    }
    /// Sets the checkpoint namespace (to read a subgraph's state: the namespace of its task).
    pub fn ns(mut self, ns: impl Into<String>) -> Self {
        self.ns = ns.into();
        self
    }
    /// Attaches a drain handle.
    pub fn drain(mut self, handle: DrainHandle) -> Self {
        self.drain = Some(handle);
        self
    }
}

/// Asks a run to stop cleanly between two steps (LangGraph's `RunControl.request_drain`).
#[derive(Debug, Clone, Default)]
pub struct DrainHandle(Arc<AtomicBool>);

impl DrainHandle {
    /// A handle that has not requested anything yet.
    pub fn new() -> Self {
        Self::default()
    }
    /// Requests the drain: the step under way finishes, no further step starts.
    pub fn request(&self) {
        self.0.store(true, Ordering::Release);
    }
    /// Whether a drain was requested.
    pub fn is_requested(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// What a node can know of the run it is part of, and how it talks to it.
#[derive(Debug, Clone)]
pub struct Context {
    pub(crate) node: Arc<str>,
    /// The task's index among the step's `Send`s; `None` for a node triggered by its edges.
    pub(crate) push: Option<usize>,
    pub(crate) step: i64,
    pub(crate) scratch: Option<Arc<Scratch>>,
    pub(crate) emitter: Option<Emitter>,
    pub(crate) run: Option<Arc<RunInfo>>,
}

/// Where a checkpointed run's tasks run: what a subgraph needs to save under one. One per run,
/// shared by its tasks' contexts.
#[derive(Debug)]
pub(crate) struct RunInfo {
    pub(crate) saver: Arc<dyn Checkpointer>,
    pub(crate) thread: Arc<str>,
    pub(crate) ns: Arc<str>,
    pub(crate) durability: Durability,
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

    /// Emits `value` to the run's stream, in `custom` mode (LangGraph's stream writer): LLM tokens,
    /// progress. Waits while the consumer is behind. Does nothing when nobody streams `custom`
    /// events, or when `value` cannot be serialized.
    pub async fn emit(&self, value: impl Serialize) {
        if let (Some(e), Ok(v)) = (&self.emitter, serde_json::to_value(value)) {
            e.emit(v).await;
        }
    }

    /// Whether anybody listens to [`emit`](Self::emit): to skip building events nobody reads.
    pub fn is_streaming(&self) -> bool {
        self.emitter.is_some()
    }

    /// Pauses the run to ask `question`, and returns the answer once the thread is resumed with
    /// one (LangGraph's `interrupt`). Typed both ways: the question is saved through serde, and
    /// an answer that is not an `A` is an error naming the node.
    ///
    /// The first time, this returns the [`Interrupt`] pause: propagate it with `?`. The run stops
    /// with [`Outcome::Paused`](super::Outcome::Paused); resuming the thread runs the node again
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

/// What a run accepts as input: a whole state (every field written) or an update.
pub trait IntoInput<S: State, M> {
    /// The input as writes.
    fn into_update(self) -> S::Update;
}

#[doc(hidden)]
#[derive(Debug)]
pub enum AsState {}
#[doc(hidden)]
#[derive(Debug)]
pub enum AsUpdate {}

impl<S: State> IntoInput<S, AsState> for S {
    fn into_update(self) -> S::Update {
        State::into_update(self)
    }
}

impl<U: Update> IntoInput<U::State, AsUpdate> for U {
    fn into_update(self) -> U {
        self
    }
}
