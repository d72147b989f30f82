//! The shapes of a node's function (sync or async, with or without a `Context`), type-erased
//! into a `NodeFn`; routers, error handlers and `then_fresh` functions.

use super::command::{Command, Goto, NodeOutput};
use crate::error::BoxError;
use crate::graph::{Context, ErasedContext};
use crate::state::State;
use futures::future::BoxFuture;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

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

/// A router, type-erased: the state (with its task's writes applied), the run's context, and
/// where its destinations go. Only a router that reads the context can fail: when the run
/// carries none of its type.
pub(crate) type RouterFn<S> =
    Arc<dyn Fn(&S, Option<&ErasedContext>, &mut Vec<Goto<S>>) -> Result<(), BoxError> + Send + Sync>;

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
pub(crate) type FreshFn<S> = Arc<dyn Fn(&S, Option<&ErasedContext>) -> Result<Command<S>, BoxError> + Send + Sync>;
