//! The run manager's fidelity to LangGraph's server, through the real router, bridge and SQLite:
//! the 422 for an unknown graph name, a resume with nothing paused, the status of a run that
//! paused, `join_stream` with an empty `stream_mode`, a stateless `keep` run joined at once, and
//! the run's `durability`.

mod runs_support;

use axum::http::StatusCode;
use runs_support::{app, app_with, config, frames};
use serde_json::json;
use std::time::Duration;
use weir_server::model::{RunStatus, ThreadStatus};

#[tokio::test]
async fn an_unknown_graph_name_is_422_naming_it_and_an_unknown_uuid_is_404() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let r = app
        .call(
            "POST",
            &format!("/threads/{tid}/runs/wait"),
            Some(json!({"input": {"topic": "x"}, "assistant_id": "no_such_graph"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let detail = r.body["detail"].as_str().unwrap();
    assert!(detail.starts_with("Invalid assistant: 'no_such_graph'"), "{detail}");
    assert!(detail.contains("chain"), "the served graphs are listed: {detail}");
    let r = app
        .call(
            "POST",
            &format!("/threads/{tid}/runs/wait"),
            Some(json!({"input": {"topic": "x"}, "assistant_id": uuid::Uuid::new_v4().to_string()})),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert!(app.runs(&tid).await.is_empty(), "no run was stored");
}

#[tokio::test]
async fn a_resume_with_nothing_paused_answers_the_values_unchanged() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let path = format!("/threads/{tid}/runs/wait");
    let first = app
        .call(
            "POST",
            &path,
            Some(json!({"input": {"topic": "x"}, "assistant_id": "chain"})),
        )
        .await;
    assert_eq!(first.body, json!({"topic": "x", "log": ["a:x", "b"]}));
    let before = app.checkpoints(&tid).await;
    let r = app
        .call(
            "POST",
            &path,
            Some(json!({"command": {"resume": "yes"}, "assistant_id": "chain"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body, first.body, "no `__error__`, nothing ran again");
    let runs = app.runs(&tid).await;
    assert_eq!(runs[0].status, RunStatus::Success);
    assert_eq!(app.thread_row(&tid).await.unwrap().status, ThreadStatus::Idle);
    assert!(app.checkpoints(&tid).await <= before + 1, "no node ran");
}

/// As LangGraph's server: a state edit that leaves a node to run makes the thread
/// `interrupted` (it stayed `idle`), one that leaves none `idle`; the run that goes on from it
/// ends it `idle`.
#[tokio::test]
async fn a_state_edit_that_leaves_a_node_to_run_interrupts_the_thread() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let path = format!("/threads/{tid}/runs/wait");
    let body = json!({"input": {"topic": "x"}, "assistant_id": "chain"});
    app.call("POST", &path, Some(body)).await;
    let edit = |node: &str| Some(json!({"values": {"topic": "z"}, "as_node": node}));
    let r = app.call("POST", &format!("/threads/{tid}/state"), edit("a")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let row = app.thread_row(&tid).await.unwrap();
    assert_eq!(
        (row.status, &row.values["topic"]),
        (ThreadStatus::Interrupted, &json!("z"))
    );
    let again = app
        .call("POST", &path, Some(json!({"input": null, "assistant_id": "chain"})))
        .await;
    assert_eq!(again.body, json!({"topic": "z", "log": ["a:x", "b", "b"]}));
    assert_eq!(app.thread_row(&tid).await.unwrap().status, ThreadStatus::Idle);
    app.call("POST", &format!("/threads/{tid}/state"), edit("a")).await;
    app.call("POST", &format!("/threads/{tid}/state"), edit("b")).await;
    assert_eq!(app.thread_row(&tid).await.unwrap().status, ThreadStatus::Idle);
}

/// SEMANTICS G21: LangGraph resumes with any command. An answer at a static breakpoint, which
/// no `interrupt()` asked for, passes it and the run goes on (it used to end at once with the
/// thread still paused); so does a map of answers whose ids name no pause.
#[tokio::test]
async fn a_resume_at_a_static_breakpoint_passes_it() {
    let (_dir, app) = app().await;
    for resume in [json!("go"), json!({"0123456789abcdef0123456789abcdef": "go"})] {
        let tid = app.thread().await;
        let path = format!("/threads/{tid}/runs/wait");
        let body = json!({"input": {"topic": "x"}, "assistant_id": "chain", "interrupt_before": ["a"]});
        let paused = app.call("POST", &path, Some(body)).await;
        assert_eq!(paused.body, json!({"topic": "x", "log": [], "__interrupt__": []}));
        assert_eq!(app.thread_row(&tid).await.unwrap().status, ThreadStatus::Interrupted);
        let r = app
            .call(
                "POST",
                &path,
                Some(json!({"command": {"resume": resume}, "assistant_id": "chain"})),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.body, json!({"topic": "x", "log": ["a:x", "b"]}), "{resume}");
        assert_eq!(app.thread_row(&tid).await.unwrap().status, ThreadStatus::Idle);
    }
}

#[tokio::test]
async fn a_run_that_paused_is_a_success_and_its_thread_is_interrupted() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let r = app
        .call(
            "POST",
            &format!("/threads/{tid}/runs/wait"),
            Some(json!({"input": {"topic": "z"}, "assistant_id": "hitl"})),
        )
        .await;
    assert!(r.body["__interrupt__"].is_array());
    let rid = r.header("content-location").rsplit('/').next().unwrap().to_owned();
    assert_eq!(app.status(&tid, &rid).await, Some(RunStatus::Success));
    assert_eq!(app.thread_row(&tid).await.unwrap().status, ThreadStatus::Interrupted);
    // Joined again later, the run still answers its interrupt (from the thread).
    let again = app.call("GET", &format!("/threads/{tid}/runs/{rid}/join"), None).await;
    assert_eq!(again.body["__interrupt__"], r.body["__interrupt__"]);
}

#[tokio::test]
async fn join_stream_with_an_empty_stream_mode_sends_the_runs_own_modes() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let r = app
        .call(
            "POST",
            &format!("/threads/{tid}/runs"),
            Some(json!({"input": {"topic": "j"}, "assistant_id": "gated", "stream_mode": ["values", "updates"]})),
        )
        .await;
    let rid = r.body["run_id"].as_str().unwrap().to_owned();
    app.gate.entered.notified().await;
    let res = app
        .open(
            "GET",
            &format!("/threads/{tid}/runs/{rid}/stream?cancel_on_disconnect=false&stream_mode="),
            None,
            &[("last-event-id", "-1")],
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    app.gate.release();
    let events = frames(res.into_body()).await;
    let names: Vec<&str> = events.iter().map(|(e, _, _)| e.as_str()).collect();
    assert!(names.contains(&"values") && names.contains(&"updates"), "{names:?}");
    assert!(events
        .iter()
        .any(|(e, d, _)| e == "updates" && *d == json!({"slow": {"log": ["slow:j"]}})));
}

#[tokio::test]
async fn a_stateless_keep_run_joined_at_once_answers_its_values_every_time() {
    // A dispatcher that polls all the time claims a run as soon as it is queued, while the API
    // is still marking its thread busy: the window where that write could land after the run's
    // end and put back the new thread's `null` values. (The window is narrow; this guards it
    // without forcing it, so it is a regression check rather than a proof.)
    let mut config = config();
    config.poll = Duration::from_millis(1);
    let (_dir, app) = app_with(config).await;
    for i in 0..30 {
        let topic = format!("k{i}");
        let r = app
            .call(
                "POST",
                "/runs",
                Some(json!({"input": {"topic": topic}, "assistant_id": "chain", "on_completion": "keep"})),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK);
        let (tid, rid) = (
            r.body["thread_id"].as_str().unwrap(),
            r.body["run_id"].as_str().unwrap(),
        );
        let out = app.call("GET", &format!("/threads/{tid}/runs/{rid}/join"), None).await;
        let want = json!({"topic": topic, "log": [format!("a:{topic}"), "b"]});
        assert_eq!(out.body, want, "run {i}");
        let thread = app.thread_row(tid).await.unwrap();
        assert_eq!(thread.values, want, "run {i}: the thread row keeps the run's values");
        assert_eq!(thread.status, ThreadStatus::Idle, "run {i}");
    }
}

#[tokio::test]
async fn durability_exit_writes_only_the_last_checkpoint_and_a_bad_word_is_422() {
    let (_dir, app) = app().await;
    let mut counts = Vec::new();
    for durability in ["sync", "async", "exit"] {
        let tid = app.thread().await;
        let r = app
            .call(
                "POST",
                &format!("/threads/{tid}/runs/wait"),
                Some(json!({"input": {"topic": "d"}, "assistant_id": "chain", "durability": durability})),
            )
            .await;
        assert_eq!(r.body, json!({"topic": "d", "log": ["a:d", "b"]}), "{durability}");
        counts.push(app.checkpoints(&tid).await);
    }
    assert_eq!(
        counts[0], counts[1],
        "sync and async write the same checkpoints: {counts:?}"
    );
    assert_eq!(counts[2], 1, "exit writes the last one only: {counts:?}");
    // The older `checkpoint_during: false` is `exit` when `durability` is absent, as LangGraph's
    // server decides it; the run's kwargs keep both, with `feedback_keys` and `temporary`.
    let kept = |run: &serde_json::Value| {
        let k = &run["kwargs"];
        json!([
            k["durability"],
            k["checkpoint_during"],
            k["feedback_keys"],
            k["temporary"]
        ])
    };
    let tid = app.thread().await;
    let body =
        json!({"input": {"topic": "d"}, "assistant_id": "chain", "checkpoint_during": false, "feedback_keys": ["k"]});
    let r = app.call("POST", &format!("/threads/{tid}/runs"), Some(body)).await;
    assert_eq!(kept(&r.body), json!(["exit", false, ["k"], false]), "{}", r.body);
    let run_id = r.body["run_id"].as_str().unwrap();
    app.call("GET", &format!("/threads/{tid}/runs/{run_id}/join"), None)
        .await;
    assert_eq!(app.checkpoints(&tid).await, 1);
    let stateless = json!({"input": {"topic": "d"}, "assistant_id": "chain"});
    let r = app.call("POST", "/runs", Some(stateless)).await;
    let want = json!(["async", true, null, true]);
    assert_eq!(kept(&r.body), want, "a stateless run's thread is temporary: {}", r.body);
    let tid = app.thread().await;
    let r = app
        .call(
            "POST",
            &format!("/threads/{tid}/runs"),
            Some(json!({"input": {"topic": "d"}, "assistant_id": "chain", "durability": "sometimes"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.body["detail"].as_str().unwrap().contains("durability"), "{}", r.body);
}

#[tokio::test]
async fn a_rollback_waits_for_the_cancelled_runs_checkpoint_writes_so_none_lands_after_it() {
    let (_dir, app) = app().await;
    rollback_rounds(&app).await;
}

/// The same on a PostgreSQL checkpointer, which stores nothing in place: with async durability
/// `a`'s checkpoint is in the run's background writer when the node reaches the gate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
async fn a_rollback_on_postgres_waits_for_the_cancelled_runs_background_writes() {
    let schema = weir_test_support::Schema::fresh("weir_runs_fidelity");
    let saver = weir::checkpoint::PostgresSaver::connect_with_schema(&schema.url, &schema.name)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (db, _) = runs_support::open(&dir.path().join("weir.db")).await;
    let app = runs_support::app_on(db, std::sync::Arc::new(saver), config()).await;
    rollback_rounds(&app).await;
}

/// Twenty rounds of: a `gated` run cancelled with `action=rollback&wait=1` as its node reaches
/// the gate; the thread must have no checkpoint then, nor a moment later.
async fn rollback_rounds(app: &runs_support::App) {
    for i in 0..20 {
        let tid = app.thread().await;
        let r = app
            .call(
                "POST",
                &format!("/threads/{tid}/runs"),
                Some(json!({"input": {"topic": "r"}, "assistant_id": "gated", "durability": "async"})),
            )
            .await;
        let rid = r.body["run_id"].as_str().unwrap().to_owned();
        // At the gate, `a`'s checkpoint may still be in the run's background writer.
        app.gate.entered.notified().await;
        let c = app
            .call(
                "POST",
                &format!("/threads/{tid}/runs/{rid}/cancel?action=rollback&wait=1"),
                None,
            )
            .await;
        assert_eq!(c.status, StatusCode::OK);
        // The run's writes were settled before the rollback deleted them: none is left, and
        // none comes later (the stopped run has ended by now).
        assert_eq!(app.checkpoints(&tid).await, 0, "round {i}");
        tokio::task::yield_now().await;
        assert_eq!(app.checkpoints(&tid).await, 0, "round {i}, later");
    }
}

/// A local HTTP listener that hands each POSTed JSON body to the test; its URL.
async fn listener() -> (String, tokio::sync::mpsc::Receiver<serde_json::Value>) {
    let (tx, rx) = tokio::sync::mpsc::channel(8);
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |axum::Json(body): axum::Json<serde_json::Value>| {
            let tx = tx.clone();
            async move {
                tx.send(body).await.unwrap();
                StatusCode::OK
            }
        }),
    );
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", tcp.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(tcp, app).await.unwrap() });
    (url, rx)
}

#[tokio::test]
async fn a_webhook_gets_the_ended_run_posted_on_a_thread_and_stateless() {
    let (_dir, app) = app().await;
    let (url, mut posted) = listener().await;
    let tid = app.thread().await;
    let r = app
        .call(
            "POST",
            &format!("/threads/{tid}/runs/wait"),
            Some(json!({"input": {"topic": "w"}, "assistant_id": "chain", "webhook": url})),
        )
        .await;
    let rid = r.header("content-location").rsplit('/').next().unwrap().to_owned();
    let run = posted.recv().await.unwrap();
    assert_eq!(run["run_id"], rid.as_str());
    assert_eq!(run["thread_id"], tid.as_str());
    assert_eq!(run["status"], "success");
    let r = app
        .call(
            "POST",
            "/runs/wait",
            Some(json!({"input": {"topic": "w"}, "assistant_id": "failing", "webhook": url})),
        )
        .await;
    assert!(r.body["__error__"].is_object());
    let run = posted.recv().await.unwrap();
    assert_eq!(
        run["status"], "error",
        "a stateless run's webhook comes before its thread goes"
    );
}

#[tokio::test]
async fn with_webhooks_turned_off_a_run_runs_and_sends_none() {
    let (_dir, app) = app_with(weir_server::runs::ManagerConfig {
        webhooks: false,
        ..config()
    })
    .await;
    let (url, mut posted) = listener().await;
    let tid = app.thread().await;
    let body = json!({"input": {"topic": "w"}, "assistant_id": "chain", "webhook": url});
    let r = app.call("POST", &format!("/threads/{tid}/runs/wait"), Some(body)).await;
    assert_eq!(r.body["log"], json!(["a:w", "b"]));
    // The webhook is sent, when it is, before the run's stream ends: none is on its way.
    let late = tokio::time::timeout(Duration::from_millis(300), posted.recv()).await;
    assert!(late.is_err(), "a webhook was sent: {late:?}");
}

#[tokio::test]
async fn a_webhook_that_fails_changes_nothing_about_the_run() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    for url in ["http://127.0.0.1:1/nobody", "ftp://example.invalid/x", "not a url"] {
        let r = app
            .call(
                "POST",
                &format!("/threads/{tid}/runs/wait"),
                Some(json!({"input": {"topic": "f"}, "assistant_id": "chain", "webhook": url})),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{url}");
        assert_eq!(r.body["topic"], "f", "{url}");
    }
}

fn is_uuid(s: &str) -> bool {
    uuid::Uuid::parse_str(s).is_ok_and(|u| u.hyphenated().to_string() == s)
}

/// `(name, id)` of a task.
type Named = (String, String);

/// The `(name, id)` of each task in `events`' `tasks` events, and of each checkpoint's tasks.
fn task_ids(events: &[(String, serde_json::Value, Option<String>)]) -> (Vec<Named>, Vec<Named>) {
    let pair = |t: &serde_json::Value| {
        (
            t["name"].as_str().unwrap().to_owned(),
            t["id"].as_str().unwrap().to_owned(),
        )
    };
    let tasks = events
        .iter()
        .filter(|(e, _, _)| e == "tasks")
        .map(|(_, d, _)| pair(d))
        .collect();
    let checkpoints = events
        .iter()
        .filter(|(e, _, _)| e == "checkpoints")
        .flat_map(|(_, d, _)| d["tasks"].as_array().unwrap().iter().map(pair))
        .collect();
    (tasks, checkpoints)
}

// Over HTTP, a task has one UUID id, LangGraph's: its `tasks` start and result, the checkpoint
// its step starts from, `GET /threads/{id}/state`, the thread's `interrupts` key and the resumed
// run's `tasks` events all show the same one.
#[tokio::test]
async fn a_task_has_one_uuid_id_in_its_events_the_checkpoints_the_state_and_the_resume() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let body = json!({"input": {"topic": "u"}, "assistant_id": "hitl", "stream_mode": ["tasks", "checkpoints"]});
    let res = app
        .open("POST", &format!("/threads/{tid}/runs/stream"), Some(body), &[])
        .await;
    let (tasks, checkpoints) = task_ids(&frames(res.into_body()).await);
    let names: Vec<&str> = tasks.iter().map(|(n, _)| n.as_str()).collect();
    // `a`'s start and result, `ask`'s start (it paused: no result).
    assert_eq!(names, ["a", "a", "ask"]);
    let (a, ask) = (&tasks[0].1, &tasks[2].1);
    assert!(is_uuid(a) && is_uuid(ask), "{tasks:?}");
    assert_eq!(tasks[1].1, *a, "the start and the result share the id");
    assert_ne!(a, ask);
    assert_eq!(
        checkpoints[1..],
        [("a".to_owned(), a.clone()), ("ask".to_owned(), ask.clone())]
    );
    assert_eq!(checkpoints[0].0, "__start__");
    assert!(is_uuid(&checkpoints[0].1));

    let state = app.call("GET", &format!("/threads/{tid}/state"), None).await.body;
    assert_eq!(state["tasks"][0]["name"], "ask");
    assert_eq!(state["tasks"][0]["id"], json!(ask));
    let thread = app.call("GET", &format!("/threads/{tid}"), None).await.body;
    let keys: Vec<&String> = thread["interrupts"].as_object().unwrap().keys().collect();
    assert_eq!(keys, [ask], "the thread's interrupts are keyed by the task's id");

    let body = json!({"command": {"resume": "yes"}, "assistant_id": "hitl", "stream_mode": ["tasks"]});
    let res = app
        .open("POST", &format!("/threads/{tid}/runs/stream"), Some(body), &[])
        .await;
    let (tasks, _) = task_ids(&frames(res.into_body()).await);
    assert_eq!(
        tasks,
        [("ask".to_owned(), ask.clone()), ("ask".to_owned(), ask.clone())]
    );
}
