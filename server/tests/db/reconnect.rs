//! The PostgreSQL tables across killed connections (ignored unless asked for, as the suite's
//! PostgreSQL cases): `pg_terminate_backend` ends the backend's connections (they carry the
//! schema's name as `application_name`) between and inside operations. A run is created,
//! claimed and finished across kills, exactly once; an enqueue killed while it waits on its
//! thread's lock runs again, as does a run's end with the worker's next claim; a delete killed
//! the same way is not repeated and says so.

use crate::support::{self, env_url, run, thread};
use serde_json::json;
use std::time::Duration;
use weir_server::db::{Enqueued, IfExists, RunFate, ThreadUpdate};
use weir_server::model::{MultitaskStrategy, RunStatus, ThreadStatus};

async fn admin() -> tokio_postgres::Client {
    let url = env_url("WEIR_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test");
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

/// Ends every backend of `app`; how many.
async fn kill(admin: &tokio_postgres::Client, app: &str) -> usize {
    admin
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
            &[&app],
        )
        .await
        .unwrap()
        .len()
}

/// The backend of `app` waiting on a lock, other than `not`, once there is one (failing if `op`
/// ends first).
async fn waiting<T>(
    admin: &tokio_postgres::Client,
    app: &str,
    not: Option<i32>,
    op: &tokio::task::JoinHandle<T>,
) -> i32 {
    loop {
        let row = admin
            .query_opt(
                "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock' \
                 AND pid IS DISTINCT FROM $2",
                &[&app, &not],
            )
            .await
            .unwrap();
        if let Some(row) = row {
            return row.get(0);
        }
        assert!(!op.is_finished(), "the operation ended instead of waiting on the lock");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Ends the connection on which `op` waits on a lock, and returns once `op` waits again on
/// another: the operation ran again on a fresh connection (`what` names it).
async fn killed_and_run_again<T>(
    admin: &tokio_postgres::Client,
    app: &str,
    op: &tokio::task::JoinHandle<T>,
    what: &str,
) {
    let first = waiting(admin, app, None, op).await;
    admin
        .execute("SELECT pg_terminate_backend($1)", &[&first])
        .await
        .unwrap();
    let second = waiting(admin, app, Some(first), op).await;
    assert_ne!(first, second, "the {what} runs again on a fresh connection");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
async fn a_run_is_created_claimed_and_finished_across_killed_connections() {
    let db = support::postgres().await;
    let admin = admin().await;
    let t = thread("t1", 0, ThreadStatus::Idle, json!({}), json!(null));
    db.catalog.create_thread(&t, IfExists::DoNothing).await.unwrap();
    assert!(kill(&admin, &db.app).await >= 1);
    let r = run("t1", MultitaskStrategy::Enqueue);
    let queued = db.queue.enqueue(&r, None, None, None).await.unwrap();
    assert!(
        matches!(queued, Enqueued::Queued { ref inflight } if inflight.is_empty()),
        "{queued:?}"
    );
    assert!(kill(&admin, &db.app).await >= 1);
    let claimed = db.queue.claim("w1").await.unwrap().expect("the run is claimed");
    assert_eq!((claimed.run_id.as_str(), claimed.attempt), (r.run_id.as_str(), 1));
    assert!(kill(&admin, &db.app).await >= 1);
    assert!(db.queue.holds(&r.run_id, 1).await.unwrap());
    assert!(kill(&admin, &db.app).await >= 1);
    let ended = ThreadUpdate {
        status: Some(ThreadStatus::Idle),
        values: Some(json!({"done": true})),
        ..ThreadUpdate::default()
    };
    assert!(db
        .queue
        .end_run(&claimed, RunFate::Status(RunStatus::Success), &ended)
        .await
        .unwrap());
    assert!(kill(&admin, &db.app).await >= 1);
    let runs = db.queue.list_runs("t1", 0, 0, None).await.unwrap();
    assert_eq!(runs.len(), 1, "one run, stored once");
    assert_eq!(
        (runs[0].run_id.as_str(), runs[0].status),
        (r.run_id.as_str(), RunStatus::Success)
    );
    assert_eq!(db.queue.claim("w1").await.unwrap(), None, "nothing else to claim");
    let stored = db.catalog.get_thread("t1").await.unwrap().unwrap();
    assert_eq!(
        (stored.status, stored.values),
        (ThreadStatus::Idle, json!({"done": true}))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
async fn an_enqueue_killed_while_it_waits_runs_again_and_a_delete_is_not_repeated() {
    let db = support::postgres().await;
    let admin = admin().await;
    let t = thread("t2", 0, ThreadStatus::Idle, json!({}), json!(null));
    db.catalog.create_thread(&t, IfExists::Raise).await.unwrap();

    // Hold the thread's enqueue lock: the enqueue waits inside its transaction.
    let lock = "SELECT pg_advisory_lock(hashtext('weir-server-thread:' || $1)::bigint)";
    admin.execute(lock, &[&"t2"]).await.unwrap();
    let r = run("t2", MultitaskStrategy::Enqueue);
    let enqueue = tokio::spawn({
        let (queue, r) = (db.queue.clone(), r.clone());
        async move { queue.enqueue(&r, None, None, None).await }
    });
    killed_and_run_again(&admin, &db.app, &enqueue, "enqueue").await;
    let unlock = "SELECT pg_advisory_unlock(hashtext('weir-server-thread:' || $1)::bigint)";
    admin.execute(unlock, &[&"t2"]).await.unwrap();
    let queued = enqueue.await.unwrap().unwrap();
    assert!(
        matches!(queued, Enqueued::Queued { ref inflight } if inflight.is_empty()),
        "{queued:?}"
    );
    assert_eq!(db.queue.list_runs("t2", 0, 0, None).await.unwrap().len(), 1);

    // Lock the run's row: the delete waits, is killed, and is not run again.
    let mut locker = self::admin().await;
    let tx = locker.transaction().await.unwrap();
    let schema = db.app.clone();
    tx.execute(
        &format!("SELECT 1 FROM \"{schema}\".server_runs WHERE run_id = $1 FOR UPDATE"),
        &[&r.run_id],
    )
    .await
    .unwrap();
    let delete = tokio::spawn({
        let (queue, id) = (db.queue.clone(), r.run_id.clone());
        async move { queue.delete_run(&id).await }
    });
    let pid = waiting(&admin, &db.app, None, &delete).await;
    admin.execute("SELECT pg_terminate_backend($1)", &[&pid]).await.unwrap();
    let e = delete.await.unwrap().expect_err("a delete is not repeated");
    tx.rollback().await.unwrap();
    let message = e.to_string();
    assert!(
        message.contains("the connection to PostgreSQL was lost during deleting a run; it was not run again"),
        "{message}"
    );
    assert_eq!(
        db.queue.list_runs("t2", 0, 0, None).await.unwrap().len(),
        1,
        "the killed delete was rolled back"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
async fn a_thread_create_killed_while_it_waits_runs_again() {
    let db = support::postgres().await;
    let admin = admin().await;
    // Another transaction inserts the same id first: the create waits on the unique index.
    let mut locker = self::admin().await;
    let tx = locker.transaction().await.unwrap();
    let schema = db.app.clone();
    tx.execute(
        &format!(
            "INSERT INTO \"{schema}\".server_threads (thread_id, status, created_at, updated_at, state_updated_at, \
             metadata, \"values\", doc) VALUES ('t3', 'idle', 'x', 'x', 'x', '{{}}', 'null', '{{}}')"
        ),
        &[],
    )
    .await
    .unwrap();
    let t = thread("t3", 0, ThreadStatus::Idle, json!({"user": "u1"}), json!(null));
    let create = tokio::spawn({
        let (catalog, t) = (db.catalog.clone(), t.clone());
        async move { catalog.create_thread(&t, IfExists::Raise).await }
    });
    killed_and_run_again(&admin, &db.app, &create, "create").await;
    tx.rollback().await.unwrap();
    assert_eq!(create.await.unwrap().unwrap(), t);
    assert_eq!(db.catalog.get_thread("t3").await.unwrap(), Some(t));
}

/// A run's end with the worker's next claim, killed while the end waits on the thread's row,
/// runs again on a fresh connection, ends the run once and claims the run behind it once (its
/// first claim).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
async fn an_end_and_claim_killed_while_it_waits_runs_again_and_claims_once() {
    let db = support::postgres().await;
    let admin = admin().await;
    let t = thread("t4", 0, ThreadStatus::Idle, json!({}), json!(null));
    db.catalog.create_thread(&t, IfExists::Raise).await.unwrap();
    let (first, behind) = (
        run("t4", MultitaskStrategy::Enqueue),
        run("t4", MultitaskStrategy::Enqueue),
    );
    for r in [&first, &behind] {
        db.queue.enqueue(r, None, None, None).await.unwrap();
    }
    let claimed = db.queue.claim("w1").await.unwrap().expect("the first run is claimed");
    assert_eq!(claimed.run_id, first.run_id);

    // Hold the thread's row: the end waits inside its transaction, before its claim.
    let mut locker = self::admin().await;
    let tx = locker.transaction().await.unwrap();
    let schema = db.app.clone();
    tx.execute(
        &format!("SELECT 1 FROM \"{schema}\".server_threads WHERE thread_id = 't4' FOR UPDATE"),
        &[],
    )
    .await
    .unwrap();
    let end = tokio::spawn({
        let (queue, claimed) = (db.queue.clone(), claimed.clone());
        async move {
            let idle = ThreadUpdate::status(ThreadStatus::Idle, None);
            let done = RunFate::Status(RunStatus::Success);
            queue.end_run_and_claim(&claimed, done, &idle, "w1").await
        }
    });
    killed_and_run_again(&admin, &db.app, &end, "end").await;
    tx.rollback().await.unwrap();
    let (ended, next) = end.await.unwrap().unwrap();
    assert!(ended);
    let next = next.expect("the run behind is claimed");
    assert_eq!(
        (next.run_id.as_str(), next.status, next.attempt),
        (behind.run_id.as_str(), RunStatus::Running, 1)
    );
    let runs = db.queue.list_runs("t4", 0, 0, None).await.unwrap();
    let statuses: Vec<_> = runs.iter().map(|r| (r.run_id.as_str(), r.status, r.attempt)).collect();
    assert_eq!(
        statuses,
        [
            (behind.run_id.as_str(), RunStatus::Running, 1),
            (first.run_id.as_str(), RunStatus::Success, 1)
        ],
        "newest first: each run ended or claimed once"
    );
}
