//! Compiling a builder's nodes, edges, joins and routers into the compiled nodes' channels, one
//! phase per kind of connection, every problem collected rather than the first returned.

use super::compile::{CompiledNode, CompiledRouter, ControlSpec, START_NAME};
use super::policy::NodePolicy;
use super::{GraphBuilder, NodeRef};
use crate::state::{FieldInfo, State};
use std::collections::HashMap;
use std::sync::Arc;
use weir_topology::{NodeDecl, Ref, Route, Topology};

/// Where a connection starts or ends, once resolved.
#[derive(Debug, Clone, Copy)]
enum Endpoint {
    Start,
    End,
    Node(u32),
}

/// A builder being wired: its nodes by name, and the problems found so far.
pub(super) struct Wiring<'b, S: State> {
    b: &'b GraphBuilder<S>,
    n_user: usize,
    n_fields: usize,
    with_start: bool,
    by_name: HashMap<&'b str, u32>,
    pub(super) problems: Vec<String>,
}

impl<'b, S: State> Wiring<'b, S> {
    /// Starts wiring `b` over a state of `n_fields` fields; reports node names checkpoints cannot
    /// tell apart from LangGraph's own channel names.
    pub(super) fn new(b: &'b GraphBuilder<S>, n_fields: usize, with_start: bool) -> Self {
        let mut problems = Vec::new();
        let mut by_name = HashMap::new();
        for (i, n) in b.nodes.iter().enumerate() {
            if n.name.is_empty() || n.name.contains(['|', ':']) {
                problems.push(format!(
                    "node name `{}` is invalid: names may not be empty or contain `|` or `:`",
                    n.name
                ));
            }
            by_name.insert(n.name.as_str(), i as u32);
        }
        Self {
            b,
            n_user: b.nodes.len(),
            n_fields,
            with_start,
            by_name,
            problems,
        }
    }

    fn resolve(&mut self, r: &NodeRef) -> Option<Endpoint> {
        match r {
            NodeRef::Start => Some(Endpoint::Start),
            NodeRef::End => Some(Endpoint::End),
            NodeRef::Id(id) if id.index() < self.n_user => Some(Endpoint::Node(id.0)),
            NodeRef::Id(id) => {
                self.problems
                    .push(format!("node id {} does not belong to this graph", id.index()));
                None
            }
            // Unknown names were reported by the shared rules.
            NodeRef::Name(n) => self.by_name.get(&**n).map(|i| Endpoint::Node(*i)),
        }
    }

    /// The node a `what` (edge, join, router) starts from. Edges out of END and into START were
    /// reported by the shared rules.
    fn source_of(&mut self, e: Endpoint, what: &str) -> Option<u32> {
        match e {
            Endpoint::Node(i) => Some(i),
            Endpoint::Start if self.with_start => Some(self.n_user as u32),
            Endpoint::Start => {
                self.problems.push(format!(
                    "{what} from START in a pregel graph, which has no START: nodes subscribe to fields instead"
                ));
                None
            }
            Endpoint::End => None,
        }
    }

    /// The user's nodes compiled (their connections still empty), then the hidden start node.
    pub(super) fn nodes(&mut self) -> Vec<CompiledNode<S>> {
        let (b, n_fields) = (self.b, self.n_fields);
        let mut nodes: Vec<CompiledNode<S>> = b
            .nodes
            .iter()
            .map(|n| CompiledNode {
                func: n.func.clone(),
                triggers: Vec::new(),
                edges: Vec::new(),
                joins: Vec::new(),
                routers: Vec::new(),
                may_write: n.may_write.as_ref().map(|w| {
                    let mut mask = vec![false; n_fields];
                    for f in w {
                        if let Some(m) = mask.get_mut(*f) {
                            *m = true;
                        }
                    }
                    mask
                }),
                cache: n.cache.clone(),
                handler: n.handler.clone(),
                fresh: n.fresh.clone(),
                policy: NodePolicy {
                    retry: n.retry.clone().or_else(|| b.default_retry.clone()),
                    timeout: n.timeout,
                },
            })
            .collect();
        for n in &b.nodes {
            if n.timeout.is_some() && !n.is_async {
                self.problems.push(format!(
                    "node `{}` has a timeout but is a plain function, which cannot be stopped while it runs: make it async",
                    n.name
                ));
            }
            if let Some(f) = n.may_write.iter().flatten().find(|f| **f >= n_fields) {
                self.problems.push(format!(
                    "node `{}` declares writes of field {f}, but the state has {n_fields} fields",
                    n.name
                ));
            }
        }
        if self.with_start {
            nodes.push(CompiledNode {
                func: None,
                triggers: Vec::new(),
                edges: Vec::new(),
                joins: Vec::new(),
                routers: Vec::new(),
                may_write: None,
                policy: NodePolicy::default(),
                cache: None,
                handler: None,
                fresh: None,
            });
        }
        nodes
    }

    /// One branch channel per node (for the start node: the input channel).
    pub(super) fn branches(&self, n_nodes: usize) -> Vec<ControlSpec> {
        (0..n_nodes)
            .map(|i| ControlSpec::Branch {
                deferred: i < self.n_user && self.b.nodes[i].defer,
            })
            .collect()
    }

    /// Plain edges: the source writes the target's branch channel.
    pub(super) fn edges(&mut self, nodes: &mut [CompiledNode<S>]) {
        let b = self.b;
        for (from, to) in &b.edges {
            let (Some(f), Some(t)) = (self.resolve(from), self.resolve(to)) else {
                continue;
            };
            let (Some(f), Some(t)) = (self.source_of(f, "edge"), target_of(t)) else {
                continue;
            };
            let Some(t) = t else { continue };
            if b.nodes[t as usize].func.is_none() {
                self.problems.push(format!(
                    "edge into `{}`, which runs only from `Send`s on an input of its own",
                    b.nodes[t as usize].name
                ));
                continue;
            }
            if !nodes[f as usize].edges.contains(&t) {
                nodes[f as usize].edges.push(t);
            }
        }
    }

    /// Joins: each source writes its name to the barrier; the target is triggered by it.
    pub(super) fn joins(&mut self, nodes: &mut [CompiledNode<S>], controls: &mut Vec<ControlSpec>) {
        let b = self.b;
        for (from, to) in &b.joins {
            let Some(t) = self.resolve(to).and_then(target_of) else {
                continue;
            };
            let mut sources = Vec::new();
            for r in from {
                let Some(e) = self.resolve(r) else { continue };
                // A source named twice was reported by the shared rules.
                match self.source_of(e, "join") {
                    Some(s) if !sources.contains(&s) => sources.push(s),
                    _ => {}
                }
            }
            // A join into END triggers nothing (LangGraph adds nothing either).
            let Some(t) = t else { continue };
            let index = controls.len() as u32;
            controls.push(ControlSpec::Join {
                sources: sources.clone(),
                deferred: b.nodes[t as usize].defer,
            });
            for s in sources {
                nodes[s as usize].joins.push(index);
            }
            nodes[t as usize].triggers.push((self.n_fields as u32) + index);
        }
    }

    /// Routers, after the node they follow, with the destinations they declared.
    pub(super) fn routers(&mut self, nodes: &mut [CompiledNode<S>]) {
        for r in &self.b.routers {
            let Some(e) = self.resolve(&r.source) else {
                continue;
            };
            let Some(s) = self.source_of(e, "router") else {
                continue;
            };
            let mut targets = Vec::new();
            for t in &r.targets {
                if let Some(t) = self.resolve(t).and_then(target_of) {
                    targets.push(t);
                }
            }
            let func = r.func.clone();
            nodes[s as usize].routers.push(CompiledRouter { func, targets });
        }
    }

    /// Triggers: the node's own branch channel, then the fields it subscribes to.
    pub(super) fn triggers(&mut self, nodes: &mut [CompiledNode<S>]) {
        let n_fields = self.n_fields;
        for (i, node) in nodes.iter_mut().enumerate() {
            node.triggers.insert(0, (n_fields + i) as u32);
            let Some(spec) = self.b.nodes.get(i) else { continue };
            for &f in &spec.subscribes {
                if f >= n_fields {
                    self.problems.push(format!(
                        "node `{}` subscribes to field {f}, but the state has {n_fields} fields",
                        spec.name
                    ));
                    continue;
                }
                node.triggers.push(f as u32);
            }
        }
    }

    /// The nodes `refs` names, as a mask over `n_nodes`.
    pub(super) fn interrupts(&mut self, refs: &[NodeRef], n_nodes: usize) -> Vec<bool> {
        let mut mask = vec![false; n_nodes];
        for r in refs {
            match self.resolve(r) {
                Some(Endpoint::Node(i)) => mask[i as usize] = true,
                Some(_) => self.problems.push("interrupts name nodes, not START or END".to_owned()),
                None => {}
            }
        }
        mask
    }
}

/// Where a connection ends: a node, or END (`None`); START is no target.
fn target_of(e: Endpoint) -> Option<Option<u32>> {
    match e {
        Endpoint::Node(i) => Some(Some(i)),
        Endpoint::End => Some(None),
        Endpoint::Start => None,
    }
}

/// Every node's name, the hidden start node's last, and each node's position in name order.
pub(super) fn names_and_rank<S: State>(b: &GraphBuilder<S>, with_start: bool) -> (Vec<Arc<str>>, Vec<u32>) {
    let mut names: Vec<Arc<str>> = b.nodes.iter().map(|n| Arc::from(n.name.as_str())).collect();
    if with_start {
        names.push(Arc::from(START_NAME));
    }
    let mut order: Vec<u32> = (0..names.len() as u32).collect();
    order.sort_by(|a, b| names[*a as usize].as_bytes().cmp(names[*b as usize].as_bytes()));
    let mut rank = vec![0u32; names.len()];
    for (pos, id) in order.iter().enumerate() {
        rank[*id as usize] = pos as u32;
    }
    (names, rank)
}

/// Every channel's name, by channel id: the fields', then `__start__`, `branch:to:<node>` and
/// `join:<a>+<b>:<node>`, as LangGraph names them.
pub(super) fn channel_names<S: State>(
    fields: &[FieldInfo],
    controls: &[ControlSpec],
    nodes: &[CompiledNode<S>],
    names: &[Arc<str>],
    n_user: usize,
) -> Vec<String> {
    let n_fields = fields.len();
    let mut channel_names: Vec<String> = fields.iter().map(|f| f.name().to_owned()).collect();
    for (c, spec) in controls.iter().enumerate() {
        channel_names.push(match spec {
            ControlSpec::Branch { .. } if c == n_user => START_NAME.to_owned(),
            ControlSpec::Branch { .. } => format!("branch:to:{}", names[c]),
            // Named below, once its target is known.
            ControlSpec::Join { .. } => String::new(),
        });
    }
    // Joins are named after their sources and target.
    for (i, node) in nodes.iter().enumerate() {
        for &t in &node.triggers {
            let Some(c) = (t as usize).checked_sub(n_fields) else {
                continue;
            };
            if let ControlSpec::Join { sources, .. } = &controls[c] {
                let from: Vec<&str> = sources.iter().map(|s| &*names[*s as usize]).collect();
                channel_names[n_fields + c] = format!("join:{}:{}", from.join("+"), names[i]);
            }
        }
    }
    channel_names
}

/// The builder's graph as the shared rules see it. Sites are indices into nothing: the rules'
/// messages name the nodes themselves.
pub(super) fn topology_of<S: State>(b: &GraphBuilder<S>, fields: &[FieldInfo]) -> Topology {
    let name = |r: &NodeRef| -> Ref {
        match r {
            NodeRef::Start => Ref::Start(0),
            NodeRef::End => Ref::End(0),
            NodeRef::Id(id) => Ref::node(b.nodes.get(id.index()).map_or("?", |n| n.name.as_str()), 0),
            NodeRef::Name(n) => Ref::node(n.to_string(), 0),
        }
    };
    let mut t = Topology::new();
    for n in &b.nodes {
        let mut decl = NodeDecl::new(n.name.clone(), 0);
        if n.func.is_none() {
            decl = decl.send_only();
        }
        if n.defer {
            decl = decl.deferred();
        }
        if let Some(w) = &n.may_write {
            decl = decl.writes(w.iter().filter_map(|f| fields.get(*f)).map(|f| (f.name(), 0)));
        }
        t = t.node(decl);
    }
    for (from, to) in &b.edges {
        t = t.edge(name(from), name(to));
    }
    for (from, to) in &b.joins {
        t = t.join(from.iter().map(name), name(to), 0);
    }
    for r in &b.routers {
        // A router of the builder may choose several targets at once, or none.
        let mut route = Route::new(name(&r.source), 0).multi();
        for target in &r.targets {
            route = route.unlabelled(name(target));
        }
        t = t.route(route);
    }
    for (from, targets) in &b.destinations {
        let mut route = Route::new(name(from), 0).multi();
        for target in targets {
            route = route.unlabelled(name(target));
        }
        t = t.route(route);
    }
    for f in fields.iter().filter(|f| f.kind.takes_one_write()) {
        t = t.single_write_field(f.name());
    }
    t
}
