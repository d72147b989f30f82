//! The connection's own thread: every SQLite call of the server's tables runs there, never on a
//! tokio worker. Callers send a job (a closure over the connection) through a bounded channel
//! and wait for its answer on a oneshot; the thread runs the jobs one at a time, each in its own
//! transaction, so a job is atomic with respect to every other job of this process (and, through
//! SQLite's write lock, of every other connection to the file). A job that panics is answered
//! with an error and the thread goes on.

use crate::db::DbError;
use rusqlite::Connection;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use tokio::sync::{mpsc, oneshot};

/// How many jobs wait at most; a caller waits (asynchronously) for room.
const QUEUE: usize = 256;

/// A job: runs on the thread, answers its caller itself.
type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// Why a job failed: SQLite, or the tables' own rule (a conflict, an unreadable row).
pub(super) enum Fail {
    Sql(rusqlite::Error),
    Db(DbError),
}

impl From<rusqlite::Error> for Fail {
    fn from(e: rusqlite::Error) -> Self {
        Fail::Sql(e)
    }
}

impl From<DbError> for Fail {
    fn from(e: DbError) -> Self {
        Fail::Db(e)
    }
}

/// The callers' side; the thread ends (closing the connection) when the last clone is dropped.
#[derive(Clone)]
pub(super) struct Conn {
    jobs: mpsc::Sender<Job>,
    path: PathBuf,
}

impl Conn {
    /// Starts the thread on `conn`, the file's migrated connection.
    pub(super) fn start(conn: Connection, path: PathBuf) -> Result<Self, DbError> {
        let (jobs, queue) = mpsc::channel(QUEUE);
        std::thread::Builder::new()
            .name("weir-server-sqlite".into())
            .spawn(move || serve(conn, queue))
            .map_err(|e| DbError::Backend(format!("server tables in `{}`: no thread: {e}", path.display())))?;
        Ok(Conn { jobs, path })
    }

    /// The file.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `job` on the thread and returns its answer; `what` names the operation in errors.
    pub(super) async fn call<T, F>(&self, what: &str, job: F) -> Result<T, DbError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, Fail> + Send + 'static,
    {
        let (answer, answered) = oneshot::channel();
        let job: Job = Box::new(move |conn| {
            let _ = answer.send(job(conn));
        });
        let failed = |why: &str| DbError::Backend(format!("{what} in `{}` failed: {why}", self.path.display()));
        if self.jobs.send(job).await.is_err() {
            return Err(failed("the sqlite thread has stopped"));
        }
        match answered.await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(Fail::Db(e))) => Err(e),
            Ok(Err(Fail::Sql(e))) => Err(failed(&e.to_string())),
            Err(_) => Err(failed("it panicked")),
        }
    }
}

/// The thread's body: runs the jobs until every caller is gone.
fn serve(mut conn: Connection, mut queue: mpsc::Receiver<Job>) {
    while let Some(job) = queue.blocking_recv() {
        // A panic drops the job's answer (its caller sees the error) and, while unwinding, the
        // job's transaction, which rolls back.
        if catch_unwind(AssertUnwindSafe(|| job(&mut conn))).is_err() {
            tracing::error!("a job on the server's sqlite thread panicked");
        }
    }
}
