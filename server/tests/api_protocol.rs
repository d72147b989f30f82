//! LangGraph's thread-centric streaming protocol through the real router: `run.start` and
//! `input.respond` on `POST /threads/{thread_id}/commands`, and the thread's events on
//! `POST /threads/{thread_id}/stream/events`, filtered by channel and resumed after a `since`;
//! every refusal an envelope or a `{"detail"}` naming what is wrong; embedded, and on PostgreSQL
//! and Redis with the run in a worker of another process's. The official client's view (SSE and
//! WebSocket) is `tests/sdk/test_protocol.py`.

mod runs_support;

use axum::http::StatusCode;
use runs_support::{chatbot, config, next_chunk, open, parse_frames, App, Tables, HUNG};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use weir_server::graph::Serve;

async fn app() -> (tempfile::TempDir, App) {
    let dir = tempfile::tempdir().unwrap();
    let (db, saver) = open(&dir.path().join("weir.db")).await;
    let app = runs_support::app_on_with(db, saver, config(), |saver| {
        BTreeMap::from([("chatbot".to_owned(), chatbot().into_served(saver.clone()))])
    })
    .await;
    (dir, app)
}

fn new_thread() -> String {
    uuid::Uuid::new_v4().to_string()
}

async fn command<D: Tables>(app: &App<D>, tid: &str, id: u64, method: &str, params: Value) -> Value {
    let reply = app
        .call(
            "POST",
            &format!("/threads/{tid}/commands"),
            Some(json!({"id": id, "method": method, "params": params})),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{method}: {:?}", reply.body);
    assert_eq!(reply.body["id"], id);
    reply.body
}

/// `run.start` of `assistant_id` on the thread with `input`: its answer.
async fn start<D: Tables>(app: &App<D>, tid: &str, id: u64, assistant_id: &str, input: Value) -> Value {
    let params = json!({"assistant_id": assistant_id, "input": input});
    command(app, tid, id, "run.start", params).await
}

/// The thread's protocol events (the SSE `data` envelopes) with `body` as the request, read
/// until `enough` says so; each SSE `id:` is checked to be its envelope's `seq`.
async fn events_until<D: Tables>(
    app: &App<D>,
    tid: &str,
    body: Value,
    enough: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let res = app
        .open("POST", &format!("/threads/{tid}/stream/events"), Some(body), &[])
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["content-type"], "text/event-stream; charset=utf-8");
    let mut body = res.into_body();
    let mut text = String::new();
    let read = async {
        loop {
            let events: Vec<Value> = parse_frames(&text)
                .into_iter()
                .map(|(event, data, id)| {
                    assert_eq!(data["method"], event.as_str());
                    assert_eq!(id.as_deref(), Some(data["seq"].to_string().as_str()));
                    data
                })
                .collect();
            if enough(&events) {
                return events;
            }
            let chunk = next_chunk(&mut body).await.expect("the thread's stream does not end");
            text.push_str(&chunk);
        }
    };
    tokio::time::timeout(HUNG, read).await.expect("the events never came")
}

/// Whether the root graph's lifecycle said `event`.
fn root_said(event: &str) -> impl Fn(&[Value]) -> bool + '_ {
    move |events| {
        events.iter().any(|e| {
            e["method"] == "lifecycle" && e["params"]["namespace"] == json!([]) && e["params"]["data"]["event"] == event
        })
    }
}

fn methods(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["method"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn a_run_started_by_command_streams_on_its_thread_from_start_to_end_and_resumes_after_since() {
    let (_dir, app) = app().await;
    let tid = new_thread();
    let started = start(&app, &tid, 1, "chain", json!({"topic": "x"})).await;
    assert_eq!(started["type"], "success", "{started}");
    assert_eq!(started["meta"], json!({"applied_through_seq": 0}));
    let run_id = started["result"]["run_id"].as_str().unwrap().to_owned();
    assert_eq!(
        app.runs(&tid).await[0].run_id,
        run_id,
        "the thread was made with its run"
    );

    let body = json!({"channels": ["lifecycle", "values", "updates"]});
    let events = events_until(&app, &tid, body.clone(), root_said("completed")).await;
    assert_eq!(
        methods(&events),
        [
            "lifecycle",
            "values",
            "updates",
            "values",
            "updates",
            "values",
            "lifecycle"
        ]
    );
    assert_eq!(
        events[0]["params"]["data"],
        json!({"event": "running", "graph_name": "chain"})
    );
    assert_eq!(events[0]["event_id"], format!("synth:{run_id}:lc||running"));
    assert_eq!(events[2]["params"]["node"], "a");
    assert_eq!(events[2]["params"]["data"], json!({"log": ["a:x"]}));
    assert_eq!(events[5]["params"]["data"], json!({"topic": "x", "log": ["a:x", "b"]}));
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    assert!(
        events[1]["event_id"].as_str().unwrap().contains('-'),
        "a run's own event is named after its id on the bus: {}",
        events[1]["event_id"]
    );

    // Another connection replays the same events with the same seqs and ids; after `since`,
    // only those that follow.
    let again = events_until(&app, &tid, body.clone(), root_said("completed")).await;
    assert_eq!(
        again.iter().map(|e| &e["event_id"]).collect::<Vec<_>>(),
        events.iter().map(|e| &e["event_id"]).collect::<Vec<_>>()
    );
    let since = seqs[3];
    let mut resumed_body = body;
    resumed_body["since"] = json!(since);
    let resumed = events_until(&app, &tid, resumed_body, root_said("completed")).await;
    assert_eq!(resumed[0]["seq"].as_u64(), Some(seqs[4]));
    assert_eq!(resumed.len(), events.len() - 4);

    // A filter on one channel gets that channel only.
    let lifecycle = events_until(&app, &tid, json!({"channels": ["lifecycle"]}), root_said("completed")).await;
    assert_eq!(methods(&lifecycle), ["lifecycle", "lifecycle"]);

    // A run from an earlier checkpoint (a fork): the one written after `a`, from which `b` runs
    // again.
    let checkpoints = events_until(&app, &tid, json!({"channels": ["checkpoints"]}), |e| e.len() >= 3).await;
    let after_a = checkpoints
        .iter()
        .map(|e| &e["params"]["data"])
        .find(|c| c["step"] == 1)
        .expect("the checkpoint after `a`");
    assert_eq!(after_a["source"], "loop");
    let fork = json!({"assistant_id": "chain", "config": {"configurable": {"checkpoint_id": after_a["id"]}}});
    assert_eq!(command(&app, &tid, 2, "run.start", fork).await["type"], "success");
    let both = events_until(&app, &tid, json!({"channels": ["lifecycle", "updates"]}), |e| {
        e.iter().filter(|e| e["params"]["data"]["event"] == "completed").count() == 2
    })
    .await;
    let second_run: Vec<&Value> = both
        .iter()
        .skip_while(|e| e["params"]["data"]["event"] != "completed")
        .skip(1)
        .collect();
    let nodes: Vec<&Value> = second_run
        .iter()
        .filter(|e| e["method"] == "updates")
        .map(|e| &e["params"]["node"])
        .collect();
    assert_eq!(nodes, [&json!("b")], "the fork ran `b` only");
}

#[tokio::test]
async fn an_interrupt_is_requested_on_the_input_channel_and_answered_by_input_respond() {
    let (_dir, app) = app().await;
    let tid = new_thread();
    start(&app, &tid, 1, "hitl", json!({"topic": "y"})).await;
    let watch = json!({"channels": ["input", "lifecycle"]});
    let events = events_until(&app, &tid, watch.clone(), root_said("interrupted")).await;
    assert_eq!(methods(&events), ["lifecycle", "input.requested", "lifecycle"]);
    let request = &events[1]["params"]["data"];
    assert_eq!(request["payload"], json!({"question": "ok?"}));
    let interrupt_id = request["interrupt_id"].as_str().unwrap().to_owned();

    let wrong = command(
        &app,
        &tid,
        2,
        "input.respond",
        json!({"interrupt_id": "nope", "response": "yes"}),
    )
    .await;
    assert_eq!(wrong["error"], "no_such_interrupt", "{wrong}");
    assert!(wrong["message"].as_str().unwrap().contains("nope"));
    let bad = command(
        &app,
        &tid,
        3,
        "input.respond",
        json!({"interrupt_id": interrupt_id, "namespace": "root"}),
    )
    .await;
    assert_eq!(bad["error"], "invalid_argument", "{bad}");
    assert_eq!(app.runs(&tid).await.len(), 1, "a refused answer starts nothing");

    let answered = command(
        &app,
        &tid,
        4,
        "input.respond",
        json!({"interrupt_id": interrupt_id, "namespace": [], "response": "yes", "strict_resume": true}),
    )
    .await;
    assert_eq!(answered["type"], "success", "{answered}");
    assert_eq!(answered["result"], json!({}));
    assert!(
        app.runs(&tid).await[0].kwargs.strict_resume,
        "the JS client's strict_resume is the run's"
    );
    let events = events_until(&app, &tid, watch, root_said("completed")).await;
    assert_eq!(
        methods(&events),
        ["lifecycle", "input.requested", "lifecycle", "lifecycle", "lifecycle"]
    );
    assert_eq!(events[3]["params"]["data"]["event"], "running");
    let state = app.call("GET", &format!("/threads/{tid}/state"), None).await;
    assert_eq!(state.body["values"]["log"], json!(["a:y", "ask:yes"]));
    let again = command(
        &app,
        &tid,
        5,
        "input.respond",
        json!({"interrupt_id": interrupt_id, "response": "no"}),
    )
    .await;
    assert_eq!(again["error"], "no_such_interrupt", "an answer is taken once: {again}");

    // `run.start` with input on a thread that waits on an interrupt resumes it, as LangGraph's.
    let tid = new_thread();
    start(&app, &tid, 1, "hitl", json!({"topic": "z"})).await;
    events_until(&app, &tid, json!({"channels": ["lifecycle"]}), root_said("interrupted")).await;
    let resumed = start(&app, &tid, 2, "hitl", json!("no")).await;
    assert_eq!(resumed["type"], "success", "{resumed}");
    events_until(&app, &tid, json!({"channels": ["lifecycle"]}), root_said("completed")).await;
    let state = app.call("GET", &format!("/threads/{tid}/state"), None).await;
    assert_eq!(state.body["values"]["log"], json!(["a:z", "ask:no"]));
}

#[tokio::test]
async fn a_models_tokens_are_content_block_deltas_between_a_message_start_and_finish() {
    let (_dir, app) = app().await;
    let tid = new_thread();
    let input = json!({"messages": [{"type": "human", "content": "hi"}]});
    start(&app, &tid, 1, "chatbot", input).await;
    let events = events_until(
        &app,
        &tid,
        json!({"channels": ["messages", "lifecycle"]}),
        root_said("completed"),
    )
    .await;
    let messages: Vec<&Value> = events
        .iter()
        .filter(|e| e["method"] == "messages")
        .map(|e| &e["params"]["data"])
        .collect();
    assert_eq!(messages[0]["event"], "message-start");
    assert_eq!(messages[0]["role"], "ai");
    assert_eq!(
        messages[1],
        &json!({"event": "content-block-start", "index": 0, "content": {"type": "text", "text": ""}})
    );
    let text: String = messages
        .iter()
        .filter(|m| m["event"] == "content-block-delta")
        .map(|m| m["delta"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "hello there friend");
    let n = messages.len();
    assert_eq!(
        messages[n - 2],
        &json!({"event": "content-block-finish", "index": 0, "content": {"type": "text", "text": "hello there friend"}})
    );
    assert_eq!(messages[n - 1]["event"], "message-finish");
    // The human message of the input is state, not a model's message: values carry it.
    let values = events_until(
        &app,
        &tid,
        json!({"channels": ["values", "lifecycle"]}),
        root_said("completed"),
    )
    .await;
    let last = values.iter().rev().find(|e| e["method"] == "values").unwrap();
    let kinds: Vec<&str> = last["params"]["data"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["human", "ai"]);
    assert!(
        last["params"]["data"]["messages"][1].get("additional_kwargs").is_none(),
        "messages in the protocol's shape"
    );
}

#[tokio::test]
async fn a_failed_run_is_failed_with_its_error() {
    let (_dir, app) = app().await;
    let tid = new_thread();
    start(&app, &tid, 1, "failing", json!({"topic": "x"})).await;
    let events = events_until(&app, &tid, json!({"channels": ["lifecycle"]}), root_said("failed")).await;
    let failed = &events.last().unwrap()["params"]["data"];
    assert_eq!(failed["event"], "failed");
    assert_eq!(failed["error"], "boom in node");
}

#[tokio::test]
async fn commands_that_are_wrong_say_what_is_wrong() {
    let (_dir, app) = app().await;
    let tid = new_thread();
    let path = format!("/threads/{tid}/commands");
    let res = app.open("POST", &path, None, &[]).await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let reply = app.call("POST", &path, Some(json!({"method": "run.start"}))).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(reply.body["error"], "invalid_argument");
    assert!(reply.body["message"].as_str().unwrap().contains("integer id"));

    let unknown = command(&app, &tid, 1, "run.stop", json!({})).await;
    assert_eq!(unknown["error"], "unknown_command");
    assert_eq!(unknown["message"], "Unknown protocol command: run.stop");
    let no_assistant = command(&app, &tid, 2, "run.start", json!({"input": {}})).await;
    assert_eq!(no_assistant["error"], "invalid_argument");
    assert_eq!(no_assistant["message"], "run.start requires an assistant_id.");
    let missing = start(&app, &tid, 3, "nope", json!({})).await;
    assert_eq!(missing["error"], "unknown_error");
    assert!(missing["message"].as_str().unwrap().contains("nope"), "{missing}");
    let bad_checkpoint = command(
        &app,
        &tid,
        4,
        "run.start",
        json!({"assistant_id": "chain", "config": {"configurable": {"checkpoint_id": "x"}}}),
    )
    .await;
    assert_eq!(bad_checkpoint["error"], "invalid_argument");
    let wrong_input = start(&app, &tid, 5, "chain", json!({"topic": 5})).await;
    assert_eq!(wrong_input["error"], "unknown_error");
    assert!(
        wrong_input["message"].as_str().unwrap().contains("topic"),
        "{wrong_input}"
    );
    let no_thread = command(
        &app,
        &tid,
        6,
        "input.respond",
        json!({"interrupt_id": "i", "response": 1}),
    )
    .await;
    assert_eq!(no_thread["error"], "no_such_run", "{no_thread}");
    assert!(app.runs(&tid).await.is_empty(), "nothing refused left a run");

    // What needs a connection that follows the thread: a request is none.
    let sub = command(&app, &tid, 7, "subscription.subscribe", json!({"channels": ["values"]})).await;
    assert_eq!(sub["type"], "success");
    assert_eq!(sub["result"]["replayed_events"], 0);
    let bad_sub = command(&app, &tid, 8, "subscription.subscribe", json!({"channels": ["debug"]})).await;
    assert_eq!(bad_sub["error"], "invalid_argument");
    assert!(bad_sub["message"].as_str().unwrap().contains("debug"));
    let unsub = command(
        &app,
        &tid,
        9,
        "subscription.unsubscribe",
        json!({"subscription_id": "s"}),
    )
    .await;
    assert_eq!(unsub["error"], "no_such_subscription");
    let tree = command(&app, &tid, 10, "agent.getTree", json!({})).await;
    assert_eq!(tree["error"], "no_such_run");
}

#[tokio::test]
async fn the_event_stream_refuses_bad_bodies_and_unknown_threads() {
    let (_dir, app) = app().await;
    let tid = app.thread().await;
    let path = format!("/threads/{tid}/stream/events");
    let res = app.open("POST", &path, None, &[]).await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let reply = app.call("POST", &path, Some(json!({"channels": []}))).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        reply.body["detail"],
        "channels is required and must be a non-empty array"
    );
    let reply = app
        .call("POST", &path, Some(json!({"channels": ["values", "debug"]})))
        .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert!(reply.body["detail"]
        .as_str()
        .unwrap()
        .contains("unsupported entries: debug"));
    let other = new_thread();
    let reply = app
        .call(
            "POST",
            &format!("/threads/{other}/stream/events"),
            Some(json!({"channels": ["values"]})),
        )
        .await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    assert_eq!(reply.body["detail"], format!("Thread {other} not found"));
}

/// Scaled out, the events come from the run's stream on Redis, fanned out to another process
/// than the worker's: an API process with no worker streams a run of a worker process, and
/// answers its interrupt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL and Redis: set WEIR_POSTGRES_URL and WEIR_REDIS_URL, run with --include-ignored"]
async fn scaled_out_an_api_process_streams_and_answers_a_run_of_a_worker_process() {
    use std::sync::Arc;
    use weir::checkpoint::PostgresSaver;
    use weir_runtime::postgres::PoolOptions;
    use weir_server::bus::redis::RedisBus;
    use weir_server::db::postgres::PostgresDb;

    let schema = weir_test_support::Schema::fresh("weir_protocol_test");
    let redis = std::env::var("WEIR_REDIS_URL").expect("WEIR_REDIS_URL names the Redis server");
    let prefix = format!("weir-test-{}", uuid::Uuid::new_v4().simple());
    let process = |workers: usize| {
        let (schema, redis, prefix) = (&schema, redis.clone(), prefix.clone());
        async move {
            let saver = PostgresSaver::connect_with_schema(&schema.url, &schema.name)
                .await
                .unwrap();
            let db = PostgresDb::connect_with(&schema.url, PoolOptions::new().size(4).schema(&schema.name))
                .await
                .unwrap();
            db.fence_checkpoints().await.unwrap();
            let bus = RedisBus::options().prefix(prefix).connect(&redis).await.unwrap();
            let mut config = config();
            config.workers = workers;
            runs_support::app_on_bus(
                Arc::new(db),
                Arc::new(saver),
                config,
                |_| BTreeMap::new(),
                Arc::new(bus),
            )
            .await
        }
    };
    let worker = process(2).await;
    let api = process(0).await;
    let tid = new_thread();
    start(&api, &tid, 1, "hitl", json!({"topic": "s"})).await;
    let watch = json!({"channels": ["input", "lifecycle", "updates"]});
    let events = events_until(&api, &tid, watch.clone(), root_said("interrupted")).await;
    let request = events.iter().find(|e| e["method"] == "input.requested").unwrap();
    let interrupt_id = request["params"]["data"]["interrupt_id"].clone();
    let answer = json!({"interrupt_id": interrupt_id, "response": "yes"});
    assert_eq!(command(&api, &tid, 2, "input.respond", answer).await["type"], "success");
    let events = events_until(&api, &tid, watch, root_said("completed")).await;
    let nodes: Vec<&Value> = events
        .iter()
        .filter(|e| e["method"] == "updates")
        .map(|e| &e["params"]["node"])
        .collect();
    assert_eq!(nodes, [&json!("a"), &json!("ask")]);
    let statuses: Vec<_> = worker.runs(&tid).await.iter().map(|r| r.status).collect();
    use weir_server::model::RunStatus;
    // A run that paused on an interrupt ended well (its thread waits), as LangGraph's.
    assert_eq!(statuses, [RunStatus::Success, RunStatus::Success]);
    worker.manager.shutdown().await;
    api.manager.shutdown().await;
}
