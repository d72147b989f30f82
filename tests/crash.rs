//! Crash recovery: a child process runs a long graph on a SQLite file and is killed with SIGKILL
//! mid-run; this process then resumes the thread and must end with the state of a run that was
//! never interrupted, no step lost and no committed step run twice.
//!
//! The child is this test binary again, running only [`crash_child`], which does nothing unless
//! `WEIR_CRASH_DB` is set.

mod crash_support;

use serde::{Deserialize, Serialize};
use std::path::Path;

use crash_support::{record, side_lines, start_child};
use std::sync::Arc;
use std::time::{Duration, Instant};
use weir::checkpoint::{new_checkpoint_id, Checkpointer, MemorySaver, SqliteSaver};
use weir::prelude::*;
use weir::NodeRef;

const STEPS: usize = 200;
const THREAD: &str = "crash";

#[derive(State, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Work {
    #[reducer(append)]
    done: Vec<u64>,
}

/// START -> work, looping until `STEPS` items: each execution sleeps a little, appends its item's
/// index to the state and a line with that index to the side file.
fn graph(saver: Arc<dyn Checkpointer>, side: &Path) -> CompiledGraph<Work> {
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
            if s.done.len() < STEPS {
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
fn config() -> RunConfig {
    RunConfig::thread(THREAD)
        .recursion_limit(STEPS + 10)
        .durability(Durability::Sync)
}

/// The child: runs the graph until it is killed (or finishes, if the parent is slow).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_child() {
    let (Ok(db), Ok(side)) = (std::env::var("WEIR_CRASH_DB"), std::env::var("WEIR_CRASH_SIDE")) else {
        return;
    };
    let saver = Arc::new(SqliteSaver::open(&db).unwrap());
    graph(saver, Path::new(&side))
        .invoke(WorkUpdate::default(), &config())
        .await
        .unwrap();
}

/// The steps the side file says ran, in order.
fn steps_ran(side: &Path) -> Vec<u64> {
    side_lines(side).iter().map(|l| l.parse().unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_mid_way_resumes_with_no_step_lost_and_no_committed_step_run_twice() {
    let dir = std::env::temp_dir().join(format!("weir-crash-{}-{}", std::process::id(), new_checkpoint_id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (db, side) = (dir.join("crash.db"), dir.join("side.log"));

    // Start the child and kill it once it is well into the run.
    let mut child = start_child(
        "crash_child",
        &[("WEIR_CRASH_DB", db.as_os_str()), ("WEIR_CRASH_SIDE", side.as_os_str())],
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while steps_ran(&side).len() < STEPS / 3 {
        assert!(Instant::now() < deadline, "the child made no progress");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the child ended before it was killed"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let ran_in_child = steps_ran(&side).len();
    assert!(ran_in_child < STEPS, "the child finished before it was killed");

    // Resume the thread here, from the file.
    let saver: Arc<dyn Checkpointer> = Arc::new(SqliteSaver::open(&db).unwrap());
    let app = graph(saver, &side);
    let committed = app.get_state(&config()).await.unwrap().unwrap().values.done.len();
    let resumed = app.resume(&config()).await.unwrap();
    assert!(!resumed.is_paused());

    // The state of a run never interrupted.
    let expected = graph(Arc::new(MemorySaver::new()), &dir.join("reference.log"))
        .invoke(WorkUpdate::default(), &config())
        .await
        .unwrap();
    assert_eq!(resumed.state(), &expected);
    assert_eq!(expected.done, (0..STEPS as u64).collect::<Vec<_>>());

    // A step's checkpoint is its commit: a step whose checkpoint was written is never run again,
    // and the one step under way when the process died (its node may have run, its checkpoint
    // not written) runs again on resume. So every item's node ran once, except at most the item
    // of the first uncommitted step, `committed`, which may have run twice.
    let mut runs = vec![0usize; STEPS];
    for i in steps_ran(&side) {
        runs[i as usize] += 1;
    }
    for (i, n) in runs.iter().enumerate() {
        let allowed = if i == committed { 1..=2 } else { 1..=1 };
        assert!(
            allowed.contains(n),
            "item {i} ran {n} times ({committed} committed before the kill)"
        );
    }
    println!(
        "killed the child after {ran_in_child} node runs, {committed} steps committed; the resume ran {} more \
         (item {committed} ran {} times)",
        runs.iter().sum::<usize>() - ran_in_child,
        runs[committed]
    );
    let _ = std::fs::remove_dir_all(&dir);
}
