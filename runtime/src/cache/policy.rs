//! Which runs of a node share their writes.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

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
