//! Threads' time-to-live (LangGraph's `ttl` on threads.create and threads.update, and the
//! config's `checkpointer.ttl`): the `ttl` body field checked, read back with `include=ttl`, and
//! the workers' sweeper deleting (`delete`) or pruning to the latest checkpoint (`keep_latest`)
//! the threads left unchanged longer than their TTL (one no run touched too), never a busy one.
//! Also the other way a thread goes with what made it: an assistant's deletion with
//! `delete_threads`. The catalog's queries are in the db suite, on SQLite and PostgreSQL.

mod runs_support;

use axum::http::StatusCode;
use runs_support::{app, app_with, config, App};
use serde_json::{json, Value};
use std::time::Duration;
use weir_server::model::{ThreadTtl, TtlStrategy};
use weir_server::runs::Swept;

/// A TTL that runs out at once: 3 ms.
const SHORT: f64 = 0.00005;

/// A thread of the chain graph made with `ttl`, run once (4 checkpoints), then left until its
/// TTL ran out.
async fn ran_thread(app: &App, ttl: Value) -> String {
    let made = app
        .call(
            "POST",
            "/threads",
            Some(json!({"metadata": {"graph_id": "chain"}, "ttl": ttl})),
        )
        .await;
    assert_eq!(made.status, StatusCode::OK, "{}", made.body);
    let tid = made.body["thread_id"].as_str().unwrap().to_owned();
    let run = app
        .call(
            "POST",
            &format!("/threads/{tid}/runs/wait"),
            Some(json!({"input": {"topic": "x", "log": []}, "assistant_id": "chain"})),
        )
        .await;
    assert_eq!(run.status, StatusCode::OK, "{}", run.body);
    app.until_checkpoints(&tid, 4).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    tid
}

#[tokio::test]
async fn a_thread_whose_ttl_ran_out_is_deleted_with_its_runs_and_checkpoints() {
    let (_dir, app) = app().await;
    let tid = ran_thread(&app, json!(SHORT)).await;
    let kept = ran_thread(&app, json!({"ttl": 600, "strategy": "delete"})).await;
    let swept = app.manager.sweep_thread_ttls().await.unwrap();
    assert_eq!(swept, Swept { deleted: 1, pruned: 0 });
    assert_eq!(
        app.call("GET", &format!("/threads/{tid}"), None).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(app.checkpoints(&tid).await, 0);
    assert!(app.runs(&tid).await.is_empty());
    // The other thread's TTL has ten minutes to go.
    assert_eq!(
        app.call("GET", &format!("/threads/{kept}"), None).await.status,
        StatusCode::OK
    );
    assert_eq!(app.checkpoints(&kept).await, 4);
    assert_eq!(app.manager.sweep_thread_ttls().await.unwrap(), Swept::default());
}

#[tokio::test]
async fn a_thread_no_run_touched_is_deleted_by_its_ttl_too() {
    // It has no graph and no checkpoints; the sweeper used to leave it, warning that its graph
    // was not served.
    let (_dir, app) = app().await;
    let made = app.call("POST", "/threads", Some(json!({"ttl": SHORT}))).await;
    assert_eq!(made.status, StatusCode::OK, "{}", made.body);
    let tid = made.body["thread_id"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        app.manager.sweep_thread_ttls().await.unwrap(),
        Swept { deleted: 1, pruned: 0 }
    );
    assert_eq!(
        app.call("GET", &format!("/threads/{tid}"), None).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn keep_latest_prunes_a_thread_to_its_last_checkpoint_and_keeps_its_state() {
    let (_dir, app) = app().await;
    let tid = ran_thread(&app, json!({"ttl": SHORT, "strategy": "keep_latest"})).await;
    let before = app.call("GET", &format!("/threads/{tid}/state"), None).await.body;
    assert_eq!(
        app.manager.sweep_thread_ttls().await.unwrap(),
        Swept { deleted: 0, pruned: 1 }
    );
    assert_eq!(app.checkpoints(&tid).await, 1);
    let after = app.call("GET", &format!("/threads/{tid}/state"), None).await.body;
    assert_eq!(after["values"], before["values"]);
    assert_eq!(after["checkpoint"], before["checkpoint"]);
}

#[tokio::test]
async fn a_patched_ttl_replaces_the_threads_and_a_patch_restarts_its_clock() {
    let (_dir, app) = app().await;
    let tid = ran_thread(&app, json!(600)).await;
    assert_eq!(app.manager.sweep_thread_ttls().await.unwrap(), Swept::default());
    let patched = app
        .call(
            "PATCH",
            &format!("/threads/{tid}"),
            Some(json!({"metadata": {}, "ttl": SHORT})),
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK, "{}", patched.body);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(app.manager.sweep_thread_ttls().await.unwrap().deleted, 1);
}

#[tokio::test]
async fn a_busy_thread_outlives_its_ttl_until_its_run_ends() {
    let (_dir, app) = app().await;
    let made = app
        .call(
            "POST",
            "/threads",
            Some(json!({"metadata": {"graph_id": "gated"}, "ttl": SHORT})),
        )
        .await;
    let tid = made.body["thread_id"].as_str().unwrap().to_owned();
    let run = app
        .call(
            "POST",
            &format!("/threads/{tid}/runs"),
            Some(json!({"input": {"topic": "x", "log": []}, "assistant_id": "gated"})),
        )
        .await;
    assert_eq!(run.status, StatusCode::OK, "{}", run.body);
    app.gate.entered.notified().await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(app.manager.sweep_thread_ttls().await.unwrap(), Swept::default());
    app.gate.release();
    let rid = run.body["run_id"].as_str().unwrap();
    app.call("GET", &format!("/threads/{tid}/runs/{rid}/join"), None).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(app.manager.sweep_thread_ttls().await.unwrap().deleted, 1);
}

#[tokio::test]
async fn the_default_ttl_reaches_threads_made_by_a_run_and_by_a_copy() {
    let mut cfg = config();
    cfg.thread_ttl = Some(ThreadTtl {
        strategy: TtlStrategy::Delete,
        minutes: SHORT,
    });
    let (_dir, app) = app_with(cfg).await;
    let tid = uuid::Uuid::now_v7().to_string();
    let run = app
        .call(
            "POST",
            &format!("/threads/{tid}/runs/wait"),
            Some(json!({"input": {"topic": "x", "log": []}, "assistant_id": "chain", "if_not_exists": "create"})),
        )
        .await;
    assert_eq!(run.status, StatusCode::OK, "{}", run.body);
    app.until_checkpoints(&tid, 4).await;
    let copy = app.call("POST", &format!("/threads/{tid}/copy"), None).await;
    assert_eq!(copy.status, StatusCode::OK, "{}", copy.body);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(app.manager.sweep_thread_ttls().await.unwrap().deleted, 2);
}

#[tokio::test]
async fn a_bad_ttl_is_refused_naming_the_field_and_makes_no_thread() {
    let (_dir, app) = app().await;
    for (ttl, says) in [
        (json!(-1), "body field `ttl`: -1 is not a positive number of minutes"),
        (
            json!("soon"),
            "body field `ttl`: \"soon\" is not a positive number of minutes",
        ),
        // Past the cap, PostgreSQL's TTL sweep could not add it to a date (for every thread).
        (
            json!({"ttl": 1e12}),
            "body field `ttl.ttl`: 1000000000000.0 is not a positive number of minutes up to 2147483647",
        ),
        (json!({"strategy": "delete"}), "body field `ttl.ttl` is missing"),
        (
            json!({"ttl": 5, "strategy": "archive"}),
            "body field `ttl.strategy`: `archive` is not a TTL strategy",
        ),
        (json!({"ttl": 5, "when": 1}), "body field `ttl.when` is unknown"),
    ] {
        let r = app.call("POST", "/threads", Some(json!({"ttl": ttl}))).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{ttl}: {}", r.body);
        let detail = r.body["detail"].as_str().unwrap();
        assert!(detail.starts_with(says), "{ttl}: {detail}");
    }
    let count = app.call("POST", "/threads/count", Some(json!({}))).await;
    assert_eq!(count.body, json!(0));
}

#[tokio::test]
async fn a_thread_read_with_include_ttl_shows_its_ttl_and_when_it_expires() {
    let (_dir, app) = app().await;
    let tid = ran_thread(&app, json!({"ttl": 90, "strategy": "keep_latest"})).await;
    let read = app.call("GET", &format!("/threads/{tid}?include=ttl"), None).await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.body);
    let ttl = &read.body["ttl"];
    assert_eq!(
        (&ttl["strategy"], &ttl["ttl_minutes"]),
        (&json!("keep_latest"), &json!(90.0))
    );
    // 90 minutes after the thread's last change.
    let updated: jiff::Timestamp = read.body["updated_at"].as_str().unwrap().parse().unwrap();
    let expires: jiff::Timestamp = ttl["expires_at"].as_str().unwrap().parse().unwrap();
    assert_eq!(expires.duration_since(updated), jiff::SignedDuration::from_mins(90));
    // Not asked for, or no TTL: no `ttl` field.
    let plain = app.call("GET", &format!("/threads/{tid}"), None).await;
    assert!(plain.body.get("ttl").is_none(), "{}", plain.body);
    let made = app.call("POST", "/threads", Some(json!({}))).await;
    let none = made.body["thread_id"].as_str().unwrap();
    let read = app.call("GET", &format!("/threads/{none}?include=ttl"), None).await;
    assert_eq!(read.status, StatusCode::OK);
    assert!(read.body.get("ttl").is_none(), "{}", read.body);
    // A field there is no such thing as is named.
    let bad = app
        .call("GET", &format!("/threads/{tid}?include=ttl,colour"), None)
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        bad.body["detail"].as_str().unwrap().contains("`include`: `colour`"),
        "{}",
        bad.body
    );
}

/// A new assistant of the chain graph named `name`: its id.
async fn assistant(app: &App, name: &str) -> String {
    let made = app
        .call("POST", "/assistants", Some(json!({"graph_id": "chain", "name": name})))
        .await;
    assert_eq!(made.status, StatusCode::OK, "{}", made.body);
    made.body["assistant_id"].as_str().unwrap().to_owned()
}

/// A new thread that assistant `aid` ran on once: its id.
async fn thread_run_by(app: &App, aid: &str) -> String {
    let t = app.call("POST", "/threads", Some(json!({}))).await;
    let tid = t.body["thread_id"].as_str().unwrap().to_owned();
    let run = app
        .call(
            "POST",
            &format!("/threads/{tid}/runs/wait"),
            Some(json!({"input": {"topic": "x", "log": []}, "assistant_id": aid})),
        )
        .await;
    assert_eq!(run.status, StatusCode::OK, "{}", run.body);
    tid
}

#[tokio::test]
async fn deleting_an_assistant_with_delete_threads_deletes_the_threads_its_runs_were_made_on() {
    let (_dir, app) = app().await;
    let doomed = assistant(&app, "doomed").await;
    let mut its = Vec::new();
    for _ in 0..3 {
        let tid = thread_run_by(&app, &doomed).await;
        app.until_checkpoints(&tid, 4).await;
        its.push(tid);
    }
    // More than a page of them (100), some no run touched: metadata alone ties them.
    for _ in 0..120 {
        let t = app
            .call("POST", "/threads", Some(json!({"metadata": {"assistant_id": doomed}})))
            .await;
        its.push(t.body["thread_id"].as_str().unwrap().to_owned());
    }
    let other = ran_thread(&app, json!(600)).await;
    // A value that is no boolean is named; nothing is deleted.
    let bad = app
        .call("DELETE", &format!("/assistants/{doomed}?delete_threads=yes"), None)
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        bad.body["detail"].as_str().unwrap().contains("`delete_threads`"),
        "{}",
        bad.body
    );
    let gone = app
        .call("DELETE", &format!("/assistants/{doomed}?delete_threads=true"), None)
        .await;
    assert_eq!(gone.status, StatusCode::NO_CONTENT, "{}", gone.body);
    assert_eq!(
        app.call("GET", &format!("/assistants/{doomed}"), None).await.status,
        StatusCode::NOT_FOUND
    );
    for tid in &its {
        assert_eq!(
            app.call("GET", &format!("/threads/{tid}"), None).await.status,
            StatusCode::NOT_FOUND
        );
        assert_eq!(app.checkpoints(tid).await, 0);
    }
    let left = app
        .call(
            "POST",
            "/threads/count",
            Some(json!({"metadata": {"assistant_id": doomed}})),
        )
        .await;
    assert_eq!(left.body, json!(0));
    // The threads of another assistant stay.
    assert_eq!(
        app.call("GET", &format!("/threads/{other}"), None).await.status,
        StatusCode::OK
    );
    assert_eq!(app.checkpoints(&other).await, 4);
}

#[tokio::test]
async fn deleting_an_assistant_alone_leaves_its_threads() {
    let (_dir, app) = app().await;
    for query in ["", "?delete_threads=false"] {
        let retired = assistant(&app, "retired").await;
        let tid = thread_run_by(&app, &retired).await;
        let gone = app.call("DELETE", &format!("/assistants/{retired}{query}"), None).await;
        assert_eq!(gone.status, StatusCode::NO_CONTENT, "{query}");
        let kept = app.call("GET", &format!("/threads/{tid}"), None).await;
        assert_eq!(kept.status, StatusCode::OK, "{query}");
        assert_eq!(kept.body["metadata"]["assistant_id"], json!(retired));
    }
}
