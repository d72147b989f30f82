//! The edges between known nodes, and the handles they leave from.

use super::loader::{edge_path, LEdge, LNode, Loader};
use crate::error::ticks;
use crate::node::{Brancher, Role};
use std::collections::{HashMap, HashSet};
use weir_topology as topology;

impl Loader<'_> {
    /// Edges between known nodes; dangling ones reported; handles checked against branches.
    pub(super) fn edges(&mut self, nodes: &[LNode]) -> Vec<LEdge> {
        let file = self.file;
        let notes: HashSet<&str> = file
            .nodes
            .iter()
            .filter(|n| n.kind == "note")
            .map(|n| n.id.as_str())
            .collect();
        let declared: HashSet<&str> = file.nodes.iter().map(|n| n.id.as_str()).collect();
        let by_id: HashMap<&str, usize> = nodes
            .iter()
            .enumerate()
            .rev()
            .map(|(k, n)| (n.id.as_str(), k))
            .collect();
        let mut out = Vec::new();
        for (j, e) in file.edges.iter().enumerate() {
            let path = edge_path(j);
            if notes.contains(e.source.as_str()) || notes.contains(e.target.as_str()) {
                continue; // a note's edges are annotations too
            }
            let mut ends = [None, None];
            for (k, (end, word)) in [(&e.source, "source"), (&e.target, "target")].into_iter().enumerate() {
                if let Some(&n) = by_id.get(end.as_str()) {
                    ends[k] = Some(n);
                } else if !declared.contains(end.as_str()) {
                    let names = file.nodes.iter().map(|n| n.id.as_str()).filter(|n| !notes.contains(n));
                    let hint = match topology::suggest(end, names.clone()) {
                        Some(s) => format!("did you mean `{s}`?"),
                        None => format!("node ids are {}", ticks(names)),
                    };
                    let dir = if k == 0 { "from" } else { "to" };
                    self.error(
                        format!("{path}.{word}"),
                        Some(&e.id),
                        format!("edge `{}` leads {dir} unknown node `{end}`; {hint}", e.id),
                    );
                }
                // A node that failed to load is reported already.
            }
            let [Some(s), Some(t)] = ends else { continue };
            let (source, target) = (&nodes[s], &nodes[t]);
            match &source.imp.role {
                Role::End => {
                    self.error(
                        &path,
                        Some(&e.id),
                        format!(
                            "edge `{}` leaves end node `{}`; nothing runs after an end node",
                            e.id, source.id
                        ),
                    );
                    continue;
                }
                Role::Branch(b) if !self.handle_ok(b, &e.id, &source.id, e.source_handle.as_deref(), &path) => {
                    continue;
                }
                _ => {}
            }
            if matches!(target.imp.role, Role::Start) {
                self.error(
                    &path,
                    Some(&e.id),
                    format!(
                        "edge `{}` enters start node `{}`; the start node only begins the run",
                        e.id, target.id
                    ),
                );
                continue;
            }
            out.push(LEdge {
                at: j,
                id: e.id.clone(),
                source: s,
                target: t,
                handle: e.source_handle.clone(),
            });
        }
        out
    }

    pub(super) fn handle_ok(&mut self, b: &Brancher, edge: &str, node: &str, handle: Option<&str>, path: &str) -> bool {
        let names = b.handles.iter().map(|(h, _)| h.as_str()).chain(b.optional.as_deref());
        let list = ticks(names.clone());
        match handle {
            None => {
                self.error(
                    path,
                    Some(edge),
                    format!(
                        "edge `{edge}` leaves {} node `{node}` without a `sourceHandle`; name one of its {}es: {list}",
                        b.kind, b.noun
                    ),
                );
                false
            }
            Some(h) if !names.clone().any(|n| n == h) => {
                self.error(
                    format!("{path}.sourceHandle"),
                    Some(edge),
                    format!(
                        "edge `{edge}` leaves {} node `{node}` by unknown {} `{h}`; its {}es are {list}",
                        b.kind, b.noun, b.noun
                    ),
                );
                false
            }
            Some(_) => true,
        }
    }
}
