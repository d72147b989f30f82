//! The scale-out backend: [`PostgresDb`], the server's tables in PostgreSQL (tokio-postgres, a
//! small pool of connections), in a schema of their own choosing — by default `weir`, beside the
//! checkpoints, in tables of their own (`server_*`, versioned in `server_schema`). The runs table
//! is the queue: any number of workers on any number of machines claim from it with
//! `FOR UPDATE SKIP LOCKED`, and at most one run per thread is ever running. The pool's options
//! (size, timeouts, TLS) are the runtime's [`PoolOptions`]; an operation whose connection was
//! lost runs again where that is safe (see the list above `impl Catalog`).

mod catalog;
mod crons;
mod pool;
mod queue;
mod schema;

use crate::db::{
    AssistantQuery, Catalog, CronQuery, DbError, Enqueued, IfExists, InFlight, QueueStats, RunFate, RunQueue,
    ThreadQuery, ThreadUpdate, VersionQuery,
};
use crate::model::{Assistant, Cron, Object, Run, RunStatus, Thread, ThreadStatus, ThreadTtl, TtlStrategy};
use futures::future::BoxFuture;
use pool::{fail, Conn, Fail};
use weir_runtime::postgres::{Idempotent, Pool, PoolOptions};

/// Checks the schema, connects with `options` and creates or migrates the tables.
async fn open(url: &str, options: PoolOptions) -> Result<PostgresDb, DbError> {
    let options = match options.schema_name() {
        Some(_) => options,
        None => options.schema("weir"),
    };
    let schema = options.schema_name().unwrap_or("weir").to_owned();
    weir_runtime::postgres::check_schema(&schema).map_err(DbError::Backend)?;
    let pool = Pool::new(url, options);
    let opened = async {
        let mut first = pool.open().await?;
        schema::migrate(&mut first.client, &schema).await?;
        pool.keep(first).await?;
        Ok::<_, Fail>(())
    };
    opened.await.map_err(|e| fail(&pool, "creating the server tables", e))?;
    Ok(PostgresDb { pool })
}

/// The server's tables in PostgreSQL: a [`Catalog`] and a [`RunQueue`].
///
/// Clones share the connections.
///
/// # Examples
///
/// ```no_run
/// use weir_server::db::{postgres::PostgresDb, RunQueue};
///
/// # async fn run() -> Result<(), weir_server::db::DbError> {
/// use weir_runtime::postgres::PoolOptions;
///
/// let options = PoolOptions::new().schema("weir").size(8);
/// let db = PostgresDb::connect_with("postgres://postgres@127.0.0.1:5432/test", options).await?;
/// println!("{:?}", db.busy_workers().await?);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct PostgresDb {
    pool: Pool,
}

impl std::fmt::Debug for PostgresDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresDb")
            .field("schema", &self.pool.schema())
            .finish_non_exhaustive()
    }
}

impl PostgresDb {
    /// Connects to `url` with the tables in the schema `weir` and eight connections. See
    /// [`connect_with`](Self::connect_with).
    pub async fn connect(url: &str) -> Result<Self, DbError> {
        Self::connect_with(url, PoolOptions::new().size(8)).await
    }

    /// Connects to `url` (e.g. `postgres://postgres@127.0.0.1:5432/test`) with `options` (the
    /// pool's size, timeouts, TLS roots; its schema, `weir` when unset, holds the tables),
    /// creating the schema and the tables on first use and migrating older ones.
    ///
    /// # Errors
    ///
    /// [`DbError::Backend`] for a bad schema name (lower-case ASCII letters, digits and `_`, not
    /// starting with a digit, at most 63 bytes), a database that cannot be reached, or tables
    /// written by a newer weir (they are left as they are).
    pub async fn connect_with(url: &str, options: PoolOptions) -> Result<Self, DbError> {
        open(url, options).await
    }
}

/// An operation on a pooled connection, its errors named with `what` and the schema; run once
/// more after a lost connection when `$idempotent` is `Yes` (see [`Pool::with_retry`]). With
/// `|conn, again|`, `again` says whether this is that second run.
macro_rules! op {
    ($self:ident, $what:literal, $idempotent:ident, |$conn:ident $(, $again:ident)?| $body:expr) => {
        Box::pin(async move {
            let mut runs = 0;
            let result = $self
                .pool
                .with_retry(|| $what.to_owned(), Idempotent::$idempotent, |mut pooled| {
                    let again = runs > 0;
                    runs += 1;
                    $(let $again = again;)?
                    let _ = again;
                    async move {
                        let $conn: &mut Conn = &mut pooled;
                        $body.await
                    }
                })
                .await;
            result.map_err(|e| fail(&$self.pool, $what, e))
        })
    };
}

impl PostgresDb {
    /// Fences the checkpointer's tables in this schema (a [`PostgresSaver`] connected to it
    /// made them): from now on PostgreSQL refuses a checkpoint of a run's attempt that no longer
    /// holds the run, so that a worker that was only slow, whose run the sweeper put back in the
    /// queue, cannot move the thread's head under the next attempt; its run ends in error
    /// instead, and its end is refused by the claim as before. Made once per schema (a trigger
    /// on `checkpoints`); [`Server::scale_out`](crate::Server::scale_out) calls it.
    ///
    /// # Errors
    ///
    /// [`DbError::Backend`] when the schema has no checkpoints table, or PostgreSQL fails.
    ///
    /// [`PostgresSaver`]: weir_runtime::checkpoint::PostgresSaver
    pub async fn fence_checkpoints(&self) -> Result<(), DbError> {
        let schema = &self.pool.schema().unwrap_or("weir").to_owned();
        let fence: BoxFuture<'_, Result<(), DbError>> = op!(self, "fencing the checkpoints", Yes, |c| schema::fence(
            &mut c.client,
            schema
        ));
        fence.await
    }
}

// Which operations run again after a lost connection (see `Pool::with_retry`): reads; upserts
// (`put_*`, a TTL, a thread update that merges); `create_thread`, `enqueue`, `claim` and
// `end_run`, which on a second run find what a first run committed before its reply was lost
// (their own thread, by its `created_at`; their own run; the run claimed at that instant; the
// status already set). Not: the deletes, whose answer (existed or not) a second run after a
// committed first one would get wrong.
impl Catalog for PostgresDb {
    fn put_assistant<'a>(&'a self, assistant: &'a Assistant) -> BoxFuture<'a, Result<(), DbError>> {
        op!(self, "storing an assistant", Yes, |c| catalog::put_assistant(
            c, assistant
        ))
    }
    fn assistant_versions<'a>(
        &'a self,
        assistant_id: &'a str,
        query: &'a VersionQuery,
    ) -> BoxFuture<'a, Result<Vec<Assistant>, DbError>> {
        op!(self, "listing an assistant's versions", Yes, |c| {
            catalog::assistant_versions(c, assistant_id, query)
        })
    }
    fn set_latest_version<'a>(
        &'a self,
        assistant_id: &'a str,
        version: i64,
    ) -> BoxFuture<'a, Result<Option<Assistant>, DbError>> {
        op!(self, "setting an assistant's version", Yes, |c| {
            catalog::set_latest_version(c, assistant_id, version)
        })
    }
    fn get_assistant<'a>(&'a self, assistant_id: &'a str) -> BoxFuture<'a, Result<Option<Assistant>, DbError>> {
        op!(self, "reading an assistant", Yes, |c| catalog::get_assistant(
            c,
            assistant_id
        ))
    }
    fn search_assistants<'a>(&'a self, query: &'a AssistantQuery) -> BoxFuture<'a, Result<Vec<Assistant>, DbError>> {
        op!(self, "searching assistants", Yes, |c| catalog::search_assistants(
            c, query
        ))
    }
    fn count_assistants<'a>(&'a self, query: &'a AssistantQuery) -> BoxFuture<'a, Result<u64, DbError>> {
        op!(self, "counting assistants", Yes, |c| catalog::count_assistants(
            c, query
        ))
    }
    fn delete_assistant<'a>(&'a self, assistant_id: &'a str) -> BoxFuture<'a, Result<bool, DbError>> {
        op!(self, "deleting an assistant", No, |c| catalog::delete_assistant(
            c,
            assistant_id
        ))
    }
    fn create_thread<'a>(&'a self, thread: &'a Thread, if_exists: IfExists) -> BoxFuture<'a, Result<Thread, DbError>> {
        op!(self, "creating a thread", Yes, |c| catalog::create_thread(
            c, thread, if_exists
        ))
    }
    fn get_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Option<Thread>, DbError>> {
        op!(self, "reading a thread", Yes, |c| catalog::get_thread(c, thread_id))
    }
    fn get_thread_without_values<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Option<Thread>, DbError>> {
        op!(self, "reading a thread", Yes, |c| catalog::get_thread_without_values(
            c, thread_id
        ))
    }
    fn put_thread<'a>(&'a self, thread: &'a Thread) -> BoxFuture<'a, Result<(), DbError>> {
        op!(self, "storing a thread", Yes, |c| catalog::put_thread(c, thread))
    }
    fn update_thread<'a>(
        &'a self,
        thread_id: &'a str,
        update: &'a ThreadUpdate,
    ) -> BoxFuture<'a, Result<Option<Thread>, DbError>> {
        op!(self, "updating a thread", Yes, |c| catalog::update_thread(
            c, thread_id, update
        ))
    }
    fn set_thread_status<'a>(
        &'a self,
        thread_id: &'a str,
        status: ThreadStatus,
        metadata: Option<&'a Object>,
    ) -> BoxFuture<'a, Result<bool, DbError>> {
        op!(self, "setting a thread's status", Yes, |c| catalog::set_thread_status(
            c, thread_id, status, metadata
        ))
    }
    fn search_threads<'a>(&'a self, query: &'a ThreadQuery) -> BoxFuture<'a, Result<Vec<Thread>, DbError>> {
        op!(self, "searching threads", Yes, |c| catalog::search_threads(c, query))
    }
    fn count_threads<'a>(&'a self, query: &'a ThreadQuery) -> BoxFuture<'a, Result<u64, DbError>> {
        op!(self, "counting threads", Yes, |c| catalog::count_threads(c, query))
    }
    fn delete_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<bool, DbError>> {
        op!(self, "deleting a thread", No, |c| catalog::delete_thread(c, thread_id))
    }
    fn set_thread_ttl<'a>(&'a self, thread_id: &'a str, ttl: Option<ThreadTtl>) -> BoxFuture<'a, Result<(), DbError>> {
        op!(self, "setting a thread's TTL", Yes, |c| catalog::set_thread_ttl(
            c, thread_id, ttl
        ))
    }
    fn thread_ttl<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Option<ThreadTtl>, DbError>> {
        op!(self, "reading a thread's TTL", Yes, |c| catalog::thread_ttl(
            c, thread_id
        ))
    }
    fn expired_threads<'a>(
        &'a self,
        now: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<(String, TtlStrategy)>, DbError>> {
        op!(self, "finding expired threads", Yes, |c| catalog::expired_threads(
            c, now, limit
        ))
    }
    fn put_cron<'a>(&'a self, cron: &'a Cron) -> BoxFuture<'a, Result<(), DbError>> {
        op!(self, "storing a cron", Yes, |c| crons::put_cron(c, cron))
    }
    fn get_cron<'a>(&'a self, cron_id: &'a str) -> BoxFuture<'a, Result<Option<Cron>, DbError>> {
        op!(self, "reading a cron", Yes, |c| crons::get_cron(c, cron_id))
    }
    fn delete_cron<'a>(&'a self, cron_id: &'a str) -> BoxFuture<'a, Result<bool, DbError>> {
        op!(self, "deleting a cron", No, |c| crons::delete_cron(c, cron_id))
    }
    fn search_crons<'a>(&'a self, query: &'a CronQuery) -> BoxFuture<'a, Result<Vec<Cron>, DbError>> {
        op!(self, "searching crons", Yes, |c| crons::search_crons(c, query))
    }
    fn count_crons<'a>(&'a self, query: &'a CronQuery) -> BoxFuture<'a, Result<u64, DbError>> {
        op!(self, "counting crons", Yes, |c| crons::count_crons(c, query))
    }
    // Not run again: a first run whose commit's answer was lost took its crons' firings.
    fn take_due_crons(&self, now: jiff::Timestamp, limit: usize) -> BoxFuture<'_, Result<Vec<Cron>, DbError>> {
        op!(self, "taking the due crons", No, |c| crons::take_due_crons(
            c, now, limit
        ))
    }
}

impl RunQueue for PostgresDb {
    fn enqueue<'a>(
        &'a self,
        run: &'a Run,
        busy: Option<&'a Object>,
        claim: Option<&'a str>,
        bound: Option<usize>,
    ) -> BoxFuture<'a, Result<Enqueued, DbError>> {
        op!(self, "queueing a run", Yes, |c, again| queue::enqueue(
            c, run, busy, claim, bound, again
        ))
    }
    fn get_run<'a>(&'a self, thread_id: &'a str, run_id: &'a str) -> BoxFuture<'a, Result<Option<Run>, DbError>> {
        op!(self, "reading a run", Yes, |c| queue::get_run(c, thread_id, run_id))
    }
    fn list_runs<'a>(
        &'a self,
        thread_id: &'a str,
        limit: usize,
        offset: usize,
        status: Option<RunStatus>,
    ) -> BoxFuture<'a, Result<Vec<Run>, DbError>> {
        op!(self, "listing runs", Yes, |c| queue::list_runs(
            c, thread_id, limit, offset, status
        ))
    }
    fn in_flight(&self, status: InFlight) -> BoxFuture<'_, Result<Vec<(String, String)>, DbError>> {
        op!(self, "listing the runs in flight", Yes, |c| queue::in_flight(c, status))
    }
    fn end_run<'a>(
        &'a self,
        run: &'a Run,
        end: RunFate,
        update: &'a ThreadUpdate,
    ) -> BoxFuture<'a, Result<bool, DbError>> {
        op!(self, "ending a run", Yes, |c, again| queue::end_run(
            c, run, end, update, again
        ))
    }
    fn has_inflight<'a>(&'a self, thread_id: &'a str, except: Option<&'a str>) -> BoxFuture<'a, Result<bool, DbError>> {
        op!(self, "checking a thread's runs", Yes, |c| queue::has_inflight(
            c, thread_id, except
        ))
    }
    fn claim<'a>(&'a self, worker: &'a str) -> BoxFuture<'a, Result<Option<Run>, DbError>> {
        // The claim's time, the same in a second run: how it finds what a first one claimed.
        let at = crate::db::rows::now();
        Box::pin(async move {
            let at = &at;
            let claimed: BoxFuture<'_, Result<Option<Run>, DbError>> =
                op!(self, "claiming a run", Yes, |c, again| queue::claim(
                    c, worker, at, again
                ));
            claimed.await
        })
    }
    fn holds<'a>(&'a self, run_id: &'a str, attempt: u32) -> BoxFuture<'a, Result<bool, DbError>> {
        op!(self, "checking a run's claim", Yes, |c| queue::holds(
            c, run_id, attempt
        ))
    }
    fn next_due(&self) -> BoxFuture<'_, Result<Option<String>, DbError>> {
        op!(self, "reading the next delayed run", Yes, |c| queue::next_due(c))
    }
    fn set_status<'a>(&'a self, run_id: &'a str, status: RunStatus) -> BoxFuture<'a, Result<bool, DbError>> {
        op!(self, "setting a run's status", Yes, |c| queue::set_status(
            c, run_id, status
        ))
    }
    fn delete_run<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<bool, DbError>> {
        op!(self, "deleting a run", No, |c| queue::delete_run(c, run_id))
    }
    fn requeue<'a>(&'a self, worker: Option<&'a str>) -> BoxFuture<'a, Result<Vec<(String, u32)>, DbError>> {
        op!(self, "requeueing runs", Yes, |c| queue::requeue(c, worker))
    }
    fn busy_workers(&self) -> BoxFuture<'_, Result<Vec<String>, DbError>> {
        op!(self, "listing busy workers", Yes, |c| queue::busy_workers(c))
    }
    fn queue_stats<'a>(&'a self, now: &'a str) -> BoxFuture<'a, Result<QueueStats, DbError>> {
        op!(self, "reading the queue's figures", Yes, |c| queue::queue_stats(c, now))
    }
}
