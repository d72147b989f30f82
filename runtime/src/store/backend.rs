//! What a backend provides (the crate-private [`Backend`]: rows by dot-joined prefix and key),
//! so that one [`Core`](super::core::Core) gives every backend the same semantics.

#[cfg(any(feature = "sqlite", feature = "postgres"))]
use super::filter::Compiled;
use super::StoreError;
use crate::checkpoint::Timestamp;
use futures::future::BoxFuture;
use serde_json::{Map, Value};

/// A field's vectors: `(field name, vector)`, the field name a path (`title`, `ch[*].c#1`).
pub(crate) type Vectors = Vec<(String, Vec<f32>)>;

/// One stored item as a backend holds it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    /// The dot-joined namespace (LangGraph's `prefix` column).
    pub(crate) prefix: String,
    pub(crate) key: String,
    pub(crate) value: Value,
    pub(crate) created_at: Timestamp,
    pub(crate) updated_at: Timestamp,
    pub(crate) expires_at: Option<Timestamp>,
    pub(crate) ttl_minutes: Option<f64>,
}

impl Row {
    /// Whether the row is past its TTL at `now`.
    pub(crate) fn expired(&self, now: Timestamp) -> bool {
        self.expires_at.is_some_and(|e| e <= now)
    }
}

/// One change of a batch's run of puts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Write {
    /// Inserts or replaces a row, keeping the stored `created_at` of a replaced live row;
    /// replaces its vectors (none: the row has no vectors).
    Put(Row, Vectors),
    /// Deletes a row and its vectors.
    Delete { prefix: String, key: String },
}

/// Whether `prefix` (dot-joined) lies under `under` (dot-joined; `""` is the root).
pub(crate) fn under(prefix: &str, under: &str) -> bool {
    under.is_empty()
        || (prefix.starts_with(under) && (prefix.len() == under.len() || prefix.as_bytes()[under.len()] == b'.'))
}

/// What a search reads: the live rows under `prefix` meeting `filter`; with `page`
/// (`offset`, `limit`) only that page of them, the most recently updated first (ties by prefix,
/// then key, in byte order), else all of them in any order (the core ranks them).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scan<'a> {
    pub(crate) prefix: &'a str,
    pub(crate) now: Timestamp,
    pub(crate) filter: Option<&'a Map<String, Value>>,
    /// Whether to read the rows' vectors.
    pub(crate) vectors: bool,
    pub(crate) page: Option<(usize, usize)>,
}

impl Scan<'_> {
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    /// Filters, orders and pages `rows` in Rust, for a backend (or a filter) without SQL for it.
    pub(crate) fn finish(&self, rows: impl Iterator<Item = (Row, Vectors)>) -> Vec<(Row, Vectors)> {
        let filter = self.filter.map(Compiled::new);
        let mut found: Vec<(Row, Vectors)> = rows
            .filter(|(row, _)| filter.as_ref().is_none_or(|f| f.matches(&row.value)))
            .collect();
        if let Some((offset, limit)) = self.page {
            found.sort_by(|(a, _), (b, _)| newest_first(a, b));
            found = found.into_iter().skip(offset).take(limit).collect();
        }
        found
    }
}

/// The order of a search without a query: the most recently updated first, ties by prefix and
/// key, so every backend gives one order.
pub(crate) fn newest_first(a: &Row, b: &Row) -> std::cmp::Ordering {
    b.updated_at
        .cmp(&a.updated_at)
        .then_with(|| a.prefix.cmp(&b.prefix))
        .then_with(|| a.key.cmp(&b.key))
}

/// The time `minutes` after `t`.
pub(crate) fn after(t: Timestamp, minutes: f64) -> Timestamp {
    Timestamp::from_unix_micros(t.unix_micros().saturating_add((minutes * 60_000_000.0) as u64))
}

/// Rows by prefix and key. Reads skip rows expired at `now`; nothing here validates input
/// (the core did).
pub(crate) trait Backend: Send + Sync + std::fmt::Debug + 'static {
    /// The row at `(prefix, key)`, if live at `now`.
    fn get<'a>(
        &'a self,
        prefix: &'a str,
        key: &'a str,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<Option<Row>, StoreError>>;
    /// Applies `writes` in order, in one transaction where the backend has them.
    fn write(&self, writes: Vec<Write>) -> BoxFuture<'_, Result<(), StoreError>>;
    /// The rows `scan` asks for, with their vectors when it asks for them.
    fn scan<'a>(&'a self, scan: Scan<'a>) -> BoxFuture<'a, Result<Vec<(Row, Vectors)>, StoreError>>;
    /// Restarts the TTL of these rows at `now` (those without a TTL are left alone).
    fn touch(&self, keys: Vec<(String, String)>, now: Timestamp) -> BoxFuture<'_, Result<(), StoreError>>;
    /// The distinct prefixes of the live rows.
    fn prefixes(&self, now: Timestamp) -> BoxFuture<'_, Result<Vec<String>, StoreError>>;
    /// Deletes the rows expired at `now`; how many.
    fn sweep(&self, now: Timestamp) -> BoxFuture<'_, Result<usize, StoreError>>;
}
