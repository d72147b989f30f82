//! A process killed in the middle of a step: each finished task's writes are saved as the task
//! ends (LangGraph's `put_writes`), so a resume re-runs only the tasks that had not finished.
//!
//! A child process (this test binary again, running only [`mid_step_child`], which does nothing
//! unless `WEIR_MID_STEP_SIDE` is set) runs a step of two tasks: `fast` returns at once, `slow`
//! sleeps. Each records its runs in a side file. Once the thread shows `fast`'s writes saved, the
//! parent kills the child with SIGKILL, resumes the thread, and checks that `fast` ran once, that
//! `slow` ran again under the idempotency key it had in the killed process, and that the state
//! holds both writes.

mod crash_support;

use crash_support::{durability_named, open_saver, record, side_lines};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::Arc;
use std::time::{Duration, Instant};
use weir::checkpoint::{new_checkpoint_id, Checkpointer};
use weir::prelude::*;

#[derive(State, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Pair {
    #[reducer(append)]
    done: Vec<String>,
}

/// START -> fast, START -> slow: one step of two tasks. `slow` sleeps for a minute when
/// `sleeps` (in the child, which is killed during that sleep).
fn graph(saver: Arc<dyn Checkpointer>, side: &Path, sleeps: bool) -> CompiledGraph<Pair> {
    let mut g = GraphBuilder::<Pair>::new();
    let side_fast = side.to_owned();
    g.add_node("fast", move |_: &Pair, ctx: &Context| {
        record(&side_fast, &format!("fast {}", ctx.idempotency_key().unwrap()));
        PairUpdate::default().done(vec!["fast".into()])
    });
    let side_slow = side.to_owned();
    g.add_node("slow", move |_: &Pair, ctx: &Context| {
        let side = side_slow.clone();
        let line = format!("slow {}", ctx.idempotency_key().unwrap());
        async move {
            record(&side, &line);
            if sleeps {
                tokio::time::sleep(Duration::from_secs(60)).await;
            }
            PairUpdate::default().done(vec!["slow".into()])
        }
    });
    g.add_edge(START, "fast").add_edge(START, "slow");
    g.set_checkpointer(saver);
    g.compile().unwrap()
}

fn config(thread: &str, durability: Durability) -> RunConfig {
    RunConfig::thread(thread).durability(durability)
}

/// The child: runs the graph until it is killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mid_step_child() {
    let Ok(side) = std::env::var("WEIR_MID_STEP_SIDE") else {
        return;
    };
    let saver = open_saver(&std::env::var("WEIR_MID_STEP_SAVER").unwrap()).await;
    let thread = std::env::var("WEIR_MID_STEP_THREAD").unwrap();
    let durability = durability_named(&std::env::var("WEIR_MID_STEP_DURABILITY").unwrap());
    let _ = graph(saver, Path::new(&side), true)
        .invoke(PairUpdate::default(), &config(&thread, durability))
        .await;
}

fn start_child(saver: &str, side: &Path, thread: &str, durability: &str) -> Child {
    crash_support::start_child(
        "mid_step_child",
        &[
            ("WEIR_MID_STEP_SAVER", saver.as_ref()),
            ("WEIR_MID_STEP_SIDE", side.as_os_str()),
            ("WEIR_MID_STEP_THREAD", thread.as_ref()),
            ("WEIR_MID_STEP_DURABILITY", durability.as_ref()),
        ],
    )
}

/// Kills the child (SIGKILL) once both tasks started and the thread shows `fast`'s writes saved
/// while `slow` still sleeps; then resumes the thread here and checks what ran.
async fn killed_mid_step_resumes_only_the_unfinished_task(saver: &str, durability: &str) {
    let dir = std::env::temp_dir().join(format!("weir-mid-step-{}-{}", std::process::id(), new_checkpoint_id()));
    std::fs::create_dir_all(&dir).unwrap();
    let side: PathBuf = dir.join("side.log");
    let thread = format!("mid-step-{durability}-{}", &new_checkpoint_id()[12..]);
    let cfg = config(&thread, durability_named(durability));
    let mut child = start_child(saver, &side, &thread, durability);

    // The parent's view of the thread, through the same kind of checkpointer.
    let checkpointer = open_saver(saver).await;
    let app = graph(checkpointer.clone(), &side, false);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        crash_support::still_running(&mut child, "the child");
        let started = side_lines(&side).len() == 2;
        let saved = match app.get_state(&cfg).await {
            Ok(Some(snapshot)) => snapshot.tasks.iter().any(|t| t.name == "fast" && t.done),
            _ => false,
        };
        if started && saved {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "`fast` finished but its writes were never saved while `slow` ran (side file: {:?})",
            side_lines(&side)
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let resumed = app.resume(&cfg).await.unwrap();
    assert!(!resumed.is_paused());
    // Both writes, in task order; `fast` ran once, `slow` again (it had not finished).
    assert_eq!(resumed.state().done, ["fast", "slow"]);
    // (The child ran its two tasks concurrently: their lines come in either order.)
    let mut runs = side_lines(&side);
    runs.sort();
    let (names, keys): (Vec<&str>, Vec<&str>) = runs.iter().map(|l| l.split_once(' ').unwrap()).unzip();
    assert_eq!(names, ["fast", "slow", "slow"]);
    // The resumed `slow` is the killed one's task: same key, which is not `fast`'s.
    assert_eq!(keys[1], keys[2]);
    assert_ne!(keys[0], keys[1]);
    let _ = checkpointer.delete_thread(&thread).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_run_killed_mid_step_on_sqlite_reruns_only_the_unfinished_task() {
    let db = std::env::temp_dir().join(format!("weir-mid-step-{}.db", new_checkpoint_id()));
    let saver = format!("sqlite:{}", db.display());
    killed_mid_step_resumes_only_the_unfinished_task(&saver, "sync").await;
    let _ = std::fs::remove_file(&db);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_run_killed_mid_step_on_sqlite_reruns_only_the_unfinished_task() {
    let db = std::env::temp_dir().join(format!("weir-mid-step-{}.db", new_checkpoint_id()));
    let saver = format!("sqlite:{}", db.display());
    killed_mid_step_resumes_only_the_unfinished_task(&saver, "async").await;
    let _ = std::fs::remove_file(&db);
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
async fn a_sync_run_killed_mid_step_on_postgres_reruns_only_the_unfinished_task() {
    let schema = weir_test_support::Schema::fresh("weir_mid_step");
    let saver = format!("postgres:{}:{}", schema.name, schema.url);
    killed_mid_step_resumes_only_the_unfinished_task(&saver, "sync").await;
}

/// A task's writes saved as it ended are saved before its routers run: when its sibling fails
/// and the thread is resumed, the task does not run again but its routers do, on the state with
/// its own writes applied.
#[tokio::test]
async fn a_task_saved_as_it_ended_routes_on_resume_without_running_again() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let routed_runs = Arc::new(AtomicUsize::new(0));
    let fail = Arc::new(AtomicBool::new(true));
    let mut g = GraphBuilder::<Pair>::new();
    let runs = routed_runs.clone();
    g.add_node("routed", move |_: &Pair| {
        runs.fetch_add(1, Ordering::SeqCst);
        PairUpdate::default().done(vec!["routed".into()])
    });
    let failing = fail.clone();
    g.add_node("flaky", move |_: &Pair| -> Result<PairUpdate, std::io::Error> {
        if failing.swap(false, Ordering::SeqCst) {
            return Err(std::io::Error::other("down"));
        }
        Ok(PairUpdate::default().done(vec!["flaky".into()]))
    });
    let next = g
        .add_node("next", |_: &Pair| PairUpdate::default().done(vec!["next".into()]))
        .id();
    g.add_edge(START, "routed").add_edge(START, "flaky");
    // The router sees the task's own write.
    g.add_router(
        "routed",
        move |s: &Pair| {
            if s.done.contains(&"routed".to_owned()) {
                Goto::Node(next)
            } else {
                Goto::End
            }
        },
        [next.into(), END],
    );
    g.set_checkpointer(Arc::new(weir::checkpoint::MemorySaver::new()));
    let app = g.compile().unwrap();
    let cfg = config("routes-on-resume", Durability::Sync);
    let failed = app.invoke(PairUpdate::default(), &cfg).await.unwrap_err();
    assert_eq!(failed.node_name(), Some("flaky"));
    let snapshot = app.get_state(&cfg).await.unwrap().unwrap();
    assert!(snapshot.tasks.iter().any(|t| t.name == "routed" && t.done));

    let resumed = app.resume(&cfg).await.unwrap();
    assert_eq!(resumed.state().done, ["flaky", "routed", "next"]);
    assert_eq!(routed_runs.load(Ordering::SeqCst), 1);
}
