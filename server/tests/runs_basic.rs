//! Runs through the real router, the real bridge and a SQLite checkpointer: wait, background +
//! join, stream framing, interrupts and resume, node errors and panics, stateless runs.

mod runs_support;

use axum::http::StatusCode;
use runs_support::{app, frames};
use serde_json::json;
use weir_server::model::{RunStatus, ThreadStatus};

#[tokio::test]
async fn wait_answers_the_final_values_with_the_captured_headers() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let r = app
        .call(
            "POST",
            &format!("/threads/{tid}/runs/wait"),
            Some(json!({"input": {"topic": "x", "log": []}, "assistant_id": "chain"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body, json!({"topic": "x", "log": ["a:x", "b"]}));
    let loc = r.header("content-location").to_owned();
    assert!(loc.starts_with(&format!("/threads/{tid}/runs/")), "{loc}");
    assert_eq!(r.header("location"), format!("{loc}/join"));
    let run = app.call("GET", &loc, None).await;
    assert_eq!(run.body["status"], "success");
    assert_eq!(run.body["metadata"]["graph_id"], "chain");
    let thread = app.thread_row(&tid).await.unwrap();
    assert_eq!(thread.status, ThreadStatus::Idle);
    assert_eq!(thread.values, json!({"topic": "x", "log": ["a:x", "b"]}));
    assert_eq!(thread.metadata["graph_id"], "chain");
    assert_eq!(
        thread.metadata["assistant_id"],
        weir_server::model::system_assistant_id("chain").to_string()
    );
}

#[tokio::test]
async fn a_background_run_is_pending_then_joins_and_lists() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let r = app
        .call(
            "POST",
            &format!("/threads/{tid}/runs"),
            Some(json!({"input": {"topic": "bg"}, "assistant_id": "chain", "stream_mode": "values"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["status"], "pending");
    assert_eq!(r.body["kwargs"]["stream_mode"], json!(["values"]));
    assert_eq!(r.body["multitask_strategy"], "enqueue");
    let rid = r.body["run_id"].as_str().unwrap().to_owned();
    assert_eq!(r.header("content-location"), format!("/threads/{tid}/runs/{rid}"));
    let joined = app.call("GET", &format!("/threads/{tid}/runs/{rid}/join"), None).await;
    assert_eq!(joined.body, json!({"topic": "bg", "log": ["a:bg", "b"]}));
    let listed = app
        .call("GET", &format!("/threads/{tid}/runs?limit=1&offset=0"), None)
        .await;
    assert_eq!(listed.body[0]["run_id"], rid);
    assert_eq!(listed.body[0]["status"], "success");
    // `select`, repeated as the SDK sends it (it used to be ignored: every field came back).
    let selected = app
        .call("GET", &format!("/threads/{tid}/runs?select=run_id&select=status"), None)
        .await;
    assert_eq!(selected.body, json!([{"run_id": rid, "status": "success"}]));
    let unknown = app
        .call("GET", &format!("/threads/{tid}/runs?select=colour"), None)
        .await;
    assert_eq!(unknown.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        unknown.body["detail"]
            .as_str()
            .unwrap()
            .starts_with("query parameter `select`: `colour` is not a field; the fields are run_id,"),
        "{}",
        unknown.body
    );
    for (query, says) in [
        ("limit=-1", "query parameter `limit`: `-1` is not a number >= 0"),
        ("status=later", "query parameter `status`: `later` is not a run status"),
    ] {
        let r = app.call("GET", &format!("/threads/{tid}/runs?{query}"), None).await;
        assert_eq!(
            (r.status, &r.body["detail"]),
            (StatusCode::UNPROCESSABLE_ENTITY, &json!(says))
        );
    }
    let pending = app
        .call("GET", &format!("/threads/{tid}/runs?status=pending"), None)
        .await;
    assert_eq!(pending.body, json!([]));
}

#[tokio::test]
async fn an_unknown_thread_is_404_unless_if_not_exists_create() {
    let (_dir, app) = app().await;
    let body = json!({"input": {"topic": "x"}, "assistant_id": "chain"});
    let r = app.call("POST", "/threads/nope/runs/wait", Some(body.clone())).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.body, json!({"detail": "Thread or assistant not found."}));
    let mut body = body;
    body["if_not_exists"] = json!("create");
    let r = app.call("POST", "/threads/made-here/runs/wait", Some(body)).await;
    assert_eq!(r.body, json!({"topic": "x", "log": ["a:x", "b"]}));
    assert!(app.thread_row("made-here").await.is_some());
}

#[tokio::test]
async fn bad_input_and_bad_stream_modes_are_422_naming_the_field() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let r = app
        .call(
            "POST",
            &format!("/threads/{tid}/runs"),
            Some(json!({"input": {"topic": 5}, "assistant_id": "chain"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.body["detail"].as_str().unwrap().contains("topic"), "{}", r.body);
    let r = app
        .call(
            "POST",
            &format!("/threads/{tid}/runs"),
            Some(json!({"input": {}, "assistant_id": "chain", "stream_mode": ["values", "nope"]})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        r.body["detail"]
            .as_str()
            .unwrap()
            .starts_with("body field `stream_mode`: unknown mode `nope`"),
        "{}",
        r.body
    );
    assert!(app.runs(&tid).await.is_empty());
}

#[tokio::test]
async fn a_stream_is_framed_metadata_first_with_ids_when_resumable() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let body = json!({"input": {"topic": "s"}, "assistant_id": "chain", "stream_mode": ["values", "updates"], "stream_resumable": true});
    let res = app
        .open("POST", &format!("/threads/{tid}/runs/stream"), Some(body), &[])
        .await;
    assert_eq!(res.headers()["content-type"], "text/event-stream; charset=utf-8");
    assert_eq!(res.headers()["cache-control"], "no-store");
    assert_eq!(res.headers()["x-accel-buffering"], "no");
    let loc = res.headers()["content-location"].to_str().unwrap().to_owned();
    assert_eq!(res.headers()["location"].to_str().unwrap(), format!("{loc}/stream"));
    let events = frames(res.into_body()).await;
    let names: Vec<&str> = events.iter().map(|(e, _, _)| e.as_str()).collect();
    assert_eq!(names, ["metadata", "values", "updates", "values", "updates", "values"]);
    let rid = loc.rsplit('/').next().unwrap();
    assert_eq!(events[0].1, json!({"run_id": rid, "attempt": 1}));
    assert_eq!(events[2].1, json!({"a": {"log": ["a:s"]}}));
    assert_eq!(events[5].1, json!({"topic": "s", "log": ["a:s", "b"]}));
    let ids: Vec<&str> = events.iter().map(|(_, _, id)| id.as_deref().unwrap()).collect();
    let mut sorted = ids.clone();
    sorted.sort_by_key(|id| {
        let (ms, seq) = id.split_once('-').unwrap();
        (ms.parse::<u64>().unwrap(), seq.parse::<u64>().unwrap())
    });
    assert_eq!(ids, sorted, "ids increase");
    assert_eq!(
        app.status(&tid, rid).await,
        Some(RunStatus::Success),
        "final before the stream closed"
    );
}

#[tokio::test]
async fn a_stream_that_is_not_resumable_has_no_ids() {
    let (_dir, app) = app().await;
    let body = json!({"input": {"topic": "s"}, "assistant_id": "chain", "stream_mode": "updates"});
    let res = app.open("POST", "/runs/stream", Some(body), &[]).await;
    let events = frames(res.into_body()).await;
    assert_eq!(events.len(), 3);
    assert!(events.iter().all(|(_, _, id)| id.is_none()));
}

#[tokio::test]
async fn an_interrupt_answers_with_interrupt_and_the_thread_keeps_it_by_task_then_resume_ends_it() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let r = app
        .call(
            "POST",
            &format!("/threads/{tid}/runs/wait"),
            Some(json!({"input": {"topic": "z"}, "assistant_id": "hitl"})),
        )
        .await;
    assert_eq!(r.body["topic"], "z");
    assert_eq!(r.body["log"], json!(["a:z"]));
    let intr = &r.body["__interrupt__"][0];
    assert_eq!(intr["value"], json!({"question": "ok?"}));
    assert_eq!(intr["id"].as_str().unwrap().len(), 32);
    let thread = app.thread_row(&tid).await.unwrap();
    assert_eq!(thread.status, ThreadStatus::Interrupted);
    let (_task, list) = thread.interrupts.iter().next().unwrap();
    assert_eq!(list[0]["id"], intr["id"]);
    let r = app
        .call(
            "POST",
            &format!("/threads/{tid}/runs/wait"),
            Some(json!({"command": {"resume": "yes"}, "assistant_id": "hitl"})),
        )
        .await;
    assert_eq!(r.body, json!({"topic": "z", "log": ["a:z", "ask:yes"]}));
    let thread = app.thread_row(&tid).await.unwrap();
    assert_eq!(thread.status, ThreadStatus::Idle);
    assert!(thread.interrupts.is_empty());
}

#[tokio::test]
async fn a_failing_node_is_http_200_with_error_on_wait_and_an_error_event_on_stream() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let r = app
        .call(
            "POST",
            &format!("/threads/{tid}/runs/wait"),
            Some(json!({"input": {"topic": "f"}, "assistant_id": "failing"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let err = &r.body["__error__"];
    assert!(err["message"].as_str().unwrap().contains("boom in node"), "{}", r.body);
    assert!(err["error"].is_string());
    let thread = app.thread_row(&tid).await.unwrap();
    assert_eq!(thread.status, ThreadStatus::Error);
    assert_eq!(&thread.error, err);
    let res = app
        .open(
            "POST",
            &format!("/threads/{tid}/runs/stream"),
            Some(json!({"input": {"topic": "f"}, "assistant_id": "failing"})),
            &[],
        )
        .await;
    let events = frames(res.into_body()).await;
    let (last, data, _) = events.last().unwrap();
    assert_eq!(last, "error");
    assert_eq!(data, err);
}

#[tokio::test]
async fn a_panicking_node_ends_its_run_error_and_the_workers_go_on() {
    let (_dir, app) = app().await;
    for _ in 0..6 {
        // More panics than workers: a killed worker would leave later runs pending forever.
        let r = app
            .call(
                "POST",
                "/runs/wait",
                Some(json!({"input": {"topic": "p"}, "assistant_id": "panics"})),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK);
        assert!(
            r.body["__error__"]["message"]
                .as_str()
                .unwrap()
                .contains("node exploded"),
            "{}",
            r.body
        );
    }
    let r = app
        .call(
            "POST",
            "/runs/wait",
            Some(json!({"input": {"topic": "q"}, "assistant_id": "chain"})),
        )
        .await;
    assert_eq!(r.body, json!({"topic": "q", "log": ["a:q", "b"]}));
}

#[tokio::test]
async fn a_stateless_run_deletes_its_thread_unless_on_completion_keep() {
    let (_dir, app) = app().await;
    let r = app
        .call(
            "POST",
            "/runs/wait",
            Some(json!({"input": {"topic": "q"}, "assistant_id": "chain"})),
        )
        .await;
    assert_eq!(r.body, json!({"topic": "q", "log": ["a:q", "b"]}));
    let tid = r.header("content-location").split('/').nth(2).unwrap().to_owned();
    assert!(app.thread_row(&tid).await.is_none());
    assert_eq!(app.checkpoints(&tid).await, 0);
    let r = app
        .call(
            "POST",
            "/runs/wait",
            Some(json!({"input": {"topic": "k"}, "assistant_id": "chain", "on_completion": "keep"})),
        )
        .await;
    let tid = r.header("content-location").split('/').nth(2).unwrap().to_owned();
    let thread = app.thread_row(&tid).await.unwrap();
    assert_eq!(thread.values, json!({"topic": "k", "log": ["a:k", "b"]}));
    assert!(app.checkpoints(&tid).await > 0);
}

/// LangGraph's server takes a run with no input on a thread with no checkpoint (it checks
/// nothing up front) and the run ends in `EmptyInputError`; so does weir's.
#[tokio::test]
async fn no_input_on_a_new_thread_is_a_run_that_ends_in_empty_input_error() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let r = app
        .call(
            "POST",
            &format!("/threads/{tid}/runs/wait"),
            Some(json!({"assistant_id": "chain"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        r.body,
        json!({"__error__": {"error": "EmptyInputError", "message": "Received no input for topic, log"}})
    );
    let runs = app.runs(&tid).await;
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, RunStatus::Error);
    assert_eq!(app.thread_row(&tid).await.unwrap().status, ThreadStatus::Error);
    assert_eq!(app.checkpoints(&tid).await, 0);
}
