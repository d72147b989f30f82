//! Nodes, routers and what they return.

use super::Context;
use crate::error::BoxError;
use crate::signal::ParentCommand;
use crate::state::{State, Update};
use futures::future::BoxFuture;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

/// A node's index in its graph, in the order nodes were added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub(crate) u32);

impl NodeId {
    /// The index (0 for the first node added).
    pub const fn index(self) -> usize {
        self.0 as usize
    }
    /// The id of the node added `index`-th. Generated code builds node ids this way.
    pub const fn from_index(index: usize) -> Self {
        Self(index as u32)
    }
}

/// Where a node or a router sends the run next.
pub enum Goto<S: State> {
    /// Trigger this node in the next step.
    Node(NodeId),
    /// Go nowhere (LangGraph's `END`): nothing is triggered.
    End,
    /// Run a node once in the next step with its own input (LangGraph's `Send`).
    Send(Packet<S>),
    /// Trigger the node of this name in the next step: resolved when the step is applied (how a
    /// subgraph's [`Command::to_parent`] names its parent's nodes).
    Named(String),
}

impl<S: State> fmt::Debug for Goto<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Node(id) => f.debug_tuple("Node").field(id).finish(),
            Self::End => f.write_str("End"),
            Self::Send(p) => f.debug_tuple("Send").field(&p.node).finish(),
            Self::Named(n) => f.debug_tuple("Named").field(n).finish(),
        }
    }
}

/// A node by name (see [`Goto::Named`]): `Command::new().goto("publish")`.
impl<S: State> From<&str> for Goto<S> {
    fn from(name: &str) -> Self {
        Self::Named(name.to_owned())
    }
}

impl<S: State> From<NodeId> for Goto<S> {
    fn from(id: NodeId) -> Self {
        Self::Node(id)
    }
}

/// Serializes a `Send`'s payload.
pub(crate) type EncodeFn<I> = fn(&I) -> Result<serde_json::Value, String>;
/// Rebuilds a saved `Send` for a node: its payload, as JSON, into a packet.
pub(crate) type PacketDecoder<S> = Arc<dyn Fn(serde_json::Value) -> Result<Packet<S>, String> + Send + Sync>;

/// What a packet runs: a node's function on its own input (one allocation per `Send`).
pub(crate) trait PacketJob<S: State>: Send + Sync {
    /// Runs the node on the packet's input (again, for a retry).
    fn run(self: Arc<Self>, ctx: Context) -> BoxFuture<'static, Result<Command<S>, BoxError>>;
    /// The input as JSON for a checkpoint; `None` when it cannot be saved.
    fn encode(&self) -> Option<Result<serde_json::Value, String>>;
}

struct SendJob<I, S: State> {
    func: NodeFn<I, S>,
    input: I,
    encode: Option<EncodeFn<I>>,
}

impl<I: Send + Sync + 'static, S: State> PacketJob<S> for SendJob<I, S> {
    fn run(self: Arc<Self>, ctx: Context) -> BoxFuture<'static, Result<Command<S>, BoxError>> {
        Box::pin(async move { self.func.call(&self.input, &ctx).await })
    }
    fn encode(&self) -> Option<Result<serde_json::Value, String>> {
        self.encode.map(|e| e(&self.input))
    }
}

/// One `Send`: a node to run in the next step, with the input it runs on.
pub struct Packet<S: State> {
    pub(crate) node: NodeId,
    pub(crate) job: Arc<dyn PacketJob<S>>,
}

impl<S: State> Packet<S> {
    /// The node the packet runs.
    pub fn node(&self) -> NodeId {
        self.node
    }
}

impl<S: State> fmt::Debug for Packet<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Packet")
            .field("node", &self.node)
            .finish_non_exhaustive()
    }
}

/// What a node returns, in full: an update of the state and where to go next.
///
/// Most nodes return just an update; edges and routers then decide what runs next. A `Command`
/// adds destinations of its own (LangGraph's `Command(update=…, goto=…)`).
pub struct Command<S: State> {
    /// The node's writes.
    pub update: S::Update,
    /// Where to go, beside the node's edges.
    pub goto: Vec<Goto<S>>,
    /// A command for the graph this one runs in as a subgraph (LangGraph's
    /// `Command(graph=Command.PARENT)`): it ends this graph's run.
    pub parent: Option<ParentCommand>,
}

impl<S: State> Default for Command<S> {
    fn default() -> Self {
        Self {
            update: S::Update::default(),
            goto: Vec::new(),
            parent: None,
        }
    }
}

impl<S: State> fmt::Debug for Command<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Command")
            .field("update", &self.update)
            .field("goto", &self.goto)
            .finish()
    }
}

impl<S: State> Command<S> {
    /// A command that writes nothing and goes nowhere beside the node's edges.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets the update.
    pub fn update(mut self, update: S::Update) -> Self {
        self.update = update;
        self
    }
    /// Adds a destination.
    pub fn goto(mut self, to: impl Into<Goto<S>>) -> Self {
        self.goto.push(to.into());
        self
    }

    /// A command for the parent graph: apply `update` (the parent's update type, serialized) to
    /// the parent's state and go to its nodes `goto`. The subgraph's run ends there.
    ///
    /// # Errors
    /// When `update` cannot be serialized.
    pub fn to_parent<I: Into<String>>(
        update: impl serde::Serialize,
        goto: impl IntoIterator<Item = I>,
    ) -> Result<Self, BoxError> {
        let update = serde_json::to_value(update)?;
        let goto = goto.into_iter().map(Into::into).collect();
        Ok(Self {
            parent: Some(ParentCommand { update, goto }),
            ..Self::default()
        })
    }
}

/// A value a node may return: an update, a [`Command`], `()` (no writes), a list of commands
/// (their updates concatenated in order), or a `Result` of those.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not something a node of `{S}` can return",
    note = "a node returns the state's update type, a `Command`, `()`, or a `Result` of those"
)]
pub trait NodeOutput<S: State> {
    /// Converts into a command.
    ///
    /// # Errors
    /// The node's own error, for a `Result`.
    fn into_command(self) -> Result<Command<S>, BoxError>;
}

impl<U: Update> NodeOutput<U::State> for U {
    fn into_command(self) -> Result<Command<U::State>, BoxError> {
        Ok(Command {
            update: self,
            goto: Vec::new(),
            parent: None,
        })
    }
}

impl<S: State> NodeOutput<S> for Command<S> {
    fn into_command(self) -> Result<Command<S>, BoxError> {
        Ok(self)
    }
}

impl<S: State> NodeOutput<S> for () {
    fn into_command(self) -> Result<Command<S>, BoxError> {
        Ok(Command::default())
    }
}

impl<S: State> NodeOutput<S> for Vec<Command<S>> {
    fn into_command(self) -> Result<Command<S>, BoxError> {
        let mut out = Command::<S>::default();
        for c in self {
            Update::merge(&mut out.update, c.update);
            out.goto.extend(c.goto);
            out.parent = out.parent.or(c.parent);
        }
        Ok(out)
    }
}

impl<S: State, T: NodeOutput<S>, E: Into<BoxError>> NodeOutput<S> for Result<T, E> {
    fn into_command(self) -> Result<Command<S>, BoxError> {
        self.map_err(Into::into)?.into_command()
    }
}

type SyncFn<I, S> = dyn Fn(&I, &Context) -> Result<Command<S>, BoxError> + Send + Sync;
type AsyncFn<I, S> = dyn for<'a> Fn(&'a I, &'a Context) -> BoxFuture<'a, Result<Command<S>, BoxError>> + Send + Sync;

/// A node's function, type-erased: sync or async, over an input `I` (the state, or a `Send`
/// payload).
pub enum NodeFn<I, S: State> {
    /// A plain function: called in place.
    Sync(Arc<SyncFn<I, S>>),
    /// An async function.
    Async(Arc<AsyncFn<I, S>>),
}

impl<I, S: State> Clone for NodeFn<I, S> {
    fn clone(&self) -> Self {
        match self {
            Self::Sync(f) => Self::Sync(f.clone()),
            Self::Async(f) => Self::Async(f.clone()),
        }
    }
}

impl<I, S: State> fmt::Debug for NodeFn<I, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Sync(_) => "NodeFn::Sync",
            Self::Async(_) => "NodeFn::Async",
        })
    }
}

impl<I: Send + Sync + 'static, S: State> NodeFn<I, S> {
    /// Runs the node on `input`.
    pub(crate) async fn call(&self, input: &I, ctx: &Context) -> Result<Command<S>, BoxError> {
        match self {
            Self::Sync(f) => f(input, ctx),
            Self::Async(f) => f(input, ctx).await,
        }
    }
}

/// An async function of one borrowed argument, whose future may borrow it.
#[doc(hidden)]
pub trait AsyncFn1<'a, I: 'a>: Send + Sync + 'static {
    type Output;
    type Future: Future<Output = Self::Output> + Send + 'a;
    fn call(&self, input: &'a I) -> Self::Future;
}

impl<'a, I: 'a, F, Fut> AsyncFn1<'a, I> for F
where
    F: Fn(&'a I) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'a,
{
    type Output = Fut::Output;
    type Future = Fut;
    fn call(&self, input: &'a I) -> Fut {
        self(input)
    }
}

/// An async function of a borrowed argument and a borrowed [`Context`].
#[doc(hidden)]
pub trait AsyncFn2<'a, I: 'a>: Send + Sync + 'static {
    type Output;
    type Future: Future<Output = Self::Output> + Send + 'a;
    fn call(&self, input: &'a I, ctx: &'a Context) -> Self::Future;
}

impl<'a, I: 'a, F, Fut> AsyncFn2<'a, I> for F
where
    F: Fn(&'a I, &'a Context) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'a,
{
    type Output = Fut::Output;
    type Future = Fut;
    fn call(&self, input: &'a I, ctx: &'a Context) -> Fut {
        self(input, ctx)
    }
}

/// A function that can be a node over input `I` of a graph of `S`: sync or async, taking
/// `&I` and optionally `&Context`, returning a [`NodeOutput`]. `M` only tells the shapes apart.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a node here",
    label = "not a node function for this input",
    note = "a node is a function (sync or async) taking `&{I}` and optionally `&weir::Context`, returning the update type, a `Command`, `()`, or a `Result` of those"
)]
pub trait IntoNode<I, S: State, M>: Send + Sync + 'static {
    /// The type-erased function.
    fn into_node(self) -> NodeFn<I, S>;
}

#[doc(hidden)]
#[derive(Debug)]
pub enum SyncMarker {}
#[doc(hidden)]
#[derive(Debug)]
pub enum SyncCtxMarker {}
#[doc(hidden)]
#[derive(Debug)]
pub enum AsyncMarker {}
#[doc(hidden)]
#[derive(Debug)]
pub enum AsyncCtxMarker {}

impl<I, S, F, O> IntoNode<I, S, (SyncMarker, O)> for F
where
    I: Send + Sync + 'static,
    S: State,
    F: Fn(&I) -> O + Send + Sync + 'static,
    O: NodeOutput<S>,
{
    fn into_node(self) -> NodeFn<I, S> {
        NodeFn::Sync(Arc::new(move |i: &I, _: &Context| self(i).into_command()))
    }
}

impl<I, S, F, O> IntoNode<I, S, (SyncCtxMarker, O)> for F
where
    I: Send + Sync + 'static,
    S: State,
    F: Fn(&I, &Context) -> O + Send + Sync + 'static,
    O: NodeOutput<S>,
{
    fn into_node(self) -> NodeFn<I, S> {
        NodeFn::Sync(Arc::new(move |i: &I, c: &Context| self(i, c).into_command()))
    }
}

impl<I, S, F, O> IntoNode<I, S, (AsyncMarker, O)> for F
where
    I: Send + Sync + 'static,
    S: State,
    F: for<'a> AsyncFn1<'a, I, Output = O>,
    O: NodeOutput<S>,
{
    fn into_node(self) -> NodeFn<I, S> {
        NodeFn::Async(Arc::new(move |i, _| {
            let fut = AsyncFn1::call(&self, i);
            Box::pin(async move { fut.await.into_command() })
        }))
    }
}

impl<I, S, F, O> IntoNode<I, S, (AsyncCtxMarker, O)> for F
where
    I: Send + Sync + 'static,
    S: State,
    F: for<'a> AsyncFn2<'a, I, Output = O>,
    O: NodeOutput<S>,
{
    fn into_node(self) -> NodeFn<I, S> {
        NodeFn::Async(Arc::new(move |i, c| {
            let fut = AsyncFn2::call(&self, i, c);
            Box::pin(async move { fut.await.into_command() })
        }))
    }
}

/// A handle on a node of a graph being built: its id, and `Send`s to it.
pub struct NodeHandle<S: State, I = S> {
    pub(crate) id: NodeId,
    pub(crate) func: NodeFn<I, S>,
    pub(crate) encode: Option<EncodeFn<I>>,
}

impl<S: State, I> Clone for NodeHandle<S, I> {
    fn clone(&self) -> Self {
        Self {
            id: self.id,
            func: self.func.clone(),
            encode: self.encode,
        }
    }
}

impl<S: State, I> fmt::Debug for NodeHandle<S, I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeHandle").field("id", &self.id).finish()
    }
}

impl<S: State, I: Send + Sync + 'static> NodeHandle<S, I> {
    /// The node's id.
    pub fn id(&self) -> NodeId {
        self.id
    }
    /// A `Send` that runs this node once in the next step, on `input`.
    pub fn send(&self, input: I) -> Goto<S> {
        Goto::Send(packet(self.id, self.func.clone(), self.encode, input))
    }
}

/// A packet running `func` on `input`; saved through `encode` when given.
pub(crate) fn packet<S: State, I: Send + Sync + 'static>(
    node: NodeId,
    func: NodeFn<I, S>,
    encode: Option<EncodeFn<I>>,
    input: I,
) -> Packet<S> {
    Packet {
        node,
        job: Arc::new(SendJob { func, input, encode }),
    }
}

/// The JSON encoding of a payload.
pub(crate) fn encode_json<I: serde::Serialize>(input: &I) -> Result<serde_json::Value, String> {
    serde_json::to_value(input).map_err(|e| e.to_string())
}

impl<S: State, I> From<&NodeHandle<S, I>> for NodeId {
    fn from(h: &NodeHandle<S, I>) -> NodeId {
        h.id
    }
}

impl<S: State, I> From<&NodeHandle<S, I>> for Goto<S> {
    fn from(h: &NodeHandle<S, I>) -> Goto<S> {
        Goto::Node(h.id)
    }
}

/// What a router may return: one destination, several, or none.
pub trait IntoGotos<S: State> {
    /// Appends the destinations to `out`.
    fn into_gotos(self, out: &mut Vec<Goto<S>>);
}

impl<S: State> IntoGotos<S> for Goto<S> {
    fn into_gotos(self, out: &mut Vec<Goto<S>>) {
        out.push(self);
    }
}

impl<S: State> IntoGotos<S> for NodeId {
    fn into_gotos(self, out: &mut Vec<Goto<S>>) {
        out.push(Goto::Node(self));
    }
}

impl<S: State, T: IntoGotos<S>> IntoGotos<S> for Vec<T> {
    fn into_gotos(self, out: &mut Vec<Goto<S>>) {
        for t in self {
            t.into_gotos(out);
        }
    }
}

impl<S: State, T: IntoGotos<S>> IntoGotos<S> for Option<T> {
    fn into_gotos(self, out: &mut Vec<Goto<S>>) {
        if let Some(t) = self {
            t.into_gotos(out);
        }
    }
}

pub(crate) type RouterFn<S> = Arc<dyn Fn(&S, &mut Vec<Goto<S>>) + Send + Sync>;

/// What an error handler learns of the failure it handles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeError {
    /// The node that failed.
    pub node: String,
    /// Its error, as a message.
    pub error: String,
}

pub(crate) type HandlerFn<S> = Arc<dyn Fn(&S, &NodeError) -> Result<Command<S>, BoxError> + Send + Sync>;

/// What runs after a node on its fresh state: see [`GraphBuilder::then_fresh`].
///
/// [`GraphBuilder::then_fresh`]: crate::GraphBuilder::then_fresh
pub(crate) type FreshFn<S> = Arc<dyn Fn(&S) -> Result<Command<S>, BoxError> + Send + Sync>;
