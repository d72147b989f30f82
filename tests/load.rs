//! Load: N threads of M steps each run at once on one saver (a SQLite file; PostgreSQL with the
//! `postgres` feature, ignored unless asked for, then on `WEIR_POSTGRES_URL`); afterwards every thread's history
//! is complete: M + 2 checkpoints, steps -1..=M in order, each the parent of the next, nothing lost
//! or duplicated.
//!
//! 100 threads x 20 steps by default; `WEIR_LOAD_FULL=1` runs 1,000 x 100.

#[path = "checkpoint/support.rs"]
mod support;

use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Instant;
use weir::checkpoint::{Checkpointer, Source};
use weir::prelude::*;
use weir::NodeRef;

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Counter {
    #[reducer(append)]
    steps: Vec<u32>,
    target: u32,
}

fn size() -> (usize, u32) {
    match std::env::var("WEIR_LOAD_FULL").as_deref() {
        Ok("1") => (1_000, 100),
        _ => (100, 20),
    }
}

/// START -> tick, looping until `target` items.
fn graph(saver: Arc<dyn Checkpointer>) -> CompiledGraph<Counter> {
    let mut g = GraphBuilder::<Counter>::new();
    let tick = g.add_node("tick", |s: &Counter| {
        CounterUpdate::default().steps(vec![s.steps.len() as u32])
    });
    let again = tick.id();
    g.add_edge(START, &tick);
    g.add_router(
        &tick,
        move |s: &Counter| {
            if (s.steps.len() as u32) < s.target {
                Goto::from(again)
            } else {
                Goto::End
            }
        },
        [NodeRef::from(again), NodeRef::End],
    );
    g.set_checkpointer(saver);
    g.compile().unwrap()
}

async fn load(name: &str, saver: Arc<dyn Checkpointer>) {
    let (threads, steps) = size();
    let app = graph(saver.clone());
    let started = Instant::now();
    let runs = (0..threads).map(|t| {
        let app = app.clone();
        tokio::spawn(async move {
            let cfg = RunConfig::thread(format!("load-{t:04}")).recursion_limit(steps as usize + 5);
            app.invoke(CounterUpdate::default().target(steps), &cfg).await
        })
    });
    for out in futures::future::join_all(runs).await {
        assert_eq!(out.unwrap().unwrap().steps, (0..steps).collect::<Vec<_>>());
    }
    let ran = started.elapsed();

    let mut ids = saver.threads().await.unwrap();
    ids.sort();
    assert_eq!(ids, (0..threads).map(|t| format!("load-{t:04}")).collect::<Vec<_>>());
    let expected_steps: Vec<i64> = (-1..=i64::from(steps)).rev().collect();
    for id in &ids {
        let records = saver.list(id, "", None, None).await.unwrap();
        let got: Vec<i64> = records.iter().map(|r| r.step).collect();
        assert_eq!(got, expected_steps, "thread {id}");
        assert_eq!(records.last().unwrap().source, Source::Input);
        assert!(records[..records.len() - 1].iter().all(|r| r.source == Source::Loop));
        for pair in records.windows(2) {
            assert!(pair[0].id > pair[1].id, "thread {id}: ids out of order");
            assert_eq!(pair[0].parent_id.as_deref(), Some(&*pair[1].id), "thread {id}");
        }
        assert_eq!(records.last().unwrap().parent_id, None);
        let usage = saver.usage(id).await.unwrap();
        assert_eq!(usage.checkpoints, u64::from(steps) + 2, "thread {id}");
        assert_eq!(usage.pending_writes, 0, "thread {id}");
    }
    println!(
        "{name}: {threads} threads x {steps} steps ({} checkpoints) ran in {ran:.1?}, {:.0} checkpoints/s; \
         histories checked in {:.1?}",
        threads as u64 * (u64::from(steps) + 2),
        (threads as f64 * (f64::from(steps) + 2.0)) / ran.as_secs_f64(),
        started.elapsed() - ran,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_threads_on_one_sqlite_file_keep_complete_histories() {
    let harness = support::sqlite().await;
    load("sqlite", harness.saver.clone()).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
async fn many_threads_on_postgres_keep_complete_histories() {
    let harness = support::postgres().await;
    load("postgres", harness.saver.clone()).await;
}
