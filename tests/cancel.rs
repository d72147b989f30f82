//! Work does not outlive its caller: a run given up on (`invoke` under a timeout, a stream
//! dropped) stops every task of the step under way, in place or spawned. Each node holds a
//! guard that counts it stopped when its future is dropped: the tests wait for those events,
//! never for wall-clock time to pass (a run that leaks its tasks fails at a 30-second deadline).

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use weir::prelude::*;
use weir::StreamMode;

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct S {
    #[reducer(add)]
    n: i64,
}

/// Nodes started, and nodes whose future was dropped before it finished: what a run that stops
/// its tasks leaves behind, counted as it happens.
#[derive(Default)]
struct Tally {
    started: AtomicUsize,
    stopped: AtomicUsize,
    changed: Notify,
}

impl Tally {
    /// Waits until `count` reaches `n`, woken by each change (no polling, no sleep).
    async fn reaches(&self, count: impl Fn(&Self) -> usize, n: usize) {
        loop {
            // Made before the check: a change between the check and the await still wakes it.
            let changed = self.changed.notified();
            if count(self) >= n {
                return;
            }
            changed.await;
        }
    }

    /// Waits until every one of `n` nodes' futures was dropped, for at most 30 seconds of a
    /// run that does not stop its tasks.
    async fn all_stopped(&self, n: usize) {
        let stopped = tokio::time::timeout(
            Duration::from_secs(30),
            self.reaches(|t| t.stopped.load(Ordering::SeqCst), n),
        );
        assert!(
            stopped.await.is_ok(),
            "{} of {n} nodes outlived their run",
            n - self.stopped.load(Ordering::SeqCst)
        );
    }
}

/// Counts its node stopped when dropped: a node holds one while it waits.
struct StopGuard(Arc<Tally>);

impl Drop for StopGuard {
    fn drop(&mut self) {
        self.0.stopped.fetch_add(1, Ordering::SeqCst);
        self.0.changed.notify_waiters();
    }
}

/// Nodes `names`, all after START: each counts itself started, then waits for ever (for a reply
/// that never comes) holding a [`StopGuard`]: it ends only when its run drops it.
fn waiting(names: &[&'static str], tally: &Arc<Tally>) -> CompiledGraph<S> {
    let mut g = GraphBuilder::<S>::new();
    for &name in names {
        let tally = tally.clone();
        g.add_node(name, move |_: &S| {
            let tally = tally.clone();
            async move {
                let _guard = StopGuard(tally.clone());
                tally.started.fetch_add(1, Ordering::SeqCst);
                tally.changed.notify_waiters();
                std::future::pending::<()>().await;
                SUpdate::default().n(1)
            }
        });
        g.add_edge(START, name);
    }
    g.compile().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_invoke_stops_every_task_of_a_wide_step() {
    let names = ["a", "b", "c"];
    let tally = Arc::new(Tally::default());
    let app = waiting(&names, &tally);
    let cfg = RunConfig::default();
    let run = app.invoke(S::default(), &cfg);
    tokio::select! {
        _ = run => panic!("the nodes never finish"),
        () = tally.reaches(|t| t.started.load(Ordering::SeqCst), names.len()) => {}
    }
    // `run` is dropped here: each of its nodes' futures must be too.
    tally.all_stopped(names.len()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invoke_under_a_timeout_stops_its_nodes_when_the_timeout_fires() {
    let names = ["a", "b"];
    let tally = Arc::new(Tally::default());
    let app = waiting(&names, &tally);
    let out = tokio::time::timeout(
        Duration::from_millis(200),
        app.invoke(S::default(), &RunConfig::default()),
    )
    .await;
    assert!(out.is_err(), "the timeout fired");
    assert_eq!(tally.started.load(Ordering::SeqCst), 2);
    tally.all_stopped(names.len()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_stream_stops_the_tasks_of_the_step_under_way() {
    for names in [&["a"][..], &["a", "b", "c"][..]] {
        let tally = Arc::new(Tally::default());
        let app = waiting(names, &tally);
        let stream = app.stream(S::default(), &RunConfig::default(), StreamMode::VALUES);
        tally.reaches(|t| t.started.load(Ordering::SeqCst), names.len()).await;
        drop(stream);
        tally.all_stopped(names.len()).await;
    }
}
