//! [`InMemoryStore`]: items in a sorted map behind a lock, searched by brute force (cosine over
//! every vector under the prefix). For tests, examples and single-process programs.

use super::backend::{after, newest_first, under, Backend, Row, Scan, Vectors, Write};
use super::core::Core;
use super::filter::matches;
use super::{store_over_core, StoreConfig, StoreError};
use crate::checkpoint::Timestamp;
use futures::future::{ready, BoxFuture};
use futures::FutureExt;
use std::collections::BTreeMap;
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

/// The rows by `(prefix, key)`.
#[derive(Debug, Default)]
struct Rows(Mutex<BTreeMap<(String, String), (Row, Vectors)>>);

impl Rows {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<(String, String), (Row, Vectors)>> {
        // A panic elsewhere never leaves a half-written entry: every change is one insert/remove.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

type Done<'a, T> = BoxFuture<'a, Result<T, StoreError>>;

impl Backend for Rows {
    fn get<'a>(&'a self, prefix: &'a str, key: &'a str, now: Timestamp) -> Done<'a, Option<Row>> {
        let rows = self.lock();
        let row = rows
            .get(&(prefix.to_owned(), key.to_owned()))
            .filter(|(r, _)| !r.expired(now))
            .map(|(r, _)| r.clone());
        ready(Ok(row)).boxed()
    }

    fn write(&self, writes: Vec<Write>) -> Done<'_, ()> {
        let mut rows = self.lock();
        for w in writes {
            match w {
                Write::Put(mut row, vectors) => {
                    let id = (row.prefix.clone(), row.key.clone());
                    if let Some((old, _)) = rows.get(&id).filter(|(old, _)| !old.expired(row.updated_at)) {
                        row.created_at = old.created_at;
                    }
                    rows.insert(id, (row, vectors));
                }
                Write::Delete { prefix, key } => {
                    rows.remove(&(prefix, key));
                }
            }
        }
        ready(Ok(())).boxed()
    }

    fn scan<'a>(&'a self, scan: Scan<'a>) -> Done<'a, Vec<(Row, Vectors)>> {
        let rows = self.lock();
        let prefix = scan.prefix;
        // Filtered and ordered by reference: only the page is cloned.
        let mut live: Vec<&(Row, Vectors)> = rows
            .range((prefix.to_owned(), String::new())..)
            .take_while(|((p, _), _)| p.starts_with(prefix))
            .filter(|((p, _), (r, _))| under(p, prefix) && !r.expired(scan.now))
            .filter(|(_, (r, _))| scan.filter.is_none_or(|f| matches(&r.value, f)))
            .map(|(_, entry)| entry)
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
        for id in keys {
            if let Some((row, _)) = rows.get_mut(&id) {
                if let Some(ttl) = row.ttl_minutes {
                    row.expires_at = Some(after(now, ttl));
                }
            }
        }
        ready(Ok(())).boxed()
    }

    fn prefixes(&self, now: Timestamp) -> Done<'_, Vec<String>> {
        let rows = self.lock();
        let mut prefixes = Vec::new();
        let mut from = (String::new(), String::new());
        // A skip scan: from each prefix straight to the next (`p + "\0"` is the least string
        // above every row of `p`), reading only until a live row shows the prefix is live.
        while let Some(((p, _), _)) = rows.range(from.clone()..).next() {
            let p = p.clone();
            let live = rows
                .range((p.clone(), String::new())..)
                .take_while(|((q, _), _)| *q == p)
                .any(|(_, (r, _))| !r.expired(now));
            from = (format!("{p}\0"), String::new());
            if live {
                prefixes.push(p);
            }
        }
        ready(Ok(prefixes)).boxed()
    }

    fn sweep(&self, now: Timestamp) -> Done<'_, usize> {
        let mut rows = self.lock();
        let before = rows.len();
        rows.retain(|_, (r, _)| !r.expired(now));
        ready(Ok(before - rows.len())).boxed()
    }
}
