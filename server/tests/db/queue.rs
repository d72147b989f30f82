//! The run queue's cases: enqueue with its in-flight check, reads, the claim's order and its
//! one-running-run-per-thread rule under concurrent claimers, requeue and busy workers.

use crate::support::{id, run, thread, Db};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use weir_server::db::{DbError, Enqueued, IfExists, InFlight, RunFate, ThreadUpdate};
use weir_server::model::{MultitaskStrategy, Run, RunStatus, ThreadStatus};

async fn queued(db: &Db, run: &Run) -> Vec<String> {
    queued_within(db, run, None).await
}

pub async fn enqueue_reports_the_runs_ahead_and_reject_stores_nothing(db: &Db) {
    let t = id();
    let first = run(&t, MultitaskStrategy::Reject);
    assert_eq!(queued(db, &first).await, Vec::<String>::new());
    let second = run(&t, MultitaskStrategy::Interrupt);
    assert_eq!(queued(db, &second).await, std::slice::from_ref(&first.run_id));
    let rejected = run(&t, MultitaskStrategy::Reject);
    assert_eq!(
        db.queue.enqueue(&rejected, None, None, None).await.unwrap(),
        Enqueued::Rejected
    );
    assert_eq!(db.queue.get_run(&t, &rejected.run_id).await.unwrap(), None);
    // A running run is in flight too; a finished one is not.
    let claimed = db.queue.claim("w1").await.unwrap().unwrap();
    assert_eq!(claimed.run_id, first.run_id);
    let third = run(&t, MultitaskStrategy::Enqueue);
    let Enqueued::Queued { inflight } = db.queue.enqueue(&third, None, None, None).await.unwrap() else {
        panic!("queued")
    };
    let statuses: Vec<_> = inflight.iter().map(|r| (r.run_id.clone(), r.status)).collect();
    assert_eq!(
        statuses,
        [
            (first.run_id.clone(), RunStatus::Running),
            (second.run_id.clone(), RunStatus::Pending)
        ]
    );
    for r in [&first, &second, &third] {
        assert!(db.queue.set_status(&r.run_id, RunStatus::Success).await.unwrap());
    }
    let after = run(&t, MultitaskStrategy::Reject);
    assert_eq!(queued(db, &after).await, Vec::<String>::new());
    // The same run twice is a conflict.
    let again = Run {
        multitask_strategy: MultitaskStrategy::Enqueue,
        ..after.clone()
    };
    let err = db.queue.enqueue(&again, None, None, None).await.unwrap_err();
    assert_eq!(err, DbError::Conflict(format!("run `{}` exists already", after.run_id)));
}

pub async fn a_threads_queue_is_bounded_for_the_enqueue_strategy_only(db: &Db) {
    let t = id();
    let (first, second) = (run(&t, MultitaskStrategy::Enqueue), run(&t, MultitaskStrategy::Enqueue));
    for r in [&first, &second] {
        assert!(matches!(
            db.queue.enqueue(r, None, None, Some(2)).await.unwrap(),
            Enqueued::Queued { .. }
        ));
    }
    // A third behind two is past the bound: refused, nothing stored; a running run counts too.
    db.queue.claim("w1").await.unwrap().expect("the first run is claimed");
    let third = run(&t, MultitaskStrategy::Enqueue);
    assert_eq!(
        db.queue.enqueue(&third, None, None, Some(2)).await.unwrap(),
        Enqueued::Full { ahead: 2 }
    );
    assert_eq!(db.queue.get_run(&t, &third.run_id).await.unwrap(), None);
    assert_eq!(db.queue.list_runs(&t, 0, 0, None).await.unwrap().len(), 2);
    // The strategies that stop the runs ahead are never bounded: they shorten the queue.
    let interrupting = run(&t, MultitaskStrategy::Interrupt);
    assert_eq!(
        queued_within(db, &interrupting, Some(2)).await,
        [first.run_id.clone(), second.run_id.clone()]
    );
    // Once a run has ended, there is room again.
    assert!(db.queue.set_status(&first.run_id, RunStatus::Success).await.unwrap());
    assert!(db
        .queue
        .set_status(&second.run_id, RunStatus::Interrupted)
        .await
        .unwrap());
    assert_eq!(
        queued_within(db, &third, Some(2)).await,
        std::slice::from_ref(&interrupting.run_id)
    );
}

/// [`queued`] with `bound` ([`weir_server::db::RunQueue::enqueue`]'s).
async fn queued_within(db: &Db, run: &Run, bound: Option<usize>) -> Vec<String> {
    match db.queue.enqueue(run, None, None, bound).await.unwrap() {
        Enqueued::Queued { inflight } => inflight.into_iter().map(|r| r.run_id).collect(),
        other => panic!("run {} was not queued: {other:?}", run.run_id),
    }
}

pub async fn concurrent_reject_enqueues_on_one_thread_let_one_in(db: &Db) {
    let t = id();
    let runs: Vec<Run> = (0..10).map(|_| run(&t, MultitaskStrategy::Reject)).collect();
    let answers = futures::future::join_all(runs.iter().map(|r| db.queue.enqueue(r, None, None, None))).await;
    let admitted = answers
        .into_iter()
        .filter(|a| matches!(a.as_ref().unwrap(), Enqueued::Queued { .. }))
        .count();
    assert_eq!(admitted, 1);
    assert_eq!(db.queue.list_runs(&t, 0, 0, None).await.unwrap().len(), 1);
}

pub async fn a_run_is_read_listed_set_and_deleted(db: &Db) {
    let t = id();
    let runs: Vec<Run> = (0..4).map(|_| run(&t, MultitaskStrategy::Enqueue)).collect();
    for r in &runs {
        queued(db, r).await;
    }
    let got = db.queue.get_run(&t, &runs[0].run_id).await.unwrap();
    assert_eq!(got.as_ref(), Some(&runs[0]));
    // Only under its own thread.
    assert_eq!(db.queue.get_run("other", &runs[0].run_id).await.unwrap(), None);
    let ids = |found: Vec<Run>| found.into_iter().map(|r| r.run_id).collect::<Vec<_>>();
    let newest_first: Vec<String> = runs.iter().rev().map(|r| r.run_id.clone()).collect();
    assert_eq!(ids(db.queue.list_runs(&t, 0, 0, None).await.unwrap()), newest_first);
    // A limit or an offset past what SQL counts in (a client's `u64::MAX`) means the same.
    assert_eq!(
        ids(db.queue.list_runs(&t, usize::MAX, 0, None).await.unwrap()),
        newest_first
    );
    assert!(db.queue.list_runs(&t, 0, usize::MAX, None).await.unwrap().is_empty());
    assert_eq!(
        ids(db.queue.list_runs(&t, 2, 1, None).await.unwrap()),
        newest_first[1..3]
    );
    assert!(db.queue.set_status(&runs[1].run_id, RunStatus::Error).await.unwrap());
    assert!(!db.queue.set_status("no-such-run", RunStatus::Error).await.unwrap());
    let errored = db.queue.list_runs(&t, 10, 0, Some(RunStatus::Error)).await.unwrap();
    assert_eq!(errored.len(), 1);
    assert_eq!(errored[0].status, RunStatus::Error);
    assert_ne!(errored[0].updated_at, runs[1].updated_at);
    assert!(db.queue.delete_run(&runs[1].run_id).await.unwrap());
    assert!(!db.queue.delete_run(&runs[1].run_id).await.unwrap());
    assert_eq!(db.queue.list_runs(&t, 0, 0, None).await.unwrap().len(), 3);
}

pub async fn claim_takes_the_oldest_runnable_run_and_a_threads_runs_in_order(db: &Db) {
    let (a, b) = (id(), id());
    let a1 = run(&a, MultitaskStrategy::Enqueue);
    let a2 = run(&a, MultitaskStrategy::Enqueue);
    let b1 = run(&b, MultitaskStrategy::Enqueue);
    for r in [&a1, &a2, &b1] {
        queued(db, r).await;
    }
    let claimed = db.queue.claim("w1").await.unwrap().unwrap();
    assert_eq!(
        (claimed.run_id.as_str(), claimed.status),
        (a1.run_id.as_str(), RunStatus::Running)
    );
    // a2 is older than b1, but its thread is running a1.
    assert_eq!(db.queue.claim("w2").await.unwrap().unwrap().run_id, b1.run_id);
    assert_eq!(db.queue.claim("w3").await.unwrap(), None);
    db.queue.set_status(&a1.run_id, RunStatus::Success).await.unwrap();
    assert_eq!(db.queue.claim("w3").await.unwrap().unwrap().run_id, a2.run_id);
    assert_eq!(db.queue.claim("w3").await.unwrap(), None);
    // Starting a second run of a running thread by hand is refused.
    let a3 = run(&a, MultitaskStrategy::Enqueue);
    queued(db, &a3).await;
    let err = db.queue.set_status(&a3.run_id, RunStatus::Running).await.unwrap_err();
    assert!(matches!(err, DbError::Conflict(_)), "{err:?}");
}

/// Holds a claimed run until 15 more claims (more than there are threads) have been answered,
/// or for a bounded while should every claimer be holding.
async fn hold(answered: &AtomicUsize) {
    let seen = answered.load(Ordering::SeqCst);
    for _ in 0..10_000 {
        if answered.load(Ordering::SeqCst) >= seen + 15 {
            return;
        }
        tokio::task::yield_now().await;
    }
}

/// What the claimers saw: the threads running now, the runs that started while their thread
/// ran another, the runs each thread ran in order, and how many claims were answered.
#[derive(Default)]
struct Seen {
    running: Mutex<HashSet<String>>,
    overlaps: Mutex<Vec<String>>,
    ran: Mutex<HashMap<String, Vec<String>>>,
    answered: AtomicUsize,
}

/// A claimer: claims and "runs" (holds) runs until all `total` have run.
async fn claimer(queue: Arc<dyn weir_server::db::RunQueue>, worker: String, seen: Arc<Seen>, total: usize) {
    loop {
        let claimed = queue.claim(&worker).await.unwrap();
        seen.answered.fetch_add(1, Ordering::SeqCst);
        let Some(r) = claimed else {
            let done = seen.ran.lock().unwrap().values().map(Vec::len).sum::<usize>();
            if done >= total {
                return;
            }
            tokio::task::yield_now().await;
            continue;
        };
        let alone = seen.running.lock().unwrap().insert(r.thread_id.clone());
        if !alone {
            seen.overlaps.lock().unwrap().push(r.run_id.clone());
        }
        {
            let mut ran = seen.ran.lock().unwrap();
            ran.entry(r.thread_id.clone()).or_default().push(r.run_id.clone());
        }
        hold(&seen.answered).await;
        if alone {
            seen.running.lock().unwrap().remove(&r.thread_id);
        }
        assert!(queue.set_status(&r.run_id, RunStatus::Success).await.unwrap());
    }
}

pub async fn concurrent_claims_never_run_two_runs_of_one_thread(db: &Db) {
    const THREADS: usize = 10;
    const RUNS: usize = 5;
    let threads: Vec<String> = (0..THREADS).map(|_| id()).collect();
    let mut order: HashMap<String, Vec<String>> = HashMap::new();
    for _ in 0..RUNS {
        for t in &threads {
            let r = run(t, MultitaskStrategy::Enqueue);
            queued(db, &r).await;
            order.entry(t.clone()).or_default().push(r.run_id);
        }
    }
    let seen: Arc<Seen> = Arc::default();
    let claimers =
        (0..20).map(|w| tokio::spawn(claimer(db.queue.clone(), format!("w{w}"), seen.clone(), THREADS * RUNS)));
    for claimer in futures::future::join_all(claimers).await {
        claimer.unwrap();
    }
    let overlaps = seen.overlaps.lock().unwrap().clone();
    assert_eq!(
        overlaps,
        Vec::<String>::new(),
        "runs started while their thread ran another"
    );
    assert_eq!(*seen.ran.lock().unwrap(), order);
    for t in &threads {
        let runs = db.queue.list_runs(t, 0, 0, None).await.unwrap();
        assert!(runs.iter().all(|r| r.status == RunStatus::Success));
    }
}

pub async fn requeue_puts_running_runs_back_and_busy_workers_names_their_workers(db: &Db) {
    let threads: Vec<String> = (0..3).map(|_| id()).collect();
    let runs: Vec<Run> = threads.iter().map(|t| run(t, MultitaskStrategy::Enqueue)).collect();
    for r in &runs {
        queued(db, r).await;
    }
    assert_eq!(db.queue.busy_workers().await.unwrap(), Vec::<String>::new());
    let by_w1 = db.queue.claim("w1").await.unwrap().unwrap();
    let by_w2 = db.queue.claim("w2").await.unwrap().unwrap();
    let also_w1 = db.queue.claim("w1").await.unwrap().unwrap();
    assert_eq!(db.queue.busy_workers().await.unwrap(), ["w1", "w2"]);
    let mut w1_runs = vec![(by_w1.run_id.clone(), 1), (also_w1.run_id.clone(), 1)];
    w1_runs.sort();
    assert_eq!(db.queue.requeue(Some("w1")).await.unwrap(), w1_runs);
    assert_eq!(db.queue.busy_workers().await.unwrap(), ["w2"]);
    let back = db
        .queue
        .get_run(&by_w1.thread_id, &by_w1.run_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(back.status, RunStatus::Pending);
    // A requeued run is claimed again, first (it is the oldest).
    assert_eq!(db.queue.claim("w3").await.unwrap().unwrap().run_id, by_w1.run_id);
    // Each with the attempt that lost it: by_w1's second.
    let mut rest = vec![(by_w1.run_id.clone(), 2), (by_w2.run_id.clone(), 1)];
    rest.sort();
    assert_eq!(db.queue.requeue(None).await.unwrap(), rest);
    assert_eq!(db.queue.busy_workers().await.unwrap(), Vec::<String>::new());
    assert_eq!(db.queue.requeue(None).await.unwrap(), []);
}

/// What `POST /runs/cancel` with a `status` stops: every pending, or running, run of any thread.
pub async fn in_flight_lists_every_pending_or_running_run_oldest_first(db: &Db) {
    let threads: Vec<String> = (0..3).map(|_| id()).collect();
    let mut runs: Vec<Run> = threads.iter().map(|t| run(t, MultitaskStrategy::Enqueue)).collect();
    runs.push(run(&threads[0], MultitaskStrategy::Enqueue));
    for r in &runs {
        queued(db, r).await;
    }
    let pair = |r: &Run| (r.thread_id.clone(), r.run_id.clone());
    assert_eq!(db.queue.in_flight(InFlight::Running).await.unwrap(), []);
    assert_eq!(
        db.queue.in_flight(InFlight::Pending).await.unwrap(),
        runs.iter().map(pair).collect::<Vec<_>>()
    );
    assert_eq!(db.queue.claim("w1").await.unwrap().unwrap().run_id, runs[0].run_id);
    assert!(db.queue.set_status(&runs[1].run_id, RunStatus::Success).await.unwrap());
    assert_eq!(db.queue.in_flight(InFlight::Running).await.unwrap(), [pair(&runs[0])]);
    assert_eq!(
        db.queue.in_flight(InFlight::Pending).await.unwrap(),
        [pair(&runs[2]), pair(&runs[3])]
    );
}

pub async fn a_worker_claims_the_run_it_queues_only_when_it_could_start_at_once(db: &Db) {
    let (t, t2) = (id(), id());
    let first = run(&t, MultitaskStrategy::Enqueue);
    let Enqueued::Claimed(claimed) = db.queue.enqueue(&first, None, Some("w1"), None).await.unwrap() else {
        panic!("a run on a free thread is claimed as it is queued")
    };
    let expected = Run {
        status: RunStatus::Running,
        attempt: 1,
        ..first.clone()
    };
    assert_eq!(*claimed, expected);
    // Stored as a claim would store it: running, for w1, under attempt 1.
    let stored = db.queue.get_run(&t, &first.run_id).await.unwrap().unwrap();
    assert_eq!((stored.status, stored.attempt), (RunStatus::Running, 1));
    assert!(db.queue.holds(&first.run_id, 1).await.unwrap());
    assert_eq!(db.queue.busy_workers().await.unwrap(), ["w1"]);
    // A second run of the thread waits behind it, and the dispatcher's claim does not take it.
    let second = run(&t, MultitaskStrategy::Enqueue);
    let Enqueued::Queued { inflight } = db.queue.enqueue(&second, None, Some("w1"), None).await.unwrap() else {
        panic!("a run behind a running one is queued")
    };
    assert_eq!(inflight, [(*claimed).clone()]);
    assert_eq!(db.queue.claim("w2").await.unwrap(), None);
    // A delayed run is queued even on a free thread; without a worker asking, so is any run.
    let delayed = Run {
        not_before: Some(from_now(3600)),
        ..run(&t2, MultitaskStrategy::Enqueue)
    };
    assert!(matches!(
        db.queue.enqueue(&delayed, None, Some("w1"), None).await.unwrap(),
        Enqueued::Queued { .. }
    ));
    let t3 = id();
    assert_eq!(
        queued(db, &run(&t3, MultitaskStrategy::Enqueue)).await,
        Vec::<String>::new()
    );
    // The claimed run ends as a claimed run does, and lets the one behind it go.
    let update = ThreadUpdate::status(ThreadStatus::Idle, None);
    assert!(db
        .queue
        .end_run(&claimed, RunFate::Status(RunStatus::Success), &update)
        .await
        .unwrap());
    let next = db.queue.claim("w2").await.unwrap().unwrap();
    assert_eq!((next.run_id, next.attempt), (second.run_id, 1));
}

pub async fn a_run_s_end_claims_the_workers_next_run_in_the_same_trip(db: &Db) {
    let (t, t2) = (id(), id());
    let first = run(&t, MultitaskStrategy::Enqueue);
    let behind = run(&t, MultitaskStrategy::Enqueue);
    let other = run(&t2, MultitaskStrategy::Enqueue);
    for r in [&first, &behind, &other] {
        queued(db, r).await;
    }
    let claimed = db.queue.claim("w1").await.unwrap().unwrap();
    assert_eq!(claimed.run_id, first.run_id);
    let by_w2 = db.queue.claim("w2").await.unwrap().unwrap();
    assert_eq!(by_w2.run_id, other.run_id);
    // The end of `first` lets the run behind it on its thread go, and w1 takes it at once.
    let idle = ThreadUpdate::status(ThreadStatus::Idle, None);
    let done = RunFate::Status(RunStatus::Success);
    let (ended, next) = db.queue.end_run_and_claim(&claimed, done, &idle, "w1").await.unwrap();
    let next = next.expect("the run behind is claimed");
    assert!(ended);
    assert_eq!(
        (next.run_id.as_str(), next.status, next.attempt),
        (behind.run_id.as_str(), RunStatus::Running, 1)
    );
    assert!(db.queue.holds(&behind.run_id, 1).await.unwrap());
    let stored = db.queue.get_run(&t, &first.run_id).await.unwrap().unwrap();
    assert_eq!(stored.status, RunStatus::Success);
    // Nothing left to claim: the end stands and no run is taken.
    let (ended, none) = db.queue.end_run_and_claim(&next, done, &idle, "w1").await.unwrap();
    assert!(ended);
    assert_eq!(none, None);
    // A stale claim ends nothing and claims nothing.
    let again = run(&t2, MultitaskStrategy::Enqueue);
    queued(db, &again).await;
    let stale = Run {
        attempt: 7,
        ..by_w2.clone()
    };
    assert_eq!(
        db.queue.end_run_and_claim(&stale, done, &idle, "w1").await.unwrap(),
        (false, None)
    );
    assert_eq!(
        db.queue.get_run(&t2, &again.run_id).await.unwrap().unwrap().status,
        RunStatus::Pending
    );
}

/// A wire timestamp `secs` seconds from now (negative: in the past).
fn from_now(secs: i64) -> String {
    let now = weir::checkpoint::Timestamp::now().unix_micros();
    let at = now.saturating_add_signed(secs * 1_000_000);
    let text = weir::checkpoint::Timestamp::from_unix_micros(at).to_string();
    format!("{}+00:00", text.trim_end_matches('Z'))
}

pub async fn a_run_is_not_claimed_before_its_time_and_holds_its_threads_later_runs_back(db: &Db) {
    let (t1, t2) = (id(), id());
    let later = Run {
        not_before: Some(from_now(3600)),
        ..run(&t1, MultitaskStrategy::Enqueue)
    };
    let behind = run(&t1, MultitaskStrategy::Enqueue);
    let due = Run {
        not_before: Some(from_now(-1)),
        ..run(&t2, MultitaskStrategy::Enqueue)
    };
    for r in [&later, &behind, &due] {
        queued(db, r).await;
    }
    let claimed = db.queue.claim("w1").await.unwrap().unwrap();
    assert_eq!(
        (claimed.run_id.as_str(), claimed.not_before.as_ref()),
        (due.run_id.as_str(), due.not_before.as_ref())
    );
    assert_eq!(db.queue.claim("w1").await.unwrap(), None);
    assert_eq!(db.queue.next_due().await.unwrap(), later.not_before);
    let stored = db.queue.get_run(&t1, &later.run_id).await.unwrap().unwrap();
    assert_eq!(
        (stored.status, stored.not_before),
        (RunStatus::Pending, later.not_before.clone())
    );
}

/// The update a run's end gives its thread: `status`, and `values`.
fn ended(status: ThreadStatus, values: Value) -> ThreadUpdate {
    ThreadUpdate {
        status: Some(status),
        values: Some(values),
        ..ThreadUpdate::default()
    }
}

/// The thread's status and values as stored.
async fn thread_now(db: &Db, t: &str) -> (ThreadStatus, Value) {
    let found = db.catalog.get_thread(t).await.unwrap().unwrap();
    (found.status, found.values)
}

pub async fn a_stale_claim_can_neither_hold_nor_end_a_run_claimed_again(db: &Db) {
    let t = id();
    let made = thread(&t, 0, ThreadStatus::Busy, json!({}), json!(null));
    db.catalog.create_thread(&made, IfExists::Raise).await.unwrap();
    let r = run(&t, MultitaskStrategy::Enqueue);
    queued(db, &r).await;
    let first = db.queue.claim("w1").await.unwrap().unwrap();
    assert_eq!(first.attempt, 1);
    assert!(db.queue.holds(&r.run_id, 1).await.unwrap());
    // w1's heartbeat lapsed: the sweeper puts its run back, w2 claims it.
    assert_eq!(db.queue.requeue(Some("w1")).await.unwrap(), [(r.run_id.clone(), 1)]);
    assert!(!db.queue.holds(&r.run_id, 1).await.unwrap());
    let second = db.queue.claim("w2").await.unwrap().unwrap();
    assert_eq!((second.run_id.as_str(), second.attempt), (r.run_id.as_str(), 2));
    // The stale claim writes neither the run nor its thread.
    let stale = ended(ThreadStatus::Error, json!({"by": "w1"}));
    assert!(!db
        .queue
        .end_run(&first, RunFate::Status(RunStatus::Error), &stale)
        .await
        .unwrap());
    assert_eq!(
        db.queue.get_run(&t, &r.run_id).await.unwrap().unwrap().status,
        RunStatus::Running
    );
    assert_eq!(thread_now(db, &t).await, (ThreadStatus::Busy, json!(null)));
    let done = ended(ThreadStatus::Idle, json!({"by": "w2"}));
    assert!(db
        .queue
        .end_run(&second, RunFate::Status(RunStatus::Success), &done)
        .await
        .unwrap());
    assert_eq!(thread_now(db, &t).await, (ThreadStatus::Idle, json!({"by": "w2"})));
    // Ended: no claim holds it any more, and it is final.
    assert!(!db.queue.holds(&r.run_id, 2).await.unwrap());
    assert!(!db
        .queue
        .end_run(&second, RunFate::Status(RunStatus::Error), &stale)
        .await
        .unwrap());
    let after = db.queue.get_run(&t, &r.run_id).await.unwrap().unwrap();
    assert_eq!((after.status, after.attempt), (RunStatus::Success, 2));
    assert_eq!(thread_now(db, &t).await, (ThreadStatus::Idle, json!({"by": "w2"})));
}

/// A busy thread with two runs: the first claimed by `w1` (returned as claimed), the second
/// pending.
async fn one_running_one_waiting(db: &Db) -> (String, Run, Run) {
    let t = id();
    let made = thread(&t, 0, ThreadStatus::Busy, json!({}), json!(null));
    db.catalog.create_thread(&made, IfExists::Raise).await.unwrap();
    let first = run(&t, MultitaskStrategy::Enqueue);
    queued(db, &first).await;
    let claimed = db.queue.claim("w1").await.unwrap().unwrap();
    assert_eq!(claimed.run_id, first.run_id);
    let second = run(&t, MultitaskStrategy::Enqueue);
    queued(db, &second).await;
    (t, claimed, second)
}

pub async fn a_run_s_end_leaves_its_thread_busy_while_another_run_of_it_waits(db: &Db) {
    let (t, claimed, second) = one_running_one_waiting(db).await;
    let update = ended(ThreadStatus::Interrupted, json!({"n": 1}));
    assert!(db
        .queue
        .end_run(&claimed, RunFate::Status(RunStatus::Success), &update)
        .await
        .unwrap());
    // The values are the ended run's; the status waits for the next run.
    assert_eq!(thread_now(db, &t).await, (ThreadStatus::Busy, json!({"n": 1})));
    let next = db.queue.claim("w1").await.unwrap().unwrap();
    assert_eq!(next.run_id, second.run_id);
    assert!(db
        .queue
        .end_run(&next, RunFate::Status(RunStatus::Success), &update)
        .await
        .unwrap());
    assert_eq!(thread_now(db, &t).await, (ThreadStatus::Interrupted, json!({"n": 1})));
    // A run whose thread is gone (a stateless run's, deleted) still ends.
    let lone = run(&id(), MultitaskStrategy::Enqueue);
    queued(db, &lone).await;
    let lone = db.queue.claim("w1").await.unwrap().unwrap();
    assert!(db
        .queue
        .end_run(&lone, RunFate::Status(RunStatus::Success), &update)
        .await
        .unwrap());
    let stored = db.queue.get_run(&lone.thread_id, &lone.run_id).await.unwrap().unwrap();
    assert_eq!(stored.status, RunStatus::Success);
}

pub async fn a_rolled_back_run_is_deleted_under_its_claim_with_its_thread_written(db: &Db) {
    let (t, claimed, second) = one_running_one_waiting(db).await;
    // A stale claim deletes nothing.
    let stale = Run {
        attempt: claimed.attempt + 1,
        ..claimed.clone()
    };
    let update = ended(ThreadStatus::Idle, json!({"n": 0}));
    assert!(!db.queue.end_run(&stale, RunFate::Deleted, &update).await.unwrap());
    assert!(db.queue.get_run(&t, &claimed.run_id).await.unwrap().is_some());
    assert_eq!(thread_now(db, &t).await, (ThreadStatus::Busy, json!(null)));
    // Deleted, and its thread stays busy in the same transaction: the second run waits.
    assert!(db.queue.end_run(&claimed, RunFate::Deleted, &update).await.unwrap());
    assert!(db.queue.get_run(&t, &claimed.run_id).await.unwrap().is_none());
    assert_eq!(thread_now(db, &t).await, (ThreadStatus::Busy, json!({"n": 0})));
    // The last one leaves it idle; a second end finds no claim.
    let next = db.queue.claim("w1").await.unwrap().unwrap();
    assert_eq!(next.run_id, second.run_id);
    assert!(db.queue.end_run(&next, RunFate::Deleted, &update).await.unwrap());
    assert_eq!(thread_now(db, &t).await, (ThreadStatus::Idle, json!({"n": 0})));
    assert!(!db.queue.end_run(&next, RunFate::Deleted, &update).await.unwrap());
    assert!(db.queue.list_runs(&t, 10, 0, None).await.unwrap().is_empty());
}

pub async fn a_pending_run_is_ended_only_while_it_is_still_pending(db: &Db) {
    let t = id();
    let made = thread(&t, 0, ThreadStatus::Busy, json!({}), json!(null));
    db.catalog.create_thread(&made, IfExists::Raise).await.unwrap();
    let (first, second) = (run(&t, MultitaskStrategy::Enqueue), run(&t, MultitaskStrategy::Enqueue));
    queued(db, &first).await;
    queued(db, &second).await;
    let idle = ThreadUpdate::status(ThreadStatus::Idle, None);
    // The second, still pending: interrupted; the thread stays busy for the first.
    let pending = db.queue.get_run(&t, &second.run_id).await.unwrap().unwrap();
    assert_eq!(pending.status, RunStatus::Pending);
    assert!(db
        .queue
        .end_run(&pending, RunFate::Status(RunStatus::Interrupted), &idle)
        .await
        .unwrap());
    assert_eq!(
        db.queue.get_run(&t, &second.run_id).await.unwrap().unwrap().status,
        RunStatus::Interrupted
    );
    assert_eq!(thread_now(db, &t).await.0, ThreadStatus::Busy);
    // Ended, it is left as it is.
    let interrupted = db.queue.get_run(&t, &second.run_id).await.unwrap().unwrap();
    assert!(!db.queue.end_run(&interrupted, RunFate::Deleted, &idle).await.unwrap());
    assert!(db.queue.get_run(&t, &second.run_id).await.unwrap().is_some());
    // The first, read pending, then claimed: the pending view ends nothing.
    let read = db.queue.get_run(&t, &first.run_id).await.unwrap().unwrap();
    let claimed = db.queue.claim("w1").await.unwrap().unwrap();
    assert_eq!(claimed.run_id, first.run_id);
    assert!(!db.queue.end_run(&read, RunFate::Deleted, &idle).await.unwrap());
    assert_eq!(
        db.queue.get_run(&t, &first.run_id).await.unwrap().unwrap().status,
        RunStatus::Running
    );
    assert_eq!(thread_now(db, &t).await.0, ThreadStatus::Busy);
    assert!(db.queue.end_run(&claimed, RunFate::Deleted, &idle).await.unwrap());
    assert_eq!(thread_now(db, &t).await.0, ThreadStatus::Idle);
}

pub async fn a_thread_is_in_flight_while_another_run_of_it_is_pending_or_running(db: &Db) {
    let (t, other) = (id(), id());
    let inflight = |except: Option<&str>| {
        let except = except.map(str::to_owned);
        let t = t.clone();
        async move { db.queue.has_inflight(&t, except.as_deref()).await }
    };
    assert!(!inflight(None).await.unwrap(), "no run yet");
    let first = run(&t, MultitaskStrategy::Enqueue);
    queued(db, &first).await;
    // Another thread's run is not this thread's.
    queued(db, &run(&other, MultitaskStrategy::Enqueue)).await;
    assert!(inflight(None).await.unwrap(), "pending");
    assert!(!inflight(Some(&first.run_id)).await.unwrap(), "only the run left out");
    let claimed = db.queue.claim("w1").await.unwrap().unwrap();
    assert_eq!(claimed.run_id, first.run_id);
    assert!(inflight(None).await.unwrap(), "running");
    let second = run(&t, MultitaskStrategy::Enqueue);
    queued(db, &second).await;
    assert!(inflight(Some(&first.run_id)).await.unwrap(), "another pending");
    assert!(inflight(Some(&second.run_id)).await.unwrap(), "another running");
    let update = ThreadUpdate::default();
    assert!(db
        .queue
        .end_run(&claimed, RunFate::Status(RunStatus::Success), &update)
        .await
        .unwrap());
    assert!(
        !inflight(Some(&second.run_id)).await.unwrap(),
        "a finished run is not in flight"
    );
    assert!(db.queue.set_status(&second.run_id, RunStatus::Error).await.unwrap());
    assert!(!inflight(None).await.unwrap(), "every run ended");
}

pub async fn enqueue_marks_its_thread_busy_in_the_same_transaction(db: &Db) {
    let t = id();
    let made = thread(&t, 0, ThreadStatus::Idle, json!({"owner": "ana"}), json!({"n": 1}));
    db.catalog.create_thread(&made, IfExists::Raise).await.unwrap();
    let busy = crate::support::object(json!({"graph_id": "chain"}));
    let first = run(&t, MultitaskStrategy::Reject);
    assert_eq!(
        db.queue.enqueue(&first, Some(&busy), None, None).await.unwrap(),
        Enqueued::Queued { inflight: vec![] }
    );
    let marked = db.catalog.get_thread(&t).await.unwrap().unwrap();
    assert_eq!(marked.status, ThreadStatus::Busy);
    assert_eq!(
        Value::Object(marked.metadata.clone()),
        json!({"owner": "ana", "graph_id": "chain"})
    );
    assert_eq!(marked.values, json!({"n": 1}), "the values stay");
    // Rejected, or the same run again (a conflict): the thread is left as it was.
    db.catalog
        .set_thread_status(&t, ThreadStatus::Idle, None)
        .await
        .unwrap();
    let other = crate::support::object(json!({"graph_id": "other"}));
    let rejected = run(&t, MultitaskStrategy::Reject);
    assert_eq!(
        db.queue.enqueue(&rejected, Some(&other), None, None).await.unwrap(),
        Enqueued::Rejected
    );
    let again = Run {
        multitask_strategy: MultitaskStrategy::Enqueue,
        ..first.clone()
    };
    assert!(db.queue.enqueue(&again, Some(&other), None, None).await.is_err());
    let left = db.catalog.get_thread(&t).await.unwrap().unwrap();
    assert_eq!((left.status, left.metadata), (ThreadStatus::Idle, marked.metadata));
    // A thread that does not exist: nothing stored.
    let lost = run(&id(), MultitaskStrategy::Enqueue);
    assert_eq!(
        db.queue.enqueue(&lost, Some(&busy), None, None).await.unwrap(),
        Enqueued::NoThread
    );
    assert_eq!(db.queue.get_run(&lost.thread_id, &lost.run_id).await.unwrap(), None);
}

/// The queue's figures for `/metrics`: counts of pending and running runs, and how long the
/// pending ones have waited (the longest, the median, the longest whose thread runs nothing).
pub async fn queue_stats_count_runs_and_age_the_waiting(db: &Db) {
    let empty = db.queue.queue_stats("2026-12-01T10:10:00.000000+00:00").await.unwrap();
    assert_eq!((empty.pending, empty.running), (0, 0));
    assert_eq!(empty.pending_wait_max_secs, None);
    let (busy, free) = (id(), id());
    // On `busy`: one run claimed, two waiting behind it; on `free`: one waiting that could start.
    let mut made = Vec::new();
    for (t, second) in [(&busy, 0), (&busy, 10), (&busy, 20), (&free, 30)] {
        let mut r = run(t, MultitaskStrategy::Enqueue);
        r.created_at = format!("2026-12-01T10:00:{second:02}.000000+00:00");
        queued(db, &r).await;
        made.push(r);
    }
    let claimed = db.queue.claim("w1").await.unwrap().expect("a run to claim");
    assert_eq!(claimed.run_id, made[0].run_id);
    // 10:01:00: the pending ones waited 50, 40 and 30 s.
    let stats = db.queue.queue_stats("2026-12-01T10:01:00.000000+00:00").await.unwrap();
    assert_eq!((stats.pending, stats.running), (3, 1));
    assert_eq!(stats.pending_wait_max_secs, Some(50.0));
    assert_eq!(stats.pending_wait_median_secs, Some(40.0));
    assert_eq!(stats.unblocked_wait_max_secs, Some(30.0));
}
