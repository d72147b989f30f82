//! The bridge's fidelity to LangGraph's server where weir's own names differ: a node error's
//! kind (its Rust type's short name, as the Python exception's class), UUID-shaped task ids (the
//! same in a task's events, the checkpoints and the state, one per task of a step), subgraph
//! namespaces with those ids the same in events and in state, the `events` mode's chains (one per
//! task, `Send`s to one node included) against the capture of `langgraph dev` and inside a
//! subgraph, and subgraphs' state schemas.

mod support;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use support::*;

fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.iter().map(|p| p.len()).eq([8, 4, 4, 4, 12]) && parts.iter().all(|p| p.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn one_node(node: fn(&S) -> Result<SUpdate, BoxError>) -> CompiledGraph<S> {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("n", node);
    g.add_edge(START, "n").add_edge("n", END);
    g.compile().unwrap()
}

#[tokio::test]
async fn an_error_without_a_type_of_its_own_is_a_node_error() {
    let (_dir, saver) = sqlite();
    let g = one_node(|_: &S| Err("plain text".into())).into_served(saver);
    let (_, end) = run(&g, request("k1", json!({"topic": "x"}), &[])).await;
    assert_eq!(
        end,
        RunEnd::Error {
            error: "NodeError".into(),
            message: "plain text".into()
        }
    );
}

#[tokio::test]
async fn a_typed_error_keeps_its_kind_and_stays_itself_for_retries_and_callers() {
    let attempts = Arc::new(AtomicU32::new(0));
    let seen = attempts.clone();
    let mut g = GraphBuilder::<S>::new();
    let boom = g.add_node("boom", move |_: &S| -> Result<SUpdate, ValueError> {
        seen.fetch_add(1, Ordering::SeqCst);
        Err(ValueError("boom in node".into()))
    });
    g.add_edge(START, "boom").add_edge("boom", END);
    // The retry predicate downcasts to the node's own type: the kind's wrapper is not in its way.
    let policy = RetryPolicy::new(3)
        .initial_interval(Duration::ZERO)
        .max_interval(Duration::ZERO)
        .retry_on(|e| e.downcast_ref::<ValueError>().is_some());
    g.retry(&boom, policy);
    let graph = g.compile().unwrap();
    let e = graph
        .invoke(SUpdate::default(), &RunConfig::default())
        .await
        .unwrap_err();
    assert_eq!(attempts.load(Ordering::SeqCst), 3, "retried as the predicate said");
    assert_eq!(e.node_error_kind(), Some("ValueError"));
    let source = std::error::Error::source(&e).expect("the node's error");
    assert!(source.downcast_ref::<ValueError>().is_some(), "{source:?}");
    let io = one_node(|_: &S| Err(Box::new(std::io::Error::other("disk")) as BoxError));
    let e = io.invoke(SUpdate::default(), &RunConfig::default()).await.unwrap_err();
    assert_eq!(e.node_error_kind(), None, "a boxed error has no type of its own");
}

#[tokio::test]
async fn a_subgraphs_namespace_is_a_uuid_the_same_in_events_and_state() {
    let (_dir, saver) = sqlite();
    let g = parent().into_served(saver);
    let mut r = request("n1", json!({"topic": "t"}), &[Mode::Values]);
    r.interrupt_before = vec!["inner".into()];
    run(&g, r).await;
    let state = g.state("n1", None, false).await.unwrap().unwrap();
    let task = &state["tasks"][0];
    assert_eq!(task["name"], "inner");
    let ns = task["state"]["configurable"]["checkpoint_ns"]
        .as_str()
        .unwrap()
        .to_owned();
    let (node, id) = ns.split_once(':').unwrap();
    assert!(node == "inner" && is_uuid(id), "{ns}");
    assert_eq!(
        task["id"], id,
        "the namespace names the task that runs the subgraph by its id"
    );

    let mut r = request("n1", Value::Null, &[Mode::Values, Mode::Updates]);
    r.subgraphs = true;
    let (events, _) = run(&g, r).await;
    let names: Vec<&str> = events
        .iter()
        .filter_map(|(e, _)| e.split_once('|'))
        .map(|(_, ns)| ns)
        .collect();
    assert_eq!(names.len(), 5, "{events:?}");
    assert!(
        names.iter().all(|n| *n == ns),
        "events under {names:?}, state says {ns}"
    );
}

#[tokio::test]
async fn the_events_mode_has_the_captures_chains_in_order_and_shape() {
    let (_dir, saver) = sqlite();
    let g = chain().into_served(saver);
    let mut r = request("e1", json!({"topic": "t"}), &[Mode::Events]);
    r.run_id = "01a232de-392c-7618-894e-d27abb6a3794".into();
    r.metadata.insert("graph_id".into(), json!("chain"));
    let (events, end) = run(&g, r).await;
    let expected: Vec<Value> = capture("../sdk/captures/raw_events.sse")
        .into_iter()
        .map(|(_, d)| d)
        .collect();
    assert!(events.iter().all(|(e, _)| e == "events"));
    let got: Vec<&Value> = events.iter().map(|(_, d)| d).collect();
    let pairs = |v: &[&Value]| -> Vec<(String, String)> {
        v.iter()
            .map(|d| {
                (
                    d["event"].as_str().unwrap().to_owned(),
                    d["name"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    assert_eq!(pairs(&got), pairs(&expected.iter().collect::<Vec<_>>()));
    for (g, e) in got.iter().zip(&expected) {
        let keys = |v: &Value| {
            v.as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect::<std::collections::BTreeSet<_>>()
        };
        assert_eq!(keys(g), keys(e), "{g}");
        assert_eq!(keys(&g["data"]), keys(&e["data"]), "{g}");
        // The capture ran on a used thread (steps 9 and 10); this one is fresh.
        let tags = match g["metadata"]["langgraph_step"].as_i64() {
            Some(step) => json!([format!("graph:step:{step}")]),
            None => json!([]),
        };
        assert_eq!(g["tags"], tags, "{g}");
        assert_eq!(e["tags"].as_array().map(Vec::len), tags.as_array().map(Vec::len));
    }
    let a_start = got[1];
    assert_eq!(a_start["data"]["input"], json!({"topic": "t", "log": []}));
    assert_eq!(a_start["parent_ids"], json!([got[0]["run_id"]]));
    assert_eq!(a_start["metadata"]["langgraph_node"], "a");
    let ns = a_start["metadata"]["langgraph_checkpoint_ns"].as_str().unwrap();
    assert!(ns.strip_prefix("a:").is_some_and(is_uuid), "{ns}");
    assert_eq!(got[2]["data"]["chunk"], json!({"log": ["a:t"]}));
    assert_eq!(got[7]["data"]["output"], json!({"topic": "t", "log": ["a:t", "b"]}));
    assert!(matches!(end, RunEnd::Success { .. }));
}

#[test]
fn a_subgraphs_schema_lists_its_states_fields() {
    let g = parent().into_served(Arc::new(MemorySaver::new()));
    let subs = g.subgraphs(None, false);
    let props = subs["inner"].state["properties"].as_object().unwrap();
    assert_eq!(props.keys().collect::<Vec<_>>(), ["topic", "log"]);
    assert!(subs["inner"].input["required"].is_null(), "every input field optional");
    assert!(chain()
        .into_served(Arc::new(MemorySaver::new()))
        .subgraphs(None, false)
        .is_empty());

    #[derive(State, Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
    struct Other {
        notes: String,
    }
    let mut inner = GraphBuilder::<Other>::new();
    inner.add_node("w", |_: &Other| OtherUpdate::default().notes("n".into()));
    inner.add_edge(START, "w").add_edge("w", END);
    let mut g = GraphBuilder::<S>::new();
    g.add_subgraph(
        "other",
        inner.compile().unwrap(),
        |_: &S| OtherUpdate::default(),
        |o: &Other| SUpdate::default().topic(o.notes.clone()),
    );
    g.add_edge(START, "other").add_edge("other", END);
    let subs = g
        .compile()
        .unwrap()
        .into_served(Arc::new(MemorySaver::new()))
        .subgraphs(None, false);
    let props = subs["other"].state["properties"].as_object().unwrap();
    assert_eq!(props.keys().collect::<Vec<_>>(), ["notes"]);
}

#[tokio::test]
async fn a_missing_checkpoint_is_not_found_and_values_keep_the_declaration_order() {
    let (_dir, saver) = sqlite();
    let g = chain().into_served(saver);
    run(&g, request("m1", json!({"topic": "x"}), &[])).await;
    let missing = g.state("m1", Some("1f0-no-such-checkpoint"), false).await;
    assert!(
        matches!(missing, Err(GraphError::NotFound(ref m)) if m.contains("1f0-no-such-checkpoint")),
        "{missing:?}"
    );
    let edit = StateUpdate {
        checkpoint_id: Some("nope".into()),
        ..StateUpdate::default()
    };
    assert!(matches!(g.update_state("m1", edit).await, Err(GraphError::NotFound(_))));
    let state = g.state("m1", None, false).await.unwrap().unwrap();
    // `S` declares `topic` before `log`: LangGraph's values come out in that order.
    assert_eq!(state["values"].to_string(), r#"{"topic":"x","log":["a:x","b"]}"#);
}

#[tokio::test]
async fn a_resume_with_nothing_paused_ends_with_the_values_unchanged() {
    let (_dir, saver) = sqlite();
    let g = chain().into_served(saver);
    run(&g, request("r1", json!({"topic": "x"}), &[])).await;
    let mut r = request("r1", Value::Null, &[Mode::Values]);
    r.input = None;
    r.command = Some(json!({"resume": "yes"}));
    let (_, end) = run(&g, r).await;
    assert_eq!(
        end,
        RunEnd::Success {
            values: json!({"topic": "x", "log": ["a:x", "b"]})
        }
    );
    let history = g.history("r1", &HistoryQuery::default()).await.unwrap();
    assert_eq!(history.len(), 4, "the resume wrote nothing");
}

/// A run requeued after its worker wrote its last checkpoint (the worker stopped before it
/// recorded the end) runs again from the thread's head with no input: nothing is left to run,
/// and its outcome is the thread's values, not nothing.
#[tokio::test]
async fn a_run_from_the_head_of_a_finished_thread_ends_with_its_values() {
    let (_dir, saver) = sqlite();
    let g = chain().into_served(saver);
    run(&g, request("h1", json!({"topic": "x"}), &[])).await;
    for modes in [vec![], vec![Mode::Values, Mode::Updates]] {
        let mut r = request("h1", Value::Null, &modes);
        r.input = None;
        let (events, end) = run(&g, r).await;
        assert_eq!(
            end,
            RunEnd::Success {
                values: json!({"topic": "x", "log": ["a:x", "b"]})
            },
            "modes {modes:?}"
        );
        assert!(events.iter().all(|(e, _)| e != "updates"), "nothing ran: {events:?}");
    }
    let history = g.history("h1", &HistoryQuery::default()).await.unwrap();
    assert_eq!(history.len(), 4, "the runs from the head wrote nothing");
}

#[tokio::test]
async fn every_checkpoint_of_a_run_records_its_metadata_of_any_json() {
    let (_dir, saver) = sqlite();
    let g = chain().into_served(saver);
    let mut r = request("md1", json!({"topic": "x"}), &[]);
    r.run_id = "run-md".into();
    r.metadata.insert("graph_id".into(), json!("chain"));
    r.metadata.insert("assistant_id".into(), json!("a-1"));
    r.metadata.insert("run_attempt".into(), json!(1));
    r.metadata.insert("tags".into(), json!({"team": ["t1"]}));
    run(&g, r).await;
    let history = g.history("md1", &HistoryQuery::default()).await.unwrap();
    assert_eq!(history.len(), 4);
    for state in &history {
        let m = &state["metadata"];
        assert_eq!(
            (&m["run_id"], &m["graph_id"], &m["assistant_id"]),
            (&json!("run-md"), &json!("chain"), &json!("a-1"))
        );
        assert_eq!(
            (&m["run_attempt"], &m["tags"]),
            (&json!(1), &json!({"team": ["t1"]})),
            "{m}"
        );
        assert!(m.get("__json_metadata__").is_none(), "{m}");
    }
    let filter = HistoryQuery {
        metadata: Some(serde_json::from_value(json!({"run_attempt": 1})).unwrap()),
        ..HistoryQuery::default()
    };
    assert_eq!(g.history("md1", &filter).await.unwrap().len(), 4);
}

#[tokio::test]
async fn no_input_on_a_thread_without_a_checkpoint_is_an_empty_input_error() {
    let (_dir, saver) = sqlite();
    let g = chain().into_served(saver);
    let mut r = request("fresh", Value::Null, &[Mode::Values]);
    r.input = None;
    let (events, end) = run(&g, r).await;
    assert_eq!(events, vec![]);
    assert_eq!(
        end,
        RunEnd::Error {
            error: "EmptyInputError".into(),
            message: "Received no input for topic, log".into()
        }
    );
    assert!(
        g.state("fresh", None, false).await.unwrap().is_none(),
        "nothing written"
    );
}

// Two tasks of one step have two ids, each the same in the checkpoint before the step, its
// start and its result, in `tasks` and in `debug`.
#[tokio::test]
async fn two_tasks_of_a_step_have_two_ids_each_shown_alike_everywhere() {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("x", |_: &S| SUpdate::default().log(vec!["x".into()]));
    g.add_node("y", |_: &S| SUpdate::default().log(vec!["y".into()]));
    g.add_edge(START, "x").add_edge(START, "y");
    let g = g.compile().unwrap().into_served(Arc::new(MemorySaver::new()));
    let (events, _) = run(
        &g,
        request(
            "w1",
            json!({"topic": "t"}),
            &[Mode::Tasks, Mode::Checkpoints, Mode::Debug],
        ),
    )
    .await;
    let id_in = |kind: &str, name: &str| -> Vec<String> {
        let mut ids = Vec::new();
        for (event, data) in &events {
            let payload = if event == "debug" { &data["payload"] } else { data };
            let kind_of = if event == "debug" {
                data["type"].as_str().unwrap()
            } else {
                event.as_str()
            };
            let found: Vec<&Value> = match (kind_of, kind) {
                ("checkpoints" | "checkpoint", "checkpoint") => payload["tasks"].as_array().unwrap().iter().collect(),
                ("tasks" | "task" | "task_result", "task") => vec![payload],
                _ => continue,
            };
            ids.extend(
                found
                    .into_iter()
                    .filter(|t| t["name"] == name)
                    .map(|t| t["id"].as_str().unwrap().to_owned()),
            );
        }
        ids
    };
    let (x, y) = (id_in("task", "x"), id_in("task", "y"));
    // start and result, in `tasks` and in `debug`
    assert_eq!(x.len(), 4, "{events:?}");
    assert!(
        x.iter().all(|id| *id == x[0]) && y.iter().all(|id| *id == y[0]),
        "{x:?} {y:?}"
    );
    assert!(is_uuid(&x[0]) && is_uuid(&y[0]));
    assert_ne!(x[0], y[0]);
    assert_eq!(
        id_in("checkpoint", "x"),
        [x[0].clone(), x[0].clone()],
        "`checkpoints` and `debug`"
    );
    assert_eq!(id_in("checkpoint", "y"), [y[0].clone(), y[0].clone()]);
}

// The `events` mode shows a subgraph's tasks as LangGraph does, without `stream_subgraphs`: each
// a chain whose parent is the chain of the task running the subgraph (its `parent_ids` the run's,
// then that chain's), its step the subgraph's, its `langgraph_checkpoint_ns` the enclosing
// task's `inner:<id>` then its own `a:<id>`; the subgraph's task's chain streams and ends with
// the subgraph's output. No other mode shows the subgraph.
#[tokio::test]
async fn the_events_mode_shows_a_subgraphs_tasks_as_children_of_its_nodes_chain() {
    let (_dir, saver) = sqlite();
    let g = parent().into_served(saver);
    let r = request("s1", json!({"topic": "t"}), &[Mode::Events, Mode::Updates]);
    let (events, end) = run(&g, r).await;
    assert!(matches!(end, RunEnd::Interrupted { .. }), "{end:?}");
    assert!(
        events.iter().all(|(e, _)| e == "events" || e == "updates"),
        "no namespaced event: {events:?}"
    );
    let chains: Vec<&Value> = events.iter().filter(|(e, _)| e == "events").map(|(_, d)| d).collect();
    let order: Vec<String> = chains
        .iter()
        .map(|d| format!("{} {}", d["event"].as_str().unwrap(), d["name"].as_str().unwrap()))
        .collect();
    assert_eq!(
        order,
        [
            "on_chain_start LangGraph",
            "on_chain_start inner",
            "on_chain_start a",
            "on_chain_stream a",
            "on_chain_end a",
            "on_chain_start b",
            "on_chain_stream b",
            "on_chain_end b",
            "on_chain_stream inner",
            "on_chain_end inner",
            "on_chain_start ask",
            "on_chain_end LangGraph",
        ]
    );
    let (root, inner, a, b) = (chains[0], chains[1], chains[2], chains[5]);
    let root_run = root["run_id"].clone();
    assert_eq!(inner["parent_ids"], json!([root_run]));
    assert_eq!(a["parent_ids"], json!([root_run, inner["run_id"]]));
    assert_eq!(b["parent_ids"], a["parent_ids"]);
    assert_ne!(a["run_id"], b["run_id"]);
    let inner_ns = inner["metadata"]["langgraph_checkpoint_ns"].as_str().unwrap();
    assert!(inner_ns.strip_prefix("inner:").is_some_and(is_uuid), "{inner_ns}");
    let a_ns = a["metadata"]["langgraph_checkpoint_ns"].as_str().unwrap();
    let own = a_ns
        .strip_prefix(&format!("{inner_ns}|a:"))
        .unwrap_or_else(|| panic!("{a_ns} under {inner_ns}"));
    assert!(is_uuid(own), "{a_ns}");
    assert_eq!(a["metadata"]["langgraph_node"], "a");
    assert_eq!(a["metadata"]["langgraph_step"], 1, "the subgraph's own step");
    assert_eq!(a["tags"], json!(["graph:step:1"]));
    assert_eq!(
        a["data"]["input"],
        json!({"topic": "t", "log": []}),
        "the subgraph's state"
    );
    assert_eq!(chains[3]["data"]["chunk"], json!({"log": ["a:t"]}));
    assert_eq!(chains[6]["data"]["chunk"], json!({"log": ["b"]}));
    assert_eq!(chains[7]["data"]["input"], json!({"topic": "t", "log": ["a:t"]}));
    assert_eq!(chains[8]["data"]["chunk"], json!({"topic": "t", "log": ["a:t", "b"]}));
    // The same subgraph namespace as the events of `stream_subgraphs` and the task's id.
    let mut r = request("s2", json!({"topic": "t"}), &[Mode::Events, Mode::Tasks]);
    r.subgraphs = true;
    let (events, _) = run(&g, r).await;
    let inner_start = events
        .iter()
        .find(|(e, d)| e == "tasks" && d["name"] == "inner")
        .unwrap();
    let inner_chain = events
        .iter()
        .find(|(e, d)| e == "events" && d["name"] == "inner")
        .unwrap();
    let ns = format!("inner:{}", inner_start.1["id"].as_str().unwrap());
    assert_eq!(inner_chain.1["metadata"]["langgraph_checkpoint_ns"], json!(ns));
    let a_start = events
        .iter()
        .find(|(e, d)| e.starts_with("tasks|") && d["name"] == "a")
        .unwrap();
    assert_eq!(a_start.0, format!("tasks|{ns}"));
    let a_chain = events.iter().find(|(e, d)| e == "events" && d["name"] == "a").unwrap();
    assert_eq!(
        a_chain.1["metadata"]["langgraph_checkpoint_ns"],
        json!(format!("{ns}|a:{}", a_start.1["id"].as_str().unwrap()))
    );
}

// Two `Send`s to one node in one step are two tasks: the `events` mode gives each its own chain,
// which streams and ends with that task's own update.
#[tokio::test]
async fn the_events_mode_gives_each_send_to_a_node_its_own_chain() {
    let mut g = GraphBuilder::<S>::new();
    let worker = g.add_send_node("worker", |n: &u32, _: &Context| {
        SUpdate::default().log(vec![format!("w{n}")])
    });
    g.add_node("plan", |_: &S| SUpdate::default());
    g.add_edge(START, "plan");
    let w = worker.clone();
    g.add_router(
        "plan",
        move |_: &S| (0..2).map(|i| w.send(i)).collect::<Vec<_>>(),
        [&worker],
    );
    let g = g.compile().unwrap().into_served(Arc::new(MemorySaver::new()));
    let (events, _) = run(&g, request("sends", json!({"topic": "t"}), &[Mode::Events])).await;
    let mut by_chain: Vec<(String, Vec<String>, Value)> = Vec::new();
    for (_, d) in events.iter().filter(|(e, d)| e == "events" && d["name"] == "worker") {
        let run_id = d["run_id"].as_str().unwrap().to_owned();
        let at = match by_chain.iter().position(|c| c.0 == run_id) {
            Some(at) => at,
            None => {
                by_chain.push((run_id, Vec::new(), Value::Null));
                by_chain.len() - 1
            }
        };
        let event = d["event"].as_str().unwrap().to_owned();
        if event == "on_chain_stream" {
            by_chain[at].2 = d["data"]["chunk"].clone();
        }
        by_chain[at].1.push(event);
    }
    assert_eq!(by_chain.len(), 2, "one chain per task: {events:?}");
    for (_, order, _) in &by_chain {
        assert_eq!(order, &["on_chain_start", "on_chain_stream", "on_chain_end"]);
    }
    let mut chunks: Vec<&Value> = by_chain.iter().map(|c| &c.2).collect();
    chunks.sort_by_key(|c| c.to_string());
    assert_eq!(chunks, [&json!({"log": ["w0"]}), &json!({"log": ["w1"]})]);
}
