//! Running a step's tasks: a task's job under its node's timeout and retry policy, and the
//! tasks of a wide step in a few groups on tokio's workers.
//!
//! A step of one task runs it in place (the loop awaits [`run_job`] itself, no spawn). A wider
//! step deals its tasks round-robin into a few tokio tasks per runtime worker, each polling its
//! share together: nodes that await (a model, a tool, the network) all make progress at once,
//! CPU-bound nodes spread over the workers, and a step of a thousand tasks spawns a handful of
//! tokio tasks, not a thousand. A node that blocks its thread (a long synchronous computation)
//! holds up the nodes sharing its tokio task: run such work in `tokio::task::spawn_blocking`
//! from an async node.
//!
//! The groups' handles live in the [`Executor`]: a step whose future is dropped (its caller
//! gave up on `invoke`, or dropped the stream) aborts them, so no node outlives its run.

use super::pending::StepSaver;
use super::spans;
use crate::error::{BoxError, Error};
use crate::graph::compile::GraphInner;
use crate::graph::policy::NodePolicy;
use crate::graph::Context;
use crate::graph::{Command, NodeFn, Packet};
use crate::state::State;
use futures::FutureExt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;
use tracing::Instrument;

/// What a task runs.
pub(crate) enum Job<S: State> {
    Node(NodeFn<S, S>),
    Packet(Packet<S>),
    /// A command known before the step (the input, saved or cached writes): boxed, so that a
    /// task's job, which every task carries through its group, stays a few words.
    Ready(Box<Command<S>>),
    /// A node without a function: an empty command.
    Empty,
    /// A failure carried over from a step that did not complete (for the node's error handler).
    Failed(String),
}

/// Why a task failed.
pub(crate) enum Failure {
    Error(BoxError),
    Timeout(Duration),
    Panic(String),
}

/// As a task's span reports it: the node's error, its timeout, or its panic.
impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Error(e) => write!(f, "{e}"),
            Failure::Timeout(limit) => write!(f, "timed out after {limit:?}"),
            Failure::Panic(message) => write!(f, "panicked: {message}"),
        }
    }
}

/// A node took longer than its timeout (what a retry policy's predicate sees).
#[derive(Debug)]
struct TimedOut(Duration);

impl std::fmt::Display for TimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "timed out after {:?}", self.0)
    }
}

impl std::error::Error for TimedOut {}

/// Runs a task's job, with its node's timeout and retry policy.
///
/// A node without either runs straight; one with a policy runs in a future of its own, boxed:
/// the timer a timeout or a retry needs would otherwise widen every task's future (copied as
/// the task is made and joined), whether its node has a policy or not.
pub(crate) async fn run_job<S: State>(
    job: Job<S>,
    state: &S,
    ctx: Context,
    policy: &NodePolicy,
) -> Result<Command<S>, Failure> {
    match job {
        Job::Ready(c) => Ok(*c),
        Job::Empty => Ok(Command::default()),
        Job::Failed(e) => Err(Failure::Error(e.into())),
        job if policy.timeout.is_none() && policy.retry.is_none() => {
            attempt(&job, state, &ctx).await.map_err(Failure::Error)
        }
        job => Box::pin(run_with_policy(job, state, ctx, policy)).await,
    }
}

/// One run of a task's node.
async fn attempt<S: State>(job: &Job<S>, state: &S, ctx: &Context) -> Result<Command<S>, BoxError> {
    match job {
        Job::Node(f) => f.call(state, ctx).await,
        Job::Packet(p) => p.job.clone().run(ctx.clone()).await,
        Job::Ready(_) | Job::Empty | Job::Failed(_) => Ok(Command::default()),
    }
}

/// Runs a task's node under its timeout, again while its retry policy says so.
async fn run_with_policy<S: State>(
    job: Job<S>,
    state: &S,
    ctx: Context,
    policy: &NodePolicy,
) -> Result<Command<S>, Failure> {
    let mut attempt_no = 0;
    loop {
        attempt_no += 1;
        let once = attempt(&job, state, &ctx);
        let result = match policy.timeout {
            Some(limit) => match tokio::time::timeout(limit, once).await {
                Ok(r) => r,
                Err(_) => Err(Box::new(TimedOut(limit)) as BoxError),
            },
            None => once.await,
        };
        let error = match result {
            Ok(c) => return Ok(c),
            Err(e) => e,
        };
        match &policy.retry {
            Some(p) if p.should_retry(attempt_no, &error) => {
                // An event of the task's span: the attempt that failed, and why.
                tracing::info!(attempt = i64::from(attempt_no), reason = %error, "weir.task.retry");
                tokio::time::sleep(p.sleep_for(attempt_no)).await
            }
            _ => {
                return Err(match error.downcast::<TimedOut>() {
                    Ok(t) => Failure::Timeout(t.0),
                    Err(e) => Failure::Error(e),
                })
            }
        }
    }
}

/// What every task of a wide step shares, once per step: the state the step began with, the
/// compiled graph (each task's node policy), the step's saver, the span the tasks' spans are
/// children of, and whether tasks are timed. Each group holds it and lends it to its tasks, so
/// that a task carries only what is its own.
pub(crate) struct StepShared<S: State> {
    pub(crate) state: Arc<S>,
    pub(crate) g: Arc<GraphInner<S>>,
    /// Where the tasks save their writes as they end, in a checkpointed run.
    pub(crate) saver: Option<StepSaver<S>>,
    /// The run's span, where the loop runs.
    pub(crate) span: tracing::Span,
    pub(crate) timed: bool,
}

/// What a task of a wide step runs: its job, its context, its node, and whether it saves its
/// writes as it ends (when the step has a saver). A few words: it is moved into its group, then
/// into its future.
pub(crate) struct TaskInput<S: State> {
    pub(crate) job: Job<S>,
    pub(crate) ctx: Context,
    pub(crate) node: u32,
    pub(crate) saves: bool,
}

/// What a task came to: its command or failure, how long it ran (zero when untimed), and
/// whether its writes were saved as it ended (or why they could not be).
pub(crate) struct TaskOutput<S: State> {
    pub(crate) result: Result<Command<S>, Failure>,
    pub(crate) duration: Duration,
    pub(crate) saved: Result<bool, Error>,
}

/// Runs a task of a wide step in its span, timed when the step is, and saves its writes as it
/// ends when it saves them. A panicking node fails its task, never the other tasks of its group.
async fn run_task<S: State>(task: TaskInput<S>, shared: &StepShared<S>) -> TaskOutput<S> {
    let started = shared.timed.then(Instant::now);
    let TaskInput { job, ctx, node, saves } = task;
    let span = spans::task(Some(&shared.span), &ctx);
    let push = ctx.push;
    let policy = &shared.g.nodes[node as usize].policy;
    let result = AssertUnwindSafe(run_job(job, &shared.state, ctx, policy).instrument(span.clone()))
        .catch_unwind()
        .await;
    let duration = started.map_or(Duration::ZERO, |s| s.elapsed());
    let result = result.unwrap_or_else(|p| Err(Failure::Panic(panic_message(p))));
    spans::end_task(&span, &result);
    let saved = match (&result, &shared.saver) {
        // Boxed: a put's future is wider than a node's, and only checkpointed steps make one.
        (Ok(command), Some(saver)) if saves => Box::pin(saver.put(node, push, command)).await,
        _ => Ok(false),
    };
    TaskOutput {
        result,
        duration,
        saved,
    }
}

/// The most tasks a spawned group polls together: `join_all` polls up to 30 futures in place,
/// in one allocation, and gives each of a larger set an allocation of its own (a
/// `FuturesOrdered`), which cost a fan-out task more than a third of its instructions
/// (callgrind, fanout 1000).
const GROUP_MAX: usize = 30;

/// Runs a group of tasks together, their outputs in order. The tasks' futures are made and
/// joined inside the spawned task, on its worker, not on the loop's, and borrow what the step's
/// tasks share from the group.
async fn join_group<S: State>(tasks: Vec<TaskInput<S>>, shared: Arc<StepShared<S>>) -> Vec<TaskOutput<S>> {
    let shared = &*shared;
    let tasks = tasks.into_iter().map(|task| run_task(task, shared));
    futures::future::join_all(tasks).await
}

/// The tasks of a wide step, dealt round-robin into groups as they are made: a few groups per
/// worker (more when a group would hold over [`GROUP_MAX`] tasks). Dealt straight into their
/// groups, the tasks are moved once, not through a list of the step's tasks first (a thousand
/// tasks of a few hundred bytes each, a fresh allocation per run, faulted in page by page).
pub(crate) struct Deal<S: State> {
    groups: Vec<Vec<TaskInput<S>>>,
    dealt: usize,
}

impl<S: State> Deal<S> {
    /// Room for `n_tasks` tasks (more than one) in their groups.
    pub(crate) fn new(n_tasks: usize) -> Self {
        // The loop checked for a runtime when the run started.
        let workers = tokio::runtime::Handle::current().metrics().num_workers();
        let n_groups = (4 * workers).max(n_tasks.div_ceil(GROUP_MAX)).clamp(1, n_tasks.max(1));
        let groups = (0..n_groups)
            .map(|_| Vec::with_capacity(n_tasks.div_ceil(n_groups)))
            .collect();
        Self { groups, dealt: 0 }
    }

    /// Deals the next task to its group.
    pub(crate) fn push(&mut self, task: TaskInput<S>) {
        let n_groups = self.groups.len();
        self.groups[self.dealt % n_groups].push(task);
        self.dealt += 1;
    }
}

/// Where a run's wide steps run: the handles of the step's groups, empty between steps.
pub(crate) struct Executor<S: State> {
    groups: Vec<JoinHandle<Vec<TaskOutput<S>>>>,
}

impl<S: State> Executor<S> {
    pub(crate) fn new() -> Self {
        Self { groups: Vec::new() }
    }

    /// Runs the tasks `deal` holds concurrently and appends their outputs to `out`, in task
    /// order whatever order they finished in.
    ///
    /// One spawned tokio task per group, polling its tasks together: parallel across workers,
    /// concurrent within a group, one spawn per group instead of one per task. Tasks are dealt
    /// round-robin and groups outnumber workers, so that idle workers steal groups when costs
    /// differ. Dropping the returned future aborts every group.
    ///
    /// The groups are awaited in order, not as they finish (a `JoinSet`): a group finishing
    /// before those ahead of it wakes nobody, where a `JoinSet` wakes the loop once per group.
    pub(crate) async fn run_wide(&mut self, deal: Deal<S>, shared: StepShared<S>, out: &mut Vec<TaskOutput<S>>) {
        let Deal { groups, dealt: n_tasks } = deal;
        let n_groups = groups.len();
        let handles = AbortOnDrop(&mut self.groups);
        let shared = Arc::new(shared);
        handles.0.extend(
            groups
                .into_iter()
                .map(|group| tokio::spawn(join_group(group, shared.clone()))),
        );
        // Each group's outputs, in the order the group was dealt; only a runtime shutting down
        // stops a group: each of its tasks failed.
        let mut joined = Vec::with_capacity(n_groups);
        for handle in handles.0.iter_mut() {
            joined.push(handle.await.map(Vec::into_iter).map_err(|e| e.to_string()));
        }
        // Task `i` went to group `i % n_groups`: taken back round-robin, each moved once.
        out.reserve(n_tasks);
        for i in 0..n_tasks {
            out.push(match &mut joined[i % n_groups] {
                Ok(group) => group.next().expect("an output per task"),
                Err(lost) => TaskOutput {
                    result: Err(Failure::Panic(lost.clone())),
                    duration: Duration::ZERO,
                    saved: Ok(false),
                },
            });
        }
        handles.0.clear();
    }
}

/// Aborts a step's groups unless they were all joined: a step cancelled half way leaves no
/// task running.
struct AbortOnDrop<'a, T>(&'a mut Vec<JoinHandle<T>>);

impl<T> Drop for AbortOnDrop<'_, T> {
    fn drop(&mut self) {
        for handle in self.0.drain(..) {
            handle.abort();
        }
    }
}

pub(crate) fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_owned()
    }
}
