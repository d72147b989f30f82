//! The functional API on durable checkpointers: an entrypoint killed (SIGKILL) between two task
//! calls resumes in another process without running the finished call again, and a run paused on
//! SQLite (or PostgreSQL) is resumed through a checkpointer opened anew, as a second process
//! would.
//!
//! The child is this test binary again, running only [`functional_crash_child`] (which does
//! nothing unless `WEIR_FUNC_SIDE` is set). Each task appends a line to a side file as it runs.

mod crash_support;

use crash_support::{durability_named, record, side_lines};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use weir::checkpoint::{new_checkpoint_id, Checkpointer, SqliteSaver};
use weir::prelude::*;

#[task]
fn fetch(side: String) -> String {
    record(side.as_ref(), "fetch");
    "data".to_owned()
}

/// Sleeps for an hour in the child, which is killed during that sleep.
#[task]
async fn summarize(side: String, data: String) -> String {
    record(side.as_ref(), "summarize");
    if std::env::var("WEIR_FUNC_SIDE").is_ok() {
        tokio::time::sleep(Duration::from_secs(3600)).await;
    }
    format!("summary of {data}")
}

#[entrypoint]
async fn pipeline(side: String) -> Result<String, BoxError> {
    let data = fetch(side.clone()).await?;
    Ok(summarize(side, data).await?)
}

/// The child: runs the entrypoint until it is killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn functional_crash_child() {
    let Ok(side) = std::env::var("WEIR_FUNC_SIDE") else {
        return;
    };
    let saver = SqliteSaver::open(std::env::var("WEIR_FUNC_DB").unwrap()).unwrap();
    let cfg = RunConfig::thread(std::env::var("WEIR_FUNC_THREAD").unwrap())
        .durability(durability_named(&std::env::var("WEIR_FUNC_DURABILITY").unwrap()));
    let app = pipeline().with_checkpointer(saver).compile().unwrap();
    let _ = app.invoke(side, &cfg).await;
}

fn start_child(db: &Path, side: &Path, thread: &str, durability: &str) -> Child {
    crash_support::start_child(
        "functional_crash_child",
        &[
            ("WEIR_FUNC_DB", db.as_os_str()),
            ("WEIR_FUNC_SIDE", side.as_os_str()),
            ("WEIR_FUNC_THREAD", thread.as_ref()),
            ("WEIR_FUNC_DURABILITY", durability.as_ref()),
        ],
    )
}

/// Whether the thread's latest checkpoint holds a saved task call.
async fn has_saved_call(saver: &dyn Checkpointer, thread: &str) -> bool {
    match saver.get(thread, "", None).await {
        Ok(Some(loaded)) => loaded.pending_writes.iter().any(|w| w.channel == "__call__"),
        _ => false,
    }
}

async fn killed_between_calls_resumes_without_running_the_finished_call(durability: &str) {
    let dir = std::env::temp_dir().join(format!("weir-func-crash-{}", new_checkpoint_id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (db, side): (PathBuf, PathBuf) = (dir.join("threads.db"), dir.join("side.log"));
    let thread = format!("crash-{durability}");
    let mut child = start_child(&db, &side, &thread, durability);

    let saver = Arc::new(SqliteSaver::open(&db).unwrap());
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        crash_support::still_running(&mut child, "the child");
        if side_lines(&side).len() == 2 && has_saved_call(&*saver, &thread).await {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no saved call while `summarize` ran: {:?}",
            side_lines(&side)
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    child.kill().unwrap(); // SIGKILL, in the middle of `summarize`
    child.wait().unwrap();

    let app = pipeline()
        .compile()
        .unwrap()
        .with_checkpointer(SqliteSaver::open(&db).unwrap());
    let cfg = RunConfig::thread(&thread);
    let resumed = app.resume(&cfg).await.unwrap();
    assert_eq!(app.output(resumed.state()).unwrap(), "summary of data");
    // `fetch` ran once (its result was saved), `summarize` again (it had not finished).
    assert_eq!(side_lines(&side), ["fetch", "summarize", "summarize"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_entrypoint_killed_between_calls_resumes_without_running_the_finished_call() {
    killed_between_calls_resumes_without_running_the_finished_call("sync").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_entrypoint_killed_between_calls_resumes_without_running_the_finished_call() {
    killed_between_calls_resumes_without_running_the_finished_call("async").await;
}

// ---- a pause resumed through a checkpointer opened anew ---------------------------------------

static STEPS: AtomicUsize = AtomicUsize::new(0);
static PG_STEPS: AtomicUsize = AtomicUsize::new(0);

#[task]
fn outline(topic: String, pg: bool) -> Vec<String> {
    if pg { &PG_STEPS } else { &STEPS }.fetch_add(1, Ordering::SeqCst);
    vec![format!("{topic}: intro"), format!("{topic}: end")]
}

#[entrypoint]
async fn outlined(topic: (String, bool), ctx: &Context) -> Result<Vec<String>, BoxError> {
    let (topic, pg) = topic;
    let mut parts = outline(topic, pg).await?;
    let extra: String = ctx.interrupt(&parts)?;
    parts.push(extra);
    Ok(parts)
}

async fn paused_then_resumed_on(open: impl AsyncFn() -> Arc<dyn Checkpointer>, pg: bool, counter: &AtomicUsize) {
    let cfg = RunConfig::thread(format!("outline-{}", &new_checkpoint_id()[12..]));
    let first = outlined().compile().unwrap().with_checkpointer_arc(open().await);
    assert!(first.run(("weir".into(), pg), &cfg).await.unwrap().is_paused());
    drop(first);
    let second = outlined().compile().unwrap().with_checkpointer_arc(open().await);
    let done = second.resume_with("credits", &cfg).await.unwrap();
    assert_eq!(
        second.output(done.state()).unwrap(),
        ["weir: intro", "weir: end", "credits"]
    );
    assert_eq!(counter.load(Ordering::SeqCst), 1);
    let history = second.graph().get_state_history(&cfg, None).await.unwrap();
    assert!(history.len() >= 3, "input, paused step and done: {}", history.len());
}

#[tokio::test]
async fn a_pause_on_sqlite_resumes_through_a_checkpointer_opened_anew() {
    let db = std::env::temp_dir().join(format!("weir-func-{}.db", new_checkpoint_id()));
    let path = db.clone();
    paused_then_resumed_on(
        async || -> Arc<dyn Checkpointer> {
            let saver: Arc<dyn Checkpointer> = Arc::new(SqliteSaver::open(&path).unwrap());
            saver
        },
        false,
        &STEPS,
    )
    .await;
    let _ = std::fs::remove_file(&db);
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
async fn a_pause_on_postgres_resumes_through_a_checkpointer_opened_anew() {
    let schema = weir_test_support::Schema::fresh("weir_func");
    let (url, schema) = (&schema.url, &schema.name);
    paused_then_resumed_on(
        async || -> Arc<dyn Checkpointer> {
            let saver = weir::checkpoint::PostgresSaver::connect_with_schema(url, schema).await;
            let saver: Arc<dyn Checkpointer> = Arc::new(saver.unwrap());
            saver
        },
        true,
        &PG_STEPS,
    )
    .await;
}
