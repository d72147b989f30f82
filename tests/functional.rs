//! The functional API (`#[entrypoint]`, `#[task]`): parallel calls, resume after an interrupt
//! with saved results, the mismatch error, `previous` and `Final`, streaming, state and options.
//! Each test counts its tasks' runs in counters of its own.

use futures::StreamExt;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use weir::checkpoint::MemorySaver;
use weir::func::Final;
use weir::prelude::*;
use weir::{Event, StreamMode};

// ---- parallel calls --------------------------------------------------------------------------

static GATE: std::sync::OnceLock<Arc<tokio::sync::Barrier>> = std::sync::OnceLock::new();

/// Waits until all three calls of `fan_out` are running: only parallel calls get past it.
#[task]
async fn square_together(n: u64) -> u64 {
    GATE.get().unwrap().wait().await;
    // Later calls finish first: the results still come back in call order.
    tokio::task::yield_now().await;
    n * n
}

/// How many times each cached task below ran.
static EXPENSIVE: AtomicUsize = AtomicUsize::new(0);
static FLEETING: AtomicUsize = AtomicUsize::new(0);

#[task(cache)]
async fn expensive(n: u64) -> u64 {
    EXPENSIVE.fetch_add(1, Ordering::SeqCst);
    n * 10
}

#[task(cache(1ms))]
fn fleeting(n: u64) -> u64 {
    FLEETING.fetch_add(1, Ordering::SeqCst);
    n + 1
}

#[entrypoint]
async fn cached_calls(n: u64) -> Result<u64, BoxError> {
    Ok(expensive(n).await? + expensive(n).await? + fleeting(n).await?)
}

#[tokio::test]
async fn a_cached_task_runs_once_for_the_same_arguments_across_calls_runs_and_threads() {
    let runs = |counter: &AtomicUsize| counter.load(Ordering::SeqCst);
    let app = cached_calls()
        .with_checkpointer(MemorySaver::new())
        .with_cache(weir::cache::InMemoryCache::new())
        .compile()
        .unwrap();
    assert_eq!(app.invoke(2, &RunConfig::thread("c1")).await.unwrap(), 20 + 20 + 3);
    assert_eq!(
        runs(&EXPENSIVE),
        1,
        "the second call with the same argument took the kept result"
    );
    // Another thread, after the fleeting result's time to live: it runs again, the other not.
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    assert_eq!(app.invoke(2, &RunConfig::thread("c2")).await.unwrap(), 43);
    assert_eq!((runs(&EXPENSIVE), runs(&FLEETING)), (1, 2));
    // Other arguments: another result.
    assert_eq!(app.invoke(3, &RunConfig::thread("c3")).await.unwrap(), 30 + 30 + 4);
    assert_eq!(runs(&EXPENSIVE), 2);
    // Without a cache on the entrypoint, every call runs.
    let uncached = cached_calls().compile().unwrap();
    assert_eq!(uncached.invoke(2, &RunConfig::default()).await.unwrap(), 43);
    assert_eq!((runs(&EXPENSIVE), runs(&FLEETING)), (4, 4));
}

#[entrypoint]
async fn fan_out(n: u64) -> Result<Vec<u64>, BoxError> {
    let calls: Vec<_> = (1..=n).map(square_together).collect();
    let mut out = Vec::new();
    for c in calls {
        out.push(c.await?);
    }
    Ok(out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_made_before_awaiting_run_in_parallel_and_return_in_call_order() {
    GATE.set(Arc::new(tokio::sync::Barrier::new(3))).unwrap();
    let app = fan_out().compile().unwrap();
    // Three calls meet at a barrier of three: run one after the other they would never return.
    let out = tokio::time::timeout(std::time::Duration::from_secs(30), app.invoke(3, &RunConfig::default()))
        .await
        .expect("the three calls did not run at the same time")
        .unwrap();
    assert_eq!(out, [1, 4, 9]);
}

// ---- resume after an interrupt ---------------------------------------------------------------

static DRAFTS: AtomicUsize = AtomicUsize::new(0);
static POLISHES: AtomicUsize = AtomicUsize::new(0);

#[task]
fn draft_of(topic: String) -> String {
    DRAFTS.fetch_add(1, Ordering::SeqCst);
    format!("draft on {topic}")
}

#[task]
async fn polish(text: String, note: String) -> String {
    POLISHES.fetch_add(1, Ordering::SeqCst);
    format!("{text} ({note})")
}

#[entrypoint]
async fn review(topic: String, ctx: &Context) -> Result<String, BoxError> {
    let draft = draft_of(topic).await?;
    let note: String = ctx.interrupt(json!({ "review": draft }))?;
    Ok(polish(draft, note).await?)
}

#[tokio::test]
async fn a_resumed_entrypoint_reruns_from_the_top_and_finished_tasks_return_saved_results() {
    let app = review().with_checkpointer(MemorySaver::new()).compile().unwrap();
    let cfg = RunConfig::thread("review-1");
    let first = app.run("rust".into(), &cfg).await.unwrap();
    assert!(first.is_paused());
    assert_eq!(first.pauses()[0].question, Some(json!({ "review": "draft on rust" })));
    assert_eq!(DRAFTS.load(Ordering::SeqCst), 1);

    let done = app.resume_with("lgtm", &cfg).await.unwrap();
    assert_eq!(app.output(done.state()).unwrap(), "draft on rust (lgtm)");
    // The draft was saved: the re-run from the top did not write it again.
    assert_eq!(DRAFTS.load(Ordering::SeqCst), 1);
    assert_eq!(POLISHES.load(Ordering::SeqCst), 1);

    // The thread's state holds the return value, and its history the steps.
    let snapshot = app.graph().get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snapshot.values.output, json!("draft on rust (lgtm)"));
    assert_eq!(snapshot.values.input, json!("rust"));
}

// ---- an interrupt inside a task ----------------------------------------------------------------

static ASKS: AtomicUsize = AtomicUsize::new(0);
static BEFORE: AtomicUsize = AtomicUsize::new(0);

#[task]
fn count_before(n: u32) -> u32 {
    BEFORE.fetch_add(1, Ordering::SeqCst);
    n + 1
}

#[task]
async fn ask_human(question: String) -> Result<bool, BoxError> {
    ASKS.fetch_add(1, Ordering::SeqCst);
    weir::func::interrupt(question)
}

#[entrypoint]
async fn approve(n: u32) -> Result<String, BoxError> {
    let m = count_before(n).await?;
    let yes = ask_human(format!("approve {m}?")).await?;
    Ok(format!("{m}: {yes}"))
}

#[tokio::test]
async fn an_interrupt_in_a_task_pauses_the_run_and_the_task_gets_the_answer_on_resume() {
    let app = approve().with_checkpointer(MemorySaver::new()).compile().unwrap();
    let cfg = RunConfig::thread("approve-1");
    let first = app.run(1, &cfg).await.unwrap();
    assert_eq!(first.pauses()[0].question, Some(json!("approve 2?")));
    let done = app.resume_with(true, &cfg).await.unwrap();
    assert_eq!(app.output(done.state()).unwrap(), "2: true");
    assert_eq!(BEFORE.load(Ordering::SeqCst), 1);
    // The asking task ran twice: once to ask, once to get the answer (it has no result saved).
    assert_eq!(ASKS.load(Ordering::SeqCst), 2);
}

// ---- mismatch ---------------------------------------------------------------------------------

static GENERATION: AtomicUsize = AtomicUsize::new(0);

#[task]
fn add_one(n: usize) -> usize {
    n + 1
}

#[task]
fn sub_one(n: usize) -> usize {
    n - 1
}

/// Not deterministic on purpose: the argument, or the task, depends on a global read outside
/// any task.
#[entrypoint]
async fn drifting(swap_task: bool, ctx: &Context) -> Result<usize, BoxError> {
    let g = GENERATION.load(Ordering::SeqCst);
    let a = if swap_task && g > 0 {
        sub_one(10).await?
    } else {
        add_one(10 + g).await?
    };
    let _: bool = ctx.interrupt("go on?")?;
    Ok(a)
}

#[tokio::test]
async fn a_call_whose_arguments_or_task_differ_from_the_saved_call_is_an_error_naming_both() {
    let app = drifting().with_checkpointer(MemorySaver::new()).compile().unwrap();
    let (args, task) = (RunConfig::thread("drift-args"), RunConfig::thread("drift-task"));
    assert!(app.run(false, &args).await.unwrap().is_paused());
    assert!(app.run(true, &task).await.unwrap().is_paused());
    GENERATION.store(1, Ordering::SeqCst);

    let e = app.resume_with(true, &args).await.unwrap_err();
    let message = format!(
        "{e} {}",
        std::error::Error::source(&e)
            .map(ToString::to_string)
            .unwrap_or_default()
    );
    assert!(
        message.contains("task `add_one` at position 0 was called with other arguments"),
        "{message}"
    );

    let e = app.resume_with(true, &task).await.unwrap_err();
    let message = format!(
        "{e} {}",
        std::error::Error::source(&e)
            .map(ToString::to_string)
            .unwrap_or_default()
    );
    assert!(
        message.contains("task `sub_one` was called at position 0, where the saved run called task `add_one`"),
        "{message}"
    );
}

// ---- previous and Final ------------------------------------------------------------------------

#[entrypoint]
async fn running_total(add: u32, previous: Option<u32>) -> Final<String, u32> {
    let total = previous.unwrap_or(0) + add;
    Final {
        value: format!("{add} makes {total}"),
        save: total,
    }
}

#[entrypoint]
async fn remember(word: String, previous: Option<Vec<String>>) -> Vec<String> {
    let mut all = previous.unwrap_or_default();
    all.push(word);
    all
}

#[tokio::test]
async fn previous_is_the_last_call_s_return_value_or_final_save_on_the_same_thread() {
    let totals = running_total().with_checkpointer(MemorySaver::new()).compile().unwrap();
    let (t1, t2) = (RunConfig::thread("total-1"), RunConfig::thread("total-2"));
    assert_eq!(totals.invoke(2, &t1).await.unwrap(), "2 makes 2");
    assert_eq!(totals.invoke(5, &t1).await.unwrap(), "5 makes 7");
    // Another thread starts from nothing.
    assert_eq!(totals.invoke(1, &t2).await.unwrap(), "1 makes 1");
    let state = totals.graph().get_state(&t1).await.unwrap().unwrap().values;
    assert_eq!((state.output, state.previous), (json!("5 makes 7"), json!(7)));

    let words = remember().with_checkpointer(MemorySaver::new()).compile().unwrap();
    let cfg = RunConfig::thread("words");
    words.invoke("a".into(), &cfg).await.unwrap();
    assert_eq!(words.invoke("b".into(), &cfg).await.unwrap(), ["a", "b"]);
}

// ---- streaming -------------------------------------------------------------------------------

#[task]
async fn shout(word: String) -> Result<String, BoxError> {
    weir::func::context()?.emit(json!({ "shouting": word })).await;
    Ok(word.to_uppercase())
}

#[entrypoint]
async fn loud(words: Vec<String>) -> Result<Vec<String>, BoxError> {
    let calls: Vec<_> = words.into_iter().map(shout).collect();
    let mut out = Vec::new();
    for c in calls {
        out.push(c.await?);
    }
    Ok(out)
}

#[tokio::test]
async fn a_stream_reports_the_entrypoint_s_update_and_its_tasks_custom_events() {
    let app = loud().compile().unwrap();
    let words = vec!["a".to_owned(), "b".to_owned()];
    let mut stream = app
        .stream(words, &RunConfig::default(), StreamMode::UPDATES | StreamMode::CUSTOM)
        .unwrap();
    let (mut updates, mut custom) = (Vec::new(), Vec::new());
    while let Some(event) = stream.next().await {
        match event.unwrap() {
            Event::Update { node, update, .. } => {
                updates.push((node, update.output.iter().cloned().collect::<Vec<_>>()))
            }
            Event::Custom { value, .. } => custom.push(value),
            _ => {}
        }
    }
    assert_eq!(updates, [("loud".to_owned(), vec![json!(["A", "B"])])]);
    custom.sort_by_key(ToString::to_string);
    assert_eq!(custom, [json!({ "shouting": "a" }), json!({ "shouting": "b" })]);
}

// ---- options and errors ----------------------------------------------------------------------

static FLAKY: AtomicUsize = AtomicUsize::new(0);

#[task(retry(max_attempts = 3, initial_interval = 1ms, jitter = false))]
fn flaky(n: u32) -> Result<u32, BoxError> {
    if FLAKY.fetch_add(1, Ordering::SeqCst) < 2 {
        return Err("not yet".into());
    }
    Ok(n)
}

#[task(name = "sleepy", timeout(50ms))]
async fn sleeps_too_long() -> u32 {
    tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
    1
}

#[entrypoint]
async fn with_options(slow: bool) -> Result<u32, BoxError> {
    if slow {
        return Ok(sleeps_too_long().await?);
    }
    Ok(flaky(7).await?)
}

#[tokio::test(start_paused = true)]
async fn a_task_retries_as_its_policy_says_and_fails_past_its_timeout() {
    let app = with_options().compile().unwrap();
    assert_eq!(app.invoke(false, &RunConfig::default()).await.unwrap(), 7);
    assert_eq!(FLAKY.load(Ordering::SeqCst), 3);
    let e = app.invoke(true, &RunConfig::default()).await.unwrap_err();
    let message = format!(
        "{e} {}",
        std::error::Error::source(&e)
            .map(ToString::to_string)
            .unwrap_or_default()
    );
    assert!(message.contains("task `sleepy` timed out after 50ms"), "{message}");
}

#[tokio::test]
async fn a_task_called_outside_an_entrypoint_fails_naming_the_task() {
    let e = add_one(1).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "task `add_one` was called outside an entrypoint: call it from an `#[entrypoint]` function or another task"
    );
}

#[tokio::test]
async fn without_a_checkpointer_an_entrypoint_runs_its_tasks_and_returns() {
    let app = remember().compile().unwrap();
    assert_eq!(app.invoke("x".into(), &RunConfig::default()).await.unwrap(), ["x"]);
}

// ---- the run context and the store -----------------------------------------------------------

/// The run context of `signed`'s runs.
struct Signer {
    name: String,
}

#[task]
async fn sign(text: String) -> Result<String, BoxError> {
    let ctx = weir::func::context()?;
    let signer = ctx.context::<Signer>().ok_or("no signer")?;
    Ok(format!("{text} -- {}", signer.name))
}

#[entrypoint]
async fn signed(text: String, ctx: &Context) -> Result<String, BoxError> {
    let line = sign(text).await?;
    ctx.store()?.put(&["signed"], "last", json!({ "line": line })).await?;
    Ok(line)
}

#[tokio::test]
async fn an_entrypoint_and_its_tasks_read_the_typed_run_context_and_the_store() {
    let store: Arc<dyn weir::store::Store> = Arc::new(weir::store::InMemoryStore::new());
    let app = signed()
        .with_store(store.clone())
        .compile()
        .unwrap()
        .context::<Signer>();
    let config = RunConfig::default().context(Signer { name: "ada".into() });
    assert_eq!(app.invoke("hi".into(), &config).await.unwrap(), "hi -- ada");
    let saved = store.get(&["signed"], "last").await.unwrap().unwrap();
    assert_eq!(saved.value, json!({ "line": "hi -- ada" }));
}
