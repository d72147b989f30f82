//! The PostgreSQL saver's own behaviours: its schema.

use super::*;
use weir_runtime::checkpoint::PostgresSaver;
use weir_test_support::{postgres_url as url, Schema};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
async fn schema_is_created_on_first_use_and_reconnecting_sees_the_data() {
    let schema = Schema::fresh("weir_test");
    let saver = PostgresSaver::connect_with_schema(&schema.url, &schema.name)
        .await
        .unwrap();
    assert_eq!(saver.schema(), schema.name);
    saver
        .put(
            record(
                "t",
                "",
                "cp-1",
                None,
                -1,
                &[("a", 1, Some("cp-1"))],
                vec![full("a", "kept")],
            ),
            None,
        )
        .await
        .unwrap();
    drop(saver);
    let again = PostgresSaver::connect_with_schema(&schema.url, &schema.name)
        .await
        .unwrap();
    let loaded = again.get("t", "", None).await.unwrap().unwrap();
    assert_eq!(chains(&loaded), [("a".to_owned(), vec!["kept".to_owned()])]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
async fn a_schema_with_a_newer_version_is_refused_and_left_untouched() {
    let schema = Schema::fresh("weir_test");
    let (client, connection) = tokio_postgres::connect(&schema.url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let name = &schema.name;
    client
        .batch_execute(&format!(
            "CREATE SCHEMA \"{name}\"; CREATE TABLE \"{name}\".weir_schema (version BIGINT PRIMARY KEY); \
             INSERT INTO \"{name}\".weir_schema VALUES (99);"
        ))
        .await
        .unwrap();
    let err = PostgresSaver::connect_with_schema(&schema.url, name).await.unwrap_err();
    assert!(err.is_schema_too_new(), "{err}");
    let message = err.to_string();
    assert!(
        message.starts_with(&format!("PostgreSQL schema `{name}` at ")),
        "{message}"
    );
    assert!(
        message.ends_with(
            "has checkpoint schema version 99, newer than version 2 that this weir supports; it was left \
             untouched, open it with a newer weir"
        ),
        "{message}"
    );
    let tables: Vec<String> = client
        .query(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1",
            &[name],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(tables, ["weir_schema"]);
    let versions: Vec<i64> = client
        .query(&format!("SELECT version FROM \"{name}\".weir_schema"), &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(versions, [99]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
async fn a_bad_schema_name_is_refused() {
    let url = url();
    let err = PostgresSaver::connect_with_schema(&url, "Robert'); DROP")
        .await
        .unwrap_err();
    assert!(err.is_invalid());
    assert_eq!(
        err.to_string(),
        "invalid saver configuration: `Robert'); DROP` cannot name a PostgreSQL schema; use lower-case ASCII \
         letters, digits and `_`"
    );
}
