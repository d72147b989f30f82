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

/// A cache in memory, shared by clones.
#[derive(Debug, Clone, Default)]
pub struct InMemoryCache {
    entries: Arc<Mutex<HashMap<String, Entry>>>,
}

impl InMemoryCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }
}

impl NodeCache for InMemoryCache {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, BoxError>> {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let hit = match entries.get(key) {
            Some((_, Some(expires))) if *expires <= now_ms() => {
                entries.remove(key);
                None
            }
            Some((v, _)) => Some(v.clone()),
            None => None,
        };
        Box::pin(async move { Ok(hit) })
    }
    fn put<'a>(&'a self, key: &'a str, value: Vec<u8>, ttl: Option<Duration>) -> BoxFuture<'a, Result<(), BoxError>> {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.to_owned(), (value, expiry(ttl)));
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
