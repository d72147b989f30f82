//! The embedded backend: [`SqliteDb`], the server's tables in one SQLite file — the same file as
//! the checkpoints, in tables of their own (`server_*`, versioned in `server_schema`), in WAL
//! mode. Every write runs on the checkpoint saver's write connection and thread (`conn`), never
//! on a tokio worker, and reads that stand alone on read-only connections beside it. Each write
//! is atomic there (a savepoint of the transaction the writes queued with it share, which holds
//! the file's write lock), which makes `enqueue`'s check of in-flight runs and `claim`'s
//! pick-and-update atomic. The tables belong to one process at a time (`owner`).

mod catalog;
mod conn;
mod crons;
mod owner;
mod queue;
mod schema;

use crate::db::{
    AssistantQuery, Catalog, CronQuery, DbError, Enqueued, IfExists, InFlight, QueueStats, RunFate, RunQueue,
    ThreadQuery, ThreadUpdate, VersionQuery,
};
use crate::model::{Assistant, Cron, Object, Run, RunStatus, Thread, ThreadStatus, ThreadTtl, TtlStrategy};
use conn::{Conn, Fail};
use futures::future::BoxFuture;
use rusqlite::Connection;
use std::path::Path;
use std::sync::Arc;
use weir_runtime::checkpoint::SqliteSaver;

/// The server's tables in a SQLite file: a [`Catalog`] and a [`RunQueue`].
///
/// Clones share the read connections and the saver they write through.
///
/// # Examples
///
/// ```
/// use weir_server::db::{sqlite::SqliteDb, RunQueue};
///
/// # #[tokio::main] async fn main() {
/// let dir = tempfile::tempdir().unwrap();
/// let db = SqliteDb::open(dir.path().join("weir.db")).await.unwrap();
/// assert_eq!(db.claim("worker-1").await.unwrap(), None);
/// # }
/// ```
#[derive(Clone)]
pub struct SqliteDb {
    conn: Conn,
    /// This process's claim on the file's tables, dropped with the last clone.
    _owner: Arc<owner::Owner>,
}

impl std::fmt::Debug for SqliteDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteDb").field("path", &self.conn.path()).finish()
    }
}

impl SqliteDb {
    /// Opens (or creates) the file at `path` and its server tables, migrating older ones, with
    /// a checkpoint saver of its own on the file to write through ([`SqliteDb::open_with`]
    /// says more).
    ///
    /// # Errors
    ///
    /// As [`SqliteDb::open_with`]'s, and the saver's when the file cannot be opened as one.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, DbError> {
        let path = path.as_ref().to_path_buf();
        let opened = path.clone();
        let failed = |e: &dyn std::fmt::Display| DbError::Backend(format!("opening `{}` failed: {e}", path.display()));
        let saver = tokio::task::spawn_blocking(move || SqliteSaver::open(opened))
            .await
            .map_err(|e| failed(&e))?
            .map_err(|e| failed(&e))?;
        Self::open_with(&saver).await
    }

    /// Opens (or creates) the server tables in `saver`'s file, migrating older ones. They are
    /// written through the saver's write connection, in the transactions of its batches (one
    /// writer to the file in this process: see the `conn` module). The tables belong to this
    /// process until the last clone is dropped (or the process ends): a lock on `<path>.lock`,
    /// beside the file, keeps another process from opening them.
    ///
    /// # Errors
    ///
    /// [`DbError::Backend`] naming the file when it cannot be opened, when another process
    /// holds its tables (naming that process), or when its server tables were written by a
    /// newer weir (the file is then left as it was).
    pub async fn open_with(saver: &SqliteSaver) -> Result<Self, DbError> {
        let path = saver.path().to_path_buf();
        let owner = Arc::new(owner::Owner::take(&path)?);
        let opened = path.clone();
        let readers = tokio::task::spawn_blocking(move || {
            let mut conn = Connection::open(&opened).map_err(Fail::from)?;
            schema::prepare(&mut conn, &opened)?;
            (0..conn::READERS)
                .map(|_| schema::reader(&opened))
                .collect::<Result<Vec<_>, _>>()
        })
        .await
        .map_err(|e| DbError::Backend(format!("opening the server tables in `{}` failed: {e}", path.display())))?;
        let failed = |e: rusqlite::Error| {
            DbError::Backend(format!("opening the server tables in `{}` failed: {e}", path.display()))
        };
        let readers = match readers {
            Ok(readers) => readers,
            Err(Fail::Db(e)) => return Err(e),
            Err(Fail::Sql(e)) => return Err(failed(e)),
        };
        let conn = Conn::new(saver.clone(), readers);
        conn.call("setting up the write connection", schema::configure_writer)
            .await?;
        Ok(SqliteDb { conn, _owner: owner })
    }
}

impl Catalog for SqliteDb {
    fn put_assistant<'a>(&'a self, assistant: &'a Assistant) -> BoxFuture<'a, Result<(), DbError>> {
        let a = assistant.clone();
        Box::pin(
            self.conn
                .call("storing an assistant", move |c| catalog::put_assistant(c, &a)),
        )
    }
    fn assistant_versions<'a>(
        &'a self,
        assistant_id: &'a str,
        query: &'a VersionQuery,
    ) -> BoxFuture<'a, Result<Vec<Assistant>, DbError>> {
        let (id, q) = (assistant_id.to_owned(), query.clone());
        Box::pin(self.conn.scan("listing an assistant's versions", move |c| {
            catalog::assistant_versions(c, &id, &q)
        }))
    }
    fn set_latest_version<'a>(
        &'a self,
        assistant_id: &'a str,
        version: i64,
    ) -> BoxFuture<'a, Result<Option<Assistant>, DbError>> {
        let id = assistant_id.to_owned();
        Box::pin(self.conn.call("setting an assistant's version", move |c| {
            catalog::set_latest_version(c, &id, version)
        }))
    }
    fn get_assistant<'a>(&'a self, assistant_id: &'a str) -> BoxFuture<'a, Result<Option<Assistant>, DbError>> {
        let id = assistant_id.to_owned();
        Box::pin(
            self.conn
                .read("reading an assistant", move |c| catalog::get_assistant(c, &id)),
        )
    }
    fn search_assistants<'a>(&'a self, query: &'a AssistantQuery) -> BoxFuture<'a, Result<Vec<Assistant>, DbError>> {
        let q = query.clone();
        Box::pin(
            self.conn
                .scan("searching assistants", move |c| catalog::search_assistants(c, &q)),
        )
    }
    fn count_assistants<'a>(&'a self, query: &'a AssistantQuery) -> BoxFuture<'a, Result<u64, DbError>> {
        let q = query.clone();
        Box::pin(
            self.conn
                .scan("counting assistants", move |c| catalog::count_assistants(c, &q)),
        )
    }
    fn delete_assistant<'a>(&'a self, assistant_id: &'a str) -> BoxFuture<'a, Result<bool, DbError>> {
        let id = assistant_id.to_owned();
        Box::pin(
            self.conn
                .call("deleting an assistant", move |c| catalog::delete_assistant(c, &id)),
        )
    }
    fn create_thread<'a>(&'a self, thread: &'a Thread, if_exists: IfExists) -> BoxFuture<'a, Result<Thread, DbError>> {
        let t = thread.clone();
        Box::pin(
            self.conn
                .call("creating a thread", move |c| catalog::create_thread(c, &t, if_exists)),
        )
    }
    fn get_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Option<Thread>, DbError>> {
        let id = thread_id.to_owned();
        // On the pool: a thread's row holds its values, which grow with its state.
        Box::pin(self.conn.scan("reading a thread", move |c| catalog::get_thread(c, &id)))
    }
    fn get_thread_without_values<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Option<Thread>, DbError>> {
        let id = thread_id.to_owned();
        // Without its values, a thread's row is a point read: on the caller's thread.
        Box::pin(
            self.conn
                .read("reading a thread", move |c| catalog::get_thread_without_values(c, &id)),
        )
    }
    fn put_thread<'a>(&'a self, thread: &'a Thread) -> BoxFuture<'a, Result<(), DbError>> {
        let t = thread.clone();
        Box::pin(self.conn.call("storing a thread", move |c| catalog::put_thread(c, &t)))
    }
    fn update_thread<'a>(
        &'a self,
        thread_id: &'a str,
        update: &'a ThreadUpdate,
    ) -> BoxFuture<'a, Result<Option<Thread>, DbError>> {
        let (id, update) = (thread_id.to_owned(), update.clone());
        Box::pin(
            self.conn
                .call("updating a thread", move |c| catalog::update_thread(c, &id, &update)),
        )
    }
    fn set_thread_status<'a>(
        &'a self,
        thread_id: &'a str,
        status: ThreadStatus,
        metadata: Option<&'a Object>,
    ) -> BoxFuture<'a, Result<bool, DbError>> {
        let (id, metadata) = (thread_id.to_owned(), metadata.cloned());
        Box::pin(self.conn.call("setting a thread's status", move |c| {
            catalog::set_thread_status(c, &id, status, metadata.as_ref())
        }))
    }
    fn search_threads<'a>(&'a self, query: &'a ThreadQuery) -> BoxFuture<'a, Result<Vec<Thread>, DbError>> {
        let q = query.clone();
        Box::pin(
            self.conn
                .scan("searching threads", move |c| catalog::search_threads(c, &q)),
        )
    }
    fn count_threads<'a>(&'a self, query: &'a ThreadQuery) -> BoxFuture<'a, Result<u64, DbError>> {
        let q = query.clone();
        Box::pin(
            self.conn
                .scan("counting threads", move |c| catalog::count_threads(c, &q)),
        )
    }
    fn delete_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<bool, DbError>> {
        let id = thread_id.to_owned();
        Box::pin(
            self.conn
                .call("deleting a thread", move |c| catalog::delete_thread(c, &id)),
        )
    }
    fn set_thread_ttl<'a>(&'a self, thread_id: &'a str, ttl: Option<ThreadTtl>) -> BoxFuture<'a, Result<(), DbError>> {
        let id = thread_id.to_owned();
        Box::pin(
            self.conn
                .call("setting a thread's TTL", move |c| catalog::set_thread_ttl(c, &id, ttl)),
        )
    }
    fn thread_ttl<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Option<ThreadTtl>, DbError>> {
        let id = thread_id.to_owned();
        Box::pin(
            self.conn
                .read("reading a thread's TTL", move |c| catalog::thread_ttl(c, &id)),
        )
    }
    fn expired_threads<'a>(
        &'a self,
        now: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<(String, TtlStrategy)>, DbError>> {
        let now = now.to_owned();
        Box::pin(self.conn.call("finding expired threads", move |c| {
            catalog::expired_threads(c, &now, limit)
        }))
    }
    fn put_cron<'a>(&'a self, cron: &'a Cron) -> BoxFuture<'a, Result<(), DbError>> {
        let cron = cron.clone();
        Box::pin(self.conn.call("storing a cron", move |c| crons::put_cron(c, &cron)))
    }
    fn get_cron<'a>(&'a self, cron_id: &'a str) -> BoxFuture<'a, Result<Option<Cron>, DbError>> {
        let id = cron_id.to_owned();
        Box::pin(self.conn.read("reading a cron", move |c| crons::get_cron(c, &id)))
    }
    fn delete_cron<'a>(&'a self, cron_id: &'a str) -> BoxFuture<'a, Result<bool, DbError>> {
        let id = cron_id.to_owned();
        Box::pin(self.conn.call("deleting a cron", move |c| crons::delete_cron(c, &id)))
    }
    fn search_crons<'a>(&'a self, query: &'a CronQuery) -> BoxFuture<'a, Result<Vec<Cron>, DbError>> {
        let q = query.clone();
        Box::pin(self.conn.scan("searching crons", move |c| crons::search_crons(c, &q)))
    }
    fn count_crons<'a>(&'a self, query: &'a CronQuery) -> BoxFuture<'a, Result<u64, DbError>> {
        let q = query.clone();
        Box::pin(self.conn.scan("counting crons", move |c| crons::count_crons(c, &q)))
    }
    fn take_due_crons(&self, now: jiff::Timestamp, limit: usize) -> BoxFuture<'_, Result<Vec<Cron>, DbError>> {
        Box::pin(
            self.conn
                .call("taking the due crons", move |c| crons::take_due_crons(c, now, limit)),
        )
    }
}

impl RunQueue for SqliteDb {
    fn enqueue<'a>(
        &'a self,
        run: &'a Run,
        busy: Option<&'a Object>,
        claim: Option<&'a str>,
        bound: Option<usize>,
    ) -> BoxFuture<'a, Result<Enqueued, DbError>> {
        let (run, busy, claim) = (run.clone(), busy.cloned(), claim.map(str::to_owned));
        Box::pin(self.conn.call("queueing a run", move |c| {
            queue::enqueue(c, &run, busy.as_ref(), claim.as_deref(), bound)
        }))
    }
    fn get_run<'a>(&'a self, thread_id: &'a str, run_id: &'a str) -> BoxFuture<'a, Result<Option<Run>, DbError>> {
        let (thread_id, run_id) = (thread_id.to_owned(), run_id.to_owned());
        Box::pin(
            self.conn
                .read("reading a run", move |c| queue::get_run(c, &thread_id, &run_id)),
        )
    }
    fn list_runs<'a>(
        &'a self,
        thread_id: &'a str,
        limit: usize,
        offset: usize,
        status: Option<RunStatus>,
    ) -> BoxFuture<'a, Result<Vec<Run>, DbError>> {
        let thread_id = thread_id.to_owned();
        Box::pin(self.conn.read("listing runs", move |c| {
            queue::list_runs(c, &thread_id, limit, offset, status)
        }))
    }
    fn in_flight(&self, status: InFlight) -> BoxFuture<'_, Result<Vec<(String, String)>, DbError>> {
        Box::pin(
            self.conn
                .scan("listing the runs in flight", move |c| queue::in_flight(c, status)),
        )
    }
    fn has_inflight<'a>(&'a self, thread_id: &'a str, except: Option<&'a str>) -> BoxFuture<'a, Result<bool, DbError>> {
        let (thread_id, except) = (thread_id.to_owned(), except.map(str::to_owned));
        Box::pin(self.conn.read("checking a thread's runs", move |c| {
            queue::has_inflight(c, &thread_id, except.as_deref())
        }))
    }
    fn claim<'a>(&'a self, worker: &'a str) -> BoxFuture<'a, Result<Option<Run>, DbError>> {
        let worker = worker.to_owned();
        Box::pin(async move {
            // A run queued after this read wakes the workers again, so none is missed.
            if !self
                .conn
                .read("looking for a run to claim", queue::any_claimable)
                .await?
            {
                return Ok(None);
            }
            self.conn
                .call("claiming a run", move |c| queue::claim(c, &worker))
                .await
        })
    }
    fn holds<'a>(&'a self, run_id: &'a str, attempt: u32) -> BoxFuture<'a, Result<bool, DbError>> {
        let run_id = run_id.to_owned();
        Box::pin(
            self.conn
                .read("checking a run's claim", move |c| queue::holds(c, &run_id, attempt)),
        )
    }
    fn end_run<'a>(
        &'a self,
        run: &'a Run,
        end: RunFate,
        update: &'a ThreadUpdate,
    ) -> BoxFuture<'a, Result<bool, DbError>> {
        let (run, update) = (run.clone(), update.clone());
        Box::pin(
            self.conn
                .call("ending a run", move |c| queue::end_run(c, &run, end, &update)),
        )
    }
    fn end_run_and_claim<'a>(
        &'a self,
        run: &'a Run,
        end: RunFate,
        update: &'a ThreadUpdate,
        worker: &'a str,
    ) -> BoxFuture<'a, Result<(bool, Option<Run>), DbError>> {
        let (run, update, worker) = (run.clone(), update.clone(), worker.to_owned());
        Box::pin(self.conn.call("ending a run", move |c| {
            if !queue::end_run(c, &run, end, &update)? {
                return Ok((false, None));
            }
            // The claim under its own savepoint: failing, it leaves the end committed.
            Ok((true, crate::db::claim_after_end(queue::claim(c, &worker))))
        }))
    }
    fn next_due(&self) -> BoxFuture<'_, Result<Option<String>, DbError>> {
        Box::pin(self.conn.read("reading the next delayed run", queue::next_due))
    }
    fn set_status<'a>(&'a self, run_id: &'a str, status: RunStatus) -> BoxFuture<'a, Result<bool, DbError>> {
        let run_id = run_id.to_owned();
        Box::pin(
            self.conn
                .call("setting a run's status", move |c| queue::set_status(c, &run_id, status)),
        )
    }
    fn delete_run<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<bool, DbError>> {
        let run_id = run_id.to_owned();
        Box::pin(self.conn.call("deleting a run", move |c| queue::delete_run(c, &run_id)))
    }
    fn requeue<'a>(&'a self, worker: Option<&'a str>) -> BoxFuture<'a, Result<Vec<(String, u32)>, DbError>> {
        let worker = worker.map(str::to_owned);
        Box::pin(
            self.conn
                .call("requeueing runs", move |c| queue::requeue(c, worker.as_deref())),
        )
    }
    fn busy_workers(&self) -> BoxFuture<'_, Result<Vec<String>, DbError>> {
        Box::pin(self.conn.read("listing busy workers", queue::busy_workers))
    }
    fn queue_stats<'a>(&'a self, now: &'a str) -> BoxFuture<'a, Result<QueueStats, DbError>> {
        let now = now.to_owned();
        Box::pin(
            self.conn
                .scan("reading the queue's figures", move |c| queue::queue_stats(c, &now)),
        )
    }
}
