//! An entrypoint: a one-input async function compiled to a one-node graph over [`FuncState`],
//! so it runs on the same loop, checkpointers, streams and server as any graph. [`Entrypoint`]
//! builds it, [`Func`] is the compiled form with typed `invoke`, `run` and resumes, and
//! [`Final`] returns one value while saving another as the next call's `previous`.

use super::call::Scope;
use super::state::{FuncState, FuncStateUpdate};
use crate::cache::NodeCache;
use crate::checkpoint::Checkpointer;
use crate::error::Error;
use crate::store::Store;
use crate::{
    BoxError, BuildError, CompiledGraph, Context, ContextValue, GraphBuilder, Outcome, RunConfig, RunStream, StreamMode,
};
use crate::{END, START};
use futures::future::BoxFuture;
use serde::{de::DeserializeOwned, Serialize};
use serde_json::Value;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use tracing::Instrument;

/// Returns `value` to the caller and saves `save` as the next call's `previous`
/// (LangGraph's `entrypoint.final`).
#[derive(Debug, Clone, PartialEq)]
pub struct Final<O, P> {
    /// What the call returns.
    pub value: O,
    /// What the next call on the thread gets as `previous`.
    pub save: P,
}

/// What an entrypoint may return: a serde value (returned and saved as the next `previous`), or
/// a [`Final`].
pub trait EntryOutput: Send + 'static {
    /// What the call returns.
    type Out: Serialize + DeserializeOwned + Send + 'static;
    /// What the next call gets as `previous`.
    type Save: Serialize + DeserializeOwned + Send + 'static;
    /// The value returned, and the value saved when it differs.
    fn into_parts(self) -> (Self::Out, Option<Self::Save>);
}

impl<T: Serialize + DeserializeOwned + Send + 'static> EntryOutput for T {
    type Out = T;
    type Save = T;
    fn into_parts(self) -> (T, Option<T>) {
        (self, None)
    }
}

impl<O, P> EntryOutput for Final<O, P>
where
    O: Serialize + DeserializeOwned + Send + 'static,
    P: Serialize + DeserializeOwned + Send + 'static,
{
    type Out = O;
    type Save = P;
    fn into_parts(self) -> (O, Option<P>) {
        (self.value, Some(self.save))
    }
}

type EntryFn = Arc<dyn Fn(Value, Value, Context) -> BoxFuture<'static, Result<(Value, Value), BoxError>> + Send + Sync>;

/// An entrypoint being built: its name (the node's), its function, and what it runs with.
/// `#[entrypoint]` builds one; it can be built by hand as well.
pub struct Entrypoint<I, R: EntryOutput> {
    name: String,
    f: EntryFn,
    checkpointer: Option<Arc<dyn Checkpointer>>,
    store: Option<Arc<dyn Store>>,
    cache: Option<Arc<dyn NodeCache>>,
    _types: PhantomData<fn(I) -> R>,
}

impl<I, R: EntryOutput> fmt::Debug for Entrypoint<I, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entrypoint")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<I, R> Entrypoint<I, R>
where
    I: Serialize + DeserializeOwned + Send + 'static,
    R: EntryOutput,
{
    /// The entrypoint `name` running `f(input, previous, context)`: `previous` is what the last
    /// call on the thread saved (`None` on a thread's first call).
    pub fn new<F, Fut, E>(name: impl Into<String>, f: F) -> Self
    where
        F: Fn(I, Option<R::Save>, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
        E: Into<BoxError>,
    {
        let name = name.into();
        let label = name.clone();
        let f: EntryFn = Arc::new(move |input, previous, ctx| {
            let decoded = decode::<I>(&label, "input", input).and_then(|i| {
                let p = match previous {
                    Value::Null => None,
                    p => Some(decode::<R::Save>(&label, "previous value", p)?),
                };
                Ok((i, p))
            });
            let run = decoded.map(|(i, p)| f(i, p, ctx));
            let label = label.clone();
            Box::pin(async move {
                let (out, save) = run?.await.map_err(Into::into)?.into_parts();
                let out_json = encode(&label, "return value", &out)?;
                let save_json = match save {
                    Some(s) => encode(&label, "saved value", &s)?,
                    None => out_json.clone(),
                };
                Ok((out_json, save_json))
            })
        });
        Self {
            name,
            f,
            checkpointer: None,
            store: None,
            cache: None,
            _types: PhantomData,
        }
    }

    /// Saves the entrypoint's runs with `checkpointer`: threads, interrupts, resume, `previous`.
    pub fn with_checkpointer(mut self, checkpointer: impl Checkpointer) -> Self {
        self.checkpointer = Some(Arc::new(checkpointer));
        self
    }

    /// Gives the entrypoint's runs a store (`ctx.store()`).
    pub fn with_store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// Keeps the results of its cached tasks (`#[task(cache)]`, [`TaskOptions::cache`]) in
    /// `cache`, across runs and threads: a cached task called again with the same arguments
    /// (within its time to live) returns the kept result without running.
    ///
    /// [`TaskOptions::cache`]: crate::func::TaskOptions::cache
    pub fn with_cache(mut self, cache: impl NodeCache) -> Self {
        self.cache = Some(Arc::new(cache));
        self
    }

    /// Compiles the entrypoint to its one-node graph.
    ///
    /// # Errors
    /// A name the graph cannot take as a node's (empty, or a reserved name).
    pub fn compile(self) -> Result<Func<I, R::Out>, BuildError> {
        let f = self.f;
        let mut g = GraphBuilder::<FuncState>::new();
        g.add_node(self.name.clone(), move |s: &FuncState, ctx: &Context| {
            let run = f(s.input.clone(), s.previous.clone(), ctx.clone());
            let scope = Scope::root(ctx);
            async move {
                let (out, save) = on_worker(scope.run(run).in_current_span()).await?;
                let mut u = FuncStateUpdate::default();
                u.output.push(out);
                u.previous.push(save);
                Ok::<_, BoxError>(u)
            }
        });
        g.add_edge(START, self.name.clone()).add_edge(self.name.clone(), END);
        g.cache = self.cache;
        let mut graph = g.compile()?;
        if let Some(c) = self.checkpointer {
            graph = graph.with_checkpointer_arc(c);
        }
        if let Some(s) = self.store {
            graph = graph.with_store(s);
        }
        Ok(Func {
            name: self.name,
            graph,
            _types: PhantomData,
        })
    }
}

/// Runs an entrypoint's code as a tokio task of its own, aborted if the run drops it, its
/// panic resumed here (where the step catches a node's). A run driven from outside the
/// runtime (`block_on(invoke(…))`) runs its one node in place, on the caller's thread: there,
/// each task call, spawned onto a worker and awaited, cost two wake-ups of another thread
/// (~13 µs a call). On a worker, a call awaited at once runs on that same worker.
async fn on_worker<T: Send + 'static>(
    code: impl Future<Output = Result<T, BoxError>> + Send + 'static,
) -> Result<T, BoxError> {
    /// Aborts the task when the node's future is dropped (a no-op once it has ended).
    struct AbortOnDrop(tokio::task::AbortHandle);
    impl Drop for AbortOnDrop {
        fn drop(&mut self) {
            self.0.abort();
        }
    }
    let handle = tokio::spawn(code);
    let _abort = AbortOnDrop(handle.abort_handle());
    match handle.await {
        Ok(done) => done,
        Err(e) => match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(_) => Err(super::call::FuncError::boxed(
                "the entrypoint's task was cancelled".to_owned(),
            )),
        },
    }
}

fn decode<T: DeserializeOwned>(entry: &str, what: &str, v: Value) -> Result<T, BoxError> {
    serde_json::from_value(v).map_err(|e| {
        super::call::FuncError::boxed(format!(
            "entrypoint `{entry}`: the {what} is not a `{}`: {e}",
            std::any::type_name::<T>()
        ))
    })
}

fn encode<T: Serialize>(entry: &str, what: &str, v: &T) -> Result<Value, BoxError> {
    serde_json::to_value(v)
        .map_err(|e| super::call::FuncError::boxed(format!("entrypoint `{entry}`: the {what} does not serialize: {e}")))
}

/// A compiled entrypoint: typed `invoke` and `run` over its graph ([`Func::graph`]), which
/// has everything else (`get_state`, history, `update_state`, the server). `X` is the type of
/// its runs' context (LangGraph's `context_schema`), `()` until [`Func::context`] declares one.
pub struct Func<I, O, X = ()> {
    name: String,
    graph: CompiledGraph<FuncState, X>,
    _types: PhantomData<fn(I) -> O>,
}

impl<I, O, X> Clone for Func<I, O, X> {
    fn clone(&self) -> Self {
        Self {
            name: self.name.clone(),
            graph: self.graph.clone(),
            _types: PhantomData,
        }
    }
}

impl<I, O, X> fmt::Debug for Func<I, O, X> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Func").field("name", &self.name).finish_non_exhaustive()
    }
}

impl<I, O> Func<I, O> {
    /// The same entrypoint, its runs carrying a context of type `X` (LangGraph's
    /// `@entrypoint(context_schema=X)`): its run methods take a [`RunConfig<X>`](RunConfig::context),
    /// and its code reads the value with [`Context::context`]`::<X>()` (in a task, through
    /// [`context`](super::context)`()`). Served, a run's `context` object is decoded into an `X`.
    pub fn context<X: ContextValue>(self) -> Func<I, O, X> {
        let g = self.graph;
        Func {
            name: self.name,
            graph: CompiledGraph {
                inner: g.inner,
                checkpointer: g.checkpointer,
                store: g.store,
                context: PhantomData,
            },
            _types: PhantomData,
        }
    }
}

impl<I: Serialize, O: DeserializeOwned, X: ContextValue> Func<I, O, X> {
    /// The entrypoint's name (its node's).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The entrypoint's graph: one node over [`FuncState`]. Serve it, read its state and history.
    pub fn graph(&self) -> &CompiledGraph<FuncState, X> {
        &self.graph
    }

    /// The same entrypoint, its runs saved by `checkpointer`.
    pub fn with_checkpointer(&self, checkpointer: impl Checkpointer) -> Self {
        Self {
            name: self.name.clone(),
            graph: self.graph.with_checkpointer(checkpointer),
            _types: PhantomData,
        }
    }

    /// The same entrypoint, its runs saved by a shared `checkpointer`.
    pub fn with_checkpointer_arc(&self, checkpointer: Arc<dyn Checkpointer>) -> Self {
        Self {
            name: self.name.clone(),
            graph: self.graph.with_checkpointer_arc(checkpointer),
            _types: PhantomData,
        }
    }

    /// Runs the entrypoint on `input` and returns what it returned.
    ///
    /// # Errors
    /// The entrypoint's or a task's error, a pause (see [`run`](Self::run)), or a return value
    /// that is not an `O`.
    pub async fn invoke(&self, input: I, config: &RunConfig<X>) -> Result<O, Error> {
        match self.run(input, config).await? {
            Outcome::Done(s) => self.output(&s),
            Outcome::Paused { pauses, .. } => Err(Error::paused(pauses)),
        }
    }

    /// Runs the entrypoint on `input`: done (read the return value with
    /// [`output`](Self::output)) or paused by an interrupt.
    ///
    /// # Errors
    /// The entrypoint's or a task's error; an input that does not serialize.
    pub async fn run(&self, input: I, config: &RunConfig<X>) -> Result<Outcome<FuncState>, Error> {
        self.graph.run(self.input(input)?, config).await
    }

    /// Streams a run on `input`, in `modes` (LangGraph's default for an entrypoint is
    /// [`StreamMode::UPDATES`]).
    ///
    /// # Errors
    /// An input that does not serialize.
    pub fn stream(&self, input: I, config: &RunConfig<X>, modes: StreamMode) -> Result<RunStream<FuncState>, Error> {
        Ok(self.graph.stream(self.input(input)?, config, modes))
    }

    /// Answers the thread's interrupt with `answer`: the entrypoint re-runs from the top, its
    /// finished tasks return their saved results, and the interrupt returns `answer`.
    ///
    /// # Errors
    /// As [`CompiledGraph::resume_with`].
    pub async fn resume_with<A: Serialize>(
        &self,
        answer: A,
        config: &RunConfig<X>,
    ) -> Result<Outcome<FuncState>, Error> {
        self.graph.resume_with(answer, config).await
    }

    /// Goes on with the thread after a failure or a crash: the entrypoint re-runs from the top
    /// and its finished tasks return their saved results.
    ///
    /// # Errors
    /// As [`CompiledGraph::resume`].
    pub async fn resume(&self, config: &RunConfig<X>) -> Result<Outcome<FuncState>, Error> {
        self.graph.resume(config).await
    }

    /// The return value held by a state of the entrypoint's graph.
    ///
    /// # Errors
    /// When it is not an `O` (or the entrypoint has not returned yet).
    pub fn output(&self, state: &FuncState) -> Result<O, Error> {
        serde_json::from_value(state.output.clone()).map_err(|e| {
            let source = format!("the return value is not a `{}`: {e}", std::any::type_name::<O>());
            Error::node(&self.name, 1, super::call::FuncError::boxed(source))
        })
    }

    fn input(&self, input: I) -> Result<FuncStateUpdate, Error> {
        let v = serde_json::to_value(input)
            .map_err(|e| Error::config(format!("entrypoint `{}`: the input does not serialize: {e}", self.name)))?;
        Ok(FuncStateUpdate::input(v))
    }
}
