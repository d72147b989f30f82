//! The SQLite saver: the embedded default.
//!
//! One file holds every thread. The file is in WAL mode, so readers never wait for the writer,
//! and several processes can share it: a write waits up to the busy timeout for another
//! process's write to finish. Within a process, writes queue on one connection (without holding
//! a tokio worker) and reads use a few connections of their own. SQLite calls run on tokio's
//! blocking pool, except one quick case: a single checkpoint put while the connection is free,
//! on a file whose commits do not wait for the disk (`synchronous` OFF or NORMAL), runs in place
//! (a few microseconds, less than the hop to another thread) and, should another process hold
//! the file's write lock, goes to the blocking pool to wait for it there.
//!
//! A put is one write transaction: it moves the thread's row in `heads`, adds the checkpoint's
//! row to `checkpoints` (a rowid table and its key index) and a row per new blob to `blobs` (a
//! `WITHOUT ROWID` table, one B-tree; the bytes of a long value go to `large_bytes`, see
//! [`INLINE_BYTES`]).
//!
//! The schema's version is the file's `PRAGMA user_version`; [`MIGRATIONS`] lists the steps from
//! each version to the next. A file with a newer version than this weir knows is refused and left
//! untouched.

use super::sql::{self, Row};
use super::{check, CheckpointRecord, Checkpointer, Loaded, PendingWrite, SaverError, Usage};
use futures::future::{BoxFuture, FutureExt};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Mutex as AsyncMutex, Semaphore};

/// The steps from schema version `i` to `i + 1`; the current version is `MIGRATIONS.len()`.
/// A later release appends to this list and never edits an entry.
const MIGRATIONS: &[&str] = &[
    // 1: checkpoints, the blobs stored under them, pending writes, heads.
    "CREATE TABLE checkpoints (
        thread_id TEXT NOT NULL,
        ns TEXT NOT NULL,
        id TEXT NOT NULL,
        parent_id TEXT,
        step INTEGER NOT NULL,
        source TEXT NOT NULL,
        writes TEXT NOT NULL,
        metadata TEXT NOT NULL,
        created_at TEXT NOT NULL,
        channels TEXT NOT NULL,
        body BLOB NOT NULL,
        PRIMARY KEY (thread_id, ns, id)
    );
    CREATE TABLE blobs (
        thread_id TEXT NOT NULL,
        ns TEXT NOT NULL,
        checkpoint_id TEXT NOT NULL,
        channel TEXT NOT NULL,
        delta_of TEXT,
        bytes BLOB NOT NULL,
        PRIMARY KEY (thread_id, ns, checkpoint_id, channel)
    );
    CREATE TABLE writes (
        thread_id TEXT NOT NULL,
        ns TEXT NOT NULL,
        checkpoint_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        idx INTEGER NOT NULL,
        task_path TEXT NOT NULL,
        channel TEXT NOT NULL,
        bytes BLOB NOT NULL,
        PRIMARY KEY (thread_id, ns, checkpoint_id, task_id, idx)
    );
    CREATE TABLE heads (
        thread_id TEXT NOT NULL,
        ns TEXT NOT NULL,
        head TEXT NOT NULL,
        PRIMARY KEY (thread_id, ns)
    ) WITHOUT ROWID;",
    // 2: blobs keyed by their primary key alone, so storing one writes one B-tree instead of a
    // table and its key index; the bytes of a long blob in `large_bytes` (see `INLINE_BYTES`).
    "CREATE TABLE large_bytes (
        id INTEGER PRIMARY KEY,
        bytes BLOB NOT NULL
    );
    CREATE TABLE blobs_v2 (
        thread_id TEXT NOT NULL,
        ns TEXT NOT NULL,
        checkpoint_id TEXT NOT NULL,
        channel TEXT NOT NULL,
        delta_of TEXT,
        bytes BLOB,
        large_id INTEGER,
        PRIMARY KEY (thread_id, ns, checkpoint_id, channel)
    ) WITHOUT ROWID;
    INSERT INTO large_bytes (id, bytes) SELECT rowid, bytes FROM blobs WHERE length(bytes) > 192;
    INSERT INTO blobs_v2 (thread_id, ns, checkpoint_id, channel, delta_of, bytes, large_id)
        SELECT thread_id, ns, checkpoint_id, channel, delta_of,
            CASE WHEN length(bytes) > 192 THEN NULL ELSE bytes END,
            CASE WHEN length(bytes) > 192 THEN rowid END
        FROM blobs;
    DROP TABLE blobs;
    ALTER TABLE blobs_v2 RENAME TO blobs;",
];

/// The longest blob kept in its `blobs` row; a longer one's bytes go to a row of `large_bytes`,
/// which the blob row names (`large_id`, with `bytes` NULL).
///
/// A `WITHOUT ROWID` table keeps whole rows in the nodes of its B-tree, inner ones included,
/// and SQLite's documentation advises rows under about 1/20 of a page: larger rows split pages
/// more often, and a row that overflows its page (about 1 KB on a 4 KiB page) is read whole,
/// overflow pages and all, by every search that compares against it. With the key (the thread,
/// two checkpoint ids, the channel: about 90 bytes) a blob of 192 bytes makes a row of under
/// 300 bytes, where such a table still writes no more WAL frames per insert than a rowid table
/// and its key index (measured with 200-byte values: 1.8 frames against 2.4 when one thread
/// appends, 2.5 against 2.5 with 50 threads' rows interleaved; with 100-byte values 1.7
/// against 2.35, and 2.2 against 2.5). A long value costs two B-trees (its bytes appended to
/// `large_bytes`, then its row) as every blob did in schema version 1.
///
/// Checkpoint rows stay in a rowid table: they hold the channel list and the body, 400 bytes
/// for a graph of one field and more for larger graphs, past the size where a `WITHOUT ROWID`
/// table pays off.
const INLINE_BYTES: usize = 192;

/// The schema version this weir writes.
const VERSION: i64 = MIGRATIONS.len() as i64;

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
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            synchronous: Synchronous::Normal,
            busy_timeout: Duration::from_secs(5),
            readers: 4,
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
        let mut writer = Connection::open(&path).map_err(|e| backend(&path, e))?;
        migrate(&mut writer, &path, &self).map_err(|e| e.into_saver_error(&path))?;
        let inner = Inner {
            path,
            options: self.clone(),
            writer: Arc::new(AsyncMutex::new(writer)),
            readers: Mutex::new(Vec::new()),
            read_permits: Arc::new(Semaphore::new(self.readers)),
        };
        Ok(SqliteSaver { inner: Arc::new(inner) })
    }
}

/// A failure while opening: the schema is too new, or SQLite failed.
enum OpenError {
    TooNew(i64),
    Sqlite(rusqlite::Error),
}

impl From<rusqlite::Error> for OpenError {
    fn from(e: rusqlite::Error) -> Self {
        OpenError::Sqlite(e)
    }
}

impl OpenError {
    fn into_saver_error(self, path: &Path) -> SaverError {
        match self {
            OpenError::TooNew(found) => SaverError::schema_too_new(format!("`{}`", path.display()), found, VERSION),
            OpenError::Sqlite(e) => backend(path, e),
        }
    }
}

/// Checks the version before anything could write to the file, then turns WAL on and migrates.
fn migrate(conn: &mut Connection, path: &Path, options: &SqliteOptions) -> Result<(), OpenError> {
    conn.busy_timeout(options.busy_timeout)?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > VERSION {
        return Err(OpenError::TooNew(version));
    }
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(path = %path.display(), mode, "sqlite saver could not turn WAL mode on");
    }
    configure(conn, options)?;
    if version == VERSION {
        return Ok(());
    }
    // Another process may be migrating too: decide again inside the write lock.
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > VERSION {
        return Err(OpenError::TooNew(version));
    }
    for (from, step) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        tx.execute_batch(step)?;
        tx.pragma_update(None, "user_version", from as i64 + 1)?;
    }
    tx.commit()?;
    Ok(())
}

/// The per-connection settings.
fn configure(conn: &Connection, options: &SqliteOptions) -> rusqlite::Result<()> {
    // Room for every statement a saver prepares (a put's alone take a dozen): none is prepared
    // again because another pushed it out.
    conn.set_prepared_statement_cache_capacity(64);
    conn.busy_timeout(options.busy_timeout)?;
    conn.pragma_update(None, "synchronous", options.synchronous.pragma())?;
    Ok(())
}

fn backend(path: &Path, e: rusqlite::Error) -> SaverError {
    SaverError::backend(format!("sqlite checkpoint store `{}` failed", path.display()), e)
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
    /// The one connection that writes, so a process's writes queue here rather than on
    /// SQLite's busy handler.
    writer: Arc<AsyncMutex<Connection>>,
    /// Idle read connections.
    readers: Mutex<Vec<Connection>>,
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

    /// Runs `f` on the writer connection, on the blocking pool.
    async fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, Failure> + Send + 'static,
    ) -> Result<T, SaverError> {
        let mut conn = self.inner.writer.clone().lock_owned().await;
        let path = self.inner.path.clone();
        let joined = tokio::task::spawn_blocking(move || f(&mut conn)).await;
        flatten(&path, joined)
    }

    /// Stores `records` as successive heads of a thread: in place when that is quick (see the
    /// [module docs](self)), else on the blocking pool.
    async fn put_records(&self, records: Vec<CheckpointRecord>, expected: Option<String>) -> Result<(), SaverError> {
        let quick = records.len() == 1 && self.inner.options.synchronous != Synchronous::Full;
        if let Some(mut conn) = quick.then(|| self.inner.writer.clone().try_lock_owned().ok()).flatten() {
            // Not waiting for another process's lock: that wait belongs on the blocking pool.
            let attempt = conn
                .busy_timeout(Duration::ZERO)
                .map_err(Failure::from)
                .and_then(|()| put_batch(&mut conn, &records, expected.as_deref()));
            let restored = conn.busy_timeout(self.inner.options.busy_timeout);
            match attempt {
                Err(Failure::Sqlite(e)) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy) => {}
                attempt => return flatten(&self.inner.path, Ok(attempt.and(restored.map_err(Failure::from)))),
            }
        }
        self.write(move |conn| put_batch(conn, &records, expected.as_deref()))
            .await
    }

    /// Runs `f` on a read connection, on the blocking pool.
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
        let joined = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let idle = inner.readers.lock().unwrap_or_else(|p| p.into_inner()).pop();
            let mut conn = match idle {
                Some(conn) => conn,
                None => {
                    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
                    let conn = Connection::open_with_flags(&inner.path, flags)?;
                    configure(&conn, &inner.options)?;
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
}

/// An error inside a blocking call: a saver error, or SQLite's (named with the file afterwards).
enum Failure {
    Saver(SaverError),
    Sqlite(rusqlite::Error),
}

impl From<rusqlite::Error> for Failure {
    fn from(e: rusqlite::Error) -> Self {
        Failure::Sqlite(e)
    }
}

impl From<SaverError> for Failure {
    fn from(e: SaverError) -> Self {
        Failure::Saver(e)
    }
}

fn flatten<T>(path: &Path, joined: Result<Result<T, Failure>, tokio::task::JoinError>) -> Result<T, SaverError> {
    match joined {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(Failure::Saver(e))) => Err(e),
        Ok(Err(Failure::Sqlite(e))) => Err(backend(path, e)),
        Err(join) => match join.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(join) => Err(SaverError::backend(
                format!("sqlite checkpoint store `{}` failed", path.display()),
                join,
            )),
        },
    }
}

fn read_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok(Row {
        thread_id: r.get(0)?,
        ns: r.get(1)?,
        id: r.get(2)?,
        parent_id: r.get(3)?,
        step: r.get(4)?,
        source: r.get(5)?,
        writes: r.get(6)?,
        metadata: r.get(7)?,
        created_at: r.get(8)?,
        channels: r.get(9)?,
        body: r.get(10)?,
    })
}

/// A write transaction whose `BEGIN` and `COMMIT` are cached statements (rusqlite's
/// `Transaction` prepares both anew each time, which costs as much as an insert): rolled back
/// when dropped uncommitted, a panic included.
struct WriteTx<'c> {
    conn: &'c Connection,
    done: bool,
}

impl<'c> WriteTx<'c> {
    fn begin(conn: &'c Connection) -> rusqlite::Result<Self> {
        conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
        Ok(Self { conn, done: false })
    }

    fn commit(mut self) -> rusqlite::Result<()> {
        self.conn.prepare_cached("COMMIT")?.execute([])?;
        self.done = true;
        Ok(())
    }
}

impl std::ops::Deref for WriteTx<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for WriteTx<'_> {
    fn drop(&mut self) {
        if !self.done && !self.conn.is_autocommit() {
            // A failed rollback leaves SQLite to roll back when the connection closes.
            let _ = self.conn.execute_batch("ROLLBACK");
        }
    }
}

/// Stores `records` in one transaction, as successive heads: all of them or none.
fn put_batch(conn: &mut Connection, records: &[CheckpointRecord], expected: Option<&str>) -> Result<(), Failure> {
    let needed = check::batch(records)?;
    let Some(last) = records.last() else { return Ok(()) };
    let (thread, ns, last) = (&last.thread_id, &last.ns, &last.id);
    let tx = WriteTx::begin(conn)?;
    // Move the head where the caller expects it, in one statement: no row changed means it is
    // elsewhere (and nothing of the batch is kept).
    let moved = match expected {
        Some(expected) => tx
            .prepare_cached("UPDATE heads SET head = ?3 WHERE thread_id = ?1 AND ns = ?2 AND head = ?4")?
            .execute(params![thread, ns, last, expected])?,
        None => tx
            .prepare_cached("INSERT INTO heads (thread_id, ns, head) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING")?
            .execute(params![thread, ns, last])?,
    };
    if moved == 0 {
        let head: Option<String> = tx
            .prepare_cached("SELECT head FROM heads WHERE thread_id = ?1 AND ns = ?2")?
            .query_row(params![thread, ns], |r| r.get(0))
            .optional()?;
        return Err(SaverError::head_moved(thread, ns, expected, head.as_deref()).into());
    }
    // Every base the batch does not store itself must be stored already: checked before
    // anything is written.
    let mut has_blob = None;
    for (record, needed) in records.iter().zip(&needed) {
        for &(channel, base) in needed {
            if has_blob.is_none() {
                has_blob = Some(tx.prepare_cached(
                    "SELECT 1 FROM blobs WHERE thread_id = ?1 AND ns = ?2 AND checkpoint_id = ?3 AND channel = ?4",
                )?);
            }
            let has_blob = has_blob.as_mut().expect("prepared above");
            if !has_blob.exists(params![thread, ns, base, channel])? {
                return Err(check::missing_base(record, channel, base).into());
            }
        }
    }
    drop(has_blob);
    insert_checkpoints(&tx, records)?;
    insert_blobs(&tx, records)?;
    tx.commit()?;
    Ok(())
}

/// How many rows of a batch one insert statement writes. Running a statement costs about 3k
/// instructions besides its rows (step, cursors, halt, reset): a multi-row insert pays that
/// once for all its rows.
const CHUNK: usize = 16;

/// The insert statements of a put, for one row or for [`CHUNK`] rows; the rows share `?1`
/// (the thread) and `?2` (the namespace).
struct InsertSql {
    checkpoint: String,
    checkpoints: String,
    blob: String,
    blobs: String,
}

/// The parameters of a checkpoint row besides the thread and namespace.
const CHECKPOINT_PARAMS: usize = 9;
/// The parameters of a blob row besides the thread and namespace.
const BLOB_PARAMS: usize = 4;

fn insert_sql() -> &'static InsertSql {
    static SQL: std::sync::OnceLock<InsertSql> = std::sync::OnceLock::new();
    SQL.get_or_init(|| {
        let insert = |into: &str, params: usize, rows: usize| {
            let rows: Vec<String> = (0..rows)
                .map(|row| {
                    let own: Vec<String> = (0..params).map(|p| format!("?{}", 3 + row * params + p)).collect();
                    format!("(?1, ?2, {})", own.join(", "))
                })
                .collect();
            format!("INSERT INTO {into} VALUES {}", rows.join(", "))
        };
        let checkpoints = "checkpoints (thread_id, ns, id, parent_id, step, source, writes, metadata, \
                           created_at, channels, body)";
        let blobs = "blobs (thread_id, ns, checkpoint_id, channel, delta_of, bytes)";
        InsertSql {
            checkpoint: insert(checkpoints, CHECKPOINT_PARAMS, 1),
            checkpoints: insert(checkpoints, CHECKPOINT_PARAMS, CHUNK),
            blob: insert(blobs, BLOB_PARAMS, 1),
            blobs: insert(blobs, BLOB_PARAMS, CHUNK),
        }
    })
}

/// Inserts the checkpoint rows of `records` (one thread and namespace), [`CHUNK`] at a time.
fn insert_checkpoints(tx: &Connection, records: &[CheckpointRecord]) -> Result<(), Failure> {
    let Some(first) = records.first() else { return Ok(()) };
    let (thread, ns) = (&first.thread_id, &first.ns);
    let sql = insert_sql();
    let mut chunks = records.chunks_exact(CHUNK);
    if chunks.len() > 0 {
        let mut insert = tx.prepare_cached(&sql.checkpoints)?;
        insert.raw_bind_parameter(1, thread)?;
        insert.raw_bind_parameter(2, ns)?;
        for chunk in &mut chunks {
            for (row, record) in chunk.iter().enumerate() {
                bind_checkpoint(&mut insert, row, record)?;
            }
            match insert.raw_execute() {
                // A statement that fails stores none of its rows: row by row names the culprit.
                Err(e) if is_primary_key_conflict(&e) => insert_checkpoints_one_by_one(tx, chunk)?,
                inserted => {
                    inserted?;
                }
            }
        }
    }
    insert_checkpoints_one_by_one(tx, chunks.remainder())
}

/// Inserts the checkpoint rows of `records` a statement each: a taken id fails its own
/// statement, which names the checkpoint in the conflict.
fn insert_checkpoints_one_by_one(tx: &Connection, records: &[CheckpointRecord]) -> Result<(), Failure> {
    let Some(first) = records.first() else { return Ok(()) };
    let mut insert = tx.prepare_cached(&insert_sql().checkpoint)?;
    insert.raw_bind_parameter(1, &first.thread_id)?;
    insert.raw_bind_parameter(2, &first.ns)?;
    for record in records {
        bind_checkpoint(&mut insert, 0, record)?;
        match insert.raw_execute() {
            Err(e) if is_primary_key_conflict(&e) => {
                let detail = format!("checkpoint `{}` already exists", record.id);
                return Err(SaverError::conflict(&record.thread_id, &record.ns, detail).into());
            }
            inserted => {
                inserted?;
            }
        }
    }
    Ok(())
}

/// Binds `record`'s columns besides the thread and namespace as row `row` of a checkpoint
/// insert.
fn bind_checkpoint(
    insert: &mut rusqlite::Statement<'_>,
    row: usize,
    record: &CheckpointRecord,
) -> rusqlite::Result<()> {
    // SQLite copies what is bound: the text columns need not outlive this call.
    let text = sql::encode(record);
    let at = 3 + row * CHECKPOINT_PARAMS;
    insert.raw_bind_parameter(at, &record.id)?;
    insert.raw_bind_parameter(at + 1, &record.parent_id)?;
    insert.raw_bind_parameter(at + 2, record.step)?;
    insert.raw_bind_parameter(at + 3, record.source.as_str())?;
    insert.raw_bind_parameter(at + 4, text.writes())?;
    insert.raw_bind_parameter(at + 5, text.metadata())?;
    insert.raw_bind_parameter(at + 6, &record.created_at)?;
    insert.raw_bind_parameter(at + 7, text.channels())?;
    insert.raw_bind_parameter(at + 8, &record.body)
}

fn is_primary_key_conflict(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(e, _) if e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY)
}

/// Inserts the blobs of `records` (one thread and namespace): the short ones [`CHUNK`] rows
/// at a time, the long ones' bytes into `large_bytes`.
fn insert_blobs(tx: &Connection, records: &[CheckpointRecord]) -> Result<(), Failure> {
    let Some(first) = records.first() else { return Ok(()) };
    let (thread, ns) = (&first.thread_id, &first.ns);
    let sql = insert_sql();
    // Prepared when first needed: most puts store no long value, and a chunk takes a batch.
    let mut insert_chunk = None;
    let mut insert_large = None;
    let mut pending = Vec::with_capacity(CHUNK);
    for record in records {
        for blob in &record.blobs {
            if blob.bytes.len() <= INLINE_BYTES {
                pending.push((&record.id, blob));
                if pending.len() == CHUNK {
                    if insert_chunk.is_none() {
                        let mut insert = tx.prepare_cached(&sql.blobs)?;
                        insert.raw_bind_parameter(1, thread)?;
                        insert.raw_bind_parameter(2, ns)?;
                        insert_chunk = Some(insert);
                    }
                    let insert = insert_chunk.as_mut().expect("prepared above");
                    for (row, (id, blob)) in pending.drain(..).enumerate() {
                        bind_blob(insert, row, id, blob)?;
                    }
                    insert.raw_execute()?;
                }
                continue;
            }
            if insert_large.is_none() {
                insert_large = Some((
                    tx.prepare_cached("INSERT INTO large_bytes (bytes) VALUES (?1)")?,
                    tx.prepare_cached(
                        "INSERT INTO blobs (thread_id, ns, checkpoint_id, channel, delta_of, large_id) \
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    )?,
                ));
            }
            let (insert_bytes, insert_row) = insert_large.as_mut().expect("prepared above");
            insert_bytes.execute([&blob.bytes])?;
            let large_id = tx.last_insert_rowid();
            insert_row.execute(params![thread, ns, record.id, blob.channel, blob.delta_of, large_id])?;
        }
    }
    if !pending.is_empty() {
        let mut insert = tx.prepare_cached(&sql.blob)?;
        insert.raw_bind_parameter(1, thread)?;
        insert.raw_bind_parameter(2, ns)?;
        for (id, blob) in pending {
            bind_blob(&mut insert, 0, id, blob)?;
            insert.raw_execute()?;
        }
    }
    Ok(())
}

/// Binds a blob's columns besides the thread and namespace as row `row` of a blob insert.
fn bind_blob(insert: &mut rusqlite::Statement<'_>, row: usize, id: &str, blob: &super::Blob) -> rusqlite::Result<()> {
    let at = 3 + row * BLOB_PARAMS;
    insert.raw_bind_parameter(at, id)?;
    insert.raw_bind_parameter(at + 1, &blob.channel)?;
    insert.raw_bind_parameter(at + 2, &blob.delta_of)?;
    insert.raw_bind_parameter(at + 3, &blob.bytes)
}

fn get_now(
    conn: &mut Connection,
    path: &Path,
    thread_id: &str,
    ns: &str,
    id: Option<&str>,
) -> Result<Option<Loaded>, Failure> {
    // One read transaction: the head, the record and its blobs come from one snapshot.
    let tx = conn.transaction()?;
    let id = match id {
        Some(id) => id.to_owned(),
        None => {
            let head = tx
                .prepare_cached("SELECT head FROM heads WHERE thread_id = ?1 AND ns = ?2")?
                .query_row(params![thread_id, ns], |r| r.get(0))
                .optional()?;
            match head {
                Some(head) => head,
                None => return Ok(None),
            }
        }
    };
    let row = tx
        .prepare_cached(&format!(
            "SELECT {} FROM checkpoints WHERE thread_id = ?1 AND ns = ?2 AND id = ?3",
            sql::COLUMNS
        ))?
        .query_row(params![thread_id, ns, id], read_row)
        .optional()?;
    let Some(row) = row else { return Ok(None) };
    let record = sql::decode(row)?;
    let values = {
        let mut blob = tx.prepare_cached(
            "SELECT b.delta_of, COALESCE(b.bytes, l.bytes) FROM blobs b LEFT JOIN large_bytes l ON l.id = b.large_id \
             WHERE b.thread_id = ?1 AND b.ns = ?2 AND b.checkpoint_id = ?3 AND b.channel = ?4",
        )?;
        sql::assemble(&record, |at, channel| {
            let link: Option<(Option<String>, Option<Vec<u8>>)> = blob
                .query_row(params![thread_id, ns, at, channel], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
                .map_err(|e| backend(path, e))?;
            match link {
                Some((delta_of, Some(bytes))) => Ok(Some((delta_of, bytes))),
                Some((_, None)) => Err(check::lost_bytes(&record.thread_id, &record.id, channel, at)),
                None => Ok(None),
            }
        })?
    };
    let pending_writes = tx
        .prepare_cached(
            "SELECT task_id, task_path, idx, channel, bytes FROM writes \
             WHERE thread_id = ?1 AND ns = ?2 AND checkpoint_id = ?3 ORDER BY task_path, task_id, idx",
        )?
        .query_map(params![thread_id, ns, id], |r| {
            Ok(PendingWrite {
                task_id: r.get(0)?,
                task_path: r.get(1)?,
                idx: r.get(2)?,
                channel: r.get(3)?,
                bytes: r.get(4)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    tx.commit()?;
    Ok(Some(Loaded {
        record,
        values,
        pending_writes,
    }))
}

fn list_now(
    conn: &mut Connection,
    thread_id: &str,
    ns: &str,
    before: Option<&str>,
    limit: Option<usize>,
) -> Result<Vec<CheckpointRecord>, Failure> {
    let limit = limit.map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX));
    let rows = conn
        .prepare_cached(&format!(
            "SELECT {} FROM checkpoints WHERE thread_id = ?1 AND ns = ?2 AND (?3 IS NULL OR id < ?3) \
             ORDER BY id DESC LIMIT ?4",
            sql::COLUMNS
        ))?
        .query_map(params![thread_id, ns, before, limit], read_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows.into_iter().map(sql::decode).collect::<Result<_, _>>()?)
}

fn put_writes_now(
    conn: &mut Connection,
    thread_id: &str,
    ns: &str,
    checkpoint_id: &str,
    task_id: &str,
    writes: Vec<PendingWrite>,
) -> Result<(), Failure> {
    check::writes(thread_id, checkpoint_id, task_id, &writes)?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let exists = tx
        .prepare_cached("SELECT 1 FROM checkpoints WHERE thread_id = ?1 AND ns = ?2 AND id = ?3")?
        .exists(params![thread_id, ns, checkpoint_id])?;
    if !exists {
        return Err(check::unknown_checkpoint(thread_id, ns, checkpoint_id).into());
    }
    tx.prepare_cached("DELETE FROM writes WHERE thread_id = ?1 AND ns = ?2 AND checkpoint_id = ?3 AND task_id = ?4")?
        .execute(params![thread_id, ns, checkpoint_id, task_id])?;
    {
        let mut insert = tx.prepare_cached(
            "INSERT INTO writes (thread_id, ns, checkpoint_id, task_id, idx, task_path, channel, bytes) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
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
    }
    tx.commit()?;
    Ok(())
}

impl Checkpointer for SqliteSaver {
    fn put<'a>(
        &'a self,
        record: CheckpointRecord,
        expected_head: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        self.put_many(vec![record], expected_head)
    }

    fn put_many<'a>(
        &'a self,
        records: Vec<CheckpointRecord>,
        expected_head: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        self.put_records(records, expected_head.map(str::to_owned)).boxed()
    }

    fn get<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<Loaded>, SaverError>> {
        let (thread_id, ns, id) = (thread_id.to_owned(), ns.to_owned(), id.map(str::to_owned));
        let path = self.inner.path.clone();
        self.read(move |conn| get_now(conn, &path, &thread_id, &ns, id.as_deref()))
            .boxed()
    }

    fn head<'a>(&'a self, thread_id: &'a str, ns: &'a str) -> BoxFuture<'a, Result<Option<String>, SaverError>> {
        let (thread_id, ns) = (thread_id.to_owned(), ns.to_owned());
        self.read(move |conn| {
            Ok(conn
                .prepare_cached("SELECT head FROM heads WHERE thread_id = ?1 AND ns = ?2")?
                .query_row(params![thread_id, ns], |r| r.get(0))
                .optional()?)
        })
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
        self.read(move |conn| list_now(conn, &thread_id, &ns, before.as_deref(), limit))
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
        self.write(move |conn| {
            let [thread_id, ns, checkpoint_id, task_id] = &ids;
            put_writes_now(conn, thread_id, ns, checkpoint_id, task_id, writes)
        })
        .boxed()
    }

    fn delete_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<(), SaverError>> {
        let thread_id = thread_id.to_owned();
        self.write(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.prepare_cached("DELETE FROM large_bytes WHERE id IN (SELECT large_id FROM blobs WHERE thread_id = ?1)")?
                .execute([&thread_id])?;
            for table in ["writes", "blobs", "checkpoints", "heads"] {
                tx.prepare_cached(&format!("DELETE FROM {table} WHERE thread_id = ?1"))?
                    .execute([&thread_id])?;
            }
            tx.commit()?;
            Ok(())
        })
        .boxed()
    }

    fn threads(&self) -> BoxFuture<'_, Result<Vec<String>, SaverError>> {
        self.read(|conn| {
            Ok(conn
                .prepare_cached("SELECT DISTINCT thread_id FROM heads ORDER BY thread_id")?
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()?)
        })
        .boxed()
    }

    fn usage<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Usage, SaverError>> {
        let thread_id = thread_id.to_owned();
        self.read(move |conn| {
            let tx = conn.transaction()?;
            let count = |table: &str| -> rusqlite::Result<u64> {
                tx.prepare_cached(&format!("SELECT COUNT(*) FROM {table} WHERE thread_id = ?1"))?
                    .query_row([&thread_id], |r| r.get::<_, i64>(0))
                    .map(|n| n as u64)
            };
            let usage = Usage {
                checkpoints: count("checkpoints")?,
                blobs: count("blobs")?,
                blob_bytes: tx
                    .prepare_cached(
                        "SELECT COALESCE(SUM(COALESCE(LENGTH(b.bytes), LENGTH(l.bytes))), 0) \
                         FROM blobs b LEFT JOIN large_bytes l ON l.id = b.large_id WHERE b.thread_id = ?1",
                    )?
                    .query_row([&thread_id], |r| r.get::<_, i64>(0))? as u64,
                pending_writes: count("writes")?,
            };
            tx.commit()?;
            Ok(usage)
        })
        .boxed()
    }
}
