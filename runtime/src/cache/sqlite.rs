//! The node cache in a SQLite file.

use super::store::{now_ms, NodeCache, MIN_SWEEP};
use crate::error::BoxError;
use futures::future::BoxFuture;
use rusqlite::{params, Connection, OptionalExtension};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A cache in a SQLite file (one table, created on first use), shared by processes.
///
/// Expired rows are never served, and `put` deletes them, amortised as the in-memory cache
/// sweeps: once this handle has put as many rows as the table held after its last sweep (or
/// 64), one `DELETE` drops every expired row, by whichever process it was put. Each
/// put pays O(1) on average, and a table whose keys are never read again stays within about
/// twice its live rows.
#[derive(Debug, Clone)]
pub struct SqliteCache {
    inner: Arc<Mutex<Inner>>,
    /// The time in ms since the epoch; a test injects its own clock.
    now: fn() -> u64,
}

#[derive(Debug)]
struct Inner {
    conn: Connection,
    /// Rows put since the last sweep, and how many make the next one due.
    puts: usize,
    sweep_at: usize,
}

impl SqliteCache {
    /// Opens (or creates) the cache in the file at `path`.
    ///
    /// # Errors
    /// When the file cannot be opened or is not a SQLite database.
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<Self, BoxError> {
        Self::with_clock(path.as_ref(), now_ms)
    }

    fn with_clock(path: &std::path::Path, now: fn() -> u64) -> Result<Self, BoxError> {
        let conn = Connection::open(path)?;
        let wait = Duration::from_secs(5);
        conn.busy_timeout(wait)?;
        crate::sqlite::turn_wal_on(&conn, wait)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS weir_node_cache (
                 key TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL, expires_at INTEGER
             );",
        )?;
        let inner = Inner {
            conn,
            puts: 0,
            sweep_at: MIN_SWEEP,
        };
        Ok(Self {
            inner: Arc::new(Mutex::new(inner)),
            now,
        })
    }

    /// Runs `f` on the connection, on a thread tokio lends or on its blocking pool
    /// ([`crate::blocking::with_locked`]).
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Inner) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, BoxError> {
        Ok(crate::blocking::with_locked(&self.inner, f).await??)
    }
}

impl Inner {
    /// Counts a put, and deletes the expired rows when a sweep is due; the next one is due
    /// after as many puts as rows are left (at least [`MIN_SWEEP`]).
    fn sweep_if_due(&mut self, now: i64) -> rusqlite::Result<()> {
        self.puts += 1;
        if self.puts < self.sweep_at {
            return Ok(());
        }
        self.conn
            .prepare_cached("DELETE FROM weir_node_cache WHERE expires_at IS NOT NULL AND expires_at <= ?1")?
            .execute([now])?;
        let left: i64 = self
            .conn
            .query_row("SELECT COUNT(*) FROM weir_node_cache", [], |r| r.get(0))?;
        self.puts = 0;
        self.sweep_at = (left as usize).max(MIN_SWEEP);
        Ok(())
    }
}

impl NodeCache for SqliteCache {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, BoxError>> {
        let key = key.to_owned();
        let now = (self.now)() as i64;
        Box::pin(self.blocking(move |inner| {
            inner
                .conn
                .prepare_cached(
                    "SELECT value FROM weir_node_cache WHERE key = ?1 AND (expires_at IS NULL OR expires_at > ?2)",
                )?
                .query_row(params![key, now], |r| r.get(0))
                .optional()
        }))
    }
    fn put<'a>(&'a self, key: &'a str, value: Vec<u8>, ttl: Option<Duration>) -> BoxFuture<'a, Result<(), BoxError>> {
        let key = key.to_owned();
        let now = (self.now)() as i64;
        let expires = ttl.map(|t| now.saturating_add(t.as_millis() as i64));
        Box::pin(self.blocking(move |inner| {
            inner
                .conn
                .prepare_cached("INSERT OR REPLACE INTO weir_node_cache (key, value, expires_at) VALUES (?1, ?2, ?3)")?
                .execute(params![key, value, expires])?;
            inner.sweep_if_due(now)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A cache in a fresh file, on the clock `now`.
    fn open(name: &str, now: fn() -> u64) -> SqliteCache {
        let dir = std::env::temp_dir().join(format!("weir-sqlite-cache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        SqliteCache::with_clock(&dir.join("cache.db"), now).unwrap()
    }

    fn rows(cache: &SqliteCache, like: &str) -> i64 {
        let inner = cache.inner.lock().unwrap();
        inner
            .conn
            .query_row("SELECT COUNT(*) FROM weir_node_cache WHERE key LIKE ?1", [like], |r| {
                r.get(0)
            })
            .unwrap()
    }

    #[test]
    fn expired_rows_never_read_again_are_deleted_by_later_puts() {
        static NOW: AtomicU64 = AtomicU64::new(0);
        fn now() -> u64 {
            NOW.load(Ordering::SeqCst)
        }
        let cache = open("expired", now);
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        for i in 0..400u64 {
            // Each key lives 1 ms and is never read: by the next put, every earlier one expired.
            NOW.store(i * 10, Ordering::SeqCst);
            rt.block_on(cache.put(&format!("k{i}"), vec![0; 8], Some(Duration::from_millis(1))))
                .unwrap();
        }
        let held = rows(&cache, "%");
        assert!(held <= MIN_SWEEP as i64, "{held} rows held, nearly all expired");
        // The key put last is still alive, and still served; an expired one is not.
        assert_eq!(rt.block_on(cache.get("k399")).unwrap(), Some(vec![0; 8]));
        assert_eq!(rt.block_on(cache.get("k398")).unwrap(), None);
    }

    #[test]
    fn a_sweep_keeps_live_and_unexpiring_rows() {
        static NOW: AtomicU64 = AtomicU64::new(0);
        fn now() -> u64 {
            NOW.load(Ordering::SeqCst)
        }
        let cache = open("live", now);
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(cache.put("forever", b"f".to_vec(), None)).unwrap();
        rt.block_on(cache.put("hour", b"h".to_vec(), Some(Duration::from_secs(3600))))
            .unwrap();
        for i in 0..100u64 {
            rt.block_on(cache.put(&format!("short{i}"), vec![], Some(Duration::from_millis(5))))
                .unwrap();
        }
        NOW.store(1_000, Ordering::SeqCst);
        for i in 0..100u64 {
            rt.block_on(cache.put(&format!("late{i}"), vec![], None)).unwrap();
        }
        assert_eq!(rows(&cache, "short%"), 0, "expired rows remain");
        assert_eq!(rows(&cache, "%"), 102);
        assert_eq!(rt.block_on(cache.get("forever")).unwrap(), Some(b"f".to_vec()));
        assert_eq!(rt.block_on(cache.get("hour")).unwrap(), Some(b"h".to_vec()));
    }
}
