//! Rejoining a run's stream (`GET …/runs/{rid}/stream`): replay after `Last-Event-ID` (`-1`:
//! all), the mode filter, heartbeats while nothing happens, `cancel_on_disconnect`; and a
//! restart: a new manager on the same tables and SQLite file resumes the run left running.

mod runs_support;

use runs_support::{app, app_on, app_with, config, frames, next_chunk, open, parse_frames};
use serde_json::json;
use std::time::Duration;
use weir_server::db::RunQueue;
use weir_server::model::RunStatus;

#[tokio::test]
async fn join_stream_replays_after_last_event_id_and_minus_one_replays_all() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let body =
        json!({"input": {"topic": "r"}, "assistant_id": "chain", "stream_mode": ["updates"], "stream_resumable": true});
    let res = app
        .open("POST", &format!("/threads/{tid}/runs/stream"), Some(body), &[])
        .await;
    let loc = res.headers()["content-location"].to_str().unwrap().to_owned();
    let first = frames(res.into_body()).await;
    assert_eq!(first.len(), 3);
    let all = app
        .open("GET", &format!("{loc}/stream"), None, &[("last-event-id", "-1")])
        .await;
    assert_eq!(all.headers()["content-location"].to_str().unwrap(), loc);
    assert_eq!(frames(all.into_body()).await, first);
    let after = first[1].2.clone().unwrap();
    let rest = app
        .open(
            "GET",
            &format!("{loc}/stream"),
            None,
            &[("last-event-id", after.as_str())],
        )
        .await;
    assert_eq!(frames(rest.into_body()).await, first[2..]);
}

#[tokio::test]
async fn join_stream_follows_a_live_run_and_filters_by_stream_mode() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let body = json!({"input": {"topic": "l"}, "assistant_id": "gated", "stream_mode": ["values", "updates"]});
    let r = app.call("POST", &format!("/threads/{tid}/runs"), Some(body)).await;
    let rid = r.body["run_id"].as_str().unwrap();
    app.gate.entered.notified().await;
    let res = app
        .open(
            "GET",
            &format!("/threads/{tid}/runs/{rid}/stream?stream_mode=updates"),
            None,
            &[("last-event-id", "-1")],
        )
        .await;
    app.gate.release();
    let events = frames(res.into_body()).await;
    let names: Vec<&str> = events.iter().map(|(e, _, _)| e.as_str()).collect();
    assert_eq!(names, ["metadata", "updates", "updates"]);
    assert_eq!(events[2].1, json!({"slow": {"log": ["slow:l"]}}));

    // Several modes, repeated as the SDK sends a list (this was a 422: "duplicate field").
    let both = app
        .open(
            "GET",
            &format!("/threads/{tid}/runs/{rid}/stream?stream_mode=updates&stream_mode=values"),
            None,
            &[("last-event-id", "-1")],
        )
        .await;
    let events = frames(both.into_body()).await;
    let names: Vec<&str> = events.iter().map(|(e, _, _)| e.as_str()).collect();
    assert_eq!(names, ["metadata", "values", "updates", "values", "updates", "values"]);
}

#[tokio::test]
async fn a_quiet_stream_sends_heartbeats() {
    let mut cfg = config();
    cfg.sse_heartbeat = Duration::from_millis(20);
    let (dir, app) = app_with(cfg).await;
    let tid = app.thread().await;
    let body = json!({"input": {"topic": "h"}, "assistant_id": "gated", "stream_mode": "updates"});
    let res = app
        .open("POST", &format!("/threads/{tid}/runs/stream"), Some(body), &[])
        .await;
    let mut body = res.into_body();
    let mut text = String::new();
    while !text.contains(": heartbeat\r\n\r\n") {
        text.push_str(&next_chunk(&mut body).await.unwrap());
    }
    app.gate.release();
    while let Some(chunk) = next_chunk(&mut body).await {
        text.push_str(&chunk);
    }
    let names: Vec<String> = parse_frames(&text).into_iter().map(|(e, _, _)| e).collect();
    assert_eq!(names, ["metadata", "updates", "updates"]);
    drop(dir);
}

#[tokio::test]
async fn dropping_a_join_stream_with_cancel_on_disconnect_stops_the_run() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let r = app
        .call(
            "POST",
            &format!("/threads/{tid}/runs"),
            Some(json!({"input": {"topic": "c"}, "assistant_id": "gated"})),
        )
        .await;
    let rid = r.body["run_id"].as_str().unwrap();
    app.gate.entered.notified().await;
    let res = app
        .open(
            "GET",
            &format!("/threads/{tid}/runs/{rid}/stream?cancel_on_disconnect=true"),
            None,
            &[("last-event-id", "-1")],
        )
        .await;
    let mut body = res.into_body();
    assert!(next_chunk(&mut body).await.unwrap().starts_with("event: metadata"));
    drop(body);
    app.call("GET", &format!("/threads/{tid}/runs/{rid}/join"), None).await;
    assert_eq!(app.status(&tid, rid).await, Some(RunStatus::Interrupted));
}

#[tokio::test]
async fn a_new_manager_on_the_same_tables_and_sqlite_file_resumes_the_run_left_running() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weir.db");
    let (db, saver) = open(&path).await;
    let first = app_on(db.clone(), saver, config()).await;
    let tid = first.thread().await;
    let r = first
        .call(
            "POST",
            &format!("/threads/{tid}/runs"),
            Some(json!({"input": {"topic": "x"}, "assistant_id": "gated"})),
        )
        .await;
    let rid = r.body["run_id"].as_str().unwrap().to_owned();
    first.gate.entered.notified().await;
    first.until_checkpoints(&tid, 3).await;
    // The process stops: no grace, so the run is stopped mid-node and put back in the queue.
    first.manager.shutdown().await;
    assert_eq!(first.status(&tid, &rid).await, Some(RunStatus::Pending));
    drop(first);

    // The run is `running` under a worker that is gone, as after a crash.
    assert_eq!(db.claim("dead-worker").await.unwrap().unwrap().run_id, rid);
    drop(db);
    // A new process: the tables and the checkpoints opened again from the file.
    let (db, saver) = open(&path).await;
    let second = app_on(db, saver, config()).await;
    second.gate.entered.notified().await;
    second.gate.release();
    let joined = second
        .call("GET", &format!("/threads/{tid}/runs/{rid}/join"), None)
        .await;
    // `a` ran once: the run went on from its last checkpoint instead of taking its input again.
    assert_eq!(joined.body, json!({"topic": "x", "log": ["a:x", "slow:x"]}));
    assert_eq!(second.status(&tid, &rid).await, Some(RunStatus::Success));
}

#[tokio::test]
async fn joining_the_stream_of_a_run_whose_replay_expired_ends_at_once() {
    let (dir, app) = app().await;
    let tid = app.thread().await;
    let body = json!({"input": {"topic": "e"}, "assistant_id": "chain"});
    let r = app.call("POST", &format!("/threads/{tid}/runs/wait"), Some(body)).await;
    let loc = r.header("content-location").to_owned();
    // Another server on the same tables (a scaled-out API process, say): its bus never held the
    // run's stream.
    let saver = weir::checkpoint::SqliteSaver::open(dir.path().join("weir.db")).unwrap();
    let other = app_on(app.db.clone(), std::sync::Arc::new(saver), config()).await;
    let res = other
        .open("GET", &format!("{loc}/stream"), None, &[("last-event-id", "-1")])
        .await;
    assert!(frames(res.into_body()).await.is_empty());
    // The process that ran it still replays it.
    let res = app
        .open("GET", &format!("{loc}/stream"), None, &[("last-event-id", "-1")])
        .await;
    let names: Vec<String> = frames(res.into_body()).await.into_iter().map(|(e, _, _)| e).collect();
    assert_eq!(names, ["metadata", "values", "values", "values"]);
}

/// Reads a thread stream's events from `body` until `enough` holds of them.
async fn thread_events(
    body: &mut axum::body::Body,
    enough: impl Fn(&[(String, serde_json::Value, Option<String>)]) -> bool,
) -> Vec<(String, serde_json::Value, Option<String>)> {
    let mut text = String::new();
    loop {
        let events = parse_frames(&text);
        if enough(&events) {
            return events;
        }
        let chunk = tokio::time::timeout(Duration::from_secs(30), next_chunk(body)).await;
        text.push_str(
            &chunk
                .expect("the thread stream went quiet")
                .expect("the thread stream ended"),
        );
    }
}

fn run_done(rid: &str) -> (String, serde_json::Value) {
    ("metadata".to_owned(), json!({"status": "run_done", "run_id": rid}))
}

#[tokio::test]
async fn a_thread_stream_follows_the_run_running_as_it_comes_then_those_queued_behind_it() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let make = |graph: &str, topic: &str| json!({"input": {"topic": topic}, "assistant_id": graph});
    let running = app
        .call("POST", &format!("/threads/{tid}/runs"), Some(make("gated", "x")))
        .await;
    let running = running.body["run_id"].as_str().unwrap().to_owned();
    app.gate.entered.notified().await;
    let queued = app
        .call("POST", &format!("/threads/{tid}/runs"), Some(make("chain", "y")))
        .await;
    let queued = queued.body["run_id"].as_str().unwrap().to_owned();

    let res = app.open("GET", &format!("/threads/{tid}/stream"), None, &[]).await;
    assert_eq!(res.status(), 200);
    let mut body = res.into_body();
    // A run made once the client is there.
    let later = app
        .call("POST", &format!("/threads/{tid}/runs"), Some(make("chain", "z")))
        .await;
    let later = later.body["run_id"].as_str().unwrap().to_owned();
    app.gate.release();
    let done = |rid: &str| {
        let end = run_done(rid);
        move |events: &[(String, serde_json::Value, Option<String>)]| {
            events.iter().any(|(e, d, _)| (e, d) == (&end.0, &end.1))
        }
    };
    let events = thread_events(&mut body, done(&later)).await;
    let seen: Vec<(String, serde_json::Value)> = events.iter().map(|(e, d, _)| (e.clone(), d.clone())).collect();

    // The running run from the client's coming on: its last values, then its end.
    assert_eq!(seen[0].0, "values");
    assert_eq!(seen[0].1["log"], json!(["a:x", "slow:x"]));
    assert_eq!(seen[1], run_done(&running));
    // The queued one and the later one whole, each after the one before it ended.
    let start = |rid: &str| ("metadata".to_owned(), json!({"run_id": rid, "attempt": 1}));
    assert_eq!(seen[2], start(&queued));
    let at_later = seen.iter().position(|p| *p == start(&later)).unwrap();
    assert_eq!(seen[at_later - 1], run_done(&queued));
    assert_eq!(seen.last(), Some(&run_done(&later)));
    assert_eq!(seen.iter().filter(|(e, _)| e == "metadata").count(), 5, "{seen:?}");
    assert!(
        events.iter().all(|(_, _, id)| id.is_some()),
        "every event carries its id: {events:?}"
    );

    // The state edited: the stream stays open, and tells `state_update` clients only.
    let res = app
        .open(
            "GET",
            &format!("/threads/{tid}/stream?stream_mode=state_update"),
            None,
            &[],
        )
        .await;
    let mut edits = res.into_body();
    let edited = app
        .call(
            "POST",
            &format!("/threads/{tid}/state"),
            Some(json!({"values": {"topic": "w"}})),
        )
        .await;
    assert_eq!(edited.status, 200, "{}", edited.body);
    let events = thread_events(&mut edits, |events| !events.is_empty()).await;
    assert_eq!(events[0].0, "state_update");
    assert_eq!(events[0].1["thread_id"], json!(tid));
    assert_eq!(events[0].1["state"]["values"]["topic"], json!("w"));
    assert_eq!(
        events[0].1["state"]["checkpoint"]["checkpoint_id"],
        edited.body["checkpoint_id"]
    );
    let after = tokio::time::timeout(Duration::from_millis(200), next_chunk(&mut body)).await;
    assert!(after.is_err(), "the run_modes client got the edit: {after:?}");
}
