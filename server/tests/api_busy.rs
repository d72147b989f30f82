//! The threads routes while a run is in flight on the thread (a `gated` node holds it, no
//! sleeps): a state edit is refused with LangGraph's 409 `Thread is busy`, and a metadata patch
//! goes through without undoing the worker's status, nor being undone when the run settles.

mod runs_support;

use axum::http::StatusCode;
use runs_support::app;
use serde_json::json;
use weir_server::model::ThreadStatus;

#[tokio::test]
async fn a_state_edit_on_a_busy_thread_is_409_and_a_metadata_patch_survives_the_run() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let body = json!({"input": {"topic": "one"}, "assistant_id": "gated"});
    let run = app.call("POST", &format!("/threads/{tid}/runs"), Some(body)).await;
    assert_eq!(run.status, StatusCode::OK, "{}", run.body);
    let rid = run.body["run_id"].as_str().unwrap().to_owned();
    app.gate.entered.notified().await;
    assert_eq!(app.thread_row(&tid).await.unwrap().status, ThreadStatus::Busy);

    let edit = app
        .call(
            "POST",
            &format!("/threads/{tid}/state"),
            Some(json!({"values": {"topic": "x"}})),
        )
        .await;
    assert_eq!(
        (edit.status, edit.body),
        (StatusCode::CONFLICT, json!({"detail": "Thread is busy"}))
    );

    let patched = app
        .call(
            "PATCH",
            &format!("/threads/{tid}"),
            Some(json!({"metadata": {"k": "v"}})),
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK, "{}", patched.body);
    assert_eq!(
        (&patched.body["status"], &patched.body["metadata"]["k"]),
        (&json!("busy"), &json!("v"))
    );

    app.gate.release();
    let out = app.call("GET", &format!("/threads/{tid}/runs/{rid}/join"), None).await;
    assert_eq!(out.body, json!({"topic": "one", "log": ["a:one", "slow:one"]}));
    let after = app.thread_row(&tid).await.unwrap();
    assert_eq!(after.status, ThreadStatus::Idle);
    assert_eq!(after.metadata["k"], "v", "{after:?}");
    assert_eq!(after.values, json!({"topic": "one", "log": ["a:one", "slow:one"]}));
}
