//! When a run may be claimed and who may settle it: `after_seconds` (no claim before the run's
//! time; the worker's timer claims it then, without waiting for a poll) and the claim's token (a
//! worker whose heartbeat lapsed while it was only slow cannot settle the run that another
//! worker claimed again and finished, it stops that run at its next beat, and the same worker
//! claiming its run again runs only the new attempt), and waits on a run that end when it ends
//! even when its stream's end never reaches the waiting process.

mod runs_support;

use axum::http::StatusCode;
use futures::future::BoxFuture;
use runs_support::{
    app_on, app_with, app_with_bus, config, graphs, open, stuck_worker_beating, App, Faulty, Gate, HUNG,
};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use weir::checkpoint::Checkpointer;
use weir_server::bus::local::LocalBus;
use weir_server::bus::Bus;
use weir_server::db::sqlite::SqliteDb;
use weir_server::db::{Catalog, DbError, Enqueued, InFlight, RunFate, RunQueue, ThreadUpdate};
use weir_server::model::RunStatus;
use weir_server::model::{Object, Run};
use weir_server::runs::{Manager, ManagerConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delayed_run_waits_for_its_time_and_the_timer_starts_it_without_a_poll() {
    // Workers that would poll only once an hour: the delayed run starts by its timer or not at all.
    let (_dir, app) = app_with(ManagerConfig {
        poll: Duration::from_secs(3600),
        ..config()
    })
    .await;
    let (soon, late) = (app.thread().await, app.thread().await);
    let body = |after: f64| Some(json!({"input": {"topic": "x"}, "assistant_id": "chain", "after_seconds": after}));
    let late_run = app.call("POST", &format!("/threads/{late}/runs"), body(3600.0)).await;
    assert_eq!(late_run.status, StatusCode::OK);
    let soon_run = app.call("POST", &format!("/threads/{soon}/runs"), body(0.2)).await;
    assert_eq!(soon_run.status, StatusCode::OK);
    // As LangGraph's: a delayed run's `created_at` is when it may start.
    let created = |r: &runs_support::Reply| r.body["created_at"].as_str().unwrap().to_owned();
    assert!(created(&late_run) > created(&soon_run));
    assert!(created(&soon_run).as_str() > soon_run.body["updated_at"].as_str().unwrap());

    let rid = soon_run.body["run_id"].as_str().unwrap();
    let joined = tokio::time::timeout(HUNG, app.call("GET", &format!("/threads/{soon}/runs/{rid}/join"), None))
        .await
        .expect("the delayed run was never claimed");
    assert_eq!(joined.body, json!({"topic": "x", "log": ["a:x", "b"]}));
    let late_id = late_run.body["run_id"].as_str().unwrap();
    assert_eq!(app.status(&late, late_id).await, Some(RunStatus::Pending));
    assert_eq!(app.checkpoints(&late).await, 0);
    let due = app.db.next_due().await.unwrap();
    assert_eq!(due.as_deref(), Some(created(&late_run).as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_seconds_must_be_a_number_of_seconds_from_zero_to_a_century() {
    let (_dir, app) = app_with(config()).await;
    let tid = app.thread().await;
    // 1e300 seconds once panicked converting to a `Duration` (a 500).
    for (after, shown) in [(json!(-1), "-1"), (json!(1e300), "1e300"), (json!(3.2e9), "3200000000")] {
        let r = app
            .call(
                "POST",
                &format!("/threads/{tid}/runs"),
                Some(json!({"input": {"topic": "x"}, "assistant_id": "chain", "after_seconds": after})),
            )
            .await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{after}");
        assert_eq!(
            r.body["detail"],
            format!(
                "body field `after_seconds`: expected a number of seconds from 0 to 3155760000 (100 years), got {shown}"
            )
        );
    }
    assert!(app.runs(&tid).await.is_empty());
}

/// Worker A on `db`, stuck in a run of `gated` it started, with a beat that comes once (see
/// [`stuck_worker_beating`]).
async fn stuck_worker(db: &Arc<SqliteDb>, saver: &Arc<dyn Checkpointer>, slots: usize) -> (App, String, String) {
    stuck_worker_beating(db, saver, slots, Duration::from_secs(3600)).await
}

/// Worker B: the same tables, another bus, so not A's heartbeats: to B, A is dead. Its sweeper
/// requeues A's run, B claims it again and finishes it (its node let through at once).
async fn taking_over_worker(db: &Arc<SqliteDb>, saver: &Arc<dyn Checkpointer>) -> Manager {
    let (b, gate_b) = worker_b(db, saver, Arc::new(LocalBus::default())).await;
    tokio::time::timeout(HUNG, gate_b.entered.notified()).await.unwrap();
    gate_b.release();
    b
}

/// Worker B on `bus`, started, and the gate its `gated` node waits at.
async fn worker_b(db: &Arc<SqliteDb>, saver: &Arc<dyn Checkpointer>, bus: Arc<dyn Bus>) -> (Manager, Arc<Gate>) {
    let gate_b = Arc::new(Gate::default());
    let config = ManagerConfig {
        requeue_on_start: false,
        ..config()
    };
    let b = Manager::new(graphs(saver, &gate_b), db.clone(), db.clone(), bus, config);
    b.start().await.unwrap();
    (b, gate_b)
}

/// Checks that `rid` still runs its first attempt: nobody took it back (`why` says otherwise).
async fn still_first_attempt(db: &SqliteDb, tid: &str, rid: &str, why: &str) {
    let run = db.get_run(tid, rid).await.unwrap().unwrap();
    assert_eq!((run.status, run.attempt), (RunStatus::Running, 1), "{why}");
}

/// Waits until `rid` ends well; the run as it ended.
async fn until_success(db: &SqliteDb, tid: &str, rid: &str) -> Run {
    let finished = async {
        loop {
            match db.get_run(tid, rid).await.unwrap() {
                Some(run) if run.status == RunStatus::Success => return run,
                _ => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    };
    tokio::time::timeout(HUNG, finished).await.unwrap()
}

/// A worker whose own heartbeats fail (Redis away, as it sees it) believes no other worker dead
/// for a missing heartbeat: every worker's beats lapse alike then. It takes A's run back only
/// once its own beats have gone through on time for a whole time to live (three beats) again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_whose_own_beats_fail_takes_no_run_back_until_they_go_through_for_a_ttl() {
    let dir = tempfile::tempdir().unwrap();
    let (db, saver) = open(&dir.path().join("weir.db")).await;
    let (a, tid, rid) = stuck_worker(&db, &saver, 1).await;
    let away = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let faulty = Arc::new(Faulty::beats_fail_while(LocalBus::default(), away.clone()));
    let (b, gate_b) = worker_b(&db, &saver, faulty).await;
    let still_as = |why| still_first_attempt(&db, &tid, &rid, why);
    // Four sweeps (a 1 s heartbeat) with its own beats failing: A is left alone.
    tokio::time::sleep(Duration::from_secs(4)).await;
    still_as("taken back while the taker's own beats failed").await;
    away.store(false, std::sync::atomic::Ordering::SeqCst);
    // Its beats go through again, for less than their time to live (3 s): still left alone.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    still_as("taken back before the taker's beats had gone through for a time to live").await;
    // Then A's heartbeat is believed missing: B takes the run back and finishes it.
    tokio::time::timeout(HUNG, gate_b.entered.notified()).await.unwrap();
    gate_b.release();
    let finished = until_success(&db, &tid, &rid).await;
    assert_eq!(finished.attempt, 2);
    a.gate.release();
    a.manager.shutdown().await;
    b.shutdown().await;
}

/// A sweeper that asked whether A is alive just before Redis went away gets its answer when Redis
/// is back: A's heartbeat expired meanwhile, and A's next beat is not through yet. Its own beats
/// waited as long (not failed, not late yet while they waited), so it does not believe that
/// answer, and A keeps its run: no node runs twice for an outage.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_waited_out_an_outage_is_not_believed_and_the_run_stays_with_its_worker() {
    let dir = tempfile::tempdir().unwrap();
    let (db, saver) = open(&dir.path().join("weir.db")).await;
    let shared: Arc<dyn Bus> = Arc::new(LocalBus::default());
    let away = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let waiting = || -> Arc<dyn Bus> { Arc::new(Faulty::waits_while(shared.clone(), away.clone())) };
    let (a, tid, rid) = runs_support::stuck_worker_on(&db, &saver, 1, Duration::from_secs(1), waiting()).await;
    let (b, _gate_b) = worker_b(&db, &saver, waiting()).await;
    let still_as = |why| still_first_attempt(&db, &tid, &rid, why);
    // B's beats go through on time for longer than their time to live (3 s): it would believe
    // a missing heartbeat now, but A beats.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    still_as("taken back while A beat").await;
    // Redis away for longer than the time to live: A's heartbeat expires.
    away.store(true, std::sync::atomic::Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(4)).await;
    away.store(false, std::sync::atomic::Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(1)).await;
    still_as("taken back on an answer given as Redis came back").await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    still_as("taken back once both workers beat again").await;
    a.gate.release();
    let finished = until_success(&db, &tid, &rid).await;
    assert_eq!(finished.attempt, 1, "the run ended by its first attempt");
    a.manager.shutdown().await;
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_lost_its_run_to_the_sweeper_cannot_settle_it_after_the_new_claim() {
    let dir = tempfile::tempdir().unwrap();
    let (db, saver) = open(&dir.path().join("weir.db")).await;
    let (a, tid, rid) = stuck_worker(&db, &saver, 1).await;
    let b = taking_over_worker(&db, &saver).await;
    let finished = until_success(&db, &tid, &rid).await;
    assert_eq!(finished.attempt, 2);
    let thread = db.get_thread(&tid).await.unwrap().unwrap();
    assert_eq!(thread.values, json!({"topic": "x", "log": ["a:x", "slow:x"]}));

    // A wakes up and finishes its node: its settle is refused, the run and thread stay as B left them.
    a.gate.release();
    a.manager.shutdown().await;
    assert_eq!(db.get_run(&tid, &rid).await.unwrap(), Some(finished));
    assert_eq!(db.get_thread(&tid).await.unwrap(), Some(thread));
    b.shutdown().await;
}

/// Lets A's node through: the run, requeued once, ends well under its second attempt. Then A
/// shuts down.
async fn finishes_as_the_second_attempt(a: &App, db: &SqliteDb, tid: &str, rid: &str) {
    a.gate.release();
    let joined = tokio::time::timeout(HUNG, a.call("GET", &format!("/threads/{tid}/runs/{rid}/join"), None))
        .await
        .unwrap();
    assert_eq!(joined.body, json!({"topic": "x", "log": ["a:x", "slow:x"]}));
    let run = db.get_run(tid, rid).await.unwrap().unwrap();
    assert_eq!((run.status, run.attempt), (RunStatus::Success, 2));
    a.manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_claims_its_own_requeued_run_again_stops_the_first_attempt_and_finishes_the_second() {
    // The sweeper of another worker took A's run away while A was only slow, and A, with a
    // slot free, claims it again: the first attempt stops, the second runs on from the
    // checkpoint the first wrote, and the end of the first does not cancel the second.
    let dir = tempfile::tempdir().unwrap();
    let (db, saver) = open(&dir.path().join("weir.db")).await;
    let (a, tid, rid) = stuck_worker(&db, &saver, 2).await;
    assert_eq!(db.requeue(None).await.unwrap(), vec![(rid.clone(), 1)]);
    // The second attempt reaches the gated node and the first, stopped, leaves it (the gate
    // lets its waiters through first come, first served); let the second through.
    tokio::time::timeout(HUNG, a.gate.entered.notified()).await.unwrap();
    tokio::time::timeout(HUNG, async {
        while a.gate.waiting() != 1 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the first attempt stops");
    finishes_as_the_second_attempt(&a, &db, &tid, &rid).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_stops_a_run_the_sweeper_took_back_at_its_next_beat() {
    // A worker with one slot is stuck in a run when another worker's sweeper, to which A looks
    // dead, puts the run back in the queue. Nothing lets A's node through and nothing cancels
    // the run: A finds at its next beat that the claim is no longer its own and stops the run
    // (before, it went on writing checkpoints and events until its graph ended, beside whoever
    // claimed the run next). Its slot free, A claims the run again; the second attempt runs on
    // from the first's last checkpoint, and the stopped attempt wrote nothing more.
    let dir = tempfile::tempdir().unwrap();
    let (db, saver) = open(&dir.path().join("weir.db")).await;
    let (a, tid, rid) = stuck_worker_beating(&db, &saver, 1, Duration::from_millis(100)).await;
    assert_eq!(db.requeue(None).await.unwrap(), vec![(rid.clone(), 1)]);

    tokio::time::timeout(HUNG, a.gate.entered.notified())
        .await
        .expect("the first attempt stops, and the second reaches the gate");
    assert_eq!(a.gate.waiting(), 1, "the first attempt left the gate");
    finishes_as_the_second_attempt(&a, &db, &tid, &rid).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_and_a_stream_end_when_their_run_ends_without_its_end_reaching_their_bus() {
    let dir = tempfile::tempdir().unwrap();
    let (db, saver) = open(&dir.path().join("weir.db")).await;
    // A runs the run and gets stuck in it; the client waits on it through A. B takes the run
    // over and finishes it, and A's bus never carries the run's end (as when a worker dies
    // after saving the run's status).
    let (a, tid, rid) = stuck_worker(&db, &saver, 1).await;
    let take_over = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        taking_over_worker(&db, &saver).await
    };
    let (join_path, stream_path) = (
        format!("/threads/{tid}/runs/{rid}/join"),
        format!("/threads/{tid}/runs/{rid}/stream"),
    );
    let join = a.call("GET", &join_path, None);
    let stream = a.call("GET", &stream_path, None);
    let (join, stream, b) = tokio::time::timeout(HUNG, async { tokio::join!(join, stream, take_over) })
        .await
        .expect("the join and the stream end once the run has ended");
    assert_eq!(join.status, StatusCode::OK);
    assert_eq!(
        join.body,
        json!({"topic": "x", "log": ["a:x", "slow:x"]}),
        "the outcome B saved"
    );
    assert_eq!(stream.status, StatusCode::OK);
    assert_eq!(
        db.get_run(&tid, &rid).await.unwrap().unwrap().status,
        RunStatus::Success
    );
    a.gate.release();
    a.manager.shutdown().await;
    b.shutdown().await;
}

/// The run is stored before its wake: a wake that fails delays it to a worker's poll, and the
/// client gets its run (it used to get a 500 for a run that was queued and later ran).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_wake_fails_is_created_and_a_poll_runs_it() {
    let polling = ManagerConfig {
        poll: Duration::from_millis(20),
        ..config()
    };
    let (_dir, app) = app_with_bus(polling, Arc::new(Faulty::wakes_fail(LocalBus::default()))).await;
    let tid = app.thread().await;
    let r = app
        .call(
            "POST",
            &format!("/threads/{tid}/runs/wait"),
            Some(json!({"input": {"topic": "x"}, "assistant_id": "chain"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body, json!({"topic": "x", "log": ["a:x", "b"]}));
    let runs = app.runs(&tid).await;
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, RunStatus::Success);
}

/// The run queue of a dispatcher stopped in the middle of a claim: the claim commits, and its
/// answer never comes (the dispatcher is aborted at shutdown while it waits); the rest is `db`.
struct ClaimThenHang {
    db: Arc<SqliteDb>,
    claimed: Arc<tokio::sync::Notify>,
}

impl RunQueue for ClaimThenHang {
    fn enqueue<'a>(
        &'a self,
        run: &'a Run,
        busy: Option<&'a Object>,
        _claim: Option<&'a str>,
        bound: Option<usize>,
    ) -> BoxFuture<'a, Result<Enqueued, DbError>> {
        // Every run goes through the dispatcher's claim, the one this queue stops.
        self.db.enqueue(run, busy, None, bound)
    }
    fn get_run<'a>(&'a self, thread_id: &'a str, run_id: &'a str) -> BoxFuture<'a, Result<Option<Run>, DbError>> {
        self.db.get_run(thread_id, run_id)
    }
    fn list_runs<'a>(
        &'a self,
        thread_id: &'a str,
        limit: usize,
        offset: usize,
        status: Option<RunStatus>,
    ) -> BoxFuture<'a, Result<Vec<Run>, DbError>> {
        self.db.list_runs(thread_id, limit, offset, status)
    }
    fn in_flight(&self, status: InFlight) -> BoxFuture<'_, Result<Vec<(String, String)>, DbError>> {
        self.db.in_flight(status)
    }
    fn has_inflight<'a>(&'a self, thread_id: &'a str, except: Option<&'a str>) -> BoxFuture<'a, Result<bool, DbError>> {
        self.db.has_inflight(thread_id, except)
    }
    fn claim<'a>(&'a self, worker: &'a str) -> BoxFuture<'a, Result<Option<Run>, DbError>> {
        Box::pin(async move {
            let run = self.db.claim(worker).await?;
            if run.is_none() {
                return Ok(None);
            }
            self.claimed.notify_one();
            std::future::pending().await
        })
    }
    fn holds<'a>(&'a self, run_id: &'a str, attempt: u32) -> BoxFuture<'a, Result<bool, DbError>> {
        self.db.holds(run_id, attempt)
    }
    fn end_run<'a>(
        &'a self,
        run: &'a Run,
        end: RunFate,
        update: &'a ThreadUpdate,
    ) -> BoxFuture<'a, Result<bool, DbError>> {
        self.db.end_run(run, end, update)
    }
    fn next_due(&self) -> BoxFuture<'_, Result<Option<String>, DbError>> {
        self.db.next_due()
    }
    fn set_status<'a>(&'a self, run_id: &'a str, status: RunStatus) -> BoxFuture<'a, Result<bool, DbError>> {
        self.db.set_status(run_id, status)
    }
    fn delete_run<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<bool, DbError>> {
        self.db.delete_run(run_id)
    }
    fn requeue<'a>(&'a self, worker: Option<&'a str>) -> BoxFuture<'a, Result<Vec<(String, u32)>, DbError>> {
        self.db.requeue(worker)
    }
    fn busy_workers(&self) -> BoxFuture<'_, Result<Vec<String>, DbError>> {
        self.db.busy_workers()
    }
    fn queue_stats<'a>(&'a self, now: &'a str) -> BoxFuture<'a, Result<weir_server::db::QueueStats, DbError>> {
        self.db.queue_stats(now)
    }
}

/// A shutdown that stops the dispatcher between a claim's commit and its answer puts the run
/// back: it used to stay `running` with nobody running it (until a restart or a sweeper).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_claimed_as_the_workers_stop_goes_back_to_the_queue() {
    let dir = tempfile::tempdir().unwrap();
    let (db, saver) = open(&dir.path().join("weir.db")).await;
    let app = app_on(db.clone(), saver.clone(), config()).await;
    app.manager.shutdown().await;
    let tid = app.thread().await;
    let created = app
        .call(
            "POST",
            &format!("/threads/{tid}/runs"),
            Some(json!({"input": {"topic": "x"}, "assistant_id": "chain"})),
        )
        .await;
    let rid = created.body["run_id"].as_str().unwrap().to_owned();
    let claimed = Arc::new(tokio::sync::Notify::new());
    let queue = Arc::new(ClaimThenHang {
        db: db.clone(),
        claimed: claimed.clone(),
    });
    let gate = Arc::new(Gate::default());
    let worker = Manager::new(
        graphs(&saver, &gate),
        db.clone(),
        queue,
        Arc::new(LocalBus::default()),
        config(),
    );
    worker.start().await.unwrap();
    tokio::time::timeout(HUNG, claimed.notified()).await.unwrap();
    assert_eq!(
        db.get_run(&tid, &rid).await.unwrap().unwrap().status,
        RunStatus::Running
    );
    worker.shutdown().await;
    let run = db.get_run(&tid, &rid).await.unwrap().unwrap();
    assert_eq!((run.status, run.attempt), (RunStatus::Pending, 1));
}
