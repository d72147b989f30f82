//! The fence scaled out: on PostgreSQL, a worker that was only slow, whose run the sweeper put
//! back in the queue and another worker claimed again, cannot write a checkpoint under the new
//! attempt (before, its checkpoint could land first, and the new attempt's next one then met a
//! moved head and the run ended in error), nor publish on the run's stream once the sweeper
//! fenced it off, or the new attempt published, whichever comes first (before, a client saw its
//! last step beside the new attempt's); and the fence
//! asks for the checkpointer's tables in its schema. Needs `WEIR_POSTGRES_URL`: ignored unless asked for with `-- --include-ignored`,
//! as `.ci/run` does.

mod runs_support;

use axum::http::StatusCode;
use futures::StreamExt;
use runs_support::{app_on_bus, config, stuck_worker_on, App, Faulty, HUNG};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use weir::checkpoint::{Checkpointer, PostgresSaver};
use weir_runtime::postgres::PoolOptions;
use weir_server::bus::local::LocalBus;
use weir_server::bus::{Bus, StreamItem};
use weir_server::db::postgres::PostgresDb;
use weir_server::db::RunQueue;
use weir_server::model::RunStatus;
use weir_server::runs::ManagerConfig;
use weir_test_support::Schema;

/// The server's tables and checkpoints in a schema of the test's own, fenced as
/// `Server::scale_out` fences them.
async fn backends(schema: &Schema) -> (Arc<PostgresDb>, Arc<dyn Checkpointer>) {
    let saver = PostgresSaver::connect_with_schema(&schema.url, &schema.name)
        .await
        .unwrap();
    let options = PoolOptions::new().size(4).schema(&schema.name);
    let db = PostgresDb::connect_with(&schema.url, options).await.unwrap();
    db.fence_checkpoints().await.unwrap();
    // As a second process starting on the schema does: it finds the fence there.
    db.fence_checkpoints().await.unwrap();
    (Arc::new(db), Arc::new(saver))
}

async fn history(app: &App<PostgresDb>, tid: &str) -> Vec<Value> {
    let reply = app.call("GET", &format!("/threads/{tid}/history"), None).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.body.as_array().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL (WEIR_POSTGRES_URL)"]
async fn a_slow_workers_checkpoint_after_its_run_was_taken_back_is_refused_and_the_next_attempt_ends_well() {
    taken_back(Sweeper::Fences).await;
}

/// The same when the sweeper's fence of the run's stream comes late (it follows the requeue by
/// a round trip): the next attempt's first event fences the slow worker off the stream itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL (WEIR_POSTGRES_URL)"]
async fn the_next_attempt_fences_the_slow_worker_off_the_stream_without_the_sweepers_fence() {
    taken_back(Sweeper::FenceLost).await;
}

/// Whether the sweeper's fence of the run's stream arrives.
enum Sweeper {
    Fences,
    FenceLost,
}

async fn taken_back(sweeper: Sweeper) {
    let schema = Schema::fresh("weir_fence_test");
    let (db, saver) = backends(&schema).await;

    // Worker A, one slot, whose beats never reach the bus it shares with B (it never stops its
    // run itself: it looks at its claims once an hour), stuck in the gated node after the
    // graph's first three checkpoints.
    let bus: Arc<dyn Bus> = Arc::new(LocalBus::default());
    let unheard = Arc::new(Faulty::beats_lost(bus.clone()));
    let (a, tid, rid) = stuck_worker_on(&db, &saver, 1, Duration::from_secs(3600), unheard).await;

    // Worker B's sweeper takes A for dead: it puts the run back in the queue and fences A off
    // its stream; B claims the run again and, from the thread's head, reaches the gated node too.
    let b_bus = match sweeper {
        Sweeper::Fences => bus.clone(),
        Sweeper::FenceLost => Arc::new(Faulty::fences_lost(bus.clone())),
    };
    let b = app_on_bus(
        db.clone(),
        saver.clone(),
        ManagerConfig {
            requeue_on_start: false,
            ..config()
        },
        |_| BTreeMap::new(),
        b_bus,
    )
    .await;
    tokio::time::timeout(HUNG, b.gate.entered.notified()).await.unwrap();
    let run = db.get_run(&tid, &rid).await.unwrap().unwrap();
    assert_eq!((run.status, run.attempt), (RunStatus::Running, 2));

    // A's node finishes first: its checkpoint is refused (its run ends in error, which its
    // claim keeps off the run's row), and so is its step's `values` event.
    a.gate.release();
    a.manager.shutdown().await;
    assert_eq!(
        history(&b, &tid).await.len(),
        3,
        "the first attempt wrote after losing its run"
    );
    let run = db.get_run(&tid, &rid).await.unwrap().unwrap();
    assert_eq!((run.status, run.attempt), (RunStatus::Running, 2));

    // B's checkpoint finds the head where B read it: the run ends well under attempt 2.
    b.gate.release();
    let joined = tokio::time::timeout(HUNG, b.call("GET", &format!("/threads/{tid}/runs/{rid}/join"), None))
        .await
        .unwrap();
    assert_eq!(joined.body, json!({"topic": "x", "log": ["a:x", "slow:x"]}));
    let run = db.get_run(&tid, &rid).await.unwrap().unwrap();
    assert_eq!((run.status, run.attempt), (RunStatus::Success, 2));
    let checkpoints = history(&b, &tid).await;
    let attempts: Vec<&Value> = checkpoints.iter().map(|c| &c["metadata"]["run_attempt"]).collect();
    assert_eq!(attempts, [&json!(2), &json!(1), &json!(1), &json!(1)]);

    // The run's stream: A's events up to the gate, then B's from the checkpoint it resumed
    // from; nothing of A's after its run was taken back.
    let stream: Vec<(String, Value)> = bus
        .subscribe(&rid, Some("-1"))
        .await
        .unwrap()
        .filter_map(|item| async move {
            match item {
                StreamItem::Event { event, data, .. } => Some((event, serde_json::from_str(&data).unwrap())),
                StreamItem::Done => None,
            }
        })
        .collect()
        .await;
    let logs: Vec<String> = stream
        .iter()
        .map(|(event, data)| match event.as_str() {
            "metadata" => format!("metadata {}", data["attempt"]),
            _ => format!("{event} {}", data["log"]),
        })
        .collect();
    assert_eq!(
        logs,
        [
            "metadata 1",
            "values []",
            "values [\"a:x\"]",
            "metadata 2",
            "values [\"a:x\"]",
            "values [\"a:x\",\"slow:x\"]",
            "__outcome__ [\"a:x\",\"slow:x\"]"
        ],
        "{stream:?}"
    );

    // A copy holds checkpoints naming the run, of another thread: the fence lets them through.
    let copied = b.call("POST", &format!("/threads/{tid}/copy"), None).await;
    assert_eq!(copied.status, StatusCode::OK, "{}", copied.body);
    let copy = copied.body["thread_id"].as_str().unwrap();
    assert_eq!(history(&b, copy).await.len(), 4);
    b.manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL (WEIR_POSTGRES_URL)"]
async fn the_fence_needs_the_checkpointers_tables_in_its_schema() {
    let schema = Schema::fresh("weir_fence_test");
    let options = PoolOptions::new().size(1).schema(&schema.name);
    let db = PostgresDb::connect_with(&schema.url, options).await.unwrap();
    let err = db.fence_checkpoints().await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "PostgreSQL schema `{}` has no checkpoints table to fence: connect the checkpointer \
             (PostgresSaver) to this schema first",
            schema.name
        )
    );
}
