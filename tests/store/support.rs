//! The stores under test, each made fresh with a configuration and a clock the test moves by
//! hand: in memory, in a temporary SQLite file, and in a fresh PostgreSQL schema.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use weir::checkpoint::Timestamp;
use weir::store::{Clock, InMemoryStore, SqliteStore, Store, StoreConfig};

/// A store and what must live as long as it (a temporary file, a schema dropped after).
pub struct Harness {
    pub store: Arc<dyn Store>,
    pub _cleanup: Option<Box<dyn std::any::Any + Send>>,
}

/// Makes a fresh store with a configuration.
pub type Make = fn(StoreConfig) -> futures::future::BoxFuture<'static, Harness>;

pub fn memory(config: StoreConfig) -> futures::future::BoxFuture<'static, Harness> {
    Box::pin(async move {
        Harness {
            store: Arc::new(InMemoryStore::with_config(config)),
            _cleanup: None,
        }
    })
}

pub fn sqlite(config: StoreConfig) -> futures::future::BoxFuture<'static, Harness> {
    Box::pin(async move {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("weir.db"), config).unwrap();
        Harness {
            store: Arc::new(store),
            _cleanup: Some(Box::new(dir)),
        }
    })
}

#[cfg(feature = "postgres")]
pub fn postgres(config: StoreConfig) -> futures::future::BoxFuture<'static, Harness> {
    Box::pin(async move {
        let schema = Schema::fresh("weir_store");
        let store = weir::store::PostgresStore::connect_with_schema(&schema.url, &schema.name, config)
            .await
            .unwrap();
        Harness {
            store: Arc::new(store),
            _cleanup: Some(Box::new(schema)),
        }
    })
}

#[cfg(feature = "postgres")]
pub use weir_test_support::Schema;

/// A clock the test moves: starts at a fixed time, moves only when told.
#[derive(Clone)]
pub struct HandClock(Arc<AtomicU64>);

impl HandClock {
    pub fn new() -> Self {
        HandClock(Arc::new(AtomicU64::new(1_793_531_103_000_000)))
    }
    pub fn clock(&self) -> Clock {
        let t = self.0.clone();
        Clock::from_fn(move || Timestamp::from_unix_micros(t.load(Ordering::SeqCst)))
    }
    pub fn advance_minutes(&self, minutes: f64) {
        self.0.fetch_add((minutes * 60_000_000.0) as u64, Ordering::SeqCst);
    }
    pub fn advance_micros(&self, micros: u64) {
        self.0.fetch_add(micros, Ordering::SeqCst);
    }
    pub fn now(&self) -> Timestamp {
        Timestamp::from_unix_micros(self.0.load(Ordering::SeqCst))
    }
}
