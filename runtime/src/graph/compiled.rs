//! A compiled graph: the static tables of [`GraphInner`], shared by every copy, the checkpointer its
//! runs checkpoint with, the store its nodes reach, and the type of its runs' context. Running it is the loop's business (`pregel`, which adds the methods).

use super::compile::GraphInner;
use crate::checkpoint::Checkpointer;
use crate::state::State;
use crate::store::Store;
use std::any::Any;
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

/// A compiled graph, ready to run. Cheap to clone; runs may go on concurrently. `C` is the type
/// of its runs' context ([`GraphBuilder::context`](crate::GraphBuilder::context)), `()` when it
/// declares none.
pub struct CompiledGraph<S: State, C = ()> {
    /// The compiled tables, shared by every copy of the graph, whatever its checkpointer.
    pub(crate) inner: Arc<GraphInner<S>>,
    pub(crate) checkpointer: Option<Arc<dyn Checkpointer>>,
    /// The store its nodes reach through [`Context::store`](crate::Context::store).
    pub(crate) store: Option<Arc<dyn Store>>,
    pub(crate) context: PhantomData<fn() -> C>,
}

impl<S: State, C> Clone for CompiledGraph<S, C> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            checkpointer: self.checkpointer.clone(),
            store: self.store.clone(),
            context: PhantomData,
        }
    }
}

impl<S: State, C> fmt::Debug for CompiledGraph<S, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledGraph")
            .field("nodes", &self.inner.user_node_names())
            .finish_non_exhaustive()
    }
}

impl<S: State, C> CompiledGraph<S, C> {
    pub(crate) fn new(inner: GraphInner<S>, checkpointer: Option<Arc<dyn Checkpointer>>) -> Self {
        Self {
            inner: Arc::new(inner),
            checkpointer,
            store: None,
            context: PhantomData,
        }
    }

    /// The same graph, its runs taking a [`RunConfig`](crate::RunConfig) of no context type:
    /// for a server that decodes each run's context from JSON into `C` and passes it with
    /// [`RunContext::erase`](crate::RunContext::erase). A node that reads the context typed
    /// fails its run, naming itself and both types, when the run's context is not a `C`.
    #[doc(hidden)]
    pub fn erase_context(&self) -> CompiledGraph<S>
    where
        C: 'static,
    {
        self.untyped().into_owned()
    }

    /// The graph as the loop runs it, its context type erased: borrowed when it is `()`
    /// already. The run methods take a [`RunConfig<C>`](crate::RunConfig), so the context
    /// the loop passes its nodes is a `C`.
    pub(crate) fn untyped(&self) -> Cow<'_, CompiledGraph<S>>
    where
        C: 'static,
    {
        match (self as &dyn Any).downcast_ref::<CompiledGraph<S>>() {
            Some(g) => Cow::Borrowed(g),
            None => Cow::Owned(CompiledGraph {
                inner: self.inner.clone(),
                checkpointer: self.checkpointer.clone(),
                store: self.store.clone(),
                context: PhantomData,
            }),
        }
    }

    /// The same graph, its nodes (and its subgraphs' nodes) reaching `store` through
    /// [`Context::store`](crate::Context::store) in every run and thread (LangGraph's
    /// `compile(store=…)`). A run's [`RunConfig::store`](crate::RunConfig::store) takes its place.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use weir_runtime::{BoxError, Context, GraphBuilder, RunConfig, START, END};
    /// # use weir_runtime::store::{InMemoryStore, Store};
    /// # weir_runtime::__doc_state!();
    /// let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    /// let mut g = GraphBuilder::<Doc>::new();
    /// g.add_node("remember", |s: &Doc, ctx: &Context| {
    ///     let (store, text) = (ctx.store().cloned(), s.text.clone());
    ///     async move {
    ///         store?.put_as(&["notes"], "last", &serde_json::json!({ "text": text })).await?;
    ///         Ok::<_, BoxError>(DocUpdate::default())
    ///     }
    /// });
    /// g.add_edge(START, "remember").add_edge("remember", END);
    /// let app = g.compile().unwrap().with_store(store.clone());
    /// # let rt = tokio::runtime::Runtime::new().unwrap();
    /// rt.block_on(app.invoke(Doc { text: "hi".into() }, &RunConfig::default())).unwrap();
    /// let item = rt.block_on(store.get(&["notes"], "last")).unwrap().unwrap();
    /// assert_eq!(item.value["text"], "hi");
    /// ```
    pub fn with_store(&self, store: Arc<dyn Store>) -> Self {
        Self {
            inner: self.inner.clone(),
            checkpointer: self.checkpointer.clone(),
            store: Some(store),
            context: PhantomData,
        }
    }
}
