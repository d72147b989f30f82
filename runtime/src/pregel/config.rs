//! How one run goes ([`RunConfig`]: its thread, recursion limit, durability, interrupts, its
//! typed context), a handle to drain it, and what a run accepts as input.

use crate::graph::{ContextValue, Durability, RunContext};
use crate::state::{State, Update};
use std::any::Any;
use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// How one run goes: its thread, recursion limit, durability, interrupts, a handle to drain it,
/// and the run's context of type `C` (see [`context`](Self::context)): `()` for a graph that
/// declares none.
pub struct RunConfig<C = ()> {
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
    /// Pairs recorded in the metadata of every checkpoint this run writes (a server's `run_id`,
    /// `graph_id`, `assistant_id`), read back as [`StateSnapshot::metadata`](crate::StateSnapshot::metadata).
    /// A subgraph's checkpoints do not carry them.
    pub metadata: std::collections::BTreeMap<String, String>,
    /// The store the run's nodes reach through [`Context::store`](crate::Context::store), in
    /// place of the graph's own ([`CompiledGraph::with_store`](crate::CompiledGraph::with_store)).
    /// A subgraph's runs get the store of the task that runs them.
    pub store: Option<Arc<dyn crate::store::Store>>,
    /// The run's context (LangGraph's `context`), which its nodes read typed: see
    /// [`context`](Self::context). Not checkpointed; a subgraph's runs get their parent's.
    pub context: RunContext<C>,
    /// Keep the writes of every task of a completed step against the checkpoint the step
    /// started from, a lone task's too (LangGraph always does): what a thread's history shows
    /// as each task's [`result`](crate::TaskSnapshot::result). Off by default: a checkpointed
    /// step then stores one more row, its update serialized (`weir_bench checkpoint_sqlite`
    /// took 1.7 to 2 times as long a step with it); `weir serve` turns it on, as LangGraph's
    /// API shows results. A subgraph's runs get their parent's.
    pub task_results: bool,
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
            metadata: std::collections::BTreeMap::new(),
            store: None,
            context: RunContext::default(),
            task_results: false,
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
}

impl<C> Clone for RunConfig<C> {
    fn clone(&self) -> Self {
        Self {
            recursion_limit: self.recursion_limit,
            drain: self.drain.clone(),
            thread_id: self.thread_id.clone(),
            checkpoint_id: self.checkpoint_id.clone(),
            durability: self.durability,
            interrupt_before: self.interrupt_before.clone(),
            interrupt_after: self.interrupt_after.clone(),
            ns: self.ns.clone(),
            subgraphs: self.subgraphs,
            metadata: self.metadata.clone(),
            store: self.store.clone(),
            context: self.context.clone(),
            task_results: self.task_results,
        }
    }
}

impl<C> std::fmt::Debug for RunConfig<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunConfig")
            .field("recursion_limit", &self.recursion_limit)
            .field("thread_id", &self.thread_id)
            .field("checkpoint_id", &self.checkpoint_id)
            .field("durability", &self.durability)
            .field("ns", &self.ns)
            .field("context", &self.context)
            .finish_non_exhaustive()
    }
}

impl<C> RunConfig<C> {
    /// The same configuration, with the run context `value` of the graph's context type
    /// (LangGraph's `invoke(..., context=...)`): the nodes of a graph built with
    /// [`GraphBuilder::context`](crate::GraphBuilder::context) or `graph! { context: C, .. }`
    /// read it. A graph's run methods take a `RunConfig` of the graph's context type, so a
    /// context of another type, or none for a graph that declares one, is a compile error.
    ///
    /// # Examples
    ///
    /// ```
    /// # use weir_runtime::{Context, GraphBuilder, RunConfig, START, END};
    /// # weir_runtime::__doc_state!();
    /// struct User { name: String }
    /// let mut g = GraphBuilder::<Doc>::new().context::<User>();
    /// g.add_node("greet", |_: &Doc, _: &Context, user: &User| DocUpdate::default().text(format!("hi {}", user.name)));
    /// g.add_edge(START, "greet").add_edge("greet", END);
    /// let app = g.compile().unwrap();
    /// let config = RunConfig::default().context(User { name: "ada".into() });
    /// # let rt = tokio::runtime::Runtime::new().unwrap();
    /// let out = rt.block_on(app.invoke(Doc::default(), &config)).unwrap();
    /// assert_eq!(out.text, "hi ada");
    /// ```
    pub fn context<C2: ContextValue>(self, value: C2) -> RunConfig<C2> {
        self.with_context(RunContext::new(value))
    }

    /// The same configuration with the run context `context` (a shared one: [`RunContext::from_arc`]).
    pub fn with_context<C2>(self, context: RunContext<C2>) -> RunConfig<C2> {
        RunConfig {
            recursion_limit: self.recursion_limit,
            drain: self.drain,
            thread_id: self.thread_id,
            checkpoint_id: self.checkpoint_id,
            durability: self.durability,
            interrupt_before: self.interrupt_before,
            interrupt_after: self.interrupt_after,
            ns: self.ns,
            subgraphs: self.subgraphs,
            metadata: self.metadata,
            store: self.store,
            context,
            task_results: self.task_results,
        }
    }

    /// The configuration as the loop reads it, the context type-erased: borrowed when `C` is
    /// `()` already.
    pub(crate) fn untyped(&self) -> Cow<'_, RunConfig>
    where
        C: 'static,
    {
        match (self as &dyn Any).downcast_ref::<RunConfig>() {
            Some(config) => Cow::Borrowed(config),
            None => {
                let config = self.clone();
                let context = config.context.clone().retype();
                Cow::Owned(config.with_context(context))
            }
        }
    }

    /// The same configuration, keeping every task's writes for the thread's history (see the
    /// field `task_results`) or not.
    pub fn task_results(mut self, on: bool) -> Self {
        self.task_results = on;
        self
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
    /// Records `key: value` in the metadata of the run's checkpoints.
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }
    /// Gives the run's nodes `store` (see [`store`](Self::store)).
    pub fn store(mut self, store: Arc<dyn crate::store::Store>) -> Self {
        self.store = Some(store);
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

/// What a run accepts as input: a whole state (every field written), an update, or a
/// [`RunCommand`](crate::RunCommand) (answers, an update and a goto for a thread that goes on).
pub trait IntoInput<S: State, M> {
    /// The input, as the run takes it.
    fn into_input(self) -> RunInput<S>;
}

/// A run's input, as [`IntoInput`] gives it: writes that start the thread anew, or a command
/// that goes on from its checkpoint. A server that reads either from a request builds one.
#[derive(Debug)]
pub enum RunInput<S: State> {
    /// A new input: its writes go through the start node (LangGraph's `input`); a paused or
    /// failed step's tasks are cancelled.
    Update(S::Update),
    /// A command (LangGraph's `command`): the thread goes on from its checkpoint.
    Command(crate::RunCommand<S>),
}

#[doc(hidden)]
#[derive(Debug)]
pub enum AsState {}
#[doc(hidden)]
#[derive(Debug)]
pub enum AsUpdate {}
#[doc(hidden)]
#[derive(Debug)]
pub enum AsInput {}

impl<S: State> IntoInput<S, AsState> for S {
    fn into_input(self) -> RunInput<S> {
        RunInput::Update(State::into_update(self))
    }
}

impl<U: Update> IntoInput<U::State, AsUpdate> for U {
    fn into_input(self) -> RunInput<U::State> {
        RunInput::Update(self)
    }
}

impl<S: State> IntoInput<S, AsInput> for RunInput<S> {
    fn into_input(self) -> RunInput<S> {
        self
    }
}
