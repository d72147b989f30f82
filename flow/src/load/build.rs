//! The last phase: the runtime graph built from what was loaded, and compiled.

use super::loader::{LEdge, LNode};
use crate::node::Role;
use crate::runner::{AskRuntime, NodeRuntime};
use crate::state::{FlowState, Schema};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use weir_runtime::checkpoint::Checkpointer;
use weir_runtime::{CompiledGraph, GraphBuilder, NodeId, END, START};

/// The graph the loop runs: one runtime node per flow node, in file order, then the asking
/// node of each pausing `output` (`<id>:ask`), which takes over the output's out-edges.
pub(super) fn build(
    nodes: &[LNode],
    edges: &[LEdge],
    joins: &[(usize, Vec<usize>)],
    schema: &Arc<Schema>,
    saver: Option<Arc<dyn Checkpointer>>,
) -> Result<CompiledGraph<FlowState>, weir_runtime::BuildError> {
    let (state, channels) = FlowState::prototype(schema);
    let mut g = GraphBuilder::<FlowState>::with_prototype(state, channels);
    let checkpointed = saver.is_some();
    if let Some(saver) = saver {
        g.set_checkpointer(saver);
    }
    let joined: HashSet<(usize, usize)> = joins
        .iter()
        .flat_map(|(t, us)| us.iter().map(move |u| (*u, *t)))
        .collect();
    let (from, asking) = asking_nodes(nodes);
    let mut routers = Vec::new();
    for (k, n) in nodes.iter().enumerate() {
        let mut gotos: HashMap<String, Vec<NodeId>> = HashMap::new();
        for e in edges.iter().filter(|e| e.source == k) {
            gotos
                .entry(e.handle.clone().unwrap_or_default())
                .or_default()
                .push(NodeId::from_index(e.target));
        }
        let rt = Arc::new(NodeRuntime::new(
            n.id.clone(),
            &n.imp,
            n.max_steps,
            schema.clone(),
            gotos,
            checkpointed,
        ));
        g.add_node(n.id.clone(), rt.clone().node_fn());
        if matches!(n.imp.role, Role::Branch(_)) {
            routers.push((k, rt));
        }
    }
    for &k in &asking {
        let ask = Arc::new(AskRuntime::new(nodes[k].id.clone(), &nodes[k].imp, schema.clone()));
        g.add_node(ask.name(), ask.node_fn());
        g.add_edge(NodeId::from_index(k), from[k]);
    }
    for (k, rt) in routers {
        let mut targets: Vec<NodeId> = Vec::new();
        for e in edges.iter().filter(|e| e.source == k) {
            if !targets.contains(&NodeId::from_index(e.target)) {
                targets.push(NodeId::from_index(e.target));
            }
        }
        g.add_router(from[k], rt.router(), targets);
    }
    let mut added: HashSet<(usize, usize)> = HashSet::new();
    for (k, n) in nodes.iter().enumerate() {
        match n.imp.role {
            Role::Start => {
                g.add_edge(START, NodeId::from_index(k));
            }
            Role::End => {
                g.add_edge(NodeId::from_index(k), END);
            }
            Role::Branch(_) => continue, // routed by its router
            Role::Plain => {}
        }
        for e in edges.iter().filter(|e| e.source == k) {
            if !joined.contains(&(k, e.target)) && added.insert((k, e.target)) {
                g.add_edge(from[k], NodeId::from_index(e.target));
            }
        }
    }
    for (t, us) in joins {
        g.add_join(us.iter().map(|u| from[*u]), NodeId::from_index(*t));
    }
    g.compile()
}

/// The runtime node each flow node's out-edges leave from (its own, or its asking node's), and
/// the flow nodes that ask, in file order: their asking nodes come after the flow's nodes.
pub(super) fn asking_nodes(nodes: &[LNode]) -> (Vec<NodeId>, Vec<usize>) {
    let mut from: Vec<NodeId> = (0..nodes.len()).map(NodeId::from_index).collect();
    let mut asking = Vec::new();
    for (k, n) in nodes.iter().enumerate() {
        if n.imp.message.as_ref().is_some_and(|m| m.asks) {
            from[k] = NodeId::from_index(nodes.len() + asking.len());
            asking.push(k);
        }
    }
    (from, asking)
}
