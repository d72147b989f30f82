//! `levels`, `back_edges` and `mermaid`.

use weir_topology::{back_edges, levels, mermaid, BackEdge, NodeDecl, Ref, Route, Topology, Via};

fn n(name: &str) -> Ref {
    Ref::node(name, 0)
}

fn nodes(names: &[&str]) -> Topology {
    names
        .iter()
        .fold(Topology::new(), |t, name| t.node(NodeDecl::new(*name, 0)))
}

fn level_list(t: &Topology) -> Vec<(String, Option<usize>)> {
    levels(t)
}

fn lv(name: &str, level: usize) -> (String, Option<usize>) {
    (name.to_owned(), Some(level))
}

/// START -> a; a -> b; b -> c; c ? { More => a, Done => END }
fn research_loop() -> Topology {
    nodes(&["a", "b", "c"])
        .edge(Ref::Start(0), n("a"))
        .edge(n("a"), n("b"))
        .edge(n("b"), n("c"))
        .route(Route::new(n("c"), 0).target(n("a"), "More").target(Ref::End(0), "Done"))
}

#[test]
fn a_loop_has_one_back_edge_and_levels_along_the_cut_path() {
    let t = research_loop();
    assert_eq!(
        back_edges(&t),
        [BackEdge {
            from: "c".into(),
            to: "a".into(),
            via: Via::Route { route: 0, target: 0 },
        }]
    );
    assert_eq!(level_list(&t), [lv("a", 1), lv("b", 2), lv("c", 3)]);
}

#[test]
fn a_self_loop_is_a_back_edge() {
    let t = nodes(&["a"]).edge(Ref::Start(0), n("a")).edge(n("a"), n("a"));
    assert_eq!(
        back_edges(&t),
        [BackEdge {
            from: "a".into(),
            to: "a".into(),
            via: Via::Edge(1),
        }]
    );
}

#[test]
fn a_diamond_has_no_back_edge_and_its_join_takes_the_longest_path() {
    // START -> a; a -> [b, c]; c -> c2; [b, c2] -> d
    let t = nodes(&["a", "b", "c", "c2", "d"])
        .edge(Ref::Start(0), n("a"))
        .edge(n("a"), n("b"))
        .edge(n("a"), n("c"))
        .edge(n("c"), n("c2"))
        .join([n("b"), n("c2")], n("d"), 0);
    assert_eq!(back_edges(&t), []);
    assert_eq!(
        level_list(&t),
        [lv("a", 1), lv("b", 2), lv("c", 2), lv("c2", 3), lv("d", 4)]
    );
}

#[test]
fn a_multi_input_node_inside_a_loop_keeps_its_forward_level() {
    // START -> a; a -> b; b -> m; a -> m; m -> a (back). m waits for a and b, not for itself.
    let t = nodes(&["a", "b", "m"])
        .edge(Ref::Start(0), n("a"))
        .edge(n("a"), n("b"))
        .edge(n("b"), n("m"))
        .edge(n("a"), n("m"))
        .edge(n("m"), n("a"));
    assert_eq!(
        back_edges(&t),
        [BackEdge {
            from: "m".into(),
            to: "a".into(),
            via: Via::Edge(4),
        }]
    );
    assert_eq!(level_list(&t), [lv("a", 1), lv("b", 2), lv("m", 3)]);
}

#[test]
fn nodes_start_does_not_lead_to_have_no_level() {
    let t = nodes(&["a", "island"]).edge(Ref::Start(0), n("a"));
    assert_eq!(level_list(&t), [lv("a", 1), ("island".to_owned(), None)]);
}

#[test]
fn mermaid_draws_edges_joins_and_labelled_routes() {
    // START -> plan; plan -> [web, docs]; [web, docs] -> write;
    // write ? { More => plan, Done => END }
    let t = nodes(&["plan", "web", "docs", "write"])
        .edge(Ref::Start(0), n("plan"))
        .edge(n("plan"), n("web"))
        .edge(n("plan"), n("docs"))
        .join([n("web"), n("docs")], n("write"), 0)
        .route(
            Route::new(n("write"), 0)
                .target(n("plan"), "More")
                .target(Ref::End(0), "Done"),
        );
    assert_eq!(
        mermaid(&t),
        "graph TD;
\t__start__([<p>__start__</p>]):::first
\tplan(plan)
\tweb(web)
\tdocs(docs)
\twrite(write)
\t__end__([<p>__end__</p>]):::last
\t__start__ --> plan;
\tplan --> web;
\tplan --> docs;
\tweb --> write;
\tdocs --> write;
\twrite -.->|More| plan;
\twrite -.->|Done| __end__;
\tclassDef default fill:#f2f0ff,line-height:1.2
\tclassDef first fill-opacity:0
\tclassDef last fill:#bfb6fc
"
    );
}

#[test]
fn mermaid_escapes_names_that_are_not_identifiers_and_draws_sends() {
    let t = nodes(&["node-1", "end"])
        .edge(Ref::Start(0), n("node-1"))
        .send(n("node-1"), n("end"), 0)
        .route(Route::new(n("end"), 0).unlabelled(n("node-1")));
    assert_eq!(
        mermaid(&t),
        "graph TD;
\t__start__([<p>__start__</p>]):::first
\tn_node_1[\"node-1\"]
\tn_end[\"end\"]
\t__start__ --> n_node_1;
\tn_end -.-> n_node_1;
\tn_node_1 -.->|Send| n_end;
\tclassDef default fill:#f2f0ff,line-height:1.2
\tclassDef first fill-opacity:0
\tclassDef last fill:#bfb6fc
"
    );
}
