//! A batch of writes in one transaction, on the file's write connection: whoever holds the
//! connection ([`Core`]) runs it, the writer thread for what is queued, or a caller that stores
//! its own put directly (see [`super::writer`]).
//!
//! Each request runs under a savepoint of its own when the batch has several, so one refused
//! put rolls back alone; the outcomes are known once the batch is committed. The jobs of the
//! file's other tables ([`Jobs`]) queued with them run first, in the same transaction.
//!
//! The statements come from the connection's statement cache, each taken once per batch and
//! held until the batch ends ([`Statements`]): a batch of a thousand puts looks each up once,
//! not a thousand times (a lookup costs about 1.4 k instructions).

use super::jobs::Jobs;
use super::retained::Memo;
use super::rows;
use super::{Failure, SaverError};
use crate::checkpoint::{check, copy, CheckpointRecord, MadeByRun, PendingWrite, Pruned, Retention, TaskWrites};
use crate::sqlite::WriteGate;
use rusqlite::{params, CachedStatement, Connection, OptionalExtension, Statement};
use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

/// The pages a commit writes to the log besides its rows' bytes: a table leaf, an index leaf,
/// and their parents, about.
const PAGES_PER_COMMIT: u64 = 3;

/// A write.
pub(super) enum Work {
    /// Checkpoints to store as successive heads, the head the first follows, whether a run
    /// made them, and pending writes of tasks of their thread to store after them (against
    /// them, or checkpoints stored before).
    Put(
        Vec<CheckpointRecord>,
        Option<Box<str>>,
        Option<MadeByRun>,
        Vec<TaskWrites>,
    ),
    /// A task's pending writes: thread, namespace, checkpoint and task, then the writes.
    Writes([String; 4], Vec<PendingWrite>),
    /// The pending writes of several tasks of a thread, stored in order: all or none.
    WritesOfTasks(String, Vec<TaskWrites>),
    /// Deletes a thread.
    Delete(String),
    /// Deletes a thread's checkpoints after one (`[thread, checkpoint id]`) and their writes.
    DeleteAfter([String; 2]),
    /// Copies a thread (`from`, `to`).
    Copy([String; 2]),
    /// Prunes a thread by a policy; what it removed goes to the slot.
    Prune(String, Retention, Arc<Mutex<Pruned>>),
}

/// The outcome of a write: its result, or the payload of a panic while it ran.
pub(super) type Outcome = Result<Result<(), SaverError>, Box<dyn Any + Send>>;

/// What the writes have done, for tests and diagnostics.
#[derive(Debug, Default)]
pub(super) struct Stats {
    /// Write transactions committed.
    pub(super) transactions: AtomicU64,
    /// WAL checkpoints run.
    pub(super) wal_checkpoints: AtomicU64,
    /// What prunes read of the chains of blobs, in rows: one a link (see [`super::retained`]).
    pub(super) links_read: AtomicU64,
    /// The names of the threads that ran write transactions.
    #[cfg(test)]
    pub(super) threads: std::sync::Mutex<Vec<String>>,
}

/// The thread, namespace and head of the last put stored; with the file's data version after
/// the commit that stored it, when that is known.
struct LastPut {
    thread: Arc<str>,
    ns: Arc<str>,
    head: Arc<str>,
    version: Option<u32>,
}

/// The file's write connection, and what its writes keep between batches.
pub(super) struct Core {
    conn: Connection,
    /// The last put stored: inside a transaction, the head of its thread and namespace; across
    /// transactions, while the file's data version says nothing was written since.
    last_put: Option<LastPut>,
    /// About how many pages the log has grown by since the last checkpoint, and how many make
    /// a checkpoint due (0: never).
    wal_grown: u64,
    wal_pages: u64,
    /// The blobs each pruned thread retains, as the last prunes left them.
    retained: Memo,
    /// Held around each transaction: the process's other writers to the file wait on it.
    gate: WriteGate,
}

/// The query of a thread and namespace's head: its greatest checkpoint id, from the key index.
pub(super) const HEAD: &str = "SELECT id FROM checkpoints WHERE thread_id = ?1 AND ns = ?2 ORDER BY id DESC LIMIT 1";

/// The statements of a batch, by name.
#[derive(Clone, Copy)]
enum Sql {
    Begin,
    Commit,
    Savepoint,
    Release,
    RollbackTo,
    InsertOne,
    InsertChunk,
    Head,
    BlobIndexOf,
    CheckpointExists,
    DeleteTaskWrites,
    InsertWrite,
    DeleteWrites,
    DeleteCheckpoints,
}

/// How many statements [`Sql`] names.
const STATEMENTS: usize = 14;

/// The texts of the checkpoint inserts, of one row and of [`rows::CHUNK`] rows.
static INSERTS: LazyLock<[String; 2]> = LazyLock::new(|| [rows::insert_sql(1), rows::insert_sql(rows::CHUNK)]);

impl Sql {
    fn text(self) -> &'static str {
        match self {
            Sql::Begin => "BEGIN IMMEDIATE",
            Sql::Commit => "COMMIT",
            Sql::Savepoint => "SAVEPOINT request",
            Sql::Release => "RELEASE request",
            Sql::RollbackTo => "ROLLBACK TO request",
            Sql::InsertOne => &INSERTS[0],
            Sql::InsertChunk => &INSERTS[1],
            Sql::Head => HEAD,
            Sql::BlobIndexOf => {
                "SELECT blob_index, LENGTH(blob_bytes) FROM checkpoints WHERE thread_id = ?1 AND ns = ?2 AND id = ?3"
            }
            Sql::CheckpointExists => "SELECT 1 FROM checkpoints WHERE thread_id = ?1 AND ns = ?2 AND id = ?3",
            Sql::DeleteTaskWrites => {
                "DELETE FROM writes WHERE thread_id = ?1 AND ns = ?2 AND checkpoint_id = ?3 AND task_id = ?4"
            }
            Sql::InsertWrite => {
                "INSERT INTO writes (thread_id, ns, checkpoint_id, task_id, idx, task_path, channel, bytes) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
            }
            Sql::DeleteWrites => "DELETE FROM writes WHERE thread_id = ?1",
            Sql::DeleteCheckpoints => "DELETE FROM checkpoints WHERE thread_id = ?1",
        }
    }
}

/// The statements a batch has used, each taken from the statement cache on first use and given
/// back when the batch ends.
struct Statements<'c> {
    conn: &'c Connection,
    held: [Option<CachedStatement<'c>>; STATEMENTS],
}

impl<'c> Statements<'c> {
    fn get(&mut self, sql: Sql) -> rusqlite::Result<&mut Statement<'c>> {
        let slot = &mut self.held[sql as usize];
        if slot.is_none() {
            *slot = Some(self.conn.prepare_cached(sql.text())?);
        }
        Ok(slot.as_mut().expect("just prepared"))
    }
}

impl Core {
    /// The write connection `conn`, checkpointing its log after about `wal_pages` pages (0:
    /// never). SQLite's automatic checkpoint is turned off: a commit never runs one.
    pub(super) fn new(conn: Connection, wal_pages: u64, gate: WriteGate) -> rusqlite::Result<Self> {
        conn.pragma_update(None, "wal_autocheckpoint", 0)?;
        conn.set_prepared_statement_cache_capacity(2 * STATEMENTS);
        Ok(Core {
            conn,
            last_put: None,
            wal_grown: 0,
            wal_pages,
            retained: Memo::default(),
            gate,
        })
    }

    /// Runs `jobs` then `works` in one transaction and appends the works' outcomes to
    /// `outcomes`, in order: a write that fails is rolled back alone (to its savepoint) and its
    /// outcome says why; a transaction that cannot begin or commit gives every write that error
    /// (and every job, in `jobs.failed`; when it cannot begin, each job runs alone, as it would
    /// on a connection of its own).
    pub(super) fn commit(
        &mut self,
        jobs: &mut Jobs,
        works: &[Work],
        path: &Path,
        stats: &Stats,
        outcomes: &mut Vec<Outcome>,
    ) {
        if works.is_empty() && jobs.queued.is_empty() {
            return;
        }
        #[cfg(test)]
        stats
            .threads
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(std::thread::current().name().unwrap_or("").to_owned());
        let start = outcomes.len();
        let gate = self.gate.clone();
        let _held = gate.enter();
        let many = works.len() + jobs.queued.len() > 1;
        let began = self.begin();
        let in_batch = began.is_ok();
        let ran = jobs.run(&mut self.conn, in_batch);
        if in_batch {
            self.wal_grown += PAGES_PER_COMMIT * ran as u64;
        }
        let mut batch = Batch {
            statements: Statements {
                conn: &self.conn,
                held: std::array::from_fn(|_| None),
            },
            last_put: &mut self.last_put,
            wal_grown: &mut self.wal_grown,
            retained: &mut self.retained,
            stats,
            path,
        };
        let committed = began.and_then(|()| batch.run_all(works, outcomes, many));
        let conn = &self.conn;
        drop(batch);
        match committed {
            Ok(true) => {
                stats.transactions.fetch_add(1, Ordering::Relaxed);
                let version = data_version(conn);
                if let Some(last) = &mut self.last_put {
                    last.version = version;
                }
                self.retained.committed(version);
            }
            // A lone write failed: its outcome says why, and its transaction stores nothing.
            Ok(false) => self.abandon(),
            Err(e) => {
                // Nothing of the batch is stored: every write that did its part, or did not
                // get to run, hears why.
                self.abandon();
                outcomes.resize_with(start + works.len(), || Ok(Ok(())));
                let message = e.to_string();
                if in_batch && !jobs.answers.is_empty() {
                    jobs.failed = Some(format!(
                        "committing {} queued writes failed: {message}",
                        jobs.answers.len()
                    ));
                }
                let mut first = Some(e);
                for outcome in outcomes[start..].iter_mut().filter(|o| matches!(o, Ok(Ok(())))) {
                    *outcome = Ok(Err(match first.take() {
                        Some(e) => super::backend(path, e),
                        None => super::backend_text(path, message.clone()),
                    }));
                }
            }
        }
    }

    /// Begins the batch's transaction, and forgets the last put if another connection wrote
    /// since.
    fn begin(&mut self) -> rusqlite::Result<()> {
        self.conn.prepare_cached(Sql::Begin.text())?.execute([])?;
        let version = data_version(&self.conn);
        if self.last_put.as_ref().is_some_and(|last| last.version != version) {
            self.last_put = None;
        }
        self.retained.begin(version);
        Ok(())
    }

    /// Rolls back the transaction under way, if any; the last put is forgotten.
    fn abandon(&mut self) {
        self.last_put = None;
        self.retained.abandoned();
        if !self.conn.is_autocommit() {
            // A failed rollback leaves SQLite to roll back when the connection closes.
            let _ = self.conn.execute_batch("ROLLBACK");
        }
    }

    /// Whether the log has grown by the page budget since its last checkpoint (by four
    /// budgets, when writes are queued: `idle` false).
    pub(super) fn wal_due(&self, idle: bool) -> bool {
        let due = self.wal_pages.saturating_mul(if idle { 1 } else { 4 });
        self.wal_pages != 0 && self.wal_grown >= due
    }

    /// Checkpoints the log when [`wal_due`](Self::wal_due). Passive: it copies what no reader
    /// still needs and waits for nobody; what it could not copy counts towards the next one.
    pub(super) fn checkpoint_wal(&mut self, idle: bool, path: &Path, stats: &Stats) {
        if !self.wal_due(idle) {
            return;
        }
        let done = self.conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
            Ok((r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
        });
        match done {
            Ok((log, copied)) => {
                stats.wal_checkpoints.fetch_add(1, Ordering::Relaxed);
                self.wal_grown = log.saturating_sub(copied).max(0) as u64;
            }
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "sqlite saver could not checkpoint its log");
                self.wal_grown = 0;
            }
        }
    }
}

/// One transaction under way: its statements, and the core's state it updates.
struct Batch<'c> {
    statements: Statements<'c>,
    last_put: &'c mut Option<LastPut>,
    wal_grown: &'c mut u64,
    retained: &'c mut Memo,
    stats: &'c Stats,
    path: &'c Path,
}

impl Batch<'_> {
    /// Runs each write in the transaction under way (under a savepoint of its own when the
    /// batch has several, `many`), keeps its outcome, and commits unless the batch is a lone
    /// write that failed (`Ok(false)`). An error is SQLite failing the transaction itself.
    fn run_all(&mut self, works: &[Work], outcomes: &mut Vec<Outcome>, many: bool) -> rusqlite::Result<bool> {
        for work in works {
            if many {
                self.statements.get(Sql::Savepoint)?.execute([])?;
            }
            let outcome = catch_unwind(AssertUnwindSafe(|| self.run(work)));
            let stored = matches!(outcome, Ok(Ok(())));
            outcomes.push(outcome.map(|done| done.map_err(|e| e.into_saver_error(self.path))));
            if many && !stored {
                self.statements.get(Sql::RollbackTo)?.execute([])?;
            }
            if many {
                self.statements.get(Sql::Release)?.execute([])?;
            }
        }
        if !many && !works.is_empty() && !matches!(outcomes.last(), Some(Ok(Ok(())))) {
            return Ok(false);
        }
        self.statements.get(Sql::Commit)?.execute([])?;
        Ok(true)
    }

    /// Stores the pending writes of several tasks of `thread`, in order.
    fn writes_of_tasks(&mut self, thread: &str, tasks: &[TaskWrites]) -> Result<(), Failure> {
        // Rows of a table and of its key's index: about twice their bytes.
        let bytes: usize = tasks
            .iter()
            .flat_map(|t| &t.rows)
            .map(|w| 2 * (w.bytes.len() + w.task_id.len() + w.task_path.len() + 64))
            .sum();
        *self.wal_grown += PAGES_PER_COMMIT + (bytes / 4096) as u64;
        // The checkpoint they belong to is looked up once for all its tasks.
        let mut known: Option<(&str, &str)> = None;
        for t in tasks {
            let at = (&*t.ns, &*t.checkpoint);
            if known != Some(at) {
                self.checkpoint_exists(thread, at.0, at.1)?;
                known = Some(at);
            }
            self.replace_writes(thread, at.0, at.1, &t.task_id, &t.rows)?;
        }
        Ok(())
    }

    /// Runs one write inside the batch's transaction.
    fn run(&mut self, work: &Work) -> Result<(), Failure> {
        match work {
            Work::Put(records, expected, made, writes) => {
                self.put(records, expected.as_deref(), *made)?;
                let bytes: usize = records
                    .iter()
                    .map(|r| r.body.len() + r.blobs.iter().map(|b| b.bytes.len()).sum::<usize>())
                    .sum();
                *self.wal_grown += PAGES_PER_COMMIT + (bytes / 4096) as u64;
                match (writes.is_empty(), records.first()) {
                    (false, Some(first)) => self.writes_of_tasks(&first.thread_id, writes),
                    _ => Ok(()),
                }
            }
            Work::Writes([thread, ns, checkpoint, task], writes) => {
                *self.wal_grown += PAGES_PER_COMMIT;
                self.put_writes(thread, ns, checkpoint, task, writes)
            }
            Work::WritesOfTasks(thread, tasks) => self.writes_of_tasks(thread, tasks),
            Work::Delete(thread) => {
                *self.last_put = None;
                *self.wal_grown += PAGES_PER_COMMIT;
                self.statements.get(Sql::DeleteWrites)?.execute([thread])?;
                self.statements.get(Sql::DeleteCheckpoints)?.execute([thread])?;
                self.retained.take(thread);
                super::prune::forget(self.statements.conn, thread)?;
                Ok(())
            }
            Work::Prune(thread, policy, out) => {
                *self.last_put = None;
                *self.wal_grown += PAGES_PER_COMMIT;
                let known = self.retained.take(thread);
                let conn = self.statements.conn;
                let links_read = &self.stats.links_read;
                let (pruned, retained) = super::prune::prune(conn, self.path, thread, policy, known, links_read)?;
                if let Some(retained) = retained {
                    self.retained.stage(thread.clone(), retained);
                }
                *out.lock().unwrap_or_else(|p| p.into_inner()) = pruned;
                Ok(())
            }
            Work::DeleteAfter([thread, after]) => {
                *self.last_put = None;
                *self.wal_grown += PAGES_PER_COMMIT;
                let conn = self.statements.conn;
                conn.prepare_cached("DELETE FROM writes WHERE thread_id = ?1 AND checkpoint_id > ?2")?
                    .execute([thread, after])?;
                conn.prepare_cached("DELETE FROM checkpoints WHERE thread_id = ?1 AND id > ?2")?
                    .execute([thread, after])?;
                Ok(())
            }
            Work::Copy([from, to]) => {
                *self.last_put = None;
                *self.wal_grown += PAGES_PER_COMMIT;
                self.retained.take(to);
                self.copy(from, to)
            }
        }
    }

    /// Copies thread `from` to `to`, which has no checkpoint, in the transaction under way.
    fn copy(&mut self, from: &str, to: &str) -> Result<(), Failure> {
        let conn = self.statements.conn;
        let has = |thread: &str| -> rusqlite::Result<bool> {
            conn.prepare_cached("SELECT 1 FROM checkpoints WHERE thread_id = ?1 LIMIT 1")?
                .query_row([thread], |_| Ok(()))
                .optional()
                .map(|found| found.is_some())
        };
        if from == to {
            return Err(Failure::Saver(copy::same_thread(from)));
        }
        if has(to)? {
            return Err(Failure::Saver(copy::target_taken(from, to)));
        }
        if !has(from)? {
            return Err(Failure::Saver(copy::source_missing(from)));
        }
        conn.prepare_cached(
            "INSERT INTO checkpoints (thread_id, ns, id, parent_id, step, source, writes, metadata, created_at, \
             channels, body, blob_index, blob_bytes) \
             SELECT ?2, ns, id, parent_id, step, source, writes, metadata, created_at, channels, body, blob_index, \
             blob_bytes FROM checkpoints WHERE thread_id = ?1",
        )?
        .execute([from, to])?;
        conn.prepare_cached(
            "INSERT INTO writes (thread_id, ns, checkpoint_id, task_id, idx, task_path, channel, bytes) \
             SELECT ?2, ns, checkpoint_id, task_id, idx, task_path, channel, bytes FROM writes WHERE thread_id = ?1",
        )?
        .execute([from, to])?;
        super::prune::copy(conn, from, to)?;
        Ok(())
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
        let head: Option<Arc<str>> = match &*self.last_put {
            Some(last) if last.thread == *thread && last.ns == *ns => Some(last.head.clone()),
            _ => self
                .statements
                .get(Sql::Head)?
                .query_row(params![thread, ns], |r| r.get::<_, String>(0))
                .optional()?
                .map(Arc::from),
        };
        if head.as_deref() != expected {
            return Err(SaverError::head_moved(thread, ns, expected, head.as_deref()).into());
        }
        // Every base the batch does not store itself must be stored already: checked before
        // anything is written.
        let conn = self.statements.conn;
        for &check::Base { record, channel, at } in &needed {
            let record = &records[record];
            let mut rows = self.statements.get(Sql::BlobIndexOf)?.query(params![thread, ns, at])?;
            let stored = match rows.next()? {
                None => super::prune::retained_blob(conn, thread, ns, at, channel)?.is_some(),
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
        let split = records.len() - records.len() % rows::CHUNK;
        if split > 0 {
            rows::insert(self.statements.get(Sql::InsertChunk)?, rows::CHUNK, &records[..split])?;
        }
        if split < records.len() {
            rows::insert(self.statements.get(Sql::InsertOne)?, 1, &records[split..])?;
        }
        let last = records.last().expect("not empty");
        *self.last_put = Some(LastPut {
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
        self.checkpoint_exists(thread_id, ns, checkpoint_id)?;
        self.replace_writes(thread_id, ns, checkpoint_id, task_id, writes)
    }

    /// Fails unless the checkpoint is stored.
    fn checkpoint_exists(&mut self, thread_id: &str, ns: &str, checkpoint_id: &str) -> Result<(), Failure> {
        if !self
            .statements
            .get(Sql::CheckpointExists)?
            .exists(params![thread_id, ns, checkpoint_id])?
        {
            return Err(check::unknown_checkpoint(thread_id, ns, checkpoint_id).into());
        }
        Ok(())
    }

    /// Replaces the task's writes on a stored checkpoint with `writes`.
    fn replace_writes(
        &mut self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: &str,
        task_id: &str,
        writes: &[PendingWrite],
    ) -> Result<(), Failure> {
        check::writes(thread_id, checkpoint_id, task_id, writes)?;
        self.statements
            .get(Sql::DeleteTaskWrites)?
            .execute(params![thread_id, ns, checkpoint_id, task_id])?;
        let insert = self.statements.get(Sql::InsertWrite)?;
        for w in writes {
            insert.execute(params![
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
