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
//! A put is one write transaction that writes two B-trees: it reads the head (the thread's
//! greatest checkpoint id, from the key index), then adds one row to `checkpoints` (a rowid
//! table and its key index) holding the record and the blobs stored under it ([`pack_index`]).
//! A thread has no head row to move: ids increase (see [`Checkpointer::put`]), so the head is
//! the greatest id, and a put's `BEGIN IMMEDIATE` keeps another writer out between the read and
//! the insert. A put that follows one to the same thread skips the read while the file's data
//! version says nothing has been written since ([`put_batch`]).
//!
//! The schema's version is the file's `PRAGMA user_version`; [`MIGRATIONS`] lists the steps from
//! each version to the next. A file with a newer version than this weir knows is refused and left
//! untouched.

mod held;

use super::sql::{self, Row};
use super::{check, Blob, CheckpointRecord, Checkpointer, Loaded, MadeByRun, PendingWrite, SaverError, Usage};
use futures::future::{BoxFuture, FutureExt};
use held::{Binder, WriteConn};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use std::borrow::Cow;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Mutex as AsyncMutex, Semaphore};

/// The steps from schema version `i` to `i + 1`; the current version is `MIGRATIONS.len()`.
/// A later release appends to this list and never edits an entry.
const MIGRATIONS: &[Migration] = &[
    // 1: checkpoints, the blobs stored under them, pending writes, heads.
    Migration::Sql(
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
    ),
    // 2: blobs keyed by their primary key alone, so storing one writes one B-tree instead of a
    // table and its key index; the bytes of a long blob in `large_bytes` (over 192 bytes).
    Migration::Sql(
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
    ),
    // 3: a checkpoint's blobs in its own row (`blob_index`, `blob_bytes`): a put writes the
    // checkpoint table and its key index, not a blob table too; the head is the greatest id,
    // with no row of its own. The blobs of version 2 move into their checkpoints' rows.
    Migration::Code(blobs_into_rows),
];

/// A step of [`MIGRATIONS`]: SQL, or code for what SQL cannot do. Runs in the migration's
/// transaction.
enum Migration {
    Sql(&'static str),
    Code(fn(&Connection) -> Result<(), OpenError>),
}

/// Migration 3: moves version 2's blobs into their checkpoints' rows, then drops the tables of
/// blobs, long values and heads (a thread's head is its greatest id, as it was for every thread
/// weir wrote: its ids increase). A blob whose bytes are gone, or whose checkpoint is, fails the
/// migration, and the file is left as it was.
fn blobs_into_rows(tx: &Connection) -> Result<(), OpenError> {
    tx.execute_batch(
        "ALTER TABLE checkpoints ADD COLUMN blob_index BLOB NOT NULL DEFAULT x'';
         ALTER TABLE checkpoints ADD COLUMN blob_bytes BLOB NOT NULL DEFAULT x'';",
    )?;
    let mut select = tx.prepare(
        "SELECT b.thread_id, b.ns, b.checkpoint_id, b.channel, b.delta_of, COALESCE(b.bytes, l.bytes) \
         FROM blobs b LEFT JOIN large_bytes l ON l.id = b.large_id \
         ORDER BY b.thread_id, b.ns, b.checkpoint_id, b.channel",
    )?;
    let mut update = tx.prepare(
        "UPDATE checkpoints SET blob_index = ?4, blob_bytes = ?5 WHERE thread_id = ?1 AND ns = ?2 AND id = ?3",
    )?;
    let mut store = |key: &(String, String, String), blobs: &[Blob]| -> Result<(), OpenError> {
        let (thread, ns, id) = key;
        if update.execute(params![thread, ns, id, pack_index(blobs), pack_bytes(blobs)])? == 0 {
            return Err(OpenError::Corrupt {
                thread: thread.clone(),
                checkpoint: id.clone(),
                detail: format!(
                    "its blob for channel `{}` is stored but its row is missing",
                    blobs[0].channel
                ),
            });
        }
        Ok(())
    };
    let mut rows = select.query([])?;
    let mut current: Option<(String, String, String)> = None;
    let mut blobs = Vec::new();
    while let Some(row) = rows.next()? {
        let key = (row.get(0)?, row.get(1)?, row.get(2)?);
        let (channel, delta_of, bytes): (String, Option<String>, Option<Vec<u8>>) =
            (row.get(3)?, row.get(4)?, row.get(5)?);
        let Some(bytes) = bytes else {
            return Err(OpenError::Corrupt {
                thread: key.0,
                checkpoint: key.2,
                detail: format!("the bytes of its blob for channel `{channel}` are missing"),
            });
        };
        if current.as_ref() != Some(&key) {
            if let Some(done) = current.replace(key) {
                store(&done, &blobs)?;
                blobs.clear();
            }
        }
        blobs.push(Blob {
            channel: channel.into(),
            delta_of: delta_of.map(Into::into),
            bytes,
        });
    }
    if let Some(done) = current {
        store(&done, &blobs)?;
    }
    drop(rows);
    drop(select);
    drop(update);
    tx.execute_batch("DROP TABLE blobs; DROP TABLE large_bytes; DROP TABLE heads;")?;
    Ok(())
}

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
        let writer = WriteConn::new(writer, &held_sql()).map_err(|e| backend(&path, e))?;
        let inner = Inner {
            path,
            options: self.clone(),
            writer: Arc::new(AsyncMutex::new(Writer {
                conn: writer,
                last_put: None,
            })),
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
    /// A migration found data of this checkpoint that it cannot carry over.
    Corrupt {
        thread: String,
        checkpoint: String,
        detail: String,
    },
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
            OpenError::Corrupt {
                thread,
                checkpoint,
                detail,
            } => SaverError::corrupt(
                &thread,
                &checkpoint,
                format!(
                    "{detail}, so `{}` cannot be migrated to schema version {VERSION} (the file is left as it was)",
                    path.display()
                ),
            ),
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
        match step {
            Migration::Sql(sql) => tx.execute_batch(sql)?,
            Migration::Code(run) => run(&tx)?,
        }
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
    // Plans never depend on bound values: without this, binding the thread to the head's query
    // (`ORDER BY id DESC LIMIT 1`) marks it for a new plan, and it is compiled again each time.
    conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
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
    writer: Arc<AsyncMutex<Writer>>,
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
        f: impl FnOnce(&mut Writer) -> Result<T, Failure> + Send + 'static,
    ) -> Result<T, SaverError> {
        let mut conn = self.inner.writer.clone().lock_owned().await;
        let path = self.inner.path.clone();
        let joined = tokio::task::spawn_blocking(move || f(&mut conn)).await;
        flatten(&path, joined)
    }

    /// Stores `records` as successive heads of a thread: in place when that is quick (see the
    /// [module docs](self)), else on the blocking pool.
    async fn put_records(
        &self,
        records: Vec<CheckpointRecord>,
        expected: Option<String>,
        made: Option<MadeByRun>,
    ) -> Result<(), SaverError> {
        let quick = records.len() == 1 && self.inner.options.synchronous != Synchronous::Full;
        if let Some(mut conn) = quick.then(|| self.inner.writer.clone().try_lock_owned().ok()).flatten() {
            // Not waiting for another process's lock: that wait belongs on the blocking pool.
            let attempt = conn
                .busy_timeout(Duration::ZERO)
                .map_err(Failure::from)
                .and_then(|()| put_batch(&mut conn, &records, expected.as_deref(), made));
            let restored = conn.busy_timeout(self.inner.options.busy_timeout);
            match attempt {
                Err(Failure::Sqlite(e)) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy) => {}
                attempt => return flatten(&self.inner.path, Ok(attempt.and(restored.map_err(Failure::from)))),
            }
        }
        self.write(move |conn| put_batch(conn, &records, expected.as_deref(), made))
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

/// The connection that writes, with the statements of [`held_sql`] compiled for its life, and
/// what its last put left: the head it wrote, while nothing else has written the file since.
struct Writer {
    conn: WriteConn,
    last_put: Option<LastPut>,
}

/// `BEGIN IMMEDIATE`, a held statement of the writer.
const BEGIN: usize = 0;
/// `COMMIT`, a held statement of the writer.
const COMMIT: usize = 1;
/// The insert of one checkpoint row, a held statement of the writer.
const INSERT_ONE: usize = 2;
/// The insert of [`CHUNK`] checkpoint rows, a held statement of the writer.
const INSERT_CHUNK: usize = 3;

/// The statements the writer holds, in the order of [`BEGIN`], [`COMMIT`], [`INSERT_ONE`] and
/// [`INSERT_CHUNK`].
fn held_sql() -> [&'static str; 4] {
    static INSERTS: std::sync::OnceLock<[String; 2]> = std::sync::OnceLock::new();
    let [one, chunk] = INSERTS.get_or_init(|| [insert_sql(1), insert_sql(CHUNK)]);
    ["BEGIN IMMEDIATE", "COMMIT", one, chunk]
}

/// The thread, namespace and head of a put, and the file's data version after its commit.
struct LastPut {
    thread: Arc<str>,
    ns: Arc<str>,
    head: Arc<str>,
    version: u32,
}

impl std::ops::Deref for Writer {
    type Target = WriteConn;
    fn deref(&self) -> &WriteConn {
        &self.conn
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

/// A write transaction of the writer, whose `BEGIN IMMEDIATE` and `COMMIT` are held statements
/// (rusqlite's `Transaction` compiles both anew each time, which costs as much as an insert):
/// rolled back when dropped uncommitted, a panic included.
struct WriteTx<'c> {
    conn: &'c WriteConn,
    done: bool,
}

impl<'c> WriteTx<'c> {
    fn begin(conn: &'c WriteConn) -> rusqlite::Result<Self> {
        conn.run(BEGIN, |_| Ok(()))?;
        Ok(Self { conn, done: false })
    }

    fn commit(mut self) -> rusqlite::Result<()> {
        self.conn.run(COMMIT, |_| Ok(()))?;
        self.done = true;
        Ok(())
    }
}

impl std::ops::Deref for WriteTx<'_> {
    type Target = WriteConn;
    fn deref(&self) -> &WriteConn {
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
///
/// The head is looked up in the file unless the writer's last put was to the same thread and
/// namespace and the file's data version is still the one that put's commit left (nothing has
/// been written since, by this connection or another): then it is the head that put stored.
fn put_batch(
    writer: &mut Writer,
    records: &[CheckpointRecord],
    expected: Option<&str>,
    made: Option<MadeByRun>,
) -> Result<(), Failure> {
    let needed = check::put(records, expected, made)?;
    let Some(first) = records.first() else { return Ok(()) };
    let (thread, ns) = (&first.thread_id, &first.ns);
    let last_put = writer.last_put.take();
    let tx = WriteTx::begin(&writer.conn)?;
    let head: Option<Arc<str>> = match last_put {
        Some(last) if last.thread == *thread && last.ns == *ns && data_version(&tx) == Some(last.version) => {
            Some(last.head)
        }
        _ => head_now(&tx, thread, ns)?.map(Arc::from),
    };
    if head.as_deref() != expected {
        return Err(SaverError::head_moved(thread, ns, expected, head.as_deref()).into());
    }
    // Every base the batch does not store itself must be stored already: checked before
    // anything is written.
    let mut index_of = None;
    for &check::Base { record, channel, at } in &needed {
        let record = &records[record];
        if index_of.is_none() {
            index_of = Some(tx.prepare_cached(BLOB_INDEX_OF)?);
        }
        let index_of = index_of.as_mut().expect("prepared above");
        let mut rows = index_of.query(params![thread, ns, at])?;
        let stored = match rows.next()? {
            None => false,
            Some(row) => {
                let (index, bytes) = (row.get_ref(0)?.as_blob()?, row.get::<_, i64>(1)? as usize);
                let entries = row_index(thread, &record.id, at, index, bytes)?;
                entries.iter().any(|e| e.channel == channel)
            }
        };
        if !stored {
            return Err(check::missing_base(record, channel, at).into());
        }
    }
    drop(index_of);
    insert_checkpoints(&tx, records)?;
    tx.commit()?;
    let last = records.last().expect("not empty");
    writer.last_put = data_version(&writer.conn).map(|version| LastPut {
        thread: thread.clone(),
        ns: ns.clone(),
        head: last.id.clone(),
        version,
    });
    Ok(())
}

/// The blob index of a checkpoint row and the length of its bytes.
const BLOB_INDEX_OF: &str =
    "SELECT blob_index, LENGTH(blob_bytes) FROM checkpoints WHERE thread_id = ?1 AND ns = ?2 AND id = ?3";

/// The query of [`head_now`].
const HEAD: &str = "SELECT id FROM checkpoints WHERE thread_id = ?1 AND ns = ?2 ORDER BY id DESC LIMIT 1";

/// The head of a thread and namespace: its greatest checkpoint id, found in the key index.
fn head_now(conn: &Connection, thread_id: &str, ns: &str) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached(HEAD)?
        .query_row(params![thread_id, ns], |r| r.get(0))
        .optional()
}

/// How many rows of a batch one insert statement writes. Running a statement costs about 3k
/// instructions besides its rows (step, cursors, halt, reset): a multi-row insert pays that
/// once for all its rows.
const CHUNK: usize = 16;

/// The parameters of a checkpoint row besides the thread and namespace.
const CHECKPOINT_PARAMS: usize = 11;

/// The insert statement of `rows` checkpoint rows; the rows share `?1` (the thread) and `?2`
/// (the namespace).
fn insert_sql(rows: usize) -> String {
    let rows: Vec<String> = (0..rows)
        .map(|row| {
            let own: Vec<String> = (0..CHECKPOINT_PARAMS)
                .map(|p| format!("?{}", 3 + row * CHECKPOINT_PARAMS + p))
                .collect();
            format!("(?1, ?2, {})", own.join(", "))
        })
        .collect();
    format!(
        "INSERT INTO checkpoints (thread_id, ns, id, parent_id, step, source, writes, metadata, created_at, \
         channels, body, blob_index, blob_bytes) VALUES {}",
        rows.join(", ")
    )
}

/// Inserts the checkpoint rows of `records` (one thread and namespace), [`CHUNK`] at a time,
/// then the rest one by one.
fn insert_checkpoints(tx: &WriteConn, records: &[CheckpointRecord]) -> rusqlite::Result<()> {
    let Some(first) = records.first() else { return Ok(()) };
    let split = records.len() - records.len() % CHUNK;
    for (statement, per, part) in [
        (INSERT_CHUNK, CHUNK, &records[..split]),
        (INSERT_ONE, 1, &records[split..]),
    ] {
        for rows in part.chunks(per) {
            // SQLite reads what is bound in place: the encoded columns outlive the run.
            let columns: Vec<Columns<'_>> = rows.iter().map(Columns::of).collect();
            tx.run(statement, |insert| {
                insert.text(1, &first.thread_id)?;
                insert.text(2, &first.ns)?;
                for (row, columns) in columns.iter().enumerate() {
                    columns.bind(insert, row)?;
                }
                Ok(())
            })?;
        }
    }
    Ok(())
}

/// A checkpoint row's columns besides the thread and namespace, encoded.
struct Columns<'r> {
    record: &'r CheckpointRecord,
    text: sql::Encoded,
    blob_index: Vec<u8>,
    blob_bytes: Cow<'r, [u8]>,
}

impl<'r> Columns<'r> {
    fn of(record: &'r CheckpointRecord) -> Self {
        Columns {
            record,
            text: sql::encode(record),
            blob_index: pack_index(&record.blobs),
            blob_bytes: pack_bytes(&record.blobs),
        }
    }

    /// Binds the columns as row `row` of a checkpoint insert.
    fn bind<'v>(&'v self, insert: &mut Binder<'_, 'v>, row: usize) -> rusqlite::Result<()> {
        let (record, at) = (self.record, 3 + row * CHECKPOINT_PARAMS);
        insert.text(at, &record.id)?;
        insert.text_or_null(at + 1, record.parent_id.as_deref())?;
        insert.int(at + 2, record.step)?;
        insert.text(at + 3, record.source.as_str())?;
        insert.text(at + 4, self.text.writes())?;
        insert.text(at + 5, self.text.metadata())?;
        insert.text(at + 6, self.text.created_at())?;
        insert.text(at + 7, self.text.channels())?;
        insert.blob(at + 8, &record.body)?;
        insert.blob(at + 9, &self.blob_index)?;
        insert.blob(at + 10, &self.blob_bytes)
    }
}

/// The `blob_index` column of a checkpoint row with `blobs`: for each blob, the channel (its
/// length as a little-endian `u32`, then its UTF-8), what it extends (the same, with the length
/// `u32::MAX` for a whole value) and the length of its bytes (a `u32`). The bytes themselves go,
/// one after another in the same order, to `blob_bytes` ([`pack_bytes`]), the row's last column:
/// a put reads only the short index of the checkpoints its record builds on, never their values.
fn pack_index(blobs: &[Blob]) -> Vec<u8> {
    let len = blobs
        .iter()
        .map(|b| 12 + b.channel.len() + b.delta_of.as_ref().map_or(0, |d| d.len()));
    let mut out = Vec::with_capacity(len.sum());
    for b in blobs {
        push_len(&mut out, b.channel.len());
        out.extend_from_slice(b.channel.as_bytes());
        match &b.delta_of {
            Some(base) => {
                push_len(&mut out, base.len());
                out.extend_from_slice(base.as_bytes());
            }
            None => out.extend_from_slice(&u32::MAX.to_le_bytes()),
        }
        push_len(&mut out, b.bytes.len());
    }
    out
}

/// Appends a length as a little-endian `u32` (SQLite's values are shorter than 2^31 bytes).
fn push_len(out: &mut Vec<u8>, len: usize) {
    out.extend_from_slice(&u32::try_from(len).unwrap_or(u32::MAX - 1).to_le_bytes());
}

/// The `blob_bytes` column of a checkpoint row with `blobs` (see [`pack_index`]): a lone blob's
/// bytes as they are, no copy.
fn pack_bytes(blobs: &[Blob]) -> Cow<'_, [u8]> {
    match blobs {
        [] => Cow::Borrowed(&[]),
        [one] => Cow::Borrowed(&one.bytes),
        many => {
            let mut out = Vec::with_capacity(many.iter().map(|b| b.bytes.len()).sum());
            for b in many {
                out.extend_from_slice(&b.bytes);
            }
            Cow::Owned(out)
        }
    }
}

/// One blob of a checkpoint row, as its `blob_index` lists it.
struct Entry<'a> {
    channel: &'a str,
    delta_of: Option<&'a str>,
    /// Where its bytes are in the row's `blob_bytes`.
    bytes: std::ops::Range<usize>,
}

/// The entries of a `blob_index` column; the error says what is wrong with it.
fn read_index(mut index: &[u8]) -> Result<Vec<Entry<'_>>, String> {
    fn len(index: &mut &[u8]) -> Result<u32, String> {
        let (n, rest) = index.split_first_chunk::<4>().ok_or("it ends inside a length")?;
        *index = rest;
        Ok(u32::from_le_bytes(*n))
    }
    fn text<'a>(index: &mut &'a [u8], n: u32) -> Result<&'a str, String> {
        let n = n as usize;
        if index.len() < n {
            return Err(format!("a name of {n} bytes runs past its end"));
        }
        let (name, rest) = index.split_at(n);
        *index = rest;
        std::str::from_utf8(name).map_err(|e| format!("a name is not UTF-8: {e}"))
    }
    let mut entries = Vec::new();
    let mut at = 0usize;
    while !index.is_empty() {
        let n = len(&mut index)?;
        let channel = text(&mut index, n)?;
        let delta_of = match len(&mut index)? {
            u32::MAX => None,
            n => Some(text(&mut index, n)?),
        };
        let end = at
            .checked_add(len(&mut index)? as usize)
            .ok_or("its lengths add up past the address space")?;
        entries.push(Entry {
            channel,
            delta_of,
            bytes: at..end,
        });
        at = end;
    }
    Ok(entries)
}

/// The error for a row whose blob columns cannot be read: `at`'s, met while reading `checkpoint`.
fn unreadable_blobs(thread: &str, checkpoint: &str, at: &str, e: &str) -> SaverError {
    SaverError::corrupt(
        thread,
        checkpoint,
        format!("the blobs stored under checkpoint `{at}` cannot be read: {e}"),
    )
}

/// The blob columns of a checkpoint row: `blob_index`, `blob_bytes`.
type BlobColumns = (Vec<u8>, Vec<u8>);

/// The entries of a row's `blob_index`, checked against the length of its `blob_bytes`: `at`'s
/// row, met while reading `checkpoint`.
fn row_index<'i>(
    thread: &str,
    checkpoint: &str,
    at: &str,
    index: &'i [u8],
    bytes: usize,
) -> Result<Vec<Entry<'i>>, SaverError> {
    let entries = read_index(index).map_err(|e| unreadable_blobs(thread, checkpoint, at, &e))?;
    let listed = entries.last().map_or(0, |e| e.bytes.end);
    if listed != bytes {
        let e = format!("its index lists {listed} bytes of values, it holds {bytes}");
        return Err(unreadable_blobs(thread, checkpoint, at, &e));
    }
    Ok(entries)
}

/// `channel`'s blob among a row's blob columns, as `(what it extends, bytes)`.
fn find_blob(
    thread: &str,
    checkpoint: &str,
    at: &str,
    (index, bytes): &BlobColumns,
    channel: &str,
) -> Result<Option<check::Link>, SaverError> {
    let entries = row_index(thread, checkpoint, at, index, bytes.len())?;
    Ok(entries
        .into_iter()
        .find(|e| e.channel == channel)
        .map(|e| (e.delta_of.map(str::to_owned), bytes[e.bytes].to_vec())))
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
        None => match head_now(&tx, thread_id, ns)? {
            Some(head) => head,
            None => return Ok(None),
        },
    };
    let row = tx
        .prepare_cached(&format!(
            "SELECT {}, blob_index, blob_bytes FROM checkpoints WHERE thread_id = ?1 AND ns = ?2 AND id = ?3",
            sql::COLUMNS
        ))?
        .query_row(params![thread_id, ns, id], |r| {
            Ok((read_row(r)?, (r.get(11)?, r.get(12)?)))
        })
        .optional()?;
    let Some((row, own)) = row else { return Ok(None) };
    let record = sql::decode(row)?;
    let values = {
        let mut blobs_of = tx.prepare_cached(
            "SELECT blob_index, blob_bytes FROM checkpoints WHERE thread_id = ?1 AND ns = ?2 AND id = ?3",
        )?;
        // The rows read so far (`None`: no such checkpoint): a checkpoint's unchanged channels
        // often point at one older row.
        let mut rows: Vec<(Arc<str>, Option<BlobColumns>)> = vec![(record.id.clone(), Some(own))];
        check::assemble(&record, |at, channel| {
            let i = match rows.iter().position(|(id, _)| **id == *at) {
                Some(i) => i,
                None => {
                    let columns = blobs_of
                        .query_row(params![thread_id, ns, at], |r| Ok((r.get(0)?, r.get(1)?)))
                        .optional()
                        .map_err(|e| backend(path, e))?;
                    rows.push((at.into(), columns));
                    rows.len() - 1
                }
            };
            match &rows[i].1 {
                Some(columns) => find_blob(thread_id, &record.id, at, columns, channel),
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
    conn: &WriteConn,
    thread_id: &str,
    ns: &str,
    checkpoint_id: &str,
    task_id: &str,
    writes: Vec<PendingWrite>,
) -> Result<(), Failure> {
    check::writes(thread_id, checkpoint_id, task_id, &writes)?;
    let tx = WriteTx::begin(conn)?;
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
        self.put_records(records, expected_head.map(str::to_owned), None)
            .boxed()
    }

    fn put_made<'a>(
        &'a self,
        records: Vec<CheckpointRecord>,
        expected_head: Option<&'a str>,
        made: MadeByRun,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        self.put_records(records, expected_head.map(str::to_owned), Some(made))
            .boxed()
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
        self.read(move |conn| Ok(head_now(conn, &thread_id, &ns)?)).boxed()
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
            let tx = WriteTx::begin(conn)?;
            for table in ["writes", "checkpoints"] {
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
                .prepare_cached("SELECT DISTINCT thread_id FROM checkpoints ORDER BY thread_id")?
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
            let mut usage = Usage {
                checkpoints: count("checkpoints")?,
                pending_writes: count("writes")?,
                ..Usage::default()
            };
            let mut indexes =
                tx.prepare_cached("SELECT id, blob_index, LENGTH(blob_bytes) FROM checkpoints WHERE thread_id = ?1")?;
            let mut rows = indexes.query([&thread_id])?;
            while let Some(row) = rows.next()? {
                let (id, index, bytes) = (
                    row.get_ref(0)?.as_str()?,
                    row.get_ref(1)?.as_blob()?,
                    row.get::<_, i64>(2)? as usize,
                );
                usage.blobs += row_index(&thread_id, id, id, index, bytes)?.len() as u64;
                usage.blob_bytes += bytes as u64;
            }
            drop(rows);
            drop(indexes);
            tx.commit()?;
            Ok(usage)
        })
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::{Blob, ChannelRef, Source};

    /// A put's statements are compiled once per connection, not once per put: each binds new
    /// values, and none of them may ask SQLite for a new plan when it does.
    #[tokio::test]
    async fn puts_reuse_their_compiled_statements() {
        let dir = std::env::temp_dir().join(format!("weir-sqlite-unit-{}", crate::checkpoint::new_checkpoint_id()));
        std::fs::create_dir_all(&dir).unwrap();
        let saver = SqliteSaver::open(dir.join("weir.db")).unwrap();
        let mut heads: [Option<Arc<str>>; 2] = [None, None];
        for step in 0..10 {
            // Two threads in turn: no put follows one to the same thread, so each looks its
            // head up.
            let (thread, head) = if step % 2 == 0 {
                ("t", &mut heads[0])
            } else {
                ("u", &mut heads[1])
            };
            let id: Arc<str> = crate::checkpoint::new_checkpoint_id().into();
            let record = CheckpointRecord {
                thread_id: thread.into(),
                ns: "".into(),
                id: id.clone(),
                parent_id: head.clone(),
                step: step as i64,
                source: Source::Loop,
                writes: Arc::default(),
                metadata: Default::default(),
                created_at: crate::checkpoint::Timestamp::now(),
                channels: vec![ChannelRef {
                    channel: "n".into(),
                    version: step + 1,
                    blob: Some(id.clone()),
                }],
                body: b"{}".to_vec(),
                // Each a delta onto the one before: a put also looks its base up.
                blobs: vec![Blob {
                    channel: "n".into(),
                    delta_of: head.clone(),
                    bytes: vec![b'1'],
                }],
            };
            saver.put(record, head.as_deref()).await.unwrap();
            *head = Some(id);
        }
        let conn = saver.inner.writer.lock().await;
        let compiled_again = |sql: &str| {
            conn.prepare_cached(sql)
                .unwrap()
                .get_status(rusqlite::StatementStatus::RePrepare)
        };
        assert_eq!(compiled_again(HEAD), 0);
        assert_eq!(compiled_again(BLOB_INDEX_OF), 0);
        // Every put ran the held statements, compiled when the file was opened.
        for (held, runs) in [(BEGIN, 10), (INSERT_ONE, 10), (COMMIT, 10), (INSERT_CHUNK, 0)] {
            assert_eq!(conn.runs_and_recompiles(held), (runs, 0), "held statement {held}");
        }
        drop(conn);
        drop(saver);
        // Every connection closed, its statements finalized first: the last one to close
        // removed the write-ahead log.
        assert!(!dir.join("weir.db-wal").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A put waits on the file, so the SQLite saver stores nothing in place: it hands a run's
    /// record back untouched, for `put_made`, and the thread stays without a head.
    #[tokio::test]
    async fn a_run_s_record_is_handed_back_untouched_and_nothing_is_stored_in_place() {
        let dir = std::env::temp_dir().join(format!("weir-sqlite-unit-{}", crate::checkpoint::new_checkpoint_id()));
        std::fs::create_dir_all(&dir).unwrap();
        let saver = SqliteSaver::open(dir.join("weir.db")).unwrap();
        let record = CheckpointRecord {
            thread_id: "t".into(),
            ns: "".into(),
            id: "cp-1".into(),
            parent_id: None,
            step: -1,
            source: Source::Input,
            writes: Arc::default(),
            metadata: Default::default(),
            created_at: crate::checkpoint::Timestamp::now(),
            channels: vec![ChannelRef {
                channel: "a".into(),
                version: 1,
                blob: Some("cp-1".into()),
            }],
            body: b"{}".to_vec(),
            blobs: vec![Blob {
                channel: "a".into(),
                delta_of: None,
                bytes: b"1".to_vec(),
            }],
        };
        match saver.try_put_in_place(record.clone(), None, MadeByRun::new()) {
            Err(back) => assert_eq!(back, record),
            Ok(stored) => panic!("stored in place: {stored:?}"),
        }
        assert_eq!(saver.head("t", "").await.unwrap(), None);
        drop(saver);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
