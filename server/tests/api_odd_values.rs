//! Every field of the bodies the API takes, given values of the wrong kind or out of range, one
//! field at a time, on a real server (embedded, and scaled out): each answer is a success or a
//! 4xx whose `detail` says what is wrong, never a 500 or a dropped connection, and the server goes
//! on answering. The same for every query parameter of the reads, and for `Last-Event-ID`. And
//! URLs holding NUL, which no database takes. And every field of `/mcp`'s messages, answered with a
//! result or a JSON-RPC error that says why; and of the streaming protocol's commands and event
//! streams, answered with a success, an error envelope or a 4xx that says why.

mod api_support;

use api_support::{serve, serve_scaled_out, Client, Reply};
use serde_json::{json, Value};
use std::time::Duration;

/// The values each field is given in turn.
fn odd_values() -> Vec<Value> {
    vec![
        Value::Null,
        json!(true),
        json!(-1),
        json!(0),
        json!(3.5),
        json!(1e300),
        json!(u64::MAX),
        json!(""),
        json!("x"),
        json!("nul \u{0} inside"),
        json!("é".repeat(3_000)),
        json!([]),
        json!([1, "a", null, {}]),
        json!({}),
        json!({"a": {"b": [{}]}}),
    ]
}

/// A step into a JSON value.
#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Index(usize),
}

/// Every path into `v`, `v` itself first.
fn paths(v: &Value, at: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    out.push(at.clone());
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                at.push(Step::Key(k.clone()));
                paths(child, at, out);
                at.pop();
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                at.push(Step::Index(i));
                paths(child, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

/// `v` with the value at `path` replaced by `new`.
fn replaced(v: &Value, path: &[Step], new: &Value) -> Value {
    let Some((first, rest)) = path.split_first() else {
        return new.clone();
    };
    let mut out = v.clone();
    let child = match (first, &mut out) {
        (Step::Key(k), Value::Object(map)) => map.get_mut(k),
        (Step::Index(i), Value::Array(items)) => items.get_mut(*i),
        _ => None,
    };
    if let Some(child) = child {
        *child = replaced(child, rest, new);
    }
    out
}

fn shown(path: &[Step]) -> String {
    let mut s = String::from("$");
    for step in path {
        match step {
            Step::Key(k) => s.push_str(&format!(".{k}")),
            Step::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

/// What is wrong with `reply`, if anything: a 5xx, or a 4xx without a `detail`.
fn fault(reply: &Reply) -> Option<String> {
    let detail = reply.body["detail"].as_str().unwrap_or_default();
    match reply.status {
        200..=299 => None,
        400..=499 if !detail.is_empty() => None,
        status => Some(format!("{status} {}", reply.body)),
    }
}

/// Fails listing `faults` if there are any (or if fewer than `least` requests were `sent`: the
/// test would test less than it says); checks the server still answers.
async fn judge(client: &Client, faults: &[String], sent: usize, least: usize) {
    assert!(sent >= least, "only {sent} requests");
    assert!(
        faults.is_empty(),
        "{} of {sent} requests:\n{}",
        faults.len(),
        faults.join("\n")
    );
    assert_eq!(client.get("/ok").await.status, 200, "the server still answers");
}

/// Sends `body` as JSON, with `headers` besides; a request that hangs fails the test. An event
/// stream it opens is taken as it starts (its body `null`): such a stream ends when its client
/// leaves, not before.
async fn send(client: &Client, method: &str, path: &str, headers: &[(&str, &str)], body: &Value) -> Reply {
    let bytes = body.to_string().into_bytes();
    let headers: Vec<(&str, &str)> = [("content-type", "application/json")]
        .into_iter()
        .chain(headers.iter().copied())
        .collect();
    let answer = async {
        let res = client.open(method, path, &headers, bytes).await;
        let streams = res
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if res.status() == 200 && streams {
            let (status, headers) = (200, res.headers().clone());
            return Reply {
                status,
                headers,
                body: Value::Null,
            };
        }
        Reply::read(res).await
    };
    tokio::time::timeout(Duration::from_secs(60), answer)
        .await
        .unwrap_or_else(|_| panic!("{method} {path} with {headers:?} and {body} did not answer within a minute"))
}

/// A thread that has run once, its head checkpoint, and an assistant of its own.
async fn setup(client: &Client) -> (String, String, String) {
    let thread = client.post("/threads", json!({})).await;
    let tid = thread.body["thread_id"].as_str().unwrap().to_owned();
    let ran = client
        .post(
            &format!("/threads/{tid}/runs/wait"),
            json!({"assistant_id": "chain", "input": {"topic": "x"}}),
        )
        .await;
    assert_eq!(ran.status, 200, "{}", ran.body);
    let state = client.get(&format!("/threads/{tid}/state")).await;
    let cid = state.body["checkpoint"]["checkpoint_id"].as_str().unwrap().to_owned();
    let assistant = client
        .post("/assistants", json!({"graph_id": "chain", "name": "mine"}))
        .await;
    let aid = assistant.body["assistant_id"].as_str().unwrap().to_owned();
    (tid, cid, aid)
}

/// The requests: a valid body of each kind the API takes.
fn requests(tid: &str, cid: &str, aid: &str) -> Vec<(&'static str, String, Value)> {
    let run = json!({
        "assistant_id": "chain",
        "input": {"topic": "x"},
        "config": {"recursion_limit": 10, "configurable": {"k": "v"}, "tags": ["t"]},
        "metadata": {"k": "v"},
        "context": {},
        "stream_mode": ["values", "updates"],
        "stream_subgraphs": false,
        "interrupt_before": ["b"],
        "interrupt_after": [],
        "multitask_strategy": "enqueue",
        "durability": "async",
        "checkpoint": {"checkpoint_id": cid, "checkpoint_ns": ""},
        "after_seconds": 0,
        "if_not_exists": "reject",
        "on_disconnect": "continue",
        "feedback_keys": ["f"],
    });
    let resume = json!({
        "assistant_id": "chain",
        "command": {"resume": "yes", "goto": "b"},
        "checkpoint_id": cid,
    });
    let stateless = json!({
        "assistant_id": "chain",
        "input": {"topic": "x"},
        "stream_mode": "updates",
        "on_completion": "delete",
        "config": {"configurable": {"k": "v"}},
    });
    vec![
        (
            "POST",
            "/threads".into(),
            json!({"thread_id": "0b7f1e70-5d1e-4a43-9a4e-7c1d2f3a4b5c", "metadata": {"k": "v"},
                   "if_exists": "do_nothing", "ttl": {"ttl": 5, "strategy": "delete"}}),
        ),
        (
            "POST",
            "/threads".into(),
            json!({"metadata": {"graph_id": "chain"},
                   "supersteps": [{"updates": [{"values": {"topic": "s"}, "as_node": "a"}]}]}),
        ),
        (
            "POST",
            "/threads/search".into(),
            json!({"metadata": {"k": "v"}, "values": {"topic": "x"}, "status": "idle", "ids": [tid],
                   "limit": 10, "offset": 0, "sort_by": "created_at", "sort_order": "desc",
                   "select": ["thread_id"]}),
        ),
        (
            "POST",
            "/threads/count".into(),
            json!({"metadata": {"k": "v"}, "status": "idle"}),
        ),
        (
            // No thread of the others': an id no thread has.
            "POST",
            "/threads/prune".into(),
            json!({"thread_ids": ["6f1e0b7a-5d1e-4a43-9a4e-7c1d2f3a4b5c"], "strategy": "keep_latest"}),
        ),
        (
            "PATCH",
            format!("/threads/{tid}"),
            json!({"metadata": {"k": "v"}, "ttl": 5}),
        ),
        (
            "POST",
            format!("/threads/{tid}/state"),
            json!({"values": {"topic": "y"}, "as_node": "a", "checkpoint": {"checkpoint_id": cid}}),
        ),
        (
            "POST",
            format!("/threads/{tid}/state/checkpoint"),
            json!({"checkpoint": {"checkpoint_id": cid, "checkpoint_ns": ""}, "subgraphs": true}),
        ),
        (
            "POST",
            format!("/threads/{tid}/history"),
            json!({"limit": 5, "before": {"checkpoint_id": cid}, "metadata": {"step": 1},
                   "checkpoint": {"checkpoint_ns": ""}}),
        ),
        ("POST", format!("/threads/{tid}/runs/wait"), run.clone()),
        ("POST", format!("/threads/{tid}/runs/stream"), run.clone()),
        ("POST", format!("/threads/{tid}/runs"), resume),
        ("POST", "/runs/wait".into(), stateless.clone()),
        ("POST", "/runs/stream".into(), stateless),
        (
            "POST",
            "/runs/batch".into(),
            json!([{"assistant_id": "chain", "input": {"topic": "x"}, "metadata": {"k": "v"}},
                   {"assistant_id": "chain", "input": {"topic": "y"}, "thread_id": tid}]),
        ),
        (
            "POST",
            "/runs/crons".into(),
            json!({"assistant_id": "chain", "schedule": "0 9 * * *", "timezone": "Europe/Paris",
                   "end_time": "2030-01-01T00:00:00+00:00", "enabled": true, "on_run_completed": "keep",
                   "input": {"topic": "x"}, "metadata": {"k": "v"}, "stream_mode": "values"}),
        ),
        (
            "POST",
            format!("/threads/{tid}/runs/crons"),
            json!({"assistant_id": "chain", "schedule": "0 9 * * * 30", "input": {"topic": "x"},
                   "multitask_strategy": "enqueue", "interrupt_before": ["b"]}),
        ),
        (
            "PATCH",
            "/runs/crons/0b7f1e70-5d1e-4a43-9a4e-7c1d2f3a4b5c".into(),
            json!({"schedule": "0 10 * * *", "timezone": "UTC", "end_time": null, "enabled": false,
                   "metadata": {"k": "v"}, "input": {"topic": "y"}, "webhook": null}),
        ),
        (
            "POST",
            "/runs/crons/search".into(),
            json!({"assistant_id": "chain", "thread_id": tid, "enabled": true, "metadata": {"k": "v"},
                   "limit": 10, "offset": 0, "sort_by": "next_run_date", "sort_order": "asc",
                   "select": ["cron_id"]}),
        ),
        (
            "POST",
            "/runs/crons/count".into(),
            json!({"assistant_id": "chain", "thread_id": tid, "metadata": {"k": "v"}}),
        ),
        (
            "POST",
            "/runs/cancel".into(),
            json!({"thread_id": tid, "run_ids": ["0b7f1e70-5d1e-4a43-9a4e-7c1d2f3a4b5c"]}),
        ),
        // Every run with a status, on any thread: never beside a thread's runs.
        ("POST", "/runs/cancel".into(), json!({"status": "pending"})),
        (
            "POST",
            "/assistants".into(),
            json!({"graph_id": "chain", "assistant_id": "6b1c9a62-0f43-4b8e-9d6a-2f1e3c4d5a6b",
                   "config": {"configurable": {"k": "v"}}, "context": {}, "metadata": {"k": "v"},
                   "name": "n", "description": "d", "if_exists": "do_nothing"}),
        ),
        (
            "POST",
            "/assistants/search".into(),
            json!({"graph_id": "chain", "name": "mine", "metadata": {"k": "v"}, "limit": 10,
                   "offset": 0, "sort_by": "created_at", "sort_order": "asc",
                   "select": ["assistant_id"]}),
        ),
        (
            "POST",
            "/assistants/count".into(),
            json!({"graph_id": "chain", "metadata": {}, "name": "m"}),
        ),
        (
            "PATCH",
            format!("/assistants/{aid}"),
            json!({"graph_id": "chain", "config": {}, "context": {}, "metadata": {"k": "v"}, "name": "m",
                   "description": "e"}),
        ),
        (
            "POST",
            format!("/assistants/{aid}/versions"),
            json!({"limit": 5, "offset": 0, "metadata": {}}),
        ),
        ("POST", format!("/assistants/{aid}/latest"), json!({"version": 1})),
        (
            "PUT",
            "/store/items".into(),
            json!({"namespace": ["a", "b"], "key": "k", "value": {"v": 1}, "index": false, "ttl": 5}),
        ),
        (
            "POST",
            "/store/items/search".into(),
            json!({"namespace_prefix": ["a"], "filter": {"v": 1}, "limit": 10, "offset": 0,
                   "query": "q", "refresh_ttl": true}),
        ),
        (
            "POST",
            "/store/namespaces".into(),
            json!({"prefix": ["a"], "suffix": ["b"], "max_depth": 2, "limit": 10, "offset": 0}),
        ),
        (
            "DELETE",
            "/store/items".into(),
            json!({"namespace": ["a", "b"], "key": "k"}),
        ),
    ]
}

/// Sends every request with each field given each odd value; the faults found.
async fn odd_requests(client: &Client) {
    let (tid, cid, aid) = setup(client).await;
    let requests = requests(&tid, &cid, &aid);
    let bodies: Vec<(Target, Value)> = requests
        .iter()
        .map(|(method, path, body)| ((*method, path.as_str(), &[][..]), body.clone()))
        .collect();
    // A valid body is taken (a cancel of runs that do not exist is LangGraph's 404).
    let taken = |r: &Reply| (200..300).contains(&r.status) || r.status == 404;
    sweep_all(client, &bodies, taken, fault, 3_000).await;
}

/// A request: its method, its path and its headers besides the content type.
type Target<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);

/// Sends each of `bodies` as it is, which `taken` must accept, then [`sweep`]s it with `fault`
/// judging the answers; fails listing the faults, or if fewer than `least` requests were sent.
async fn sweep_all(
    client: &Client,
    bodies: &[(Target<'_>, Value)],
    taken: fn(&Reply) -> bool,
    fault: fn(&Reply) -> Option<String>,
    least: usize,
) {
    let mut faults = Vec::new();
    let mut sent = 0;
    for (target, body) in bodies {
        let (method, path, headers) = *target;
        let valid = send(client, method, path, headers, body).await;
        assert!(
            taken(&valid),
            "the valid {body} to {method} {path} is refused: {} {}",
            valid.status,
            valid.body
        );
        sent += sweep(client, *target, body, fault, &mut faults).await;
    }
    judge(client, &faults, sent, least).await;
}

/// Sends `body` to `target` with each of its fields given each odd value; adds what `fault`
/// finds wrong with the answers to `faults`. Returns how many requests it sent.
async fn sweep(
    client: &Client,
    (method, path, headers): Target<'_>,
    body: &Value,
    fault: fn(&Reply) -> Option<String>,
    faults: &mut Vec<String>,
) -> usize {
    let mut all = Vec::new();
    paths(body, &mut Vec::new(), &mut all);
    let mut sent = 0;
    for at in &all {
        for odd in odd_values() {
            let reply = send(client, method, path, headers, &replaced(body, at, &odd)).await;
            sent += 1;
            if let Some(fault) = fault(&reply) {
                let odd: String = odd.to_string().chars().take(40).collect();
                faults.push(format!("{method} {path} {} = {odd}: {fault}", shown(at)));
            }
        }
    }
    sent
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_body_field_given_odd_values_gets_an_answer_or_a_4xx_that_says_why() {
    odd_requests(&serve(None).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL and Redis: set WEIR_POSTGRES_URL and WEIR_REDIS_URL, run with --include-ignored"]
async fn scaled_out_every_body_field_given_odd_values_gets_an_answer_or_a_4xx_that_says_why() {
    odd_requests(&serve_scaled_out().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_holding_nul_is_a_422_that_says_where() {
    let client = serve(None).await;
    let (tid, _, _) = setup(&client).await;
    let reply = client.get("/store/items?namespace=a&key=k%00").await;
    assert_eq!(reply.status, 422);
    assert_eq!(
        reply.body["detail"],
        "query parameter `key`: holds the NUL character (%00), which the server does not store"
    );
    let reply = client.get(&format!("/threads/{tid}/state/a%00b")).await;
    assert_eq!(reply.status, 422);
    assert_eq!(
        reply.body["detail"],
        "the URL's path holds the NUL character (%00), which the server does not store"
    );
    let reply = client
        .post(
            &format!("/threads/{tid}/runs/wait"),
            json!({"assistant_id": "chain", "input": {"topic": "a\u{0}"}}),
        )
        .await;
    assert_eq!(reply.status, 422);
    assert_eq!(
        reply.body["detail"],
        r"body field `input.topic`: holds the NUL character (\u0000), which the server does not store"
    );
}

/// The values each query parameter is given in turn, as they go in a URL.
const ODD_PARAMS: [&str; 13] = [
    "",
    "-1",
    "0",
    "1e300",
    "18446744073709551616",
    "x",
    "true",
    "%5B%5D",
    "%7B%22a%22%3A1%7D",
    "a%20b",
    "%FF%FE",
    "..",
    "%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9",
];

/// A read: its method, path, and query parameters with valid values.
type Read = (&'static str, String, Vec<(&'static str, String)>);

async fn odd_queries(client: &Client) {
    let (tid, cid, aid) = setup(client).await;
    let runs = client.get(&format!("/threads/{tid}/runs")).await;
    let rid = runs.body[0]["run_id"].as_str().unwrap().to_owned();
    let reads: Vec<Read> = vec![
        ("GET", "/ok".into(), vec![("check_db", "1".into())]),
        ("GET", format!("/threads/{tid}"), vec![("include", "ttl".into())]),
        ("GET", format!("/assistants/{aid}/graph"), vec![("xray", "1".into())]),
        (
            "GET",
            format!("/assistants/{aid}/subgraphs"),
            vec![("recurse", "true".into()), ("namespace", "x".into())],
        ),
        (
            "GET",
            format!("/threads/{tid}/state"),
            vec![("subgraphs", "true".into())],
        ),
        (
            "GET",
            format!("/threads/{tid}/history"),
            vec![("limit", "5".into()), ("before", cid.clone())],
        ),
        (
            "GET",
            format!("/threads/{tid}/runs"),
            vec![
                ("limit", "5".into()),
                ("offset", "0".into()),
                ("status", "success".into()),
                ("select", "run_id".into()),
            ],
        ),
        ("GET", format!("/threads/{tid}/runs/{rid}/join"), vec![]),
        (
            "GET",
            format!("/threads/{tid}/runs/{rid}/stream"),
            vec![
                ("stream_mode", "values".into()),
                ("cancel_on_disconnect", "false".into()),
            ],
        ),
        (
            "POST",
            format!("/threads/{tid}/runs/{rid}/cancel"),
            vec![("wait", "0".into()), ("action", "interrupt".into())],
        ),
        (
            "GET",
            "/store/items".into(),
            vec![
                ("namespace", "a.b".into()),
                ("key", "k".into()),
                ("refresh_ttl", "true".into()),
            ],
        ),
        (
            "GET",
            format!("/studio/api/threads/{tid}/timeline"),
            vec![("limit", "5".into()), ("before", cid.clone())],
        ),
        (
            "GET",
            format!("/studio/api/threads/{tid}/checkpoint"),
            vec![("checkpoint_id", cid.clone())],
        ),
    ];
    let url = |path: &str, params: &[(&str, String)]| {
        let query: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{path}?{}", query.join("&"))
    };
    let mut faults = Vec::new();
    let mut sent = 0;
    for (method, path, params) in &reads {
        let mut variants = vec![url(path, params), format!("{}&zzz=1", url(path, params))];
        for i in 0..params.len() {
            for odd in ODD_PARAMS {
                let mut changed = params.clone();
                changed[i].1 = odd.to_owned();
                variants.push(url(path, &changed));
            }
            // The parameter twice, and alone without a value.
            variants.push(format!(
                "{}&{}",
                url(path, params),
                url("", &params[i..=i]).trim_start_matches('?')
            ));
            variants.push(format!("{path}?{}", params[i].0));
        }
        for target in variants {
            let reply = send(client, method, &target, &[], &Value::Null).await;
            sent += 1;
            if let Some(fault) = fault(&reply) {
                faults.push(format!("{method} {target}: {fault}"));
            }
        }
    }
    for last in [
        "",
        "x",
        "-1",
        "-",
        "1-",
        "99999999999999999999-0",
        "1-99999999999999999999",
        "%00",
    ] {
        let path = format!("/threads/{tid}/runs/{rid}/stream");
        let reply = send(client, "GET", &path, &[("last-event-id", last)], &Value::Null).await;
        sent += 1;
        if let Some(fault) = fault(&reply) {
            faults.push(format!("GET {path} with Last-Event-ID {last:?}: {fault}"));
        }
    }
    judge(client, &faults, sent, 330).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_query_parameter_given_odd_values_gets_an_answer_or_a_4xx_that_says_why() {
    odd_queries(&serve(None).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL and Redis: set WEIR_POSTGRES_URL and WEIR_REDIS_URL, run with --include-ignored"]
async fn scaled_out_every_query_parameter_given_odd_values_gets_an_answer_or_a_4xx_that_says_why() {
    odd_queries(&serve_scaled_out().await).await;
}

/// What is wrong with an answer of `/mcp`, if anything: a 5xx, an HTTP refusal without a JSON-RPC
/// error's message, or a 200 with neither a result nor an error's message.
fn mcp_fault(reply: &Reply) -> Option<String> {
    let message = reply.body["error"]["message"].as_str().unwrap_or_default();
    match reply.status {
        200 if reply.body.get("result").is_some() || !message.is_empty() => None,
        202 => None,
        400..=499 if !message.is_empty() => None,
        status => Some(format!("{status} {}", reply.body)),
    }
}

/// `/mcp`'s messages with each field given each odd value.
async fn odd_mcp(client: &Client) {
    let accept = [("accept", "application/json, text/event-stream")];
    let messages = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": "0"}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "chain", "arguments": {"topic": "x"}, "context": {}}}),
    ];
    let bodies = messages.map(|message| (("POST", "/mcp", &accept[..]), message));
    sweep_all(client, &bodies, |r| r.body.get("result").is_some(), mcp_fault, 300).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mcp_message_field_given_odd_values_gets_a_result_or_an_error_that_says_why() {
    odd_mcp(&serve(None).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL and Redis: set WEIR_POSTGRES_URL and WEIR_REDIS_URL, run with --include-ignored"]
async fn scaled_out_every_mcp_message_field_given_odd_values_gets_a_result_or_an_error_that_says_why() {
    odd_mcp(&serve_scaled_out().await).await;
}

/// What is wrong with an answer of the streaming protocol, if anything: a 5xx, a refusal with
/// neither an envelope's `message` nor a `detail`, or a 200 that is neither a success, an error
/// envelope with its message, nor an event stream (its body `null`, see [`send`]).
fn protocol_fault(reply: &Reply) -> Option<String> {
    let message = [&reply.body["message"], &reply.body["detail"]]
        .into_iter()
        .find_map(Value::as_str)
        .unwrap_or_default();
    match (reply.status, &reply.body["type"]) {
        (200, Value::Null) if reply.body.is_null() => None,
        (200, t) if t == "success" => None,
        (200, t) if t == "error" && !message.is_empty() => None,
        (400..=499, _) if !message.is_empty() => None,
        (status, _) => Some(format!("{status} {}", reply.body)),
    }
}

/// `POST /threads/{id}/commands` with each field of each command given each odd value, and
/// `POST /threads/{id}/stream/events` with each field of its filter.
async fn odd_protocol(client: &Client) {
    let tid = client.post("/threads", json!({})).await.body["thread_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let commands = format!("/threads/{tid}/commands");
    let events = format!("/threads/{tid}/stream/events");
    let bodies = [
        (
            &commands,
            json!({"id": 1, "method": "run.start", "params": {"assistant_id": "chain", "input": {"topic": "x"},
                   "config": {"configurable": {"k": "v"}, "recursion_limit": 10}, "metadata": {"k": "v"},
                   "multitaskStrategy": "enqueue"}}),
        ),
        (
            &commands,
            json!({"id": 2, "method": "input.respond",
                   "params": {"namespace": [], "interrupt_id": "i", "response": "yes"}}),
        ),
        (
            &commands,
            json!({"id": 3, "method": "input.respond",
                   "params": {"responses": [{"namespace": [], "interrupt_id": "i", "response": "yes"}]}}),
        ),
        (
            &commands,
            json!({"id": 4, "method": "subscription.subscribe",
                   "params": {"channels": ["values", "custom:x"], "namespaces": [["a"]], "depth": 1}}),
        ),
        (
            &commands,
            json!({"id": 5, "method": "subscription.unsubscribe", "params": {"subscription_id": "s"}}),
        ),
        (&commands, json!({"id": 6, "method": "agent.getTree", "params": {}})),
        (
            &events,
            json!({"channels": ["values", "custom:x"], "namespaces": [["a"]], "depth": 1, "since": 3}),
        ),
    ];
    let bodies = bodies.map(|(path, body)| (("POST", path.as_str(), &[][..]), body));
    let taken = |r: &Reply| protocol_fault(r).is_none();
    sweep_all(client, &bodies, taken, protocol_fault, 800).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_protocol_field_given_odd_values_gets_an_answer_or_an_error_that_says_why() {
    odd_protocol(&serve(None).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL and Redis: set WEIR_POSTGRES_URL and WEIR_REDIS_URL, run with --include-ignored"]
async fn scaled_out_every_protocol_field_given_odd_values_gets_an_answer_or_an_error_that_says_why() {
    odd_protocol(&serve_scaled_out().await).await;
}
