//! `levels` is the longest simple path from START, whatever the order of declarations, and
//! `starving_joins` finds the joins a loop leaves waiting.

use weir_topology::{levels, starving_joins, NodeDecl, Ref, Route, Topology};

fn n(name: &str) -> Ref {
    Ref::node(name, 0)
}

/// A topology with `names` declared and `edges` (a `?label` target is a route of the source,
/// `END` is END), the edges in the order given.
fn build(names: &[&str], edges: &[(&str, &str)]) -> Topology {
    let mut t = names
        .iter()
        .fold(Topology::new(), |t, name| t.node(NodeDecl::new(*name, 0)));
    let mut routes: Vec<(&str, Vec<(&str, &str)>)> = Vec::new();
    for &(from, to) in edges {
        let from_ref = if from == "START" { Ref::Start(0) } else { n(from) };
        match to.split_once('?') {
            Some((label, target)) => match routes.iter_mut().find(|(f, _)| *f == from) {
                Some((_, ts)) => ts.push((label, target)),
                None => routes.push((from, vec![(label, target)])),
            },
            None if to == "END" => t = t.edge(from_ref, Ref::End(0)),
            None => t = t.edge(from_ref, n(to)),
        }
    }
    for (from, targets) in routes {
        let mut r = Route::new(n(from), 0);
        for (label, to) in targets {
            r = r.target(if to == "END" { Ref::End(0) } else { n(to) }, label);
        }
        t = t.route(r);
    }
    t
}

fn lv(pairs: &[(&str, usize)]) -> Vec<(String, Option<usize>)> {
    pairs.iter().map(|(n, l)| ((*n).to_owned(), Some(*l))).collect()
}

#[test]
fn a_loop_back_into_a_fan_in_gets_the_same_levels_in_either_edge_order() {
    // s -> fetch, s -> plan, fetch -> merge, plan -> merge, merge -> review,
    // review ? { redo -> plan, done -> e }: `plan` is re-entered from `review`.
    let names = ["s", "fetch", "plan", "merge", "review", "e"];
    let rest = [
        ("fetch", "merge"),
        ("plan", "merge"),
        ("merge", "review"),
        ("review", "redo?plan"),
        ("review", "done?e"),
        ("e", "END"),
    ];
    let mut one = vec![("START", "s"), ("s", "fetch"), ("s", "plan")];
    one.extend(rest);
    let mut two = vec![("START", "s"), ("s", "plan"), ("s", "fetch")];
    two.extend(rest);
    // plan: START s fetch merge review plan.
    let want = lv(&[
        ("s", 1),
        ("fetch", 2),
        ("plan", 5),
        ("merge", 3),
        ("review", 4),
        ("e", 5),
    ]);
    assert_eq!(levels(&build(&names, &one)), want);
    assert_eq!(levels(&build(&names, &two)), want);
    let mut reversed = one.clone();
    reversed.reverse();
    assert_eq!(levels(&build(&names, &reversed)), want);
}

#[test]
fn a_loop_through_a_chain_gets_the_same_levels_in_either_edge_order() {
    // s -> a, s -> b, a -> b, b -> c, c ? { again -> a, done -> e }.
    let names = ["s", "a", "b", "c", "e"];
    let rest = [("a", "b"), ("b", "c"), ("c", "again?a"), ("c", "done?e"), ("e", "END")];
    let mut one = vec![("START", "s"), ("s", "a"), ("s", "b")];
    one.extend(rest);
    let mut two = vec![("START", "s"), ("s", "b"), ("s", "a")];
    two.extend(rest);
    // a: START s b c a; b: START s a b.
    let want = lv(&[("s", 1), ("a", 4), ("b", 3), ("c", 4), ("e", 5)]);
    assert_eq!(levels(&build(&names, &one)), want);
    assert_eq!(levels(&build(&names, &two)), want);
}

#[test]
fn a_dense_loop_is_bounded_and_still_independent_of_the_order() {
    // Every node to every other: more simple paths than the budget allows.
    let names: Vec<String> = (0..24).map(|i| format!("n{i:02}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut edges = vec![("START", "n00")];
    for a in &refs {
        for b in &refs {
            if a != b {
                edges.push((a, b));
            }
        }
    }
    edges.push(("n23", "END"));
    let started = std::time::Instant::now();
    let one = levels(&build(&refs, &edges));
    edges[1..].reverse();
    let mut shuffled_names = refs.clone();
    shuffled_names.reverse();
    let mut two = levels(&build(&shuffled_names, &edges));
    two.reverse();
    assert_eq!(one, two);
    // A Hamiltonian path is found at once, in name order: the last node is 24 arcs away.
    assert_eq!(one.iter().filter_map(|(_, l)| *l).max(), Some(24));
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}

#[test]
fn a_join_that_a_loop_re_enters_by_one_source_starves() {
    let t = Topology::new()
        .node(NodeDecl::new("fetch", 0))
        .node(NodeDecl::new("plan", 0))
        .node(NodeDecl::new("merge", 0))
        .node(NodeDecl::new("review", 0))
        .edge(Ref::Start(0), n("fetch"))
        .edge(Ref::Start(0), n("plan"))
        .join([n("fetch"), n("plan")], n("merge"), 5)
        .edge(n("merge"), n("review"))
        .route(
            Route::new(n("review"), 0)
                .target(n("plan"), "redo")
                .target(Ref::End(0), "done"),
        );
    let problems = starving_joins(&t);
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].site, 5);
    assert_eq!(
        problems[0].to_string(),
        "join into `merge` can starve: after `merge` runs, a loop leads back to `plan` but never to \
         `fetch`, so the next time `merge` waits for `fetch` forever"
    );
}

#[test]
fn joins_that_every_lap_refills_or_that_no_loop_reaches_do_not_starve() {
    // The loop goes back before both sources.
    let both = Topology::new()
        .node(NodeDecl::new("plan", 0))
        .node(NodeDecl::new("web", 0))
        .node(NodeDecl::new("docs", 0))
        .node(NodeDecl::new("write", 0))
        .edge(Ref::Start(0), n("plan"))
        .edge(n("plan"), n("web"))
        .edge(n("plan"), n("docs"))
        .join([n("web"), n("docs")], n("write"), 0)
        .route(
            Route::new(n("write"), 0)
                .target(n("plan"), "more")
                .target(Ref::End(0), "done"),
        );
    assert_eq!(starving_joins(&both), []);
    // No loop at all.
    let diamond = Topology::new()
        .node(NodeDecl::new("a", 0))
        .node(NodeDecl::new("b", 0))
        .node(NodeDecl::new("c", 0))
        .edge(Ref::Start(0), n("a"))
        .edge(Ref::Start(0), n("b"))
        .join([n("a"), n("b")], n("c"), 0)
        .edge(n("c"), Ref::End(0));
    assert_eq!(starving_joins(&diamond), []);
    // The loop also enters the target by a plain edge, so it runs on every lap.
    let also_plain = Topology::new()
        .node(NodeDecl::new("a", 0))
        .node(NodeDecl::new("b", 0))
        .node(NodeDecl::new("c", 0))
        .node(NodeDecl::new("d", 0))
        .edge(Ref::Start(0), n("a"))
        .edge(Ref::Start(0), n("b"))
        .join([n("a"), n("b")], n("c"), 0)
        .edge(n("a"), n("d"))
        .edge(n("d"), n("c"))
        .route(
            Route::new(n("c"), 0)
                .target(n("a"), "again")
                .target(Ref::End(0), "done"),
        );
    assert_eq!(starving_joins(&also_plain), []);
}
