//! The graph-shape rules, one small function each, under a comment stating the rule.

use std::collections::HashSet;

use crate::decl::{Ref, Topology};
use crate::graph::{refs, Graph, START};
use crate::problem::{ConnectionKind, Problem, ProblemKind};
use crate::suggest::suggest;

/// Every problem with the topology's wiring, not just the first.
///
/// Problems come rule by rule, in this order, and within a rule in declaration order:
/// reserved names, duplicate nodes, unknown nodes, misuse of START and END, malformed joins and
/// routes, no entry, unreachable nodes, nodes with no path to END, co-running writes.
///
/// One mistake gives one problem where it can: a node that a misspelt reference was probably
/// meant to name is not also reported unreachable or stuck, and when the graph has no entry its
/// nodes are not also reported unreachable.
///
/// # Examples
///
/// ```
/// use weir_topology::{check, NodeDecl, Ref, Topology};
///
/// let t = Topology::new()
///     .node(NodeDecl::new("search", 1))
///     .edge(Ref::Start(2), Ref::node("serch", 3));
/// let messages: Vec<String> = check(&t).iter().map(|p| p.to_string()).collect();
/// assert_eq!(messages, ["unknown node `serch`; did you mean `search`?"]);
/// ```
pub fn check(t: &Topology) -> Vec<Problem> {
    let g = Graph::new(t, true);
    let mut cx = Ctxt {
        g: &g,
        problems: Vec::new(),
        suggested: HashSet::new(),
    };
    reserved_names(&mut cx);
    duplicate_nodes(&mut cx);
    unknown_nodes(&mut cx);
    start_and_end(&mut cx);
    joins_and_routes(&mut cx);
    let has_entry = entry(&mut cx);
    let reached = g.reachable();
    if has_entry {
        unreachable(&mut cx, &reached);
    }
    no_path_to_end(&mut cx, &reached);
    co_running_writes(&mut cx);
    cx.problems
}

/// What the rules share: the graph, the problems found so far, and the names suggested for
/// misspelt references.
struct Ctxt<'g, 't> {
    g: &'g Graph<'t>,
    problems: Vec<Problem>,
    suggested: HashSet<&'t str>,
}

impl Ctxt<'_, '_> {
    fn report(&mut self, problem: Problem) {
        self.problems.push(problem);
    }
}

// Rule: a node may not take the name of START or END (`START`, `END`, `__start__`, `__end__`).
fn reserved_names(cx: &mut Ctxt<'_, '_>) {
    for node in &cx.g.t.nodes {
        if matches!(node.name.as_str(), "START" | "END" | "__start__" | "__end__") {
            cx.report(Problem::new(
                node.site,
                ProblemKind::ReservedName {
                    name: node.name.clone(),
                },
            ));
        }
    }
}

// Rule: each node is declared once; a repeat is reported at its own declaration, pointing back
// at the first.
fn duplicate_nodes(cx: &mut Ctxt<'_, '_>) {
    let mut first = std::collections::HashMap::new();
    for node in &cx.g.t.nodes {
        if let Some(&site) = first.get(node.name.as_str()) {
            cx.report(
                Problem::new(
                    node.site,
                    ProblemKind::DuplicateNode {
                        name: node.name.clone(),
                    },
                )
                .with_related(site),
            );
        } else {
            first.insert(node.name.as_str(), node.site);
        }
    }
}

// Rule: every node an edge, join, route or send names is declared. The message suggests the
// closest declared name, or lists them all.
fn unknown_nodes(cx: &mut Ctxt<'_, '_>) {
    let g = cx.g;
    for (r, _, _) in refs(g.t) {
        let Ref::Node(name, site) = r else { continue };
        if g.is_declared(name) {
            continue;
        }
        let suggestion = suggest(name, g.names());
        cx.suggested.extend(suggestion);
        cx.report(Problem::new(
            *site,
            ProblemKind::UnknownNode {
                name: name.clone(),
                suggestion: suggestion.map(str::to_owned),
                declared: g.names().map(str::to_owned).collect(),
            },
        ));
    }
}

// Rule: END is never a source (of an edge, join, route or send) and START never a target; a send
// never targets END, since a packet must start a node.
fn start_and_end(cx: &mut Ctxt<'_, '_>) {
    for (r, what, is_source) in refs(cx.g.t) {
        let kind = match (r, is_source) {
            (Ref::End(_), true) => ProblemKind::FromEnd { what },
            (Ref::Start(_), false) => ProblemKind::IntoStart { what },
            (Ref::End(_), false) if what == ConnectionKind::Send => ProblemKind::SendToEnd,
            _ => continue,
        };
        cx.report(Problem::new(r.site(), kind));
    }
}

// Rule: a join waits for at least one node and names each once (a single predecessor is
// allowed); a route has at least one target.
fn joins_and_routes(cx: &mut Ctxt<'_, '_>) {
    for j in &cx.g.t.joins {
        if j.from.is_empty() {
            cx.report(Problem::new(j.site, ProblemKind::EmptyJoin));
        }
        for (i, r) in j.from.iter().enumerate() {
            if j.from[..i].iter().any(|earlier| earlier.name() == r.name()) {
                cx.report(Problem::new(
                    r.site(),
                    ProblemKind::DuplicateJoinSource {
                        name: r.name().to_owned(),
                    },
                ));
            }
        }
    }
    for r in &cx.g.t.routes {
        if r.targets.is_empty() {
            cx.report(Problem::new(r.site, ProblemKind::EmptyRoute));
        }
    }
}

// Rule: something leaves START (an edge, a join, a route or a send), reported at the graph's own
// site. Returns whether it does.
fn entry(cx: &mut Ctxt<'_, '_>) -> bool {
    let has_entry = cx.g.arcs.iter().any(|arc| arc.from == Some(START));
    if !has_entry {
        cx.report(Problem::new(cx.g.t.site, ProblemKind::NoEntry));
    }
    has_entry
}

// Rule: START leads to every node, through edges, routes, sends, and joins whose sources are all
// reached (see `Graph::reachable`).
fn unreachable(cx: &mut Ctxt<'_, '_>, reached: &[bool]) {
    let g = cx.g;
    for v in g.node_vertices() {
        if !reached[v] && !cx.suggested.contains(g.name(v)) {
            let node = g.decl(v);
            cx.report(Problem::new(
                node.site,
                ProblemKind::Unreachable {
                    name: node.name.clone(),
                },
            ));
        }
    }
}

// Rule: every reached node can end its branch: some path from it reaches END or a node with no
// outgoing connection (such a node just stops, as in LangGraph), or passes a route that can pick
// END, a multi route (it may pick nothing) or a send (it may emit nothing). A node that only
// loops is reported; unreached nodes are left to the rule above.
fn no_path_to_end(cx: &mut Ctxt<'_, '_>, reached: &[bool]) {
    let g = cx.g;
    let can_end = g.can_end();
    for v in g.node_vertices() {
        if reached[v] && !can_end[v] && !cx.suggested.contains(g.name(v)) {
            let node = g.decl(v);
            cx.report(Problem::new(
                node.site,
                ProblemKind::NoPathToEnd {
                    name: node.name.clone(),
                },
            ));
        }
    }
}

// Rule: two nodes that can run in the same step (see `Graph::co_running`) do not both write a
// field that takes one value per step, and a node that can run several times in one step (a send
// target) does not write one. Reported at the later-declared node's write. Nodes without a
// `writes` declaration are not checked.
fn co_running_writes(cx: &mut Ctxt<'_, '_>) {
    let g = cx.g;
    let single: HashSet<&str> = g.t.single_write_fields.iter().map(String::as_str).collect();
    // Nothing to check unless a node declares its writes (and the analysis is quadratic in the
    // number of nodes: skip it for the large generated graphs that declare nothing).
    if single.is_empty() || g.t.nodes.iter().all(|n| n.writes.is_none()) {
        return;
    }
    // The first mention of each single-value field a node writes, in its declared order.
    let writes = |v: usize| -> Vec<(&str, usize)> {
        let mut seen = HashSet::new();
        g.decl(v)
            .writes
            .iter()
            .flatten()
            .filter(|(f, _)| single.contains(f.as_str()) && seen.insert(f.as_str()))
            .map(|(f, s)| (f.as_str(), *s))
            .collect()
    };
    for (a, b) in g.co_running() {
        let (wa, wb) = (writes(a), writes(b));
        if a == b {
            for (field, site) in wa {
                cx.report(Problem::new(
                    site,
                    ProblemKind::SendWriteConflict {
                        node: g.name(a).to_owned(),
                        field: field.to_owned(),
                    },
                ));
            }
            continue;
        }
        for (field, site) in wb {
            if let Some(&(_, first)) = wa.iter().find(|(f, _)| *f == field) {
                cx.report(
                    Problem::new(
                        site,
                        ProblemKind::WriteConflict {
                            first: g.name(a).to_owned(),
                            second: g.name(b).to_owned(),
                            field: field.to_owned(),
                        },
                    )
                    .with_related(first),
                );
            }
        }
    }
}
