//! The flow's shape for the shared checks of `weir-topology`, and the joins decided from its
//! levels.

use super::loader::{edge_path, node_path, LEdge, LNode, Loader};
use crate::node::Role;
use crate::state::{Reduce, Schema};
use std::collections::{BTreeMap, HashMap, HashSet};
use weir_topology::{self as topology, Ref, Route, Site, Topology};

impl Loader<'_> {
    /// The flow's shape for the shared checks, with `joins` (target, sources) in place of the
    /// plain edges they replace.
    pub(super) fn topology(
        &mut self,
        nodes: &[LNode],
        edges: &[LEdge],
        joins: &[(usize, Vec<usize>)],
        schema: &Schema,
    ) -> Topology {
        let mut t = Topology::new().at(self.sites_root());
        for n in nodes {
            let site = self.site(format!("{}.id", node_path(n.at)), &n.id);
            let mut decl = topology::NodeDecl::new(n.id.clone(), site);
            if !n.imp.writes.is_empty() {
                let writes: Vec<(String, Site)> = n.imp.writes.iter().map(|w| (w.field.clone(), site)).collect();
                decl = decl.writes(writes);
            }
            t = t.node(decl);
        }
        for n in nodes {
            let site = self.site(format!("{}.type", node_path(n.at)), &n.id);
            match n.imp.role {
                Role::Start => {
                    t = t.edge(Ref::Start(site), Ref::node(n.id.clone(), site));
                }
                Role::End => {
                    t = t.edge(Ref::node(n.id.clone(), site), Ref::End(site));
                }
                _ => {}
            }
        }
        let joined: HashSet<(usize, usize)> = joins
            .iter()
            .flat_map(|(t, us)| us.iter().map(move |u| (*u, *t)))
            .collect();
        for (k, n) in nodes.iter().enumerate() {
            let out: Vec<&LEdge> = edges.iter().filter(|e| e.source == k).collect();
            if let Role::Branch(b) = &n.imp.role {
                if out.is_empty() {
                    continue;
                }
                let site = self.site(node_path(n.at), &n.id);
                let mut r = Route::new(Ref::node(n.id.clone(), site), site);
                for e in &out {
                    let s = self.site(format!("{}.target", edge_path(e.at)), &e.id);
                    r = r.target(
                        Ref::node(nodes[e.target].id.clone(), s),
                        e.handle.clone().unwrap_or_default(),
                    );
                }
                let per_handle = |h: &str| out.iter().filter(|e| e.handle.as_deref() == Some(h)).count();
                if b.handles
                    .iter()
                    .map(|(h, _)| h.as_str())
                    .chain(b.optional.as_deref())
                    .any(|h| per_handle(h) > 1)
                {
                    r = r.multi();
                }
                t = t.route(r);
            } else {
                for e in out {
                    if joined.contains(&(e.source, e.target)) {
                        continue;
                    }
                    let from = self.site(format!("{}.source", edge_path(e.at)), &e.id);
                    let to = self.site(format!("{}.target", edge_path(e.at)), &e.id);
                    t = t.edge(Ref::node(n.id.clone(), from), Ref::node(nodes[e.target].id.clone(), to));
                }
            }
        }
        for (target, sources) in joins {
            let site = self.site(format!("{}.id", node_path(nodes[*target].at)), &nodes[*target].id);
            let from = sources.iter().map(|u| Ref::node(nodes[*u].id.clone(), site));
            t = t.join(from, Ref::node(nodes[*target].id.clone(), site), site);
        }
        for f in &schema.fields {
            if f.reducer == Reduce::Last && !f.is_hidden() {
                t = t.single_write_field(f.name.clone());
            }
        }
        t
    }
}

/// For each multi-input node, whether it waits for all its upstreams on a lower level (a join)
/// or runs on any: an edge that re-enters a loop comes from a higher level and never makes it
/// wait, and neither do upstreams that exclude each other (they follow different branches of
/// one condition or output) or that choose a branch themselves.
pub(super) fn decide_joins(
    nodes: &[LNode],
    edges: &[LEdge],
    levels: &[(String, Option<usize>)],
) -> Vec<(usize, Vec<usize>)> {
    let level: HashMap<&str, Option<usize>> = levels.iter().map(|(n, l)| (n.as_str(), *l)).collect();
    let lv = |k: usize| level.get(nodes[k].id.as_str()).copied().flatten();
    // An edge is forward when it climbs a level; the others close a loop.
    let forward_edge = |e: &LEdge| matches!((lv(e.source), lv(e.target)), (Some(a), Some(b)) if a < b);
    // Forward predecessors of each node, with the handle of the edge.
    let mut preds: Vec<Vec<(usize, Option<&str>)>> = vec![Vec::new(); nodes.len()];
    for e in edges.iter().filter(|e| forward_edge(e)) {
        preds[e.target].push((e.source, e.handle.as_deref()));
    }
    let is_branch = |k: usize| matches!(nodes[k].imp.role, Role::Branch(_));
    // The branch a node lies on: walking up single-predecessor chains to a branching node.
    let tag = |mut v: usize| -> Option<(usize, String)> {
        for _ in 0..nodes.len() {
            let ps: BTreeMap<usize, Option<&str>> = preds[v].iter().map(|(p, h)| (*p, *h)).collect();
            if ps.len() != 1 {
                return None;
            }
            let (&p, &h) = ps.iter().next()?;
            if is_branch(p) {
                return Some((p, h.unwrap_or_default().to_owned()));
            }
            v = p;
        }
        None
    };
    let mut joins = Vec::new();
    for t in 0..nodes.len() {
        if lv(t).is_none() {
            continue;
        }
        let mut forward: Vec<usize> = Vec::new();
        for e in edges {
            if e.target == t && forward_edge(e) && !forward.contains(&e.source) {
                forward.push(e.source);
            }
        }
        if forward.len() < 2 || forward.iter().any(|&u| is_branch(u)) {
            continue;
        }
        let tags: Vec<Option<(usize, String)>> = forward.iter().map(|&u| tag(u)).collect();
        let exclusive = tags.iter().enumerate().any(|(i, a)| {
            tags[i + 1..].iter().any(|b| match (a, b) {
                (Some((p, h)), Some((q, g))) => p == q && h != g,
                _ => false,
            })
        });
        if !exclusive {
            joins.push((t, forward));
        }
    }
    joins
}
