//! The seed's loading rules, each on a small flow: notes skipped, joins, loops, max_steps,
//! recursion limit, conditions, set, output.

use serde_json::{json, Value};
use weir_flow::{Event, Flow, LoadOptions, NodeImpl, Outcome, Registry};

fn load(flow: Value) -> Flow {
    Flow::from_value(&flow, &registry(), LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// The built-ins, plus `log`: appends its `data.name` to the `trace` list field.
fn registry() -> Registry {
    #[derive(serde::Deserialize)]
    struct Log {
        name: String,
    }
    let mut r = Registry::new();
    r.register("log", |d: Log| {
        Ok(
            NodeImpl::sync(move |_| Ok([("trace".to_owned(), json!([d.name.clone()]))].into_iter().collect()))
                .writes(["trace"]),
        )
    });
    r
}

fn node(id: &str, kind: &str) -> Value {
    json!({"id": id, "type": kind, "data": if kind == "log" { json!({"name": id}) } else { json!({}) }})
}

fn edge(id: &str, s: &str, t: &str) -> Value {
    json!({"id": id, "source": s, "target": t})
}

fn trace_state() -> Value {
    json!({"trace": {"type": "list", "reducer": "append"}, "n": {"type": "number", "reducer": "add"}})
}

async fn run_events(
    flow: &Flow,
    input: Value,
) -> (Result<weir_flow::FlowState, weir_flow::RunError>, Vec<(i64, String)>) {
    let mut steps = Vec::new();
    let r = flow
        .invoke_with(input, |e| {
            if let Event::Node { node, step, .. } = e {
                steps.push((step, node));
            }
        })
        .await;
    steps.sort();
    (r, steps)
}

#[tokio::test]
async fn note_nodes_and_their_edges_are_skipped() {
    let flow = load(json!({
        "nodes": [node("s", "start"), {"id": "memo", "type": "note", "data": {"text": "remember"}}, node("a", "log"), node("e", "end")],
        "edges": [edge("e1", "s", "a"), edge("e2", "a", "e"), edge("e3", "memo", "a")],
        "state": trace_state()
    }));
    assert_eq!(
        flow.levels().iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        ["s", "a", "e"]
    );
    let out = flow.invoke(json!({})).await.unwrap();
    assert_eq!(out.get("trace"), Some(&json!(["a"])));
}

#[tokio::test]
async fn a_diamonds_join_waits_for_both_sides() {
    // s -> a -> b -> d; s -> a -> c1 -> c2 -> d: d is a join of b and c2, which finish at
    // different steps; it runs once, after both.
    let flow = load(json!({
        "nodes": [node("s", "start"), node("a", "log"), node("b", "log"), node("c1", "log"), node("c2", "log"), node("d", "log"), node("e", "end")],
        "edges": [edge("1", "s", "a"), edge("2", "a", "b"), edge("3", "a", "c1"), edge("4", "c1", "c2"),
                  edge("5", "b", "d"), edge("6", "c2", "d"), edge("7", "d", "e")],
        "state": trace_state()
    }));
    assert_eq!(flow.joins(), [("d".to_owned(), vec!["b".to_owned(), "c2".to_owned()])]);
    let (out, steps) = run_events(&flow, json!({})).await;
    let out = out.unwrap();
    assert_eq!(out.get("trace"), Some(&json!(["a", "b", "c1", "c2", "d"])));
    let d_steps: Vec<i64> = steps.iter().filter(|(_, n)| n == "d").map(|(s, _)| *s).collect();
    let c2_step = steps.iter().find(|(_, n)| n == "c2").unwrap().0;
    assert_eq!(d_steps, [c2_step + 1]);
}

#[tokio::test]
async fn exclusive_branches_merge_without_waiting() {
    // c ? {x -> a, y -> b}; a -> m; b -> m: m runs after whichever branch ran.
    let flow = load(json!({
        "nodes": [node("s", "start"),
                  {"id": "c", "type": "condition", "data": {"branches": [{"id": "x", "when": "n > 0"}], "else": "y"}},
                  node("a", "log"), node("b", "log"), node("m", "log"), node("e", "end")],
        "edges": [edge("1", "s", "c"), {"id": "2", "source": "c", "sourceHandle": "x", "target": "a"},
                  {"id": "3", "source": "c", "sourceHandle": "y", "target": "b"},
                  edge("4", "a", "m"), edge("5", "b", "m"), edge("6", "m", "e")],
        "state": trace_state()
    }));
    assert!(flow.joins().is_empty());
    let out = flow.invoke(json!({"n": 0})).await.unwrap();
    assert_eq!(out.get("trace"), Some(&json!(["b", "m"])));
    let out = flow.invoke(json!({"n": 1})).await.unwrap();
    assert_eq!(out.get("trace"), Some(&json!(["a", "m"])));
}

/// s -> body -> check ? {again -> body, done -> e}: `body` has two inputs, `s` and the back edge.
fn refine_loop(max_steps: Option<u32>, until: &str) -> Value {
    let mut body = json!({"id": "body", "type": "set", "data": {"assign": {"n": 1, "trace": "{{ n }}"}}});
    if let Some(m) = max_steps {
        body["data"]["max_steps"] = json!(m);
    }
    json!({
        "nodes": [node("s", "start"), body,
                  {"id": "check", "type": "condition", "data": {"branches": [{"id": "done", "when": until}], "else": "again"}},
                  node("e", "end")],
        "edges": [edge("1", "s", "body"), edge("2", "body", "check"),
                  {"id": "3", "source": "check", "sourceHandle": "again", "target": "body"},
                  {"id": "4", "source": "check", "sourceHandle": "done", "target": "e"}],
        "state": {"n": {"type": "number", "reducer": "add"}, "trace": {"type": "list", "reducer": "append"}}
    })
}

#[tokio::test]
async fn a_loops_entry_node_does_not_wait_for_its_back_edge() {
    let flow = load(refine_loop(None, "n >= 3"));
    assert!(flow.joins().is_empty());
    assert_eq!(
        flow.levels(),
        [
            ("s".to_owned(), Some(1)),
            ("body".to_owned(), Some(2)),
            ("check".to_owned(), Some(3)),
            ("e".to_owned(), Some(4))
        ]
    );
    let out = flow.invoke(json!({})).await.unwrap();
    assert_eq!(out.get("n"), Some(&json!(3)));
    // A template for a list field is read as JSON: each run appends the number it saw.
    assert_eq!(out.get("trace"), Some(&json!([0, 1, 2])));
}

#[tokio::test]
async fn a_condition_does_integer_arithmetic_on_a_count() {
    // A count holds non-negative integers: `%` and `-` against `int` literals work on it.
    let flow = load(refine_loop(None, "n % 5 == 0 && n - 1 > 0 && state.n * 2 == 10"));
    let out = flow.invoke(json!({})).await.unwrap();
    assert_eq!(out.get("n"), Some(&json!(5)));
    assert_eq!(out.get("trace"), Some(&json!([0, 1, 2, 3, 4])));
}

#[tokio::test]
async fn max_steps_stops_a_runaway_loop_naming_the_node() {
    let flow = load(refine_loop(Some(4), "false"));
    let err = flow.invoke(json!({})).await.unwrap_err();
    assert_eq!(err.node(), Some("body"));
    assert!(!err.is_recursion_limit());
    assert_eq!(
        err.to_string(),
        "node `body` failed at step 10: node `body` reached its max_steps (4): it already ran 4 times in this run"
    );
}

#[test]
fn recursion_limit_follows_the_seed_formula() {
    // 4 nodes, 1 end, max_steps 10: max((4 - 1 - 1) * 10, 1) + 1 + 1 = 22.
    assert_eq!(load(refine_loop(None, "true")).recursion_limit(), 22);
    // The largest max_steps of any node counts.
    assert_eq!(load(refine_loop(Some(30), "true")).recursion_limit(), 62);
    // One start and one end: max(0 * 10, 1) + 2 = 3.
    let tiny = load(json!({"nodes": [node("s", "start"), node("e", "end")], "edges": [edge("1", "s", "e")]}));
    assert_eq!(tiny.recursion_limit(), 3);
    // An output that asks has a hidden node after it, as the seed's fake output node:
    // 5 nodes + 1, 1 end: max((6 - 1 - 1) * 10, 1) + 1 + 1 = 42.
    assert_eq!(load(approval_flow()).recursion_limit(), 42);
}

#[tokio::test]
async fn set_renders_templates_and_reads_them_as_the_fields_type() {
    let flow = load(json!({
        "nodes": [node("s", "start"),
                  {"id": "w", "type": "set", "data": {"assign": {"title": "{{ name | upper }}!", "score": "{{ score * 2 }}", "ok": true}}},
                  node("e", "end")],
        "edges": [edge("1", "s", "w"), edge("2", "w", "e")],
        "state": {"name": {"type": "string"}, "title": {"type": "string"}, "score": {"type": "number"}, "ok": {"type": "bool"}}
    }));
    let out = flow.invoke(json!({"name": "ada", "score": 21})).await.unwrap();
    assert_eq!(
        Value::Object(out.to_json()),
        json!({"name": "ada", "title": "ADA!", "score": 42, "ok": true})
    );
}

#[tokio::test]
async fn a_node_writing_the_wrong_type_at_run_time_fails_naming_it() {
    let flow = load(json!({
        "nodes": [node("s", "start"), {"id": "w", "type": "set", "data": {"assign": {"score": "{{ name }}"}}}, node("e", "end")],
        "edges": [edge("1", "s", "w"), edge("2", "w", "e")],
        "state": {"name": {"type": "string"}, "score": {"type": "number"}}
    }));
    let err = flow.invoke(json!({"name": "ada"})).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "node `w` failed at step 2: template for `score` gave `ada`, which is not a number"
    );
}

#[tokio::test]
async fn two_writes_to_a_last_field_in_one_step_name_the_field() {
    let mut r = registry();
    r.register("put", |_: Value| {
        Ok(NodeImpl::sync(|_| {
            Ok([("x".to_owned(), json!("v"))].into_iter().collect())
        }))
    });
    let flow = Flow::from_value(
        &json!({
            "nodes": [node("s", "start"), node("a", "put"), node("b", "put"), node("e", "end")],
            "edges": [edge("1", "s", "a"), edge("2", "s", "b"), edge("3", "a", "e"), edge("4", "b", "e")],
            "state": {"x": {"type": "string"}}
        }),
        &r,
        LoadOptions::default(),
    )
    .unwrap();
    let err = flow.invoke(json!({})).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "field `x` at step 2: can receive only one value per step, got 2; give the field a reducer to take several (written by nodes `a` and `b`)"
    );
}

fn approval_flow() -> Value {
    json!({
        "nodes": [node("s", "start"),
                  {"id": "ask", "type": "output", "data": {"message": "Refund {{ amount }}?", "to": "log",
                   "choices": [{"id": "yes", "label": "Approve"}, {"id": "no"}]}},
                  {"id": "ok", "type": "set", "data": {"assign": {"verdict": "approved"}}},
                  {"id": "ko", "type": "set", "data": {"assign": {"verdict": "declined"}}},
                  node("e", "end")],
        "edges": [edge("1", "s", "ask"), {"id": "2", "source": "ask", "sourceHandle": "yes", "target": "ok"},
                  {"id": "3", "source": "ask", "sourceHandle": "no", "target": "ko"},
                  edge("4", "ok", "e"), edge("5", "ko", "e")],
        "state": {"amount": {"type": "number"}, "verdict": {"type": "string"}, "log": {"type": "list", "reducer": "append"}}
    })
}

/// The text of each `message` event.
fn messages(into: &mut Vec<String>) -> impl FnMut(Event) + '_ {
    |e| {
        if let Event::Message { text, .. } = e {
            into.push(text);
        }
    }
}

#[tokio::test]
async fn output_sends_its_message_then_pauses_for_a_choice_and_routes_on_it() {
    // Seed 003: the output node runs first (its message is sent, its write applied), then a
    // node after it stops the run, and the choice routes from there.
    let options = LoadOptions::default().checkpointer(weir_runtime::checkpoint::MemorySaver::new());
    let flow = Flow::from_value(&approval_flow(), &registry(), options).unwrap();
    let mut sent = Vec::new();
    let outcome = flow
        .run(json!({"amount": 30}), Some("t"), messages(&mut sent))
        .await
        .unwrap();
    let Outcome::Paused { pauses, state } = outcome else {
        panic!("the run pauses")
    };
    assert_eq!(sent, ["Refund 30?"], "the message is out before the question");
    assert_eq!(state.get("log"), Some(&json!(["Refund 30?"])), "and its write applied");
    assert_eq!(pauses.len(), 1);
    assert_eq!(
        (pauses[0].node.as_str(), pauses[0].question.as_str()),
        ("ask", "Refund 30?")
    );
    assert_eq!(
        pauses[0]
            .choices
            .iter()
            .map(|c| (c.id.as_str(), c.label.as_str()))
            .collect::<Vec<_>>(),
        [("yes", "Approve"), ("no", "no")]
    );
    let snap = flow.state("t").await.unwrap().unwrap();
    assert_eq!(
        (snap.next, snap.writes),
        (vec!["ask".to_owned()], vec!["ask".to_owned()])
    );
    let mut sent = Vec::new();
    let outcome = flow.resume("t", Some("no"), messages(&mut sent)).await.unwrap();
    let Outcome::Done(state) = outcome else {
        panic!("the run is done")
    };
    assert!(sent.is_empty(), "the output does not run again: {sent:?}");
    assert_eq!(state.get("verdict"), Some(&json!("declined")));
    assert_eq!(state.get("log"), Some(&json!(["Refund 30?"])));
}

/// s -> note (output, `pause: true`, no choices) -> e, with `after` between them when given.
fn acknowledgement_flow() -> Value {
    json!({
        "nodes": [node("s", "start"),
                  {"id": "note", "type": "output", "data": {"message": "Shipped {{ n }} parcels", "to": "trace", "pause": true}},
                  node("after", "log"), node("e", "end")],
        "edges": [edge("1", "s", "note"), edge("2", "note", "after"), edge("3", "after", "e")],
        "state": trace_state()
    })
}

#[tokio::test]
async fn output_without_choices_pauses_for_an_acknowledgement_when_asked_to() {
    let options = LoadOptions::default().checkpointer(weir_runtime::checkpoint::MemorySaver::new());
    let flow = Flow::from_value(&acknowledgement_flow(), &registry(), options).unwrap();
    let mut sent = Vec::new();
    let outcome = flow.run(json!({"n": 2}), Some("t"), messages(&mut sent)).await.unwrap();
    let Outcome::Paused { pauses, state } = outcome else {
        panic!("the run pauses")
    };
    assert_eq!(sent, ["Shipped 2 parcels"]);
    assert_eq!(state.get("trace"), Some(&json!(["Shipped 2 parcels"])));
    assert_eq!(pauses.len(), 1);
    assert_eq!(
        pauses[0].to_string(),
        "node `note` asks for an acknowledgement: Shipped 2 parcels"
    );
    assert!(pauses[0].choices.is_empty());
    // A choice is refused, and the question stays.
    let err = flow.resume("t", Some("yes"), |_| {}).await.unwrap_err();
    assert_eq!(err.node(), Some("note"));
    assert_eq!(
        err.to_string(),
        "node `note` asks for an acknowledgement, not a choice: resume without `yes`; the question is still waiting"
    );
    // Resuming without a choice acknowledges it; the output does not run again.
    let mut sent = Vec::new();
    let outcome = flow.resume("t", None, messages(&mut sent)).await.unwrap();
    let Outcome::Done(state) = outcome else {
        panic!("the run is done")
    };
    assert!(sent.is_empty(), "{sent:?}");
    assert_eq!(state.get("trace"), Some(&json!(["Shipped 2 parcels", "after"])));

    // Without `pause`, the same output does not stop the run.
    let mut plain = acknowledgement_flow();
    plain["nodes"][1]["data"].as_object_mut().unwrap().remove("pause");
    let state = load(plain).invoke(json!({"n": 2})).await.unwrap();
    assert_eq!(state.get("trace"), Some(&json!(["Shipped 2 parcels", "after"])));
}

#[test]
fn output_with_choices_cannot_be_told_not_to_pause() {
    let mut flow = approval_flow();
    flow["nodes"][1]["data"]["pause"] = json!(false);
    let err = Flow::from_value(&flow, &registry(), LoadOptions::default()).unwrap_err();
    let first = err.to_string().lines().next().unwrap().to_owned();
    assert_eq!(
        first,
        "$.nodes[1].data.pause: node `ask`: an output with choices always pauses for the choice; remove `pause` or set it to true"
    );
}

#[tokio::test]
async fn output_that_pauses_needs_a_checkpointer_and_fails_before_its_message() {
    for (flow, input) in [
        (approval_flow(), json!({"amount": 30})),
        (acknowledgement_flow(), json!({"n": 1})),
    ] {
        let flow = load(flow);
        let mut sent = Vec::new();
        let err = flow.invoke_with(input, messages(&mut sent)).await.unwrap_err();
        let node = err.node().unwrap().to_owned();
        assert!(sent.is_empty(), "{sent:?}");
        assert_eq!(
            err.to_string(),
            format!(
                "node `{node}` failed at step 2: it pauses for a person's answer, which needs a checkpointer: load \
                 the flow with `LoadOptions::checkpointer` and run it on a thread"
            )
        );
    }
}

#[tokio::test]
async fn a_resumed_flow_counts_its_recursion_limit_from_the_resume() {
    // The run pauses after `ask` (steps: start 0, s 1, ask 2, its question 3); the resume runs
    // from step 3: the question, `ko` and `e`, and the step that finds nothing left, at 6 — so
    // a limit of 2 is enough (stop = 3 + 2 + 1), and 1 is not, whatever the first run used.
    for (limit, ok) in [(2, true), (1, false)] {
        let saver = weir_runtime::checkpoint::MemorySaver::new();
        let first = Flow::from_value(
            &approval_flow(),
            &registry(),
            LoadOptions::default().checkpointer(saver.clone()),
        )
        .unwrap();
        assert!(matches!(
            first.run(json!({"amount": 30}), Some("t"), |_| {}).await.unwrap(),
            Outcome::Paused { .. }
        ));
        let options = LoadOptions::default().checkpointer(saver).recursion_limit(limit);
        let flow = Flow::from_value(&approval_flow(), &registry(), options).unwrap();
        let resumed = flow.resume("t", Some("no"), |_| {}).await;
        if ok {
            let Outcome::Done(state) = resumed.unwrap() else {
                panic!("the run is done")
            };
            assert_eq!(state.get("verdict"), Some(&json!("declined")));
        } else {
            let err = resumed.unwrap_err();
            assert!(err.is_recursion_limit(), "{err}");
            assert_eq!(
                err.to_string(),
                "the run reached its recursion limit of 1 steps before an end node; a loop may not stop: check \
                 its condition, or raise the limit with `LoadOptions::recursion_limit`"
            );
        }
    }
}

#[tokio::test]
async fn input_fields_are_checked_against_the_declaration() {
    let flow = load(refine_loop(None, "true"));
    let err = flow.invoke(json!({"n": "three"})).await.unwrap_err();
    assert_eq!(err.to_string(), "input field `n` is a string; it is declared number");
    let err = flow.invoke(json!({"m": 1})).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "input field `m` is not declared; declared fields are `n`, `trace`"
    );
}

#[test]
fn a_node_id_may_not_take_the_name_of_an_outputs_question() {
    let mut flow = approval_flow();
    flow["nodes"][2]["id"] = json!("ask#ask");
    flow["edges"][1]["target"] = json!("ask#ask");
    flow["edges"][3]["source"] = json!("ask#ask");
    let err = Flow::from_value(&flow, &registry(), LoadOptions::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "$.nodes[2].id: node id `ask#ask` may not end with `#ask`: weir names the question of an `output` node so"
    );
}
