//! A run's `context` (LangGraph API 0.4+ `runs.create`): decoded into the graph's typed run
//! context and read by its nodes, merged over the assistant's, refused with a 422 naming the
//! field when it does not fit, before the run is queued.

mod runs_support;

use axum::http::StatusCode;
use runs_support::{app_on_with, config, open};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use weir::prelude::*;
use weir_server::graph::{Serve, ServedGraph};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
struct Chat {
    #[reducer(append)]
    log: Vec<String>,
}

/// The run context: who asks, with which model.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Who {
    user_id: String,
    #[serde(default)]
    model: Option<String>,
}

fn greet(_: &Chat, _: &Context, who: &Who) -> ChatUpdate {
    let model = who.model.as_deref().unwrap_or("default");
    ChatUpdate::default().log(vec![format!("hi {} on {model}", who.user_id)])
}

async fn app() -> (tempfile::TempDir, runs_support::App) {
    let dir = tempfile::tempdir().unwrap();
    let (db, saver) = open(&dir.path().join("weir.db")).await;
    let app = app_on_with(db, saver, config(), |saver| {
        let mut g = GraphBuilder::<Chat>::new().context::<Who>();
        g.add_node("greet", greet);
        g.add_edge(START, "greet").add_edge("greet", END);
        let served: Arc<dyn ServedGraph> = g.compile().unwrap().into_served(saver.clone());
        BTreeMap::from([("who".to_owned(), served)])
    })
    .await;
    (dir, app)
}

#[tokio::test]
async fn the_runs_context_reaches_its_node_typed() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let body = json!({"input": {}, "assistant_id": "who", "context": {"user_id": "ada", "model": "m1"}});
    let r = app.call("POST", &format!("/threads/{tid}/runs/wait"), Some(body)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body, json!({"log": ["hi ada on m1"]}));
    // Another run on the thread reads its own context, not the first one's.
    let body = json!({"input": {}, "assistant_id": "who", "context": {"user_id": "bo"}});
    let r = app.call("POST", &format!("/threads/{tid}/runs/wait"), Some(body)).await;
    assert_eq!(r.body, json!({"log": ["hi ada on m1", "hi bo on default"]}));
}

#[tokio::test]
async fn a_context_that_does_not_fit_is_a_422_naming_the_field() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let body = json!({"input": {}, "assistant_id": "who", "context": {"user_id": 7}});
    let r = app.call("POST", &format!("/threads/{tid}/runs"), Some(body)).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert!(r.body.to_string().contains("context.user_id"), "{}", r.body);
    let body = json!({"input": {}, "assistant_id": "who"});
    let r = app.call("POST", &format!("/threads/{tid}/runs"), Some(body)).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert!(r.body.to_string().contains("user_id"), "{}", r.body);
    // Nothing was queued.
    let listed = app.call("GET", &format!("/threads/{tid}/runs"), None).await;
    assert_eq!(listed.body, json!([]));
}

#[tokio::test]
async fn the_graphs_context_schema_is_the_context_types() {
    let (_dir, app) = app().await;
    let id = weir_server::model::system_assistant_id("who").to_string();
    let r = app.call("GET", &format!("/assistants/{id}/schemas"), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let schema = &r.body["context_schema"];
    assert_eq!(schema["title"], "Who");
    assert_eq!(schema["required"], json!(["user_id"]));
}

/// A served JSON flow reads the run's `context` object: its condition as `context.plan`, its
/// template as `{{ context.user_id }}`.
async fn flow_app() -> (tempfile::TempDir, runs_support::App) {
    let flow = weir_flow::Flow::from_json(
        &json!({
            "nodes": [
                {"id": "start", "type": "start"},
                {"id": "triage", "type": "condition", "data": {"branches": [
                    {"id": "pro", "when": "context.plan == 'pro'"}
                ]}},
                {"id": "pro", "type": "set", "data": {"assign": {"text": "pro for {{ context.user_id }}"}}},
                {"id": "free", "type": "set", "data": {"assign": {"text": "free for {{ context.user_id }}"}}},
                {"id": "done", "type": "end"}
            ],
            "edges": [
                {"id": "e1", "source": "start", "target": "triage"},
                {"id": "e2", "source": "triage", "sourceHandle": "pro", "target": "pro"},
                {"id": "e3", "source": "triage", "sourceHandle": "else", "target": "free"},
                {"id": "e4", "source": "pro", "target": "done"},
                {"id": "e5", "source": "free", "target": "done"}
            ],
            "state": {"text": {"type": "string"}}
        })
        .to_string(),
        &weir_flow::Registry::new(),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (db, saver) = open(&dir.path().join("weir.db")).await;
    let app = app_on_with(db, saver, config(), move |saver| {
        let served: Arc<dyn ServedGraph> = flow.into_served(saver.clone());
        BTreeMap::from([("flow".to_owned(), served)])
    })
    .await;
    (dir, app)
}

#[tokio::test]
async fn a_served_flow_routes_and_renders_on_the_runs_context() {
    let (_dir, app) = flow_app().await;
    for (plan, user, text) in [("pro", "ada", "pro for ada"), ("free", "bo", "free for bo")] {
        let tid = app.thread().await;
        let body = json!({"input": {}, "assistant_id": "flow", "context": {"plan": plan, "user_id": user}});
        let r = app.call("POST", &format!("/threads/{tid}/runs/wait"), Some(body)).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        assert_eq!(r.body, json!({"text": text}), "{plan}");
    }
}

#[tokio::test]
async fn a_served_flow_reading_a_key_the_context_lacks_fails_naming_it() {
    let (_dir, app) = flow_app().await;
    let tid = app.thread().await;
    let body = json!({"input": {}, "assistant_id": "flow", "context": {"user_id": "cy"}});
    let r = app.call("POST", &format!("/threads/{tid}/runs/wait"), Some(body)).await;
    let body = r.body.to_string();
    assert!(
        body.contains("node `triage` reads `context.plan` (at `data.branches[0].when`), but the run's context has no key `plan`; its keys are `user_id`"),
        "{body}"
    );
}

#[tokio::test]
async fn a_served_flows_context_schema_is_what_its_nodes_read() {
    let (_dir, app) = flow_app().await;
    let id = weir_server::model::system_assistant_id("flow").to_string();
    let r = app.call("GET", &format!("/assistants/{id}/schemas"), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        r.body["context_schema"],
        json!({
            "title": "flow_context",
            "type": "object",
            "properties": {
                "plan": {"description": "Read by node `triage` at `data.branches[0].when`"},
                "user_id": {"description": "Read by node `pro` at `data.assign.text`; node `free` at `data.assign.text`"}
            }
        })
    );
}
