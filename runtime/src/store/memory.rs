//! [`InMemoryStore`]: items by prefix, then key, behind a lock. A search without a query walks
//! the namespaces under its prefix newest first and stops at the end of its page; one with a
//! query ranks by brute force (cosine over every vector under the prefix). For tests, examples
//! and single-process programs.

use super::backend::{after, under, Backend, Row, Scan, Vectors, Write};
use super::core::Core;
use super::filter::Compiled;
use super::{store_over_core, StoreConfig, StoreError};
use crate::checkpoint::Timestamp;
use futures::future::{ready, BoxFuture};
use futures::FutureExt;
use std::cmp::Reverse;
use std::collections::{btree_map, BTreeMap, BinaryHeap, HashMap};
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

/// The rows by prefix (LangGraph's `InMemoryStore` keeps them so): a get borrows its prefix and
/// key for the lookup, listing reads one entry a namespace, and a search reads only the
/// namespaces under its prefix.
#[derive(Debug, Default)]
struct Rows(Mutex<BTreeMap<String, Namespace>>);

/// One namespace's rows, the most recently updated first.
#[derive(Debug, Default)]
struct Namespace {
    /// Each key's `updated_at`, which finds its row in `rows`.
    times: HashMap<String, Timestamp>,
    /// The rows by recency, ties by key: a search without a query reads them in this order and
    /// stops once its page is full; one that must read them all reads them in a row.
    rows: BTreeMap<Recency, (Row, Vectors)>,
}

/// Where a row sorts in its namespace: the most recently updated first, then by key.
type Recency = (Reverse<Timestamp>, String);

impl Namespace {
    fn get(&self, key: &str) -> Option<&(Row, Vectors)> {
        let time = Reverse(*self.times.get(key)?);
        // The row itself, not a walk through that microsecond's rows: a batch puts many in one.
        self.rows.get(&(time, key.to_owned()))
    }

    fn insert(&mut self, row: Row, vectors: Vectors) {
        if let Some(old) = self.times.insert(row.key.clone(), row.updated_at) {
            self.rows.remove(&(Reverse(old), row.key.clone()));
        }
        self.rows
            .insert((Reverse(row.updated_at), row.key.clone()), (row, vectors));
    }

    fn remove(&mut self, key: &str) {
        if let Some(old) = self.times.remove(key) {
            self.rows.remove(&(Reverse(old), key.to_owned()));
        }
    }

    fn values(&self) -> impl Iterator<Item = &(Row, Vectors)> {
        self.rows.values()
    }
}

impl Rows {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Namespace>> {
        // Nothing under the lock panics (no caller's code runs there), so a change is never
        // left half made.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The rows of some namespaces, the most recently updated first, ties by prefix then key (the
/// order of [`newest_first`](super::backend::newest_first)): each namespace's recency order
/// merged, so that a reader who stops early has read only what it took.
struct Newest<'a> {
    prefixes: Vec<&'a str>,
    walks: Vec<btree_map::Iter<'a, Recency, (Row, Vectors)>>,
    /// Each namespace's next row, taken from its walk.
    next: Vec<Option<&'a (Row, Vectors)>>,
    /// The order of those rows, the least first.
    heads: BinaryHeap<Reverse<Head<'a>>>,
}

/// A namespace's next row in the merged order: its recency, prefix and key, and the namespace.
type Head<'a> = (Reverse<Timestamp>, &'a str, &'a str, usize);

impl<'a> Newest<'a> {
    /// `spaces`: (prefix, rows).
    fn new(spaces: Vec<(&'a str, &'a Namespace)>) -> Self {
        let mut merged = Self {
            prefixes: spaces.iter().map(|(prefix, _)| *prefix).collect(),
            walks: spaces.iter().map(|(_, space)| space.rows.iter()).collect(),
            next: vec![None; spaces.len()],
            heads: BinaryHeap::with_capacity(spaces.len()),
        };
        for i in 0..spaces.len() {
            merged.advance(i);
        }
        merged
    }

    fn advance(&mut self, i: usize) {
        self.next[i] = self.walks[i].next().map(|((time, key), row)| {
            self.heads.push(Reverse((*time, self.prefixes[i], key.as_str(), i)));
            row
        });
    }
}

impl<'a> Iterator for Newest<'a> {
    type Item = &'a (Row, Vectors);

    fn next(&mut self) -> Option<Self::Item> {
        let Reverse((_, _, _, i)) = self.heads.pop()?;
        let row = self.next[i];
        self.advance(i);
        row
    }
}

type Done<'a, T> = BoxFuture<'a, Result<T, StoreError>>;

impl Backend for Rows {
    fn get<'a>(&'a self, prefix: &'a str, key: &'a str, now: Timestamp) -> Done<'a, Option<Row>> {
        let rows = self.lock();
        let row = rows
            .get(prefix)
            .and_then(|space| space.get(key))
            .filter(|(r, _)| !r.expired(now))
            .map(|(r, _)| r.clone());
        ready(Ok(row)).boxed()
    }

    fn write(&self, writes: Vec<Write>) -> Done<'_, ()> {
        let mut rows = self.lock();
        for w in writes {
            match w {
                Write::Put(mut row, vectors) => {
                    let space = match rows.get_mut(&row.prefix) {
                        Some(space) => space,
                        None => rows.entry(row.prefix.clone()).or_default(),
                    };
                    if let Some((old, _)) = space.get(&row.key).filter(|(old, _)| !old.expired(row.updated_at)) {
                        row.created_at = old.created_at;
                    }
                    space.insert(row, vectors);
                }
                Write::Delete { prefix, key } => {
                    if let Some(space) = rows.get_mut(&prefix) {
                        space.remove(&key);
                        if space.times.is_empty() {
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
        let spaces: Vec<(&str, &Namespace)> = rows
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|(p, _)| p.starts_with(prefix))
            .filter(|(p, _)| under(p, prefix))
            .map(|(p, space)| (p.as_str(), space))
            .collect();
        let live =
            |(r, _): &&(Row, Vectors)| !r.expired(scan.now) && filter.as_ref().is_none_or(|f| f.matches(&r.value));
        let copy = |(r, v): &(Row, Vectors)| (r.clone(), if scan.vectors { v.clone() } else { Vec::new() });
        let found = match scan.page {
            // Read newest first up to the end of the page; only the page is cloned.
            Some((offset, limit)) => Newest::new(spaces)
                .filter(live)
                .skip(offset)
                .take(limit)
                .map(copy)
                .collect(),
            None => spaces
                .iter()
                .flat_map(|(_, space)| space.values())
                .filter(live)
                .map(copy)
                .collect(),
        };
        ready(Ok(found)).boxed()
    }

    fn touch(&self, keys: Vec<(String, String)>, now: Timestamp) -> Done<'_, ()> {
        let mut rows = self.lock();
        for (prefix, key) in keys {
            let Some(space) = rows.get_mut(&prefix) else { continue };
            let Some(&time) = space.times.get(&key) else { continue };
            if let Some((row, _)) = space.rows.get_mut(&(Reverse(time), key)) {
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
            .filter(|(_, space)| space.values().any(|(r, _)| !r.expired(now)))
            .map(|(p, _)| p.clone())
            .collect();
        ready(Ok(prefixes)).boxed()
    }

    fn sweep(&self, now: Timestamp) -> Done<'_, usize> {
        let mut rows = self.lock();
        let mut swept = 0;
        rows.retain(|_, space| {
            let before = space.rows.len();
            let times = &mut space.times;
            space.rows.retain(|(_, key), (r, _)| {
                let live = !r.expired(now);
                if !live {
                    times.remove(key);
                }
                live
            });
            swept += before - space.rows.len();
            !space.rows.is_empty()
        });
        ready(Ok(swept)).boxed()
    }
}
