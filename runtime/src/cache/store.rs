//! The trait a node cache implements, and the wall clock its expiries are read from.

use crate::error::BoxError;
use futures::future::BoxFuture;
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where cached node writes are kept. Object safe; a graph holds an `Arc<dyn NodeCache>`.
pub trait NodeCache: Send + Sync + fmt::Debug + 'static {
    /// The value stored under `key`, unless it expired.
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, BoxError>>;
    /// Stores `value` under `key`, for `ttl` when given (else forever).
    fn put<'a>(&'a self, key: &'a str, value: Vec<u8>, ttl: Option<Duration>) -> BoxFuture<'a, Result<(), BoxError>>;
}

/// The time in ms since the epoch: the caches' clock, unless a test injects its own.
pub(super) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The fewest entries a cache holds before it sweeps out expired ones.
pub(super) const MIN_SWEEP: usize = 64;
