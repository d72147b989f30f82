//! The run manager: the workers that claim runs from [`crate::db::RunQueue`], run them through
//! [`crate::graph::ServedGraph`], publish their events on [`crate::bus::Bus`], and apply the
//! multitask strategies, cancellation, `on_disconnect` and `on_completion`. [`Manager`] is the
//! one handle: the API creates, joins and cancels runs through it, and it owns this process's
//! workers ([`Manager::start`], [`Manager::shutdown`]).
//!
//! Every run's stream on the bus is: `metadata` (`{"run_id","attempt":1}`), the graph's events,
//! an `error` event when the run failed, then one [`OUTCOME_EVENT`] holding what `join` answers,
//! then [`StreamItem::Done`]. The worker records the run's final
//! status before it publishes `Done`, so a client that reads the run after its stream closed
//! (as the SDK does) sees it final. The SSE routes do not forward [`OUTCOME_EVENT`], and send no
//! `event: end`, as the captured server.

use crate::bus::{Bus, BusError, CancelAction, StreamItem};
use crate::db::{Catalog, DbError, RunQueue};
use crate::graph::{GraphError, ServedGraph};
use crate::model::{Run, RunStatus, ThreadStatus};
use futures::StreamExt;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;

mod create;
mod crons;
mod execute;
mod thread_stream;
mod ttl;
mod webhook;
mod worker;

pub use ttl::Swept;
pub use webhook::WEBHOOK_TIMEOUT;

pub use crate::model::OnCompletion;
pub use create::{IfNotExists, OnDisconnect, RunCreate, StreamModes, NOT_FOUND_DETAIL, REJECT_DETAIL};
pub use crons::CronFields;
pub use thread_stream::ThreadModes;

/// The name of the last event of every run's stream on the bus: its data is what `join` answers
/// (final values, with `__interrupt__` or as `{"__error__"}`). Never sent to SSE clients.
pub const OUTCOME_EVENT: &str = "__outcome__";

/// The 404's detail for a cancel that finds no run pending or running (LangGraph's words).
pub const NOTHING_TO_CANCEL: &str = "No matching runs to cancel. Please verify the thread ID and run IDs are correct, \
     and the runs haven't been deleted or completed.";

/// How a [`Manager`]'s workers behave.
#[derive(Debug, Clone)]
pub struct ManagerConfig {
    /// Runs this process runs at once (LangGraph's default: 10).
    pub workers: usize,
    /// How long a worker waits for a wake before it polls the queue anyway.
    pub poll: Duration,
    /// How often the worker beats on the bus (its heartbeat lives three beats).
    pub heartbeat: Duration,
    /// How long in-flight runs may go on after [`Manager::shutdown`] before they are requeued.
    pub grace: Duration,
    /// Whether [`Manager::start`] puts every run left `running` back in the queue (embedded mode:
    /// this process was the only worker, so those runs' worker died).
    pub requeue_on_start: bool,
    /// How often an SSE response sends `: heartbeat` while no event goes out (LangGraph: 5 s).
    pub sse_heartbeat: Duration,
    /// The time-to-live a new thread gets when its request gives none (`checkpointer.ttl`'s
    /// `default_ttl` and `strategy`); `None`: threads live until deleted.
    pub thread_ttl: Option<crate::model::ThreadTtl>,
    /// How often this process's workers apply the threads' TTLs (LangGraph's
    /// `sweep_interval_minutes`, default 5 minutes); `None`: never (another process does).
    pub ttl_sweep: Option<Duration>,
    /// The most runs a thread may have pending or running when a run of the `enqueue` strategy
    /// (the default) is made on it; that run is then refused with a 429 and not stored
    /// (default 1,000). The other strategies stop the runs ahead or refuse any.
    pub max_queued_runs: usize,
    /// How often this process's workers fire the crons that are due (default every second, so
    /// that a schedule with seconds fires on time); `None`: never (another process does).
    pub cron_poll: Option<Duration>,
    /// Whether a run's `webhook` is sent when it ends (default true; the config's
    /// `http.disable_webhooks` turns them off, the runs still run).
    pub webhooks: bool,
}

impl Default for ManagerConfig {
    fn default() -> Self {
        Self {
            workers: 10,
            poll: Duration::from_secs(1),
            heartbeat: Duration::from_secs(5),
            grace: Duration::from_secs(10),
            requeue_on_start: true,
            sse_heartbeat: Duration::from_secs(5),
            thread_ttl: None,
            ttl_sweep: Some(Duration::from_secs(5 * 60)),
            max_queued_runs: 1_000,
            cron_poll: Some(Duration::from_secs(1)),
            webhooks: true,
        }
    }
}

/// Why a run request failed; the API maps each kind to its status code.
#[derive(Debug, Clone, PartialEq)]
pub enum RunError {
    /// A request that asks nothing (400), such as an update that changes no field.
    BadRequest(String),
    /// Bad input (422): the message names the body field at fault.
    Invalid(String),
    /// No such thread, assistant or run (404).
    NotFound(String),
    /// The thread is busy and the strategy is `reject` (409).
    Conflict(String),
    /// The thread's queue is full: it has [`ManagerConfig::max_queued_runs`] runs pending or
    /// running, and the strategy is `enqueue` (429).
    Full(String),
    /// A table, the bus or the graph failed (500).
    Internal(String),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::BadRequest(m)
            | RunError::Invalid(m)
            | RunError::NotFound(m)
            | RunError::Conflict(m)
            | RunError::Full(m)
            | RunError::Internal(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for RunError {}

impl RunError {
    /// The same error with `prefix` before its message (which part of the request it concerns).
    pub fn prefixed(self, prefix: &str) -> Self {
        let with = |m: String| format!("{prefix}{m}");
        match self {
            RunError::BadRequest(m) => RunError::BadRequest(with(m)),
            RunError::Invalid(m) => RunError::Invalid(with(m)),
            RunError::NotFound(m) => RunError::NotFound(with(m)),
            RunError::Conflict(m) => RunError::Conflict(with(m)),
            RunError::Full(m) => RunError::Full(with(m)),
            RunError::Internal(m) => RunError::Internal(with(m)),
        }
    }
}

impl From<DbError> for RunError {
    fn from(e: DbError) -> Self {
        match e {
            DbError::Conflict(m) => RunError::Conflict(m),
            DbError::Backend(m) => RunError::Internal(m),
        }
    }
}

impl From<BusError> for RunError {
    fn from(e: BusError) -> Self {
        RunError::Internal(format!("bus: {e}"))
    }
}

impl From<GraphError> for RunError {
    fn from(e: GraphError) -> Self {
        match e {
            GraphError::Invalid(m) => RunError::Invalid(m),
            GraphError::NotFound(m) => RunError::NotFound(m),
            GraphError::Conflict(m) => RunError::Conflict(m),
            GraphError::Internal(m) => RunError::Internal(m),
        }
    }
}

/// `v`, unless it is `null`.
fn non_null(v: &Value) -> Option<&Value> {
    (!v.is_null()).then_some(v)
}

pub(crate) use crate::model::now;

/// Locks `m`, taking the data even if a holder panicked (every critical section here leaves its
/// map consistent).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Creates, joins and cancels runs; owns this process's workers. Cheap to clone.
#[derive(Clone)]
pub struct Manager {
    inner: Arc<Inner>,
}

struct Inner {
    graphs: Arc<BTreeMap<String, Arc<dyn ServedGraph>>>,
    catalog: Arc<dyn Catalog>,
    queue: Arc<dyn RunQueue>,
    bus: Arc<dyn Bus>,
    config: ManagerConfig,
    /// This process's worker id (heartbeats, claims, requeue).
    worker_id: String,
    /// The cancel signal of each run this process is running, with the attempt it runs. A run
    /// this worker claims again (it was requeued while this worker was only slow) replaces its
    /// earlier attempt here, which stops that attempt.
    running: Mutex<worker::Running>,
    /// Cancellations that came before their run was claimed here.
    early_cancels: Mutex<worker::EarlyCancels>,
    /// The runs this process put back in the queue after they had started (they resume).
    requeued: Mutex<std::collections::HashSet<String>>,
    /// How this process's own heartbeats go: see [`worker`]'s sweep.
    beats: Mutex<worker::Beats>,
    /// Flips to `true` on shutdown: stop claiming.
    stopping: watch::Sender<bool>,
    /// Whether this process's workers were started (an API-only process runs no runs).
    working: AtomicBool,
    /// The dispatcher, heartbeat and cancellation tasks.
    tasks: Mutex<JoinSet<()>>,
    /// The runs being run (each holds a permit of `slots`).
    runs: tokio::sync::Mutex<JoinSet<()>>,
    slots: Arc<Semaphore>,
}

impl fmt::Debug for Manager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Manager")
            .field("worker_id", &self.inner.worker_id)
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl Manager {
    /// A manager over these graphs and tables; it runs nothing until [`Manager::start`].
    pub fn new(
        graphs: Arc<BTreeMap<String, Arc<dyn ServedGraph>>>,
        catalog: Arc<dyn Catalog>,
        queue: Arc<dyn RunQueue>,
        bus: Arc<dyn Bus>,
        config: ManagerConfig,
    ) -> Self {
        let slots = Arc::new(Semaphore::new(config.workers.max(1)));
        Self {
            inner: Arc::new(Inner {
                graphs,
                catalog,
                queue,
                bus,
                config,
                worker_id: format!("worker-{}", uuid::Uuid::new_v4()),
                running: Mutex::new(HashMap::new()),
                early_cancels: Mutex::new(HashMap::new()),
                requeued: Mutex::new(std::collections::HashSet::new()),
                beats: Mutex::default(),
                stopping: watch::channel(false).0,
                working: AtomicBool::new(false),
                tasks: Mutex::new(JoinSet::new()),
                runs: tokio::sync::Mutex::new(JoinSet::new()),
                slots,
            }),
        }
    }

    /// This process's workers: how many runs it runs at once and how many it is running; `None`
    /// when its workers were not started (an API-only process).
    pub fn worker_stats(&self) -> Option<(usize, usize)> {
        let inner = &self.inner;
        if !inner.working.load(std::sync::atomic::Ordering::Acquire) {
            return None;
        }
        let max = inner.config.workers.max(1);
        Some((max, max.saturating_sub(inner.slots.available_permits())))
    }

    /// How this manager was configured.
    pub fn config(&self) -> &ManagerConfig {
        &self.inner.config
    }

    /// This process's worker id.
    pub fn worker_id(&self) -> &str {
        &self.inner.worker_id
    }

    /// The served graph `graph_id`.
    fn graph(&self, graph_id: &str) -> Result<Arc<dyn ServedGraph>, RunError> {
        self.inner
            .graphs
            .get(graph_id)
            .cloned()
            .ok_or_else(|| RunError::NotFound(format!("graph `{graph_id}` is not served here")))
    }

    /// The run `run_id` of `thread_id`, or 404.
    pub async fn get(&self, thread_id: &str, run_id: &str) -> Result<Run, RunError> {
        self.inner
            .queue
            .get_run(thread_id, run_id)
            .await?
            .ok_or_else(|| RunError::NotFound(format!("Run {run_id} not found")))
    }

    /// Waits for the run to end and answers what `/runs/wait` and `/join` return: the final
    /// values, with `"__interrupt__"` when it paused, or `{"__error__": {"error", "message"}}`
    /// when it failed.
    pub async fn join(&self, thread_id: &str, run_id: &str) -> Result<Value, RunError> {
        let run = self.get(thread_id, run_id).await?;
        self.outcome(&run).await
    }

    /// As [`join`](Self::join), for a run the caller holds as it was made or read (`/runs/wait`
    /// has the run it just made: no need to read it back).
    pub async fn outcome(&self, run: &Run) -> Result<Value, RunError> {
        if !run.status.is_final() {
            let mut stream = self.follow(run, Some("-1")).await?;
            let mut outcome = None;
            while let Some(item) = stream.next().await {
                if let StreamItem::Event { event, data, .. } = item {
                    if event == OUTCOME_EVENT {
                        // Written by this server from a value; a foreign entry falls back below.
                        outcome = serde_json::from_str(&data).ok();
                    }
                }
            }
            if let Some(outcome) = outcome {
                return Ok(outcome);
            }
        }
        self.outcome_from_thread(&run.thread_id).await
    }

    /// `run`'s stream from the bus (as [`Bus::subscribe`] with `last_id`), ended even when its
    /// [`StreamItem::Done`] is lost (a worker killed after the run's status was saved, a bus
    /// connection dropped): after each [`ManagerConfig::poll`] without an item, the run's status
    /// is read, and once it is final the stream gets one more interval for its last items, then
    /// ends. Every wait on a run (join, stream, cancel, delete) goes through here, so none of them
    /// outlives the run by more than two intervals.
    pub async fn follow(
        &self,
        run: &Run,
        last_id: Option<&str>,
    ) -> Result<futures::stream::BoxStream<'static, StreamItem>, RunError> {
        self.follow_ids(&run.thread_id, &run.run_id, last_id).await
    }

    /// As [`follow`](Self::follow), for the run `run_id` of `thread_id`.
    async fn follow_ids(
        &self,
        thread_id: &str,
        run_id: &str,
        last_id: Option<&str>,
    ) -> Result<futures::stream::BoxStream<'static, StreamItem>, RunError> {
        struct Following {
            items: futures::stream::BoxStream<'static, StreamItem>,
            manager: Manager,
            thread_id: String,
            run_id: String,
            run_ended: bool,
            over: bool,
        }
        let start = Following {
            items: self.inner.bus.subscribe(run_id, last_id).await?,
            manager: self.clone(),
            thread_id: thread_id.to_owned(),
            run_id: run_id.to_owned(),
            run_ended: false,
            over: false,
        };
        let quiet = self.inner.config.poll.max(Duration::from_millis(100));
        let stream = futures::stream::unfold(start, move |mut s| async move {
            while !s.over {
                match tokio::time::timeout(quiet, s.items.next()).await {
                    Ok(Some(item)) => {
                        s.over = item == StreamItem::Done;
                        return Some((item, s));
                    }
                    Ok(None) => return None,
                    Err(_) if s.run_ended => {
                        tracing::warn!(run_id = %s.run_id, "the run ended but its stream did not; ending it");
                        s.over = true;
                        return Some((StreamItem::Done, s));
                    }
                    Err(_) => {
                        let status = s.manager.inner.queue.get_run(&s.thread_id, &s.run_id).await;
                        // A run deleted meanwhile has ended too.
                        s.run_ended = match status {
                            Ok(run) => run.is_none_or(|r| r.status.is_final()),
                            Err(_) => false,
                        };
                    }
                }
            }
            None
        });
        Ok(stream.boxed())
    }

    /// What `join` answers for a run that ended long ago: its thread's values, interrupts and error.
    async fn outcome_from_thread(&self, thread_id: &str) -> Result<Value, RunError> {
        let Some(thread) = self.inner.catalog.get_thread(thread_id).await? else {
            return Ok(Value::Null);
        };
        if thread.status == ThreadStatus::Error && !thread.error.is_null() {
            return Ok(json!({ "__error__": thread.error }));
        }
        let values = thread.values;
        if thread.status == ThreadStatus::Interrupted {
            let all: Vec<Value> = thread
                .interrupts
                .values()
                .filter_map(Value::as_array)
                .flatten()
                .map(|i| json!({ "value": i["value"], "id": i["id"], "response_schema": null }))
                .collect();
            return Ok(crate::graph::with_interrupts(values, Value::Array(all)));
        }
        Ok(values)
    }

    /// Cancels a run (`POST …/cancel?action=`); with `wait`, returns once it has stopped. A run
    /// that has ended is [`RunError::NotFound`] ([`NOTHING_TO_CANCEL`]), as in LangGraph.
    pub async fn cancel(
        &self,
        thread_id: &str,
        run_id: &str,
        action: CancelAction,
        wait: bool,
    ) -> Result<(), RunError> {
        let run = self.get(thread_id, run_id).await?;
        if run.status.is_final() {
            // As LangGraph's server: a run that has ended is none to cancel (404).
            return Err(RunError::NotFound(NOTHING_TO_CANCEL.to_owned()));
        }
        let stream = if wait {
            Some(self.follow(&run, Some("-1")).await?)
        } else {
            None
        };
        self.cancel_run(&run, action).await?;
        if let Some(stream) = stream {
            stream.for_each(|_| async {}).await;
        }
        Ok(())
    }

    /// Deletes a run; one in flight is cancelled first (`action=interrupt`).
    pub async fn delete(&self, thread_id: &str, run_id: &str) -> Result<(), RunError> {
        let run = self.get(thread_id, run_id).await?;
        if !run.status.is_final() {
            let stream = self.follow(&run, Some("-1")).await?;
            self.cancel_run(&run, CancelAction::Interrupt).await?;
            stream.for_each(|_| async {}).await;
        }
        self.inner.queue.delete_run(run_id).await?;
        Ok(())
    }

    /// The thread's runs, newest first.
    pub async fn list(
        &self,
        thread_id: &str,
        limit: usize,
        offset: usize,
        status: Option<RunStatus>,
    ) -> Result<Vec<Run>, RunError> {
        Ok(self.inner.queue.list_runs(thread_id, limit, offset, status).await?)
    }

    /// The bus the runs' streams are published on (the SSE routes subscribe to it).
    pub fn bus(&self) -> &Arc<dyn Bus> {
        &self.inner.bus
    }
}
