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
        let schema = Schema::new(postgres_url());
        let store = weir::store::PostgresStore::connect_with_schema(&schema.url, &schema.name, config)
            .await
            .unwrap();
        Harness {
            store: Arc::new(store),
            _cleanup: Some(Box::new(schema)),
        }
    })
}

/// The database named by `WEIR_POSTGRES_URL`. The PostgreSQL tests are ignored unless asked
/// for: asked for without a database, they fail rather than pass having tested nothing.
#[cfg(feature = "postgres")]
pub fn postgres_url() -> String {
    match std::env::var("WEIR_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => panic!(
            "WEIR_POSTGRES_URL is not set: the PostgreSQL tests need a database, \
             e.g. postgres://postgres@127.0.0.1:5432/test"
        ),
    }
}

/// A fresh PostgreSQL schema, dropped (with everything in it) when this is dropped.
#[cfg(feature = "postgres")]
pub struct Schema {
    pub url: String,
    pub name: String,
}

#[cfg(feature = "postgres")]
impl Schema {
    pub fn new(url: String) -> Self {
        let id = &weir::checkpoint::new_checkpoint_id()[8..];
        Schema {
            url,
            name: format!("weir_store_{}", id.replace('-', "_")),
        }
    }
}

#[cfg(feature = "postgres")]
impl Drop for Schema {
    fn drop(&mut self) {
        // Drop also runs while a test panics: clean up on a runtime of our own.
        let (url, name) = (self.url.clone(), self.name.clone());
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
                tokio::spawn(connection);
                let _ = client
                    .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{name}\" CASCADE"))
                    .await;
            });
        })
        .join();
    }
}

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
