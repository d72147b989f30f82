//! The assistants routes, `/ok` (with `check_db`) and `/info`, and the API's edges (CORS, body limit, JSON errors)
//! over a real HTTP connection to an embedded server, with the shapes of `sdk_trace.txt`; the
//! threads and state routes are `api_threads.rs`'.

mod api_support;

use api_support::serve;
use serde_json::{json, Value};

const CHAIN_ID: &str = "608f7b9c-04e5-5cf2-a3f7-ba75a3719808";

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    k.sort_unstable();
    k
}

#[tokio::test]
async fn ok_and_info_answer_as_the_real_server() {
    let c = serve(None).await;
    let ok = c.get("/ok").await;
    assert_eq!((ok.status, ok.body), (200, json!({"ok": true, "services": {}})));
    let info = c.get("/info").await;
    assert_eq!(info.status, 200);
    assert_eq!(info.body["version"], "0.16.7");
    assert_eq!(info.body["flags"]["assistants"], true);
    assert_eq!(info.body["flags"]["strict_resume"], true);
}

#[tokio::test]
async fn ok_with_check_db_makes_a_round_trip_to_the_database() {
    let c = serve(None).await;
    let ok = c.get("/ok?check_db=1").await;
    assert_eq!(
        (ok.status, ok.body),
        (200, json!({"ok": true, "services": {"database": "healthy"}}))
    );
    assert_eq!(c.get("/ok?check_db=0").await.body, json!({"ok": true, "services": {}}));
    let bad = c.get("/ok?check_db=sometimes").await;
    assert_eq!(bad.status, 422);
    assert!(
        bad.body["detail"].as_str().unwrap().contains("`check_db`"),
        "{}",
        bad.body
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL and Redis: set WEIR_POSTGRES_URL and WEIR_REDIS_URL, run with --include-ignored"]
async fn scaled_out_ok_with_check_db_says_which_service_is_down() {
    // The server reaches Redis through a relay this test then stops: Redis is gone for it.
    let relay = weir_test_support::Relay::in_front_of(&api_support::redis_url()).await;
    let c = api_support::serve_scaled_out_with(&relay.url("redis")).await;
    let ok = c.get("/ok?check_db=1").await;
    assert_eq!(
        (ok.status, ok.body),
        (
            200,
            json!({"ok": true, "services": {"database": "healthy", "redis": "healthy"}})
        )
    );
    drop(relay);
    let started = std::time::Instant::now();
    let down = c.get("/ok?check_db=1").await;
    assert_eq!(
        (down.status, down.body),
        (
            500,
            json!({"ok": false, "services": {"database": "healthy", "redis": "unhealthy"}})
        )
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    // Without `check_db` the server answers that it is up, as before.
    assert_eq!(c.get("/ok").await.status, 200);
}

#[tokio::test]
async fn the_system_assistant_is_found_by_search_uuid_and_graph_name() {
    let c = serve(None).await;
    let all = c.post("/assistants/search", json!({"limit": 10, "offset": 0})).await;
    assert_eq!(all.status, 200);
    let a = &all.body[0];
    assert_eq!(all.body.as_array().unwrap().len(), 1);
    assert_eq!(
        keys(a),
        [
            "assistant_id",
            "config",
            "context",
            "created_at",
            "description",
            "graph_id",
            "metadata",
            "name",
            "updated_at",
            "version"
        ]
    );
    assert_eq!(a["assistant_id"], CHAIN_ID);
    assert_eq!(
        (&a["graph_id"], &a["name"], &a["version"]),
        (&json!("chain"), &json!("chain"), &json!(1))
    );
    assert_eq!(a["metadata"], json!({"created_by": "system"}));
    assert!(a["created_at"].as_str().unwrap().ends_with("+00:00"), "{a}");

    let system = c
        .post("/assistants/search", json!({"metadata": {"created_by": "system"}}))
        .await;
    assert_eq!(system.body.as_array().unwrap().len(), 1);
    let other = c.post("/assistants/search", json!({"graph_id": "nope"})).await;
    assert_eq!(other.body, json!([]));
    let selected = c.post("/assistants/search", json!({"select": ["assistant_id"]})).await;
    assert_eq!(selected.body, json!([{"assistant_id": CHAIN_ID}]));
    let unknown = c.post("/assistants/search", json!({"select": ["colour"]})).await;
    assert_eq!(unknown.status, 422);
    assert!(
        unknown.body["detail"]
            .as_str()
            .unwrap()
            .starts_with("body field `select`: `colour` is not a field; the fields are assistant_id, graph_id,"),
        "{}",
        unknown.body
    );

    assert_eq!(c.get(&format!("/assistants/{CHAIN_ID}")).await.body, *a);
    assert_eq!(c.get("/assistants/chain").await.body, *a);
    let count = c.post("/assistants/count", json!({"graph_id": "chain"})).await;
    assert_eq!((count.status, count.body), (200, json!(1)));
}

#[tokio::test]
async fn assistant_ids_that_are_not_uuids_are_422_and_unknown_ones_404() {
    let c = serve(None).await;
    let bad = c.get("/assistants/not-a-graph").await;
    assert_eq!(bad.status, 422);
    assert_eq!(
        bad.body["detail"],
        "path parameter `assistant_id`: `not-a-graph` is neither a UUID nor a served graph's name"
    );
    let unknown = c.get("/assistants/00000000-0000-0000-0000-000000000001").await;
    assert_eq!(unknown.status, 404);
    assert_eq!(
        unknown.body,
        json!({"detail": "Assistant 00000000-0000-0000-0000-000000000001 not found"})
    );
}

#[tokio::test]
async fn graph_schemas_and_subgraphs_come_from_the_served_graph() {
    let c = serve(None).await;
    let g = c.get("/assistants/chain/graph?xray=false").await;
    assert_eq!(g.status, 200);
    assert_eq!(
        g.body["nodes"][0],
        json!({"id": "__start__", "type": "runnable", "data": {"name": "__start__"}})
    );
    assert!(
        g.body["edges"]
            .as_array()
            .unwrap()
            .contains(&json!({"source": "a", "target": "b"})),
        "{}",
        g.body
    );
    assert_eq!(c.get("/assistants/chain/graph?xray=true").await.body, g.body);
    assert_eq!(c.get("/assistants/chain/graph?xray=2").await.body, g.body);
    let bad = c.get("/assistants/chain/graph?xray=deep").await;
    assert_eq!(bad.status, 422);
    assert!(bad.body["detail"].as_str().unwrap().contains("`xray`"), "{}", bad.body);

    let s = c.get(&format!("/assistants/{CHAIN_ID}/schemas")).await;
    assert_eq!(
        keys(&s.body),
        [
            "config_schema",
            "context_schema",
            "graph_id",
            "input_schema",
            "output_schema",
            "state_schema"
        ]
    );
    assert_eq!(
        (&s.body["graph_id"], &s.body["context_schema"]),
        (&json!("chain"), &Value::Null)
    );
    assert_eq!(keys(&s.body["state_schema"]["properties"]), ["log", "topic"]);
    let sub = c.get(&format!("/assistants/{CHAIN_ID}/subgraphs?recurse=false")).await;
    assert_eq!((sub.status, sub.body), (200, json!({})));
    let bad = c.get(&format!("/assistants/{CHAIN_ID}/subgraphs?recurse=maybe")).await;
    assert_eq!(bad.status, 422);
    assert!(bad.body["detail"].as_str().unwrap().contains("recurse"), "{}", bad.body);
}

#[tokio::test]
async fn studio_edits_an_assistant_and_its_version_goes_up() {
    let c = serve(None).await;
    let made = c
        .post(
            "/assistants",
            json!({"graph_id": "chain", "name": "mine", "config": {"tags": ["x"]}, "metadata": {"k": 1}}),
        )
        .await;
    assert_eq!(made.status, 200, "{}", made.body);
    let id = made.body["assistant_id"].as_str().unwrap().to_owned();
    assert_eq!((&made.body["name"], &made.body["version"]), (&json!("mine"), &json!(1)));
    let again = c
        .post("/assistants", json!({"graph_id": "chain", "assistant_id": id}))
        .await;
    assert_eq!(again.status, 409);
    let same = c
        .post(
            "/assistants",
            json!({"graph_id": "chain", "assistant_id": id, "if_exists": "do_nothing"}),
        )
        .await;
    assert_eq!(same.body, made.body);
    let unknown = c.post("/assistants", json!({"graph_id": "nope"})).await;
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.body["detail"], "Graph nope not found; served graphs are chain");

    let patched = c
        .patch(
            &format!("/assistants/{id}"),
            json!({"metadata": {"j": 2}, "name": "ours"}),
        )
        .await;
    assert_eq!(patched.body["version"], 2);
    assert_eq!(patched.body["name"], "ours");
    assert_eq!(patched.body["metadata"], json!({"k": 1, "j": 2}));
    assert_eq!(patched.body["config"], json!({"tags": ["x"]}));
    let versions = c.post(&format!("/assistants/{id}/versions"), json!({})).await;
    assert_eq!(versions.body, json!([patched.body, made.body]));
    assert_eq!(c.post("/assistants/count", json!({})).await.body, json!(2));

    assert_eq!(c.delete(&format!("/assistants/{id}")).await.status, 204);
    assert_eq!(c.get(&format!("/assistants/{id}")).await.status, 404);
    let gone = c.post(&format!("/assistants/{id}/versions"), json!({})).await;
    assert_eq!(gone.status, 404);
}

#[tokio::test]
async fn latest_goes_back_to_any_version_and_a_patch_then_makes_the_next_number() {
    let c = serve(None).await;
    let made = c
        .post(
            "/assistants",
            json!({"graph_id": "chain", "name": "v1", "metadata": {"team": "t1"}}),
        )
        .await;
    let id = made.body["assistant_id"].as_str().unwrap().to_owned();
    let path = format!("/assistants/{id}");
    c.patch(&path, json!({"name": "v2", "metadata": {"team": "t2"}})).await;
    c.patch(&path, json!({"name": "v3"})).await;

    let back = c.post(&format!("{path}/latest"), json!({"version": 1})).await;
    assert_eq!(
        (back.status, &back.body["name"], &back.body["version"]),
        (200, &json!("v1"), &json!(1))
    );
    let current = c.get(&path).await.body;
    assert_eq!((&current["name"], &current["version"]), (&json!("v1"), &json!(1)));
    assert_eq!(current["metadata"], json!({"team": "t1"}));

    let next = c.patch(&path, json!({"name": "v4"})).await;
    assert_eq!(next.body["version"], 4);
    let names = |r: &Value| -> Vec<(i64, String)> {
        r.as_array()
            .unwrap()
            .iter()
            .map(|v| (v["version"].as_i64().unwrap(), v["name"].as_str().unwrap().to_owned()))
            .collect()
    };
    let all = c.post(&format!("{path}/versions"), json!({})).await;
    assert_eq!(
        names(&all.body),
        [(4, "v4".into()), (3, "v3".into()), (2, "v2".into()), (1, "v1".into())]
    );
    let page = c
        .post(&format!("{path}/versions"), json!({"limit": 2, "offset": 1}))
        .await;
    assert_eq!(names(&page.body), [(3, "v3".into()), (2, "v2".into())]);
    let t2 = c
        .post(&format!("{path}/versions"), json!({"metadata": {"team": "t2"}}))
        .await;
    // v4 was made from v1, the current one then: its metadata is v1's.
    assert_eq!(names(&t2.body), [(3, "v3".into()), (2, "v2".into())]);

    let missing = c.post(&format!("{path}/latest"), json!({"version": 9})).await;
    assert_eq!(
        (missing.status, missing.body),
        (404, json!({"detail": format!("Version 9 of assistant {id} not found")}))
    );
}

#[tokio::test]
async fn bad_thread_ids_bodies_and_paths_get_json_errors() {
    let c = serve(None).await;
    let bad_id = c.get("/threads/xyz").await;
    assert_eq!(
        (bad_id.status, bad_id.body),
        (
            422,
            json!({"detail": "path parameter `thread_id`: `xyz` is not a UUID"})
        )
    );
    let unknown = c.get("/threads/00000000-0000-0000-0000-000000000002/state").await;
    assert_eq!(
        unknown.body,
        json!({"detail": "Thread 00000000-0000-0000-0000-000000000002 not found"})
    );
    let wrong_type = c.post("/threads/search", json!({"limit": "ten"})).await;
    assert_eq!(wrong_type.status, 422);
    assert!(wrong_type.body["detail"]
        .as_str()
        .unwrap()
        .starts_with("body field `limit`: invalid type"));
    let not_json = c
        .send(
            "POST",
            "/threads",
            &[("content-type", "application/json")],
            b"{\"metadata\":".to_vec(),
        )
        .await;
    assert_eq!(not_json.status, 422);
    assert!(not_json.body["detail"]
        .as_str()
        .unwrap()
        .starts_with("the body is not JSON"));
    let plain = c
        .send(
            "POST",
            "/threads",
            &[("content-type", "text/plain;charset=UTF-8")],
            br#"{"metadata":{"via":"studio"}}"#.to_vec(),
        )
        .await;
    assert_eq!(
        (plain.status, &plain.body["metadata"]),
        (200, &json!({"via": "studio"}))
    );
    let nowhere = c.get("/nowhere").await;
    assert_eq!((nowhere.status, nowhere.body), (404, json!({"detail": "Not Found"})));
    let method = c.send("PUT", "/threads/search", &[], Vec::new()).await;
    assert_eq!(
        (method.status, method.body),
        (405, json!({"detail": "Method Not Allowed"}))
    );
}

#[tokio::test]
async fn an_oversized_body_is_413_with_a_detail() {
    let c = serve(Some(1024)).await;
    let big = json!({"metadata": {"blob": "x".repeat(2048)}});
    let r = c.post("/threads", big).await;
    assert_eq!(r.status, 413);
    assert!(r.body["detail"].is_string(), "{}", r.body);
    assert_eq!(c.post("/threads", json!({"metadata": {"blob": "x"}})).await.status, 200);
}

/// Writes a whole request of `body_len` bytes on a raw socket before reading anything, as httpx
/// does, and returns the status line and the body of the reply.
async fn post_whole_body(addr: std::net::SocketAddr, body_len: usize, extra_header: &str) -> (String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /threads HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n{extra_header}\
         content-length: {body_len}\r\nconnection: close\r\n\r\n"
    );
    let (mut read, mut write) = tcp.split();
    let writing = async {
        write.write_all(head.as_bytes()).await?;
        if extra_header.is_empty() {
            write.write_all(&vec![b' '; body_len]).await?;
        }
        Ok::<_, std::io::Error>(())
    };
    let mut reply = Vec::new();
    let (written, _) = tokio::join!(writing, read.read_to_end(&mut reply));
    written.unwrap();
    let reply = String::from_utf8(reply).unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}

#[tokio::test]
async fn an_oversized_body_written_whole_still_gets_the_413() {
    let c = serve(Some(1024)).await;
    // 4 MiB: far more than the socket buffers hold, so a server that answers without reading
    // the body resets the connection under the writer.
    let (status, body) = post_whole_body(c.addr, 4 * 1024 * 1024, "").await;
    assert_eq!(status, "HTTP/1.1 413 Payload Too Large");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"detail": "Request body is too large: 4194304 bytes, over the limit of 1024"})
    );
    // A client that waits for `100 Continue` is answered at once, without sending the body.
    let (status, _) = post_whole_body(c.addr, 4 * 1024 * 1024, "expect: 100-continue\r\n").await;
    assert_eq!(status, "HTTP/1.1 413 Payload Too Large");
}

#[tokio::test]
async fn a_cors_preflight_is_answered_as_langgraph_dev() {
    let c = serve(None).await;
    let r = c
        .send(
            "OPTIONS",
            "/threads",
            &[
                ("origin", "https://smith.langchain.com"),
                ("access-control-request-method", "POST"),
                ("access-control-request-headers", "content-type,x-api-key"),
                ("access-control-request-private-network", "true"),
            ],
            Vec::new(),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
    assert_eq!(
        r.header("access-control-allow-methods"),
        Some("DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT, QUERY")
    );
    assert_eq!(r.header("access-control-allow-private-network"), Some("true"));
    assert_eq!(r.header("access-control-allow-headers"), Some("content-type,x-api-key"));
    let simple = c
        .send("GET", "/ok", &[("origin", "https://smith.langchain.com")], Vec::new())
        .await;
    assert_eq!(simple.header("access-control-allow-origin"), Some("*"));
    assert_eq!(
        simple.header("access-control-expose-headers"),
        Some("content-location,location")
    );
}
