//! How one run goes ([`RunConfig`]: its thread, recursion limit, durability, interrupts), a
//! handle to drain it, and what a run accepts as input.

use crate::graph::Durability;
use crate::state::{State, Update};
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
    /// A stream of this run also carries the events of the subgraphs its tasks run, at every
    /// depth, as [`Event::Subgraph`](crate::Event::Subgraph) (LangGraph's `subgraphs=True`).
    /// Only streams read it.
    pub subgraphs: bool,
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
            subgraphs: false,
        }
    }
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
    /// Streams the events of subgraphs too (see [`subgraphs`](Self::subgraphs)).
    pub fn subgraphs(mut self, on: bool) -> Self {
        self.subgraphs = on;
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
