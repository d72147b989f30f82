//! The `messages` stream mode: the chunks a node emits with `Context::emit_message` arrive as
//! `Event::Message`, in order, with the metadata of the task that emitted them (LangGraph's
//! `langgraph_node`, `_step`, `_triggers`, `_path`, `_checkpoint_ns`, `thread_id`), from
//! subgraphs under their namespace, only when the mode is asked for, through the bounded stream.

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use weir::checkpoint::MemorySaver;
use weir::prelude::*;
use weir::{Event, MessageMeta, NodeHandle, StreamMode, SubgraphEvent};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct S {
    #[reducer(append)]
    log: Vec<String>,
}

/// A node that emits the chunks `"t0"`, `"t1"`, … (`n` of them), and logs whether its context
/// streamed messages.
fn chatty(g: &mut GraphBuilder<S>, name: &str, n: usize) -> NodeHandle<S> {
    g.add_node(name, move |_: &S, ctx: &Context| {
        let ctx = ctx.clone();
        async move {
            for i in 0..n {
                ctx.emit_message(json!({"type": "AIMessageChunk", "content": format!("t{i}")}))
                    .await;
            }
            SUpdate::default().log(vec![format!("streams_messages={}", ctx.streams_messages())])
        }
    })
}

fn one_node(checkpointer: bool) -> CompiledGraph<S> {
    let mut g = GraphBuilder::<S>::new();
    chatty(&mut g, "chat", 3);
    g.add_edge(START, "chat").add_edge("chat", END);
    if checkpointer {
        g.set_checkpointer(Arc::new(MemorySaver::new()));
    }
    g.compile().unwrap()
}

fn describe(e: &Event<S>) -> String {
    match e {
        Event::Message { chunk, meta } => format!("message {} {}", meta.node, chunk["content"]),
        Event::Update { node, update, .. } => format!("update {node} {}", weir::writes_json(S::FIELDS, update)),
        Event::Values { state, .. } => format!("values {:?}", state.log),
        Event::Subgraph { ns, event, .. } => match event {
            SubgraphEvent::Message { chunk, meta } => {
                format!(
                    "{} | message {} {} ns={}",
                    ns.join("|"),
                    meta.node,
                    chunk["content"],
                    meta.checkpoint_ns()
                )
            }
            other => format!("{} | {other:?}", ns.join("|")),
        },
        other => format!("{other:?}"),
    }
}

async fn events(app: &CompiledGraph<S>, cfg: &RunConfig, modes: StreamMode) -> Vec<Event<S>> {
    app.stream(S::default(), cfg, modes).map(Result::unwrap).collect().await
}

// The chunks come in the order emitted, while the node runs: before its update.
#[tokio::test]
async fn chunks_come_in_order_before_the_nodes_update() {
    let app = one_node(false);
    let got = events(&app, &RunConfig::default(), StreamMode::MESSAGES | StreamMode::UPDATES).await;
    let got: Vec<String> = got.iter().map(describe).collect();
    assert_eq!(
        got,
        [
            "message chat \"t0\"",
            "message chat \"t1\"",
            "message chat \"t2\"",
            r#"update chat {"log":["streams_messages=true"]}"#,
        ]
    );
}

// Each chunk carries LangGraph's metadata of its task: node, step, triggers, path, checkpoint
// namespace (`<node>:<task id>:<step>`) with its task's key (the key its task events show) and
// the run's thread; one metadata, shared.
#[tokio::test]
async fn a_chunk_carries_its_tasks_metadata() {
    let app = one_node(true);
    let got = events(
        &app,
        &RunConfig::thread("t-meta"),
        StreamMode::MESSAGES | StreamMode::TASKS,
    )
    .await;
    let key = got
        .iter()
        .find_map(|e| match e {
            Event::TaskStart { key, .. } => Some(key.clone()),
            _ => None,
        })
        .unwrap();
    let metas: Vec<&Arc<MessageMeta>> = got
        .iter()
        .filter_map(|e| match e {
            Event::Message { meta, .. } => Some(meta),
            _ => None,
        })
        .collect();
    assert_eq!(metas.len(), 3);
    let want = MessageMeta {
        node: "chat".into(),
        step: 1,
        triggers: vec!["branch:to:chat".into()],
        path: vec![json!("__pregel_pull"), json!("chat")],
        ns: vec!["chat:pull:chat:1".into()],
        keys: vec![key],
        thread_id: Some("t-meta".into()),
    };
    assert_eq!(*metas[0].as_ref(), want);
    assert_eq!(metas[0].checkpoint_ns(), "chat:pull:chat:1");
    assert!(Arc::ptr_eq(metas[0], metas[2]), "one metadata for the task's chunks");
}

// Without the mode, nothing is emitted and the node can tell (`streams_messages` is false),
// whether the run streams other modes or is invoked.
#[tokio::test]
async fn nothing_is_emitted_when_the_mode_is_off() {
    let app = one_node(false);
    let others = StreamMode::VALUES | StreamMode::UPDATES | StreamMode::TASKS | StreamMode::CUSTOM;
    let got = events(&app, &RunConfig::default(), others).await;
    assert!(got.iter().all(|e| !matches!(e, Event::Message { .. })), "{got:?}");
    assert!(got
        .iter()
        .any(|e| describe(e) == r#"update chat {"log":["streams_messages=false"]}"#));
    let out = app.invoke(S::default(), &RunConfig::default()).await.unwrap();
    assert_eq!(out.log, ["streams_messages=false"]);
}

fn parent_of_chatty() -> CompiledGraph<S> {
    let mut inner = GraphBuilder::<S>::new();
    chatty(&mut inner, "chat", 2);
    inner.add_edge(START, "chat");
    let mut g = GraphBuilder::<S>::new();
    g.add_subgraph(
        "inner",
        inner.compile().unwrap(),
        |_: &S| SUpdate::default(),
        |t: &S| SUpdate::default().log(t.log.clone()),
    );
    g.add_edge(START, "inner");
    g.compile().unwrap()
}

// A subgraph's chunks come under the namespace of the task that runs it, their metadata naming
// the subgraph's task below it; as LangGraph, only when the run streams subgraphs.
#[tokio::test]
async fn a_subgraphs_chunks_come_with_its_namespace() {
    let app = parent_of_chatty();
    let cfg = RunConfig::default().subgraphs(true);
    let got: Vec<String> = events(&app, &cfg, StreamMode::MESSAGES)
        .await
        .iter()
        .map(describe)
        .collect();
    let ns = "inner:pull:inner:1";
    assert_eq!(
        got,
        [
            format!("{ns} | message chat \"t0\" ns={ns}|chat:pull:chat:1"),
            format!("{ns} | message chat \"t1\" ns={ns}|chat:pull:chat:1"),
        ]
    );
    let quiet = events(&app, &RunConfig::default(), StreamMode::MESSAGES).await;
    assert!(quiet.is_empty(), "{quiet:?}");
}

// A `Send`'s task is a push task: LangGraph's `__pregel_push` trigger and path with its index.
#[tokio::test]
async fn a_sends_chunks_name_the_push_task() {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("fan", |_: &S| SUpdate::default());
    let chat = chatty(&mut g, "chat", 1);
    g.add_edge(START, "fan");
    let to = chat.clone();
    g.add_router("fan", move |_: &S| to.send(S::default()), [&chat]);
    let app = g.compile().unwrap();
    let got = events(&app, &RunConfig::default(), StreamMode::MESSAGES).await;
    let Some(Event::Message { meta, .. }) = got.first() else {
        panic!("no message: {got:?}")
    };
    assert_eq!(meta.triggers, ["__pregel_push"]);
    assert_eq!(meta.path, [json!("__pregel_push"), json!(0)]);
    assert_eq!(meta.ns, ["chat:push:0000000000:2"]);
}

// The chunks go through the run's bounded stream: a consumer that stops reading holds the node
// back instead of letting chunks pile up.
#[tokio::test]
async fn a_slow_consumer_holds_the_node_back() {
    let emitted = Arc::new(AtomicUsize::new(0));
    let counted = emitted.clone();
    let mut g = GraphBuilder::<S>::new();
    g.add_node("chat", move |_: &S, ctx: &Context| {
        let (ctx, counted) = (ctx.clone(), counted.clone());
        async move {
            for i in 0..1_000 {
                ctx.emit_message(json!({"content": i})).await;
                counted.fetch_add(1, Ordering::SeqCst);
            }
            SUpdate::default()
        }
    });
    g.add_edge(START, "chat");
    let app = g.compile().unwrap();
    let mut stream = app.stream(S::default(), &RunConfig::default(), StreamMode::MESSAGES);
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!(describe(&first), "message chat 0");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let ran = emitted.load(Ordering::SeqCst);
    assert!(ran < 200, "the node got {ran} chunks ahead of a consumer that read one");
    let rest: Vec<String> = stream.map(|e| describe(&e.unwrap())).collect().await;
    assert_eq!(rest.len(), 999, "every other chunk, once the consumer reads on");
    assert_eq!(rest[998], "message chat 999", "in order");
}
