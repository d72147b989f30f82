//! What one backend does beyond the shared cases: SQLite in the checkpointer's own file and an
//! older file's table moved, PostgreSQL's refusal of an index without pgvector, and the sweeper
//! on tokio's paused clock.

use crate::support::HandClock;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use weir::checkpoint::{Checkpointer, SqliteSaver};
use weir::store::{InMemoryStore, SqliteStore, Store, StoreConfig, TtlConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_store_shares_the_checkpointers_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weir.db");
    let saver = SqliteSaver::open(&path).unwrap();
    let store = SqliteStore::open(&path, StoreConfig::default()).unwrap();
    store
        .put(&["users", "u1"], "prefs", json!({"color": "blue"}))
        .await
        .unwrap();
    assert_eq!(saver.head("no-thread", "").await.unwrap(), None);
    drop(store);
    let reopened = SqliteStore::open(&path, StoreConfig::default()).unwrap();
    let item = reopened.get(&["users", "u1"], "prefs").await.unwrap().unwrap();
    assert_eq!(item.value, json!({"color": "blue"}));
}

/// A file whose `store` is a rowid table (as older weir made it) has its rows moved to the
/// clustered table when a store opens it, and keeps every one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_store_moves_an_older_files_rows_into_the_clustered_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    {
        let old = rusqlite::Connection::open(&path).unwrap();
        old.execute_batch(
            "CREATE TABLE store (prefix TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
                 created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, expires_at INTEGER,
                 ttl_minutes REAL, PRIMARY KEY (prefix, key));
             CREATE INDEX store_expires_at_idx ON store (expires_at) WHERE expires_at IS NOT NULL;",
        )
        .unwrap();
        for i in 0..30_i64 {
            old.execute(
                "INSERT INTO store VALUES (?1, ?2, ?3, ?4, ?4, NULL, NULL)",
                rusqlite::params![
                    format!("users.u{}", i % 3),
                    format!("k{i}"),
                    format!("{{\"i\": {i}}}"),
                    1_000 + i
                ],
            )
            .unwrap();
        }
    }
    let table = |path: &std::path::Path| -> String {
        let c = rusqlite::Connection::open(path).unwrap();
        c.query_row("SELECT sql FROM sqlite_master WHERE name = 'store'", [], |r| r.get(0))
            .unwrap()
    };
    assert!(!table(&path).contains("WITHOUT ROWID"));
    for _ in 0..2 {
        let store = SqliteStore::open(&path, StoreConfig::default()).unwrap();
        assert!(table(&path).contains("WITHOUT ROWID"), "{}", table(&path));
        let item = store.get(&["users", "u2"], "k5").await.unwrap().unwrap();
        assert_eq!(item.value, json!({"i": 5}));
        assert_eq!(item.created_at.unix_micros(), 1_005);
        let found = store
            .search(weir::store::SearchOp::new(&["users"]).limit(100))
            .await
            .unwrap();
        let keys: Vec<&str> = found.iter().map(|f| f.item.key.as_str()).collect();
        let newest_first: Vec<String> = (0..30).rev().map(|i| format!("k{i}")).collect();
        assert_eq!(keys, newest_first);
    }
    let c = rusqlite::Connection::open(&path).unwrap();
    let indexes: i64 = c
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'store_expires_at_idx'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(indexes, 1);
}

#[tokio::test(start_paused = true)]
async fn the_sweeper_deletes_expired_items_on_its_interval() {
    let clock = HandClock::new();
    let config_ttl = TtlConfig {
        refresh_on_read: true,
        default_ttl: Some(1.0),
        sweep_interval_minutes: Some(5.0),
    };
    let config = StoreConfig::default().clock(clock.clock()).ttl(config_ttl.clone());
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::with_config(config));
    store.put(&["a"], "k", json!({"v": 1})).await.unwrap();
    let every = config_ttl.sweep_interval().unwrap();
    assert_eq!(every, Duration::from_secs(300));
    let sweeper = weir::store::spawn_sweeper(store.clone(), every);
    clock.advance_minutes(2.0);
    // Nothing is deleted before the first interval ends, though the item has expired.
    tokio::time::sleep(Duration::from_secs(299)).await;
    assert_eq!(store.sweep().await.unwrap(), 1, "the sweeper had not run yet");
    store.put(&["a"], "k2", json!({"v": 2})).await.unwrap();
    clock.advance_minutes(2.0);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(store.sweep().await.unwrap(), 0, "the sweeper deleted it at 300 s");
    sweeper.abort();
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
async fn postgres_index_without_pgvector_is_refused_naming_it() {
    use weir::store::{FakeEmbeddings, IndexConfig, PostgresStore};
    let schema = crate::support::Schema::fresh("weir_store");
    let (client, connection) = tokio_postgres::connect(&schema.url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let has_vector = !client
        .query("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'", &[])
        .await
        .unwrap()
        .is_empty();
    let config = StoreConfig::default().index(IndexConfig::new(8, FakeEmbeddings::new(8)));
    let made = PostgresStore::connect_with_schema(&schema.url, &schema.name, config).await;
    if has_vector {
        crate::cases::a_query_ranks_by_similarity_of_indexed_fields(crate::support::postgres).await;
        return;
    }
    let e = made.unwrap_err();
    assert!(e.is_invalid());
    assert!(
        e.to_string()
            .contains("needs the PostgreSQL extension `vector` (pgvector)"),
        "{e}"
    );
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
async fn postgres_reads_rows_written_in_langgraphs_schema() {
    let schema = crate::support::Schema::fresh("weir_store");
    let store = weir::store::PostgresStore::connect_with_schema(&schema.url, &schema.name, StoreConfig::default())
        .await
        .unwrap();
    let (client, connection) = tokio_postgres::connect(&schema.url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    // A row as LangGraph's PostgresStore writes it: dot-joined prefix, jsonb, server timestamps.
    client
        .batch_execute(&format!(
            "INSERT INTO \"{}\".store (prefix, key, value, created_at, updated_at)
             VALUES ('users.u1', 'prefs', '{{\"color\": \"blue\"}}'::jsonb,
                     '2026-12-01T18:28:49.013559+00', '2026-12-01T18:28:49.013561+00')",
            schema.name
        ))
        .await
        .unwrap();
    let item = store.get(&["users", "u1"], "prefs").await.unwrap().unwrap();
    assert_eq!(item.value, json!({"color": "blue"}));
    assert_eq!(
        weir::store::wire_time::to_text(item.created_at),
        "2026-12-01T18:28:49.013559+00:00"
    );
    assert_eq!(
        weir::store::wire_time::to_text(item.updated_at),
        "2026-12-01T18:28:49.013561+00:00"
    );
}
