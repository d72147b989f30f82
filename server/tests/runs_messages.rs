//! The `messages-tuple` and legacy `messages` stream modes through the real router: a typed
//! graph whose node calls a streaming fake chat model (weir-agent's `stream_in`), its SSE
//! compared with the captures of LangGraph's server (ids, and the platform's own metadata keys,
//! aside); a subgraph's chunks under its namespace with `stream_subgraphs`.

mod runs_support;

use runs_support::{chatbot, config, frames, open, App};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use weir::prelude::*;
use weir_agent::message::{AiMessage, MessagesState, MessagesStateUpdate, ToolCall};
use weir_agent::model::FakeChatModel;
use weir_agent::tool::tool_fn;
use weir_server::graph::{Serve, ServedGraph};

/// The chatbot as node `inner` of a parent graph.
fn parent() -> CompiledGraph<MessagesState> {
    let mut g = GraphBuilder::<MessagesState>::new();
    g.add_subgraph(
        "inner",
        chatbot(),
        |s: &MessagesState| MessagesStateUpdate::default().messages(s.messages.clone().into()),
        |t: &MessagesState| MessagesStateUpdate::default().messages(t.messages.clone().into()),
    );
    g.add_edge(START, "inner").add_edge("inner", END);
    g.compile().unwrap()
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

/// A ReAct agent whose fake model calls `add`, then answers.
fn agent() -> CompiledGraph<MessagesState> {
    let args = json!({"a": 2, "b": 3}).as_object().cloned().unwrap();
    let model = FakeChatModel::new([
        AiMessage::new("").with_tool_calls(vec![ToolCall::new("call_1", "add", args)]),
        AiMessage::new("5"),
    ]);
    let add = tool_fn(
        "add",
        "Adds.",
        |x: Add| async move { Ok::<_, std::io::Error>(x.a + x.b) },
    );
    weir_agent::react_agent(model, [add]).compile().unwrap()
}

async fn app() -> (tempfile::TempDir, App) {
    let dir = tempfile::tempdir().unwrap();
    let (db, saver) = open(&dir.path().join("weir.db")).await;
    let app = runs_support::app_on_with(db, saver, config(), |saver| {
        let mut extra: BTreeMap<String, Arc<dyn ServedGraph>> = BTreeMap::new();
        extra.insert("chatbot".into(), chatbot().into_served(saver.clone()));
        extra.insert("nested".into(), parent().into_served(saver.clone()));
        extra.insert("agent".into(), agent().into_served(saver.clone()));
        extra
    })
    .await;
    (dir, app)
}

/// The events of a streamed run of `graph` on a new thread, after `metadata`.
async fn stream(app: &App, graph: &str, modes: &[&str], subgraphs: bool) -> Vec<(String, Value)> {
    let tid = app.thread().await;
    let body = json!({
        "assistant_id": graph,
        "input": {"messages": [{"type": "human", "content": "hi"}]},
        "stream_mode": modes,
        "stream_subgraphs": subgraphs,
    });
    let res = app
        .open("POST", &format!("/threads/{tid}/runs/stream"), Some(body), &[])
        .await;
    assert_eq!(res.status(), axum::http::StatusCode::OK);
    frames(res.into_body())
        .await
        .into_iter()
        .filter(|(e, _, _)| e != "metadata")
        .map(|(e, d, _)| (e, d))
        .collect()
}

/// A capture's events after `metadata`.
fn capture(name: &str) -> Vec<(String, Value)> {
    let text = std::fs::read_to_string(format!("{}/tests/captures/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let mut out = Vec::new();
    let mut event = "";
    for line in text.lines().map(|l| l.trim_end_matches('\r')) {
        if let Some(e) = line.strip_prefix("event: ") {
            event = e;
        } else if let Some(d) = line.strip_prefix("data: ") {
            if event != "metadata" {
                out.push((event.to_owned(), serde_json::from_str(d).unwrap()));
            }
        }
    }
    out
}

/// The metadata keys only LangGraph's platform and LangChain's tracing add.
const PLATFORM_KEYS: [&str; 10] = [
    "run_attempt",
    "langgraph_version",
    "langgraph_api_version",
    "langgraph_plan",
    "langgraph_host",
    "langgraph_api_url",
    "ls_integration",
    "ls_provider",
    "ls_model_type",
    "lc_versions",
];

/// Ids as `*`: messages' ids, the run's, thread's and assistant's, the task uuids of checkpoint
/// namespaces, the legacy metadata's key; the platform's metadata keys dropped.
fn normalize(events: Vec<(String, Value)>) -> Vec<(String, Value)> {
    events.into_iter().map(|(e, d)| (e, scrub(d))).collect()
}

fn scrub(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut out = serde_json::Map::new();
            for (k, v) in m {
                let v = match k.as_str() {
                    _ if PLATFORM_KEYS.contains(&k.as_str()) => continue,
                    "id" | "thread_id" | "run_id" | "assistant_id" => json!("*"),
                    "checkpoint_ns" | "langgraph_checkpoint_ns" => json!(ns_shape(v.as_str().unwrap())),
                    _ => scrub(v),
                };
                // The legacy `messages/metadata` is keyed by the message's id.
                let k = if k.starts_with("lc_run--") || k.starts_with("fake-") {
                    "*".into()
                } else {
                    k
                };
                out.insert(k, v);
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.into_iter().map(scrub).collect()),
        other => other,
    }
}

/// `chat:<uuid>|…` as `chat:*|…`.
fn ns_shape(ns: &str) -> String {
    ns.split('|')
        .map(|level| format!("{}:*", level.split(':').next().unwrap()))
        .collect::<Vec<_>>()
        .join("|")
}

#[tokio::test]
async fn messages_tuple_streams_langchain_chunks_with_langgraphs_metadata_as_the_capture() {
    let (_dir, app) = app().await;
    let got = stream(&app, "chatbot", &["values", "messages-tuple"], false).await;
    // Each chunk's id is the answer's id in the state, as useStream merges them.
    let answer_id = got.last().unwrap().1["messages"][1]["id"].clone();
    let chunk_ids: Vec<&Value> = got
        .iter()
        .filter(|(e, _)| e == "messages")
        .map(|(_, d)| &d[0]["id"])
        .collect();
    assert_eq!(chunk_ids.len(), 5);
    assert!(
        chunk_ids.iter().all(|id| **id == answer_id),
        "{chunk_ids:?} vs {answer_id}"
    );
    let meta = &got[1].1[1];
    assert_eq!(meta["checkpoint_ns"], meta["langgraph_checkpoint_ns"]);
    assert_eq!(meta["graph_id"], "chatbot");
    assert_eq!(normalize(got), normalize(capture("messages_tuple.sse")));
}

#[tokio::test]
async fn the_legacy_messages_mode_sends_metadata_once_then_the_message_so_far_as_the_capture() {
    let (_dir, app) = app().await;
    let got = stream(&app, "chatbot", &["messages"], false).await;
    let mut want = normalize(capture("messages.sse"));
    // The capture's thread had run twelve steps before; this one is new.
    assert_eq!(want[0].1["*"]["metadata"]["langgraph_step"], 13);
    want[0].1["*"]["metadata"]["langgraph_step"] = json!(1);
    assert_eq!(normalize(got), want);
}

#[tokio::test]
async fn a_subgraphs_chunks_come_under_its_namespace_with_stream_subgraphs() {
    let (_dir, app) = app().await;
    let got = stream(&app, "nested", &["messages-tuple"], true).await;
    assert_eq!(got.len(), 5, "{got:?}");
    for (event, data) in &got {
        let (name, ns) = event.split_once('|').expect("a namespace suffix");
        assert_eq!(name, "messages");
        assert_eq!(ns_shape(ns), "inner:*");
        let meta = &data[1];
        assert_eq!(meta["langgraph_node"], "chat");
        let task_ns = meta["langgraph_checkpoint_ns"].as_str().unwrap();
        assert_eq!(ns_shape(task_ns), "inner:*|chat:*");
        assert!(task_ns.starts_with(&format!("{ns}|")), "{task_ns} under {ns}");
    }
    let text: String = got.iter().map(|(_, d)| d[0]["content"].as_str().unwrap()).collect();
    assert_eq!(text, "hello there friend");
    // Without `stream_subgraphs`, as LangGraph, the subgraph's chunks are not streamed.
    let quiet = stream(&app, "nested", &["messages-tuple"], false).await;
    assert!(quiet.is_empty(), "{quiet:?}");
}

// An agent's run in the legacy mode: the tool call's fragments accumulate into a parsed tool
// call, the tool's answer (emitted whole) is `messages/complete`, each message announced once.
#[tokio::test]
async fn the_legacy_mode_parses_streamed_tool_calls_and_completes_tool_messages() {
    let (_dir, app) = app().await;
    let got = stream(&app, "agent", &["messages"], false).await;
    let names: Vec<&str> = got.iter().map(|(e, _)| e.as_str()).collect();
    let mut want = vec!["messages/metadata"];
    want.extend(["messages/partial"; 3]); // the call's id and name, then two fragments
    want.extend(["messages/metadata", "messages/complete"]);
    want.extend(["messages/metadata", "messages/partial"]);
    assert_eq!(names, want);
    let call = &got[3].1[0];
    assert_eq!(call["type"], "ai");
    assert_eq!(
        call["tool_calls"],
        json!([{"name": "add", "args": {"a": 2, "b": 3}, "id": "call_1", "type": "tool_call"}])
    );
    assert_eq!(got[1].1[0]["tool_calls"][0]["args"], json!({}), "no argument yet");
    let tool = &got[5].1[0];
    assert_eq!(
        (tool["type"].as_str(), tool["content"].as_str()),
        (Some("tool"), Some("5"))
    );
    assert_eq!(tool["tool_call_id"], "call_1");
    let meta = got[4].1.as_object().unwrap().values().next().unwrap();
    assert_eq!(meta["metadata"]["langgraph_node"], "tools");
    assert_eq!(got[7].1[0]["content"], "5");
}

/// Each message of a run's output as its kind and text.
fn said(out: &Value) -> Vec<(&str, &str)> {
    out["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["type"].as_str().unwrap(), m["content"].as_str().unwrap()))
        .collect()
}

// LangGraph's clients give each message they send an id (useStream, agent-chat-ui): it is the
// message's, not the id of a message to remove.
#[tokio::test]
async fn a_message_sent_with_an_id_keeps_it_and_is_added() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let body = json!({
        "assistant_id": "chatbot",
        "input": {"messages": [{"type": "human", "content": "hi", "id": "client-1"}]},
    });
    let out = app.call("POST", &format!("/threads/{tid}/runs/wait"), Some(body)).await;
    assert_eq!(out.status, axum::http::StatusCode::OK, "{}", out.body);
    let said = said(&out.body);
    assert_eq!(said, [("human", "hi"), ("ai", "hello there friend")]);
    assert_eq!(out.body["messages"][0]["id"], "client-1");
}

// LangGraph's own examples send `{"role": "user", "content": …}` (LangChain's
// `convert_to_messages` takes it, a `[role, content]` pair and a bare string too); a message it
// cannot read is a 422 naming the message.
#[tokio::test]
async fn messages_in_langchains_other_forms_are_taken_and_a_bad_one_named() {
    let (_dir, app) = app().await;
    let input = json!({"messages": [{"role": "user", "content": "hi"}, ["assistant", "earlier"], "again"]});
    let out = app
        .call(
            "POST",
            "/runs/wait",
            Some(json!({"assistant_id": "chatbot", "input": input})),
        )
        .await;
    assert_eq!(out.status, axum::http::StatusCode::OK, "{}", out.body);
    let said = said(&out.body);
    assert_eq!(
        said,
        [
            ("human", "hi"),
            ("ai", "earlier"),
            ("human", "again"),
            ("ai", "hello there friend")
        ]
    );
    let one = json!({"assistant_id": "chatbot", "input": {"messages": {"role": "user", "content": "solo"}}});
    let out = app.call("POST", "/runs/wait", Some(one)).await;
    assert_eq!(out.body["messages"][0]["content"], "solo", "{}", out.body);

    let bad = json!({"assistant_id": "chatbot", "input": {"messages": [{"role": "user", "content": "ok"}, {"role": "wizard", "content": "x"}]}});
    let out = app.call("POST", "/runs/wait", Some(bad)).await;
    assert_eq!(out.status, axum::http::StatusCode::UNPROCESSABLE_ENTITY);
    let detail = out.body["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("input.messages[1]: unknown variant `wizard`"),
        "{detail}"
    );
}
