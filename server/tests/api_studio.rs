//! The studio's own routes over a real HTTP connection to an embedded server: a thread's
//! timeline paged with `limit` and `before`, without the checkpoints' values, in the order and
//! with the links of LangGraph's history; and a checkpoint with its changes from its parent
//! computed by the server, huge values truncated with a marker.

mod api_support;

use api_support::{serve, Client};
use serde_json::{json, Value};

/// A `chain` thread with `edits` state updates (`topic` first, then a line of `log` each).
async fn thread_with(c: &Client, edits: usize) -> String {
    let t = c
        .post("/threads", json!({"metadata": {"graph_id": "chain"}}))
        .await
        .body;
    let tid = t["thread_id"].as_str().unwrap().to_owned();
    let first = json!({"values": {"topic": "x"}, "as_node": "a"});
    assert_eq!(c.post(&format!("/threads/{tid}/state"), first).await.status, 200);
    for i in 1..edits {
        let edit = json!({"values": {"log": [format!("line {i}")]}, "as_node": "b"});
        assert_eq!(c.post(&format!("/threads/{tid}/state"), edit).await.status, 200);
    }
    tid
}

#[tokio::test]
async fn the_timeline_pages_the_history_without_values() {
    let c = serve(None).await;
    let tid = thread_with(&c, 5).await;
    let history = c
        .post(&format!("/threads/{tid}/history"), json!({"limit": 100}))
        .await
        .body;
    let history = history.as_array().unwrap();
    assert_eq!(history.len(), 5);

    let mut pages = Vec::new();
    let mut entries: Vec<Value> = Vec::new();
    loop {
        let at = entries
            .last()
            .map(|e| format!("&before={}", e["checkpoint_id"].as_str().unwrap()))
            .unwrap_or_default();
        let page = c.get(&format!("/studio/api/threads/{tid}/timeline?limit=2{at}")).await;
        assert_eq!(page.status, 200, "{}", page.body);
        let page = page.body.as_array().unwrap().clone();
        if page.is_empty() {
            break;
        }
        pages.push(page.len());
        entries.extend(page);
    }
    assert_eq!(pages, [2, 2, 1]);
    assert_eq!(entries.len(), history.len());
    for (entry, state) in entries.iter().zip(history) {
        assert!(entry.get("values").is_none() && entry.get("next").is_none(), "{entry}");
        for key in [
            "checkpoint",
            "parent_checkpoint",
            "checkpoint_id",
            "parent_checkpoint_id",
            "metadata",
            "created_at",
        ] {
            assert_eq!(entry[key], state[key], "{key} of {entry}");
        }
    }
    assert_eq!(entries[0]["writes"], json!(["b"]));
    assert_eq!(entries[4]["writes"], json!(["a"]));
    assert_eq!(entries[0]["metadata"]["source"], json!("update"));
}

#[tokio::test]
async fn the_timeline_refuses_a_bad_limit_and_an_unknown_thread() {
    let c = serve(None).await;
    let tid = thread_with(&c, 1).await;
    let zero = c.get(&format!("/studio/api/threads/{tid}/timeline?limit=0")).await;
    assert_eq!(zero.status, 422);
    assert!(
        zero.body["detail"].as_str().unwrap().contains("`limit`"),
        "{}",
        zero.body
    );
    let unknown = "5a1bd1a4-2f0e-4c1e-9b4a-0e6a0c1d2e3f";
    let missing = c.get(&format!("/studio/api/threads/{unknown}/timeline")).await;
    assert_eq!(missing.status, 404);
    let bad = c.get("/studio/api/threads/nope/checkpoint").await;
    assert_eq!(bad.status, 422);
    assert!(
        bad.body["detail"].as_str().unwrap().contains("thread_id"),
        "{}",
        bad.body
    );
    let fresh = c.post("/threads", json!({})).await.body;
    let empty = c
        .get(&format!(
            "/studio/api/threads/{}/checkpoint",
            fresh["thread_id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(empty.body, json!({"state": null, "changes": [], "more_changes": 0}));
}

#[tokio::test]
async fn a_checkpoint_comes_with_its_changes_from_its_parent() {
    let c = serve(None).await;
    let tid = thread_with(&c, 3).await;
    let head = c.get(&format!("/studio/api/threads/{tid}/checkpoint")).await;
    assert_eq!(head.status, 200, "{}", head.body);
    let state = c.get(&format!("/threads/{tid}/state")).await.body;
    assert_eq!(head.body["state"], state, "a small state is shown whole");
    assert_eq!(
        head.body["changes"],
        json!([{"path": "/log/1", "kind": "add", "after": "line 2"}])
    );

    let history = c.post(&format!("/threads/{tid}/history"), json!({})).await.body;
    let first = history.as_array().unwrap().last().unwrap()["checkpoint_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let at_first = c
        .get(&format!("/studio/api/threads/{tid}/checkpoint?checkpoint_id={first}"))
        .await
        .body;
    assert_eq!(at_first["state"]["checkpoint_id"], json!(first));
    // Every field of the first checkpoint is new, in the order of the state's values.
    assert_eq!(
        at_first["changes"],
        json!([{"path": "/log", "kind": "add", "after": []}, {"path": "/topic", "kind": "add", "after": "x"}])
    );

    // A fork from the first checkpoint: its parent is not the checkpoint listed before it.
    let fork = json!({"values": {"topic": "y"}, "as_node": "a", "checkpoint_id": first});
    let fork = c.post(&format!("/threads/{tid}/state"), fork).await.body;
    let fork = fork["checkpoint_id"].as_str().unwrap();
    let expected = json!([{"path": "/topic", "kind": "change", "before": "x", "after": "y"}]);
    for at in [String::new(), format!("?checkpoint_id={fork}")] {
        let shown = c.get(&format!("/studio/api/threads/{tid}/checkpoint{at}")).await.body;
        assert_eq!(shown["state"]["checkpoint_id"], json!(fork));
        assert_eq!(shown["state"]["parent_checkpoint_id"], json!(first));
        assert_eq!(shown["changes"], expected, "at {at:?}");
    }
    let unknown = c
        .get(&format!("/studio/api/threads/{tid}/checkpoint?checkpoint_id=nope"))
        .await;
    assert_eq!(unknown.status, 404, "{}", unknown.body);
}

#[tokio::test]
async fn a_huge_value_is_truncated_with_a_marker() {
    let c = serve(None).await;
    let tid = thread_with(&c, 1).await;
    let big = "y".repeat(50_000);
    let edit = json!({"values": {"topic": big}, "as_node": "a"});
    assert_eq!(c.post(&format!("/threads/{tid}/state"), edit).await.status, 200);
    let head = c.get(&format!("/studio/api/threads/{tid}/checkpoint")).await.body;
    let marker =
        json!({"$truncated": {"type": "string", "length": 50_000, "omitted": 48_000, "head": "y".repeat(2_000)}});
    assert_eq!(
        head["changes"],
        json!([{"path": "/topic", "kind": "change", "before": "x", "after": marker}])
    );
    assert_eq!(head["state"]["values"]["topic"], marker);
}
