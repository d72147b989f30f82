//! [`SqliteStore`]: items in SQLite tables of their own (`store`, `store_vectors`), which may sit
//! in the file a [`SqliteSaver`](crate::checkpoint::SqliteSaver) checkpoints to. A search's
//! prefix, filter (with `json_extract`), order and page run in SQL; cosine ranking runs over the
//! rows under the prefix (no vector index); no SQLite call runs on a tokio worker (each runs on
//! a thread tokio lends, or on its blocking pool).

use super::backend::{Backend, Row, Scan, Vectors, Write};
use super::core::Core;
use super::plan::{plan, Cond, Operand};
use super::{store_over_core, StoreConfig, StoreError};
use crate::checkpoint::Timestamp;
use crate::sqlite::WriteGate;
use futures::future::BoxFuture;
use futures::FutureExt;
use rusqlite::types::Value as Sql;
use rusqlite::{params, params_from_iter, Connection, OptionalExtension};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The items' table, clustered by namespace then key (`WITHOUT ROWID`): a namespace's rows lie
/// together, so a search reads them in a row instead of one table lookup each (a rowid table,
/// as older files have, keeps rows in the order they were first written).
const STORE_TABLE: &str = "(
    prefix TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    expires_at INTEGER,
    ttl_minutes REAL,
    PRIMARY KEY (prefix, key)
) WITHOUT ROWID";

/// The indexes and the vectors' table, made after `store`.
const SCHEMA: &str = "
CREATE INDEX IF NOT EXISTS store_expires_at_idx ON store (expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS store_vectors (
    prefix TEXT NOT NULL,
    key TEXT NOT NULL,
    field_name TEXT NOT NULL,
    embedding BLOB NOT NULL,
    PRIMARY KEY (prefix, key, field_name)
);";

/// Rows live at `?2` (micros) under the prefix `?1` (`''`: everywhere). The range
/// `[?1 || '.', ?1 || '/')` (`/` follows `.`) holds exactly the prefixes below `?1`, and reads
/// the primary key's index.
const LIVE_UNDER: &str = "(?1 = '' OR prefix = ?1 OR (prefix >= ?1 || '.' AND prefix < ?1 || '/')) \
                          AND (expires_at IS NULL OR expires_at > ?2)";

/// The live rows at `?2` under a non-empty prefix `?1`, in terms SQLite's planner takes to the
/// primary key's index.
const LIVE_BELOW: &str = "(prefix = ?1 OR (prefix >= ?1 || '.' AND prefix < ?1 || '/')) \
                          AND (expires_at IS NULL OR expires_at > ?2)";

/// The distinct live prefixes at `?1`: a skip scan over the primary key, one index probe per
/// prefix rather than a read of every row.
const PREFIXES: &str = "WITH RECURSIVE p(prefix) AS (
        SELECT (SELECT MIN(prefix) FROM store)
        UNION ALL
        SELECT (SELECT MIN(prefix) FROM store WHERE prefix > p.prefix) FROM p WHERE p.prefix IS NOT NULL)
    SELECT prefix FROM p WHERE prefix IS NOT NULL AND EXISTS (
        SELECT 1 FROM store s WHERE s.prefix = p.prefix AND (s.expires_at IS NULL OR s.expires_at > ?1))";

/// A store in a SQLite file (the embedded default).
#[derive(Debug)]
pub struct SqliteStore {
    core: Core<Db>,
}

impl SqliteStore {
    /// Opens (or creates) the store's tables in the SQLite file at `path`; the file may be the
    /// one a `SqliteSaver` uses.
    ///
    /// # Errors
    /// When the file cannot be opened or the tables cannot be made.
    pub fn open(path: impl AsRef<Path>, config: StoreConfig) -> Result<Self, StoreError> {
        let path = path.as_ref();
        let conn = Connection::open(path)
            .map_err(|e| StoreError::backend(format!("cannot open the SQLite store at {}", path.display()), e))?;
        Self::with_connection(conn, config, WriteGate::for_file(path))
    }

    /// A store in a private in-memory SQLite database.
    ///
    /// # Errors
    /// When the tables cannot be made.
    pub fn open_in_memory(config: StoreConfig) -> Result<Self, StoreError> {
        let conn = Connection::open_in_memory().map_err(|e| StoreError::backend("cannot open SQLite in memory", e))?;
        Self::with_connection(conn, config, WriteGate::for_file(Path::new("")))
    }

    fn with_connection(mut conn: Connection, config: StoreConfig, gate: WriteGate) -> Result<Self, StoreError> {
        let wait = std::time::Duration::from_secs(5);
        conn.busy_timeout(wait).map_err(fail)?;
        // An in-memory database stays in `memory` mode.
        crate::sqlite::turn_wal_on(&conn, wait).map_err(fail)?;
        make_tables(&mut conn).map_err(fail)?;
        Ok(Self {
            core: Core {
                backend: Db {
                    conn: Arc::new(Mutex::new(conn)),
                    gate,
                },
                config,
            },
        })
    }
}

store_over_core!(SqliteStore);

/// Makes the tables, or moves the rows of a rowid `store` table (an older file's) into a
/// clustered one, in one transaction: a crash leaves the old table as it was, and of two
/// processes opening the file at once, the second finds the work done.
fn make_tables(conn: &mut Connection) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let made: Option<String> = tx
        .query_row(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'store'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    match made {
        None => tx.execute_batch(&format!("CREATE TABLE store {STORE_TABLE}"))?,
        Some(sql) if !sql.to_ascii_uppercase().contains("WITHOUT ROWID") => tx.execute_batch(&format!(
            "CREATE TABLE store_clustered {STORE_TABLE};
             INSERT INTO store_clustered ({COLUMNS}) SELECT {COLUMNS} FROM store;
             DROP TABLE store;
             ALTER TABLE store_clustered RENAME TO store;"
        ))?,
        Some(_) => {}
    }
    tx.execute_batch(SCHEMA)?;
    tx.commit()
}

fn fail(e: rusqlite::Error) -> StoreError {
    StoreError::backend("the SQLite store failed", e)
}

/// The connection, used by one blocking call at a time.
#[derive(Debug, Clone)]
struct Db {
    conn: Arc<Mutex<Connection>>,
    /// Held around each write: the process's other writers to the file wait on it.
    gate: WriteGate,
}

type Done<'a, T> = BoxFuture<'a, Result<T, StoreError>>;

impl Db {
    /// Runs `f` on the connection, on a thread tokio lends or on its blocking pool
    /// ([`crate::blocking::with_locked`]).
    fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Done<'static, T> {
        self.on_connection(false, f)
    }

    /// Runs `f`, a point read, on the connection: right here when it is free, else as
    /// [`call`](Self::call) ([`crate::blocking::with_locked_briefly`]).
    fn read_point<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Done<'static, T> {
        self.on_connection(true, f)
    }

    fn on_connection<T: Send + 'static>(
        &self,
        briefly: bool,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Done<'static, T> {
        let db = self.conn.clone();
        async move {
            let ran = if briefly {
                crate::blocking::with_locked_briefly(&db, f).await
            } else {
                crate::blocking::with_locked(&db, f).await
            };
            match ran {
                Ok(r) => r.map_err(fail),
                Err(e) => Err(StoreError::backend("the SQLite store's call did not finish", e)),
            }
        }
        .boxed()
    }

    /// Runs `f` in a write transaction of its own, as [`call`](Self::call) does, holding the
    /// file's [`WriteGate`].
    fn write_tx<T: Send + 'static>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<T> + Send + 'static,
    ) -> Done<'static, T> {
        let gate = self.gate.clone();
        self.call(move |c| {
            let _held = gate.enter();
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let done = f(&tx)?;
            tx.commit()?;
            Ok(done)
        })
    }
}

fn micros(t: Timestamp) -> i64 {
    i64::try_from(t.unix_micros()).unwrap_or(i64::MAX)
}

fn time(m: i64) -> Timestamp {
    Timestamp::from_unix_micros(u64::try_from(m).unwrap_or(0))
}

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    let text: String = r.get(2)?;
    let value = serde_json::from_str(&text)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(2, rusqlite::types::Type::Text, Box::new(e)))?;
    Ok(Row {
        prefix: r.get(0)?,
        key: r.get(1)?,
        value,
        created_at: time(r.get(3)?),
        updated_at: time(r.get(4)?),
        expires_at: r.get::<_, Option<i64>>(5)?.map(time),
        ttl_minutes: r.get(6)?,
    })
}

const COLUMNS: &str = "prefix, key, value, created_at, updated_at, expires_at, ttl_minutes";

/// Inserts or replaces `row` (keeping a live row's `created_at`) and replaces its vectors.
fn put_row(tx: &rusqlite::Transaction<'_>, row: &Row, vectors: &Vectors) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO store (prefix, key, value, created_at, updated_at, expires_at, ttl_minutes)
         VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6)
         ON CONFLICT (prefix, key) DO UPDATE SET value = excluded.value,
             updated_at = excluded.updated_at, expires_at = excluded.expires_at,
             ttl_minutes = excluded.ttl_minutes,
             created_at = CASE WHEN store.expires_at IS NOT NULL AND store.expires_at <= excluded.updated_at
                          THEN excluded.created_at ELSE store.created_at END",
    )?
    .execute(params![
        row.prefix,
        row.key,
        row.value.to_string(),
        micros(row.updated_at),
        row.expires_at.map(micros),
        row.ttl_minutes
    ])?;
    tx.prepare_cached("DELETE FROM store_vectors WHERE prefix = ?1 AND key = ?2")?
        .execute(params![row.prefix, row.key])?;
    let mut insert =
        tx.prepare_cached("INSERT INTO store_vectors (prefix, key, field_name, embedding) VALUES (?1, ?2, ?3, ?4)")?;
    for (field, v) in vectors {
        insert.execute(params![row.prefix, row.key, field, to_blob(v)])?;
    }
    Ok(())
}

fn to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn from_blob(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

impl Backend for Db {
    fn get<'a>(&'a self, prefix: &'a str, key: &'a str, now: Timestamp) -> Done<'a, Option<Row>> {
        let (prefix, key) = (prefix.to_owned(), key.to_owned());
        self.read_point(move |c| {
            let sql = format!(
                "SELECT {COLUMNS} FROM store WHERE prefix = ?1 AND key = ?2 AND (expires_at IS NULL OR expires_at > ?3)"
            );
            c.prepare_cached(&sql)?
                .query_row(params![prefix, key, micros(now)], row)
                .optional()
        })
    }

    fn write(&self, writes: Vec<Write>) -> Done<'_, ()> {
        self.write_tx(move |tx| {
            for w in &writes {
                match w {
                    Write::Put(row, vectors) => put_row(tx, row, vectors)?,
                    Write::Delete { prefix, key } => {
                        tx.prepare_cached("DELETE FROM store WHERE prefix = ?1 AND key = ?2")?
                            .execute(params![prefix, key])?;
                        tx.prepare_cached("DELETE FROM store_vectors WHERE prefix = ?1 AND key = ?2")?
                            .execute(params![prefix, key])?;
                    }
                }
            }
            Ok(())
        })
    }

    fn scan<'a>(&'a self, scan: Scan<'a>) -> Done<'a, Vec<(Row, Vectors)>> {
        let mut params = vec![Sql::Text(scan.prefix.to_owned()), Sql::Integer(micros(scan.now))];
        let conds = scan.filter.map(plan);
        let under = if scan.prefix.is_empty() { LIVE_UNDER } else { LIVE_BELOW };
        let mut sql = format!("SELECT {COLUMNS} FROM store WHERE {under}");
        if let Some(Some(conds)) = &conds {
            for c in conds {
                sql.push_str(" AND ");
                sql.push_str(&condition(c, &mut params));
            }
        }
        // A filter SQL cannot say is applied in Rust, with the order and page.
        let in_sql = matches!(conds, None | Some(Some(_)));
        if let (Some((offset, limit)), true) = (scan.page, in_sql) {
            let limit = bind(&mut params, Sql::Integer(i64::try_from(limit).unwrap_or(i64::MAX)));
            let offset = bind(&mut params, Sql::Integer(i64::try_from(offset).unwrap_or(i64::MAX)));
            sql.push_str(&format!(
                " ORDER BY updated_at DESC, prefix, key LIMIT {limit} OFFSET {offset}"
            ));
        }
        let (filter, page) = match in_sql {
            true => (None, None),
            false => (scan.filter.cloned(), scan.page),
        };
        let vectors = scan.vectors;
        self.call(move |c| {
            let mut stmt = c.prepare_cached(&sql)?;
            let rows: Vec<Row> = stmt
                .query_map(params_from_iter(params), row)?
                .collect::<Result<_, _>>()?;
            let mut found = Vec::with_capacity(rows.len());
            let mut stmt =
                c.prepare_cached("SELECT field_name, embedding FROM store_vectors WHERE prefix = ?1 AND key = ?2")?;
            for r in rows {
                let v: Vectors = if vectors {
                    stmt.query_map(params![r.prefix, r.key], |x| {
                        Ok((x.get(0)?, from_blob(&x.get::<_, Vec<u8>>(1)?)))
                    })?
                    .collect::<Result<_, _>>()?
                } else {
                    Vec::new()
                };
                found.push((r, v));
            }
            let rest = Scan {
                prefix: "",
                now: Timestamp::default(),
                filter: filter.as_ref(),
                vectors,
                page,
            };
            Ok(rest.finish(found.into_iter()))
        })
    }

    fn touch(&self, keys: Vec<(String, String)>, now: Timestamp) -> Done<'_, ()> {
        self.write_tx(move |tx| {
            let mut stmt = tx.prepare_cached(
                "UPDATE store SET expires_at = ?3 + CAST(ttl_minutes * 60000000 AS INTEGER)
                 WHERE prefix = ?1 AND key = ?2 AND ttl_minutes IS NOT NULL",
            )?;
            for (prefix, key) in &keys {
                stmt.execute(params![prefix, key, micros(now)])?;
            }
            Ok(())
        })
    }

    fn prefixes(&self, now: Timestamp) -> Done<'_, Vec<String>> {
        self.call(move |c| {
            let mut stmt = c.prepare_cached(PREFIXES)?;
            let found = stmt.query_map([micros(now)], |r| r.get(0))?.collect();
            found
        })
    }

    fn sweep(&self, now: Timestamp) -> Done<'_, usize> {
        self.write_tx(move |tx| {
            tx.execute(
                "DELETE FROM store_vectors WHERE (prefix, key) IN
                 (SELECT prefix, key FROM store WHERE expires_at IS NOT NULL AND expires_at <= ?1)",
                [micros(now)],
            )?;
            let n = tx.execute(
                "DELETE FROM store WHERE expires_at IS NOT NULL AND expires_at <= ?1",
                [micros(now)],
            )?;
            Ok(n)
        })
    }
}

/// Adds a parameter; its placeholder.
fn bind(params: &mut Vec<Sql>, value: Sql) -> String {
    params.push(value);
    format!("?{}", params.len())
}

/// The SQL of one planned condition on `value` (never NULL: a missing field is false).
fn condition(c: &Cond, params: &mut Vec<Sql>) -> String {
    let (path, operand) = match c {
        Cond::Never => return "0".to_owned(),
        Cond::Eq(path, o) | Cond::Ne(path, o) | Cond::Order(path, _, o) => (path, o),
    };
    let quoted: Vec<String> = path.iter().map(|l| format!("\"{l}\"")).collect();
    let path = bind(params, Sql::Text(format!("$.{}", quoted.join("."))));
    let kind = match operand {
        Operand::Num(_) => "IN ('integer', 'real')",
        Operand::Str(_) => "= 'text'",
        Operand::Bool(true) => "= 'true'",
        Operand::Bool(false) => "= 'false'",
        Operand::Null => "= 'null'",
    };
    let value = match operand {
        Operand::Num(n) => Some(bind(params, Sql::Real(*n))),
        Operand::Str(s) => Some(bind(params, Sql::Text(s.clone()))),
        Operand::Bool(_) | Operand::Null => None,
    };
    let typed = format!("json_type(value, {path}) {kind}");
    let test = match (c, value) {
        (Cond::Order(_, cmp, _), Some(v)) => format!("{typed} AND json_extract(value, {path}) {} {v}", cmp.sql()),
        (_, Some(v)) => format!("{typed} AND json_extract(value, {path}) = {v}"),
        (_, None) => typed,
    };
    match c {
        Cond::Ne(..) => format!("NOT COALESCE({test}, 0)"),
        _ => format!("COALESCE({test}, 0)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use std::time::Duration;

    /// A put waits for the file's write gate, which the process's other writers to the file
    /// (a checkpointer's, the server's tables') hold around their transactions.
    // The gate is held across awaits on purpose: what waits for it runs on another thread.
    #[allow(clippy::await_holding_lock)]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_put_waits_for_the_file_s_write_gate() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.db");
        let store = Arc::new(SqliteStore::open(&path, StoreConfig::default()).unwrap());
        let gate = WriteGate::for_file(&path);
        let held = gate.enter();
        let put = tokio::spawn({
            let store = store.clone();
            async move { store.put(&["a"], "k", serde_json::json!({"v": 1})).await }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!put.is_finished(), "the put waits for the gate");
        drop(held);
        put.await.unwrap().unwrap();
        assert!(store.get(&["a"], "k").await.unwrap().is_some());
    }
}
