//! The session's unit tests: each channel's events made of a run's bus events.

use super::*;

/// `(method, namespace, data)` of each envelope, for comparing.
fn seen(out: &[Value]) -> Vec<(String, Value, Value)> {
    out.iter()
        .map(|e| {
            (
                e["method"].as_str().unwrap().to_owned(),
                e["params"]["namespace"].clone(),
                e["params"]["data"].clone(),
            )
        })
        .collect()
}

#[test]
fn a_run_is_running_then_its_events_then_completed_with_seqs_climbing_and_ids_from_the_bus() {
    let mut s = Session::default();
    let mut out = s.begin_run("r1", "chain");
    out.extend(s.ingest("5-1", "values", r#"{"topic":"x"}"#));
    out.extend(s.ingest("5-2", "updates", r#"{"a":{"log":["a:x"]}}"#));
    out.extend(s.ingest("5-3", "custom", r#"{"n":1}"#));
    out.extend(s.ingest("5-4", "debug", r#"{"ignored":true}"#));
    out.extend(s.end_run(RunStatus::Success));
    assert_eq!(
        seen(&out),
        vec![
            (
                "lifecycle".into(),
                json!([]),
                json!({"event": "running", "graph_name": "chain"})
            ),
            ("values".into(), json!([]), json!({"topic": "x"})),
            ("updates".into(), json!([]), json!({"log": ["a:x"]})),
            ("custom".into(), json!([]), json!({"payload": {"n": 1}})),
            (
                "lifecycle".into(),
                json!([]),
                json!({"event": "completed", "graph_name": "chain"})
            ),
        ]
    );
    let seqs: Vec<u64> = out.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5]);
    assert_eq!(out[0]["event_id"], "synth:r1:lc||running");
    assert_eq!(out[1]["event_id"], "5-1");
    assert_eq!(out[2]["params"]["node"], "a");
    assert!(s.end_run(RunStatus::Success).is_empty(), "the end is said once");
    // The next run goes on numbering.
    assert_eq!(s.begin_run("r2", "chain")[0]["seq"], 6);
}

#[test]
fn an_interrupt_is_an_input_request_and_the_run_interrupted_once() {
    let mut s = Session::default();
    s.begin_run("r", "hitl");
    let question = r#"{"__interrupt__":[{"id":"i1","value":"ok?"}]}"#;
    let out = s.ingest("1-1", "updates", question);
    assert_eq!(
        seen(&out),
        vec![
            (
                "input.requested".into(),
                json!([]),
                json!({"interrupt_id": "i1", "payload": "ok?"})
            ),
            (
                "lifecycle".into(),
                json!([]),
                json!({"event": "interrupted", "graph_name": "hitl"})
            ),
        ]
    );
    assert_eq!(out[0]["event_id"], "synth:r:input||i1");
    let out = s.ingest(
        "1-2",
        "values",
        r#"{"log":["a"],"__interrupt__":[{"id":"i1","value":"ok?"}]}"#,
    );
    assert_eq!(seen(&out), vec![("values".into(), json!([]), json!({"log": ["a"]}))]);
    assert!(s.end_run(RunStatus::Interrupted).is_empty());
}

#[test]
fn a_subgraph_starts_at_its_first_event_and_completes_at_its_parents_update() {
    let mut s = Session::default();
    s.begin_run("r", "parent");
    let out = s.ingest("1-1", "updates|child:t1", r#"{"inner":{"x":1}}"#);
    assert_eq!(out[0]["method"], "lifecycle");
    assert_eq!(
        out[0]["params"]["data"],
        json!({"event": "started", "namespace": ["child:t1"], "graph_name": "child", "trigger_call_id": "t1"})
    );
    assert_eq!(out[0]["event_id"], "1-1");
    assert_eq!(
        (&out[1]["params"]["namespace"], &out[1]["event_id"]),
        (&json!(["child:t1"]), &json!("1-1.1"))
    );
    let out = s.ingest("1-2", "updates", r#"{"child":{"x":1}}"#);
    assert_eq!(
        seen(&out)[1],
        (
            "lifecycle".into(),
            json!(["child:t1"]),
            json!({"event": "completed", "graph_name": "child"})
        )
    );
    // A second subgraph left open is closed as the run fails, before the run.
    s.ingest("1-3", "values|other:t2", r#"{"y":2}"#);
    let out = s.fail(r#"{"error":"ValueError","message":"boom"}"#);
    assert_eq!(
        seen(&out),
        vec![
            (
                "lifecycle".into(),
                json!(["other:t2"]),
                json!({"event": "completed", "graph_name": "other"})
            ),
            (
                "lifecycle".into(),
                json!([]),
                json!({"event": "failed", "graph_name": "parent", "error": "boom"})
            ),
        ]
    );
    assert!(s.end_run(RunStatus::Error).is_empty());
}

#[test]
fn a_tools_report_goes_out_as_it_is_and_a_result_is_also_a_tool_message() {
    let mut s = Session::default();
    s.begin_run("r", "agent");
    let started = r#"{"event":"tool-started","tool_call_id":"c1","tool_name":"add","input":{"a":1}}"#;
    let out = s.ingest("1-1", "tools", started);
    assert_eq!(
        seen(&out),
        vec![("tools".into(), json!([]), serde_json::from_str(started).unwrap())]
    );
    let finished = r#"{"event":"tool-finished","tool_call_id":"c1",
        "output":{"type":"tool","content":"2","tool_call_id":"c1","id":"t","status":"success"}}"#;
    let out = s.ingest("1-2", "tools", finished);
    let methods: Vec<&str> = out.iter().map(|e| e["method"].as_str().unwrap()).collect();
    assert_eq!(
        methods,
        ["tools", "messages", "messages", "messages", "messages", "messages"]
    );
    assert_eq!(out[0]["params"]["data"]["output"]["content"], "2");
    assert_eq!(out[1]["params"]["namespace"], json!(["tools:c1"]));
    assert_eq!(
        out[1]["params"]["data"],
        json!({"event": "message-start", "role": "tool", "id": "t", "tool_call_id": "c1"})
    );
    assert_eq!(
        out[3]["params"]["data"]["content"],
        json!({"type": "text", "text": "2"})
    );
    // Ids of envelopes made of one bus event: its id, then .1, .2…
    assert_eq!(
        (&out[0]["event_id"], &out[1]["event_id"]),
        (&json!("1-2"), &json!("1-2.1"))
    );
    // An error is a report only.
    let error = r#"{"event":"tool-error","tool_call_id":"c2","message":"boom"}"#;
    assert_eq!(s.ingest("1-3", "tools", error).len(), 1);
}

#[test]
fn a_checkpoint_is_its_id_parent_step_and_source_once() {
    let mut s = Session::default();
    s.begin_run("r", "g");
    let data = r#"{"config":{"configurable":{"checkpoint_id":"c2"}},"parent_config":{"configurable":{"checkpoint_id":"c1"}},
        "metadata":{"step":1,"source":"loop"},"values":{},"next":[],"tasks":[]}"#;
    let out = s.ingest("1-1", "checkpoints", data);
    assert_eq!(
        out[0]["params"]["data"],
        json!({"id": "c2", "parent_id": "c1", "step": 1, "source": "loop"})
    );
    assert_eq!(out[0]["event_id"], "synth:r:checkpoint||c2");
    assert!(s.ingest("1-2", "checkpoints", data).is_empty());
}
