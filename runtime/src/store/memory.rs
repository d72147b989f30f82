//! [`InMemoryStore`]: items in sorted maps (by prefix, then key) behind a lock, searched by brute
//! force (cosine over every vector under the prefix). For tests, examples and single-process programs.

use super::backend::{after, newest_first, under, Backend, Row, Scan, Vectors, Write};
use super::core::Core;
use super::filter::Compiled;
use super::{store_over_core, StoreConfig, StoreError};
use crate::checkpoint::Timestamp;
use futures::future::{ready, BoxFuture};
use futures::FutureExt;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Mutex, MutexGuard};

/// A store in memory (LangGraph's `InMemoryStore`). Cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct InMemoryStore {
    core: Core<Rows>,
}

impl InMemoryStore {
    /// An empty store without index or TTL policy.
    pub fn new() -> Self {
        Self::with_config(StoreConfig::default())
    }

    /// An empty store set up with `config`.
    pub fn with_config(config: StoreConfig) -> Self {
        Self {
            core: Core {
                backend: Rows::default(),
                config,
            },
        }
    }
}

impl Default for InMemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

store_over_core!(InMemoryStore);

/// The rows by prefix, then key (LangGraph's `InMemoryStore` keeps them the same way): a get
/// borrows its prefix and key for the lookup, and listing reads one entry a namespace.
#[derive(Debug, Default)]
struct Rows(Mutex<BTreeMap<String, Keys>>);

/// A prefix's rows, by key.
type Keys = BTreeMap<String, (Row, Vectors)>;

impl Rows {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Keys>> {
        // A panic elsewhere never leaves a half-written entry: every change is one insert/remove.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

type Done<'a, T> = BoxFuture<'a, Result<T, StoreError>>;

impl Backend for Rows {
    fn get<'a>(&'a self, prefix: &'a str, key: &'a str, now: Timestamp) -> Done<'a, Option<Row>> {
        let rows = self.lock();
        let row = rows
            .get(prefix)
            .and_then(|keys| keys.get(key))
            .filter(|(r, _)| !r.expired(now))
            .map(|(r, _)| r.clone());
        ready(Ok(row)).boxed()
    }

    fn write(&self, writes: Vec<Write>) -> Done<'_, ()> {
        let mut rows = self.lock();
        for w in writes {
            match w {
                Write::Put(mut row, vectors) => {
                    let keys = match rows.get_mut(&row.prefix) {
                        Some(keys) => keys,
                        None => rows.entry(row.prefix.clone()).or_default(),
                    };
                    if let Some((old, _)) = keys.get(&row.key).filter(|(old, _)| !old.expired(row.updated_at)) {
                        row.created_at = old.created_at;
                    }
                    keys.insert(row.key.clone(), (row, vectors));
                }
                Write::Delete { prefix, key } => {
                    if let Some(keys) = rows.get_mut(&prefix) {
                        keys.remove(&key);
                        if keys.is_empty() {
                            rows.remove(&prefix);
                        }
                    }
                }
            }
        }
        ready(Ok(())).boxed()
    }

    fn scan<'a>(&'a self, scan: Scan<'a>) -> Done<'a, Vec<(Row, Vectors)>> {
        let rows = self.lock();
        let prefix = scan.prefix;
        let filter = scan.filter.map(Compiled::new);
        // Filtered and ordered by reference: only the page is cloned.
        let mut live: Vec<&(Row, Vectors)> = rows
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|(p, _)| p.starts_with(prefix))
            .filter(|(p, _)| under(p, prefix))
            .flat_map(|(_, keys)| keys.values())
            .filter(|(r, _)| !r.expired(scan.now))
            .filter(|(r, _)| filter.as_ref().is_none_or(|f| f.matches(&r.value)))
            .collect();
        let (offset, limit) = scan.page.unwrap_or((0, usize::MAX));
        if scan.page.is_some() {
            live.sort_by(|(a, _), (b, _)| newest_first(a, b));
        }
        let found = live
            .into_iter()
            .skip(offset)
            .take(limit)
            .map(|(r, v)| (r.clone(), if scan.vectors { v.clone() } else { Vec::new() }))
            .collect();
        ready(Ok(found)).boxed()
    }

    fn touch(&self, keys: Vec<(String, String)>, now: Timestamp) -> Done<'_, ()> {
        let mut rows = self.lock();
        for (prefix, key) in keys {
            if let Some((row, _)) = rows.get_mut(&prefix).and_then(|keys| keys.get_mut(&key)) {
                if let Some(ttl) = row.ttl_minutes {
                    row.expires_at = Some(after(now, ttl));
                }
            }
        }
        ready(Ok(())).boxed()
    }

    fn prefixes(&self, now: Timestamp) -> Done<'_, Vec<String>> {
        let rows = self.lock();
        // A prefix is live while one of its rows is: most often its first.
        let prefixes = rows
            .iter()
            .filter(|(_, keys)| keys.values().any(|(r, _)| !r.expired(now)))
            .map(|(p, _)| p.clone())
            .collect();
        ready(Ok(prefixes)).boxed()
    }

    fn sweep(&self, now: Timestamp) -> Done<'_, usize> {
        let mut rows = self.lock();
        let mut swept = 0;
        rows.retain(|_, keys| {
            let before = keys.len();
            keys.retain(|_, (r, _)| !r.expired(now));
            swept += before - keys.len();
            !keys.is_empty()
        });
        ready(Ok(swept)).boxed()
    }
}
