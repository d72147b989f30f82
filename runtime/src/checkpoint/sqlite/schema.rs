//! The SQLite file's schema: the migrations from each version to the next, the check that
//! refuses a file of a newer weir, and the settings every connection gets.

use super::{backend, pack_bytes, pack_index, SqliteOptions};
use crate::checkpoint::{Blob, SaverError};
use rusqlite::{params, Connection, TransactionBehavior};
use std::path::Path;

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
    // 4: retention. The blobs of pruned checkpoints that kept ones still need, and the id each
    // pruned thread was pruned through.
    Migration::Sql(
        "CREATE TABLE retained_blobs (
        thread_id TEXT NOT NULL,
        ns TEXT NOT NULL,
        checkpoint_id TEXT NOT NULL,
        channel TEXT NOT NULL,
        delta_of TEXT,
        bytes BLOB NOT NULL,
        PRIMARY KEY (thread_id, ns, checkpoint_id, channel)
    );
    CREATE TABLE pruned (
        thread_id TEXT NOT NULL PRIMARY KEY,
        through TEXT NOT NULL
    ) WITHOUT ROWID;",
    ),
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

/// A failure while opening: the schema is too new, or SQLite failed.
pub(super) enum OpenError {
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
    pub(super) fn into_saver_error(self, path: &Path) -> SaverError {
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
pub(super) fn migrate(conn: &mut Connection, path: &Path, options: &SqliteOptions) -> Result<(), OpenError> {
    conn.busy_timeout(options.busy_timeout)?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > VERSION {
        return Err(OpenError::TooNew(version));
    }
    let mode = crate::sqlite::turn_wal_on(conn, options.busy_timeout)?;
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
pub(super) fn configure(conn: &Connection, options: &SqliteOptions) -> rusqlite::Result<()> {
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
