//! The threads routes (make, read, patch, search, count, copy, delete) and the state routes
//! (state, state at a checkpoint, edits, history, supersteps) over a real HTTP connection to an
//! embedded server, with the shapes of `sdk_trace.txt`.

mod api_support;

use api_support::serve;
use serde_json::{json, Value};

const CHAIN_ID: &str = "608f7b9c-04e5-5cf2-a3f7-ba75a3719808";

#[tokio::test]
async fn threads_are_made_read_patched_searched_counted_and_deleted() {
    let c = serve(None).await;
    let t = c.post("/threads", json!({"metadata": {"user": "u1"}})).await;
    assert_eq!(t.status, 200);
    let tid = t.body["thread_id"].as_str().unwrap().to_owned();
    assert_eq!(uuid::Uuid::parse_str(&tid).unwrap().get_version_num(), 7);
    assert_eq!(
        (&t.body["status"], &t.body["values"], &t.body["config"]),
        (&json!("idle"), &Value::Null, &json!({}))
    );
    assert_eq!(t.body["metadata"], json!({"user": "u1"}));
    assert_eq!(t.body["created_at"], t.body["state_updated_at"]);
    // The keys of `threads.create` in sdk_trace.txt: no `error` or `interrupts` before any state.
    let mut keys: Vec<&str> = t.body.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "config",
            "created_at",
            "metadata",
            "state_updated_at",
            "status",
            "thread_id",
            "updated_at",
            "values"
        ]
    );
    assert_eq!(c.get(&format!("/threads/{tid}")).await.body, t.body);

    let mine = "5a1bd1a4-2f0e-4c1e-9b4a-0e6a0c1d2e3f";
    c.post("/threads", json!({"thread_id": mine, "metadata": {"user": "u2"}}))
        .await;
    let dup = c.post("/threads", json!({"thread_id": mine})).await;
    assert_eq!(dup.status, 409);
    let kept = c
        .post("/threads", json!({"thread_id": mine, "if_exists": "do_nothing"}))
        .await;
    assert_eq!(kept.body["metadata"], json!({"user": "u2"}));

    let found = c
        .post(
            "/threads/search",
            json!({"limit": 2, "offset": 0, "metadata": {"user": "u1"}}),
        )
        .await;
    assert_eq!(found.body, json!([t.body]));
    let ids = c
        .post(
            "/threads/search",
            json!({"ids": [mine], "select": ["thread_id", "status"]}),
        )
        .await;
    assert_eq!(ids.body, json!([{"thread_id": mine, "status": "idle"}]));
    // A field no thread has is refused, as LangGraph's server does (it used to select nothing).
    let unknown = c
        .post("/threads/search", json!({"select": ["thread_id", "colour"]}))
        .await;
    assert_eq!(unknown.status, 422);
    assert_eq!(
        unknown.body["detail"],
        "body field `select`: `colour` is not a field; the fields are thread_id, created_at, updated_at, \
         state_updated_at, metadata, status, config, values, interrupts, error"
    );
    assert_eq!(
        c.post("/threads/search", json!({"status": "busy"})).await.body,
        json!([])
    );
    assert_eq!(c.post("/threads/count", json!({})).await.body, json!(2));
    let bad_sort = c.post("/threads/search", json!({"sort_by": "colour"})).await;
    assert_eq!(bad_sort.status, 422);
    assert!(bad_sort.body["detail"]
        .as_str()
        .unwrap()
        .starts_with("body field `sort_by`: `colour`"));

    let patched = c
        .patch(&format!("/threads/{tid}"), json!({"metadata": {"k": true}}))
        .await;
    assert_eq!(patched.body["metadata"], json!({"user": "u1", "k": true}));
    assert_eq!(c.delete(&format!("/threads/{tid}")).await.status, 204);
    let gone = c.get(&format!("/threads/{tid}")).await;
    assert_eq!(
        (gone.status, gone.body),
        (404, json!({"detail": format!("Thread {tid} not found")}))
    );
    assert_eq!(c.post("/threads/count", json!({})).await.body, json!(1));
}

#[tokio::test]
async fn a_thread_no_graph_touched_reads_as_the_empty_state() {
    let c = serve(None).await;
    let tid = c.post("/threads", json!({})).await.body["thread_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let s = c.get(&format!("/threads/{tid}/state?subgraphs=false")).await;
    assert_eq!(s.status, 200);
    assert_eq!(
        (&s.body["values"], &s.body["next"], &s.body["checkpoint"]),
        (&json!({}), &json!([]), &Value::Null)
    );
    assert_eq!(
        c.post(&format!("/threads/{tid}/history"), json!({"limit": 1000}))
            .await
            .body,
        json!([])
    );
    let edit = c
        .post(&format!("/threads/{tid}/state"), json!({"values": {"topic": "x"}}))
        .await;
    assert_eq!(
        (edit.status, edit.body),
        (400, json!({"detail": format!("Thread {tid} has no graph ID")}))
    );
}

#[tokio::test]
async fn state_edits_history_checkpoints_and_copies() {
    let c = serve(None).await;
    let t = c
        .post("/threads", json!({"metadata": {"graph_id": "chain"}}))
        .await
        .body;
    let tid = t["thread_id"].as_str().unwrap();
    let first = c
        .post(
            &format!("/threads/{tid}/state"),
            json!({"values": {"topic": "x"}, "as_node": "a"}),
        )
        .await;
    assert_eq!(first.status, 200, "{}", first.body);
    let cp1 = first.body["checkpoint_id"].as_str().unwrap().to_owned();
    let link = json!({"thread_id": tid, "checkpoint_ns": "", "checkpoint_id": cp1});
    assert_eq!(
        first.body,
        json!({"checkpoint": link, "configurable": link, "checkpoint_id": cp1})
    );
    let second = c
        .post(
            &format!("/threads/{tid}/state"),
            json!({"values": {"log": ["m"]}, "as_node": "b"}),
        )
        .await;
    let cp2 = second.body["checkpoint_id"].as_str().unwrap().to_owned();
    // Its state written, the thread shows its (empty) error and interrupts.
    let edited = c.get(&format!("/threads/{tid}")).await.body;
    assert_eq!((&edited["error"], &edited["interrupts"]), (&Value::Null, &json!({})));

    let head = c.get(&format!("/threads/{tid}/state")).await.body;
    assert_eq!(head["values"], json!({"topic": "x", "log": ["m"]}));
    assert_eq!(
        (&head["checkpoint_id"], &head["parent_checkpoint_id"]),
        (&json!(cp2), &json!(cp1))
    );
    let thread = c.get(&format!("/threads/{tid}")).await.body;
    assert_eq!(thread["values"], head["values"]);
    assert_ne!(thread["state_updated_at"], t["state_updated_at"]);

    let at = c.get(&format!("/threads/{tid}/state/{cp1}")).await.body;
    assert_eq!(at["values"], json!({"topic": "x", "log": []}));
    let at_body = c
        .post(
            &format!("/threads/{tid}/state/checkpoint"),
            json!({"checkpoint": {"checkpoint_id": cp1}}),
        )
        .await;
    assert_eq!(at_body.body, at);

    let hist = c
        .post(&format!("/threads/{tid}/history"), json!({"limit": 2}))
        .await
        .body;
    let ids: Vec<&Value> = hist.as_array().unwrap().iter().map(|s| &s["checkpoint_id"]).collect();
    assert_eq!(ids, [&json!(cp2), &json!(cp1)]);
    let before = c
        .post(
            &format!("/threads/{tid}/history"),
            json!({"before": {"checkpoint_id": cp2}}),
        )
        .await
        .body;
    assert_eq!(before.as_array().unwrap().len(), 1);
    let fork = c
        .post(
            &format!("/threads/{tid}/state"),
            json!({"values": {"topic": "y"}, "as_node": "a", "checkpoint_id": cp1}),
        )
        .await;
    assert_eq!(fork.status, 200, "{}", fork.body);
    let fork_state = c.get(&format!("/threads/{tid}/state")).await.body;
    assert_eq!(fork_state["parent_checkpoint_id"], json!(cp1));
    assert_eq!(fork_state["checkpoint_id"], fork.body["checkpoint_id"]);

    let bad_node = c
        .post(&format!("/threads/{tid}/state"), json!({"values": {}, "as_node": "zz"}))
        .await;
    assert_eq!(
        (bad_node.status, bad_node.body),
        (422, json!({"detail": "`update_state` names unknown node `zz`"}))
    );

    let copy = c.post(&format!("/threads/{tid}/copy"), json!({})).await.body;
    let copied = copy["thread_id"].as_str().unwrap();
    assert_ne!(copied, tid);
    assert_eq!(copy["metadata"], json!({"graph_id": "chain"}));
    assert_eq!(
        c.get(&format!("/threads/{copied}/state")).await.body["values"],
        fork_state["values"]
    );
    assert_eq!(c.delete(&format!("/threads/{tid}")).await.status, 204);
    assert_eq!(
        c.post(&format!("/threads/{copied}/history"), json!({}))
            .await
            .body
            .as_array()
            .unwrap()
            .len(),
        3
    );
}

#[tokio::test]
async fn supersteps_apply_their_updates_in_order() {
    let c = serve(None).await;
    let body = json!({
        "metadata": {"graph_id": "chain"},
        "supersteps": [
            {"updates": [{"values": {"topic": "t"}, "as_node": "a"}]},
            {"updates": [{"values": {"topic": "u", "log": ["x"]}, "as_node": "b"}]},
        ],
    });
    let t = c.post("/threads", body).await;
    assert_eq!(t.status, 200, "{}", t.body);
    assert_eq!(t.body["values"], json!({"topic": "u", "log": ["x"]}));
    let tid = t.body["thread_id"].as_str().unwrap();
    assert_eq!(
        c.post(&format!("/threads/{tid}/history"), json!({}))
            .await
            .body
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let no_graph = c.post("/threads", json!({"supersteps": [{"updates": []}]})).await;
    assert_eq!(no_graph.status, 400);
    assert!(
        no_graph.body["detail"].as_str().unwrap().ends_with(" has no graph ID"),
        "{}",
        no_graph.body
    );
    let bad = c
        .post(
            "/threads",
            json!({"metadata": {"graph_id": "chain"}, "supersteps": [{"updates": [{"values": {}, "as_node": "q"}]}]}),
        )
        .await;
    assert_eq!(
        bad.body["detail"],
        "body field `supersteps[0]`: `update_state` names unknown node `q`"
    );
}

#[tokio::test]
async fn a_run_ties_its_thread_to_the_graph_whose_state_the_routes_read() {
    let c = serve(None).await;
    let tid = c.post("/threads", json!({"metadata": {"user": "u1"}})).await.body["thread_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = c
        .post(
            &format!("/threads/{tid}/runs/wait"),
            json!({"input": {"topic": "x", "log": []}, "assistant_id": "chain"}),
        )
        .await;
    assert_eq!(
        (out.status, &out.body),
        (200, &json!({"topic": "x", "log": ["a:x", "b"]}))
    );
    let thread = c.get(&format!("/threads/{tid}")).await.body;
    assert_eq!(
        thread["metadata"],
        json!({"user": "u1", "graph_id": "chain", "assistant_id": CHAIN_ID})
    );
    assert_eq!(thread["values"], out.body);
    let state = c.get(&format!("/threads/{tid}/state")).await.body;
    assert_eq!((&state["values"], &state["next"]), (&out.body, &json!([])));
    let history = c
        .post(&format!("/threads/{tid}/history"), json!({"limit": 2}))
        .await
        .body;
    assert_eq!(history[0]["checkpoint_id"], state["checkpoint_id"]);
    assert_eq!(history[0]["parent_checkpoint_id"], history[1]["checkpoint_id"]);
    let edit = c
        .post(
            &format!("/threads/{tid}/state"),
            json!({"values": {"log": ["manual"]}, "as_node": "b"}),
        )
        .await;
    assert_eq!(edit.status, 200, "{}", edit.body);
    let after = c.get(&format!("/threads/{tid}")).await.body;
    assert_eq!(after["values"]["log"], json!(["a:x", "b", "manual"]));
    assert_eq!(c.delete(&format!("/threads/{tid}")).await.status, 204);
    assert_eq!(c.get(&format!("/threads/{tid}/state")).await.status, 404);
}

#[tokio::test]
async fn a_search_extracts_values_by_path_beside_the_fields_it_selects() {
    // A chat UI's thread list: each thread's last log line and who made it, not its whole state.
    let c = serve(None).await;
    let t = c.post("/threads", json!({"metadata": {"user": "ann"}})).await;
    let tid = t.body["thread_id"].as_str().unwrap().to_owned();
    let run = c
        .post(
            &format!("/threads/{tid}/runs/wait"),
            json!({"assistant_id": "chain", "input": {"topic": "x", "log": []}}),
        )
        .await;
    assert_eq!(run.status, 200, "{}", run.body);
    let extract = json!({"last": "values.log[-1]", "first": "values.log[0]", "who": "metadata.user", "none": "values.nope.deeper"});
    let found = c
        .post(
            "/threads/search",
            json!({"ids": [tid], "select": ["thread_id"], "extract": extract}),
        )
        .await;
    assert_eq!(found.status, 200, "{}", found.body);
    assert_eq!(
        found.body,
        json!([{"thread_id": tid, "extracted": {"last": "b", "first": "a:x", "who": "ann", "none": null}}])
    );
    // Without `select`, the whole thread beside it.
    let whole = c
        .post(
            "/threads/search",
            json!({"ids": [tid], "extract": {"topic": "values.topic"}}),
        )
        .await;
    assert_eq!(whole.body[0]["extracted"], json!({"topic": "x"}));
    assert_eq!(whole.body[0]["values"]["topic"], "x");
    // A path into no field of the thread's is a 422 naming it.
    let bad = c.post("/threads/search", json!({"extract": {"s": "status"}})).await;
    assert_eq!(bad.status, 422);
    assert!(
        bad.body["detail"].as_str().unwrap().contains("body field `extract`.s"),
        "{}",
        bad.body
    );
}
