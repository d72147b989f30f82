//! The four multitask strategies, cancel (interrupt, rollback, wait or not), delete, and
//! `on_disconnect`, on a graph whose second node waits at a gate the test opens: no sleeps.

mod runs_support;

use axum::http::StatusCode;
use runs_support::{app, app_with, config, next_chunk, App};
use serde_json::{json, Value};
use weir_server::model::{RunStatus, ThreadStatus};
use weir_server::runs::{ManagerConfig, NOTHING_TO_CANCEL, REJECT_DETAIL};

/// Starts a background run of `gated` on `tid` and waits until its node is at the gate and
/// `a`'s checkpoint is written (the run's three: input, start, after `a`).
async fn start_gated(app: &App, tid: &str, extra: Value) -> String {
    let before = app.checkpoints(tid).await;
    let mut body = json!({"input": {"topic": "one"}, "assistant_id": "gated"});
    body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let r = app.call("POST", &format!("/threads/{tid}/runs"), Some(body)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    app.gate.entered.notified().await;
    app.until_checkpoints(tid, before + 3).await;
    r.body["run_id"].as_str().unwrap().to_owned()
}

async fn second(app: &App, tid: &str, strategy: &str) -> (StatusCode, Value) {
    let body = json!({"input": {"topic": "two"}, "assistant_id": "chain", "multitask_strategy": strategy});
    let r = app.call("POST", &format!("/threads/{tid}/runs"), Some(body)).await;
    (r.status, r.body)
}

async fn join(app: &App, tid: &str, rid: &str) -> Value {
    app.call("GET", &format!("/threads/{tid}/runs/{rid}/join"), None)
        .await
        .body
}

#[tokio::test]
async fn reject_is_409_with_the_captured_text_and_the_first_run_goes_on() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let first = start_gated(&app, &tid, json!({})).await;
    let (status, body) = second(&app, &tid, "reject").await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(body, json!({"detail": REJECT_DETAIL}));
    app.gate.release();
    assert_eq!(
        join(&app, &tid, &first).await,
        json!({"topic": "one", "log": ["a:one", "slow:one"]})
    );
    assert_eq!(app.runs(&tid).await.len(), 1);
}

#[tokio::test]
async fn interrupt_stops_the_first_run_keeping_its_checkpoints_then_runs_the_second() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let first = start_gated(&app, &tid, json!({})).await;
    let (status, body) = second(&app, &tid, "interrupt").await;
    assert_eq!(status, StatusCode::OK);
    let rid = body["run_id"].as_str().unwrap();
    assert_eq!(
        join(&app, &tid, rid).await,
        json!({"topic": "two", "log": ["a:one", "a:two", "b"]})
    );
    assert_eq!(app.status(&tid, &first).await, Some(RunStatus::Interrupted));
    assert_eq!(app.status(&tid, rid).await, Some(RunStatus::Success));
    assert_eq!(app.thread_row(&tid).await.unwrap().status, ThreadStatus::Idle);
}

#[tokio::test]
async fn rollback_deletes_the_first_run_and_its_checkpoints_then_runs_the_second() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let first = start_gated(&app, &tid, json!({})).await;
    let (status, body) = second(&app, &tid, "rollback").await;
    assert_eq!(status, StatusCode::OK);
    let rid = body["run_id"].as_str().unwrap();
    // The first run's writes are gone: the second starts from the empty thread.
    assert_eq!(
        join(&app, &tid, rid).await,
        json!({"topic": "two", "log": ["a:two", "b"]})
    );
    let gone = app.call("GET", &format!("/threads/{tid}/runs/{first}"), None).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
    assert_eq!(app.status(&tid, rid).await, Some(RunStatus::Success));
}

#[tokio::test]
async fn enqueue_runs_both_in_order_and_the_state_has_both_writes() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let first = start_gated(&app, &tid, json!({})).await;
    let (status, body) = second(&app, &tid, "enqueue").await;
    assert_eq!(status, StatusCode::OK);
    let rid = body["run_id"].as_str().unwrap();
    assert_eq!(app.status(&tid, rid).await, Some(RunStatus::Pending));
    assert_eq!(app.thread_row(&tid).await.unwrap().status, ThreadStatus::Busy);
    app.gate.release();
    assert_eq!(join(&app, &tid, &first).await["log"], json!(["a:one", "slow:one"]));
    assert_eq!(
        join(&app, &tid, rid).await,
        json!({"topic": "two", "log": ["a:one", "slow:one", "a:two", "b"]})
    );
    assert_eq!(app.thread_row(&tid).await.unwrap().status, ThreadStatus::Idle);
}

/// A thread's queue is bounded (`max_queued_runs`): a run queued behind as many is a 429 naming
/// the thread and the bound, and is not stored; `interrupt` still goes through (it stops the
/// runs ahead), and once they have ended the thread queues again.
#[tokio::test]
async fn a_run_past_the_threads_queue_bound_is_429_and_not_stored() {
    let (_dir, app) = app_with(ManagerConfig {
        max_queued_runs: 2,
        ..config()
    })
    .await;
    let tid = app.thread().await;
    start_gated(&app, &tid, json!({})).await;
    let (status, _) = second(&app, &tid, "enqueue").await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = second(&app, &tid, "enqueue").await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert_eq!(
        body["detail"],
        format!(
            "thread `{tid}` has 2 runs pending or running, as many as a thread may queue (max_queued_runs); \
             wait for some to end, cancel some, or use another multitask_strategy"
        )
    );
    assert_eq!(app.runs(&tid).await.len(), 2, "the refused run was not stored");
    let (status, body) = second(&app, &tid, "interrupt").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let rid = body["run_id"].as_str().unwrap();
    assert_eq!(join(&app, &tid, rid).await["topic"], "two");
    let (status, _) = second(&app, &tid, "enqueue").await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn cancel_interrupt_without_wait_is_202_and_the_run_ends_interrupted() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let rid = start_gated(&app, &tid, json!({})).await;
    let r = app
        .call(
            "POST",
            &format!("/threads/{tid}/runs/{rid}/cancel?wait=0&action=interrupt"),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    assert_eq!(join(&app, &tid, &rid).await, json!({"topic": "one", "log": ["a:one"]}));
    assert_eq!(app.status(&tid, &rid).await, Some(RunStatus::Interrupted));
    assert_eq!(app.checkpoints(&tid).await, 3, "the input's and a's checkpoints stay");
}

/// As LangGraph's server: a run that has ended is none to cancel, alone (404, whatever `wait`)
/// or in a bulk cancel of only such runs; a bulk cancel with one in flight cancels it (204).
#[tokio::test]
async fn cancelling_a_run_that_has_ended_is_404() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let body = json!({"input": {"topic": "x"}, "assistant_id": "chain"});
    let r = app.call("POST", &format!("/threads/{tid}/runs"), Some(body)).await;
    let done = r.body["run_id"].as_str().unwrap().to_owned();
    join(&app, &tid, &done).await;
    for wait in ["0", "1"] {
        let r = app
            .call("POST", &format!("/threads/{tid}/runs/{done}/cancel?wait={wait}"), None)
            .await;
        assert_eq!(
            (r.status, &r.body["detail"]),
            (StatusCode::NOT_FOUND, &json!(NOTHING_TO_CANCEL))
        );
    }
    let bulk = json!({"thread_id": tid, "run_ids": [done]});
    let r = app.call("POST", "/runs/cancel", Some(bulk)).await;
    assert_eq!(
        (r.status, &r.body["detail"]),
        (StatusCode::NOT_FOUND, &json!(NOTHING_TO_CANCEL))
    );
    assert_eq!(app.status(&tid, &done).await, Some(RunStatus::Success));

    let going = start_gated(&app, &tid, json!({})).await;
    let bulk = json!({"thread_id": tid, "run_ids": [done, going]});
    let r = app.call("POST", "/runs/cancel", Some(bulk)).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    join(&app, &tid, &going).await;
    assert_eq!(app.status(&tid, &going).await, Some(RunStatus::Interrupted));

    // Without run ids: every run of the thread in flight, the running one and the one queued
    // behind it (this listed the thread's runs with no limit, which SQLite refused: a 500).
    let running = start_gated(&app, &tid, json!({})).await;
    let (_, queued) = second(&app, &tid, "enqueue").await;
    let queued = queued["run_id"].as_str().unwrap();
    let r = app
        .call("POST", "/runs/cancel", Some(json!({"thread_id": tid, "run_ids": []})))
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    join(&app, &tid, &running).await;
    assert_eq!(app.status(&tid, &running).await, Some(RunStatus::Interrupted));
    assert_eq!(app.status(&tid, queued).await, Some(RunStatus::Interrupted));
}

/// `runs.cancel_many(status=…)`: every run with that status, on any thread.
#[tokio::test]
async fn a_bulk_cancel_by_status_stops_every_run_with_it_on_any_thread() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let running = start_gated(&app, &tid, json!({})).await;
    let (_, queued) = second(&app, &tid, "enqueue").await;
    let queued = queued["run_id"].as_str().unwrap().to_owned();
    // Another thread's run, waiting for its time.
    let other = app.thread().await;
    let later = app
        .call(
            "POST",
            &format!("/threads/{other}/runs"),
            Some(json!({"input": {"topic": "l"}, "assistant_id": "chain", "after_seconds": 600})),
        )
        .await;
    let later = later.body["run_id"].as_str().unwrap().to_owned();
    // A status is for every thread: not with a thread's runs; and it is one of three words.
    for body in [
        json!({"status": "pending", "thread_id": tid}),
        json!({"status": "pending", "run_ids": [queued]}),
        json!({"status": "done"}),
        json!({}),
    ] {
        let r = app.call("POST", "/runs/cancel", Some(body.clone())).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert!(
            r.body["detail"].as_str().unwrap().contains("body field `"),
            "{}",
            r.body
        );
    }
    let r = app
        .call("POST", "/runs/cancel", Some(json!({"status": "pending"})))
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    assert_eq!(app.status(&tid, &queued).await, Some(RunStatus::Interrupted));
    assert_eq!(app.status(&other, &later).await, Some(RunStatus::Interrupted));
    assert_eq!(
        app.status(&tid, &running).await,
        Some(RunStatus::Running),
        "not pending"
    );
    let r = app
        .call("POST", "/runs/cancel", Some(json!({"status": "Running"})))
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    join(&app, &tid, &running).await;
    assert_eq!(app.status(&tid, &running).await, Some(RunStatus::Interrupted));
    // Nothing in flight is nothing to cancel.
    let r = app.call("POST", "/runs/cancel", Some(json!({"status": "all"}))).await;
    assert_eq!(
        (r.status, &r.body["detail"]),
        (StatusCode::NOT_FOUND, &json!(NOTHING_TO_CANCEL))
    );
}

#[tokio::test]
async fn cancel_rollback_with_wait_is_200_and_removes_the_run_and_its_checkpoints() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let r = app
        .call(
            "POST",
            &format!("/threads/{tid}/runs/wait"),
            Some(json!({"input": {"topic": "x"}, "assistant_id": "chain"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let before = app.checkpoints(&tid).await;
    let rid = start_gated(&app, &tid, json!({})).await;
    let r = app
        .call(
            "POST",
            &format!("/threads/{tid}/runs/{rid}/cancel?wait=1&action=rollback"),
            None,
        )
        .await;
    assert_eq!((r.status, r.body), (StatusCode::OK, json!({})));
    assert_eq!(app.status(&tid, &rid).await, None);
    assert_eq!(app.checkpoints(&tid).await, before);
    assert_eq!(
        app.thread_row(&tid).await.unwrap().values,
        json!({"topic": "x", "log": ["a:x", "b"]})
    );
}

#[tokio::test]
async fn cancelling_a_pending_run_ends_it_before_it_starts() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let first = start_gated(&app, &tid, json!({})).await;
    let (_, body) = second(&app, &tid, "enqueue").await;
    let rid = body["run_id"].as_str().unwrap();
    let r = app
        .call("POST", &format!("/threads/{tid}/runs/{rid}/cancel?wait=1"), None)
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(app.status(&tid, rid).await, Some(RunStatus::Interrupted));
    app.gate.release();
    assert_eq!(join(&app, &tid, &first).await["log"], json!(["a:one", "slow:one"]));
    assert_eq!(
        app.thread_row(&tid).await.unwrap().values["log"],
        json!(["a:one", "slow:one"])
    );
}

#[tokio::test]
async fn deleting_a_run_in_flight_stops_it_first() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let rid = start_gated(&app, &tid, json!({})).await;
    let r = app.call("DELETE", &format!("/threads/{tid}/runs/{rid}"), None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(app.status(&tid, &rid).await, None);
    let r = app
        .call(
            "POST",
            &format!("/threads/{tid}/runs/wait"),
            Some(json!({"input": {"topic": "x"}, "assistant_id": "chain"})),
        )
        .await;
    assert_eq!(r.body["log"], json!(["a:one", "a:x", "b"]));
}

#[tokio::test]
async fn a_client_dropping_a_stream_with_on_disconnect_cancel_stops_the_run() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let body = json!({"input": {"topic": "d"}, "assistant_id": "gated", "on_disconnect": "cancel"});
    let res = app
        .open("POST", &format!("/threads/{tid}/runs/stream"), Some(body), &[])
        .await;
    let loc = res.headers()["content-location"].to_str().unwrap().to_owned();
    let mut body = res.into_body();
    assert!(next_chunk(&mut body).await.unwrap().starts_with("event: metadata\r\n"));
    app.gate.entered.notified().await;
    app.until_checkpoints(&tid, 3).await;
    drop(body);
    let joined = app.call("GET", &format!("{loc}/join"), None).await;
    assert_eq!(joined.body, json!({"topic": "d", "log": ["a:d"]}));
    assert_eq!(app.call("GET", &loc, None).await.body["status"], "interrupted");
}

#[tokio::test]
async fn a_client_dropping_a_stream_with_on_disconnect_continue_leaves_the_run_going() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let body = json!({"input": {"topic": "d"}, "assistant_id": "gated"});
    let res = app
        .open("POST", &format!("/threads/{tid}/runs/stream"), Some(body), &[])
        .await;
    let loc = res.headers()["content-location"].to_str().unwrap().to_owned();
    let mut body = res.into_body();
    assert!(next_chunk(&mut body).await.unwrap().starts_with("event: metadata\r\n"));
    app.gate.entered.notified().await;
    drop(body);
    app.gate.release();
    let joined = app.call("GET", &format!("{loc}/join"), None).await;
    assert_eq!(joined.body, json!({"topic": "d", "log": ["a:d", "slow:d"]}));
    assert_eq!(app.call("GET", &loc, None).await.body["status"], "success");
}
