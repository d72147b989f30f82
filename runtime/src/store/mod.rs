//! Long-term memory shared across threads and runs (LangGraph's `BaseStore`): JSON items under
//! hierarchical namespaces, read and written by nodes through [`Context::store`], searched by
//! filter or, with an index, by meaning. The [`Store`] trait and its operations (`op.rs`), the
//! rules every backend shares (`core.rs` over `backend.rs`'s rows, `filter.rs`, `item.rs`), the
//! embeddings (`embed.rs`), and the backends: [`InMemoryStore`], [`SqliteStore`] and
//! [`PostgresStore`] (LangGraph's PostgresStore schema). The engine knows a store only as the
//! handle a node's context carries.
//!
//! [`Context::store`]: crate::Context::store

mod backend;
mod config;
mod core;
mod embed;
mod error;
mod filter;
mod item;
mod memory;
mod op;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod plan;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;

pub use config::{Clock, IndexConfig, StoreConfig, TtlConfig, MAX_TTL_MINUTES};
pub use embed::{cosine, Embeddings, FakeEmbeddings};
pub use error::StoreError;
pub use item::{validate_namespace, wire_time, Item, SearchItem, RESERVED_ROOT};
pub use memory::InMemoryStore;
pub use op::{GetOp, Index, ListNamespacesOp, MatchCondition, Op, OpResult, PutOp, SearchOp};
#[cfg(feature = "postgres")]
pub use postgres::PostgresStore;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;

use futures::future::BoxFuture;
use futures::FutureExt;
use serde::{de::DeserializeOwned, Serialize};
use serde_json::{Map, Value};
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

/// A store of items (LangGraph's `BaseStore`). Object safe: a graph holds an `Arc<dyn Store>`,
/// shared by every thread and run.
///
/// A backend implements [`batch`](Self::batch) and [`sweep`](Self::sweep); `get`, `put`,
/// `delete`, `search` and `list_namespaces` are batches of one operation (the stores of this
/// crate run a lone `get` without building the batch, with the same result).
///
/// # Examples
///
/// ```
/// use serde_json::json;
/// use weir_runtime::store::{InMemoryStore, SearchOp, Store};
///
/// # futures::executor::block_on(async {
/// let store = InMemoryStore::new();
/// store.put(&["users", "u1"], "prefs", json!({"color": "blue"})).await.unwrap();
/// let item = store.get(&["users", "u1"], "prefs").await.unwrap().unwrap();
/// assert_eq!(item.value, json!({"color": "blue"}));
/// let found = store.search(SearchOp::new(&["users"]).filter(json!({"color": "blue"}))).await.unwrap();
/// assert_eq!(found[0].item.key, "prefs");
/// # });
/// ```
pub trait Store: Send + Sync + Debug + 'static {
    /// Runs `ops` in order, each seeing the writes of the ones before it; one result per
    /// operation, in order. The first failing operation fails the batch (the writes before it
    /// stay).
    fn batch(&self, ops: Vec<Op>) -> BoxFuture<'_, Result<Vec<OpResult>, StoreError>>;

    /// Deletes the expired items now; how many. [`spawn_sweeper`] calls it on a timer.
    fn sweep(&self) -> BoxFuture<'_, Result<usize, StoreError>>;

    /// The item at `key` in `namespace`, if any (refreshing its TTL when the store's
    /// [`TtlConfig`] says reads do).
    fn get(&self, namespace: &[&str], key: &str) -> BoxFuture<'_, Result<Option<Item>, StoreError>> {
        let op = Op::Get(GetOp {
            namespace: owned(namespace),
            key: key.to_owned(),
            refresh_ttl: None,
        });
        async move {
            match self.batch(vec![op]).await?.pop() {
                Some(OpResult::Item(item)) => Ok(item),
                _ => Ok(None),
            }
        }
        .boxed()
    }

    /// Puts `value` (a JSON object) at `key` in `namespace`, indexed by the store's default
    /// fields, with the default TTL. [`put_op`](Self::put_op) sets the index and the TTL.
    fn put(&self, namespace: &[&str], key: &str, value: Value) -> BoxFuture<'_, Result<(), StoreError>> {
        let op = object(namespace, key, value).map(|value| PutOp {
            namespace: owned(namespace),
            key: key.to_owned(),
            value: Some(value),
            index: Index::Default,
            ttl: None,
        });
        async move { self.put_op(op?).await }.boxed()
    }

    /// Runs one put (or delete, `value: None`) as given.
    fn put_op(&self, op: PutOp) -> BoxFuture<'_, Result<(), StoreError>> {
        async move { self.batch(vec![Op::Put(op)]).await.map(drop) }.boxed()
    }

    /// Deletes the item at `key` in `namespace` (nothing if there is none).
    fn delete(&self, namespace: &[&str], key: &str) -> BoxFuture<'_, Result<(), StoreError>> {
        self.put_op(PutOp {
            namespace: owned(namespace),
            key: key.to_owned(),
            value: None,
            index: Index::Off,
            ttl: None,
        })
    }

    /// The items a search finds: filtered, ranked (by similarity to its query when the store has
    /// an index, else most recently updated first), then `offset` and `limit`.
    fn search(&self, op: SearchOp) -> BoxFuture<'_, Result<Vec<SearchItem>, StoreError>> {
        async move {
            match self.batch(vec![Op::Search(op)]).await?.pop() {
                Some(OpResult::Items(items)) => Ok(items),
                _ => Ok(Vec::new()),
            }
        }
        .boxed()
    }

    /// The namespaces holding live items, sorted, that meet `op`'s conditions.
    fn list_namespaces(&self, op: ListNamespacesOp) -> BoxFuture<'_, Result<Vec<Vec<String>>, StoreError>> {
        async move {
            match self.batch(vec![Op::ListNamespaces(op)]).await?.pop() {
                Some(OpResult::Namespaces(n)) => Ok(n),
                _ => Ok(Vec::new()),
            }
        }
        .boxed()
    }
}

impl dyn Store {
    /// The value at `key` in `namespace` as a `T`, if there is one.
    ///
    /// # Errors
    /// The store's; a stored value that is not a `T`, naming the key and the namespace.
    pub async fn get_as<T: DeserializeOwned>(&self, namespace: &[&str], key: &str) -> Result<Option<T>, StoreError> {
        let Some(item) = self.get(namespace, key).await? else {
            return Ok(None);
        };
        serde_json::from_value(item.value).map(Some).map_err(|e| {
            StoreError::invalid(format!(
                "item {key:?} in namespace {}: not a {}: {e}",
                item::show(&item.namespace),
                std::any::type_name::<T>()
            ))
        })
    }

    /// Puts `value` (which must serialize to a JSON object) at `key` in `namespace`.
    ///
    /// # Errors
    /// The store's; a value that does not serialize to an object, naming the key.
    pub async fn put_as<T: Serialize>(&self, namespace: &[&str], key: &str, value: &T) -> Result<(), StoreError> {
        let value = serde_json::to_value(value)
            .map_err(|e| StoreError::invalid(format!("item {key:?}: the value does not serialize: {e}")))?;
        self.put(namespace, key, value).await
    }
}

fn owned(namespace: &[&str]) -> Vec<String> {
    namespace.iter().map(|l| (*l).to_owned()).collect()
}

/// `value` as the object an item holds, or an error naming the key.
fn object(namespace: &[&str], key: &str, value: Value) -> Result<Map<String, Value>, StoreError> {
    match value {
        Value::Object(map) => Ok(map),
        other => Err(StoreError::invalid(format!(
            "item {key:?} in namespace {}: a value must be a JSON object, not {other}",
            item::show(&owned(namespace))
        ))),
    }
}

/// Starts a task that deletes `store`'s expired items every `every` (LangGraph's
/// `sweep_interval_minutes`); abort the handle to stop it. A failed sweep is logged and the
/// next one tried on time.
pub fn spawn_sweeper(store: Arc<dyn Store>, every: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut timer = tokio::time::interval(every);
        timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        timer.tick().await;
        loop {
            timer.tick().await;
            match store.sweep().await {
                Ok(n) if n > 0 => tracing::debug!(deleted = n, "store sweeper deleted expired items"),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "store sweeper failed"),
            }
        }
    })
}

/// Implements [`Store`] for a type holding a `core: Core<_>`.
macro_rules! store_over_core {
    ($ty:ty) => {
        impl $crate::store::Store for $ty {
            fn batch(
                &self,
                ops: Vec<$crate::store::Op>,
            ) -> futures::future::BoxFuture<'_, Result<Vec<$crate::store::OpResult>, $crate::store::StoreError>> {
                futures::FutureExt::boxed(self.core.batch(ops))
            }
            fn sweep(&self) -> futures::future::BoxFuture<'_, Result<usize, $crate::store::StoreError>> {
                futures::FutureExt::boxed(self.core.sweep())
            }
            fn get(
                &self,
                namespace: &[&str],
                key: &str,
            ) -> futures::future::BoxFuture<'_, Result<Option<$crate::store::Item>, $crate::store::StoreError>> {
                // A get alone skips the batch: no operation or result to build.
                let prefix = $crate::store::item::item_prefix(namespace);
                let key = key.to_owned();
                futures::FutureExt::boxed(async move { self.core.get_at(prefix?, key, None).await })
            }
        }
    };
}
pub(crate) use store_over_core;
