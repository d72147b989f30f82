//! Every load error, with its message, JSON path and id; several at once.

use serde_json::{json, Value};
use weir_flow::{Flow, LoadOptions, Registry};

/// `(path, id, message)` of every problem.
fn problems(flow: Value) -> Vec<(String, Option<String>, String)> {
    let e = Flow::from_value(&flow, &Registry::new(), LoadOptions::default()).expect_err("the flow is refused");
    e.diagnostics()
        .iter()
        .map(|d| (d.path().to_owned(), d.id().map(str::to_owned), d.message().to_owned()))
        .collect()
}

fn p(path: &str, id: Option<&str>, message: &str) -> (String, Option<String>, String) {
    (path.to_owned(), id.map(str::to_owned), message.to_owned())
}

fn ok_nodes() -> Vec<Value> {
    vec![json!({"id": "s", "type": "start"}), json!({"id": "e", "type": "end"})]
}

#[test]
fn unknown_node_type() {
    let mut nodes = ok_nodes();
    nodes.push(json!({"id": "c", "type": "conditon"}));
    nodes.push(json!({"id": "l", "type": "llm"}));
    let got = problems(json!({"nodes": nodes, "edges": [{"id": "1", "source": "s", "target": "e"}]}));
    assert_eq!(
        got,
        [
            p("$.nodes[2].type", Some("c"), "node `c` has unknown type `conditon`; did you mean `condition`?"),
            p(
                "$.nodes[3].type",
                Some("l"),
                "node `l` has unknown type `llm`; registered types are `condition`, `end`, `note`, `output`, `set`, `start`"
            ),
        ]
    );
}

#[test]
fn dangling_edges() {
    let got = problems(json!({
        "nodes": ok_nodes(),
        "edges": [{"id": "1", "source": "s", "target": "ee"}, {"id": "2", "source": "ghost", "target": "e"}, {"id": "3", "source": "s", "target": "e"}]
    }));
    assert_eq!(
        got,
        [
            p(
                "$.edges[0].target",
                Some("1"),
                "edge `1` leads to unknown node `ee`; did you mean `e`?"
            ),
            p(
                "$.edges[1].source",
                Some("2"),
                "edge `2` leads from unknown node `ghost`; node ids are `s`, `e`"
            ),
        ]
    );
}

#[test]
fn missing_start_and_end() {
    let got = problems(json!({"nodes": [{"id": "a", "type": "set", "data": {"assign": {}}}], "edges": []}));
    assert_eq!(
        got,
        [
            p(
                "$.nodes",
                None,
                "the flow has no `start` node; add one where the run begins"
            ),
            p(
                "$.nodes",
                None,
                "the flow has no `end` node; add one where the run finishes"
            ),
        ]
    );
}

#[test]
fn a_second_start_node() {
    let mut nodes = ok_nodes();
    nodes.push(json!({"id": "s2", "type": "start"}));
    let got = problems(
        json!({"nodes": nodes, "edges": [{"id": "1", "source": "s", "target": "e"}, {"id": "2", "source": "s2", "target": "e"}]}),
    );
    assert_eq!(
        got,
        [p(
            "$.nodes[2].type",
            Some("s2"),
            "node `s2` is a second `start` node (the first is `s`); a flow has one"
        )]
    );
}

#[test]
fn a_condition_branch_with_no_edge() {
    let mut nodes = ok_nodes();
    nodes.push(json!({"id": "c", "type": "condition", "data": {"branches": [
        {"id": "hot", "when": "t > 30"}, {"id": "cold", "when": "t < 5"}]}}));
    let got = problems(json!({
        "nodes": nodes,
        "edges": [{"id": "1", "source": "s", "target": "c"}, {"id": "2", "source": "c", "sourceHandle": "hot", "target": "e"},
                  {"id": "3", "source": "c", "sourceHandle": "else", "target": "e"}],
        "state": {"t": {"type": "number"}}
    }));
    assert_eq!(
        got,
        [p(
            "$.nodes[2].data.branches[1]",
            Some("c"),
            "branch `cold` of condition node `c` has no edge; connect it or remove it"
        )]
    );
}

#[test]
fn condition_edges_need_a_known_handle_and_expressions_must_parse() {
    let mut nodes = ok_nodes();
    nodes.push(json!({"id": "c", "type": "condition", "data": {"branches": [{"id": "a", "when": "t >"}]}}));
    nodes.push(json!({"id": "d", "type": "condition", "data": {"branches": [{"id": "a", "when": "t > 1"}]}}));
    let got = problems(json!({
        "nodes": nodes,
        "edges": [{"id": "1", "source": "s", "target": "d"}, {"id": "2", "source": "d", "target": "e"},
                  {"id": "3", "source": "d", "sourceHandle": "b", "target": "e"}],
        "state": {"t": {"type": "number"}}
    }));
    assert_eq!(got.len(), 6, "{got:#?}");
    assert_eq!(got[0].0, "$.nodes[2].data.branches[0].when");
    assert_eq!(
        got[0].2,
        "node `c`: branch `a` has an invalid expression: ERROR: <input>:1:4: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER} | t > | ...^"
    );
    assert_eq!(
        got[1..],
        [
            p(
                "$.edges[1]",
                Some("2"),
                "edge `2` leaves condition node `d` without a `sourceHandle`; name one of its branches: `a`, `else`"
            ),
            p(
                "$.edges[2].sourceHandle",
                Some("3"),
                "edge `3` leaves condition node `d` by unknown branch `b`; its branches are `a`, `else`"
            ),
            p(
                "$.nodes[3].data.branches[0]",
                Some("d"),
                "branch `a` of condition node `d` has no edge; connect it or remove it"
            ),
            p(
                "$.nodes[3].data",
                Some("d"),
                "branch `else` of condition node `d` has no edge; every branch needs one: connect `else` to the node that runs when no other branch is taken"
            ),
            // With both of `d`'s edges refused, nothing leads to `e`.
            p(
                "$.nodes[1].id",
                Some("e"),
                "node `e` is unreachable: no path from START leads to it; add an edge into it or remove it"
            ),
        ]
    );
}

#[test]
fn duplicate_ids() {
    let mut nodes = ok_nodes();
    nodes.push(json!({"id": "e", "type": "end"}));
    let got = problems(json!({"nodes": nodes, "edges": [{"id": "s", "source": "s", "target": "e"}]}));
    assert_eq!(
        got,
        [
            p(
                "$.nodes[2].id",
                Some("e"),
                "node id `e` is already used at `$.nodes[1]`; ids must be unique"
            ),
            p(
                "$.edges[0].id",
                Some("s"),
                "edge id `s` is already used at `$.nodes[0]`; ids must be unique"
            ),
            p(
                "$.nodes[2].id",
                Some("e"),
                "node `e` is declared twice; node names must be unique"
            ),
        ]
    );
}

#[test]
fn a_field_written_with_another_type_than_declared() {
    let mut nodes = ok_nodes();
    nodes.push(
        json!({"id": "w", "type": "set", "data": {"assign": {"count": "{{ 1 }}", "done": "yes", "tags": 3, "cnt": 1}}}),
    );
    nodes.push(json!({"id": "o", "type": "output", "data": {"message": "hi", "to": "count"}}));
    let got = problems(json!({
        "nodes": nodes,
        "edges": [{"id": "1", "source": "s", "target": "w"}, {"id": "2", "source": "w", "target": "o"}, {"id": "3", "source": "o", "target": "e"}],
        "state": {"count": {"type": "number"}, "done": {"type": "bool"}, "tags": {"type": "list", "reducer": "append"}}
    }));
    assert_eq!(
        got,
        [
            p(
                "$.nodes[2].data.assign.cnt",
                Some("w"),
                "node `w` writes `cnt`, which the state does not declare; declared fields are `count`, `done`, `tags`"
            ),
            p(
                "$.nodes[3].data.to",
                Some("o"),
                "node `o` writes `count` with a string; `count` is declared number"
            ),
        ]
    );
    // `done: "yes"` is a template (read as JSON when it runs); `tags: 3` appends one item.
}

#[test]
fn state_declarations_are_checked() {
    let got = problems(json!({
        "nodes": ok_nodes(),
        "edges": [{"id": "1", "source": "s", "target": "e"}],
        "state": {"__x": {"type": "string"}, "n": {"type": "string", "reducer": "add"}, "d": {"type": "number", "default": "0"}}
    }));
    assert_eq!(
        got,
        [
            p(
                "$.state.__x",
                None,
                "field name `__x` is reserved: names starting with `__` are weir's"
            ),
            p(
                "$.state.d.default",
                None,
                "field `d` has a default of type string; it is declared number"
            ),
            p(
                "$.state.n.reducer",
                None,
                "field `n` is a string, but reducer `add` takes a number field"
            ),
        ]
    );
}

#[test]
fn topology_problems_name_the_node() {
    let mut nodes = ok_nodes();
    nodes.push(json!({"id": "orphan", "type": "set", "data": {"assign": {}}}));
    nodes.push(json!({"id": "spin", "type": "set", "data": {"assign": {}}}));
    let got = problems(json!({
        "nodes": nodes,
        "edges": [{"id": "1", "source": "s", "target": "e"}, {"id": "2", "source": "s", "target": "spin"}, {"id": "3", "source": "spin", "target": "spin"}]
    }));
    assert_eq!(
        got,
        [
            p(
                "$.nodes[2].id",
                Some("orphan"),
                "node `orphan` is unreachable: no path from START leads to it; add an edge into it or remove it"
            ),
            p(
                "$.nodes[3].id",
                Some("spin"),
                "node `spin` never reaches END: every path from it loops forever; add an edge or a route to END"
            ),
        ]
    );
}

#[test]
fn schema_violations_come_with_their_json_path() {
    let got = problems(json!({
        "nodes": [{"id": "s", "type": "start"}, {"id": 7, "type": "end"}, {"type": "end"}],
        "edges": [{"id": "1", "source": "s"}],
        "state": {"x": {"type": "float"}}
    }));
    let paths: Vec<&str> = got.iter().map(|(p, _, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        ["$.edges[0]", "$.nodes[1].id", "$.nodes[2]", "$.state.x.type"],
        "{got:#?}"
    );
    assert_eq!(got[1].2, "7 is not of type \"string\"");
    assert_eq!(got[0].1.as_deref(), Some("1"));
}

#[test]
fn invalid_json_is_one_error_at_the_root() {
    let e = Flow::from_json("{\"nodes\": [", &Registry::new()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "$: the file is not valid JSON: EOF while parsing a list at line 1 column 11"
    );
}

#[test]
fn several_errors_at_once() {
    let got = problems(json!({
        "nodes": [{"id": "s", "type": "start"}, {"id": "x", "type": "mystery"}, {"id": "e", "type": "end"}],
        "edges": [{"id": "1", "source": "s", "target": "nowhere"}, {"id": "2", "source": "s", "target": "e"}, {"id": "2", "source": "s", "target": "e"}]
    }));
    assert_eq!(got.len(), 3, "{got:#?}");
}
