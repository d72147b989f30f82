//! The checks of the whole flow: one start, an end, every branch with its edge, every write
//! fitting the state.

use super::loader::{node_path, LEdge, LNode, Loader};
use crate::error::ticks;
use crate::format::FieldType;
use crate::node::Role;
use crate::state::{fits, Reduce, Schema};
use weir_topology as topology;

impl Loader<'_> {
    /// One start node, at least one end node.
    pub(super) fn start_and_end(&mut self, nodes: &[LNode]) {
        let starts: Vec<&LNode> = nodes.iter().filter(|n| matches!(n.imp.role, Role::Start)).collect();
        let start_declared = self.file.nodes.iter().any(|n| n.kind == "start");
        if starts.is_empty() && !start_declared {
            self.error(
                "$.nodes",
                None,
                "the flow has no `start` node; add one where the run begins",
            );
        }
        for extra in starts.iter().skip(1) {
            self.error(
                format!("{}.type", node_path(extra.at)),
                Some(&extra.id),
                format!(
                    "node `{}` is a second `start` node (the first is `{}`); a flow has one",
                    extra.id, starts[0].id
                ),
            );
        }
        if !self.file.nodes.iter().any(|n| n.kind == "end") {
            self.error(
                "$.nodes",
                None,
                "the flow has no `end` node; add one where the run finishes",
            );
        }
    }

    /// Every branch of a condition and every choice of an output has an edge.
    pub(super) fn handles_have_edges(&mut self, nodes: &[LNode], edges: &[LEdge]) {
        for (k, n) in nodes.iter().enumerate() {
            let Role::Branch(b) = &n.imp.role else {
                continue;
            };
            for (h, path) in &b.handles {
                if !edges.iter().any(|e| e.source == k && e.handle.as_deref() == Some(h)) {
                    self.error(
                        format!("{}.data{path}", node_path(n.at)),
                        Some(&n.id),
                        format!(
                            "{} `{h}` of {} node `{}` has no edge; connect it or remove it",
                            b.noun, b.kind, n.id
                        ),
                    );
                }
            }
            // The fallback (`else`) too: a run that took it with nowhere to go would stop before
            // an end node and still look done.
            if let Some(h) = &b.optional {
                if !edges.iter().any(|e| e.source == k && e.handle.as_deref() == Some(h)) {
                    let declared = self.file.nodes[n.at].data.contains_key("else");
                    let path = format!("{}.data{}", node_path(n.at), if declared { ".else" } else { "" });
                    self.error(
                        path,
                        Some(&n.id),
                        format!(
                            "{} `{h}` of {} node `{}` has no edge; every {} needs one: connect `{h}` to the node that runs when no other {} is taken",
                            b.noun, b.kind, n.id, b.noun, b.noun
                        ),
                    );
                }
            }
        }
    }

    /// Fields written are declared, and literals have the declared type.
    pub(super) fn writes_fit(&mut self, nodes: &[LNode], schema: &Schema) {
        for n in nodes {
            for w in &n.imp.writes {
                let path = format!("{}.data{}", node_path(n.at), w.path);
                match schema.declared(&w.field) {
                    None => {
                        let names = schema.field_names();
                        let hint = match topology::suggest(&w.field, names.iter().copied()) {
                            Some(s) => format!("did you mean `{s}`?"),
                            None if names.is_empty() => "the state declares no fields".to_owned(),
                            None => format!("declared fields are {}", ticks(names)),
                        };
                        self.error(
                            path,
                            Some(&n.id),
                            format!(
                                "node `{}` writes `{}`, which the state does not declare; {hint}",
                                n.id, w.field
                            ),
                        );
                    }
                    Some(def) => {
                        if let Some(v) = &w.literal {
                            if !fits(def, v) {
                                self.error(
                                    path,
                                    Some(&n.id),
                                    format!(
                                        "node `{}` writes `{}` with a {}; `{}` is declared {}{}",
                                        n.id,
                                        w.field,
                                        FieldType::name_of(v),
                                        w.field,
                                        def.ty,
                                        reducer_note(def.reducer)
                                    ),
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

fn reducer_note(r: Reduce) -> &'static str {
    match r {
        Reduce::Add => " with reducer `add`, which takes numbers",
        Reduce::Merge => " with reducer `merge`, which takes objects",
        _ => "",
    }
}
