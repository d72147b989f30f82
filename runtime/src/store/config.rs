//! How a store is set up ([`StoreConfig`]): its search index ([`IndexConfig`]), its TTL policy
//! ([`TtlConfig`]) and the clock it reads the time from ([`Clock`]).

use super::Embeddings;
use crate::checkpoint::Timestamp;
use std::fmt;
use std::sync::Arc;

/// The store's time source. The system clock by default; tests hand a clock they move by hand,
/// so TTLs expire without waiting.
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> Timestamp + Send + Sync>);

impl Clock {
    /// The system clock.
    pub fn system() -> Self {
        Self(Arc::new(Timestamp::now))
    }
    /// A clock that reads `f`.
    pub fn from_fn(f: impl Fn() -> Timestamp + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }
    /// The time now.
    pub fn now(&self) -> Timestamp {
        (self.0)()
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::system()
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Clock")
    }
}

/// Semantic search (LangGraph's `IndexConfig`): the embeddings, their dimensions, and the
/// fields of a value that are embedded unless a put says otherwise.
#[derive(Debug, Clone)]
pub struct IndexConfig {
    /// The number of dimensions of every vector.
    pub dims: usize,
    /// What turns text into vectors.
    pub embed: Arc<dyn Embeddings>,
    /// Field paths embedded by default; `["$"]` (the default) is the whole value.
    pub fields: Vec<String>,
}

impl IndexConfig {
    /// An index of `dims` dimensions over whole values.
    pub fn new(dims: usize, embed: impl Embeddings) -> Self {
        Self {
            dims,
            embed: Arc::new(embed),
            fields: vec!["$".to_owned()],
        }
    }
    /// Embeds these field paths by default.
    pub fn fields(mut self, fields: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.fields = fields.into_iter().map(Into::into).collect();
        self
    }
}

/// The longest TTL, in minutes: 2,147,483,647 (about 4,000 years), the most LangGraph's
/// PostgreSQL `ttl_minutes` column (an `integer`) holds, and an expiry every backend can still
/// write as a date. A put with a longer one is refused; an item that should never expire has no
/// TTL.
pub const MAX_TTL_MINUTES: f64 = i32::MAX as f64;

/// Time to live (LangGraph's `TTLConfig`). Expired items are never returned; a sweeper
/// ([`spawn_sweeper`](super::spawn_sweeper)) deletes them.
#[derive(Debug, Clone, PartialEq)]
pub struct TtlConfig {
    /// Whether reads (get, search) restart an item's TTL when they do not say (default true).
    pub refresh_on_read: bool,
    /// Minutes an item lives when its put gives no TTL; `None`: forever.
    pub default_ttl: Option<f64>,
    /// How often a sweeper started for this store runs, in minutes.
    pub sweep_interval_minutes: Option<f64>,
}

impl Default for TtlConfig {
    fn default() -> Self {
        Self {
            refresh_on_read: true,
            default_ttl: None,
            sweep_interval_minutes: None,
        }
    }
}

impl TtlConfig {
    /// The sweeper's interval ([`sweep_interval_minutes`](Self::sweep_interval_minutes)) for
    /// [`spawn_sweeper`](super::spawn_sweeper); `None` when not set, not a positive number, or
    /// too long for a [`Duration`](std::time::Duration) (no sweeper).
    ///
    /// ```
    /// use weir_runtime::store::TtlConfig;
    ///
    /// let every = |m| TtlConfig { sweep_interval_minutes: Some(m), ..TtlConfig::default() }.sweep_interval();
    /// assert_eq!(every(0.5), Some(std::time::Duration::from_secs(30)));
    /// assert_eq!(every(-1.0), None);
    /// assert_eq!(every(1e300), None);
    /// ```
    pub fn sweep_interval(&self) -> Option<std::time::Duration> {
        self.sweep_interval_minutes
            .filter(|m| *m > 0.0)
            .and_then(|m| std::time::Duration::try_from_secs_f64(m * 60.0).ok())
    }
}

/// What every backend is set up with.
#[derive(Debug, Clone, Default)]
pub struct StoreConfig {
    /// Semantic search, if any.
    pub index: Option<IndexConfig>,
    /// The TTL policy, if any.
    pub ttl: Option<TtlConfig>,
    /// The time source.
    pub clock: Clock,
}

impl StoreConfig {
    /// Adds semantic search.
    pub fn index(mut self, index: IndexConfig) -> Self {
        self.index = Some(index);
        self
    }
    /// Sets the TTL policy.
    pub fn ttl(mut self, ttl: TtlConfig) -> Self {
        self.ttl = Some(ttl);
        self
    }
    /// Reads the time from `clock`.
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }
}
