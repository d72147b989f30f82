//! The graph behind a [`Topology`]: vertices, arcs, and the analyses the rules share.
//!
//! Vertices are `START` (0), `END` (1) and each distinct declared node in declaration order
//! (2, 3, ...; a duplicate declaration is ignored here). Arcs are every way control can flow from
//! one vertex to another, in a fixed order: edges, then each join's sources to its target, then
//! each route's targets, then sends. Arcs into START or out of END are left out.

use std::collections::{HashMap, HashSet};

use crate::decl::{NodeDecl, Ref, Topology};
use crate::problem::ConnectionKind;
use crate::suggest::suggest;

/// The `START` vertex.
pub(crate) const START: usize = 0;
/// The `END` vertex.
pub(crate) const END: usize = 1;

/// Which connection of a [`Topology`] an arc comes from, by index into its vectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Via {
    /// `topology.edges[i]`.
    Edge(usize),
    /// `topology.joins[join].from[source]` to `topology.joins[join].to`.
    Join {
        /// Index into `topology.joins`.
        join: usize,
        /// Index into that join's `from`.
        source: usize,
    },
    /// `topology.routes[route].targets[target]`.
    Route {
        /// Index into `topology.routes`.
        route: usize,
        /// Index into that route's `targets`.
        target: usize,
    },
    /// `topology.sends[i]`.
    Send(usize),
}

/// An arc that closes a cycle, as found by [`back_edges`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackEdge {
    /// The name of the node the arc leaves (`START` or a node).
    pub from: String,
    /// The name of the node the arc enters, which is on the current DFS path.
    pub to: String,
    /// The connection the arc comes from.
    pub via: Via,
}

/// One way control flows between two vertices; `None` is a name no node declares.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Arc {
    pub(crate) from: Option<usize>,
    pub(crate) to: Option<usize>,
    pub(crate) via: Via,
}

/// How the targets in one [`Group`] fire after their source runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fire {
    /// A plain edge: always.
    Always,
    /// A single-choice route: exactly one of the targets.
    OneOf,
    /// A multi route: any subset of the targets.
    AnyOf,
    /// A send: its target, any number of times (one task per packet).
    Send,
    /// A join (by index): its target, once every source has run.
    Join(usize),
}

/// The node targets one connection out of a vertex may start in the next step.
#[derive(Clone, Debug)]
pub(crate) struct Group {
    pub(crate) fire: Fire,
    pub(crate) targets: Vec<usize>,
}

/// The resolved graph of a topology.
#[derive(Debug)]
pub(crate) struct Graph<'t> {
    pub(crate) t: &'t Topology,
    /// For vertex `v >= 2`, `decl[v - 2]` indexes `t.nodes` (the first declaration of the name).
    decl: Vec<usize>,
    by_name: HashMap<&'t str, usize>,
    /// Misspelt names taken to mean their suggestion, for the arcs.
    guesses: HashMap<&'t str, usize>,
    pub(crate) arcs: Vec<Arc>,
}

impl<'t> Graph<'t> {
    /// The graph of `t`. With `guess`, an arc naming an undeclared node leads to the node
    /// [`suggest`](crate::suggest) proposes, if any, so that one typo does not also make the
    /// nodes after it unreachable.
    pub(crate) fn new(t: &'t Topology, guess: bool) -> Self {
        let mut decl = Vec::new();
        let mut by_name = HashMap::new();
        for (i, node) in t.nodes.iter().enumerate() {
            if !by_name.contains_key(node.name.as_str()) {
                by_name.insert(node.name.as_str(), decl.len() + 2);
                decl.push(i);
            }
        }
        let mut guesses = HashMap::new();
        if guess {
            let names: Vec<&str> = t.nodes.iter().map(|n| n.name.as_str()).collect();
            for r in refs(t) {
                if let (Ref::Node(name, _), _, _) = r {
                    if !by_name.contains_key(name.as_str()) {
                        if let Some(meant) = suggest(name, names.iter().copied()) {
                            guesses.insert(name.as_str(), by_name[meant]);
                        }
                    }
                }
            }
        }
        let mut g = Graph {
            t,
            decl,
            by_name,
            guesses,
            arcs: Vec::new(),
        };
        let mut arcs = Vec::new();
        for (i, e) in t.edges.iter().enumerate() {
            arcs.push(g.arc(&e.from, &e.to, Via::Edge(i)));
        }
        for (join, j) in t.joins.iter().enumerate() {
            for (source, from) in j.from.iter().enumerate() {
                arcs.push(g.arc(from, &j.to, Via::Join { join, source }));
            }
        }
        for (route, r) in t.routes.iter().enumerate() {
            for (target, to) in r.targets.iter().enumerate() {
                arcs.push(g.arc(&r.from, &to.to, Via::Route { route, target }));
            }
        }
        for (i, s) in t.sends.iter().enumerate() {
            arcs.push(g.arc(&s.from, &s.to, Via::Send(i)));
        }
        // Arcs into START or out of END are reported by `check` and mean nothing at run time.
        arcs.retain(|a| a.to != Some(START) && a.from != Some(END));
        g.arcs = arcs;
        g
    }

    fn arc(&self, from: &Ref, to: &Ref, via: Via) -> Arc {
        Arc {
            from: self.vertex(from),
            to: self.vertex(to),
            via,
        }
    }

    /// The number of vertices, `START` and `END` included.
    pub(crate) fn len(&self) -> usize {
        self.decl.len() + 2
    }

    /// The node vertices, in declaration order.
    pub(crate) fn node_vertices(&self) -> std::ops::Range<usize> {
        2..self.len()
    }

    /// The vertex a reference names (or, when guessing, probably meant), `None` for an
    /// undeclared node.
    pub(crate) fn vertex(&self, r: &Ref) -> Option<usize> {
        match r {
            Ref::Start(_) => Some(START),
            Ref::End(_) => Some(END),
            Ref::Node(name, _) => self
                .by_name
                .get(name.as_str())
                .or_else(|| self.guesses.get(name.as_str()))
                .copied(),
        }
    }

    /// The declaration of node vertex `v`.
    pub(crate) fn decl(&self, v: usize) -> &'t NodeDecl {
        &self.t.nodes[self.decl[v - 2]]
    }

    /// The name of vertex `v` as a user writes it.
    pub(crate) fn name(&self, v: usize) -> &'t str {
        match v {
            START => "START",
            END => "END",
            _ => &self.decl(v).name,
        }
    }

    /// Whether `name` is a declared node.
    pub(crate) fn is_declared(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// The distinct declared names, in declaration order.
    pub(crate) fn names(&self) -> impl Iterator<Item = &'t str> + '_ {
        self.node_vertices().map(|v| self.name(v))
    }

    // Reachability: START is reached; the target of an edge, route or send out of a reached
    // vertex is reached; a join's target is reached once all its (declared) sources are; a
    // `send_only` node that no send targets is reached (its packets come from `Command`s the
    // topology does not list).
    pub(crate) fn reachable(&self) -> Vec<bool> {
        let mut reached = vec![false; self.len()];
        reached[START] = true;
        let sent: HashSet<usize> = self.t.sends.iter().filter_map(|s| self.vertex(&s.to)).collect();
        for v in self.node_vertices() {
            if self.decl(v).send_only && !sent.contains(&v) {
                reached[v] = true;
            }
        }
        loop {
            let mut changed = false;
            for arc in &self.arcs {
                if let (Some(from), Some(to), false) = (arc.from, arc.to, matches!(arc.via, Via::Join { .. })) {
                    if reached[from] && !reached[to] {
                        reached[to] = true;
                        changed = true;
                    }
                }
            }
            for j in &self.t.joins {
                let Some(to) = self.vertex(&j.to) else {
                    continue;
                };
                if reached[to] || j.from.is_empty() {
                    continue;
                }
                if j.from.iter().filter_map(|r| self.vertex(r)).all(|v| reached[v]) {
                    reached[to] = true;
                    changed = true;
                }
            }
            if !changed {
                return reached;
            }
        }
    }

    // Ending: a vertex can end its branch when it has no outgoing connection at all (in
    // LangGraph a node without outgoing edges simply stops), when one of its connections can end
    // (an edge, join or route target that is END or an undeclared name, a multi route, which may
    // pick nothing, or a send, which may emit no packet), or when any of its successors can end.
    pub(crate) fn can_end(&self) -> Vec<bool> {
        let mut can_end = vec![false; self.len()];
        can_end[END] = true;
        let mut has_out = vec![false; self.len()];
        for arc in &self.arcs {
            let Some(from) = arc.from else { continue };
            has_out[from] = true;
            if arc.to.is_none_or(|to| to == END) {
                can_end[from] = true;
            }
        }
        for r in &self.t.routes {
            if let Some(from) = self.vertex(&r.from) {
                has_out[from] = true;
                can_end[from] |= r.multi || r.targets.is_empty();
            }
        }
        for s in &self.t.sends {
            if let Some(from) = self.vertex(&s.from) {
                can_end[from] = true;
            }
        }
        for v in 0..self.len() {
            can_end[v] |= !has_out[v];
        }
        loop {
            let mut changed = false;
            for arc in &self.arcs {
                if let (Some(from), Some(to)) = (arc.from, arc.to) {
                    if can_end[to] && !can_end[from] {
                        can_end[from] = true;
                        changed = true;
                    }
                }
            }
            if !changed {
                return can_end;
            }
        }
    }

    /// A depth-first search from START, then from each node not yet visited in declaration
    /// order, following arcs in their fixed order. Returns which arcs are back edges (they enter a
    /// vertex on the current path) and the vertices in the order they finished.
    pub(crate) fn dfs(&self) -> (Vec<bool>, Vec<usize>) {
        let mut out = vec![Vec::new(); self.len()];
        for (i, arc) in self.arcs.iter().enumerate() {
            if let (Some(from), Some(_)) = (arc.from, arc.to) {
                out[from].push(i);
            }
        }
        const WHITE: u8 = 0;
        const GRAY: u8 = 1;
        const BLACK: u8 = 2;
        let mut color = vec![WHITE; self.len()];
        let mut back = vec![false; self.arcs.len()];
        let mut finished = Vec::with_capacity(self.len());
        let roots = std::iter::once(START).chain(self.node_vertices());
        for root in roots {
            if color[root] != WHITE {
                continue;
            }
            color[root] = GRAY;
            let mut stack = vec![(root, 0)];
            while let Some((v, next)) = stack.last_mut() {
                let v = *v;
                if let Some(&arc) = out[v].get(*next) {
                    *next += 1;
                    let to = self.arcs[arc].to.expect("only arcs between known vertices");
                    match color[to] {
                        WHITE => {
                            color[to] = GRAY;
                            stack.push((to, 0));
                        }
                        GRAY => back[arc] = true,
                        _ => {}
                    }
                } else {
                    color[v] = BLACK;
                    finished.push(v);
                    stack.pop();
                }
            }
        }
        (back, finished)
    }

    /// For each vertex, the vertices strictly after it once back edges are cut.
    pub(crate) fn descendants(&self, back: &[bool], finished: &[usize]) -> Vec<Vec<bool>> {
        let mut out = vec![Vec::new(); self.len()];
        for (arc, is_back) in self.arcs.iter().zip(back) {
            if let (Some(from), Some(to), false) = (arc.from, arc.to, *is_back) {
                out[from].push(to);
            }
        }
        let mut desc = vec![vec![false; self.len()]; self.len()];
        // A vertex finishes after every vertex a non-back arc leads to.
        for &v in finished {
            for &w in &out[v] {
                let after_w = desc[w].clone();
                let dv = &mut desc[v];
                dv[w] = true;
                for (x, reached) in after_w.into_iter().enumerate() {
                    dv[x] |= reached;
                }
            }
        }
        desc
    }

    /// The node groups each connection out of `u` may start.
    pub(crate) fn groups(&self, u: usize) -> Vec<Group> {
        let node = |r: &Ref| self.vertex(r).filter(|&v| v >= 2);
        let mut groups = Vec::new();
        for e in &self.t.edges {
            if self.vertex(&e.from) == Some(u) {
                groups.push(Group {
                    fire: Fire::Always,
                    targets: node(&e.to).into_iter().collect(),
                });
            }
        }
        for (i, j) in self.t.joins.iter().enumerate() {
            if j.from.iter().any(|r| self.vertex(r) == Some(u)) {
                groups.push(Group {
                    fire: Fire::Join(i),
                    targets: node(&j.to).into_iter().collect(),
                });
            }
        }
        for r in &self.t.routes {
            if self.vertex(&r.from) == Some(u) {
                let mut targets: Vec<usize> = r.targets.iter().filter_map(|t| node(&t.to)).collect();
                targets.dedup();
                groups.push(Group {
                    fire: if r.multi { Fire::AnyOf } else { Fire::OneOf },
                    targets,
                });
            }
        }
        for s in &self.t.sends {
            if self.vertex(&s.from) == Some(u) {
                groups.push(Group {
                    fire: Fire::Send,
                    targets: node(&s.to).into_iter().collect(),
                });
            }
        }
        groups.retain(|g| !g.targets.is_empty());
        groups
    }
}

/// The arcs that close cycles: those entering a node on the current path of a depth-first search
/// from START (then from each node not yet visited, in declaration order). Arcs are followed in
/// a fixed order: edges, joins (source by source), routes (target by target), sends, each in
/// declaration order. Arcs naming undeclared nodes are ignored.
///
/// # Examples
///
/// ```
/// use weir_topology::{back_edges, BackEdge, NodeDecl, Ref, Route, Topology, Via};
///
/// // START -> a; a -> b; b ? { More => a, Done => END }
/// let t = Topology::new()
///     .node(NodeDecl::new("a", 0))
///     .node(NodeDecl::new("b", 0))
///     .edge(Ref::Start(0), Ref::node("a", 0))
///     .edge(Ref::node("a", 0), Ref::node("b", 0))
///     .route(
///         Route::new(Ref::node("b", 0), 0)
///             .target(Ref::node("a", 0), "More")
///             .target(Ref::End(0), "Done"),
///     );
/// assert_eq!(
///     back_edges(&t),
///     vec![BackEdge { from: "b".into(), to: "a".into(), via: Via::Route { route: 0, target: 0 } }]
/// );
/// ```
pub fn back_edges(t: &Topology) -> Vec<BackEdge> {
    let g = Graph::new(t, false);
    let (back, _) = g.dfs();
    g.arcs
        .iter()
        .zip(back)
        .filter(|(_, is_back)| *is_back)
        .map(|(arc, _)| BackEdge {
            from: g.name(arc.from.expect("back edges join known vertices")).to_owned(),
            to: g.name(arc.to.expect("back edges join known vertices")).to_owned(),
            via: arc.via,
        })
        .collect()
}

/// Every node reference in the topology, with the kind of connection it appears in and whether
/// it is that connection's source, in declaration order.
pub(crate) fn refs(t: &Topology) -> impl Iterator<Item = (&Ref, ConnectionKind, bool)> {
    let edges = t.edges.iter().flat_map(|e| {
        [
            (&e.from, ConnectionKind::Edge, true),
            (&e.to, ConnectionKind::Edge, false),
        ]
    });
    let joins = t.joins.iter().flat_map(|j| {
        j.from
            .iter()
            .map(|r| (r, ConnectionKind::Join, true))
            .chain([(&j.to, ConnectionKind::Join, false)])
    });
    let routes = t.routes.iter().flat_map(|r| {
        std::iter::once((&r.from, ConnectionKind::Route, true))
            .chain(r.targets.iter().map(|t| (&t.to, ConnectionKind::Route, false)))
    });
    let sends = t.sends.iter().flat_map(|s| {
        [
            (&s.from, ConnectionKind::Send, true),
            (&s.to, ConnectionKind::Send, false),
        ]
    });
    edges.chain(joins).chain(routes).chain(sends)
}
