//! The server's own tables — assistants, threads, runs and crons — beside the checkpointer's. Two traits
//! split them by who uses them: [`Catalog`] (assistants, threads and crons: the API's CRUD) and
//! [`RunQueue`] (runs: the queue the workers claim from). Each has two backends, one per mode:
//! [`sqlite`] (embedded: one SQLite file, beside the checkpoints) and [`postgres`] (scale-out:
//! the runs table is the queue, claimed with `FOR UPDATE SKIP LOCKED`). Nothing here knows HTTP
//! or graphs; the tables hold the API objects of [`crate::model`] as JSON where the API never
//! filters on a field, and as columns where it does.

use crate::model::{Assistant, Cron, Object, Run, RunStatus, Thread, ThreadStatus, ThreadTtl, TtlStrategy};
use futures::future::BoxFuture;
use serde_json::{Map, Value};
use std::fmt;

mod contains;
pub mod postgres;
mod query;
mod rows;
pub mod sqlite;

pub use contains::contains;

/// Why a table operation failed.
#[derive(Debug, Clone, PartialEq)]
pub enum DbError {
    /// The row exists already (`POST /threads` with `if_exists: raise`): 409.
    Conflict(String),
    /// The database failed; the message says which operation and why (500).
    Backend(String),
}

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DbError::Conflict(m) | DbError::Backend(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for DbError {}

/// What `POST /threads` does when the thread exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IfExists {
    /// Refuse: [`DbError::Conflict`].
    #[default]
    Raise,
    /// Return the existing thread unchanged.
    DoNothing,
}

/// `POST /assistants/search`.
#[derive(Debug, Clone, Default)]
pub struct AssistantQuery {
    /// Only this graph's.
    pub graph_id: Option<String>,
    /// Only those whose metadata contains these pairs.
    pub metadata: Option<Object>,
    /// Only those with this name.
    pub name: Option<String>,
    /// Page size; 0 for no limit.
    pub limit: usize,
    /// Rows to skip.
    pub offset: usize,
    /// Sort field (`assistant_id`, `graph_id`, `name`, `created_at`, `updated_at`), default `created_at`.
    pub sort_by: Option<String>,
    /// `asc` or `desc` (the default).
    pub sort_order: Option<String>,
}

/// `POST /threads/search` and `/threads/count`.
#[derive(Debug, Clone, Default)]
pub struct ThreadQuery {
    /// Only these ids.
    pub ids: Option<Vec<String>>,
    /// Only those whose metadata contains these pairs.
    pub metadata: Option<Object>,
    /// Only those whose values contain these pairs.
    pub values: Option<Object>,
    /// Only those with this status.
    pub status: Option<ThreadStatus>,
    /// Page size; 0 for no limit.
    pub limit: usize,
    /// Rows to skip.
    pub offset: usize,
    /// Sort field (`thread_id`, `status`, `created_at`, `updated_at`, `state_updated_at`), default
    /// `created_at`.
    pub sort_by: Option<String>,
    /// `asc` or `desc` (the default).
    pub sort_order: Option<String>,
    /// Leave the threads' values out (read as `null`): a caller that shows the rows without
    /// them does not read and parse what may be megabytes of state per thread.
    pub without_values: bool,
}

/// The runs not ended yet, as [`RunQueue::in_flight`] lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InFlight {
    /// Queued, not claimed.
    Pending,
    /// Claimed by a worker.
    Running,
}

impl InFlight {
    /// The query both backends list these runs with, `(thread_id, run_id)` oldest first: the
    /// status a literal, so that its partial index serves it.
    pub(crate) fn select(self) -> &'static str {
        match self {
            InFlight::Pending => "SELECT thread_id, run_id FROM server_runs WHERE status = 'pending' ORDER BY seq",
            InFlight::Running => "SELECT thread_id, run_id FROM server_runs WHERE status = 'running' ORDER BY seq",
        }
    }
}

/// `POST /runs/crons/search` and `/runs/crons/count`.
#[derive(Debug, Clone, Default)]
pub struct CronQuery {
    /// Only this assistant's.
    pub assistant_id: Option<String>,
    /// Only this thread's.
    pub thread_id: Option<String>,
    /// Only those enabled (`true`) or disabled (`false`).
    pub enabled: Option<bool>,
    /// Only those whose metadata contains these pairs.
    pub metadata: Option<Object>,
    /// Page size; 0 for no limit.
    pub limit: usize,
    /// Rows to skip.
    pub offset: usize,
    /// Sort field (`cron_id`, `assistant_id`, `thread_id`, `next_run_date`, `end_time`, `created_at`,
    /// `updated_at`), default `created_at`.
    pub sort_by: Option<String>,
    /// `asc` or `desc` (the default).
    pub sort_order: Option<String>,
}

/// `POST /assistants/{id}/versions`: which of an assistant's versions to list, newest first.
#[derive(Debug, Clone, Default)]
pub struct VersionQuery {
    /// Only those whose metadata contains these pairs.
    pub metadata: Option<Object>,
    /// Page size; 0 for no limit.
    pub limit: usize,
    /// Rows to skip.
    pub offset: usize,
}

/// A narrow change to a thread's row, made by [`Catalog::update_thread`] in one transaction:
/// the fields left `None` keep what the row holds then, so the API and a worker writing different
/// fields of one thread never overwrite each other's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThreadUpdate {
    /// Pairs merged into the metadata (a key given replaces the old value).
    pub metadata: Option<Object>,
    /// The new status.
    pub status: Option<ThreadStatus>,
    /// The new values.
    pub values: Option<Value>,
    /// The new open interrupts.
    pub interrupts: Option<Map<String, Value>>,
    /// The new error (`null` for none).
    pub error: Option<Value>,
    /// The new status unless a run holds the thread ([`ThreadStatus::Busy`]): what an edit of
    /// the state outside a run sets (`interrupted` when it leaves tasks to run, else `idle`),
    /// decided in the update's own transaction, so a run queued meanwhile keeps its thread busy.
    pub status_unless_busy: Option<ThreadStatus>,
}

impl ThreadUpdate {
    /// The update of [`Catalog::set_thread_status`]: the status, and metadata merged in.
    pub fn status(status: ThreadStatus, metadata: Option<&Object>) -> Self {
        ThreadUpdate {
            status: Some(status),
            metadata: metadata.cloned(),
            ..ThreadUpdate::default()
        }
    }

    /// `thread` with this update applied, stamped `at` (`updated_at`, and `state_updated_at` when
    /// the values or interrupts change). Both backends apply it with this function.
    pub fn apply(&self, mut thread: Thread, at: &str) -> Thread {
        if let Some(metadata) = &self.metadata {
            thread.metadata.extend(metadata.clone());
        }
        if let Some(status) = self.status {
            thread.status = status;
        }
        if let Some(status) = self.status_unless_busy.filter(|_| thread.status != ThreadStatus::Busy) {
            thread.status = status;
        }
        if let Some(values) = &self.values {
            thread.values = values.clone();
        }
        if let Some(interrupts) = &self.interrupts {
            thread.interrupts = interrupts.clone();
        }
        if let Some(error) = &self.error {
            thread.error = error.clone();
        }
        thread.updated_at = at.to_owned();
        if self.values.is_some() || self.interrupts.is_some() {
            thread.state_updated_at = at.to_owned();
        }
        thread
    }
}

/// What becomes of a run [`RunQueue::end_run`] ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunFate {
    /// It stays, with this final status.
    Status(RunStatus),
    /// It is deleted: a run cancelled with `rollback`, which LangGraph's server deletes.
    Deleted,
}

/// The fields [`AssistantQuery::sort_by`] accepts.
pub const ASSISTANT_SORT_FIELDS: &[&str] = &["assistant_id", "graph_id", "name", "created_at", "updated_at"];

/// The fields [`ThreadQuery::sort_by`] accepts.
pub const THREAD_SORT_FIELDS: &[&str] = &["thread_id", "status", "created_at", "updated_at", "state_updated_at"];

/// The fields [`CronQuery::sort_by`] accepts (LangGraph's).
pub const CRON_SORT_FIELDS: &[&str] = &[
    "cron_id",
    "assistant_id",
    "thread_id",
    "next_run_date",
    "end_time",
    "created_at",
    "updated_at",
];

impl AssistantQuery {
    /// Checks the sort field and order: the message names the bad value and the allowed ones
    /// (the API answers it with a 422; a backend given a bad query fails with it).
    pub fn check(&self) -> Result<(), String> {
        query::check_sort(
            self.sort_by.as_deref(),
            self.sort_order.as_deref(),
            ASSISTANT_SORT_FIELDS,
        )
    }
}

impl ThreadQuery {
    /// Checks the sort field and order, as [`AssistantQuery::check`] does.
    pub fn check(&self) -> Result<(), String> {
        query::check_sort(self.sort_by.as_deref(), self.sort_order.as_deref(), THREAD_SORT_FIELDS)
    }
}

impl CronQuery {
    /// Checks the sort field and order, as [`AssistantQuery::check`] does.
    pub fn check(&self) -> Result<(), String> {
        query::check_sort(self.sort_by.as_deref(), self.sort_order.as_deref(), CRON_SORT_FIELDS)
    }
}

/// Assistants, threads and crons.
pub trait Catalog: Send + Sync + 'static {
    /// Makes or replaces an assistant (by `assistant_id`) and records it as its version
    /// `assistant.version` (replacing a version of that number).
    fn put_assistant<'a>(&'a self, assistant: &'a Assistant) -> BoxFuture<'a, Result<(), DbError>>;
    /// The assistant's recorded versions matching `query`, newest (highest version) first.
    fn assistant_versions<'a>(
        &'a self,
        assistant_id: &'a str,
        query: &'a VersionQuery,
    ) -> BoxFuture<'a, Result<Vec<Assistant>, DbError>>;
    /// Makes the recorded version `version` the assistant's current one (its `updated_at` set to
    /// now); the assistant after, or `None` when it has no such version.
    fn set_latest_version<'a>(
        &'a self,
        assistant_id: &'a str,
        version: i64,
    ) -> BoxFuture<'a, Result<Option<Assistant>, DbError>>;
    /// The assistant, if any.
    fn get_assistant<'a>(&'a self, assistant_id: &'a str) -> BoxFuture<'a, Result<Option<Assistant>, DbError>>;
    /// The assistants matching `query`.
    fn search_assistants<'a>(&'a self, query: &'a AssistantQuery) -> BoxFuture<'a, Result<Vec<Assistant>, DbError>>;
    /// How many assistants match `query` (limit and offset ignored).
    fn count_assistants<'a>(&'a self, query: &'a AssistantQuery) -> BoxFuture<'a, Result<u64, DbError>>;
    /// Deletes the assistant and its versions; whether it existed.
    fn delete_assistant<'a>(&'a self, assistant_id: &'a str) -> BoxFuture<'a, Result<bool, DbError>>;

    /// Makes a thread; with [`IfExists::DoNothing`] an existing one is returned unchanged. An
    /// existing thread with the same `created_at` (to the microsecond) is this call's own,
    /// made by an earlier attempt whose answer was lost, and is returned with
    /// [`IfExists::Raise`] too: the call can run again after a lost connection.
    fn create_thread<'a>(&'a self, thread: &'a Thread, if_exists: IfExists) -> BoxFuture<'a, Result<Thread, DbError>>;
    /// The thread, if any.
    fn get_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Option<Thread>, DbError>>;
    /// Replaces the thread's row (status, values, interrupts, error, metadata, timestamps). A
    /// writer that read the row first races others: prefer [`Catalog::update_thread`].
    fn put_thread<'a>(&'a self, thread: &'a Thread) -> BoxFuture<'a, Result<(), DbError>>;
    /// Applies `update` to the thread's row as it is in the database, in one transaction (see
    /// [`ThreadUpdate::apply`]); the thread after, or `None` when it does not exist.
    fn update_thread<'a>(
        &'a self,
        thread_id: &'a str,
        update: &'a ThreadUpdate,
    ) -> BoxFuture<'a, Result<Option<Thread>, DbError>>;
    /// Sets the thread's status and merges `metadata` into its metadata, in one transaction, as
    /// [`Catalog::update_thread`] with only those fields would, but without reading or writing
    /// the thread's values, which grow with its state (a run sets its thread busy, then idle):
    /// whether the thread exists.
    fn set_thread_status<'a>(
        &'a self,
        thread_id: &'a str,
        status: ThreadStatus,
        metadata: Option<&'a Object>,
    ) -> BoxFuture<'a, Result<bool, DbError>>;
    /// The thread's row without its values (`values` null), or `None` when it does not exist:
    /// for a caller that needs its status, metadata or graph only.
    fn get_thread_without_values<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Option<Thread>, DbError>> {
        Box::pin(async move {
            let query = ThreadQuery {
                ids: Some(vec![thread_id.to_owned()]),
                limit: 1,
                without_values: true,
                ..ThreadQuery::default()
            };
            Ok(self.search_threads(&query).await?.into_iter().next())
        })
    }
    /// The threads matching `query`.
    fn search_threads<'a>(&'a self, query: &'a ThreadQuery) -> BoxFuture<'a, Result<Vec<Thread>, DbError>>;
    /// How many threads match `query` (limit and offset ignored).
    fn count_threads<'a>(&'a self, query: &'a ThreadQuery) -> BoxFuture<'a, Result<u64, DbError>>;
    /// Deletes the thread's row and its runs; whether it existed.
    fn delete_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<bool, DbError>>;
    /// Sets a thread's time-to-live, or clears it with `None`; a thread's deletion clears it.
    fn set_thread_ttl<'a>(&'a self, thread_id: &'a str, ttl: Option<ThreadTtl>) -> BoxFuture<'a, Result<(), DbError>>;
    /// A thread's time-to-live, if it has one.
    fn thread_ttl<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Option<ThreadTtl>, DbError>>;
    /// Up to `limit` threads whose time-to-live ran out by `now` (RFC 3339): unchanged for longer
    /// than their TTL, and not busy (a run in flight keeps its thread). Oldest first, with their
    /// strategies.
    fn expired_threads<'a>(
        &'a self,
        now: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<(String, TtlStrategy)>, DbError>>;

    /// Stores a cron, over the one with its id.
    fn put_cron<'a>(&'a self, cron: &'a Cron) -> BoxFuture<'a, Result<(), DbError>>;
    /// A cron by id.
    fn get_cron<'a>(&'a self, cron_id: &'a str) -> BoxFuture<'a, Result<Option<Cron>, DbError>>;
    /// Deletes a cron; whether it existed. A thread's or an assistant's deletion deletes its crons.
    fn delete_cron<'a>(&'a self, cron_id: &'a str) -> BoxFuture<'a, Result<bool, DbError>>;
    /// The crons that match, sorted and paged.
    fn search_crons<'a>(&'a self, query: &'a CronQuery) -> BoxFuture<'a, Result<Vec<Cron>, DbError>>;
    /// How many crons match (the page is ignored).
    fn count_crons<'a>(&'a self, query: &'a CronQuery) -> BoxFuture<'a, Result<u64, DbError>>;
    /// Takes up to `limit` crons due at `now`: enabled, their next run at or before `now`, their
    /// end time not passed. In the same transaction each one's next run moves to its next time
    /// after `now` ([`Cron::following`]), so that of several schedulers only one takes each
    /// firing (the others skip the rows it holds). Returns them as they were, earliest first.
    fn take_due_crons(&self, now: jiff::Timestamp, limit: usize) -> BoxFuture<'_, Result<Vec<Cron>, DbError>>;
}

/// The queue's figures (`GET /metrics`): runs pending and running, and how long the pending ones
/// have waited.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueueStats {
    /// Runs pending.
    pub pending: u64,
    /// Runs running.
    pub running: u64,
    /// How long the pending run that waited longest has waited, in seconds; `None` when none is.
    pub pending_wait_max_secs: Option<f64>,
    /// How long the median pending run has waited, in seconds.
    pub pending_wait_median_secs: Option<f64>,
    /// How long the pending run whose thread runs nothing that waited longest has waited, in
    /// seconds: a wait the workers, not its thread's order, cause.
    pub unblocked_wait_max_secs: Option<f64>,
}

impl QueueStats {
    /// The figures from the counts and the `created_at` of the oldest, the median and the oldest
    /// unblocked pending run, seen at `now` (RFC 3339 each; a run not due yet has waited 0 s).
    pub(crate) fn new(pending: u64, running: u64, [oldest, median, unblocked]: [Option<String>; 3], now: &str) -> Self {
        let now = now.parse::<jiff::Timestamp>().ok();
        let waited = |at: Option<String>| {
            let at = at?.parse::<jiff::Timestamp>().ok()?;
            Some(now?.duration_since(at).as_secs_f64().max(0.0))
        };
        QueueStats {
            pending,
            running,
            pending_wait_max_secs: waited(oldest),
            pending_wait_median_secs: waited(median),
            unblocked_wait_max_secs: waited(unblocked),
        }
    }
}

/// What [`RunQueue::enqueue`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Enqueued {
    /// The run is pending; `inflight` are the thread's runs that were pending or running before
    /// it (the run manager interrupts or rolls them back, per the strategy).
    Queued {
        /// The runs ahead of it on its thread.
        inflight: Vec<Run>,
    },
    /// The run was stored already claimed (running, attempt 1) by the worker that asked: its
    /// thread had no run pending or running, and it could start at once.
    Claimed(Box<Run>),
    /// The strategy is `reject` and the thread has a pending or running run: nothing was stored.
    Rejected,
    /// The thread to mark busy does not exist: nothing was stored.
    NoThread,
    /// The strategy is `enqueue` and the thread has as many runs pending or running as the
    /// bound allows (`ahead` of them): nothing was stored.
    Full {
        /// The runs pending or running on the thread.
        ahead: usize,
    },
}

/// Whether a run queued behind `ahead` runs of its thread is past `bound`
/// ([`RunQueue::enqueue`]): only the `enqueue` strategy lengthens a thread's queue.
pub(crate) fn past_bound(run: &Run, ahead: usize, bound: Option<usize>) -> bool {
    run.multitask_strategy == crate::model::MultitaskStrategy::Enqueue && bound.is_some_and(|b| ahead >= b)
}

/// `run` as `claim`ed at once, when it may be ([`RunQueue::enqueue`]): a worker
/// asks, its thread has no run pending or running, and it may start now.
pub(crate) fn claimed_at_once(run: &Run, thread_free: bool, claim: Option<&str>) -> Option<Run> {
    (claim.is_some() && thread_free && run.not_before.is_none()).then(|| {
        let mut claimed = run.clone();
        claimed.status = RunStatus::Running;
        claimed.attempt = 1;
        claimed
    })
}

/// The run a claim made after a run's end took: none when it failed (said in the log; the end
/// stands, and a worker's poll finds the run).
pub(crate) fn claim_after_end<E: std::fmt::Display>(claimed: Result<Option<Run>, E>) -> Option<Run> {
    claimed.unwrap_or_else(|e| {
        tracing::warn!(error = %e, "claiming the next run as a run ended failed; the dispatcher will");
        None
    })
}

/// Runs, and the queue the workers take them from. At most one run per thread is running at once;
/// a thread's runs run in creation order.
pub trait RunQueue: Send + Sync + 'static {
    /// Stores a new pending run, atomically with the check of its thread's in-flight runs that
    /// [`MultitaskStrategy::Reject`](crate::model::MultitaskStrategy::Reject) needs and, with
    /// `busy`, with its thread's row set [`ThreadStatus::Busy`] and `busy`'s pairs merged into
    /// its metadata (as [`Catalog::set_thread_status`] does): no worker takes the run before
    /// its thread shows it. With `claim` (a worker with a free slot, queueing a run it made),
    /// a run that could be claimed at once (its thread has no run pending or running, and it
    /// has no [`Run::not_before`]) is stored claimed by that worker instead, as [`claim`](Self::claim)
    /// would: [`Enqueued::Claimed`]. With `bound`, a run of the
    /// [`MultitaskStrategy::Enqueue`](crate::model::MultitaskStrategy::Enqueue) strategy whose
    /// thread has `bound` runs or more pending or running is not stored: [`Enqueued::Full`]
    /// (the other strategies stop the runs ahead, or refuse any, so they are never bounded).
    fn enqueue<'a>(
        &'a self,
        run: &'a Run,
        busy: Option<&'a Object>,
        claim: Option<&'a str>,
        bound: Option<usize>,
    ) -> BoxFuture<'a, Result<Enqueued, DbError>>;
    /// The run of that thread, if any.
    fn get_run<'a>(&'a self, thread_id: &'a str, run_id: &'a str) -> BoxFuture<'a, Result<Option<Run>, DbError>>;
    /// The thread's runs, newest first, optionally only those with `status`.
    fn list_runs<'a>(
        &'a self,
        thread_id: &'a str,
        limit: usize,
        offset: usize,
        status: Option<RunStatus>,
    ) -> BoxFuture<'a, Result<Vec<Run>, DbError>>;
    /// Every run with `status` (pending or running: what a cancel by status stops), on any
    /// thread, oldest first, as `(thread_id, run_id)`.
    fn in_flight(&self, status: InFlight) -> BoxFuture<'_, Result<Vec<(String, String)>, DbError>>;
    /// Whether the thread has a run pending or running other than `except`.
    fn has_inflight<'a>(&'a self, thread_id: &'a str, except: Option<&'a str>) -> BoxFuture<'a, Result<bool, DbError>>;
    /// Claims the oldest pending run whose time has come ([`Run::not_before`]) and whose thread
    /// has no running run, for `worker`: it becomes `running`, its [`Run::attempt`] one higher
    /// (the claim's token). No two workers ever claim one run.
    fn claim<'a>(&'a self, worker: &'a str) -> BoxFuture<'a, Result<Option<Run>, DbError>>;
    /// Whether the run is running under the claim `attempt` (a worker checks it before it writes
    /// the run's thread: once its run was requeued and claimed again, it has lost it).
    fn holds<'a>(&'a self, run_id: &'a str, attempt: u32) -> BoxFuture<'a, Result<bool, DbError>>;
    /// Ends `run`, if it is still as the caller read it (its status, pending or running, and its
    /// claim, [`Run::attempt`]), in one transaction: the run takes its final status or is
    /// deleted (`end`), and its thread `update`, whose status becomes [`ThreadStatus::Busy`]
    /// instead while another of the thread's runs is pending or running. Whether it was; a
    /// stale claim, a pending run claimed meanwhile or an ended run writes nothing.
    fn end_run<'a>(
        &'a self,
        run: &'a Run,
        end: RunFate,
        update: &'a ThreadUpdate,
    ) -> BoxFuture<'a, Result<bool, DbError>>;
    /// [`end_run`](Self::end_run), then, when it ended the run, [`claim`](Self::claim) for
    /// `worker`: a worker whose run ends takes its next one in the same trip where the backend
    /// can (SQLite: one job on its writer). The claim failing leaves the end recorded and takes
    /// no run (a worker's poll finds it later); the default ends, then claims.
    fn end_run_and_claim<'a>(
        &'a self,
        run: &'a Run,
        end: RunFate,
        update: &'a ThreadUpdate,
        worker: &'a str,
    ) -> BoxFuture<'a, Result<(bool, Option<Run>), DbError>> {
        Box::pin(async move {
            if !self.end_run(run, end, update).await? {
                return Ok((false, None));
            }
            Ok((true, claim_after_end(self.claim(worker).await)))
        })
    }
    /// The earliest [`Run::not_before`] (RFC 3339) of the pending runs whose time has not come.
    fn next_due(&self) -> BoxFuture<'_, Result<Option<String>, DbError>>;
    /// Sets a run's status (and `updated_at`); whether the run exists.
    fn set_status<'a>(&'a self, run_id: &'a str, status: RunStatus) -> BoxFuture<'a, Result<bool, DbError>>;
    /// Deletes a run; whether it existed.
    fn delete_run<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<bool, DbError>>;
    /// Puts the running runs of `worker` back to pending (a dead worker's, or a worker shutting
    /// down); returns their ids, each with the attempt that lost it, in the ids' order. `None`
    /// puts back every running run (an embedded server starting).
    fn requeue<'a>(&'a self, worker: Option<&'a str>) -> BoxFuture<'a, Result<Vec<(String, u32)>, DbError>>;
    /// The workers that have running runs (for the sweeper to check their heartbeats).
    fn busy_workers(&self) -> BoxFuture<'_, Result<Vec<String>, DbError>>;
    /// The queue's figures at `now` (RFC 3339).
    fn queue_stats<'a>(&'a self, now: &'a str) -> BoxFuture<'a, Result<QueueStats, DbError>>;
}
