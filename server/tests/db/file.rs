//! Embedded mode's one file: the server's tables beside the checkpointer's, neither disturbing
//! the other, and what was stored there found again after a restart.

use crate::support::thread;
use serde_json::json;
use weir_runtime::checkpoint::{Checkpointer, SqliteSaver};
use weir_server::db::sqlite::SqliteDb;
use weir_server::db::{Catalog, IfExists, RunQueue};
use weir_server::model::ThreadStatus;

fn user_version(path: &std::path::Path) -> i64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_tables_share_the_checkpoint_file_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weir.db");
    let saver = SqliteSaver::open(&path).unwrap();
    let checkpoints_version = user_version(&path);
    assert!(checkpoints_version > 0);
    let db = SqliteDb::open(&path).await.unwrap();
    let t = thread("t1", 1, ThreadStatus::Idle, json!({"user": "u1"}), json!(null));
    db.create_thread(&t, IfExists::Raise).await.unwrap();
    assert_eq!(user_version(&path), checkpoints_version);
    assert_eq!(saver.threads().await.unwrap(), Vec::<String>::new());
    drop((db, saver));
    // A restart: both open the file again, as they left it.
    let saver = SqliteSaver::open(&path).unwrap();
    let db = SqliteDb::open(&path).await.unwrap();
    assert_eq!(db.get_thread("t1").await.unwrap(), Some(t));
    assert_eq!(saver.threads().await.unwrap(), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_whose_server_tables_a_newer_weir_wrote_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weir.db");
    drop(SqliteDb::open(&path).await.unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "INSERT INTO server_schema (version, applied_at) VALUES (99, 'later')",
        [],
    )
    .unwrap();
    let err = SqliteDb::open(&path).await.unwrap_err();
    assert_eq!(
        err,
        weir_server::db::DbError::Backend(format!(
            "the server tables in `{}` are at schema version 99, newer than this weir's 5: upgrade weir \
             (the file is left as it was)",
            path.display()
        ))
    );
    let versions: i64 = conn
        .query_row("SELECT COUNT(*) FROM server_schema", [], |r| r.get(0))
        .unwrap();
    assert_eq!(versions, 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migration_2_records_the_current_version_of_each_existing_assistant() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weir.db");
    let db = SqliteDb::open(&path).await.unwrap();
    let mut a = crate::support::assistant("a1", "chain", "mine", 1, serde_json::json!({"team": "t"}));
    a.version = 3;
    db.put_assistant(&a).await.unwrap();
    drop(db);
    // Back to a file as schema version 1 left it.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "DROP TABLE server_assistant_versions; ALTER TABLE server_runs DROP COLUMN not_before;
         ALTER TABLE server_runs DROP COLUMN attempt; DROP TABLE server_thread_ttl; DROP TABLE server_crons;
         DELETE FROM server_schema WHERE version >= 2",
    )
    .unwrap();
    let db = SqliteDb::open(&path).await.unwrap();
    let versions = db
        .assistant_versions("a1", &weir_server::db::VersionQuery::default())
        .await
        .unwrap();
    assert_eq!(versions, [a]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migration_3_keeps_the_queued_runs_claimable_at_once_from_their_first_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weir.db");
    let db = SqliteDb::open(&path).await.unwrap();
    let queued = crate::support::run("t1", weir_server::model::MultitaskStrategy::Enqueue);
    db.enqueue(&queued, None, None, None).await.unwrap();
    drop(db);
    // Back to a file as schema version 2 left it, with its run pending.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "ALTER TABLE server_runs DROP COLUMN not_before; ALTER TABLE server_runs DROP COLUMN attempt;
         DROP TABLE server_thread_ttl; DROP TABLE server_crons; DELETE FROM server_schema WHERE version >= 3",
    )
    .unwrap();
    let db = SqliteDb::open(&path).await.unwrap();
    let claimed = db.claim("w1").await.unwrap().unwrap();
    assert_eq!(
        (claimed.run_id.as_str(), claimed.attempt, claimed.not_before),
        (queued.run_id.as_str(), 1, None)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migration_4_gives_an_existing_files_threads_no_ttl_until_one_is_set() {
    use weir_server::model::{ThreadTtl, TtlStrategy};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weir.db");
    let db = SqliteDb::open(&path).await.unwrap();
    let t = thread("t1", 1, ThreadStatus::Idle, json!({}), serde_json::Value::Null);
    db.create_thread(&t, IfExists::Raise).await.unwrap();
    drop(db);
    // Back to a file as schema version 3 left it.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "DROP TABLE server_thread_ttl; DROP TABLE server_crons; DELETE FROM server_schema WHERE version >= 4",
    )
    .unwrap();
    let db = SqliteDb::open(&path).await.unwrap();
    let later = "2030-01-01T00:00:00.000000+00:00";
    assert_eq!(db.expired_threads(later, 10).await.unwrap(), []);
    let ttl = ThreadTtl {
        strategy: TtlStrategy::Delete,
        minutes: 1.0,
    };
    db.set_thread_ttl("t1", Some(ttl)).await.unwrap();
    assert_eq!(
        db.expired_threads(later, 10).await.unwrap(),
        [("t1".to_owned(), TtlStrategy::Delete)]
    );
}

/// A thread's status is set without reading its values (they grow with its state): a row whose
/// values cannot be read still takes a status, where a full update names the thread it fails on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setting_a_status_does_not_read_the_values() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weir.db");
    let db = SqliteDb::open(&path).await.unwrap();
    let t = thread("t1", 1, ThreadStatus::Idle, json!({}), json!({"big": "state"}));
    db.create_thread(&t, IfExists::Raise).await.unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "UPDATE server_threads SET \"values\" = 'not json' WHERE thread_id = 't1'",
        [],
    )
    .unwrap();
    assert!(db.set_thread_status("t1", ThreadStatus::Busy, None).await.unwrap());
    let kept: String = conn
        .query_row(
            "SELECT \"values\" FROM server_threads WHERE thread_id = 't1'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(kept, "not json", "the values column was left as it was");
    let update = weir_server::db::ThreadUpdate::status(ThreadStatus::Idle, None);
    let e = db.update_thread("t1", &update).await.unwrap_err().to_string();
    assert!(e.contains("t1"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_files_server_tables_belong_to_one_opener_until_it_lets_go() {
    // A second server on the file would take the first one's running runs back as it starts.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weir.db");
    let first = SqliteDb::open(&path).await.unwrap();
    let second = first.clone();
    let err = SqliteDb::open(&path).await.unwrap_err();
    assert_eq!(
        err,
        weir_server::db::DbError::Backend(format!(
            "`{}` is served by another process (process {}): an embedded server's tables belong to one \
             process at a time. Stop that one, or use another file; to serve one deployment from \
             several processes, scale out on PostgreSQL and Redis",
            path.display(),
            std::process::id()
        ))
    );
    // The refused opener changed nothing: the first still works, and holds on through its clones.
    let t = thread("t1", 1, ThreadStatus::Idle, json!({}), json!(null));
    first.create_thread(&t, IfExists::Raise).await.unwrap();
    drop(first);
    assert!(SqliteDb::open(&path).await.is_err());
    drop(second);
    let again = SqliteDb::open(&path).await.unwrap();
    assert_eq!(again.get_thread("t1").await.unwrap(), Some(t));
    // The checkpointer on the same file is not the server's: it opens beside them.
    SqliteSaver::open(&path).unwrap();
}
