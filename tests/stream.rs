//! Streaming runs: typed events, their order, custom events, backpressure, and cancellation.

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use weir::checkpoint::MemorySaver;
use weir::prelude::*;
use weir::{Event, StreamMode};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct S {
    a: String,
    #[reducer(add)]
    n: i64,
    #[reducer(append)]
    log: Vec<String>,
}

/// G30/G31's graph: START -> x -> y; x writes `a` and `n`, y adds 10 to `n`.
fn two_nodes(saver: Option<MemorySaver>) -> CompiledGraph<S> {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("x", |_: &S| SUpdate::default().a("x".into()).n(1));
    g.add_node("y", |_: &S| SUpdate::default().n(10));
    g.add_edge(START, "x").add_edge("x", "y").add_edge("y", END);
    if let Some(s) = saver {
        g = g.with_checkpointer(s);
    }
    g.compile().unwrap()
}

fn describe(e: &Event<S>) -> String {
    match e {
        Event::Values { step, state } => format!("values {step} a={} n={}", state.a, state.n),
        Event::Update { step, node, update, .. } => format!("update {step} {node} {update:?}"),
        Event::TaskStart { step, node, .. } => format!("start {step} {node}"),
        Event::TaskEnd { step, node, error, .. } => format!("end {step} {node} {error:?}"),
        Event::Checkpoint { step, next, source, .. } => format!("checkpoint {step} {source:?} {next:?}"),
        Event::Custom { node, value, .. } => format!("custom {node} {value}"),
        Event::Message { chunk, meta } => format!("message {} {chunk}", meta.node),
        Event::Tool { event, meta } => format!("tool {} {event}", meta.node),
        Event::Paused(p) => format!("paused {}", p.len()),
        Event::Subgraph { ns, event, .. } => format!("subgraph {ns:?} {event:?}"),
    }
}

// G31: the order of the events of every mode on the two-node graph.
#[tokio::test]
async fn g31_stream_modes_come_in_langgraph_order() {
    let app = two_nodes(Some(MemorySaver::new()));
    let modes = StreamMode::VALUES | StreamMode::UPDATES | StreamMode::TASKS | StreamMode::CHECKPOINTS;
    let events: Vec<String> = app
        .stream(SUpdate::default().a("in".into()), &RunConfig::thread("t"), modes)
        .map(|e| describe(&e.unwrap()))
        .collect()
        .await;
    assert_eq!(
        events,
        [
            "checkpoint -1 Input [\"__start__\"]",
            "values 0 a=in n=0",
            "checkpoint 0 Loop [\"x\"]",
            "start 1 x",
            "update 1 x SUpdate { a: One(\"x\"), n: One(Reduce(1)) }",
            "end 1 x None",
            "values 1 a=x n=1",
            "checkpoint 1 Loop [\"y\"]",
            "start 2 y",
            "update 2 y SUpdate { n: One(Reduce(10)) }",
            "end 2 y None",
            "values 2 a=x n=11",
            "checkpoint 2 Loop []",
        ]
    );
}

#[tokio::test]
async fn a_fan_out_step_streams_each_nodes_update_exactly_once() {
    let mut g = GraphBuilder::<S>::new();
    for name in ["b", "c", "d"] {
        g.add_node(name, move |_: &S| async move {
            tokio::time::sleep(Duration::from_millis(if name == "b" { 5 } else { 0 })).await;
            SUpdate::default().log(vec![name.into()])
        });
        g.add_edge(START, name);
    }
    let app = g.compile().unwrap();
    let updates: Vec<String> = app
        .stream(S::default(), &RunConfig::default(), StreamMode::UPDATES)
        .filter_map(|e| async move {
            match e.unwrap() {
                Event::Update { node, .. } => Some(node),
                _ => None,
            }
        })
        .collect()
        .await;
    assert_eq!(updates, ["b", "c", "d"], "one update per node, in task order");
}

/// A task's end reports how long the task ran, whether it ran alone in its step or beside others.
#[tokio::test]
async fn task_ends_report_how_long_each_task_ran() {
    let mut g = GraphBuilder::<S>::new();
    for (name, ms) in [("alone", 20), ("b", 20), ("c", 0)] {
        g.add_node(name, move |_: &S| async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            SUpdate::default().log(vec![name.into()])
        });
    }
    g.add_edge(START, "alone").add_edge("alone", "b").add_edge("alone", "c");
    let app = g.compile().unwrap();
    let ends: Vec<(String, Duration)> = app
        .stream(S::default(), &RunConfig::default(), StreamMode::TASKS)
        .filter_map(|e| async move {
            match e.unwrap() {
                Event::TaskEnd { node, duration, .. } => Some((node, duration)),
                _ => None,
            }
        })
        .collect()
        .await;
    let took = |name: &str| ends.iter().find(|(n, _)| n == name).map(|(_, d)| *d);
    for name in ["alone", "b"] {
        assert!(took(name) >= Some(Duration::from_millis(20)), "{name}: {ends:?}");
    }
    assert!(took("c").is_some(), "{ends:?}");
}

// G32: a node's custom events arrive before its update.
#[tokio::test]
async fn g32_custom_events_come_before_the_nodes_update() {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("n", |_: &S, ctx: &Context| {
        let ctx = ctx.clone();
        async move {
            ctx.emit(serde_json::json!({"progress": 1})).await;
            ctx.emit("two").await;
            SUpdate::default().a("done".into())
        }
    });
    g.add_edge(START, "n");
    let app = g.compile().unwrap();
    let events: Vec<String> = app
        .stream(
            S::default(),
            &RunConfig::default(),
            StreamMode::CUSTOM | StreamMode::UPDATES,
        )
        .map(|e| describe(&e.unwrap()))
        .collect()
        .await;
    assert_eq!(
        events,
        [
            "custom n {\"progress\":1}",
            "custom n \"two\"",
            "update 1 n SUpdate { a: One(\"done\") }"
        ]
    );
}

fn counting_loop(steps: Arc<AtomicUsize>, saver: Option<MemorySaver>, until: i64) -> CompiledGraph<S> {
    let mut g = GraphBuilder::<S>::new();
    let tick = g
        .add_node("tick", move |_: &S| {
            steps.fetch_add(1, Ordering::SeqCst);
            SUpdate::default().n(1)
        })
        .id();
    g.add_edge(START, tick);
    g.add_router(
        tick,
        move |s: &S| if s.n < until { Goto::Node(tick) } else { Goto::End },
        [tick.into(), END],
    );
    if let Some(s) = saver {
        g = g.with_checkpointer(s);
    }
    g.compile().unwrap()
}

#[tokio::test]
async fn a_slow_consumer_holds_the_run_back() {
    let steps = Arc::new(AtomicUsize::new(0));
    let app = counting_loop(steps.clone(), None, 10_000);
    let cfg = RunConfig::default().recursion_limit(100_000);
    let mut stream = app.stream(S::default(), &cfg, StreamMode::VALUES);
    let first = stream.next().await.unwrap().unwrap();
    assert!(matches!(first, Event::Values { step: 0, .. }));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let ran = steps.load(Ordering::SeqCst);
    assert!(
        ran < 200,
        "the run got {ran} steps ahead of a consumer that read one event"
    );
    let rest = stream.count().await;
    assert_eq!(rest, 10_000, "every step's values, once the consumer reads on");
}

#[tokio::test]
async fn a_dropped_stream_stops_the_run_and_its_checkpoint_resumes_it() {
    let steps = Arc::new(AtomicUsize::new(0));
    let saver = MemorySaver::new();
    let app = counting_loop(steps.clone(), Some(saver.clone()), 1_000);
    let cfg = RunConfig::thread("cancel").recursion_limit(10_000);
    let mut stream = app.stream(S::default(), &cfg, StreamMode::VALUES);
    for _ in 0..5 {
        stream.next().await.unwrap().unwrap();
    }
    drop(stream);
    // The run stops at the next step boundary.
    let mut last = usize::MAX;
    while steps.load(Ordering::SeqCst) != last {
        last = steps.load(Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(last < 200, "the run stopped early, not after {last} steps");
    let snapshot = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(
        snapshot.next,
        ["tick"],
        "the last checkpoint is intact and knows what runs next"
    );
    let out = app.resume(&cfg).await.unwrap();
    assert_eq!(out.state().n, 1_000);
    assert_eq!(steps.load(Ordering::SeqCst), 1_000, "no step ran twice");
}

#[tokio::test]
async fn a_failing_run_ends_its_stream_with_the_error() {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("bad", |_: &S| -> Result<SUpdate, std::io::Error> {
        Err(std::io::Error::other("nope"))
    });
    g.add_edge(START, "bad");
    let app = g.compile().unwrap();
    let items: Vec<Result<Event<S>, Error>> = app
        .stream(S::default(), &RunConfig::default(), StreamMode::TASKS)
        .collect()
        .await;
    let last = items.last().unwrap().as_ref().unwrap_err();
    assert_eq!(last.to_string(), "node `bad` failed at step 1: nope");
    assert_eq!(
        describe(items[1].as_ref().unwrap()),
        "end 1 bad Some(\"node `bad` failed at step 1: nope\")"
    );
}
