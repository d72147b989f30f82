//! What a stream reports of the tasks of a step that pauses, of the resume that replays the
//! finished tasks' saved writes (cached, first), and of a failed node and its error handler.

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use weir::cache::InMemoryCache;
use weir::checkpoint::MemorySaver;
use weir::prelude::*;
use weir::{CachePolicy, Event, NodeError, StreamMode};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct S {
    #[reducer(append)]
    log: Vec<String>,
}

fn describe(e: &Event<S>) -> String {
    match e {
        Event::Values { step, state } => format!("values {step} {:?}", state.log),
        Event::Update {
            step,
            node,
            update,
            cached,
            ..
        } => format!("update {step} {node} {:?} cached={cached}", update.log),
        Event::TaskStart { step, id, node, .. } => format!("start {step} {node} {id}"),
        Event::TaskEnd {
            step, id, node, error, ..
        } => format!("end {step} {node} {id} {error:?}"),
        Event::Paused(p) => format!("paused {}", p[0].node),
        other => format!("{other:?}"),
    }
}

async fn collect(stream: weir::RunStream<S>) -> Vec<String> {
    stream.map(|e| describe(&e.unwrap())).collect().await
}

/// G36's graph: START -> [ask, sib] -> after; `ask` asks a question, `sib` finishes beside it.
fn ask_and_sibling() -> CompiledGraph<S> {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("ask", |_: &S, ctx: &Context| -> Result<SUpdate, BoxError> {
        let answer: String = ctx.interrupt("ok?")?;
        Ok(SUpdate::default().log(vec![format!("ask:{answer}")]))
    });
    g.add_node("sib", |_: &S| SUpdate::default().log(vec!["sib".into()]));
    g.add_node("after", |_: &S| SUpdate::default().log(vec!["after".into()]));
    g.add_edge(START, "ask").add_edge(START, "sib");
    g.add_join(["ask", "sib"], "after");
    g.with_checkpointer(MemorySaver::new()).compile().unwrap()
}

// G36: the step that pauses streams the state with its finished sibling's writes applied before
// the pause; the resume replays the sibling's saved update first, marked cached, with no task
// start or end of its own, then the resumed task's; the reducer order stays task order.
#[tokio::test]
async fn g36_a_pausing_step_streams_its_siblings_writes_and_the_resume_replays_them_cached_first() {
    let app = ask_and_sibling();
    let cfg = RunConfig::thread("g36");
    let modes = StreamMode::VALUES | StreamMode::UPDATES | StreamMode::TASKS;
    let first = collect(app.stream(SUpdate::default(), &cfg, modes)).await;
    assert_eq!(
        first,
        [
            "values 0 []",
            "start 1 ask pull:ask",
            "start 1 sib pull:sib",
            "update 1 sib One(Reduce([\"sib\"])) cached=false",
            "end 1 sib pull:sib None",
            "values 1 [\"sib\"]",
            "paused ask",
        ]
    );
    let resumed = collect(app.stream_resume(Some("yes"), &cfg, modes).unwrap()).await;
    assert_eq!(
        resumed,
        [
            "values 0 []",
            "start 1 ask pull:ask",
            "update 1 sib One(Reduce([\"sib\"])) cached=true",
            "update 1 ask One(Reduce([\"ask:yes\"])) cached=false",
            "end 1 ask pull:ask None",
            "values 1 [\"ask:yes\", \"sib\"]",
            "start 2 after pull:after",
            "update 2 after One(Reduce([\"after\"])) cached=false",
            "end 2 after pull:after None",
            "values 2 [\"ask:yes\", \"sib\", \"after\"]",
        ]
    );
}

// A task whose writes come from the node cache is reported as LangGraph reports it: it starts,
// its update is marked cached, and it has no end (it did not run).
#[tokio::test]
async fn an_update_taken_from_the_node_cache_is_marked_cached() {
    let mut g = GraphBuilder::<S>::new();
    let slow = g.add_node("slow", |_: &S| SUpdate::default().log(vec!["computed".into()]));
    g.cache(&slow, CachePolicy::new(|_: &S| "one key".to_owned()));
    g.add_edge(START, &slow);
    let app = g.with_cache(InMemoryCache::new()).compile().unwrap();
    let modes = StreamMode::UPDATES | StreamMode::TASKS;
    let first = collect(app.stream(S::default(), &RunConfig::default(), modes)).await;
    assert_eq!(
        first,
        [
            "start 1 slow pull:slow",
            "update 1 slow One(Reduce([\"computed\"])) cached=false",
            "end 1 slow pull:slow None",
        ]
    );
    let again = collect(app.stream(S::default(), &RunConfig::default(), modes)).await;
    assert_eq!(
        again,
        [
            "start 1 slow pull:slow",
            "update 1 slow One(Reduce([\"computed\"])) cached=true",
        ]
    );
}

/// START -> fetch (fails) -> summarize; fetch's error handler writes the error and goes to
/// `fallback` instead.
fn failing_with_handler() -> CompiledGraph<S> {
    let mut g = GraphBuilder::<S>::new();
    let fetch = g.add_node("fetch", |_: &S| -> Result<SUpdate, std::io::Error> {
        Err(std::io::Error::other("upstream down"))
    });
    let fallback = g.add_node("fallback", |_: &S| SUpdate::default().log(vec!["fallback".into()]));
    let summarize = g.add_node("summarize", |_: &S| SUpdate::default().log(vec!["summary".into()]));
    let fb = fallback.id();
    g.on_error(&fetch, move |_: &S, e: &NodeError| {
        Command::new()
            .update(SUpdate::default().log(vec![format!("handled {}", e.node)]))
            .goto(fb)
    });
    g.add_edge(START, &fetch)
        .add_edge(&fetch, &summarize)
        .declare_destinations(&fetch, [&fallback]);
    g.compile().unwrap()
}

// The failed task ends with its error; the handler follows as a task of its own, under
// LangGraph's name for it, with no start event (LangGraph's G35).
#[tokio::test]
async fn a_failed_task_ends_with_its_error_and_its_handler_is_reported_as_its_own_task() {
    let app = failing_with_handler();
    let modes = StreamMode::UPDATES | StreamMode::TASKS;
    let events = collect(app.stream(S::default(), &RunConfig::default(), modes)).await;
    assert_eq!(
        events,
        [
            "start 1 fetch pull:fetch",
            "end 1 fetch pull:fetch Some(\"node `fetch` failed at step 1: upstream down\")",
            "update 1 __error_handler__fetch One(Reduce([\"handled fetch\"])) cached=false",
            "end 1 __error_handler__fetch pull:fetch:error_handler None",
            "start 2 fallback pull:fallback",
            "update 2 fallback One(Reduce([\"fallback\"])) cached=false",
            "end 2 fallback pull:fallback None",
        ]
    );
}

/// START -> [ask, sib]: each writes its idempotency key; `ask` pauses first.
fn keyed_ask_and_sibling() -> CompiledGraph<S> {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("ask", |_: &S, ctx: &Context| -> Result<SUpdate, BoxError> {
        let key = ctx.idempotency_key().unwrap();
        let answer: String = ctx.interrupt("ok?")?;
        Ok(SUpdate::default().log(vec![format!("ask:{answer}:{key}")]))
    });
    g.add_node("sib", |_: &S, ctx: &Context| {
        SUpdate::default().log(vec![format!("sib:{}", ctx.idempotency_key().unwrap())])
    });
    g.add_edge(START, "ask").add_edge(START, "sib");
    g.with_checkpointer(MemorySaver::new()).compile().unwrap()
}

/// The keys of the stream's task starts, task ends and checkpoints, in order, as
/// `start <node> <key>`, `end <node> <key>`, `checkpoint <next:key,…>`.
async fn keys(stream: weir::RunStream<S>) -> Vec<String> {
    let events: Vec<Event<S>> = stream.map(Result::unwrap).collect().await;
    events
        .into_iter()
        .filter_map(|e| match e {
            Event::TaskStart { node, key, .. } => Some(format!("start {node} {key}")),
            Event::TaskEnd { node, key, .. } => Some(format!("end {node} {key}")),
            Event::Checkpoint { next, keys, .. } => Some(format!(
                "checkpoint {}",
                next.iter()
                    .zip(&keys)
                    .map(|(n, k)| format!("{n}:{k}"))
                    .collect::<Vec<_>>()
                    .join(",")
            )),
            _ => None,
        })
        .collect()
}

fn is_uuid(key: &str) -> bool {
    let lens: Vec<usize> = key.split('-').map(str::len).collect();
    lens == [8, 4, 4, 4, 12] && key.chars().all(|c| c == '-' || c.is_ascii_hexdigit())
}

// A task's key (LangGraph's task id) is its idempotency key: its start, its end, the checkpoint
// its step starts from and the thread's state all show the same one; two tasks of a step differ;
// the resumed task keeps it.
#[tokio::test]
async fn a_tasks_key_is_its_idempotency_key_everywhere_and_survives_the_resume() {
    let app = keyed_ask_and_sibling();
    let cfg = RunConfig::thread("keys");
    let modes = StreamMode::TASKS | StreamMode::CHECKPOINTS;
    let first = keys(app.stream(SUpdate::default(), &cfg, modes)).await;
    let state = app.get_state(&cfg).await.unwrap().unwrap();
    let key_of = |node: &str| state.tasks.iter().find(|t| t.name == node).unwrap().key.clone();
    let (ask, sib) = (key_of("ask"), key_of("sib"));
    assert!(is_uuid(&ask) && is_uuid(&sib), "{ask} {sib}");
    assert_ne!(ask, sib);
    assert_eq!(
        first[1..],
        [
            format!("checkpoint ask:{ask},sib:{sib}"),
            format!("start ask {ask}"),
            format!("start sib {sib}"),
            format!("end sib {sib}"),
        ]
    );
    assert!(first[0].starts_with("checkpoint __start__:"), "{first:?}");
    assert_eq!(state.values.log, [format!("sib:{sib}")]);

    let resumed = keys(app.stream_resume(Some("yes"), &cfg, modes).unwrap()).await;
    let tasks: Vec<&String> = resumed.iter().filter(|e| !e.starts_with("checkpoint")).collect();
    assert_eq!(tasks, [&format!("start ask {ask}"), &format!("end ask {ask}")]);
    let done = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(done.values.log, [format!("ask:yes:{ask}"), format!("sib:{sib}")]);
}

/// plan -> worker × 2 (`Send`s of 0 and 1), each writing `<n>:<its idempotency key>`.
fn two_sends() -> CompiledGraph<S> {
    let mut g = GraphBuilder::<S>::new();
    let worker = g.add_send_node("worker", |n: &u32, ctx: &Context| {
        SUpdate::default().log(vec![format!("{n}:{}", ctx.idempotency_key().unwrap())])
    });
    g.add_node("plan", |_: &S| SUpdate::default());
    g.add_edge(START, "plan");
    let w = worker.clone();
    g.add_router(
        "plan",
        move |_: &S| (0..2).map(|i| w.send(i)).collect::<Vec<_>>(),
        [&worker],
    );
    g.with_checkpointer(MemorySaver::new()).compile().unwrap()
}

// `Send`s' push tasks have keys too: one per packet, each its task's idempotency key, the same
// at its start, its end and in the checkpoint before its step.
#[tokio::test]
async fn each_sends_push_task_has_its_own_key_in_its_events() {
    let app = two_sends();
    let cfg = RunConfig::thread("sends");
    let got = keys(app.stream(SUpdate::default(), &cfg, StreamMode::TASKS | StreamMode::CHECKPOINTS)).await;
    let out = app.get_state(&cfg).await.unwrap().unwrap().values.log;
    let written: Vec<&str> = out.iter().map(|l| l.split_once(':').unwrap().1).collect();
    let (k0, k1) = (written[0], written[1]);
    assert!(is_uuid(k0) && is_uuid(k1) && k0 != k1, "{out:?}");
    let step: Vec<&String> = got
        .iter()
        .skip_while(|e| !e.contains(&format!("worker:{k0}")))
        .take(5)
        .collect();
    assert_eq!(
        step,
        [
            &format!("checkpoint worker:{k0},worker:{k1}"),
            &format!("start worker {k0}"),
            &format!("start worker {k1}"),
            &format!("end worker {k0}"),
            &format!("end worker {k1}"),
        ]
    );
}

// An update carries its task's key when the stream reports tasks: the two `Send`s to one node
// are told apart by it (each worker wrote its own key into its update).
#[tokio::test]
async fn an_update_carries_its_tasks_key() {
    let app = two_sends();
    let cfg = RunConfig::thread("sends-updates");
    let events: Vec<Event<S>> = app
        .stream(SUpdate::default(), &cfg, StreamMode::TASKS | StreamMode::UPDATES)
        .map(Result::unwrap)
        .collect()
        .await;
    let mut workers = 0;
    for e in &events {
        if let Event::Update { node, key, update, .. } = e {
            if node != "worker" {
                continue;
            }
            workers += 1;
            let json = weir::writes_json(S::FIELDS, update);
            let written = json["log"][0].as_str().unwrap().split_once(':').unwrap().1.to_owned();
            assert_eq!(key.as_deref(), Some(written.as_str()), "{events:?}");
        }
    }
    assert_eq!(workers, 2, "{events:?}");
    // Without task events, no key is made for an update.
    let cfg = RunConfig::thread("sends-plain");
    let events: Vec<Event<S>> = app
        .stream(SUpdate::default(), &cfg, StreamMode::UPDATES)
        .map(Result::unwrap)
        .collect()
        .await;
    assert!(
        events.iter().all(|e| matches!(e, Event::Update { key: None, .. })),
        "{events:?}"
    );
}
