//! Issue 29 ("Fidelity"): levels that do not depend on the order of edges, runs that do not end
//! as done half-way, `else` branches that need an edge, `max_steps` per run, end nodes' edges.

use serde_json::{json, Value};
use weir_flow::{Event, Flow, LoadOptions, NodeImpl, Registry};

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

/// `plan`-like nodes: count the laps in `n` and log themselves.
fn counting(id: &str) -> Value {
    json!({"id": id, "type": "set", "data": {"assign": {"n": 1, "trace": id}}})
}

/// A condition taking `branch` while `n < laps`, `done` otherwise.
fn again(id: &str, branch: &str, laps: u32) -> Value {
    json!({"id": id, "type": "condition",
           "data": {"branches": [{"id": branch, "when": format!("n < {laps}")}], "else": "done"}})
}

/// Edges from `(source, handle, target)`, ids `e0`, `e1`, ... in order.
fn edges(list: &[(&str, Option<&str>, &str)]) -> Vec<Value> {
    list.iter()
        .enumerate()
        .map(|(i, (s, h, t))| match h {
            Some(h) => json!({"id": format!("e{i}"), "source": s, "sourceHandle": h, "target": t}),
            None => json!({"id": format!("e{i}"), "source": s, "target": t}),
        })
        .collect()
}

fn state() -> Value {
    json!({"trace": {"type": "list", "reducer": "append"}, "n": {"type": "number", "reducer": "add"}})
}

fn load(flow: &Value) -> Flow {
    Flow::from_value(flow, &registry(), LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// The nodes that ran, by step, and how the run ended.
async fn run(flow: &Flow) -> (Vec<(i64, String)>, Result<Value, String>) {
    let mut steps = Vec::new();
    let out = flow
        .invoke_with(json!({}), |e| {
            if let Event::Node { node, step, .. } = e {
                steps.push((step, node));
            }
        })
        .await;
    steps.sort();
    (
        steps,
        out.map(|s| Value::Object(s.to_json())).map_err(|e| e.to_string()),
    )
}

/// s -> fetch, s -> plan, [fetch, plan] -> merge -> review, review ? {redo -> plan, done -> e},
/// with the first two edges in the order given.
fn fetch_plan(plan_first: bool) -> Value {
    let mut first = vec![("s", None, "fetch"), ("s", None, "plan")];
    if plan_first {
        first.reverse();
    }
    first.extend([
        ("fetch", None, "merge"),
        ("plan", None, "merge"),
        ("merge", None, "review"),
        ("review", Some("redo"), "plan"),
        ("review", Some("done"), "e"),
    ]);
    json!({
        "nodes": [node("s", "start"), node("fetch", "log"), counting("plan"), node("merge", "log"),
                  again("review", "redo", 2), node("e", "end")],
        "edges": edges(&first),
        "state": state()
    })
}

/// s -> a, s -> b, a -> b, b -> c, c ? {again -> a, done -> e}, the first two edges in the order
/// given.
fn chain_loop(b_first: bool) -> Value {
    let mut first = vec![("s", None, "a"), ("s", None, "b")];
    if b_first {
        first.reverse();
    }
    first.extend([
        ("a", None, "b"),
        ("b", None, "c"),
        ("c", Some("again"), "a"),
        ("c", Some("done"), "e"),
    ]);
    json!({
        "nodes": [node("s", "start"), counting("a"), node("b", "log"), again("c", "again", 2), node("e", "end")],
        "edges": edges(&first),
        "state": state()
    })
}

fn lv(pairs: &[(&str, usize)]) -> Vec<(String, Option<usize>)> {
    pairs.iter().map(|(n, l)| ((*n).to_owned(), Some(*l))).collect()
}

#[tokio::test]
async fn a_loop_back_into_a_fan_in_runs_to_the_end_in_either_edge_order() {
    let (one, two) = (load(&fetch_plan(false)), load(&fetch_plan(true)));
    // `plan` is re-entered from `review`, on a longer simple path than `merge`'s: `merge`
    // waits for no one.
    let want = lv(&[
        ("s", 1),
        ("fetch", 2),
        ("plan", 5),
        ("merge", 3),
        ("review", 4),
        ("e", 5),
    ]);
    assert_eq!(one.levels(), want);
    assert_eq!(two.levels(), want);
    assert!(one.joins().is_empty() && two.joins().is_empty());
    let (steps, out) = run(&one).await;
    assert_eq!((steps.clone(), out.clone()), run(&two).await);
    let names: Vec<&str> = steps.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(
        names,
        ["s", "fetch", "plan", "merge", "review", "plan", "merge", "review", "e"]
    );
    assert_eq!(out.unwrap()["n"], json!(2));
}

#[tokio::test]
async fn a_loop_through_a_chain_runs_to_the_end_in_either_edge_order() {
    let (one, two) = (load(&chain_loop(false)), load(&chain_loop(true)));
    let want = lv(&[("s", 1), ("a", 4), ("b", 3), ("c", 4), ("e", 5)]);
    assert_eq!(one.levels(), want);
    assert_eq!(two.levels(), want);
    assert!(one.joins().is_empty() && two.joins().is_empty());
    let (steps, out) = run(&one).await;
    assert_eq!((steps.clone(), out.clone()), run(&two).await);
    assert!(out.is_ok(), "{out:?}");
    assert!(steps.iter().any(|(_, n)| n == "e"), "{steps:?}");
}

#[tokio::test]
async fn a_run_that_stops_before_an_end_node_with_a_join_waiting_fails_naming_it() {
    // s -> a, s -> c; c ? {x -> b, else -> d}; [a, b] -> t -> e; `d` goes nowhere. With n = 0, c
    // takes `else`: `t` has `a` and waits for `b`, and nothing reaches an end node.
    let flow = load(&json!({
        "nodes": [node("s", "start"), node("a", "log"), node("b", "log"), node("d", "log"), node("t", "log"),
                  {"id": "c", "type": "condition", "data": {"branches": [{"id": "x", "when": "n > 0"}]}},
                  node("e", "end")],
        "edges": edges(&[("s", None, "a"), ("s", None, "c"), ("c", Some("x"), "b"), ("c", Some("else"), "d"),
                         ("a", None, "t"), ("b", None, "t"), ("t", None, "e")]),
        "state": state()
    }));
    assert_eq!(flow.joins(), [("t".to_owned(), vec!["a".to_owned(), "b".to_owned()])]);
    let err = flow.invoke(json!({"n": 0})).await.unwrap_err();
    assert_eq!(err.node(), Some("t"));
    assert_eq!(
        err.to_string(),
        "the run stopped before reaching an end node: join `t` still waits for `b` (it has `a`)"
    );
    // The other branch fills the join and reaches the end.
    let out = flow.invoke(json!({"n": 1})).await.unwrap();
    assert_eq!(out.get("trace"), Some(&json!(["a", "b", "t"])));
}

fn load_err(flow: &Value) -> Vec<(String, Option<String>, String)> {
    let e = Flow::from_value(flow, &registry(), LoadOptions::default()).unwrap_err();
    e.diagnostics()
        .iter()
        .map(|d| (d.path().to_owned(), d.id().map(str::to_owned), d.message().to_owned()))
        .collect()
}

#[test]
fn an_else_branch_without_an_edge_is_a_load_error_naming_the_node_and_the_branch() {
    // The default `else`.
    let got = load_err(&json!({
        "nodes": [node("s", "start"), {"id": "c", "type": "condition", "data": {"branches": [{"id": "hot", "when": "n > 3"}]}},
                  node("e", "end")],
        "edges": edges(&[("s", None, "c"), ("c", Some("hot"), "e")]),
        "state": state()
    }));
    assert_eq!(
        got,
        [(
            "$.nodes[1].data".to_owned(),
            Some("c".to_owned()),
            "branch `else` of condition node `c` has no edge; every branch needs one: connect `else` to the node that runs when no other branch is taken".to_owned()
        )]
    );
    // A named one, reported where it is named.
    let got = load_err(&json!({
        "nodes": [node("s", "start"),
                  {"id": "c", "type": "condition", "data": {"branches": [{"id": "hot", "when": "n > 3"}], "else": "mild"}},
                  node("e", "end")],
        "edges": edges(&[("s", None, "c"), ("c", Some("hot"), "e")]),
        "state": state()
    }));
    assert_eq!(
        got,
        [(
            "$.nodes[1].data.else".to_owned(),
            Some("c".to_owned()),
            "branch `mild` of condition node `c` has no edge; every branch needs one: connect `mild` to the node that runs when no other branch is taken".to_owned()
        )]
    );
}

#[test]
fn an_edge_out_of_an_end_node_is_rejected_not_ignored() {
    // The seed ignores an end node's out-edges; weir refuses them, since nothing would run them.
    let got = load_err(&json!({
        "nodes": [node("s", "start"), node("a", "log"), node("e", "end")],
        "edges": edges(&[("s", None, "a"), ("a", None, "e"), ("e", None, "a")]),
        "state": state()
    }));
    assert_eq!(
        got,
        [(
            "$.edges[2]".to_owned(),
            Some("e2".to_owned()),
            "edge `e2` leaves end node `e`; nothing runs after an end node".to_owned()
        )]
    );
}

#[tokio::test]
async fn max_steps_counts_the_runs_of_a_node_in_one_run_not_on_the_thread() {
    // body runs 4 times a run (i counts 1..4 from the input's 0); max_steps 10; three runs on
    // one thread make 12 runs of body, which is fine: each run counts its own.
    let flow = Flow::from_value(
        &json!({
            "nodes": [node("s", "start"),
                      {"id": "body", "type": "set", "data": {"assign": {"i": "{{ i + 1 }}"}}},
                      {"id": "check", "type": "condition", "data": {"branches": [{"id": "done", "when": "i >= 4"}], "else": "again"}},
                      node("e", "end")],
            "edges": edges(&[("s", None, "body"), ("body", None, "check"), ("check", Some("again"), "body"),
                             ("check", Some("done"), "e")]),
            "state": {"i": {"type": "number"}}
        }),
        &registry(),
        LoadOptions::default().checkpointer(weir_runtime::checkpoint::MemorySaver::new()),
    )
    .unwrap();
    for lap in 0..3 {
        let out = flow.run(json!({"i": 0}), Some("t"), |_| {}).await;
        let out = out.unwrap_or_else(|e| panic!("run {lap}: {e}"));
        assert_eq!(out.state().get("i"), Some(&json!(4)), "run {lap}");
    }
}

/// s -> body -> check ? {again -> body, done -> e}, looping while `n < laps`.
fn endless(laps: u32) -> Value {
    json!({
        "nodes": [node("s", "start"), counting("body"), again("check", "again", laps), node("e", "end")],
        "edges": edges(&[("s", None, "body"), ("body", None, "check"), ("check", Some("again"), "body"),
                         ("check", Some("done"), "e")]),
        "state": state()
    })
}

#[tokio::test]
async fn the_recursion_limit_can_be_set_and_its_message_says_how_to_raise_it() {
    let options = LoadOptions::default().recursion_limit(6);
    let flow = Flow::from_value(&endless(100), &registry(), options).unwrap();
    assert_eq!(flow.recursion_limit(), 6);
    let err = flow.invoke(json!({})).await.unwrap_err();
    assert!(err.is_recursion_limit());
    assert_eq!(
        err.to_string(),
        "the run reached its recursion limit of 6 steps before an end node; a loop may not stop: \
         check its condition, or raise the limit with `LoadOptions::recursion_limit`"
    );
    // A front end says its own way.
    let err = err.raise_limit_with("with `--steps`");
    assert!(err.is_recursion_limit());
    assert!(err.to_string().ends_with("raise the limit with `--steps`"), "{err}");
    // Raised enough, a loop of 3 laps ends: start, 2 steps a lap, end.
    let flow = Flow::from_value(&endless(3), &registry(), LoadOptions::default().recursion_limit(9)).unwrap();
    let out = flow.invoke(json!({})).await.unwrap();
    assert_eq!(out.get("n"), Some(&json!(3)));
}

#[tokio::test]
async fn a_choice_the_question_does_not_offer_is_refused_and_the_question_stays() {
    let flow = Flow::from_value(
        &json!({
            "nodes": [node("s", "start"),
                      {"id": "ask", "type": "output", "data": {"message": "Refund?", "choices": [{"id": "yes"}, {"id": "no"}]}},
                      node("ok", "log"), node("ko", "log"), node("e", "end")],
            "edges": edges(&[("s", None, "ask"), ("ask", Some("yes"), "ok"), ("ask", Some("no"), "ko"),
                             ("ok", None, "e"), ("ko", None, "e")]),
            "state": state()
        }),
        &registry(),
        LoadOptions::default().checkpointer(weir_runtime::checkpoint::MemorySaver::new()),
    )
    .unwrap();
    let out = flow.run(json!({}), Some("t"), |_| {}).await.unwrap();
    assert!(matches!(out, weir_flow::Outcome::Paused { .. }));
    let err = flow.resume("t", Some("maybe"), |_| {}).await.unwrap_err();
    assert_eq!(err.node(), Some("ask"));
    assert_eq!(
        err.to_string(),
        "`maybe` is not a choice of the paused question: node `ask` asks \"Refund?\" and its choices \
         are `yes`, `no`; the question is still waiting"
    );
    let snap = flow.state("t").await.unwrap().unwrap();
    assert_eq!(snap.pauses.len(), 1);
    let out = flow.resume("t", Some("no"), |_| {}).await.unwrap();
    assert_eq!(out.state().get("trace"), Some(&json!(["ko"])));
}
