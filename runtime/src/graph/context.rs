//! What a node sees of the run it is part of: its [`Context`] (node, step, stream writer,
//! interrupts), and the run's checkpointer, thread and durability that a subgraph saves under.

use super::interrupt::Scratch;
use crate::checkpoint::Checkpointer;
use crate::signal::Interrupt;
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
    pub(crate) emitter: Option<Emitter>,
    pub(crate) run: Option<Arc<RunInfo>>,
    /// Where a subgraph this task runs streams its events, when the run streams subgraphs.
    pub(crate) forward: Option<super::Forward>,
}

/// Where a checkpointed run's tasks run: what a subgraph needs to save under one. One per run,
/// shared by its tasks' contexts.
#[derive(Debug)]
pub(crate) struct RunInfo {
    pub(crate) checkpointer: Arc<dyn Checkpointer>,
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
