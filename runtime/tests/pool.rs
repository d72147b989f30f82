//! The shared PostgreSQL pool (feature `postgres`; ignored unless asked for with
//! `--include-ignored`, and then `WEIR_POSTGRES_URL` must name a database): connections go
//! back when dropped, each points at its schema, and a caller waiting past the acquire timeout
//! fails naming the pool's size.

#![cfg(feature = "postgres")]

use std::time::Duration;
use weir_runtime::postgres::{Pool, PoolError, PoolOptions};

#[tokio::test]
#[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
async fn a_full_pool_times_out_and_a_returned_connection_is_reused() {
    let guard = weir_test_support::Schema::fresh("weir_pool");
    let schema = &guard.name;
    let pool = Pool::new(
        &guard.url,
        PoolOptions::new()
            .size(1)
            .acquire_timeout(Duration::from_millis(50))
            .schema(schema),
    );
    let setup = pool.open().await.unwrap();
    setup
        .client
        .batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
        .await
        .unwrap();
    let mut held = pool.get().await.unwrap();
    let path: String = held.client.query_one("SHOW search_path", &[]).await.unwrap().get(0);
    assert_eq!(&path, schema);
    let pid: i32 = held
        .client
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0);
    let statement = held.prepare("SELECT $1::int8 + 1").await.unwrap();

    let e = pool.get().await.unwrap_err();
    assert!(matches!(e, PoolError::Timeout { size: 1, .. }), "{e:?}");
    assert!(
        e.to_string().contains("all 1 of the pool's connections are in use"),
        "{e}"
    );

    drop(held);
    let again = pool.get().await.unwrap();
    let same: i32 = again
        .client
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(same, pid, "the idle connection is handed out again");
    // The statement prepared on it still runs there.
    let sum: i64 = again.client.query_one(&statement, &[&41i64]).await.unwrap().get(0);
    assert_eq!(sum, 42);
}
