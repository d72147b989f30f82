//! The co-running write check: nodes that can run in the same step and write a single-value
//! field.

use weir_topology::{check, NodeDecl, Problem, ProblemKind, Ref, Route, Topology};

fn n(name: &str) -> Ref {
    Ref::node(name, 0)
}

/// A node at site 0 that writes `answer` at `site`.
fn writer(name: &str, site: usize) -> NodeDecl {
    NodeDecl::new(name, 0).writes([("answer", site)])
}

fn graph() -> Topology {
    Topology::new().single_write_field("answer")
}

fn conflicts(t: &Topology) -> Vec<(usize, String)> {
    check(t).iter().map(|p| (p.site, p.to_string())).collect()
}

fn conflict(site: usize, a: &str, b: &str) -> (usize, String) {
    (
        site,
        format!(
            "nodes `{a}` and `{b}` can run in the same step and both write `answer`, which \
             takes one value per step; give `answer` a reducer or let one of them write it"
        ),
    )
}

#[test]
fn fan_out_targets_conflict_at_the_second_write() {
    // START -> a; a -> [b, c]
    let t = graph()
        .node(NodeDecl::new("a", 0))
        .node(writer("b", 1))
        .node(writer("c", 2))
        .edge(Ref::Start(0), n("a"))
        .edge(n("a"), n("b"))
        .edge(n("a"), n("c"));
    let found = check(&t);
    assert_eq!(
        found,
        [Problem {
            site: 2,
            kind: ProblemKind::WriteConflict {
                first: "b".into(),
                second: "c".into(),
                field: "answer".into(),
            },
            related: vec![1],
        }]
    );
    assert_eq!(conflicts(&t), [conflict(2, "b", "c")]);
}

#[test]
fn fan_out_from_start_conflicts() {
    let t = graph()
        .node(writer("a", 1))
        .node(writer("b", 2))
        .edge(Ref::Start(0), n("a"))
        .edge(Ref::Start(0), n("b"));
    assert_eq!(conflicts(&t), [conflict(2, "a", "b")]);
}

#[test]
fn a_sequential_chain_writing_the_same_field_is_fine() {
    // START -> a -> b -> END, both write `answer`.
    let t = graph()
        .node(writer("a", 1))
        .node(writer("b", 2))
        .edge(Ref::Start(0), n("a"))
        .edge(n("a"), n("b"))
        .edge(n("b"), Ref::End(0));
    assert_eq!(conflicts(&t), []);
}

#[test]
fn targets_of_a_single_choice_route_do_not_conflict() {
    let route = Route::new(n("a"), 0).target(n("b"), "B").target(n("c"), "C");
    let t = graph()
        .node(NodeDecl::new("a", 0))
        .node(writer("b", 1))
        .node(writer("c", 2))
        .edge(Ref::Start(0), n("a"))
        .route(route.clone());
    assert_eq!(conflicts(&t), []);

    // A multi route may pick both.
    let t = Topology {
        routes: vec![route.multi()],
        ..t
    };
    assert_eq!(conflicts(&t), [conflict(2, "b", "c")]);
}

#[test]
fn an_edge_beside_a_route_conflicts_with_each_route_target() {
    // START -> a; a -> d; a ? { B => b, C => c }
    let t = graph()
        .node(NodeDecl::new("a", 0))
        .node(writer("b", 1))
        .node(writer("c", 2))
        .node(writer("d", 3))
        .edge(Ref::Start(0), n("a"))
        .edge(n("a"), n("d"))
        .route(Route::new(n("a"), 0).target(n("b"), "B").target(n("c"), "C"));
    assert_eq!(conflicts(&t), [conflict(3, "b", "d"), conflict(3, "c", "d")]);
}

#[test]
fn parallel_branches_conflict_step_by_step_before_their_join() {
    // START -> a; a -> [b, c]; b -> b2; c -> c2; [b2, c2] -> d; d -> END
    // b2 and c2 run in the same step; d runs alone after both.
    let t = graph()
        .node(NodeDecl::new("a", 0))
        .node(NodeDecl::new("b", 0))
        .node(NodeDecl::new("c", 0))
        .node(writer("b2", 1))
        .node(writer("c2", 2))
        .node(writer("d", 3))
        .edge(Ref::Start(0), n("a"))
        .edge(n("a"), n("b"))
        .edge(n("a"), n("c"))
        .edge(n("b"), n("b2"))
        .edge(n("c"), n("c2"))
        .join([n("b2"), n("c2")], n("d"), 0)
        .edge(n("d"), Ref::End(0));
    assert_eq!(conflicts(&t), [conflict(2, "b2", "c2")]);
}

#[test]
fn a_join_target_does_not_conflict_with_a_branch_it_waits_for() {
    // START -> a; a -> [b, c]; b -> b2; b2 -> b3; [b3, c] -> d
    // d waits for b3, so it never runs beside b2 (nor b3).
    let t = graph()
        .node(NodeDecl::new("a", 0))
        .node(NodeDecl::new("b", 0))
        .node(NodeDecl::new("c", 0))
        .node(writer("b2", 1))
        .node(writer("b3", 2))
        .node(writer("d", 3))
        .edge(Ref::Start(0), n("a"))
        .edge(n("a"), n("b"))
        .edge(n("a"), n("c"))
        .edge(n("b"), n("b2"))
        .edge(n("b2"), n("b3"))
        .join([n("b3"), n("c")], n("d"), 0);
    assert_eq!(conflicts(&t), []);
}

#[test]
fn a_join_target_conflicts_with_a_sibling_of_its_last_source() {
    // START -> [a, b]; [a, b] -> j; a -> x: j and x run in the same step.
    let t = graph()
        .node(NodeDecl::new("a", 0))
        .node(NodeDecl::new("b", 0))
        .node(writer("j", 1))
        .node(writer("x", 2))
        .edge(Ref::Start(0), n("a"))
        .edge(Ref::Start(0), n("b"))
        .join([n("a"), n("b")], n("j"), 0)
        .edge(n("a"), n("x"));
    assert_eq!(conflicts(&t), [conflict(2, "j", "x")]);
}

#[test]
fn a_send_target_writing_a_single_value_field_conflicts_with_itself() {
    // START -> plan; plan sends to worker; worker -> END
    let t = graph()
        .node(NodeDecl::new("plan", 0))
        .node(writer("worker", 7).send_only())
        .edge(Ref::Start(0), n("plan"))
        .send(n("plan"), n("worker"), 0)
        .edge(n("worker"), Ref::End(0));
    assert_eq!(
        conflicts(&t),
        [(
            7,
            "node `worker` can run several times in the same step (once per Send) and writes \
             `answer`, which takes one value per step; give `answer` a reducer or write it from \
             a node that runs once"
                .to_owned()
        )]
    );
}

#[test]
fn two_tasks_of_a_send_target_may_pick_different_route_targets() {
    // plan sends to worker; worker ? { B => b, C => c }: b and c may run together.
    let t = graph()
        .node(NodeDecl::new("plan", 0))
        .node(NodeDecl::new("worker", 0).send_only())
        .node(writer("b", 1))
        .node(writer("c", 2))
        .edge(Ref::Start(0), n("plan"))
        .send(n("plan"), n("worker"), 0)
        .route(Route::new(n("worker"), 0).target(n("b"), "B").target(n("c"), "C"));
    assert_eq!(conflicts(&t), [conflict(2, "b", "c")]);
}

#[test]
fn a_deferred_node_does_not_run_beside_its_fan_out_siblings() {
    // START -> [a, d]; d is deferred: it runs once `a` has drained.
    let t = graph()
        .node(writer("a", 1))
        .node(writer("d", 2).deferred())
        .edge(Ref::Start(0), n("a"))
        .edge(Ref::Start(0), n("d"));
    assert_eq!(conflicts(&t), []);
}

#[test]
fn only_single_value_fields_of_nodes_declaring_writes_are_checked() {
    let t = Topology::new()
        .single_write_field("answer")
        .node(NodeDecl::new("a", 0).writes([("notes", 1), ("answer", 2)]))
        .node(NodeDecl::new("b", 0).writes([("notes", 3)]))
        .node(NodeDecl::new("c", 0))
        .edge(Ref::Start(0), n("a"))
        .edge(Ref::Start(0), n("b"))
        .edge(Ref::Start(0), n("c"));
    assert_eq!(conflicts(&t), []);
}

#[test]
fn each_shared_field_is_reported_once_per_pair() {
    let t = Topology::new()
        .single_write_field("answer")
        .single_write_field("status")
        .node(NodeDecl::new("a", 0).writes([("answer", 1), ("status", 2)]))
        .node(NodeDecl::new("b", 0).writes([("status", 3), ("answer", 4), ("answer", 5)]))
        .edge(Ref::Start(0), n("a"))
        .edge(Ref::Start(0), n("b"));
    let found: Vec<(usize, Vec<usize>, String)> = check(&t)
        .into_iter()
        .map(|p| match p.kind {
            ProblemKind::WriteConflict { field, .. } => (p.site, p.related, field),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        found,
        [(3, vec![2], "status".to_owned()), (4, vec![1], "answer".to_owned())]
    );
}

#[test]
fn a_loop_with_a_fan_out_pairs_only_the_fanned_out_nodes() {
    // START -> a; a -> [b, c]; b -> a; c -> END. `a` never runs beside `b` or `c`.
    let t = graph()
        .node(writer("a", 1))
        .node(writer("b", 2))
        .node(writer("c", 3))
        .edge(Ref::Start(0), n("a"))
        .edge(n("a"), n("b"))
        .edge(n("a"), n("c"))
        .edge(n("b"), n("a"))
        .edge(n("c"), Ref::End(0));
    assert_eq!(conflicts(&t), [conflict(3, "b", "c")]);
}
