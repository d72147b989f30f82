//! Levels (the longest simple path from START to each node) and the strongly connected
//! components they are computed over; joins that a loop can starve.
//!
//! A node's level is the seed's rule: the most arcs on any path from START to it that visits no
//! vertex twice. It depends only on the graph, never on the order edges are declared in (an
//! earlier version cut depth-first back edges, which made a loop's re-entry look like a forward
//! edge or not depending on that order).
//!
//! # How it is computed
//!
//! A simple path crosses the strongly connected components (the loops) of the graph in their
//! topological order, entering and leaving each at most once, and inside one component it is a
//! simple path of that component. So the condensation is walked in topological order with a
//! longest-path pass over its arcs, and only inside each component are simple paths enumerated,
//! from each vertex the path can enter it by. Graphs without loops cost linear time; a loop of
//! `k` nodes costs at most the number of its simple paths.
//!
//! That number can grow exponentially, so enumeration is bounded: at most [`PATH_BUDGET`]
//! (262,144) extensions per component. Within the budget the levels are exact. Beyond it (a loop of
//! dozens of densely connected nodes), a component's levels are the longest paths found within
//! the budget, searched with successors in name order, so they still do not depend on the order
//! of declarations.

use crate::decl::Topology;
use crate::graph::{Graph, Via, START};
use crate::problem::{Problem, ProblemKind};

/// How many path extensions the level search may make inside one loop before it settles for the
/// longest paths found so far.
pub const PATH_BUDGET: usize = 1 << 18;

/// The strongly connected components of a graph given by its successor lists: each vertex's
/// component, and the components in topological order (a component's arcs lead only to itself
/// or to later ones). Tarjan's algorithm, iterative.
pub(crate) fn components(out: &[Vec<usize>]) -> (Vec<usize>, Vec<Vec<usize>>) {
    let n = out.len();
    const NONE: usize = usize::MAX;
    let mut index = vec![NONE; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut comp = vec![NONE; n];
    let mut comps: Vec<Vec<usize>> = Vec::new();
    let mut next = 0;
    for root in 0..n {
        if index[root] != NONE {
            continue;
        }
        let mut call = vec![(root, 0)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut i)) = call.last_mut() {
            if let Some(&w) = out[v].get(*i) {
                *i += 1;
                if index[w] == NONE {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    call.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            call.pop();
            if let Some(&(parent, _)) = call.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut c = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    comp[w] = comps.len();
                    c.push(w);
                    if w == v {
                        break;
                    }
                }
                comps.push(c);
            }
        }
    }
    // Tarjan finishes components in reverse topological order.
    comps.reverse();
    let last = comps.len().saturating_sub(1);
    for c in &mut comp {
        *c = last - *c;
    }
    (comp, comps)
}

/// The successor lists of `g` over the arcs between known vertices, without self-loops (no
/// simple path uses one), each sorted by name and deduplicated.
fn successors(g: &Graph<'_>) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new(); g.len()];
    for arc in &g.arcs {
        if let (Some(from), Some(to)) = (arc.from, arc.to) {
            if from != to {
                out[from].push(to);
            }
        }
    }
    for o in &mut out {
        o.sort_by(|&a, &b| g.name(a).cmp(g.name(b)).then(a.cmp(&b)));
        o.dedup();
    }
    out
}

/// Each vertex's level, `None` where START does not lead.
pub(crate) fn vertex_levels(g: &Graph<'_>) -> Vec<Option<usize>> {
    let out = successors(g);
    let (comp, comps) = components(&out);
    let mut level: Vec<Option<usize>> = vec![None; g.len()];
    // The longest path found so far that enters each vertex from an earlier component.
    let mut entry: Vec<Option<usize>> = vec![None; g.len()];
    entry[START] = Some(0);
    // Whether each vertex is on the current path; all false between walks.
    let mut on_path = vec![false; g.len()];
    for (c, members) in comps.iter().enumerate() {
        let mut budget = PATH_BUDGET;
        for &x in members {
            if let Some(d) = entry[x] {
                let mut walk = Walk {
                    out: &out,
                    comp: &comp,
                    c,
                    on_path: &mut on_path,
                    budget: &mut budget,
                };
                walk.from(x, d, &mut level);
            }
        }
        for &y in members {
            let Some(l) = level[y] else { continue };
            for &z in out[y].iter().filter(|&&z| comp[z] != c) {
                entry[z] = Some(entry[z].map_or(l + 1, |e| e.max(l + 1)));
            }
        }
    }
    level
}

/// A search of the simple paths inside one component.
struct Walk<'a> {
    out: &'a [Vec<usize>],
    comp: &'a [usize],
    c: usize,
    on_path: &'a mut [bool],
    budget: &'a mut usize,
}

impl Walk<'_> {
    /// Every simple path inside the component from `x`, entered at depth `d`: raises each
    /// vertex's level to the depth it is reached at, spending one unit of budget per extension.
    fn from(&mut self, x: usize, d: usize, level: &mut [Option<usize>]) {
        let raise = |level: &mut [Option<usize>], v: usize, l: usize| {
            level[v] = Some(level[v].map_or(l, |old| old.max(l)));
        };
        raise(level, x, d);
        self.on_path[x] = true;
        let mut path = vec![(x, 0usize)];
        while let Some(&mut (v, ref mut i)) = path.last_mut() {
            let out = &self.out[v];
            let next = out[*i..]
                .iter()
                .position(|&w| self.comp[w] == self.c && !self.on_path[w]);
            let Some(k) = next.filter(|_| *self.budget > 0) else {
                self.on_path[v] = false;
                path.pop();
                continue;
            };
            *self.budget -= 1;
            let w = out[*i + k];
            *i += k + 1;
            raise(level, w, d + path.len());
            self.on_path[w] = true;
            path.push((w, 0));
        }
    }
}

/// Each node's level: the most arcs on a path from START to it that visits no vertex twice, or
/// `None` when START does not lead to it. In declaration order, one entry per distinct name.
/// Arcs naming undeclared nodes are ignored.
///
/// It depends only on the graph, not on the order of its declarations. It is exact unless a loop
/// has more than about 260,000 simple paths (see [`PATH_BUDGET`]).
///
/// The JSON loader uses it to decide what a multi-input node waits for: its upstreams on a lower
/// level. An arc that re-enters a loop comes from a node that some simple path reaches after the
/// loop's entry, so from a higher level.
///
/// # Examples
///
/// ```
/// use weir_topology::{levels, NodeDecl, Ref, Topology};
///
/// // START -> a -> b -> a (a loop), START -> c
/// let t = Topology::new()
///     .node(NodeDecl::new("a", 0))
///     .node(NodeDecl::new("b", 0))
///     .node(NodeDecl::new("c", 0))
///     .edge(Ref::Start(0), Ref::node("a", 0))
///     .edge(Ref::node("a", 0), Ref::node("b", 0))
///     .edge(Ref::node("b", 0), Ref::node("a", 0));
/// assert_eq!(
///     levels(&t),
///     vec![("a".to_owned(), Some(1)), ("b".to_owned(), Some(2)), ("c".to_owned(), None)]
/// );
/// ```
pub fn levels(t: &Topology) -> Vec<(String, Option<usize>)> {
    let g = Graph::new(t, false);
    let level = vertex_levels(&g);
    g.node_vertices().map(|v| (g.name(v).to_owned(), level[v])).collect()
}

/// The joins a loop can starve: after the join's target runs, a loop leads back to one of the
/// nodes it waits for but not to another, and re-enters the target only through the join. On
/// the next lap the join waits for the node that never runs again, and the run ends there.
/// One [`Problem`] per such join, at its site, naming the target, a node the loop re-runs and a
/// node it does not.
///
/// [`check`](crate::check) does not include this rule; the JSON loader applies it.
///
/// # Examples
///
/// ```
/// use weir_topology::{starving_joins, NodeDecl, Ref, Route, Topology};
///
/// // START -> [fetch, plan]; [fetch, plan] -> merge; merge ? { Redo => plan, Done => END }
/// let t = Topology::new()
///     .node(NodeDecl::new("fetch", 0))
///     .node(NodeDecl::new("plan", 0))
///     .node(NodeDecl::new("merge", 0))
///     .edge(Ref::Start(0), Ref::node("fetch", 0))
///     .edge(Ref::Start(0), Ref::node("plan", 0))
///     .join([Ref::node("fetch", 0), Ref::node("plan", 0)], Ref::node("merge", 0), 7)
///     .route(
///         Route::new(Ref::node("merge", 0), 0)
///             .target(Ref::node("plan", 0), "Redo")
///             .target(Ref::End(0), "Done"),
///     );
/// let problems = starving_joins(&t);
/// assert_eq!(problems.len(), 1);
/// assert_eq!(problems[0].site, 7);
/// assert_eq!(
///     problems[0].to_string(),
///     "join into `merge` can starve: after `merge` runs, a loop leads back to `plan` but never \
///      to `fetch`, so the next time `merge` waits for `fetch` forever"
/// );
/// ```
pub fn starving_joins(t: &Topology) -> Vec<Problem> {
    let g = Graph::new(t, false);
    let out = successors(&g);
    let (comp, _) = components(&out);
    let mut problems = Vec::new();
    for (j, join) in t.joins.iter().enumerate() {
        let Some(to) = g.vertex(&join.to) else { continue };
        let sources: Vec<usize> = join.from.iter().filter_map(|r| g.vertex(r)).collect();
        let looped = sources.iter().find(|&&u| u != to && comp[u] == comp[to]);
        let left = sources.iter().find(|&&v| comp[v] != comp[to]);
        let (Some(&looped), Some(&left)) = (looped, left) else {
            continue;
        };
        // Another arc into the target from inside the loop runs it on every lap anyway.
        let other_way_in = g.arcs.iter().any(|a| {
            a.to == Some(to)
                && a.from.is_some_and(|f| comp[f] == comp[to])
                && !matches!(a.via, Via::Join { join: k, .. } if k == j)
        });
        if !other_way_in {
            problems.push(Problem::new(
                join.site,
                ProblemKind::StarvingJoin {
                    target: g.name(to).to_owned(),
                    looped: g.name(looped).to_owned(),
                    left: g.name(left).to_owned(),
                },
            ));
        }
    }
    problems
}
