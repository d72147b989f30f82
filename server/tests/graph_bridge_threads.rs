//! The JSON bridge's thread reads and edits: state and history in the shapes of
//! `sdk_trace.txt`, state updates, rollback on every saver, copies and deletions, the drawing
//! and the schemas.

mod support;
use support::*;

#[tokio::test]
async fn history_is_newest_first_with_parent_links_and_a_limit() {
    let (_dir, saver) = sqlite();
    let g = chain().into_served(saver);
    let mut r = request("t5", json!({"topic": "x"}), &[]);
    r.metadata.insert("graph_id".into(), json!("chain"));
    r.metadata.insert("attempt".into(), json!(1));
    run(&g, r).await;
    let all = g.history("t5", &HistoryQuery::default()).await.unwrap();
    let steps: Vec<i64> = all.iter().map(|s| s["metadata"]["step"].as_i64().unwrap()).collect();
    assert_eq!(steps, vec![2, 1, 0, -1]);
    for pair in all.windows(2) {
        assert_eq!(pair[0]["parent_checkpoint_id"], pair[1]["checkpoint_id"]);
    }
    assert_eq!(all[3]["parent_checkpoint"], Value::Null);
    let two = g
        .history(
            "t5",
            &HistoryQuery {
                limit: 2,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(two, all[..2].to_vec());
    assert_eq!(two[1]["next"], json!(["b"]));
    let before = HistoryQuery {
        before: all[1]["checkpoint_id"].as_str().map(str::to_owned),
        ..Default::default()
    };
    assert_eq!(g.history("t5", &before).await.unwrap(), all[2..].to_vec());
    assert_eq!(all[0]["metadata"]["run_id"], json!("run-1"));
    assert_eq!(all[0]["metadata"]["graph_id"], json!("chain"));
    let mut filter = serde_json::Map::new();
    filter.insert("graph_id".into(), json!("chain"));
    filter.insert("source".into(), json!("input"));
    let inputs = HistoryQuery {
        metadata: Some(filter),
        ..Default::default()
    };
    assert_eq!(g.history("t5", &inputs).await.unwrap(), all[3..].to_vec());
}

#[tokio::test]
async fn update_state_as_a_node_writes_a_checkpoint_the_state_shows() {
    let (_dir, saver) = sqlite();
    let g = chain().into_served(saver);
    run(&g, request("t6", json!({"topic": "x"}), &[])).await;
    let update = StateUpdate {
        values: Some(json!({"log": ["manual"]})),
        as_node: Some("b".into()),
        ..StateUpdate::default()
    };
    let id = g.update_state("t6", update).await.unwrap();
    let state = g.state("t6", None, false).await.unwrap().unwrap();
    assert_eq!(state["checkpoint_id"], json!(id));
    assert_eq!(state["values"]["log"], json!(["a:x", "b", "manual"]));
    assert_eq!(state["metadata"]["source"], json!("update"));
    let bad = StateUpdate {
        values: Some(json!({"log": 1})),
        ..Default::default()
    };
    let Err(GraphError::Invalid(m)) = g.update_state("t6", bad).await else {
        panic!()
    };
    assert!(m.starts_with("values.log: invalid type"), "{m}");
}

/// Rolls a second run back on `saver`: its checkpoints go, the first run's stay, and the
/// thread runs on from there.
async fn rollback_on(saver: Arc<dyn Checkpointer>, thread: &str) {
    let g = parent().into_served(saver);
    run(&g, request(thread, json!({"topic": "one"}), &[])).await;
    let head = g.state(thread, None, false).await.unwrap().unwrap();
    let before = g.history(thread, &HistoryQuery::default()).await.unwrap().len();
    let mut resume = request(thread, Value::Null, &[]);
    resume.command = Some(json!({"resume": "ok"}));
    let (_, end) = run(&g, resume).await;
    assert!(matches!(end, RunEnd::Success { .. }), "{end:?}");
    assert!(g.history(thread, &HistoryQuery::default()).await.unwrap().len() > before);

    g.rollback(thread, head["checkpoint_id"].as_str()).await.unwrap();
    assert_eq!(g.history(thread, &HistoryQuery::default()).await.unwrap().len(), before);
    assert_eq!(g.state(thread, None, false).await.unwrap().unwrap(), head);
    let mut again = request(thread, Value::Null, &[]);
    again.command = Some(json!({"resume": "again"}));
    let (_, end) = run(&g, again).await;
    let RunEnd::Success { values } = end else {
        panic!("{end:?}")
    };
    assert_eq!(values["log"], json!(["a:one", "b", "ask:again"]));

    g.rollback(thread, None).await.unwrap();
    assert_eq!(g.state(thread, None, false).await.unwrap(), None);
}

#[tokio::test]
async fn rollback_deletes_a_runs_checkpoints_on_memory_and_sqlite() {
    rollback_on(Arc::new(MemorySaver::new()), "r-mem").await;
    let (_dir, saver) = sqlite();
    rollback_on(saver, "r-sqlite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
async fn rollback_deletes_a_runs_checkpoints_on_postgres() {
    let schema = weir_test_support::Schema::fresh("weir_bridge");
    let saver = weir::checkpoint::PostgresSaver::connect_with_schema(&schema.url, &schema.name)
        .await
        .unwrap();
    rollback_on(Arc::new(saver), "r-pg").await;
}

#[tokio::test]
async fn copy_and_delete_a_thread() {
    let (_dir, saver) = sqlite();
    let g = chain().into_served(saver);
    run(&g, request("from", json!({"topic": "x"}), &[])).await;
    g.copy_thread("from", "to").await.unwrap();
    let (a, b) = (
        g.state("from", None, false).await.unwrap(),
        g.state("to", None, false).await.unwrap(),
    );
    assert_eq!(a.unwrap()["values"], b.unwrap()["values"]);
    assert!(matches!(
        g.copy_thread("nobody", "x").await,
        Err(GraphError::NotFound(_))
    ));
    g.delete_thread("from").await.unwrap();
    assert_eq!(g.state("from", None, false).await.unwrap(), None);
    assert!(g.state("to", None, false).await.unwrap().is_some());
}

#[test]
fn the_drawing_of_chain_is_the_servers() {
    let g = chain().into_served(Arc::new(MemorySaver::new()));
    // sdk_trace.txt, GET /assistants/chain/graph?xray=false
    let expected: Value = serde_json::from_str(
        r#"{"nodes": [{"id": "__start__", "type": "runnable", "data": {"name": "__start__"}}, {"id": "a", "type": "runnable", "data": {"name": "a"}}, {"id": "b", "type": "runnable", "data": {"name": "b"}}, {"id": "__end__"}], "edges": [{"source": "__start__", "target": "a"}, {"source": "a", "target": "b"}, {"source": "b", "target": "__end__"}]}"#,
    )
    .unwrap();
    assert_eq!(g.drawing(0), expected);
}

#[test]
fn schemas_make_every_input_field_optional() {
    let s = chain().into_served(Arc::new(MemorySaver::new())).schemas();
    assert_eq!(s.state["required"], json!(["topic", "log"]));
    assert_eq!(s.state["properties"]["topic"]["type"], json!("string"));
    assert_eq!(s.input.get("required"), None);
    assert_eq!(s.input["properties"], s.state["properties"]);
    assert_eq!(s.output, s.state);
    assert_eq!((s.config, s.context), (Value::Null, Value::Null));
}

#[test]
fn xray_draws_a_subgraph_nodes_inside() {
    let g = parent().into_served(Arc::new(MemorySaver::new()));
    let plain = g.drawing(0);
    let ids: Vec<&str> = plain["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["__start__", "inner", "ask", "__end__"]);
    let xray = g.drawing(1);
    let ids: Vec<&str> = xray["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["__start__", "inner:a", "inner:b", "ask", "__end__"]);
    assert_eq!(xray["nodes"][1]["data"]["name"], json!("a"));
    let edges: Vec<(&str, &str)> = xray["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["source"].as_str().unwrap(), e["target"].as_str().unwrap()))
        .collect();
    assert_eq!(
        edges,
        [
            ("__start__", "inner:a"),
            ("inner:b", "ask"),
            ("ask", "__end__"),
            ("inner:a", "inner:b")
        ]
    );
    assert_eq!(g.subgraphs(None, false).keys().collect::<Vec<_>>(), ["inner"]);
    assert!(g.subgraphs(Some("ask"), false).is_empty());
}
