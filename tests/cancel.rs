//! Work does not outlive its caller: a run given up on (`invoke` under a timeout, a stream
//! dropped) stops every task of the step under way, in place or spawned.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
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

/// Nodes `names`, all after START: each counts itself started, waits for `gate`, then writes its
/// file in `dir`.
fn gated(dir: &Path, names: &[&'static str], started: &Arc<AtomicUsize>, gate: &Arc<Notify>) -> CompiledGraph<S> {
    let mut g = GraphBuilder::<S>::new();
    for &name in names {
        let (file, started, gate) = (dir.join(name), started.clone(), gate.clone());
        g.add_node(name, move |_: &S| {
            let (file, started, gate) = (file.clone(), started.clone(), gate.clone());
            async move {
                started.fetch_add(1, Ordering::SeqCst);
                gate.notified().await;
                std::fs::write(&file, name).unwrap();
                SUpdate::default().n(1)
            }
        });
        g.add_edge(START, name);
    }
    g.compile().unwrap()
}

/// Waits until `n` nodes started.
async fn started_all(started: &AtomicUsize, n: usize) {
    while started.load(Ordering::SeqCst) < n {
        tokio::task::yield_now().await;
    }
}

/// Lets the run see that its caller is gone, opens the gate (the nodes' "delay" is over), and
/// gives any node still alive the time to write its file.
async fn open_and_settle(gate: &Notify) {
    tokio::time::sleep(Duration::from_millis(50)).await;
    gate.notify_waiters();
    tokio::time::sleep(Duration::from_millis(50)).await;
}

fn written(dir: &Path, names: &[&str]) -> Vec<PathBuf> {
    names.iter().map(|n| dir.join(n)).filter(|f| f.exists()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_invoke_stops_every_task_of_a_wide_step() {
    let dir = tempfile::tempdir().unwrap();
    let names = ["a", "b", "c"];
    let (started, gate) = (Arc::new(AtomicUsize::new(0)), Arc::new(Notify::new()));
    let app = gated(dir.path(), &names, &started, &gate);
    let cfg = RunConfig::default();
    let run = app.invoke(S::default(), &cfg);
    let waited = tokio::time::timeout(Duration::from_secs(30), async {
        tokio::select! {
            _ = run => panic!("the nodes wait for the gate"),
            () = started_all(&started, names.len()) => {}
        }
    })
    .await;
    assert!(waited.is_ok(), "every node started");
    open_and_settle(&gate).await;
    assert_eq!(
        written(dir.path(), &names),
        Vec::<PathBuf>::new(),
        "no node outlived its run"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invoke_under_a_timeout_stops_its_nodes_when_the_timeout_fires() {
    let dir = tempfile::tempdir().unwrap();
    let names = ["a", "b"];
    let (started, gate) = (Arc::new(AtomicUsize::new(0)), Arc::new(Notify::new()));
    let app = gated(dir.path(), &names, &started, &gate);
    let out = tokio::time::timeout(
        Duration::from_millis(200),
        app.invoke(S::default(), &RunConfig::default()),
    )
    .await;
    assert!(out.is_err(), "the timeout fired");
    assert_eq!(started.load(Ordering::SeqCst), 2);
    open_and_settle(&gate).await;
    assert_eq!(written(dir.path(), &names), Vec::<PathBuf>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_stream_stops_the_tasks_of_the_step_under_way() {
    for names in [&["a"][..], &["a", "b", "c"][..]] {
        let dir = tempfile::tempdir().unwrap();
        let (started, gate) = (Arc::new(AtomicUsize::new(0)), Arc::new(Notify::new()));
        let app = gated(dir.path(), names, &started, &gate);
        let stream = app.stream(S::default(), &RunConfig::default(), StreamMode::VALUES);
        started_all(&started, names.len()).await;
        drop(stream);
        open_and_settle(&gate).await;
        assert_eq!(
            written(dir.path(), names),
            Vec::<PathBuf>::new(),
            "{} task(s)",
            names.len()
        );
    }
}
