//! Crash recovery: a child process runs a long graph and is killed with SIGKILL at random points,
//! again and again, each new child resuming the thread where the last one left it; then this
//! process resumes it to the end and must have the state of a run never interrupted, no step
//! lost and no committed step run twice. On a SQLite file and on PostgreSQL.
//!
//! 5 kills by default; `WEIR_CRASH_KILLS=100` gives the figures of `docs/reliability.md`.
//!
//! The child is this test binary again, running only [`crash_child`], which does nothing unless
//! `WEIR_CRASH_SAVER` is set.

mod crash_support;

use rand::Rng;
use serde::{Deserialize, Serialize};
use std::path::Path;

use crash_support::{open_saver, record, side_lines, start_child, still_running};
use std::sync::Arc;
use std::time::{Duration, Instant};
use weir::checkpoint::{new_checkpoint_id, Checkpointer, MemorySaver};
use weir::prelude::*;
use weir::NodeRef;

#[derive(State, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Work {
    #[reducer(append)]
    done: Vec<u64>,
}

/// START -> work, looping until `steps` items: each execution sleeps a little, appends its item's
/// index to the state and a line with that index to the side file.
fn graph(saver: Arc<dyn Checkpointer>, side: &Path, steps: usize) -> CompiledGraph<Work> {
    let mut g = GraphBuilder::<Work>::new();
    let side = side.to_owned();
    let work = g.add_node("work", move |s: &Work| {
        let (i, side) = (s.done.len() as u64, side.clone());
        async move {
            tokio::time::sleep(Duration::from_millis(3)).await;
            record(&side, &i.to_string());
            WorkUpdate::default().done(vec![i])
        }
    });
    let again = work.id();
    g.add_edge(START, &work);
    g.add_router(
        &work,
        move |s: &Work| {
            if s.done.len() < steps {
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

/// The run's configuration. Sync durability: each step's checkpoint is committed before the next
/// step starts (with async durability the next step's node may run while the checkpoint before it
/// is still being written, so a crash could lose that checkpoint and repeat two steps).
fn config(thread: &str, steps: usize) -> RunConfig {
    RunConfig::thread(thread)
        .recursion_limit(steps + 10)
        .durability(Durability::Sync)
}

/// How many times a run is killed.
fn kills() -> usize {
    std::env::var("WEIR_CRASH_KILLS").map_or(5, |k| k.parse().expect("WEIR_CRASH_KILLS is a number"))
}

/// The child: starts the thread, or resumes it where the last child was killed, and runs it
/// until it is killed (or finishes, if the parent is slow).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_child() {
    let Ok(saver) = std::env::var("WEIR_CRASH_SAVER") else {
        return;
    };
    let side = std::env::var("WEIR_CRASH_SIDE").unwrap();
    let thread = std::env::var("WEIR_CRASH_THREAD").unwrap();
    let steps: usize = std::env::var("WEIR_CRASH_STEPS").unwrap().parse().unwrap();
    let app = graph(open_saver(&saver).await, Path::new(&side), steps);
    let cfg = config(&thread, steps);
    if app.get_state(&cfg).await.unwrap().is_some() {
        app.resume(&cfg).await.unwrap();
    } else {
        app.invoke(WorkUpdate::default(), &cfg).await.unwrap();
    }
}

/// The steps the side file says ran, in order.
fn steps_ran(side: &Path) -> Vec<u64> {
    side_lines(side).iter().map(|l| l.parse().unwrap()).collect()
}

/// Kills a child running the thread on `saver` `kills()` times, each after a random number of
/// node runs, then resumes the thread here and checks it against a run never interrupted.
async fn killed_again_and_again(saver: &str) {
    let kills = kills();
    // Each child runs at most `MOST` more nodes before its kill: with this many steps no child
    // can finish the run first, whatever the draws (with 40 a kill, five draws above the mean
    // ended the run before the last kill about once in thirty).
    const MOST: usize = 80;
    let steps = MOST * kills + 100;
    let dir = std::env::temp_dir().join(format!("weir-crash-{}-{}", std::process::id(), new_checkpoint_id()));
    std::fs::create_dir_all(&dir).unwrap();
    let side = dir.join("side.log");
    let thread = format!("crash-{}", new_checkpoint_id());
    let steps_text = steps.to_string();
    let app = graph(open_saver(saver).await, &side, steps);
    let cfg = config(&thread, steps);
    let mut rng = rand::rng();
    // After each kill, the step the next child starts from: the first not committed.
    let mut committed_at_kill = Vec::with_capacity(kills);
    for k in 0..kills {
        let before = steps_ran(&side).len();
        let more = rng.random_range(1..=MOST);
        let mut child = start_child(
            "crash_child",
            &[
                ("WEIR_CRASH_SAVER", saver.as_ref()),
                ("WEIR_CRASH_SIDE", side.as_os_str()),
                ("WEIR_CRASH_THREAD", thread.as_ref()),
                ("WEIR_CRASH_STEPS", steps_text.as_ref()),
            ],
        );
        let deadline = Instant::now() + Duration::from_secs(60);
        while steps_ran(&side).len() < before + more {
            assert!(Instant::now() < deadline, "child {k} made no progress");
            still_running(&mut child, &format!("child {k}"));
            std::thread::sleep(Duration::from_micros(500));
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let committed = app.get_state(&cfg).await.unwrap().map_or(0, |s| s.values.done.len());
        assert!(committed < steps, "child {k} finished before it was killed");
        committed_at_kill.push(committed);
    }

    // Resume the thread here, to the end.
    let resumed = app.resume(&cfg).await.unwrap();
    assert!(!resumed.is_paused());
    let expected = graph(Arc::new(MemorySaver::new()), &dir.join("reference.log"), steps)
        .invoke(WorkUpdate::default(), &config("reference", steps))
        .await
        .unwrap();
    assert_eq!(resumed.state(), &expected);
    assert_eq!(expected.done, (0..steps as u64).collect::<Vec<_>>());
    // One checkpoint per step, each the parent of the next: none lost, none written twice.
    let history = app.get_state_history(&cfg, None).await.unwrap();
    assert_eq!(history.len(), steps + 2, "the input, the first step's and one per step");
    for pair in history.windows(2) {
        assert_eq!(pair[0].parent_id.as_deref(), Some(pair[1].checkpoint_id.as_str()));
    }

    // A step's checkpoint is its commit: a committed step never runs again; the step under way
    // when a child died (its node may have run, its checkpoint not written) runs again once.
    let mut runs = vec![0usize; steps];
    for i in steps_ran(&side) {
        runs[i as usize] += 1;
    }
    for (i, n) in runs.iter().enumerate() {
        let allowed = 1 + committed_at_kill.iter().filter(|c| **c == i).count();
        assert!(
            (1..=allowed).contains(n),
            "item {i} ran {n} times (at most {allowed}: the steps committed at each kill were {committed_at_kill:?})"
        );
    }
    let reruns: usize = runs.iter().sum::<usize>() - steps;
    println!(
        "{saver}: {kills} kills at random points of a {steps}-step run: 0 steps lost, 0 committed steps run \
         twice, {reruns} uncommitted steps run again"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_again_and_again_on_sqlite_loses_no_step_and_runs_no_committed_step_twice() {
    let db = std::env::temp_dir().join(format!("weir-crash-{}.db", new_checkpoint_id()));
    killed_again_and_again(&format!("sqlite:{}", db.display())).await;
    let _ = std::fs::remove_file(&db);
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
async fn a_run_killed_again_and_again_on_postgres_loses_no_step_and_runs_no_committed_step_twice() {
    let schema = weir_test_support::Schema::fresh("weir_crash");
    killed_again_and_again(&format!("postgres:{}:{}", schema.name, schema.url)).await;
}
