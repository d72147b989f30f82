//! How the server's tables are reached. Writes go through the checkpointer's write connection
//! to the file ([`SqliteSaver::queue_job`]), never on a tokio worker: a job (a closure over the
//! connection) runs on the saver's writer thread, and its caller waits for the answer on a
//! oneshot. The thread runs jobs one at a time, so a job is atomic with respect to every other
//! write of this process (and, through SQLite's write lock, of every other connection to the
//! file). A job that panics is answered with an error and the thread goes on.
//!
//! Jobs and checkpoints queued together share one commit (group commit): the writer takes
//! everything waiting, runs it in one `BEGIN IMMEDIATE` transaction, each job under a savepoint
//! of its own (a job's transaction, [`begin`], is then a savepoint within it), and answers
//! once the transaction has committed; if the commit fails, every job of the batch hears why.
//! Under many concurrent runs, each of which makes a few writes (queued, claimed, finished,
//! the thread's status) beside its checkpoints, this saves most commits. The tables had a
//! write connection and thread of their own until 2026-12-06: the two connections took turns
//! at the file's lock, and each one's commits emptied the other's page cache (a separate file
//! for the checkpoints ran 7–20% more runs a second).
//!
//! Reads that stand alone (a run, a thread, an assistant, a listing) skip the thread: they run
//! on one of [`READERS`] read-only connections, small point reads right on the caller's thread
//! ([`Conn::read`]), searches, counts and a thread's row (its values grow with its state) on
//! tokio's blocking pool ([`Conn::scan`]). WAL lets
//! them read while the thread writes, each a snapshot of what has committed, so a read sees
//! every job answered before it (a job is answered after its commit). A run made about 13 trips
//! to the thread, 7 of them such reads, each waking the thread and then its caller. (Lending
//! the caller's thread with `block_in_place` instead made tokio start a thread to take over each
//! time: 480 of them and 2 GB under 3,000 concurrent runs.)

use crate::db::DbError;
use rusqlite::{Connection, Savepoint, Transaction, TransactionBehavior};
use std::ops::Deref;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;
use weir_runtime::checkpoint::{SqliteSaver, WriteJob};

/// How many read-only connections serve the reads (the tokio workers that may read at once).
pub(super) const READERS: usize = 4;

/// A job's transaction: a savepoint of its batch's transaction (which holds the file's write
/// lock); its own, taking the lock first, when the batch's could not begin and the job runs
/// alone.
pub(super) enum Tx<'c> {
    Own(Transaction<'c>),
    InBatch(Savepoint<'c>),
}

/// Begins a job's transaction on `conn` (see [`Tx`]).
pub(super) fn begin(conn: &mut Connection) -> rusqlite::Result<Tx<'_>> {
    if conn.is_autocommit() {
        Ok(Tx::Own(conn.transaction_with_behavior(TransactionBehavior::Immediate)?))
    } else {
        Ok(Tx::InBatch(conn.savepoint()?))
    }
}

impl Tx<'_> {
    /// Commits the job's transaction (releases its savepoint, in a batch).
    pub(super) fn commit(self) -> rusqlite::Result<()> {
        match self {
            Tx::Own(tx) => tx.commit(),
            Tx::InBatch(sp) => sp.commit(),
        }
    }
}

impl Deref for Tx<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        match self {
            Tx::Own(tx) => tx,
            Tx::InBatch(sp) => sp,
        }
    }
}

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

impl std::fmt::Display for Fail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fail::Sql(e) => e.fmt(f),
            Fail::Db(e) => e.fmt(f),
        }
    }
}

impl From<DbError> for Fail {
    fn from(e: DbError) -> Self {
        Fail::Db(e)
    }
}

/// The callers' side: the saver whose write connection runs the jobs, and the readers.
#[derive(Clone)]
pub(super) struct Conn {
    writer: SqliteSaver,
    readers: Arc<[Arc<Mutex<Connection>>]>,
    path: PathBuf,
}

impl Conn {
    /// Writes through `writer`'s connection (to the file whose tables are migrated); `readers`
    /// serve [`Conn::read`].
    pub(super) fn new(writer: SqliteSaver, readers: Vec<Connection>) -> Self {
        let path = writer.path().to_path_buf();
        let readers = readers.into_iter().map(|r| Arc::new(Mutex::new(r))).collect();
        Conn { writer, readers, path }
    }

    /// Runs `read` on a read-only connection (see the module's docs): a point read, right here
    /// on the caller's thread when a reader is free (tens of microseconds, less than a hop to
    /// another thread), else on tokio's blocking pool; `what` names the operation in errors.
    pub(super) async fn read<T, F>(&self, what: &str, read: F) -> Result<T, DbError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, Fail> + Send + 'static,
    {
        if let Some(mut conn) = self.readers.iter().find_map(|r| r.try_lock().ok()) {
            let ran = catch_unwind(AssertUnwindSafe(|| read(&mut conn)));
            return ran
                .map_err(|_| self.failed(what, "it panicked"))
                .and_then(|result| self.outcome(what, result));
        }
        self.scan(what, read).await
    }

    /// Runs `read` on a read-only connection on tokio's blocking pool: a search, a count or a
    /// row whose size grows with the data never holds a tokio worker.
    pub(super) async fn scan<T, F>(&self, what: &str, read: F) -> Result<T, DbError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, Fail> + Send + 'static,
    {
        static TURN: AtomicUsize = AtomicUsize::new(0);
        let reader = self.readers[TURN.fetch_add(1, Ordering::Relaxed) % self.readers.len()].clone();
        let ran = tokio::task::spawn_blocking(move || {
            let mut conn = reader.lock().unwrap_or_else(|p| p.into_inner());
            catch_unwind(AssertUnwindSafe(|| read(&mut conn)))
        })
        .await;
        match ran {
            Ok(Ok(result)) => self.outcome(what, result),
            Ok(Err(_)) => Err(self.failed(what, "it panicked")),
            Err(e) => Err(DbError::Backend(format!(
                "{what} in `{}` did not finish: {e}",
                self.path.display()
            ))),
        }
    }

    /// `what` failed on this file, because of `why`.
    fn failed(&self, what: &str, why: &str) -> DbError {
        DbError::Backend(format!("{what} in `{}` failed: {why}", self.path.display()))
    }

    /// A job's or a read's own result: a SQLite failure worded with `what` and the file.
    fn outcome<T>(&self, what: &str, result: Result<T, Fail>) -> Result<T, DbError> {
        match result {
            Ok(value) => Ok(value),
            Err(Fail::Db(e)) => Err(e),
            Err(Fail::Sql(e)) => Err(self.failed(what, &e.to_string())),
        }
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
        // The job's result, or why its batch did not commit.
        let (answer, answered) = oneshot::channel::<Result<Result<T, Fail>, String>>();
        let job: WriteJob = Box::new(move |conn| {
            let result = job(conn);
            Box::new(move |commit: Option<&str>| {
                let _ = answer.send(match commit {
                    None => Ok(result),
                    Some(why) => Err(why.to_owned()),
                });
            })
        });
        if self.writer.queue_job(job).await.is_err() {
            return Err(self.failed(what, "the sqlite writer thread has stopped"));
        }
        match answered.await {
            Ok(Ok(result)) => self.outcome(what, result),
            Ok(Err(why)) => Err(self.failed(what, &format!("its transaction did not commit: {why}"))),
            Err(_) => Err(self.failed(what, "it panicked")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh file with one table beside the checkpoints, written through its saver.
    fn start(dir: &Path) -> Conn {
        let path = dir.join("t.db");
        let saver = SqliteSaver::open(&path).unwrap();
        Connection::open(&path)
            .unwrap()
            .execute_batch("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)")
            .unwrap();
        let reader = Connection::open(&path).unwrap();
        Conn::new(saver, vec![reader])
    }

    /// A job, boxed to queue jobs of different bodies alike.
    type TestJob = Box<dyn FnOnce(&mut Connection) -> Result<(), Fail> + Send>;

    /// A job putting `k = v` in its own transaction (a conflict is an error, and undoes it).
    fn put(k: &'static str, v: i64) -> impl FnOnce(&mut Connection) -> Result<(), Fail> + Send + 'static {
        move |conn| {
            let tx = begin(conn)?;
            tx.execute("INSERT INTO t (k, v) VALUES (?1, ?2)", rusqlite::params![k, v])?;
            tx.execute("UPDATE t SET v = v + 100 WHERE k = ?1", [k])?;
            tx.commit()?;
            Ok(())
        }
    }

    /// The value at `k`, read on a read-only connection.
    async fn read(conn: &Conn, k: &'static str) -> Result<Option<i64>, DbError> {
        conn.read("reading", move |c| {
            use rusqlite::OptionalExtension;
            Ok(c.query_row("SELECT v FROM t WHERE k = ?1", [k], |r| r.get(0))
                .optional()?)
        })
        .await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reads_and_scans_see_what_was_answered_and_do_not_wait_behind_the_thread() {
        let dir = tempfile::tempdir().unwrap();
        let conn = start(dir.path());
        conn.call("putting", put("a", 1)).await.unwrap();
        assert_eq!(read(&conn, "a").await.unwrap(), Some(101), "answered, so committed");
        // A job holds the thread inside its own transaction, having written `b`.
        let (wrote, written) = tokio::sync::oneshot::channel::<()>();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let busy = {
            let conn = conn.clone();
            tokio::spawn(async move {
                conn.call("holding", move |c| {
                    let tx = begin(c)?;
                    tx.execute("INSERT INTO t (k, v) VALUES ('b', 2)", [])?;
                    let _ = wrote.send(());
                    let _ = released.recv();
                    tx.commit()?;
                    Ok(())
                })
                .await
            })
        };
        written.await.unwrap();
        assert_eq!(
            read(&conn, "a").await.unwrap(),
            Some(101),
            "read while the thread is held"
        );
        assert_eq!(read(&conn, "b").await.unwrap(), None, "not committed yet");
        release.send(()).unwrap();
        busy.await.unwrap().unwrap();
        assert_eq!(read(&conn, "b").await.unwrap(), Some(2));
        let count = conn.scan("counting", |c| {
            Ok(c.query_row("SELECT count(*) FROM t", [], |r| r.get::<_, i64>(0))?)
        });
        assert_eq!(
            count.await.unwrap(),
            2,
            "a scan reads on the blocking pool what committed"
        );
        let panicked = conn
            .read("reading in vain", |_| -> Result<(), Fail> { panic!("boom") })
            .await;
        let e = panicked.unwrap_err().to_string();
        assert!(e.contains("reading in vain") && e.contains("panicked"), "{e}");
        assert_eq!(
            read(&conn, "a").await.unwrap(),
            Some(101),
            "the reader goes on after a panic"
        );
    }

    /// The thread waits for the file's write gate, which the process's other writers to the
    /// file (the checkpointer's, the store's) hold around their transactions.
    // The gate is held across awaits on purpose: what waits for it runs on another thread.
    #[allow(clippy::await_holding_lock)]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn jobs_wait_for_the_file_s_write_gate() {
        let dir = tempfile::tempdir().unwrap();
        let conn = start(dir.path());
        let gate = weir_runtime::sqlite::WriteGate::for_file(&dir.path().join("t.db"));
        let held = gate.enter();
        let job = tokio::spawn({
            let conn = conn.clone();
            async move { conn.call("putting", put("a", 1)).await }
        });
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        assert!(!job.is_finished(), "the job waits for the gate");
        drop(held);
        job.await.unwrap().unwrap();
        assert_eq!(read(&conn, "a").await.unwrap(), Some(101));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn jobs_queued_together_share_a_transaction_and_each_is_whole_or_undone() {
        let dir = std::env::temp_dir().join(format!("weir-server-conn-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let conn = start(&dir);
        // Holds the thread until released, so that the jobs below queue up behind it.
        let (release, released) = std::sync::mpsc::channel::<()>();
        let busy = {
            let conn = conn.clone();
            tokio::spawn(async move {
                conn.call("holding", move |_| {
                    let _ = released.recv();
                    Ok(())
                })
                .await
            })
        };
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let spawn = |what: &'static str, job: TestJob| {
            let conn = conn.clone();
            tokio::spawn(async move { conn.call(what, job).await })
        };
        let first = spawn("a", Box::new(put("a", 1)));
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let conflict = spawn("a again", Box::new(put("a", 2)));
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let panics = spawn(
            "panicking",
            Box::new(|conn: &mut Connection| {
                conn.execute("INSERT INTO t (k, v) VALUES ('p', 0)", [])?;
                panic!("a job's bug");
            }),
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let last = spawn("c", Box::new(put("c", 3)));
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        release.send(()).unwrap();
        busy.await.unwrap().unwrap();
        assert!(first.await.unwrap().is_ok());
        let e = conflict.await.unwrap().unwrap_err();
        assert!(
            e.to_string().contains("a again") && e.to_string().contains("UNIQUE"),
            "{e}"
        );
        let e = panics.await.unwrap().unwrap_err();
        assert!(e.to_string().contains("panicked"), "{e}");
        assert!(last.await.unwrap().is_ok());
        let rows = conn
            .call("reading", |conn| {
                let mut stmt = conn.prepare("SELECT k, v FROM t ORDER BY k")?;
                let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
                Ok(rows.collect::<Result<Vec<_>, _>>()?)
            })
            .await
            .unwrap();
        // No `p`: the panicking job's insert, which alone would have committed by itself, was
        // undone with its savepoint: the four jobs ran in one transaction.
        assert_eq!(rows, [("a".to_owned(), 101), ("c".to_owned(), 103)]);
        drop(conn);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
