//! The typed run context (LangGraph's `context_schema` and `Runtime.context`): the value one run
//! carries for its nodes (a user id, the model to use, a database handle). It owns
//! [`RunContext`], the typed value a [`RunConfig`](crate::RunConfig) carries, and its type-erased
//! form, shared by the run's tasks and the subgraphs they run. The context is per run: it is never
//! checkpointed, and a resumed run reads the context of the run that resumes it.

use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

/// What can be a graph's run context: any `Send + Sync + 'static` type. A graph that declares
/// none has the context `()`, and its runs need none.
pub trait ContextValue: Send + Sync + 'static {}

impl<T: Send + Sync + 'static> ContextValue for T {}

/// A run's context, type-erased: shared by the tasks of the run and the subgraphs they run.
#[derive(Clone)]
pub(crate) struct ErasedContext {
    value: Arc<dyn Any + Send + Sync>,
    type_name: &'static str,
}

impl ErasedContext {
    /// The context as a `T`, or `None` when it is of another type.
    pub(crate) fn get<T: Any>(&self) -> Option<&T> {
        self.value.downcast_ref()
    }

    /// The name of the context's type, for errors.
    pub(crate) fn type_name(&self) -> &'static str {
        self.type_name
    }

    /// The run context `context` as a `C`, for `what` (a node, a router) that reads it typed:
    /// an error saying what it found when the run carries none of that type (a subgraph that
    /// declares another context type than its parent's).
    pub(crate) fn typed<'c, C: Any>(
        context: Option<&'c Self>,
        what: fmt::Arguments<'_>,
    ) -> Result<&'c C, crate::BoxError> {
        if let Some(c) = context.and_then(Self::get) {
            return Ok(c);
        }
        let found = context.map_or_else(|| "none".to_owned(), |c| format!("`{}`", c.type_name()));
        Err(format!(
            "{what} reads a run context of type `{}`, but the run's context is {found}: a \
             subgraph must declare its parent's context type, or none",
            std::any::type_name::<C>()
        )
        .into())
    }
}

impl fmt::Debug for ErasedContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RunContext<{}>", self.type_name)
    }
}

/// The context value of one run, of the graph's context type `C` (see
/// [`RunConfig::context`](crate::RunConfig::context)). Only a `C` makes one, so a run of a
/// graph cannot carry a context of another type than the graph's: the node functions that read
/// it typed (`|state, ctx: &Context, c: &C|`) always find it.
pub struct RunContext<C = ()> {
    pub(crate) erased: Option<ErasedContext>,
    _type: PhantomData<fn() -> C>,
}

impl<C: ContextValue> RunContext<C> {
    /// The context `value`.
    pub fn new(value: C) -> Self {
        Self::from_arc(Arc::new(value))
    }

    /// The context `value`, shared (a context holding a connection pool need not be cloned).
    pub fn from_arc(value: Arc<C>) -> Self {
        Self {
            erased: Some(ErasedContext {
                value,
                type_name: std::any::type_name::<C>(),
            }),
            _type: PhantomData,
        }
    }

    /// The context value, `None` for a graph that declares none.
    pub fn get(&self) -> Option<&C> {
        self.erased.as_ref().and_then(ErasedContext::get)
    }

    /// The context with its type erased, for a run of a graph whose type was erased with
    /// [`CompiledGraph::erase_context`](crate::CompiledGraph::erase_context): a server that
    /// decodes each run's context from JSON into the graph's `C` itself. Not for other code:
    /// the typed API keeps the two types in step, this does not.
    #[doc(hidden)]
    pub fn erase(self) -> RunContext {
        self.retype()
    }
}

impl<C> RunContext<C> {
    /// The same value under another type parameter: only for the crate, which keeps the
    /// erased value's type and the parameter in step.
    pub(crate) fn retype<C2>(self) -> RunContext<C2> {
        RunContext {
            erased: self.erased,
            _type: PhantomData,
        }
    }

    /// The erased context of a subgraph's run: its parent task's.
    pub(crate) fn inherited(erased: Option<ErasedContext>) -> Self {
        Self {
            erased,
            _type: PhantomData,
        }
    }
}

impl Default for RunContext<()> {
    fn default() -> Self {
        Self {
            erased: None,
            _type: PhantomData,
        }
    }
}

impl<C> Clone for RunContext<C> {
    fn clone(&self) -> Self {
        Self {
            erased: self.erased.clone(),
            _type: PhantomData,
        }
    }
}

impl<C> fmt::Debug for RunContext<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.erased {
            Some(e) => e.fmt(f),
            None => f.write_str("RunContext(none)"),
        }
    }
}

impl<S: crate::State> super::GraphBuilder<S> {
    /// The same builder, for a graph whose runs carry a context of type `C` (LangGraph's
    /// `StateGraph(State, context_schema=C)`): its nodes may read it typed, as a third argument
    /// (`|s: &S, ctx: &Context, c: &C|`), and its run methods take a
    /// [`RunConfig<C>`](crate::RunConfig::context), so each run must pass one.
    pub fn context<C: ContextValue>(self) -> super::GraphBuilder<S, C> {
        self.retype()
    }
}

impl<S: crate::State, C> super::GraphBuilder<S, C> {
    /// The same builder under another context type. Its nodes were checked against `C`, so only
    /// `context` (from `()`, whose nodes read no context) and `compile` (to the erased tables)
    /// call it.
    pub(crate) fn retype<C2>(self) -> super::GraphBuilder<S, C2> {
        super::GraphBuilder {
            mode: self.mode,
            nodes: self.nodes,
            edges: self.edges,
            joins: self.joins,
            routers: self.routers,
            destinations: self.destinations,
            interrupt_before: self.interrupt_before,
            interrupt_after: self.interrupt_after,
            default_retry: self.default_retry,
            prototype: self.prototype,
            checkpointer: self.checkpointer,
            cache: self.cache,
            subgraphs: self.subgraphs,
            context: PhantomData,
        }
    }
}
