//! The SQLite saver: the embedded default.
//!
//! One file holds every thread. The file is in WAL mode, so readers never wait for the writer,
//! and several processes can share it: a write waits up to the busy timeout for another
//! process's write to finish.
//!
//! No SQLite call runs on a tokio worker. Within a process, writes go to one thread that owns
//! the write connection ([`writer`]): it stores what is queued in one transaction ([`batch`]),
//! and runs the log's checkpoints itself, outside any commit. A lone put with nothing queued
//! (every step of a run with synchronous durability) is stored by its caller instead, on a
//! thread tokio lends for blocking (`block_in_place`), so it crosses no thread. Reads run on a
//! thread tokio lends too (on a current-thread runtime, on its blocking pool), each on a pooled
//! read connection and in one read transaction ([`read`]).
//!
//! A put is one write transaction that writes two B-trees: it reads the head (the thread's
//! greatest checkpoint id, from the key index), then adds one row to `checkpoints` (a rowid
//! table and its key index) holding the record and the blobs stored under it ([`rows`]).
//! A thread has no head row to move: ids increase (see [`Checkpointer::put`]), so the head is
//! the greatest id, and a put's `BEGIN IMMEDIATE` keeps another writer out between the read and
//! the insert. A put that follows one to the same thread skips the read while the file's data
//! version says nothing has been written since.
//!
//! Other tables in the same file (the server's) write through the same connection, as jobs
//! ([`WriteJob`], [`SqliteSaver::queue_job`]) that share the writer's batches: two write
//! connections to one file would take turns at its lock, and each commit of one would empty the
//! other's page cache.
//!
//! The schema's version is the file's `PRAGMA user_version`; [`schema`] lists the steps from
//! each version to the next. A file with a newer version than this weir knows is refused and left
//! untouched.

mod batch;
mod jobs;
mod prune;
#[cfg(test)]
mod prune_tests;
mod read;
mod retained;
mod rows;
mod schema;
#[cfg(test)]
mod tests;
mod writer;

use super::{
    CheckpointRecord, Checkpointer, Held, Loaded, MadeByRun, PendingWrite, Pruned, Retention, SaverError, TaskWrites,
    Usage,
};
use batch::Work;
use futures::future::{BoxFuture, FutureExt};
use rows::{pack_bytes, pack_index};
use rusqlite::{Connection, OpenFlags};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;

/// How many pages the log grows by, about, before the writer checkpoints it: SQLite's own
/// `wal_autocheckpoint` default.
const WAL_PAGES: u64 = 1000;

/// SQLite's `synchronous` setting: how hard a commit waits for the disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Synchronous {
    /// Never wait for the disk: a power loss may lose or corrupt recent checkpoints.
    Off,
    /// In WAL mode, a commit survives a crash of the process; a power loss may lose the last
    /// commits but never corrupts the file. The default.
    #[default]
    Normal,
    /// Every commit reaches the disk before `put` returns.
    Full,
}

impl Synchronous {
    fn pragma(self) -> &'static str {
        match self {
            Synchronous::Off => "OFF",
            Synchronous::Normal => "NORMAL",
            Synchronous::Full => "FULL",
        }
    }
}

/// A write of other tables in the saver's file, on its write connection (see
/// [`SqliteSaver::queue_job`]). It runs on the writer thread inside the transaction of the batch
/// it was queued with, under a savepoint of its own, and returns how to tell its caller the
/// outcome once that transaction has ended: `None` when it committed, else why it did not. A job
/// that fails undoes its own writes (a savepoint of its own, as rusqlite's `Savepoint`); one
/// that panics has them undone, and its caller hears nothing (its answer is dropped).
pub type WriteJob = Box<dyn FnOnce(&mut Connection) -> WriteAnswer + Send>;

/// How a [`WriteJob`] answers its caller: given `None` when its transaction committed, else
/// why it did not.
pub type WriteAnswer = Box<dyn FnOnce(Option<&str>) + Send>;

/// How a [`SqliteSaver`] opens its file: made by [`SqliteSaver::options`].
///
/// # Examples
///
/// ```
/// use weir_runtime::checkpoint::{SqliteSaver, Synchronous};
///
/// let dir = std::env::temp_dir().join(format!("weir-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let saver = SqliteSaver::options().synchronous(Synchronous::Full).open(dir.join("weir.db")).unwrap();
/// # drop(saver);
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct SqliteOptions {
    synchronous: Synchronous,
    busy_timeout: Duration,
    readers: usize,
    /// Pages of log growth that make a checkpoint due ([`WAL_PAGES`]; 0: never).
    wal_pages: u64,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            synchronous: Synchronous::Normal,
            busy_timeout: Duration::from_secs(5),
            readers: 4,
            wal_pages: WAL_PAGES,
        }
    }
}

impl SqliteOptions {
    /// SQLite's `synchronous` setting (default [`Synchronous::Normal`]).
    pub fn synchronous(mut self, synchronous: Synchronous) -> Self {
        self.synchronous = synchronous;
        self
    }
    /// How long a write waits for another process's write before failing (default 5 s).
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }
    /// How many reads run at once (default 4, at least 1).
    pub fn readers(mut self, readers: usize) -> Self {
        self.readers = readers.max(1);
        self
    }
    /// Opens the file at `path`, creating it and its schema on first use, and migrating an
    /// older schema.
    ///
    /// Blocks the calling thread briefly (opening the file, and waiting up to the busy timeout
    /// if another process holds the write lock): call it at startup, or in `spawn_blocking`.
    ///
    /// # Errors
    ///
    /// [`SaverError::is_schema_too_new`] when the file was written by a newer weir (the file is
    /// not modified); a database error when the file cannot be opened or is not a database.
    pub fn open(self, path: impl AsRef<Path>) -> Result<SqliteSaver, SaverError> {
        let path = path.as_ref().to_path_buf();
        let mut conn = Connection::open(&path).map_err(|e| backend(&path, e))?;
        schema::migrate(&mut conn, &path, &self).map_err(|e| e.into_saver_error(&path))?;
        let readers = Arc::new(Mutex::new(Vec::new()));
        let direct = self.synchronous != Synchronous::Full;
        let writer = writer::Handle::start(conn, path.clone(), self.wal_pages, readers.clone(), direct)?;
        let inner = Inner {
            path,
            options: self.clone(),
            writer,
            readers,
            read_permits: Arc::new(Semaphore::new(self.readers)),
        };
        Ok(SqliteSaver { inner: Arc::new(inner) })
    }

    /// The log growth, in pages, that makes the writer checkpoint it.
    #[cfg(test)]
    pub(crate) fn wal_pages(mut self, pages: u64) -> Self {
        self.wal_pages = pages;
        self
    }
}

/// The embedded checkpoint saver: one SQLite file, shared by the processes of one machine.
///
/// Clones share the connections. See the [module docs](super) for the model.
///
/// # Examples
///
/// ```
/// use weir_runtime::checkpoint::{Checkpointer, SqliteSaver};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let dir = std::env::temp_dir().join(format!("weir-doc-open-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let saver = SqliteSaver::open(dir.join("weir.db")).unwrap();
/// assert_eq!(saver.threads().await.unwrap(), Vec::<String>::new());
/// # drop(saver);
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # }
/// ```
#[derive(Clone)]
pub struct SqliteSaver {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    options: SqliteOptions,
    /// The thread that writes, so a process's writes queue there rather than on SQLite's busy
    /// handler.
    writer: writer::Handle,
    /// Idle read connections; the writer closes those left when it ends.
    readers: Arc<Mutex<Vec<Connection>>>,
    read_permits: Arc<Semaphore>,
}

impl fmt::Debug for SqliteSaver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteSaver")
            .field("path", &self.inner.path)
            .field("options", &self.inner.options)
            .finish()
    }
}

impl SqliteSaver {
    /// Opens (creating on first use) the checkpoint file at `path` with the default options:
    /// WAL mode, `synchronous = NORMAL`, a 5 s busy timeout. See [`SqliteOptions::open`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self, SaverError> {
        SqliteOptions::default().open(path)
    }

    /// Options for opening a file, to change the defaults of [`open`](Self::open).
    pub fn options() -> SqliteOptions {
        SqliteOptions::default()
    }

    /// The file this saver stores into.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Queues `job`, a write of other tables in this file, for the saver's write connection:
    /// it shares the next batch's transaction with the checkpoints queued with it (see
    /// [`WriteJob`]). Returns once it is queued (waiting for room); the job's answer tells its
    /// caller the rest.
    ///
    /// # Errors
    ///
    /// When the writer thread has stopped: the job is dropped unrun.
    ///
    /// # Examples
    ///
    /// ```
    /// use weir_runtime::checkpoint::SqliteSaver;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let dir = std::env::temp_dir().join(format!("weir-doc-job-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// let saver = SqliteSaver::open(dir.join("weir.db")).unwrap();
    /// let (tell, told) = tokio::sync::oneshot::channel();
    /// saver
    ///     .queue_job(Box::new(|conn| {
    ///         let made = conn.execute_batch("CREATE TABLE notes (body TEXT)");
    ///         Box::new(move |failed: Option<&str>| {
    ///             let _ = tell.send(made.is_ok() && failed.is_none());
    ///         })
    ///     }))
    ///     .await
    ///     .unwrap();
    /// assert!(told.await.unwrap(), "made, and committed");
    /// # drop(saver);
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # }
    /// ```
    pub async fn queue_job(&self, job: WriteJob) -> Result<(), SaverError> {
        self.inner.writer.queue_job(job).await
    }

    /// Runs `f` on a read connection, on a thread tokio lends or on its blocking pool
    /// ([`crate::blocking::run`]).
    async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, Failure> + Send + 'static,
    ) -> Result<T, SaverError> {
        let permit = self
            .inner
            .read_permits
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        let inner = self.inner.clone();
        let joined = crate::blocking::run(move || {
            let _permit = permit;
            let idle = inner.readers.lock().unwrap_or_else(|p| p.into_inner()).pop();
            let mut conn = match idle {
                Some(conn) => conn,
                None => {
                    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
                    let conn = Connection::open_with_flags(&inner.path, flags)?;
                    schema::configure(&conn, &inner.options)?;
                    conn
                }
            };
            let out = f(&mut conn);
            inner.readers.lock().unwrap_or_else(|p| p.into_inner()).push(conn);
            out
        })
        .await;
        flatten(&self.inner.path, joined)
    }

    /// Runs `f`, a read as short as a point read (a thread's head, one checkpoint), right here
    /// on an idle read connection when there is one at once: lending the thread
    /// ([`read`](Self::read)) wakes another to take over tokio's worker, which costs more than
    /// the read. Else as [`read`](Self::read).
    async fn read_briefly<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, Failure> + Send + 'static,
    ) -> Result<T, SaverError> {
        let inner = &self.inner;
        let idle = inner.read_permits.try_acquire().ok().and_then(|permit| {
            let conn = inner.readers.lock().unwrap_or_else(|p| p.into_inner()).pop()?;
            Some((permit, conn))
        });
        // (No permit is held while `read` waits for one.)
        let Some((_permit, mut conn)) = idle else {
            return self.read(f).await;
        };
        let out = f(&mut conn);
        inner.readers.lock().unwrap_or_else(|p| p.into_inner()).push(conn);
        out.map_err(|e| e.into_saver_error(&inner.path))
    }
}

fn backend(path: &Path, e: rusqlite::Error) -> SaverError {
    SaverError::backend(format!("sqlite checkpoint store `{}` failed", path.display()), e)
}

/// [`backend`] for an error already turned into text (one error answering several writes).
fn backend_text(path: &Path, e: String) -> SaverError {
    SaverError::backend(format!("sqlite checkpoint store `{}` failed", path.display()), e)
}

/// An error of a SQLite call: a saver error, or SQLite's (named with the file afterwards).
enum Failure {
    Saver(SaverError),
    Sqlite(rusqlite::Error),
}

impl Failure {
    fn into_saver_error(self, path: &Path) -> SaverError {
        match self {
            Failure::Saver(e) => e,
            Failure::Sqlite(e) => backend(path, e),
        }
    }
}

impl From<rusqlite::Error> for Failure {
    fn from(e: rusqlite::Error) -> Self {
        Failure::Sqlite(e)
    }
}

impl From<rusqlite::types::FromSqlError> for Failure {
    fn from(e: rusqlite::types::FromSqlError) -> Self {
        Failure::Sqlite(e.into())
    }
}

impl From<SaverError> for Failure {
    fn from(e: SaverError) -> Self {
        Failure::Saver(e)
    }
}

/// The result of a read on the blocking pool; a panic there resumes here.
fn flatten<T>(path: &Path, joined: Result<Result<T, Failure>, tokio::task::JoinError>) -> Result<T, SaverError> {
    match joined {
        Ok(done) => done.map_err(|e| e.into_saver_error(path)),
        Err(join) => match join.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(join) => Err(SaverError::backend(
                format!("sqlite checkpoint store `{}` failed", path.display()),
                join,
            )),
        },
    }
}

impl SqliteSaver {
    /// Stores `records`, then tasks' `writes`, through the writer thread, in one transaction.
    async fn put_records(
        &self,
        records: Vec<CheckpointRecord>,
        expected: Option<&str>,
        made: Option<MadeByRun>,
        writes: Vec<TaskWrites>,
    ) -> Result<(), SaverError> {
        let work = Work::Put(records, expected.map(Box::from), made, writes);
        self.inner.writer.write(work).await
    }
}

impl Checkpointer for SqliteSaver {
    fn put_many<'a>(
        &'a self,
        records: Vec<CheckpointRecord>,
        expected_head: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        self.put_records(records, expected_head, None, Vec::new()).boxed()
    }

    fn put_made<'a>(
        &'a self,
        records: Vec<CheckpointRecord>,
        expected_head: Option<&'a str>,
        made: MadeByRun,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        self.put_records(records, expected_head, Some(made), Vec::new()).boxed()
    }

    /// One request to the writer: the checkpoints and the tasks' writes in one transaction.
    fn put_made_with_writes<'a>(
        &'a self,
        thread_id: &'a str,
        records: Vec<CheckpointRecord>,
        writes: Vec<TaskWrites>,
        expected_head: Option<&'a str>,
        made: MadeByRun,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        if records.is_empty() {
            return self.put_writes_made(thread_id, writes, made);
        }
        self.put_records(records, expected_head, Some(made), writes).boxed()
    }

    fn get<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<Loaded>, SaverError>> {
        let (thread_id, ns, id) = (thread_id.to_owned(), ns.to_owned(), id.map(str::to_owned));
        let path = self.inner.path.clone();
        self.read_briefly(move |conn| read::get(conn, &path, &thread_id, &ns, id.as_deref(), &[]))
            .boxed()
    }

    fn get_holding<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        id: Option<&'a str>,
        held: &'a [Held],
    ) -> BoxFuture<'a, Result<Option<Loaded>, SaverError>> {
        let (thread_id, ns, id) = (thread_id.to_owned(), ns.to_owned(), id.map(str::to_owned));
        let (path, held) = (self.inner.path.clone(), held.to_vec());
        self.read_briefly(move |conn| read::get(conn, &path, &thread_id, &ns, id.as_deref(), &held))
            .boxed()
    }

    fn head<'a>(&'a self, thread_id: &'a str, ns: &'a str) -> BoxFuture<'a, Result<Option<String>, SaverError>> {
        let (thread_id, ns) = (thread_id.to_owned(), ns.to_owned());
        self.read_briefly(move |conn| Ok(read::head(conn, &thread_id, &ns)?))
            .boxed()
    }

    fn list<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        before: Option<&'a str>,
        limit: Option<usize>,
    ) -> BoxFuture<'a, Result<Vec<CheckpointRecord>, SaverError>> {
        let (thread_id, ns, before) = (thread_id.to_owned(), ns.to_owned(), before.map(str::to_owned));
        let list = move |conn: &mut Connection| read::list(conn, &thread_id, &ns, before.as_deref(), limit);
        // One checkpoint at most (a thread's newest, as a server's run reads it) is a point read.
        if limit == Some(1) {
            self.read_briefly(list).boxed()
        } else {
            self.read(list).boxed()
        }
    }

    fn history<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        before: Option<&'a str>,
        limit: Option<usize>,
    ) -> BoxFuture<'a, Result<Vec<Loaded>, SaverError>> {
        let (thread_id, ns, before) = (thread_id.to_owned(), ns.to_owned(), before.map(str::to_owned));
        let path = self.inner.path.clone();
        self.read(move |conn| read::history(conn, &path, &thread_id, &ns, before.as_deref(), limit))
            .boxed()
    }

    fn put_writes<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        checkpoint_id: &'a str,
        task_id: &'a str,
        writes: Vec<PendingWrite>,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        let ids = [thread_id, ns, checkpoint_id, task_id].map(str::to_owned);
        self.inner.writer.write(Work::Writes(ids, writes)).boxed()
    }

    /// One request to the writer thread, so the tasks' writes go into one transaction (under
    /// one savepoint when others are queued with it): all of them or none.
    fn put_writes_made<'a>(
        &'a self,
        thread_id: &'a str,
        writes: Vec<TaskWrites>,
        _made: MadeByRun,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        self.inner
            .writer
            .write(Work::WritesOfTasks(thread_id.to_owned(), writes))
            .boxed()
    }

    fn delete_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<(), SaverError>> {
        self.inner.writer.write(Work::Delete(thread_id.to_owned())).boxed()
    }

    /// In one transaction of the writer: two `DELETE`s of the ids after `checkpoint_id` (a
    /// thread's head is its greatest id, so the head moves back with them).
    fn delete_after<'a>(
        &'a self,
        thread_id: &'a str,
        checkpoint_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        let work = match checkpoint_id {
            None => Work::Delete(thread_id.to_owned()),
            Some(after) => Work::DeleteAfter([thread_id, after].map(str::to_owned)),
        };
        self.inner.writer.write(work).boxed()
    }

    /// In one transaction of the writer.
    fn prune<'a>(&'a self, thread_id: &'a str, policy: &'a Retention) -> BoxFuture<'a, Result<Pruned, SaverError>> {
        async move {
            let out = Arc::new(Mutex::new(Pruned::default()));
            let work = Work::Prune(thread_id.to_owned(), policy.clone(), out.clone());
            self.inner.writer.write(work).await?;
            let pruned = *out.lock().unwrap_or_else(|p| p.into_inner());
            Ok(pruned)
        }
        .boxed()
    }

    fn threads(&self) -> BoxFuture<'_, Result<Vec<String>, SaverError>> {
        self.read(read::threads).boxed()
    }

    fn namespaces<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Vec<String>, SaverError>> {
        let thread_id = thread_id.to_owned();
        self.read(move |conn| read::namespaces(conn, &thread_id)).boxed()
    }

    /// Copies the thread in one transaction of the writer: two `INSERT … SELECT`s.
    fn copy_thread<'a>(&'a self, from: &'a str, to: &'a str) -> BoxFuture<'a, Result<(), SaverError>> {
        let work = Work::Copy([from, to].map(str::to_owned));
        self.inner.writer.write(work).boxed()
    }

    fn usage<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Usage, SaverError>> {
        let thread_id = thread_id.to_owned();
        self.read(move |conn| read::usage(conn, &thread_id)).boxed()
    }
}
