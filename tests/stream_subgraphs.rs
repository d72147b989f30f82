//! A subgraph's events in its caller's stream (LangGraph's `subgraphs=True`): every mode, under
//! the namespace of the task that runs it, nested for deeper levels, in order, through the
//! caller's bounded stream.

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use weir::checkpoint::MemorySaver;
use weir::prelude::*;
use weir::{Event, StreamMode, SubgraphEvent};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct S {
    topic: String,
    #[reducer(append)]
    log: Vec<String>,
}

fn describe(e: &Event<S>) -> String {
    match e {
        Event::Values { step, state } => format!("values {step} {:?}", state.log),
        Event::Update { step, node, update, .. } => format!("update {step} {node} {:?}", update.log),
        Event::TaskStart { step, node, .. } => format!("start {step} {node}"),
        Event::TaskEnd { step, node, .. } => format!("end {step} {node}"),
        Event::Checkpoint { step, next, .. } => format!("checkpoint {step} {next:?}"),
        Event::Custom { node, value, .. } => format!("custom {node} {value}"),
        Event::Message { chunk, meta } => format!("message {} {chunk}", meta.node),
        Event::Tool { event, meta } => format!("tool {} {event}", meta.node),
        Event::Paused(p) => format!("paused {} {:?}", p[0].node, p[0].question),
        Event::Subgraph { ns, event, .. } => format!("{} | {}", ns.join("|"), sub(event)),
    }
}

fn sub(e: &SubgraphEvent) -> String {
    match e {
        SubgraphEvent::Values { step, state } => format!("values {step} {}", sorted(state)),
        SubgraphEvent::Update {
            step,
            node,
            update,
            cached,
            ..
        } => format!("update {step} {node} {update} cached={cached}"),
        SubgraphEvent::TaskStart { step, id, node, .. } => format!("start {step} {node} {id}"),
        SubgraphEvent::TaskEnd { step, node, error, .. } => format!("end {step} {node} {error:?}"),
        SubgraphEvent::Checkpoint { step, next, .. } => format!("checkpoint {step} {next:?}"),
        SubgraphEvent::Custom { step, node, value } => format!("custom {step} {node} {value}"),
        SubgraphEvent::Message { chunk, meta } => format!("message {} {chunk}", meta.node),
        SubgraphEvent::Tool { event, meta } => format!("tool {} {event}", meta.node),
    }
}

/// The capture's inner graph: START -> a -> b; `a` logs the topic, `b` reports progress.
fn inner() -> CompiledGraph<S> {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("a", |s: &S| SUpdate::default().log(vec![format!("a:{}", s.topic)]));
    g.add_node("b", |_: &S, ctx: &Context| {
        let ctx = ctx.clone();
        async move {
            ctx.emit(serde_json::json!({"progress": "b"})).await;
            SUpdate::default().log(vec!["b".into()])
        }
    });
    g.add_edge(START, "a").add_edge("a", "b");
    g.compile().unwrap()
}

/// `sub` as node `name`, taking the topic and giving back its log.
fn add_sub(g: &mut GraphBuilder<S>, name: &str, sub: CompiledGraph<S>) {
    g.add_subgraph(
        name,
        sub,
        |s: &S| SUpdate::default().topic(s.topic.clone()),
        |t: &S| SUpdate::default().log(t.log.clone()),
    );
}

fn parent(sub: CompiledGraph<S>) -> CompiledGraph<S> {
    let mut g = GraphBuilder::<S>::new();
    add_sub(&mut g, "inner", sub);
    g.add_edge(START, "inner");
    g.compile().unwrap()
}

async fn events(app: &CompiledGraph<S>, cfg: &RunConfig, modes: StreamMode) -> Vec<String> {
    app.stream(SUpdate::default().topic("t".into()), cfg, modes)
        .map(|e| describe(&e.unwrap()))
        .collect()
        .await
}

// Every mode of the subgraph arrives, under the task's namespace, as it happens: before the
// update of the task that runs it.
#[tokio::test]
async fn a_subgraphs_events_of_every_mode_come_under_its_tasks_namespace() {
    let app = parent(inner());
    let modes = StreamMode::VALUES | StreamMode::UPDATES | StreamMode::TASKS | StreamMode::CUSTOM;
    let got = events(&app, &RunConfig::default().subgraphs(true), modes).await;
    let ns = "inner:pull:inner:1";
    assert_eq!(
        got,
        [
            "values 0 []".to_owned(),
            "start 1 inner".into(),
            format!("{ns} | values 0 {{\"log\":[],\"topic\":\"t\"}}"),
            format!("{ns} | start 1 a pull:a"),
            format!("{ns} | update 1 a {{\"log\":[\"a:t\"]}} cached=false"),
            format!("{ns} | end 1 a None"),
            format!("{ns} | values 1 {{\"log\":[\"a:t\"],\"topic\":\"t\"}}"),
            format!("{ns} | start 2 b pull:b"),
            format!("{ns} | custom 2 b {{\"progress\":\"b\"}}"),
            format!("{ns} | update 2 b {{\"log\":[\"b\"]}} cached=false"),
            format!("{ns} | end 2 b None"),
            format!("{ns} | values 2 {{\"log\":[\"a:t\",\"b\"],\"topic\":\"t\"}}"),
            "update 1 inner One(Reduce([\"a:t\", \"b\"]))".into(),
            "end 1 inner".into(),
            "values 1 [\"a:t\", \"b\"]".into(),
        ]
    );
    // Without the option, the same run streams its own events only.
    let own = events(&app, &RunConfig::default(), modes).await;
    assert_eq!(
        own,
        [
            "values 0 []",
            "start 1 inner",
            "update 1 inner One(Reduce([\"a:t\", \"b\"]))",
            "end 1 inner",
            "values 1 [\"a:t\", \"b\"]",
        ]
    );
}

// A subgraph of a subgraph: its namespace has one segment per level, outermost first.
#[tokio::test]
async fn a_nested_subgraphs_namespace_has_one_segment_per_level() {
    let mut mid = GraphBuilder::<S>::new();
    add_sub(&mut mid, "deep", inner());
    mid.add_edge(START, "deep");
    let app = parent(mid.compile().unwrap());
    let got = events(&app, &RunConfig::default().subgraphs(true), StreamMode::UPDATES).await;
    assert_eq!(
        got,
        [
            "inner:pull:inner:1|deep:pull:deep:1 | update 1 a {\"log\":[\"a:t\"]} cached=false",
            "inner:pull:inner:1|deep:pull:deep:1 | update 2 b {\"log\":[\"b\"]} cached=false",
            "inner:pull:inner:1 | update 1 deep {\"log\":[\"a:t\",\"b\"]} cached=false",
            "update 1 inner One(Reduce([\"a:t\", \"b\"]))",
        ]
    );
}

/// The capture `raw_subgraphs_interrupt.sse`: the parent runs `inner`, then `ask` asks a question.
fn parent_with_question() -> CompiledGraph<S> {
    let mut g = GraphBuilder::<S>::new();
    add_sub(&mut g, "inner", inner());
    g.add_node("ask", |_: &S, ctx: &Context| -> Result<SUpdate, BoxError> {
        let answer: String = ctx.interrupt("ok?")?;
        Ok(SUpdate::default().log(vec![answer]))
    });
    g.add_edge(START, "inner").add_edge("inner", "ask");
    g.with_checkpointer(MemorySaver::new()).compile().unwrap()
}

// A checkpointed parent: the subgraph's checkpoints (under its own namespace) stream too, and the
// subgraph's values and updates come in the capture's order before the parent's pause.
#[tokio::test]
async fn a_checkpointed_subgraph_streams_its_checkpoints_and_values_in_the_captures_order() {
    let app = parent_with_question();
    let cfg = RunConfig::thread("sub").subgraphs(true);
    let got = events(&app, &cfg, StreamMode::VALUES | StreamMode::CHECKPOINTS).await;
    let ns = "inner:pull:inner:1";
    assert_eq!(
        got,
        [
            "checkpoint -1 [\"__start__\"]".to_owned(),
            "values 0 []".into(),
            "checkpoint 0 [\"inner\"]".into(),
            format!("{ns} | checkpoint -1 [\"__start__\"]"),
            format!("{ns} | values 0 {{\"log\":[],\"topic\":\"t\"}}"),
            format!("{ns} | checkpoint 0 [\"a\"]"),
            format!("{ns} | values 1 {{\"log\":[\"a:t\"],\"topic\":\"t\"}}"),
            format!("{ns} | checkpoint 1 [\"b\"]"),
            format!("{ns} | values 2 {{\"log\":[\"a:t\",\"b\"],\"topic\":\"t\"}}"),
            format!("{ns} | checkpoint 2 []"),
            "values 1 [\"a:t\", \"b\"]".into(),
            "checkpoint 1 [\"ask\"]".into(),
            "paused ask Some(String(\"ok?\"))".into(),
        ]
    );
}

// The subgraph's events go through the caller's bounded stream: a consumer that stops reading
// holds the subgraph's node back.
#[tokio::test]
async fn a_slow_consumer_holds_a_subgraph_back() {
    let emitted = Arc::new(AtomicUsize::new(0));
    let mut g = GraphBuilder::<S>::new();
    let counted = emitted.clone();
    g.add_node("chatty", move |_: &S, ctx: &Context| {
        let (ctx, counted) = (ctx.clone(), counted.clone());
        async move {
            for i in 0..1_000 {
                ctx.emit(i).await;
                counted.fetch_add(1, Ordering::SeqCst);
            }
            SUpdate::default()
        }
    });
    g.add_edge(START, "chatty");
    let app = parent(g.compile().unwrap());
    let cfg = RunConfig::default().subgraphs(true);
    let mut stream = app.stream(S::default(), &cfg, StreamMode::CUSTOM);
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!(describe(&first), "inner:pull:inner:1 | custom 1 chatty 0");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let ran = emitted.load(Ordering::SeqCst);
    assert!(
        ran < 200,
        "the subgraph got {ran} events ahead of a consumer that read one"
    );
    let rest = stream.count().await;
    assert_eq!(rest, 999, "every other event, once the consumer reads on");
    assert_eq!(emitted.load(Ordering::SeqCst), 1_000);
}

// `writes_json`: the fields an update writes, each as its value, a field written twice as the
// list of its writes; a reducer's write is its value; the whole state writes every field.
#[test]
fn writes_json_gives_each_written_field_its_value() {
    let twice = SUpdate::default()
        .log(vec!["a".into()])
        .log(vec!["b".into()])
        .topic("t".into());
    assert_eq!(
        weir::writes_json(S::FIELDS, &twice),
        serde_json::json!({"log": [["a"], ["b"]], "topic": "t"})
    );
    assert_eq!(weir::writes_json(S::FIELDS, &SUpdate::default()), serde_json::json!({}));
    let state = S {
        topic: "t".into(),
        log: vec!["x".into()],
    };
    assert_eq!(
        weir::writes_json(S::FIELDS, &state.into_update()),
        serde_json::json!({"log": ["x"], "topic": "t"})
    );
}

/// `value` as JSON text with its top-level keys sorted, whether or not serde_json keeps insertion
/// order (its `preserve_order` feature is on when the workspace is built together).
fn sorted(value: &serde_json::Value) -> String {
    match value.as_object() {
        Some(map) => serde_json::to_string(&map.iter().collect::<std::collections::BTreeMap<_, _>>()).unwrap(),
        None => value.to_string(),
    }
}
