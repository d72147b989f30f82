//! An entrypoint served like a graph (issue 26), through the real router: `runs/wait` takes the
//! entrypoint's input and answers its return value, as LangGraph's server does for a functional
//! graph; `updates` and `custom` streams; an interrupt inside a task answered with
//! `Command(resume=…)`, the finished task not run again; `previous` across two runs on a
//! thread; the thread's state and history; a 422 naming the input's field at fault; the typed run
//! context and the store read by the entrypoint; the schemas of its input and return types.

mod runs_support;

use axum::http::StatusCode;
use runs_support::{app_on_with, config, frames, open};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use weir::prelude::*;
use weir::store::{InMemoryStore, Store};
use weir_server::graph::{Serve, ServedGraph};
use weir_server::model::system_assistant_id;

// ---- the entrypoints -------------------------------------------------------------------------

/// How many times `draft` ran, by topic (each test has topics of its own).
static DRAFTS: Mutex<Option<HashMap<String, usize>>> = Mutex::new(None);

fn drafts(topic: &str) -> usize {
    DRAFTS
        .lock()
        .unwrap()
        .as_ref()
        .and_then(|m| m.get(topic).copied())
        .unwrap_or(0)
}

/// What to write about.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
struct Topic {
    topic: String,
    words: u32,
}

#[task]
async fn draft(topic: String, words: u32) -> Result<String, BoxError> {
    *DRAFTS
        .lock()
        .unwrap()
        .get_or_insert_with(HashMap::new)
        .entry(topic.clone())
        .or_default() += 1;
    weir::func::context()?.emit(json!({ "drafting": topic })).await;
    Ok(format!("{words} words on {topic}"))
}

#[task]
async fn approve(text: String) -> Result<String, BoxError> {
    weir::func::interrupt(json!({ "review": text }))
}

/// Drafts, asks a person, and returns the draft with the answer.
#[entrypoint]
async fn review(t: Topic) -> Result<String, BoxError> {
    let text = draft(t.topic, t.words).await?;
    let verdict = approve(text.clone()).await?;
    Ok(format!("{text} ({verdict})"))
}

/// A running total.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
struct Total {
    total: u32,
    calls: u32,
}

#[entrypoint]
async fn tally(add: u32, previous: Option<Total>) -> Total {
    let (total, calls) = previous.map_or((0, 0), |p| (p.total, p.calls));
    Total {
        total: total + add,
        calls: calls + 1,
    }
}

/// The run context: who asks.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Who {
    user_id: String,
}

/// Greets the run's user with what the store remembers of them, and remembers the greeting.
#[entrypoint]
async fn greet(greeting: String, ctx: &Context) -> Result<String, BoxError> {
    let who = ctx.context::<Who>().ok_or("the run has no `Who` context")?;
    let store = ctx.store()?;
    let known = store.get(&["users"], &who.user_id).await?;
    let name = known.map_or_else(
        || who.user_id.clone(),
        |i| i.value["name"].as_str().unwrap_or("").to_owned(),
    );
    let line = format!("{greeting}, {name}");
    store.put(&["greeted"], &who.user_id, json!({ "line": line })).await?;
    Ok(line)
}

async fn app() -> (tempfile::TempDir, runs_support::App, Arc<dyn Store>) {
    let dir = tempfile::tempdir().unwrap();
    let (db, saver) = open(&dir.path().join("weir.db")).await;
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let memory = store.clone();
    let app = app_on_with(db, saver, config(), move |saver| {
        let graphs: [(&str, Arc<dyn ServedGraph>); 3] = [
            ("review", review().compile().unwrap().into_served(saver.clone())),
            ("tally", tally().compile().unwrap().into_served(saver.clone())),
            (
                "greet",
                greet()
                    .compile()
                    .unwrap()
                    .context::<Who>()
                    .into_served_with(saver.clone(), Some(memory)),
            ),
        ];
        graphs.into_iter().map(|(id, g)| (id.to_owned(), g)).collect()
    })
    .await;
    (dir, app, store)
}

async fn wait(app: &runs_support::App, tid: &str, body: Value) -> Value {
    let r = app.call("POST", &format!("/threads/{tid}/runs/wait"), Some(body)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.body
}

// ---- runs ------------------------------------------------------------------------------------

#[tokio::test]
async fn runs_wait_takes_the_entrypoint_s_input_and_answers_its_return_value() {
    let (_dir, app, _) = app().await;
    let tid = app.thread().await;
    let out = wait(&app, &tid, json!({"input": 5, "assistant_id": "tally"})).await;
    assert_eq!(out, json!({"total": 5, "calls": 1}));
    // `previous` is the last run's return value on the same thread.
    let out = wait(&app, &tid, json!({"input": 3, "assistant_id": "tally"})).await;
    assert_eq!(out, json!({"total": 8, "calls": 2}));
    // Another thread starts from nothing.
    let other = app.thread().await;
    let out = wait(&app, &other, json!({"input": 1, "assistant_id": "tally"})).await;
    assert_eq!(out, json!({"total": 1, "calls": 1}));
}

#[tokio::test]
async fn the_thread_s_state_is_the_return_value_and_history_lists_each_run_s_checkpoints() {
    let (_dir, app, _) = app().await;
    let tid = app.thread().await;
    wait(&app, &tid, json!({"input": 2, "assistant_id": "tally"})).await;
    wait(&app, &tid, json!({"input": 4, "assistant_id": "tally"})).await;
    let state = app.call("GET", &format!("/threads/{tid}/state"), None).await;
    assert_eq!(state.status, StatusCode::OK, "{}", state.body);
    assert_eq!(state.body["values"], json!({"total": 6, "calls": 2}));
    assert_eq!(state.body["next"], json!([]));
    let history = app
        .call("POST", &format!("/threads/{tid}/history"), Some(json!({"limit": 100})))
        .await;
    assert_eq!(history.status, StatusCode::OK, "{}", history.body);
    let values: Vec<&Value> = history.body.as_array().unwrap().iter().map(|s| &s["values"]).collect();
    // Newest first, three a run (its input, the step that takes it in, the entrypoint's step):
    // the last return value is held until the entrypoint returns again.
    let (second, first) = (json!({"total": 6, "calls": 2}), json!({"total": 2, "calls": 1}));
    assert_eq!(values, [&second, &first, &first, &first, &Value::Null, &Value::Null]);
    let thread = app.thread_row(&tid).await.unwrap();
    assert_eq!(thread.values, json!({"total": 6, "calls": 2}));
    // A state edit writes a new return value, which the next run gets as `previous`.
    let edit = app
        .call(
            "POST",
            &format!("/threads/{tid}/state"),
            Some(json!({"values": {"total": 100, "calls": 0}})),
        )
        .await;
    assert_eq!(edit.status, StatusCode::OK, "{}", edit.body);
    let out = wait(&app, &tid, json!({"input": 1, "assistant_id": "tally"})).await;
    assert_eq!(out, json!({"total": 101, "calls": 1}));
}

#[tokio::test]
async fn input_that_is_not_the_entrypoint_s_is_a_422_naming_the_field() {
    let (_dir, app, _) = app().await;
    let tid = app.thread().await;
    let body = json!({"input": {"topic": "x", "words": "many"}, "assistant_id": "review"});
    let r = app.call("POST", &format!("/threads/{tid}/runs"), Some(body)).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert!(r.body.to_string().contains("input.words"), "{}", r.body);
    let body = json!({"input": "five", "assistant_id": "tally"});
    let r = app.call("POST", &format!("/threads/{tid}/runs/wait"), Some(body)).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert!(r.body.to_string().contains("input: invalid type"), "{}", r.body);
    // Nothing was queued.
    let listed = app.call("GET", &format!("/threads/{tid}/runs"), None).await;
    assert_eq!(listed.body, json!([]));
}

#[tokio::test]
async fn an_interrupt_in_a_task_is_answered_by_a_resume_command_and_finished_tasks_do_not_run_again() {
    let (_dir, app, _) = app().await;
    let tid = app.thread().await;
    let input = json!({"topic": "wait-resume", "words": 10});
    let paused = wait(&app, &tid, json!({"input": input, "assistant_id": "review"})).await;
    let interrupts = paused["__interrupt__"].as_array().unwrap();
    assert_eq!(interrupts.len(), 1, "{paused}");
    assert_eq!(interrupts[0]["value"], json!({"review": "10 words on wait-resume"}));
    assert_eq!(paused.as_object().unwrap().len(), 1, "{paused}");
    let state = app.call("GET", &format!("/threads/{tid}/state"), None).await;
    assert_eq!(state.body["next"], json!(["review"]), "{}", state.body);
    assert_eq!(state.body["values"], Value::Null);
    let done = wait(
        &app,
        &tid,
        json!({"command": {"resume": "ok"}, "assistant_id": "review"}),
    )
    .await;
    assert_eq!(done, json!("10 words on wait-resume (ok)"));
    assert_eq!(drafts("wait-resume"), 1, "the draft's saved result was used on resume");
    let state = app.call("GET", &format!("/threads/{tid}/state"), None).await;
    assert_eq!(state.body["values"], json!("10 words on wait-resume (ok)"));
    assert_eq!(state.body["next"], json!([]));
}

#[tokio::test]
async fn a_stream_in_updates_and_custom_modes_reports_the_task_s_events_the_pause_and_the_return() {
    let (_dir, app, _) = app().await;
    let tid = app.thread().await;
    let body = json!({
        "input": {"topic": "streamed", "words": 3},
        "assistant_id": "review",
        "stream_mode": ["updates", "custom"],
    });
    let res = app
        .open("POST", &format!("/threads/{tid}/runs/stream"), Some(body), &[])
        .await;
    let events: Vec<(String, Value)> = frames(res.into_body())
        .await
        .into_iter()
        .map(|(event, data, _)| (event, data))
        .filter(|(event, _)| event != "metadata")
        .collect();
    assert_eq!(
        events,
        [
            ("custom".to_owned(), json!({"drafting": "streamed"})),
            (
                "updates".to_owned(),
                json!({"__interrupt__": [{"value": {"review": "3 words on streamed"}, "id": events[1].1["__interrupt__"][0]["id"], "response_schema": null}]})
            ),
        ]
    );
    let body = json!({
        "command": {"resume": "fine"},
        "assistant_id": "review",
        "stream_mode": ["updates", "custom"],
    });
    let res = app
        .open("POST", &format!("/threads/{tid}/runs/stream"), Some(body), &[])
        .await;
    let events: Vec<(String, Value)> = frames(res.into_body())
        .await
        .into_iter()
        .map(|(event, data, _)| (event, data))
        .filter(|(event, _)| event != "metadata")
        .collect();
    // The draft's result is saved: it does not run, nor emit, again.
    assert_eq!(
        events,
        [("updates".to_owned(), json!({"review": "3 words on streamed (fine)"}))]
    );
    assert_eq!(drafts("streamed"), 1);
}

// ---- context, store, schemas -----------------------------------------------------------------

#[tokio::test]
async fn the_entrypoint_reads_the_run_s_typed_context_and_the_server_s_store() {
    let (_dir, app, store) = app().await;
    store.put(&["users"], "u1", json!({ "name": "Ada" })).await.unwrap();
    let tid = app.thread().await;
    let body = json!({"input": "hello", "assistant_id": "greet", "context": {"user_id": "u1"}});
    assert_eq!(wait(&app, &tid, body).await, json!("hello, Ada"));
    let saved = store.get(&["greeted"], "u1").await.unwrap().unwrap();
    assert_eq!(saved.value, json!({ "line": "hello, Ada" }));
    // A context that is not a `Who` is refused before the run is queued.
    let body = json!({"input": "hi", "assistant_id": "greet", "context": {"user_id": 7}});
    let r = app.call("POST", &format!("/threads/{tid}/runs"), Some(body)).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert!(r.body.to_string().contains("context.user_id"), "{}", r.body);
}

#[tokio::test]
async fn the_schemas_are_the_input_s_and_the_return_value_s_types() {
    let (_dir, app, _) = app().await;
    let id = system_assistant_id("tally").to_string();
    let r = app.call("GET", &format!("/assistants/{id}/schemas"), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["input_schema"]["type"], "integer", "{}", r.body);
    assert_eq!(r.body["output_schema"]["title"], "Total");
    assert_eq!(r.body["state_schema"]["title"], "Total");
    assert_eq!(r.body["context_schema"], Value::Null);
    let id = system_assistant_id("greet").to_string();
    let r = app.call("GET", &format!("/assistants/{id}/schemas"), None).await;
    assert_eq!(r.body["context_schema"]["title"], "Who", "{}", r.body);
    assert_eq!(r.body["input_schema"]["type"], "string");
}
