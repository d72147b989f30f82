//! Node caches: a node marked cacheable skips its execution when its cache key was seen before
//! (and has not expired), and takes the writes it made then (LangGraph's `CachePolicy`).

use crate::error::BoxError;
use futures::future::BoxFuture;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where cached node writes are kept. Object safe; a graph holds an `Arc<dyn NodeCache>`.
pub trait NodeCache: Send + Sync + fmt::Debug + 'static {
    /// The value stored under `key`, unless it expired.
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, BoxError>>;
    /// Stores `value` under `key`, for `ttl` when given (else forever).
    fn put<'a>(&'a self, key: &'a str, value: Vec<u8>, ttl: Option<Duration>) -> BoxFuture<'a, Result<(), BoxError>>;
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn expiry(ttl: Option<Duration>) -> Option<u64> {
    ttl.map(|t| now_ms() + t.as_millis() as u64)
}

/// A cached value and when it expires (ms since the epoch).
type Entry = (Vec<u8>, Option<u64>);

/// The fewest entries the in-memory cache holds before it sweeps out expired ones.
const MIN_SWEEP: usize = 64;

/// A cache in memory, shared by clones.
///
/// Expired entries are dropped when read, and swept out by `put` whenever the cache has doubled
/// since its last sweep: each insert pays amortised O(1), and the entries held stay within twice
/// the number alive at the last sweep (or [`MIN_SWEEP`]), even for keys never read again.
#[derive(Debug, Clone)]
pub struct InMemoryCache {
    inner: Arc<Mutex<Entries>>,
    /// The time in ms since the epoch; a test injects its own clock.
    now: fn() -> u64,
}

#[derive(Debug, Default)]
struct Entries {
    map: HashMap<String, Entry>,
    /// The size at which the next `put` sweeps out expired entries.
    sweep_at: usize,
}

impl Default for InMemoryCache {
    fn default() -> Self {
        Self::with_clock(now_ms)
    }
}

impl InMemoryCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    fn with_clock(now: fn() -> u64) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Entries {
                map: HashMap::new(),
                sweep_at: MIN_SWEEP,
            })),
            now,
        }
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Entries {
    /// Drops the expired entries once the map has reached `sweep_at`, then sets the next sweep
    /// at twice what is left.
    fn sweep_if_due(&mut self, now: u64) {
        if self.map.len() < self.sweep_at {
            return;
        }
        self.map.retain(|_, (_, expires)| expires.is_none_or(|e| e > now));
        self.sweep_at = (2 * self.map.len()).max(MIN_SWEEP);
    }
}

impl NodeCache for InMemoryCache {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, BoxError>> {
        let now = (self.now)();
        let mut entries = self.entries();
        let hit = match entries.map.get(key) {
            Some((_, Some(expires))) if *expires <= now => {
                entries.map.remove(key);
                None
            }
            Some((v, _)) => Some(v.clone()),
            None => None,
        };
        Box::pin(async move { Ok(hit) })
    }
    fn put<'a>(&'a self, key: &'a str, value: Vec<u8>, ttl: Option<Duration>) -> BoxFuture<'a, Result<(), BoxError>> {
        let now = (self.now)();
        let mut entries = self.entries();
        entries.sweep_if_due(now);
        let expires = ttl.map(|t| now + t.as_millis() as u64);
        entries.map.insert(key.to_owned(), (value, expires));
        Box::pin(async { Ok(()) })
    }
}

/// A cache in a SQLite file (one table, created on first use), shared by processes.
#[cfg(feature = "sqlite")]
#[derive(Debug, Clone)]
pub struct SqliteCache {
    conn: Arc<Mutex<rusqlite::Connection>>,
}

#[cfg(feature = "sqlite")]
impl SqliteCache {
    /// Opens (or creates) the cache in the file at `path`.
    ///
    /// # Errors
    /// When the file cannot be opened or is not a SQLite database.
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<Self, BoxError> {
        let conn = rusqlite::Connection::open(path)?;
        conn.busy_timeout(Duration::from_secs(5))?;
        conn.execute_batch(
            "PRAGMA journal_mode=WAL;
             CREATE TABLE IF NOT EXISTS weir_node_cache (
                 key TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL, expires_at INTEGER
             );",
        )?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&rusqlite::Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, BoxError> {
        let conn = self.conn.clone();
        let r = tokio::task::spawn_blocking(move || f(&conn.lock().unwrap_or_else(|p| p.into_inner()))).await?;
        Ok(r?)
    }
}

#[cfg(feature = "sqlite")]
impl NodeCache for SqliteCache {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, BoxError>> {
        let key = key.to_owned();
        Box::pin(async move {
            let now = now_ms() as i64;
            self.blocking(move |c| {
                use rusqlite::OptionalExtension;
                c.prepare_cached(
                    "SELECT value FROM weir_node_cache WHERE key = ?1 AND (expires_at IS NULL OR expires_at > ?2)",
                )?
                .query_row(rusqlite::params![key, now], |r| r.get(0))
                .optional()
            })
            .await
        })
    }
    fn put<'a>(&'a self, key: &'a str, value: Vec<u8>, ttl: Option<Duration>) -> BoxFuture<'a, Result<(), BoxError>> {
        let key = key.to_owned();
        let expires = expiry(ttl).map(|e| e as i64);
        Box::pin(async move {
            self.blocking(move |c| {
                c.prepare_cached("INSERT OR REPLACE INTO weir_node_cache (key, value, expires_at) VALUES (?1, ?2, ?3)")?
                    .execute(rusqlite::params![key, value, expires])
                    .map(|_| ())
            })
            .await
        })
    }
}

/// Which runs of a node share their writes: the key of a run is computed from the node's input.
pub struct CachePolicy<S> {
    pub(crate) key: Arc<dyn Fn(&S) -> String + Send + Sync>,
    pub(crate) ttl: Option<Duration>,
}

impl<S> Clone for CachePolicy<S> {
    fn clone(&self) -> Self {
        Self {
            key: self.key.clone(),
            ttl: self.ttl,
        }
    }
}

impl<S> fmt::Debug for CachePolicy<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachePolicy")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl<S> CachePolicy<S> {
    /// Runs with the same `key(state)` share their writes, forever.
    pub fn new(key: impl Fn(&S) -> String + Send + Sync + 'static) -> Self {
        Self {
            key: Arc::new(key),
            ttl: None,
        }
    }
    /// Cached writes expire after `ttl`.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn expired_keys_never_read_again_are_swept_out_by_later_puts() {
        static NOW: AtomicU64 = AtomicU64::new(0);
        fn now() -> u64 {
            NOW.load(Ordering::SeqCst)
        }
        let cache = InMemoryCache::with_clock(now);
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        for i in 0..10_000u64 {
            // Each key lives 1 ms and is never read: by the next put, every earlier one expired.
            NOW.store(i * 10, Ordering::SeqCst);
            rt.block_on(cache.put(&format!("k{i}"), vec![0; 8], Some(Duration::from_millis(1))))
                .unwrap();
        }
        let held = cache.entries().map.len();
        assert!(held <= MIN_SWEEP, "{held} entries held, nearly all expired");
        // The key put last is still alive, and still served.
        assert_eq!(rt.block_on(cache.get("k9999")).unwrap(), Some(vec![0; 8]));
    }

    #[test]
    fn a_sweep_keeps_live_and_unexpiring_entries() {
        static NOW: AtomicU64 = AtomicU64::new(0);
        fn now() -> u64 {
            NOW.load(Ordering::SeqCst)
        }
        let cache = InMemoryCache::with_clock(now);
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(cache.put("forever", b"f".to_vec(), None)).unwrap();
        rt.block_on(cache.put("hour", b"h".to_vec(), Some(Duration::from_secs(3600))))
            .unwrap();
        for i in 0..200u64 {
            rt.block_on(cache.put(&format!("short{i}"), vec![], Some(Duration::from_millis(5))))
                .unwrap();
        }
        NOW.store(1_000, Ordering::SeqCst);
        for i in 0..200u64 {
            rt.block_on(cache.put(&format!("late{i}"), vec![], None)).unwrap();
        }
        let entries = cache.entries();
        assert!(
            !entries.map.keys().any(|k| k.starts_with("short")),
            "expired keys remain"
        );
        assert_eq!(entries.map.len(), 202);
        drop(entries);
        assert_eq!(rt.block_on(cache.get("forever")).unwrap(), Some(b"f".to_vec()));
        assert_eq!(rt.block_on(cache.get("hour")).unwrap(), Some(b"h".to_vec()));
    }
}
