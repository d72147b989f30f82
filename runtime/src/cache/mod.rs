//! Node caches: a node marked cacheable skips its execution when its cache key was seen before
//! (and has not expired), and takes the writes it made then (LangGraph's `CachePolicy`).
//!
//! `store` holds the [`NodeCache`] trait and the clock; `memory` and `sqlite` its two
//! implementations, each dropping expired entries as it goes; `policy` a node's [`CachePolicy`].

mod memory;
mod policy;
#[cfg(feature = "sqlite")]
mod sqlite;
mod store;

pub use memory::InMemoryCache;
pub use policy::CachePolicy;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteCache;
pub use store::NodeCache;
