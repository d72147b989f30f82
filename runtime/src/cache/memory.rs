//! The in-memory node cache.

use super::store::{now_ms, NodeCache, MIN_SWEEP};
use crate::error::BoxError;
use futures::future::BoxFuture;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A cached value and when it expires (ms since the epoch).
type Entry = (Vec<u8>, Option<u64>);

/// A cache in memory, shared by clones.
///
/// Expired entries are dropped when read, and swept out by `put` whenever the cache has doubled
/// since its last sweep: each insert pays amortised O(1), and the entries held stay within twice
/// the number alive at the last sweep (or 64), even for keys never read again.
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
