//! The scale-out backend: [`PostgresDb`], the server's tables in PostgreSQL (tokio-postgres, a
//! small pool of connections), in a schema of their own choosing — by default `weir`, beside the
//! checkpoints, in tables of their own (`server_*`, versioned in `server_schema`). The runs table
//! is the queue: any number of workers on any number of machines claim from it with
//! `FOR UPDATE SKIP LOCKED`, and at most one run per thread is ever running.

mod catalog;
mod pool;
mod queue;
mod schema;

use crate::db::{
    AssistantQuery, Catalog, DbError, Enqueued, IfExists, RunQueue, ThreadQuery, ThreadUpdate, VersionQuery,
};
use crate::model::{Assistant, Run, RunStatus, Thread, ThreadTtl, TtlStrategy};
use futures::future::BoxFuture;
use pool::{fail, Conn, Fail};
use std::time::Duration;
use weir_runtime::postgres::{Pool, PoolOptions};

/// How a [`PostgresDb`] connects: made by [`PostgresDb::options`].
#[derive(Debug, Clone)]
pub struct PostgresOptions {
    schema: String,
    pool: PoolOptions,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            schema: "weir".to_owned(),
            pool: PoolOptions::new().size(8),
        }
    }
}

impl PostgresOptions {
    /// The schema that holds the tables (default `weir`, the checkpointer's): lower-case ASCII
    /// letters, digits and `_`, not starting with a digit, at most 63 bytes.
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// How many connections the operations share (default 8, at least 1).
    pub fn connections(mut self, connections: usize) -> Self {
        self.pool = self.pool.size(connections);
        self
    }

    /// How long an operation waits for a connection while all are in use before it fails
    /// (default: no limit).
    pub fn acquire_timeout(mut self, timeout: Duration) -> Self {
        self.pool = self.pool.acquire_timeout(timeout);
        self
    }

    /// Connects to the database at `url` (e.g. `postgres://postgres@127.0.0.1:5432/test`),
    /// creating the schema and the tables on first use and migrating older ones.
    ///
    /// # Errors
    ///
    /// [`DbError::Backend`] for a bad schema name, a database that cannot be reached, or
    /// tables written by a newer weir (they are left as they are).
    pub async fn connect(self, url: &str) -> Result<PostgresDb, DbError> {
        let valid = !self.schema.is_empty()
            && self.schema.len() <= 63
            && !self.schema.starts_with(|c: char| c.is_ascii_digit())
            && self
                .schema
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !valid {
            return Err(DbError::Backend(format!(
                "`{}` cannot name a PostgreSQL schema; use lower-case ASCII letters, digits and `_`",
                self.schema
            )));
        }
        let pool = Pool::new(url, self.pool.schema(self.schema.clone()));
        let opened = async {
            let mut first = pool.open().await?;
            schema::migrate(&mut first.client, &self.schema).await?;
            pool.keep(first).await?;
            Ok::<_, Fail>(())
        };
        opened.await.map_err(|e| fail(&pool, "creating the server tables", e))?;
        Ok(PostgresDb { pool })
    }
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
/// let db = PostgresDb::options().schema("weir").connect("postgres://postgres@127.0.0.1:5432/test").await?;
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
    /// Options for connecting.
    pub fn options() -> PostgresOptions {
        PostgresOptions::default()
    }

    /// Connects to `url` with the tables in the schema `weir`. See [`PostgresOptions::connect`].
    pub async fn connect(url: &str) -> Result<Self, DbError> {
        PostgresOptions::default().connect(url).await
    }
}

/// An operation on a pooled connection, its PostgreSQL errors named with `what` and the schema.
macro_rules! op {
    ($self:ident, $what:literal, |$conn:ident| $body:expr) => {
        Box::pin(async move {
            let result: Result<_, Fail> = async {
                let mut pooled = $self.pool.get().await?;
                let $conn: &mut Conn = &mut pooled;
                $body.await
            }
            .await;
            result.map_err(|e| fail(&$self.pool, $what, e))
        })
    };
}

impl Catalog for PostgresDb {
    fn put_assistant<'a>(&'a self, assistant: &'a Assistant) -> BoxFuture<'a, Result<(), DbError>> {
        op!(self, "storing an assistant", |c| catalog::put_assistant(c, assistant))
    }
    fn assistant_versions<'a>(
        &'a self,
        assistant_id: &'a str,
        query: &'a VersionQuery,
    ) -> BoxFuture<'a, Result<Vec<Assistant>, DbError>> {
        op!(
            self,
            "listing an assistant's versions",
            |c| catalog::assistant_versions(c, assistant_id, query)
        )
    }
    fn set_latest_version<'a>(
        &'a self,
        assistant_id: &'a str,
        version: i64,
    ) -> BoxFuture<'a, Result<Option<Assistant>, DbError>> {
        op!(self, "setting an assistant's version", |c| catalog::set_latest_version(
            c,
            assistant_id,
            version
        ))
    }
    fn get_assistant<'a>(&'a self, assistant_id: &'a str) -> BoxFuture<'a, Result<Option<Assistant>, DbError>> {
        op!(self, "reading an assistant", |c| catalog::get_assistant(
            c,
            assistant_id
        ))
    }
    fn search_assistants<'a>(&'a self, query: &'a AssistantQuery) -> BoxFuture<'a, Result<Vec<Assistant>, DbError>> {
        op!(self, "searching assistants", |c| catalog::search_assistants(c, query))
    }
    fn count_assistants<'a>(&'a self, query: &'a AssistantQuery) -> BoxFuture<'a, Result<u64, DbError>> {
        op!(self, "counting assistants", |c| catalog::count_assistants(c, query))
    }
    fn delete_assistant<'a>(&'a self, assistant_id: &'a str) -> BoxFuture<'a, Result<bool, DbError>> {
        op!(self, "deleting an assistant", |c| catalog::delete_assistant(
            c,
            assistant_id
        ))
    }
    fn create_thread<'a>(&'a self, thread: &'a Thread, if_exists: IfExists) -> BoxFuture<'a, Result<Thread, DbError>> {
        op!(self, "creating a thread", |c| catalog::create_thread(
            c, thread, if_exists
        ))
    }
    fn get_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Option<Thread>, DbError>> {
        op!(self, "reading a thread", |c| catalog::get_thread(c, thread_id))
    }
    fn put_thread<'a>(&'a self, thread: &'a Thread) -> BoxFuture<'a, Result<(), DbError>> {
        op!(self, "storing a thread", |c| catalog::put_thread(c, thread))
    }
    fn update_thread<'a>(
        &'a self,
        thread_id: &'a str,
        update: &'a ThreadUpdate,
    ) -> BoxFuture<'a, Result<Option<Thread>, DbError>> {
        op!(self, "updating a thread", |c| catalog::update_thread(
            c, thread_id, update
        ))
    }
    fn search_threads<'a>(&'a self, query: &'a ThreadQuery) -> BoxFuture<'a, Result<Vec<Thread>, DbError>> {
        op!(self, "searching threads", |c| catalog::search_threads(c, query))
    }
    fn count_threads<'a>(&'a self, query: &'a ThreadQuery) -> BoxFuture<'a, Result<u64, DbError>> {
        op!(self, "counting threads", |c| catalog::count_threads(c, query))
    }
    fn delete_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<bool, DbError>> {
        op!(self, "deleting a thread", |c| catalog::delete_thread(c, thread_id))
    }
    fn set_thread_ttl<'a>(&'a self, thread_id: &'a str, ttl: Option<ThreadTtl>) -> BoxFuture<'a, Result<(), DbError>> {
        op!(self, "setting a thread's TTL", |c| catalog::set_thread_ttl(
            c, thread_id, ttl
        ))
    }
    fn expired_threads<'a>(
        &'a self,
        now: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<(String, TtlStrategy)>, DbError>> {
        op!(self, "finding expired threads", |c| catalog::expired_threads(
            c, now, limit
        ))
    }
}

impl RunQueue for PostgresDb {
    fn enqueue<'a>(&'a self, run: &'a Run) -> BoxFuture<'a, Result<Enqueued, DbError>> {
        op!(self, "queueing a run", |c| queue::enqueue(c, run))
    }
    fn get_run<'a>(&'a self, thread_id: &'a str, run_id: &'a str) -> BoxFuture<'a, Result<Option<Run>, DbError>> {
        op!(self, "reading a run", |c| queue::get_run(c, thread_id, run_id))
    }
    fn list_runs<'a>(
        &'a self,
        thread_id: &'a str,
        limit: usize,
        offset: usize,
        status: Option<RunStatus>,
    ) -> BoxFuture<'a, Result<Vec<Run>, DbError>> {
        op!(self, "listing runs", |c| queue::list_runs(
            c, thread_id, limit, offset, status
        ))
    }
    fn claim<'a>(&'a self, worker: &'a str) -> BoxFuture<'a, Result<Option<Run>, DbError>> {
        op!(self, "claiming a run", |c| queue::claim(c, worker))
    }
    fn holds<'a>(&'a self, run_id: &'a str, attempt: u32) -> BoxFuture<'a, Result<bool, DbError>> {
        op!(self, "checking a run's claim", |c| queue::holds(c, run_id, attempt))
    }
    fn finish<'a>(&'a self, run_id: &'a str, attempt: u32, status: RunStatus) -> BoxFuture<'a, Result<bool, DbError>> {
        op!(self, "finishing a run", |c| queue::finish(c, run_id, attempt, status))
    }
    fn next_due(&self) -> BoxFuture<'_, Result<Option<String>, DbError>> {
        op!(self, "reading the next delayed run", |c| queue::next_due(c))
    }
    fn set_status<'a>(&'a self, run_id: &'a str, status: RunStatus) -> BoxFuture<'a, Result<bool, DbError>> {
        op!(self, "setting a run's status", |c| queue::set_status(c, run_id, status))
    }
    fn delete_run<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<bool, DbError>> {
        op!(self, "deleting a run", |c| queue::delete_run(c, run_id))
    }
    fn requeue<'a>(&'a self, worker: Option<&'a str>) -> BoxFuture<'a, Result<Vec<String>, DbError>> {
        op!(self, "requeueing runs", |c| queue::requeue(c, worker))
    }
    fn busy_workers(&self) -> BoxFuture<'_, Result<Vec<String>, DbError>> {
        op!(self, "listing busy workers", |c| queue::busy_workers(c))
    }
}
