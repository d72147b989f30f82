//! The server's tables in the SQLite file: their migrations, versioned in `server_schema` (the
//! checkpointer owns `PRAGMA user_version`), the settings of the connection, and the JSON
//! containment function the searches call.

use super::conn::Fail;
use crate::db::DbError;
use rusqlite::functions::FunctionFlags;
use rusqlite::{Connection, TransactionBehavior};
use std::path::Path;
use std::time::Duration;

/// The steps from version `i` to `i + 1`; the current version is `MIGRATIONS.len()`. A later
/// release appends and never edits an entry.
const MIGRATIONS: &[&str] = &[
    // 1: assistants, threads, runs (the queue: `seq` is the order of arrival).
    r#"CREATE TABLE server_assistants (
        assistant_id TEXT PRIMARY KEY,
        graph_id TEXT NOT NULL,
        name TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        metadata TEXT NOT NULL,
        doc TEXT NOT NULL
    );
    CREATE TABLE server_threads (
        thread_id TEXT PRIMARY KEY,
        status TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        state_updated_at TEXT NOT NULL,
        metadata TEXT NOT NULL,
        "values" TEXT NOT NULL,
        doc TEXT NOT NULL
    );
    CREATE TABLE server_runs (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL UNIQUE,
        thread_id TEXT NOT NULL,
        status TEXT NOT NULL,
        worker TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        doc TEXT NOT NULL
    );
    CREATE INDEX server_runs_by_thread ON server_runs (thread_id, seq);
    CREATE INDEX server_runs_pending ON server_runs (seq) WHERE status = 'pending';
    CREATE UNIQUE INDEX server_runs_one_running ON server_runs (thread_id) WHERE status = 'running';"#,
    // 2: every version of an assistant (`PATCH` makes one, `/latest` picks one); the existing
    // assistants' current versions are the first rows.
    r#"CREATE TABLE server_assistant_versions (
        assistant_id TEXT NOT NULL,
        version INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        metadata TEXT NOT NULL,
        doc TEXT NOT NULL,
        PRIMARY KEY (assistant_id, version)
    );
    INSERT INTO server_assistant_versions (assistant_id, version, created_at, metadata, doc)
        SELECT assistant_id, json_extract(doc, '$.version'), updated_at, metadata, doc FROM server_assistants;"#,
    // 3: a run's not-before time (`after_seconds`), and its attempt: the token of the latest
    // claim, which fences off a worker that lost the run to the sweeper.
    r#"ALTER TABLE server_runs ADD COLUMN not_before TEXT;
    ALTER TABLE server_runs ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0;"#,
    // 4: threads' time-to-live (`ttl` on create and patch, or the config's default): what the
    // TTL sweeper reads.
    r#"CREATE TABLE server_thread_ttl (
        thread_id TEXT PRIMARY KEY,
        strategy TEXT NOT NULL,
        minutes REAL NOT NULL
    );"#,
    // 5: crons. Their times are Unix milliseconds (0 for none), which the scheduler compares.
    r#"CREATE TABLE server_crons (
        cron_id TEXT PRIMARY KEY,
        assistant_id TEXT NOT NULL,
        thread_id TEXT,
        enabled INTEGER NOT NULL,
        due_ms INTEGER NOT NULL,
        end_ms INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        metadata TEXT NOT NULL,
        doc TEXT NOT NULL
    );
    CREATE INDEX server_crons_due ON server_crons (due_ms) WHERE enabled = 1 AND due_ms > 0;
    CREATE INDEX server_crons_by_thread ON server_crons (thread_id);"#,
];

/// How long a connection waits for another's lock on the file before it fails.
const BUSY_WAIT: Duration = Duration::from_secs(5);

/// The version this weir writes.
const VERSION: i64 = MIGRATIONS.len() as i64;

/// Sets the connection up (WAL, busy timeout, the containment function), then creates or
/// migrates the tables; refuses a file whose server tables a newer weir wrote.
pub(super) fn prepare(conn: &mut Connection, path: &Path) -> Result<(), Fail> {
    configure(conn)?;
    let mode = weir_runtime::sqlite::turn_wal_on(conn, BUSY_WAIT)?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(path = %path.display(), mode, "the server's sqlite tables could not turn WAL mode on");
    }
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    // Another process may be migrating too: decide inside the write lock.
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS server_schema (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)",
    )?;
    let version: i64 = tx.query_row("SELECT COALESCE(MAX(version), 0) FROM server_schema", [], |r| r.get(0))?;
    if version > VERSION {
        return Err(Fail::Db(DbError::Backend(format!(
            "the server tables in `{}` are at schema version {version}, newer than this weir's {VERSION}: \
             upgrade weir (the file is left as it was)",
            path.display()
        ))));
    }
    for (from, step) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        tx.execute_batch(step)?;
        tx.execute(
            "INSERT INTO server_schema (version, applied_at) VALUES (?1, ?2)",
            rusqlite::params![from as i64 + 1, crate::db::rows::now()],
        )?;
    }
    tx.commit()?;
    Ok(())
}

/// What every connection to the server's tables needs: a busy timeout, room for its prepared
/// statements and plans that stay, and the JSON function the searches call.
fn configure(conn: &Connection) -> Result<(), Fail> {
    conn.busy_timeout(BUSY_WAIT)?;
    // Room for every statement the server prepares (three dozen): a run's writes and reads
    // never parse one again because others pushed it out of rusqlite's default 16.
    conn.set_prepared_statement_cache_capacity(64);
    // Plans never depend on bound values: under load, SQLite compiled listing a thread's runs
    // (bound to a status, which partial indexes name) and some writes again at each call, 5%
    // of the embedded server's time in a profile; none since. The queries that want those
    // indexes name their status as a literal.
    conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    json_contains(conn)
}

/// Sets up the checkpoint saver's write connection, which writes the server's tables too
/// (its busy timeout and fixed plans are the saver's): room for the server's statements beside
/// the saver's, and the JSON function.
pub(super) fn configure_writer(conn: &mut Connection) -> Result<(), Fail> {
    conn.set_prepared_statement_cache_capacity(128);
    json_contains(conn)
}

/// `server_json_contains(doc, pattern)`: whether the JSON `doc` contains `pattern`
/// ([`crate::db::contains`]), for searches by metadata.
fn json_contains(conn: &Connection) -> Result<(), Fail> {
    conn.create_scalar_function(
        "server_json_contains",
        2,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            let doc: String = ctx.get(0)?;
            let pattern: String = ctx.get(1)?;
            let parse =
                |text: &str| serde_json::from_str(text).map_err(|e| rusqlite::Error::UserFunctionError(Box::new(e)));
            Ok(crate::db::contains(&parse(&doc)?, &parse(&pattern)?))
        },
    )?;
    Ok(())
}

/// A read-only connection to the file at `path`, whose tables [`prepare`] made.
pub(super) fn reader(path: &Path) -> Result<Connection, Fail> {
    let conn = Connection::open(path)?;
    configure(&conn)?;
    conn.pragma_update(None, "query_only", true)?;
    Ok(conn)
}
