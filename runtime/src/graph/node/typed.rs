//! The node shapes that read the run context typed: `|input, ctx: &Context, c: &C|`, sync or
//! async, and [`ContextFor`], which ties a node's context type to its graph's at compile time.

use super::command::NodeOutput;
use super::func::{AsyncCtxMarker, AsyncMarker, SyncMarker};
use super::func::{IntoNode, NodeFn, SyncCtxMarker};
use crate::graph::{Context, ContextValue};
use crate::state::State;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

/// Tells a node shape that reads the run context `C` from the others (`M` of [`IntoNode`]).
#[doc(hidden)]
#[derive(Debug)]
pub struct WithContext<C, M>(PhantomData<fn() -> (C, M)>);

/// A node shape that fits a graph whose context type is `C`: the shapes that read no context
/// fit every graph; one that reads a `&C` fits only a graph of context `C`.
#[diagnostic::on_unimplemented(
    message = "this node reads a run context of another type than the graph's `{C}`",
    label = "the graph's context is `{C}`: this node's third argument must be `&{C}`, or dropped",
    note = "a node reads the context its graph declares (`GraphBuilder::context::<C>()`, `graph! {{ context: C, .. }}`); a graph that declares none has the context `()`"
)]
pub trait ContextFor<C> {}

impl<C, O> ContextFor<C> for (SyncMarker, O) {}
impl<C, O> ContextFor<C> for (SyncCtxMarker, O) {}
impl<C, O> ContextFor<C> for (AsyncMarker, O) {}
impl<C, O> ContextFor<C> for (AsyncCtxMarker, O) {}
impl<C, O> ContextFor<C> for (WithContext<C, SyncCtxMarker>, O) {}
impl<C, O> ContextFor<C> for (WithContext<C, AsyncCtxMarker>, O) {}

/// An async function of a borrowed input, [`Context`] and run context, whose future may borrow them.
#[doc(hidden)]
pub trait AsyncFn3<'a, I: 'a, C: 'a>: Send + Sync + 'static {
    type Output;
    type Future: Future<Output = Self::Output> + Send + 'a;
    fn call(&self, input: &'a I, ctx: &'a Context, context: &'a C) -> Self::Future;
}

impl<'a, I: 'a, C: 'a, F, Fut> AsyncFn3<'a, I, C> for F
where
    F: Fn(&'a I, &'a Context, &'a C) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'a,
{
    type Output = Fut::Output;
    type Future = Fut;
    fn call(&self, input: &'a I, ctx: &'a Context, context: &'a C) -> Fut {
        self(input, ctx, context)
    }
}

impl<I, S, C, F, O> IntoNode<I, S, (WithContext<C, SyncCtxMarker>, O)> for F
where
    I: Send + Sync + 'static,
    S: State,
    C: ContextValue,
    F: Fn(&I, &Context, &C) -> O + Send + Sync + 'static,
    O: NodeOutput<S>,
{
    fn into_node(self) -> NodeFn<I, S> {
        NodeFn::Sync(Arc::new(move |i: &I, c: &Context| {
            self(i, c, c.typed_context::<C>()?).into_command()
        }))
    }
}

impl<I, S, C, F, O> IntoNode<I, S, (WithContext<C, AsyncCtxMarker>, O)> for F
where
    I: Send + Sync + 'static,
    S: State,
    C: ContextValue,
    F: for<'a> AsyncFn3<'a, I, C, Output = O>,
    O: NodeOutput<S>,
{
    fn into_node(self) -> NodeFn<I, S> {
        NodeFn::Async(Arc::new(move |i, c| {
            let fut = c
                .typed_context::<C>()
                .map(|context| AsyncFn3::call(&self, i, c, context));
            Box::pin(async move { fut?.await.into_command() })
        }))
    }
}

/// A function of the state and the run context `C` of its graph, returning `R`: a router that
/// reads the context ([`GraphBuilder::add_router_with_context`], LangGraph's
/// `def route(state, runtime: Runtime[C])`) or a fresh read that does
/// ([`GraphBuilder::then_fresh_with_context`]). A function reading a context of another type
/// than the graph's is a compile error.
///
/// [`GraphBuilder::add_router_with_context`]: crate::GraphBuilder::add_router_with_context
/// [`GraphBuilder::then_fresh_with_context`]: crate::GraphBuilder::then_fresh_with_context
#[diagnostic::on_unimplemented(
    message = "this router reads a run context of another type than the graph's `{C}`",
    label = "the graph's context is `{C}`: this function must take `&{S}, &{C}`",
    note = "a router reads the context its graph declares (`GraphBuilder::context::<C>()`, `graph! {{ context: C, .. }}`); a graph that declares none has the context `()`"
)]
pub trait ContextRouter<S, C, R>: Send + Sync + 'static {
    /// Calls the function.
    fn call(&self, state: &S, context: &C) -> R;
}

impl<S, C, R, F> ContextRouter<S, C, R> for F
where
    F: Fn(&S, &C) -> R + Send + Sync + 'static,
{
    fn call(&self, state: &S, context: &C) -> R {
        self(state, context)
    }
}
