use super::compile::{GraphInner, InputMode};
use super::node::ContextFor;
use super::node::ContextRouter;
use super::node::{
    encode_json, packet, EncodeFn, Goto, IntoGotos, IntoNode, NodeFn, NodeHandle, NodeId, PacketDecoder, RouterFn,
};
use super::node::{FreshFn, HandlerFn, NodeError, NodeOutput};
use super::policy::RetryPolicy;
use super::{CompiledGraph, ContextValue, ErasedContext};
use crate::cache::{CachePolicy, NodeCache};
use crate::checkpoint::Checkpointer;
use crate::error::BuildError;
use crate::state::State;
use serde::{de::DeserializeOwned, Serialize};
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

/// A node named in an edge: by id, by name, or one of the two ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeRef {
    /// Where every run starts (LangGraph's `START`).
    Start,
    /// Where a run goes to stop (LangGraph's `END`).
    End,
    /// A node by id.
    Id(NodeId),
    /// A node by name, resolved when the graph is compiled.
    Name(Cow<'static, str>),
}

/// The start of every run.
pub const START: NodeRef = NodeRef::Start;
/// The end of a run.
pub const END: NodeRef = NodeRef::End;

impl From<NodeId> for NodeRef {
    fn from(id: NodeId) -> Self {
        Self::Id(id)
    }
}
impl<S: State, I> From<&NodeHandle<S, I>> for NodeRef {
    fn from(h: &NodeHandle<S, I>) -> Self {
        Self::Id(h.id)
    }
}
impl From<&'static str> for NodeRef {
    fn from(name: &'static str) -> Self {
        Self::Name(Cow::Borrowed(name))
    }
}
impl From<String> for NodeRef {
    fn from(name: String) -> Self {
        Self::Name(Cow::Owned(name))
    }
}

pub(crate) struct NodeSpec<S: State> {
    pub(crate) name: String,
    /// `None` for a node that only runs from `Send`s with an input other than the state.
    pub(crate) func: Option<NodeFn<S, S>>,
    pub(crate) defer: bool,
    pub(crate) subscribes: Vec<usize>,
    /// The fields the node declared it may write, when it declared them.
    pub(crate) may_write: Option<Vec<usize>>,
    pub(crate) retry: Option<RetryPolicy>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) is_async: bool,
    pub(crate) decode: Option<PacketDecoder<S>>,
    pub(crate) cache: Option<CachePolicy<S>>,
    pub(crate) handler: Option<HandlerFn<S>>,
    pub(crate) fresh: Option<FreshFn<S>>,
}

pub(crate) struct RouterSpec<S: State> {
    pub(crate) source: NodeRef,
    pub(crate) func: RouterFn<S>,
    pub(crate) targets: Vec<NodeRef>,
}

/// Builds a graph over the state `S`, then [`compile`](GraphBuilder::compile)s it.
///
/// Problems (an unknown or duplicate node, an edge out of `END`) are collected as the graph is
/// built and reported together by `compile`, each naming the node or edge at fault.
///
/// ```
/// # use weir_runtime::{GraphBuilder, START, END};
/// # weir_runtime::__doc_state!();
/// let mut g = GraphBuilder::<Doc>::new();
/// g.add_node("greet", |s: &Doc| DocUpdate::default().text(format!("hello {}", s.text)));
/// g.add_edge(START, "greet");
/// g.add_edge("greet", END);
/// let app = g.compile().unwrap();
/// # let rt = tokio::runtime::Runtime::new().unwrap();
/// let out = rt.block_on(app.invoke(Doc { text: "world".into() }, &Default::default())).unwrap();
/// assert_eq!(out.text, "hello world");
/// ```
pub struct GraphBuilder<S: State, C = ()> {
    pub(crate) mode: InputMode,
    pub(crate) nodes: Vec<NodeSpec<S>>,
    pub(crate) edges: Vec<(NodeRef, NodeRef)>,
    pub(crate) joins: Vec<(Vec<NodeRef>, NodeRef)>,
    pub(crate) routers: Vec<RouterSpec<S>>,
    pub(crate) destinations: Vec<(NodeRef, Vec<NodeRef>)>,
    pub(crate) interrupt_before: Vec<NodeRef>,
    pub(crate) interrupt_after: Vec<NodeRef>,
    pub(crate) default_retry: Option<RetryPolicy>,
    pub(crate) prototype: Option<(S, S::Channels)>,
    pub(crate) checkpointer: Option<Arc<dyn Checkpointer>>,
    pub(crate) cache: Option<Arc<dyn NodeCache>>,
    /// The nodes added as subgraphs, each with its subgraph's Mermaid chart (for drawings) and
    /// its state's fields (for a server's description of its schema).
    pub(crate) subgraphs: Vec<(String, String, &'static [crate::state::FieldInfo])>,
    /// The graph's run context type: see [`GraphBuilder::context`].
    pub(crate) context: PhantomData<fn() -> C>,
}

impl<S: State, C> fmt::Debug for GraphBuilder<S, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GraphBuilder")
            .field("nodes", &self.nodes.iter().map(|n| &n.name).collect::<Vec<_>>())
            .field("edges", &self.edges)
            .field("joins", &self.joins)
            .finish_non_exhaustive()
    }
}

impl<S: State> Default for GraphBuilder<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: State> GraphBuilder<S> {
    /// A state graph: the input goes through `START`, and edges from `START` name the first nodes.
    pub fn new() -> Self {
        Self::with_mode(InputMode::Start)
    }

    /// A low-level Pregel graph: there is no `START`; the input is written straight to the state's
    /// fields, and nodes run when a field they [`subscribe`](Self::subscribe) to changes.
    pub fn pregel() -> Self {
        Self::with_mode(InputMode::Fields)
    }

    fn with_mode(mode: InputMode) -> Self {
        Self {
            mode,
            nodes: Vec::new(),
            edges: Vec::new(),
            joins: Vec::new(),
            routers: Vec::new(),
            destinations: Vec::new(),
            subgraphs: Vec::new(),
            interrupt_before: Vec::new(),
            interrupt_after: Vec::new(),
            default_retry: None,
            prototype: None,
            checkpointer: None,
            cache: None,
            context: PhantomData,
        }
    }

    /// A state graph over a state whose fields are known only at run time (a workflow loaded
    /// from JSON): runs start from `state` and `channels`, empty, instead of [`State::empty`].
    pub fn with_prototype(state: S, channels: S::Channels) -> Self {
        let mut b = Self::new();
        b.prototype = Some((state, channels));
        b
    }
}

impl<S: State, C: ContextValue> GraphBuilder<S, C> {
    fn push_node(&mut self, name: String, func: Option<NodeFn<S, S>>, is_async: bool) -> NodeId {
        let id = NodeId(self.nodes.len() as u32);
        self.nodes.push(NodeSpec {
            name,
            func,
            defer: false,
            subscribes: Vec::new(),
            may_write: None,
            retry: None,
            timeout: None,
            is_async,
            decode: None,
            cache: None,
            handler: None,
            fresh: None,
        });
        id
    }

    fn spec(&mut self, node: NodeId) -> Option<&mut NodeSpec<S>> {
        self.nodes.get_mut(node.index())
    }

    /// Adds a node reading the state. `f` is sync or async, takes `&S` and optionally
    /// `&Context`, and returns the update, a [`Command`](super::Command), `()` or a `Result`.
    /// In a graph with a run context `C` ([`context`](GraphBuilder::context)) it may also take
    /// `&S, &Context, &C`: a `&C` of another type is a compile error.
    pub fn add_node<M: ContextFor<C>>(&mut self, name: impl Into<String>, f: impl IntoNode<S, S, M>) -> NodeHandle<S> {
        let func = f.into_node();
        let is_async = matches!(func, NodeFn::Async(_));
        let id = self.push_node(name.into(), Some(func.clone()), is_async);
        NodeHandle { id, func, encode: None }
    }

    /// Adds a node that runs only from `Send`s, on an input of its own type `I`. The input is
    /// saved with the checkpoint while the `Send` is pending, so it must be serializable.
    pub fn add_send_node<I, M: ContextFor<C>>(
        &mut self,
        name: impl Into<String>,
        f: impl IntoNode<I, S, M>,
    ) -> NodeHandle<S, I>
    where
        I: Serialize + DeserializeOwned + Send + Sync + 'static,
    {
        let func = f.into_node();
        let is_async = matches!(func, NodeFn::Async(_));
        let id = self.push_node(name.into(), None, is_async);
        let encode: EncodeFn<I> = encode_json::<I>;
        let f2 = func.clone();
        let decode: PacketDecoder<S> = Arc::new(move |v| {
            let input: I = serde_json::from_value(v).map_err(|e| e.to_string())?;
            Ok(packet(id, f2.clone(), Some(encode), input))
        });
        self.nodes[id.index()].decode = Some(decode);
        NodeHandle {
            id,
            func,
            encode: Some(encode),
        }
    }

    /// Adds an edge: `to` runs in the step after `from`. Several edges out of one node fan out.
    pub fn add_edge(&mut self, from: impl Into<NodeRef>, to: impl Into<NodeRef>) -> &mut Self {
        self.edges.push((from.into(), to.into()));
        self
    }

    /// Adds a join: `to` runs once, in the step after the last of `from` has run.
    pub fn add_join<R: Into<NodeRef>>(
        &mut self,
        from: impl IntoIterator<Item = R>,
        to: impl Into<NodeRef>,
    ) -> &mut Self {
        self.joins.push((from.into_iter().map(Into::into).collect(), to.into()));
        self
    }

    /// Adds a router after `source`: a function of the state (with `source`'s own writes applied,
    /// nobody else's) that chooses where to go: a node, [`Goto::End`], several, or `Send`s.
    /// `targets` declares the nodes it may choose (and `END`), for the checks and the drawing;
    /// choosing another node fails the run with an error naming the router's node.
    pub fn add_router<R, T>(
        &mut self,
        source: impl Into<NodeRef>,
        router: impl Fn(&S) -> R + Send + Sync + 'static,
        targets: impl IntoIterator<Item = T>,
    ) -> &mut Self
    where
        R: IntoGotos<S>,
        T: Into<NodeRef>,
    {
        let func: RouterFn<S> = Arc::new(move |s: &S, _: Option<&ErasedContext>, out: &mut Vec<Goto<S>>| {
            router(s).into_gotos(out);
            Ok(())
        });
        self.push_router(source.into(), func, targets)
    }

    fn push_router<T: Into<NodeRef>>(
        &mut self,
        source: NodeRef,
        func: RouterFn<S>,
        targets: impl IntoIterator<Item = T>,
    ) -> &mut Self {
        let targets = targets.into_iter().map(Into::into).collect();
        self.routers.push(RouterSpec { source, func, targets });
        self
    }

    /// Adds a router after `source` that reads the run's context (LangGraph's conditional edge
    /// `def route(state, runtime: Runtime[C])`): like [`add_router`](Self::add_router), a
    /// function of the state, and of the run context of the graph's type `C`
    /// ([`context`](GraphBuilder::context)). A function of a context of another type is a
    /// compile error. The context is the run's, read in place: routing copies nothing more than
    /// a router without it.
    ///
    /// ```
    /// # use weir_runtime::{Goto, GraphBuilder, RunConfig, START, END};
    /// # weir_runtime::__doc_state!();
    /// struct User { admin: bool }
    /// let mut g = GraphBuilder::<Doc>::new().context::<User>();
    /// g.add_node("check", |_: &Doc| DocUpdate::default());
    /// g.add_node("admin", |_: &Doc| DocUpdate::default().text("admin".to_owned()));
    /// g.add_edge(START, "check").add_edge("admin", END);
    /// g.add_router_with_context(
    ///     "check",
    ///     |_: &Doc, user: &User| if user.admin { Goto::from("admin") } else { Goto::End },
    ///     ["admin".into(), END],
    /// );
    /// let app = g.compile().unwrap();
    /// # let rt = tokio::runtime::Runtime::new().unwrap();
    /// let config = RunConfig::default().context(User { admin: true });
    /// let out = rt.block_on(app.invoke(Doc::default(), &config)).unwrap();
    /// assert_eq!(out.text, "admin");
    /// ```
    pub fn add_router_with_context<R, T>(
        &mut self,
        source: impl Into<NodeRef>,
        router: impl ContextRouter<S, C, R>,
        targets: impl IntoIterator<Item = T>,
    ) -> &mut Self
    where
        R: IntoGotos<S>,
        T: Into<NodeRef>,
    {
        let func: RouterFn<S> = Arc::new(move |s: &S, c: Option<&ErasedContext>, out: &mut Vec<Goto<S>>| {
            let context = ErasedContext::typed::<C>(c, format_args!("its router"))?;
            router.call(s, context).into_gotos(out);
            Ok(())
        });
        self.push_router(source.into(), func, targets)
    }

    /// Declares the nodes `node` may send the run to through a [`Command`](super::Command)'s
    /// `goto` (LangGraph's `destinations`), for the graph checks and the drawing.
    pub fn declare_destinations<T: Into<NodeRef>>(
        &mut self,
        node: impl Into<NodeRef>,
        targets: impl IntoIterator<Item = T>,
    ) -> &mut Self {
        self.destinations
            .push((node.into(), targets.into_iter().map(Into::into).collect()));
        self
    }

    /// Makes `node` deferred: it runs only once nothing else is left to run.
    pub fn defer(&mut self, node: impl Into<NodeId>) -> &mut Self {
        if let Some(n) = self.spec(node.into()) {
            n.defer = true;
        }
        self
    }

    /// Caches `node`'s writes by a key computed from its input: a run whose key was seen before
    /// (within the TTL) skips the node and takes those writes. Needs a cache
    /// ([`with_cache`](Self::with_cache)).
    pub fn cache(&mut self, node: impl Into<NodeId>, policy: CachePolicy<S>) -> &mut Self {
        if let Some(n) = self.spec(node.into()) {
            n.cache = Some(policy);
        }
        self
    }

    /// Keeps cacheable nodes' writes in `cache`; it survives across runs of the graph.
    pub fn with_cache(mut self, cache: impl NodeCache) -> Self {
        self.cache = Some(Arc::new(cache));
        self
    }

    /// Handles `node`'s failure, once its retries are exhausted, with `handler` instead of failing
    /// the run: the handler gets the state and the error, and its update and destinations are
    /// applied in the node's stead (the node's own edges and routers do not fire). After a
    /// failure and a resume, the handler runs, not the node again.
    pub fn on_error<O: NodeOutput<S>>(
        &mut self,
        node: impl Into<NodeId>,
        handler: impl Fn(&S, &NodeError) -> O + Send + Sync + 'static,
    ) -> &mut Self {
        if let Some(n) = self.spec(node.into()) {
            n.handler = Some(Arc::new(move |s, e| handler(s, e).into_command()));
        }
        self
    }

    /// Runs `f` after each run of `node`, on the state as that task sees it with its own writes
    /// applied and nobody else's (LangGraph's fresh read, which only its routers had): the
    /// fields the node wrote hold their new values (a reducer's fold, an appended list), every
    /// other field holds its value from the start of the step, whatever the node's siblings in
    /// the step wrote. `f`'s update is applied after the node's, in the same step, and its
    /// destinations are added to the node's; the node's routers then see both updates.
    ///
    /// The read costs a copy of the fields the node wrote, not of the state. `f` runs on the
    /// loop, like a router: keep it short, and do slow work in the node. Its failure or panic
    /// fails the node's task; it does not run after an error handler, nor again for a task whose
    /// writes were saved by a step that did not complete (they include `f`'s). So that it never
    /// runs twice, such a node's task does not save its writes the moment it ends, as the other
    /// tasks of a wide step do: a process killed in the middle of its step runs it again.
    ///
    /// A field of one value written by the node cannot be written again by `f` (two writes in a
    /// step, as for any task); a reducer's can.
    ///
    /// LangGraph lets a node read fresh in its middle (`ChannelRead.do_read(fresh=True)` after
    /// its own `ChannelWrite`s); a weir node returns its writes at once, so the fresh read is this
    /// second function, after the node, in the same task.
    ///
    /// ```
    /// # use weir_runtime::{GraphBuilder, START, END};
    /// # use std::sync::{Arc, Mutex};
    /// # weir_runtime::__doc_state!();
    /// let mut g = GraphBuilder::<Doc>::new();
    /// let greet = g.add_node("greet", |s: &Doc| DocUpdate::default().text(format!("hello {}", s.text))).id();
    /// let seen = Arc::new(Mutex::new(String::new()));
    /// let saw = seen.clone();
    /// // Reads what `greet` just wrote, before the step's writes are applied.
    /// g.then_fresh(greet, move |fresh: &Doc| *saw.lock().unwrap() = fresh.text.clone());
    /// g.add_edge(START, "greet").add_edge("greet", END);
    /// let app = g.compile().unwrap();
    /// # let rt = tokio::runtime::Runtime::new().unwrap();
    /// rt.block_on(app.invoke(Doc { text: "world".into() }, &Default::default())).unwrap();
    /// assert_eq!(*seen.lock().unwrap(), "hello world");
    /// ```
    pub fn then_fresh<O: NodeOutput<S>>(
        &mut self,
        node: impl Into<NodeId>,
        f: impl Fn(&S) -> O + Send + Sync + 'static,
    ) -> &mut Self {
        if let Some(n) = self.spec(node.into()) {
            n.fresh = Some(Arc::new(move |s, _| f(s).into_command()));
        }
        self
    }

    /// Like [`then_fresh`](Self::then_fresh), for a function that also reads the run context of
    /// the graph's type `C` ([`context`](GraphBuilder::context)): the fresh read's routing may
    /// depend on the run, as a router's may ([`add_router_with_context`](Self::add_router_with_context)).
    /// A function of a context of another type is a compile error.
    pub fn then_fresh_with_context<O: NodeOutput<S>>(
        &mut self,
        node: impl Into<NodeId>,
        f: impl ContextRouter<S, C, O>,
    ) -> &mut Self {
        if let Some(n) = self.spec(node.into()) {
            n.fresh = Some(Arc::new(move |s, c| {
                let context = ErasedContext::typed::<C>(c, format_args!("its fresh read"))?;
                f.call(s, context).into_command()
            }));
        }
        self
    }

    /// Runs `node` again when it fails, as `policy` says.
    pub fn retry(&mut self, node: impl Into<NodeId>, policy: RetryPolicy) -> &mut Self {
        if let Some(n) = self.spec(node.into()) {
            n.retry = Some(policy);
        }
        self
    }

    /// The retry policy of every node without one of its own.
    pub fn default_retry(&mut self, policy: RetryPolicy) -> &mut Self {
        self.default_retry = Some(policy);
        self
    }

    /// Fails `node` when one attempt takes longer than `limit`. The node must be async: a plain
    /// function cannot be stopped while it runs.
    pub fn timeout(&mut self, node: impl Into<NodeId>, limit: Duration) -> &mut Self {
        if let Some(n) = self.spec(node.into()) {
            n.timeout = Some(limit);
        }
        self
    }

    /// Pauses every run before `node` runs; resuming the thread runs it. Needs a checkpointer.
    pub fn interrupt_before(&mut self, node: impl Into<NodeRef>) -> &mut Self {
        self.interrupt_before.push(node.into());
        self
    }

    /// Pauses every run after `node` ran; resuming the thread goes on. Needs a checkpointer.
    pub fn interrupt_after(&mut self, node: impl Into<NodeRef>) -> &mut Self {
        self.interrupt_after.push(node.into());
        self
    }

    /// Makes `node` run whenever the field at `field` (index in [`State::FIELDS`]) changes.
    pub fn subscribe(&mut self, node: impl Into<NodeId>, field: usize) -> &mut Self {
        if let Some(n) = self.spec(node.into()) {
            n.subscribes.push(field);
        }
        self
    }

    /// Declares the only fields `node` may write; a write to another fails the run with an error
    /// naming the node and the field.
    pub fn declare_writes(&mut self, node: impl Into<NodeId>, fields: impl IntoIterator<Item = usize>) -> &mut Self {
        if let Some(n) = self.spec(node.into()) {
            n.may_write = Some(fields.into_iter().collect());
        }
        self
    }

    /// Saves a checkpoint of every run after every step with `checkpointer`, so runs can pause,
    /// resume after a failure or a crash, and travel back in time.
    pub fn with_checkpointer(mut self, checkpointer: impl Checkpointer) -> Self {
        self.checkpointer = Some(Arc::new(checkpointer));
        self
    }

    /// Like [`with_checkpointer`](Self::with_checkpointer), with a checkpointer shared with others.
    pub fn set_checkpointer(&mut self, checkpointer: Arc<dyn Checkpointer>) -> &mut Self {
        self.checkpointer = Some(checkpointer);
        self
    }

    /// Checks the wiring and compiles the graph.
    ///
    /// # Errors
    /// Every problem found: unknown or duplicate nodes, edges out of `END` or into `START`, a
    /// graph without an entry, nodes `START` does not reach, nodes that never reach `END`.
    pub fn compile(mut self) -> Result<CompiledGraph<S, C>, BuildError> {
        let checkpointer = self.checkpointer.take();
        GraphInner::build(self.retype()).map(|inner| CompiledGraph::new(inner, checkpointer))
    }
}
