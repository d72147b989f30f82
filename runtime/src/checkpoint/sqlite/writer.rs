//! The writer: one thread that owns the file's write connection and the statements every write
//! runs, fed by a bounded channel, answering each request on a oneshot.
//!
//! A tokio task that writes only sends its request and awaits the answer: no SQLite call, no
//! commit waiting for the disk and no WAL checkpoint ever runs on a tokio worker. The thread
//! takes the requests one batch at a time, as many as are queued (up to [`BATCH`]), and stores
//! them in one transaction, each request under a savepoint of its own when there are several,
//! so one refused put rolls back alone; the answers go out once the batch is committed. A run
//! whose steps come faster than the disk thus commits many of them at once.
//!
//! The statements live as locals of the thread's function, borrowing the connection they were
//! compiled on ([`Writer`]): each is compiled once for the writer's life, as no statement cache
//! can be (rusqlite's costs about 1.4 k instructions a lookup), with no `unsafe`.
//!
//! SQLite's automatic WAL checkpoint is off on this connection: a commit never turns into a
//! checkpoint and its fsyncs. Instead the writer runs a passive checkpoint itself once the log
//! has grown by about [`super::SqliteOptions`]'s page budget, after answering, when nothing is
//! queued (or, under a load that never lets the queue empty, once the log is four budgets long).

use super::rows::{self, Inserts};
use super::{backend, Failure};
use crate::checkpoint::{check, CheckpointRecord, MadeByRun, PendingWrite, SaverError};
use rusqlite::{params, Connection, OptionalExtension, Statement};
use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

/// How many requests wait in the queue at most; a writer waits (asynchronously) for room.
const QUEUE: usize = 1024;

/// How many requests one transaction takes at most.
const BATCH: usize = 1024;

/// The pages a commit writes to the log besides its rows' bytes: a table leaf, an index leaf,
/// and their parents, about.
const PAGES_PER_COMMIT: u64 = 3;

/// What a writer is asked: a write and where to answer it, or (in tests) a hold or a crash.
pub(super) enum Request {
    /// A write, answered once its transaction is committed (or refused).
    Write(Work, oneshot::Sender<Outcome>),
    /// Says it holds on the first channel, then waits until the second's sender is dropped or
    /// sends, before taking anything more: what is queued meanwhile goes into the next batch.
    #[cfg(test)]
    Hold(oneshot::Sender<()>, std::sync::mpsc::Receiver<()>),
    /// Panics on the writer thread, as a bug would.
    #[cfg(test)]
    Crash,
}

/// A write.
pub(super) enum Work {
    /// Checkpoints to store as successive heads, the head the first follows, and whether a
    /// run made them.
    Put(Vec<CheckpointRecord>, Option<Box<str>>, Option<MadeByRun>),
    /// A task's pending writes: thread, namespace, checkpoint and task, then the writes.
    Writes([String; 4], Vec<PendingWrite>),
    /// Deletes a thread.
    Delete(String),
}

/// The answer to a write: its result, or the payload of a panic while it ran.
pub(super) type Outcome = Result<Result<(), SaverError>, Box<dyn Any + Send>>;

/// What the writer has done, for tests and diagnostics.
#[derive(Debug, Default)]
pub(super) struct Stats {
    /// Write transactions committed.
    pub(super) transactions: AtomicU64,
    /// WAL checkpoints run.
    pub(super) wal_checkpoints: AtomicU64,
    /// The names of the threads that ran write transactions (the writer's alone, by design).
    #[cfg(test)]
    pub(super) threads: Mutex<Vec<String>>,
}

/// The caller's side: the channel to the thread. Dropping the last one closes the channel; the
/// thread then closes the file's connections and ends.
#[derive(Debug)]
pub(super) struct Handle {
    requests: mpsc::Sender<Request>,
    path: PathBuf,
    #[cfg_attr(not(test), allow(dead_code))]
    pub(super) stats: Arc<Stats>,
}

/// The error of a write the writer did not answer: it stopped.
fn stopped(path: &Path) -> SaverError {
    SaverError::backend(
        format!(
            "sqlite checkpoint store `{}` failed: its writer thread has stopped, so nothing more can be \
             written through this saver (open the file again)",
            path.display()
        ),
        "the writer thread stopped",
    )
}

impl Handle {
    /// Starts the writer on `conn`, the file's migrated write connection; `readers` is the
    /// pool of idle read connections, which the writer closes before its own when it ends (the
    /// last connection to close checkpoints the log, on this thread rather than a caller's).
    pub(super) fn start(
        conn: Connection,
        path: PathBuf,
        wal_pages: u64,
        readers: Arc<Mutex<Vec<Connection>>>,
    ) -> Result<Self, SaverError> {
        let (requests, queue) = mpsc::channel(QUEUE);
        let (ready, started) = std::sync::mpsc::sync_channel(1);
        let stats = Arc::new(Stats::default());
        let shared = (stats.clone(), path.clone());
        std::thread::Builder::new()
            .name("weir-sqlite-writer".into())
            .spawn(move || {
                let (stats, path) = shared;
                serve(&conn, &path, wal_pages, &stats, queue, ready);
                // Every request is answered. The readers close first, the writer last.
                drop(std::mem::take(&mut *readers.lock().unwrap_or_else(|p| p.into_inner())));
                drop(conn);
            })
            .map_err(|e| SaverError::backend(format!("sqlite checkpoint store `{}` failed", path.display()), e))?;
        match started.recv() {
            Ok(Ok(())) => Ok(Handle { requests, path, stats }),
            Ok(Err(e)) => Err(backend(&path, e)),
            Err(_) => Err(stopped(&path)),
        }
    }

    /// Hands `work` to the writer and waits for its answer; a panic of the writer while it ran
    /// the work resumes here.
    pub(super) async fn write(&self, work: Work) -> Result<(), SaverError> {
        let (answer, answered) = oneshot::channel();
        if self.requests.send(Request::Write(work, answer)).await.is_err() {
            return Err(stopped(&self.path));
        }
        match answered.await {
            Ok(Ok(result)) => result,
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Err(_) => Err(stopped(&self.path)),
        }
    }

    /// Sends a test request.
    #[cfg(test)]
    pub(super) async fn send(&self, request: Request) {
        let _ = self.requests.send(request).await;
    }

    /// How many requests wait in the queue.
    #[cfg(test)]
    pub(super) fn queued(&self) -> usize {
        self.requests.max_capacity() - self.requests.capacity()
    }
}

/// The writer thread's body: compiles the statements, says so on `ready`, then serves the queue
/// until it is closed.
fn serve(
    conn: &Connection,
    path: &Path,
    wal_pages: u64,
    stats: &Stats,
    mut queue: mpsc::Receiver<Request>,
    ready: std::sync::mpsc::SyncSender<rusqlite::Result<()>>,
) {
    let mut writer = match Writer::new(conn, path, stats, wal_pages) {
        Ok(writer) => {
            let _ = ready.send(Ok(()));
            writer
        }
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let mut batch = Vec::with_capacity(16);
    while let Some(first) = queue.blocking_recv() {
        batch.push(first);
        while batch.len() < BATCH {
            match queue.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        for request in batch.drain(..) {
            match request {
                Request::Write(work, answer) => writer.jobs.push((work, answer)),
                #[cfg(test)]
                Request::Hold(holding, release) => {
                    writer.commit_jobs();
                    let _ = holding.send(());
                    let _ = release.recv();
                }
                #[cfg(test)]
                Request::Crash => panic!("the writer crashed, as a test asked"),
            }
        }
        writer.commit_jobs();
        writer.checkpoint_wal(queue.is_empty());
    }
}

/// The thread, namespace and head of the last put stored; with the file's data version after
/// the commit that stored it, when that is known.
struct LastPut {
    thread: Arc<str>,
    ns: Arc<str>,
    head: Arc<str>,
    version: Option<u32>,
}

/// The write connection's statements, compiled once, and the writer's state.
struct Writer<'c> {
    conn: &'c Connection,
    path: &'c Path,
    stats: &'c Stats,
    /// `BEGIN IMMEDIATE`, `COMMIT`, `ROLLBACK`.
    begin: Statement<'c>,
    commit: Statement<'c>,
    rollback: Statement<'c>,
    /// `SAVEPOINT`, `RELEASE` and `ROLLBACK TO` of one request in a batch of several.
    savepoint: Statement<'c>,
    release: Statement<'c>,
    rollback_to: Statement<'c>,
    inserts: Inserts<'c>,
    head: Statement<'c>,
    blob_index_of: Statement<'c>,
    checkpoint_exists: Statement<'c>,
    delete_task_writes: Statement<'c>,
    insert_write: Statement<'c>,
    delete_writes: Statement<'c>,
    delete_checkpoints: Statement<'c>,
    /// The writes of the batch under way, and their answers.
    jobs: Vec<(Work, oneshot::Sender<Outcome>)>,
    /// Their outcomes, in order, once run.
    outcomes: Vec<Outcome>,
    /// The last put stored: inside a transaction, the head of its thread and namespace; across
    /// transactions, while the file's data version says nothing was written since.
    last_put: Option<LastPut>,
    /// About how many pages the log has grown by since the last checkpoint, and how many make
    /// a checkpoint due (0: never).
    wal_grown: u64,
    wal_pages: u64,
}

/// The query of a thread and namespace's head: its greatest checkpoint id, from the key index.
pub(super) const HEAD: &str = "SELECT id FROM checkpoints WHERE thread_id = ?1 AND ns = ?2 ORDER BY id DESC LIMIT 1";

impl<'c> Writer<'c> {
    fn new(conn: &'c Connection, path: &'c Path, stats: &'c Stats, wal_pages: u64) -> rusqlite::Result<Self> {
        // The writer checkpoints the log itself (`checkpoint_wal`), never inside a commit.
        conn.pragma_update(None, "wal_autocheckpoint", 0)?;
        let prepare = |sql: &str| conn.prepare(sql);
        Ok(Writer {
            conn,
            path,
            stats,
            begin: prepare("BEGIN IMMEDIATE")?,
            commit: prepare("COMMIT")?,
            rollback: prepare("ROLLBACK")?,
            savepoint: prepare("SAVEPOINT request")?,
            release: prepare("RELEASE request")?,
            rollback_to: prepare("ROLLBACK TO request")?,
            inserts: Inserts {
                one: prepare(&rows::insert_sql(1))?,
                chunk: prepare(&rows::insert_sql(rows::CHUNK))?,
            },
            head: prepare(HEAD)?,
            blob_index_of: prepare(
                "SELECT blob_index, LENGTH(blob_bytes) FROM checkpoints WHERE thread_id = ?1 AND ns = ?2 AND id = ?3",
            )?,
            checkpoint_exists: prepare("SELECT 1 FROM checkpoints WHERE thread_id = ?1 AND ns = ?2 AND id = ?3")?,
            delete_task_writes: prepare(
                "DELETE FROM writes WHERE thread_id = ?1 AND ns = ?2 AND checkpoint_id = ?3 AND task_id = ?4",
            )?,
            insert_write: prepare(
                "INSERT INTO writes (thread_id, ns, checkpoint_id, task_id, idx, task_path, channel, bytes) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?,
            delete_writes: prepare("DELETE FROM writes WHERE thread_id = ?1")?,
            delete_checkpoints: prepare("DELETE FROM checkpoints WHERE thread_id = ?1")?,
            jobs: Vec::with_capacity(16),
            outcomes: Vec::with_capacity(16),
            last_put: None,
            wal_grown: 0,
            wal_pages,
        })
    }

    /// Runs the queued jobs in one transaction and answers each once it is committed: a job
    /// that fails is rolled back alone (to its savepoint) and answered with its error; a
    /// transaction that cannot begin or commit answers every job with that error.
    fn commit_jobs(&mut self) {
        if self.jobs.is_empty() {
            return;
        }
        #[cfg(test)]
        self.stats
            .threads
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(std::thread::current().name().unwrap_or("").to_owned());
        let committed = self.begin.execute([]).and_then(|_| {
            if self
                .last_put
                .as_ref()
                .is_some_and(|last| last.version != data_version(self.conn))
            {
                self.last_put = None;
            }
            self.run_jobs()
        });
        match committed {
            Ok(true) => {
                self.stats.transactions.fetch_add(1, Ordering::Relaxed);
                let version = data_version(self.conn);
                if let Some(last) = &mut self.last_put {
                    last.version = version;
                }
            }
            // A lone job failed: its answer says why, and its transaction stores nothing.
            Ok(false) => self.abandon(),
            Err(e) => {
                // Nothing of the batch is stored: every job that did its part, or did not get
                // to run, hears why.
                self.abandon();
                self.outcomes.resize_with(self.jobs.len(), || Ok(Ok(())));
                let message = e.to_string();
                let mut first = Some(e);
                for outcome in self.outcomes.iter_mut().filter(|o| matches!(o, Ok(Ok(())))) {
                    *outcome = Ok(Err(match first.take() {
                        Some(e) => backend(self.path, e),
                        None => super::backend_text(self.path, message.clone()),
                    }));
                }
            }
        }
        for ((_, answer), outcome) in self.jobs.drain(..).zip(self.outcomes.drain(..)) {
            let _ = answer.send(outcome);
        }
    }

    /// Runs each job, under a savepoint of its own when the batch has several, keeps its
    /// outcome, and commits unless the batch is a lone job that failed (`Ok(false)`). An error
    /// is SQLite failing the transaction itself; every job not yet run is answered with it.
    fn run_jobs(&mut self) -> rusqlite::Result<bool> {
        let many = self.jobs.len() > 1;
        let jobs = std::mem::take(&mut self.jobs);
        let ran = jobs.iter().try_for_each(|(work, _)| -> rusqlite::Result<()> {
            if many {
                self.savepoint.execute([])?;
            }
            let outcome = catch_unwind(AssertUnwindSafe(|| self.run(work)));
            let stored = matches!(outcome, Ok(Ok(())));
            self.outcomes
                .push(outcome.map(|done| done.map_err(|e| e.into_saver_error(self.path))));
            if many && !stored {
                self.rollback_to.execute([])?;
            }
            if many {
                self.release.execute([])?;
            }
            Ok(())
        });
        // Every job has an outcome, a success for those not run, which the error replaces.
        self.outcomes.resize_with(jobs.len(), || Ok(Ok(())));
        self.jobs = jobs;
        ran?;
        if !many && !matches!(self.outcomes[0], Ok(Ok(()))) {
            return Ok(false);
        }
        self.commit.execute([])?;
        Ok(true)
    }

    /// Rolls back the transaction under way, if any; the last put is forgotten.
    fn abandon(&mut self) {
        self.last_put = None;
        if !self.conn.is_autocommit() {
            // A failed rollback leaves SQLite to roll back when the connection closes.
            let _ = self.rollback.execute([]);
        }
    }

    /// Runs one job inside the batch's transaction.
    fn run(&mut self, work: &Work) -> Result<(), Failure> {
        match work {
            Work::Put(records, expected, made) => {
                self.put(records, expected.as_deref(), *made)?;
                let bytes: usize = records
                    .iter()
                    .map(|r| r.body.len() + r.blobs.iter().map(|b| b.bytes.len()).sum::<usize>())
                    .sum();
                self.wal_grown += PAGES_PER_COMMIT + (bytes / 4096) as u64;
                Ok(())
            }
            Work::Writes([thread, ns, checkpoint, task], writes) => {
                self.wal_grown += PAGES_PER_COMMIT;
                self.put_writes(thread, ns, checkpoint, task, writes)
            }
            Work::Delete(thread) => {
                self.last_put = None;
                self.wal_grown += PAGES_PER_COMMIT;
                self.delete_writes.execute([thread])?;
                self.delete_checkpoints.execute([thread])?;
                Ok(())
            }
        }
    }

    /// Stores `records` as successive heads of their thread and namespace, in the transaction
    /// under way: all of them or none.
    fn put(
        &mut self,
        records: &[CheckpointRecord],
        expected: Option<&str>,
        made: Option<MadeByRun>,
    ) -> Result<(), Failure> {
        let needed = check::put(records, expected, made)?;
        let Some(first) = records.first() else { return Ok(()) };
        let (thread, ns) = (&first.thread_id, &first.ns);
        let head: Option<Arc<str>> = match &self.last_put {
            Some(last) if last.thread == *thread && last.ns == *ns => Some(last.head.clone()),
            _ => self
                .head
                .query_row(params![thread, ns], |r| r.get::<_, String>(0))
                .optional()?
                .map(Arc::from),
        };
        if head.as_deref() != expected {
            return Err(SaverError::head_moved(thread, ns, expected, head.as_deref()).into());
        }
        // Every base the batch does not store itself must be stored already: checked before
        // anything is written.
        for &check::Base { record, channel, at } in &needed {
            let record = &records[record];
            let mut rows = self.blob_index_of.query(params![thread, ns, at])?;
            let stored = match rows.next()? {
                None => false,
                Some(row) => {
                    let (index, bytes) = (row.get_ref(0)?.as_blob()?, row.get::<_, i64>(1)? as usize);
                    let entries = rows::row_index(thread, &record.id, at, index, bytes)?;
                    entries.iter().any(|e| e.channel == channel)
                }
            };
            if !stored {
                return Err(check::missing_base(record, channel, at).into());
            }
        }
        drop(needed);
        self.inserts.insert(records)?;
        let last = records.last().expect("not empty");
        self.last_put = Some(LastPut {
            thread: thread.clone(),
            ns: ns.clone(),
            head: last.id.clone(),
            version: None,
        });
        Ok(())
    }

    /// Stores the writes of a task against a stored checkpoint, replacing its earlier ones.
    fn put_writes(
        &mut self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: &str,
        task_id: &str,
        writes: &[PendingWrite],
    ) -> Result<(), Failure> {
        check::writes(thread_id, checkpoint_id, task_id, writes)?;
        if !self.checkpoint_exists.exists(params![thread_id, ns, checkpoint_id])? {
            return Err(check::unknown_checkpoint(thread_id, ns, checkpoint_id).into());
        }
        self.delete_task_writes
            .execute(params![thread_id, ns, checkpoint_id, task_id])?;
        for w in writes {
            self.insert_write.execute(params![
                thread_id,
                ns,
                checkpoint_id,
                task_id,
                w.idx,
                w.task_path,
                w.channel,
                w.bytes
            ])?;
        }
        Ok(())
    }

    /// Checkpoints the log when it has grown by the page budget and nothing is queued
    /// (`idle`), or by four budgets whatever is queued. Passive: it copies what no reader still
    /// needs and waits for nobody; what it could not copy counts towards the next one.
    fn checkpoint_wal(&mut self, idle: bool) {
        let due = self.wal_pages.saturating_mul(if idle { 1 } else { 4 });
        if self.wal_pages == 0 || self.wal_grown < due {
            return;
        }
        let done = self.conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
            Ok((r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
        });
        match done {
            Ok((log, copied)) => {
                self.stats.wal_checkpoints.fetch_add(1, Ordering::Relaxed);
                self.wal_grown = log.saturating_sub(copied).max(0) as u64;
            }
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = %e, "sqlite saver could not checkpoint its log");
                self.wal_grown = 0;
            }
        }
    }
}

/// The data version of `conn`'s file: it changes with every commit to the file, this
/// connection's and other processes' alike (SQLite's `SQLITE_FCNTL_DATA_VERSION`; another
/// process's commit shows once a transaction of this connection has begun). `None` when SQLite
/// cannot tell.
fn data_version(conn: &Connection) -> Option<u32> {
    let mut version = 0;
    conn.file_control(
        Some(rusqlite::MAIN_DB),
        rusqlite::FileControl::DataVersion(&mut version),
    )
    .ok()
    .map(|()| version)
}
