//! Calling a task: the scope an entrypoint's code runs in (its context and call log, carried as
//! a tokio task-local), a call's deterministic position, the match of a call to its saved result,
//! and the [`TaskFuture`] a call returns.
//!
//! A call takes its position when it is made, not when it is awaited: the `n`th call of the
//! entrypoint is at position `n`, the `m`th call made inside that task at `n.m`. So the positions
//! are the same on every execution of deterministic code, whatever order parallel calls finish
//! in. LangGraph matches a call to its saved result by the same counter and the task's name (its
//! task id hashes both, `pregel/_algo.py`'s `prepare_push_task_functional`), and replays a call
//! whose arguments changed; weir also hashes the arguments, and a call whose task or arguments
//! differ from the saved call at its position is an error naming both.

use super::log::{CallLog, SavedCall};
use crate::cache::NodeCache;
use crate::graph::Context;
use crate::{BoxError, RetryPolicy};
use serde::{de::DeserializeOwned, Serialize};
use serde_json::Value;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context as Poll, Poll as Ready};
use std::time::Duration;

tokio::task_local! {
    static SCOPE: Scope;
}

/// Where a task call is made: the entrypoint's context, its call log, and the position prefix
/// of the code calling (empty in the entrypoint, `n.` inside the task at position `n`).
#[derive(Clone)]
pub(crate) struct Scope {
    ctx: Context,
    log: Option<Arc<CallLog>>,
    cache: Option<Arc<dyn NodeCache>>,
    prefix: Arc<str>,
    next: Arc<AtomicUsize>,
}

impl Scope {
    /// The scope of an entrypoint's code, running as the task of `ctx`.
    pub(crate) fn root(ctx: &Context) -> Self {
        Self {
            ctx: ctx.clone(),
            log: ctx.scratch.as_ref().and_then(|s| s.calls.clone()),
            cache: ctx.scratch.as_ref().and_then(|s| s.cache.clone()),
            prefix: Arc::from(""),
            next: Arc::new(AtomicUsize::new(0)),
        }
    }

    fn child(&self, position: &str) -> Self {
        Self {
            ctx: self.ctx.clone(),
            log: self.log.clone(),
            cache: self.cache.clone(),
            prefix: Arc::from(format!("{position}.")),
            next: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Runs `f` in this scope: the tasks it calls take their positions here.
    pub(crate) async fn run<F: Future>(self, f: F) -> F::Output {
        SCOPE.scope(self, f).await
    }
}

/// The context of the entrypoint the calling code runs in (for a task: the entrypoint that
/// called it): its store, custom events (`emit`) and interrupts.
///
/// # Errors
/// Outside an entrypoint.
pub fn context() -> Result<Context, BoxError> {
    SCOPE
        .try_with(|s| s.ctx.clone())
        .map_err(|_| FuncError::boxed("`weir::func::context` was called outside an entrypoint".to_owned()))
}

/// Pauses the run to ask `question` from inside an entrypoint or a task, as
/// [`Context::interrupt`] does: resuming the thread re-runs the entrypoint from the top, its
/// finished tasks return their saved results, and this call returns the answer.
///
/// # Errors
/// The pause itself (propagate it with `?`); an answer of another type; a call outside an
/// entrypoint, or in one without a checkpointer.
pub fn interrupt<Q: Serialize, A: DeserializeOwned>(question: Q) -> Result<A, BoxError> {
    Ok(context()?.interrupt(question)?)
}

/// A task's options, as `#[task(...)]` gives them: its name, retry, timeout and cache.
#[derive(Debug, Clone)]
pub struct TaskOptions {
    name: &'static str,
    retry: Option<RetryPolicy>,
    timeout: Option<Duration>,
    /// Cached, for how long (`None` inside: until the cache drops it).
    cache: Option<Option<Duration>>,
}

impl TaskOptions {
    /// The options of the task `name`: no retry, no timeout.
    pub fn new(name: &'static str) -> Self {
        Self {
            name,
            retry: None,
            timeout: None,
            cache: None,
        }
    }
    /// Retries a failed call as `policy` says (a node's [`RetryPolicy`]).
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = Some(policy);
        self
    }
    /// Fails an attempt that takes longer than `limit`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }
    /// Keeps the task's results in the entrypoint's cache ([`Entrypoint::with_cache`]), by the
    /// task's name and its arguments, for `ttl` (`None`: as long as the cache keeps them): a call
    /// with the same arguments, in any run or thread, returns the kept result without running
    /// (LangGraph's `cache_policy`). Without a cache on the entrypoint, every call runs.
    ///
    /// [`Entrypoint::with_cache`]: crate::func::Entrypoint::with_cache
    pub fn cache(mut self, ttl: Option<Duration>) -> Self {
        self.cache = Some(ttl);
        self
    }
    /// The task's name.
    pub fn name(&self) -> &str {
        self.name
    }
}

/// The error of a task call that could not run or be matched to its saved result.
#[derive(Debug)]
pub struct FuncError(String);

impl FuncError {
    pub(crate) fn boxed(message: String) -> BoxError {
        Box::new(Self(message))
    }
}

impl fmt::Display for FuncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FuncError {}

/// What a task call returns: await it for the task's result. The task starts when called, so
/// several calls made before awaiting any run in parallel. Dropping it cancels the task.
#[must_use = "a task's result is in its future: await it"]
pub struct TaskFuture<T> {
    inner: Inner<T>,
}

enum Inner<T> {
    Ready(Option<Result<T, BoxError>>),
    Running(&'static str, tokio::task::JoinHandle<Result<T, BoxError>>),
}

impl<T> fmt::Debug for TaskFuture<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            Inner::Ready(_) => f.write_str("TaskFuture(ready)"),
            Inner::Running(name, _) => write!(f, "TaskFuture({name})"),
        }
    }
}

// The result is only ever moved out, never pinned.
impl<T> Unpin for TaskFuture<T> {}

impl<T> TaskFuture<T> {
    fn ready(result: Result<T, BoxError>) -> Self {
        Self {
            inner: Inner::Ready(Some(result)),
        }
    }
}

impl<T> Future for TaskFuture<T> {
    type Output = Result<T, BoxError>;
    fn poll(self: Pin<&mut Self>, cx: &mut Poll<'_>) -> Ready<Self::Output> {
        match &mut self.get_mut().inner {
            Inner::Ready(r) => Ready::Ready(r.take().unwrap_or_else(|| {
                Err(FuncError::boxed(
                    "a task's future was polled after it completed".to_owned(),
                ))
            })),
            Inner::Running(name, handle) => Pin::new(handle).poll(cx).map(|joined| {
                joined.unwrap_or_else(|e| {
                    let why = if e.is_panic() { "panicked" } else { "was cancelled" };
                    Err(FuncError::boxed(format!("task `{name}` {why}")))
                })
            }),
        }
    }
}

impl<T> Drop for TaskFuture<T> {
    fn drop(&mut self) {
        if let Inner::Running(_, handle) = &self.inner {
            handle.abort();
        }
    }
}

/// What a task's arguments, its result and an entrypoint's input and return value must be:
/// serde both ways, since they are saved in checkpoints.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be saved in a checkpoint: it is not serde's `Serialize` and `Deserialize`",
    label = "a task's arguments and result, and an entrypoint's input and return value, are saved",
    note = "derive `serde::Serialize` and `serde::Deserialize` for it"
)]
pub trait Saved: Serialize + DeserializeOwned {}

#[diagnostic::do_not_recommend]
impl<T: Serialize + DeserializeOwned> Saved for T {}

/// Asserts, at the span of a `#[task]`'s or `#[entrypoint]`'s type, that it can be saved.
#[doc(hidden)]
pub const fn assert_saved<T: Saved>() {}

/// A fallible task's result with its error boxed.
///
/// # Errors
/// The task's own error.
#[doc(hidden)]
pub fn task_result<T, E: Into<BoxError>>(r: Result<T, E>) -> Result<T, BoxError> {
    r.map_err(Into::into)
}

/// The JSON of a call's arguments.
///
/// # Errors
/// When an argument does not serialize.
#[doc(hidden)]
pub fn task_args<A: Serialize>(args: &A) -> Result<Value, serde_json::Error> {
    serde_json::to_value(args)
}

/// A call's arguments decoded back from their JSON, for each attempt.
///
/// # Errors
/// When they do not decode (an argument whose serde form does not round-trip).
#[doc(hidden)]
pub fn decode_args<A: DeserializeOwned>(task: &str, args: Value) -> Result<A, BoxError> {
    serde_json::from_value(args).map_err(|e| {
        FuncError::boxed(format!(
            "task `{task}`: its arguments do not decode from their saved form: {e}"
        ))
    })
}

/// Calls the task `options.name` on `args` (their JSON): the saved result when the call's
/// position has one, else `run` on tokio, its result saved once it succeeds. What a `#[task]`
/// function's body is.
pub fn call_task<T, F, Fut>(options: TaskOptions, args: Result<Value, serde_json::Error>, run: F) -> TaskFuture<T>
where
    T: Serialize + DeserializeOwned + Send + 'static,
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, BoxError>> + Send + 'static,
{
    let name = options.name;
    let Ok(scope) = SCOPE.try_with(Scope::clone) else {
        return TaskFuture::ready(Err(FuncError::boxed(format!(
            "task `{name}` was called outside an entrypoint: call it from an `#[entrypoint]` \
             function or another task"
        ))));
    };
    let position = format!("{}{}", scope.prefix, scope.next.fetch_add(1, Ordering::Relaxed));
    let args = match args {
        Ok(a) => a,
        Err(e) => {
            return TaskFuture::ready(Err(FuncError::boxed(format!(
                "task `{name}`: an argument does not serialize: {e}"
            ))))
        }
    };
    let hash = args_hash(&args);
    if let Some(saved) = scope.log.as_ref().and_then(|log| log.saved(&position)) {
        return TaskFuture::ready(replay(name, &position, &hash, saved));
    }
    let child = scope.child(&position);
    let log = scope.log.clone();
    // A cached task's key: its name and its arguments' JSON (whole, not hashed: two calls may
    // share a result only when their arguments are the same).
    let cached = scope
        .cache
        .clone()
        .zip(options.cache)
        .map(|(cache, ttl)| (cache, format!("__task__:{name}:{args}"), ttl));
    let job = async move {
        let kept = match &cached {
            Some((cache, key, _)) => kept_result(name, &**cache, key).await?,
            None => None,
        };
        let ran = kept.is_none();
        let value = match kept {
            Some(value) => value,
            None => attempts(&options, args, &run).await?,
        };
        let keep = cached.as_ref().filter(|_| ran);
        if log.is_some() || keep.is_some() {
            // The result's JSON, once, for the cache and the call log.
            let result = serde_json::to_value(&value)
                .map_err(|e| FuncError::boxed(format!("task `{name}`: its result does not serialize: {e}")))?;
            if let Some((cache, key, ttl)) = keep {
                cache
                    .put(key, result.to_string().into_bytes(), *ttl)
                    .await
                    .map_err(|e| cache_failed(name, "writing to", e))?;
            }
            if let Some(log) = log {
                let call = SavedCall {
                    task: name.to_owned(),
                    args: hash,
                    result,
                };
                log.save(&position, call).await?;
            }
        }
        Ok(value)
    };
    TaskFuture {
        inner: Inner::Running(name, tokio::spawn(child.run(job))),
    }
}

/// The saved result of the call at `position`, when the call is the one saved there.
fn replay<T: DeserializeOwned>(name: &str, position: &str, hash: &str, saved: SavedCall) -> Result<T, BoxError> {
    if saved.task != name {
        return Err(FuncError::boxed(format!(
            "task `{name}` was called at position {position}, where the saved run called task `{}`: \
             the entrypoint's task calls must come in the same order on every run",
            saved.task
        )));
    }
    if saved.args != hash {
        return Err(FuncError::boxed(format!(
            "task `{name}` at position {position} was called with other arguments than in the saved \
             run: the entrypoint's task calls must be deterministic"
        )));
    }
    serde_json::from_value(saved.result).map_err(|e| {
        FuncError::boxed(format!(
            "task `{name}` at position {position}: its saved result does not decode: {e}"
        ))
    })
}

/// The result a cached task kept under `key`, if any. One that no longer decodes as `T` (the
/// task's result type changed) counts as none: the task runs again and replaces it.
async fn kept_result<T: DeserializeOwned>(name: &str, cache: &dyn NodeCache, key: &str) -> Result<Option<T>, BoxError> {
    let kept = cache.get(key).await.map_err(|e| cache_failed(name, "reading", e))?;
    Ok(kept.and_then(|bytes| serde_json::from_slice(&bytes).ok()))
}

/// The error of a cached task whose cache failed.
fn cache_failed(name: &str, what: &str, e: BoxError) -> BoxError {
    FuncError::boxed(format!("task `{name}`: {what} its cache failed: {e}"))
}

/// Runs a call's attempts: each under the timeout, retried as the policy says.
async fn attempts<T, F, Fut>(options: &TaskOptions, args: Value, run: &F) -> Result<T, BoxError>
where
    F: Fn(Value) -> Fut,
    Fut: Future<Output = Result<T, BoxError>>,
{
    let mut attempt = 1u32;
    loop {
        let fut = run(args.clone());
        let outcome = match options.timeout {
            Some(limit) => match tokio::time::timeout(limit, fut).await {
                Ok(r) => r,
                Err(_) => Err(FuncError::boxed(format!(
                    "task `{}` timed out after {limit:?}",
                    options.name
                ))),
            },
            None => fut.await,
        };
        match (outcome, &options.retry) {
            (Err(e), Some(policy)) if !is_pause() && policy.should_retry(attempt, &e) => {
                tokio::time::sleep(policy.sleep_for(attempt)).await;
                attempt += 1;
            }
            (outcome, _) => return outcome,
        }
    }
}

/// Whether the entrypoint's task paused (an interrupt is never retried).
fn is_pause() -> bool {
    SCOPE
        .try_with(|s| s.ctx.scratch.as_ref().is_some_and(|s| s.paused().is_some()))
        .unwrap_or(false)
}

/// A stable hash of a call's arguments (FNV-1a over their JSON), as hex.
fn args_hash(args: &Value) -> String {
    let bytes = serde_json::to_vec(args).unwrap_or_default();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}
