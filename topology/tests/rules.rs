//! Each rule of `check`, asserting the exact problems: site and message.

use weir_topology::{check, NodeDecl, Problem, ProblemKind, Ref, Route, Topology};

fn n(name: &str, site: usize) -> Ref {
    Ref::node(name, site)
}

fn node(name: &str, site: usize) -> NodeDecl {
    NodeDecl::new(name, site)
}

/// The problems as `(site, message)`.
fn problems(t: &Topology) -> Vec<(usize, String)> {
    check(t).iter().map(|p| (p.site, p.to_string())).collect()
}

fn msg(site: usize, message: &str) -> (usize, String) {
    (site, message.to_owned())
}

/// START -> a -> b -> END, for rules that need a valid backbone.
fn chain() -> Topology {
    Topology::new()
        .node(node("a", 1))
        .node(node("b", 2))
        .edge(Ref::Start(3), n("a", 4))
        .edge(n("a", 5), n("b", 6))
        .edge(n("b", 7), Ref::End(8))
}

#[test]
fn a_valid_graph_has_no_problems() {
    assert_eq!(problems(&chain()), []);
}

#[test]
fn unknown_node_suggests_the_closest_name() {
    let t = Topology::new()
        .node(node("search", 1))
        .node(node("write", 2))
        .edge(Ref::Start(3), n("serch", 4))
        .edge(n("search", 5), n("write", 6));
    assert_eq!(problems(&t), [msg(4, "unknown node `serch`; did you mean `search`?")]);
    assert_eq!(
        check(&t)[0].kind,
        ProblemKind::UnknownNode {
            name: "serch".into(),
            suggestion: Some("search".into()),
            declared: vec!["search".into(), "write".into()],
        }
    );
}

#[test]
fn unknown_node_lists_declared_nodes_when_nothing_is_close() {
    let t = chain().edge(n("b", 9), n("publish", 10));
    assert_eq!(
        problems(&t),
        [msg(10, "unknown node `publish`; declared nodes are `a`, `b`")]
    );
}

#[test]
fn unknown_node_is_reported_in_joins_routes_and_sends() {
    let t = chain()
        .join([n("a", 10), n("x", 11)], n("b", 12), 13)
        .route(
            Route::new(n("y", 14), 15)
                .target(n("a", 16), "A")
                .target(n("z", 17), "Z"),
        )
        .send(n("a", 18), n("w", 19), 20);
    assert_eq!(
        problems(&t),
        [
            msg(11, "unknown node `x`; declared nodes are `a`, `b`"),
            msg(14, "unknown node `y`; declared nodes are `a`, `b`"),
            msg(17, "unknown node `z`; declared nodes are `a`, `b`"),
            msg(19, "unknown node `w`; declared nodes are `a`, `b`"),
        ]
    );
}

#[test]
fn unknown_node_with_no_nodes_declared() {
    let t = Topology::new().at(99).edge(Ref::Start(1), n("a", 2));
    assert_eq!(problems(&t), [msg(2, "unknown node `a`; no nodes are declared")]);
}

#[test]
fn a_misspelt_reference_does_not_also_make_its_node_unreachable() {
    // START -> plan; plan -> serch; search -> END: one typo, one problem.
    let t = Topology::new()
        .node(node("plan", 1))
        .node(node("search", 2))
        .edge(Ref::Start(3), n("plan", 4))
        .edge(n("plan", 5), n("serch", 6))
        .edge(n("search", 7), Ref::End(8));
    assert_eq!(problems(&t), [msg(6, "unknown node `serch`; did you mean `search`?")]);
}

#[test]
fn duplicate_node_is_reported_at_the_second_declaration() {
    let t = chain().node(node("a", 9));
    let found = check(&t);
    assert_eq!(
        found,
        [Problem {
            site: 9,
            kind: ProblemKind::DuplicateNode { name: "a".into() },
            related: vec![1],
        }]
    );
    assert_eq!(
        found[0].to_string(),
        "node `a` is declared twice; node names must be unique"
    );
}

#[test]
fn reserved_names_are_rejected() {
    let t = chain().node(node("__end__", 9)).edge(n("a", 10), n("__end__", 11));
    assert_eq!(
        problems(&t),
        [msg(
            9,
            "node name `__end__` is reserved for START and END; choose another name"
        )]
    );
}

#[test]
fn a_graph_without_an_edge_from_start_has_no_entry() {
    let t = Topology::new()
        .at(42)
        .node(node("a", 1))
        .node(node("b", 2))
        .edge(n("a", 3), n("b", 4));
    // Its nodes are not also reported unreachable.
    assert_eq!(
        problems(&t),
        [msg(42, "the graph has no entry: add an edge from START")]
    );
}

#[test]
fn a_route_or_a_send_from_start_is_an_entry() {
    let routed = Topology::new().node(node("a", 1)).route(
        Route::new(Ref::Start(2), 3)
            .target(n("a", 4), "A")
            .target(Ref::End(5), "Stop"),
    );
    assert_eq!(problems(&routed), []);
    let sent = Topology::new().node(node("a", 1)).send(Ref::Start(2), n("a", 3), 4);
    assert_eq!(problems(&sent), []);
}

#[test]
fn end_is_never_a_source_and_start_never_a_target() {
    let t = chain()
        .edge(Ref::End(10), n("a", 11))
        .edge(n("b", 12), Ref::Start(13))
        .join([n("a", 14), Ref::End(15)], Ref::Start(16), 17)
        .route(
            Route::new(Ref::End(18), 19)
                .target(Ref::Start(20), "Again")
                .target(n("a", 21), "A"),
        )
        .send(n("a", 22), Ref::End(23), 24)
        .send(Ref::End(25), Ref::Start(26), 27);
    assert_eq!(
        problems(&t),
        [
            msg(10, "END cannot be the source of an edge; nothing runs after END"),
            msg(13, "START cannot be the target of an edge; START only begins the run"),
            msg(15, "END cannot be the source of a join; nothing runs after END"),
            msg(16, "START cannot be the target of a join; START only begins the run"),
            msg(18, "END cannot be the source of a route; nothing runs after END"),
            msg(20, "START cannot be the target of a route; START only begins the run"),
            msg(23, "a send cannot target END; send packets go to a node"),
            msg(25, "END cannot be the source of a send; nothing runs after END"),
            msg(26, "START cannot be the target of a send; START only begins the run"),
        ]
    );
}

#[test]
fn unreachable_node_is_reported_at_its_declaration() {
    let t = chain().node(node("orphan", 9)).edge(n("orphan", 10), n("b", 11));
    assert_eq!(
        problems(&t),
        [msg(
            9,
            "node `orphan` is unreachable: no path from START leads to it; add an edge into it \
             or remove it"
        )]
    );
}

#[test]
fn a_join_target_is_reached_only_when_all_its_sources_are() {
    // START -> a; [a, island] -> c; c -> END: `island` and hence `c` are unreachable.
    let t = Topology::new()
        .node(node("a", 1))
        .node(node("island", 2))
        .node(node("c", 3))
        .edge(Ref::Start(4), n("a", 5))
        .join([n("a", 6), n("island", 7)], n("c", 8), 9)
        .edge(n("c", 10), Ref::End(11));
    let sites: Vec<usize> = check(&t).iter().map(|p| p.site).collect();
    assert_eq!(sites, [2, 3]);
    assert_eq!(check(&t)[1].kind, ProblemKind::Unreachable { name: "c".into() });
}

#[test]
fn routes_and_sends_reach_their_targets() {
    let t = Topology::new()
        .node(node("a", 1))
        .node(node("worker", 2).send_only())
        .node(node("b", 3))
        .edge(Ref::Start(4), n("a", 5))
        .send(n("a", 6), n("worker", 7), 8)
        .route(
            Route::new(n("worker", 9), 10)
                .target(n("b", 11), "B")
                .target(Ref::End(12), "Done"),
        );
    assert_eq!(problems(&t), []);
}

#[test]
fn a_send_only_node_no_send_targets_counts_as_reached() {
    // Its packets may come from a node's Command, which the topology does not list.
    let t = chain().node(node("worker", 9).send_only());
    assert_eq!(problems(&t), []);
    // But one whose only sender is unreachable is unreachable too.
    let t = chain()
        .node(node("island", 9))
        .node(node("worker", 10).send_only())
        .send(n("island", 11), n("worker", 12), 13);
    let sites: Vec<usize> = check(&t).iter().map(|p| p.site).collect();
    assert_eq!(sites, [9, 10]);
}

#[test]
fn a_node_trapped_in_a_loop_never_reaches_end() {
    // START -> a; a -> b; b -> a
    let t = Topology::new()
        .node(node("a", 1))
        .node(node("b", 2))
        .edge(Ref::Start(3), n("a", 4))
        .edge(n("a", 5), n("b", 6))
        .edge(n("b", 7), n("a", 8));
    assert_eq!(
        problems(&t),
        [
            msg(
                1,
                "node `a` never reaches END: every path from it loops forever; add an edge or a \
                 route to END"
            ),
            msg(
                2,
                "node `b` never reaches END: every path from it loops forever; add an edge or a \
                 route to END"
            ),
        ]
    );
}

#[test]
fn a_node_without_outgoing_edges_ends_its_branch() {
    // START -> a; a -> b (b has no outgoing edge: it just stops).
    let t = Topology::new()
        .node(node("a", 1))
        .node(node("b", 2))
        .edge(Ref::Start(3), n("a", 4))
        .edge(n("a", 5), n("b", 6));
    assert_eq!(problems(&t), []);
}

#[test]
fn a_loop_with_a_route_to_end_or_an_exit_is_fine() {
    // START -> a; a -> b; b ? { More => a, Done => END }
    let routed = Topology::new()
        .node(node("a", 1))
        .node(node("b", 2))
        .edge(Ref::Start(3), n("a", 4))
        .edge(n("a", 5), n("b", 6))
        .route(
            Route::new(n("b", 7), 8)
                .target(n("a", 9), "More")
                .target(Ref::End(10), "Done"),
        );
    assert_eq!(problems(&routed), []);
    // START -> a; a -> [b, c]; b -> a; c stops.
    let exit = Topology::new()
        .node(node("a", 1))
        .node(node("b", 2))
        .node(node("c", 3))
        .edge(Ref::Start(4), n("a", 5))
        .edge(n("a", 6), n("b", 7))
        .edge(n("a", 8), n("c", 9))
        .edge(n("b", 10), n("a", 11));
    assert_eq!(problems(&exit), []);
}

#[test]
fn a_route_that_only_loops_is_trapped_but_a_fan_out_sibling_is_not() {
    // START -> a; a -> [b, c]; b -> END; c ? { Again => c, Other => c }
    let t = Topology::new()
        .node(node("a", 1))
        .node(node("b", 2))
        .node(node("c", 3))
        .edge(Ref::Start(4), n("a", 5))
        .edge(n("a", 6), n("b", 7))
        .edge(n("a", 8), n("c", 9))
        .edge(n("b", 10), Ref::End(11))
        .route(
            Route::new(n("c", 12), 13)
                .target(n("c", 14), "Again")
                .target(n("c", 15), "Other"),
        );
    let found = check(&t);
    assert_eq!(found.len(), 1);
    assert_eq!(
        (found[0].site, &found[0].kind),
        (3, &ProblemKind::NoPathToEnd { name: "c".into() })
    );
}

#[test]
fn a_join_to_end_ends_its_sources() {
    // START -> [a, b]; [a, b] -> END: the join is their only way out.
    let t = Topology::new()
        .node(node("a", 1))
        .node(node("b", 2))
        .edge(Ref::Start(3), n("a", 4))
        .edge(Ref::Start(5), n("b", 6))
        .join([n("a", 7), n("b", 8)], Ref::End(9), 10);
    assert_eq!(problems(&t), []);
}

#[test]
fn a_join_naming_a_node_twice_is_an_error_but_one_predecessor_is_fine() {
    let t = chain()
        .node(node("c", 9))
        .join([n("a", 10), n("a", 11)], n("c", 12), 13)
        .join([n("b", 14)], n("c", 15), 16);
    assert_eq!(
        problems(&t),
        [msg(11, "join names `a` twice; list each predecessor once")]
    );
}

#[test]
fn empty_joins_and_routes_are_errors() {
    let t = chain().join([], n("b", 9), 10).route(Route::new(n("a", 11), 12));
    assert_eq!(
        problems(&t),
        [
            msg(10, "join has no predecessors; list the nodes it waits for"),
            msg(12, "route has no targets; map each choice to a node or END"),
        ]
    );
}

#[test]
fn several_problems_are_reported_at_once_in_rule_order() {
    let t = Topology::new()
        .node(node("plan", 1))
        .node(node("search", 2))
        .node(node("plan", 3))
        .node(node("lost", 4))
        .node(node("spin", 5))
        .edge(Ref::Start(6), n("plan", 7))
        .edge(n("plan", 8), n("serch", 9))
        .edge(n("plan", 10), n("spin", 11))
        .edge(n("spin", 12), n("spin", 13))
        .edge(n("search", 14), Ref::Start(15));
    assert_eq!(
        problems(&t),
        [
            msg(3, "node `plan` is declared twice; node names must be unique"),
            msg(9, "unknown node `serch`; did you mean `search`?"),
            msg(15, "START cannot be the target of an edge; START only begins the run"),
            msg(
                4,
                "node `lost` is unreachable: no path from START leads to it; add an edge into \
                 it or remove it"
            ),
            msg(
                5,
                "node `spin` never reaches END: every path from it loops forever; add an edge \
                 or a route to END"
            ),
        ]
    );
}

#[test]
fn problems_implement_error() {
    let problem: Box<dyn std::error::Error> = Box::new(check(&Topology::new())[0].clone());
    assert_eq!(problem.to_string(), "the graph has no entry: add an edge from START");
}
