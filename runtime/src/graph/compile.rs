//! From a [`GraphBuilder`] to the static tables the loop runs on: node indices, trigger lists,
//! the channel each edge writes. No name is looked up once this is done.

use super::policy::NodePolicy;
use super::wiring::{channel_names, names_and_rank, topology_of, Wiring};
use super::{FreshFn, GraphBuilder, HandlerFn, NodeFn, PacketDecoder, RouterFn};
use crate::cache::{CachePolicy, NodeCache};
use crate::error::BuildError;
use crate::state::{FieldInfo, State, Update};
use std::collections::HashMap;
use std::sync::Arc;
use weir_topology::ProblemKind;

/// How a run's input enters the graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InputMode {
    /// Through the hidden `__start__` node (a state graph).
    Start,
    /// Straight into the fields (a low-level Pregel graph).
    Fields,
}

/// The name LangGraph gives the hidden entry node.
pub(crate) const START_NAME: &str = "__start__";

/// An internal channel: what triggers nodes besides the state's own fields.
#[derive(Debug, Clone)]
pub(crate) enum ControlSpec {
    /// `branch:to:<node>`: an unguarded ephemeral value (or, for a deferred node, a last value
    /// after finish). For the hidden start node, the `__start__` input channel.
    Branch { deferred: bool },
    /// `join:<a>+<b>:<node>`: a barrier waiting for the named source nodes.
    Join { sources: Vec<u32>, deferred: bool },
}

/// A router after a node, with the destinations it declared (`None` is END).
#[derive(Clone)]
pub(crate) struct CompiledRouter<S: State> {
    pub(crate) func: RouterFn<S>,
    pub(crate) targets: Vec<Option<u32>>,
}

#[derive(Clone)]
pub(crate) struct CompiledNode<S: State> {
    /// `None` for the hidden start node and for nodes that only run from `Send`s.
    pub(crate) func: Option<NodeFn<S, S>>,
    /// Channel ids (fields first, then internal channels).
    pub(crate) triggers: Vec<u32>,
    /// Nodes this one's plain edges trigger.
    pub(crate) edges: Vec<u32>,
    /// Barriers this node writes its own name to: (internal channel index, name).
    pub(crate) joins: Vec<u32>,
    pub(crate) routers: Vec<CompiledRouter<S>>,
    /// The fields the node declared it may write (a mask), when it declared them.
    pub(crate) may_write: Option<Vec<bool>>,
    pub(crate) policy: NodePolicy,
    pub(crate) cache: Option<CachePolicy<S>>,
    pub(crate) handler: Option<HandlerFn<S>>,
    /// What runs after the node on its fresh state ([`GraphBuilder::then_fresh`]).
    pub(crate) fresh: Option<FreshFn<S>>,
}

#[derive(Clone)]
pub(crate) struct GraphInner<S: State> {
    pub(crate) mode: InputMode,
    /// The empty state and channels every run starts from.
    pub(crate) prototype: (S, S::Channels),
    pub(crate) fields: Vec<FieldInfo>,
    pub(crate) names: Vec<Arc<str>>,
    /// Per node, the list of one name a checkpoint of a step only that node wrote carries:
    /// shared by those checkpoints rather than made for each.
    pub(crate) lone_writers: Vec<Arc<[Arc<str>]>>,
    pub(crate) n_user: usize,
    pub(crate) start: Option<u32>,
    /// Each node's position in name order: LangGraph applies pull tasks' writes in that order.
    pub(crate) rank: Vec<u32>,
    pub(crate) nodes: Vec<CompiledNode<S>>,
    pub(crate) controls: Vec<ControlSpec>,
    /// For every channel id, the nodes it triggers.
    pub(crate) trigger_to_nodes: Vec<Vec<u32>>,
    pub(crate) interrupt_before: Vec<bool>,
    pub(crate) interrupt_after: Vec<bool>,
    /// Every channel's name, by channel id: the field names, then `branch:to:<node>` (for the
    /// start node, `__start__`) and `join:<a>+<b>:<node>`, as LangGraph names them.
    pub(crate) channel_names: Vec<Arc<str>>,
    /// Node names as JSON strings (quoted and escaped), then channel names as JSON object keys
    /// (the same, then `:`): made on the first checkpoint, whose body names them.
    pub(crate) quoted: std::sync::OnceLock<Vec<Box<str>>>,
    /// Channel ids by name and node ids by name: for reading checkpoints, never while running.
    pub(crate) channel_ids: HashMap<String, u32>,
    pub(crate) node_ids: HashMap<String, u32>,
    /// Per node: rebuilds a saved `Send` to it.
    pub(crate) decoders: Vec<Option<PacketDecoder<S>>>,
    /// The graph as a Mermaid flowchart.
    pub(crate) mermaid: String,
    /// The nodes added as subgraphs, with their Mermaid charts and their states' fields.
    pub(crate) subgraphs: Vec<(String, String, &'static [FieldInfo])>,
    pub(crate) cache: Option<Arc<dyn NodeCache>>,
    /// The values a run last read back from a thread's checkpoint, with the blobs their chains
    /// ended at: the next run on the thread reads and decodes only what its checkpoint added
    /// ([`Warm`](crate::state::Warm)).
    pub(crate) warm: Arc<std::sync::Mutex<Option<crate::state::Warm<S>>>>,
}

impl<S: State> GraphInner<S> {
    pub(crate) fn user_node_names(&self) -> Vec<&str> {
        self.names[..self.n_user].iter().map(|n| &**n).collect()
    }

    /// Node `n`'s name, owned: copied as bytes (`to_string` on an `Arc<str>` goes through the
    /// formatter, several times the cost, and names are copied on every checkpointed step).
    pub(crate) fn node_name(&self, n: u32) -> String {
        String::from(&*self.names[n as usize])
    }

    /// Node `n`'s name as a JSON string.
    pub(crate) fn quoted_node(&self, n: usize) -> &str {
        &self.quoted()[n]
    }

    /// Channel `c`'s name as the key of a JSON object: a JSON string, then `:`.
    pub(crate) fn channel_key(&self, c: usize) -> &str {
        &self.quoted()[self.names.len() + c]
    }

    fn quoted(&self) -> &[Box<str>] {
        self.quoted.get_or_init(|| {
            let quote = |n: &str| serde_json::to_string(n).expect("a string serializes");
            let nodes = self.names.iter().map(|n| quote(n));
            let keys = self.channel_names.iter().map(|n| quote(n) + ":");
            nodes.chain(keys).map(String::into_boxed_str).collect()
        })
    }

    pub(crate) fn n_fields(&self) -> usize {
        self.fields.len()
    }

    /// The first field `update` writes that node `n` did not declare, when it declares its fields.
    pub(crate) fn undeclared_write(&self, n: u32, update: &S::Update) -> Option<usize> {
        let allowed = self.nodes[n as usize].may_write.as_ref()?;
        (0..self.n_fields()).find(|&f| !allowed[f] && update.is_written(f))
    }

    /// The channel id of internal channel `index`.
    pub(crate) fn control_id(&self, index: usize) -> u32 {
        (self.fields.len() + index) as u32
    }

    /// Compiles `b`: the shared graph-shape rules, then the wiring of every node's channels,
    /// then the tables the loop reads. Every problem found is reported at once.
    pub(crate) fn build(mut b: GraphBuilder<S>) -> Result<Self, BuildError> {
        let n_user = b.nodes.len();
        let prototype = b.prototype.take().unwrap_or_else(S::empty);
        let fields = prototype.0.fields().to_vec();
        let n_fields = fields.len();
        let with_start = b.mode == InputMode::Start;
        let mermaid = check_shape(&b, &fields, with_start)?;

        let mut w = Wiring::new(&b, n_fields, with_start);
        let mut nodes = w.nodes();
        let n_nodes = nodes.len();
        let mut controls = w.branches(n_nodes);
        w.edges(&mut nodes);
        w.joins(&mut nodes, &mut controls);
        w.routers(&mut nodes);
        w.triggers(&mut nodes);
        let interrupt_before = w.interrupts(&b.interrupt_before, n_nodes);
        let interrupt_after = w.interrupts(&b.interrupt_after, n_nodes);
        if !w.problems.is_empty() {
            return Err(BuildError::new(w.problems));
        }

        let (names, rank) = names_and_rank(&b, with_start);
        let mut trigger_to_nodes = vec![Vec::new(); n_fields + controls.len()];
        for (i, node) in nodes.iter().enumerate() {
            for &t in &node.triggers {
                trigger_to_nodes[t as usize].push(i as u32);
            }
        }
        let channel_names = channel_names(&fields, &controls, &nodes, &names, n_user);
        let ids = |names: &[String]| names.iter().enumerate().map(|(i, n)| (n.clone(), i as u32)).collect();
        let channel_ids = ids(&channel_names);
        let node_ids = ids(&names.iter().map(|n| n.to_string()).collect::<Vec<_>>());
        let mut decoders: Vec<Option<PacketDecoder<S>>> = b.nodes.iter().map(|n| n.decode.clone()).collect();
        decoders.resize(n_nodes, None);
        Ok(Self {
            channel_names: channel_names.into_iter().map(Arc::from).collect(),
            quoted: std::sync::OnceLock::new(),
            channel_ids,
            node_ids,
            decoders,
            cache: b.cache.clone(),
            warm: Arc::default(),
            mermaid,
            subgraphs: b.subgraphs.clone(),
            mode: b.mode,
            prototype,
            fields,
            interrupt_before,
            interrupt_after,
            lone_writers: names.iter().map(|n| Arc::from([n.clone()])).collect(),
            names,
            n_user,
            start: with_start.then_some(n_user as u32),
            rank,
            nodes,
            controls,
            trigger_to_nodes,
        })
    }
}

/// The graph-shape rules shared with `graph!` and the JSON loader; the graph's Mermaid drawing
/// when they pass. A pregel graph has no START: reachability does not apply to it.
fn check_shape<S: State>(b: &GraphBuilder<S>, fields: &[FieldInfo], with_start: bool) -> Result<String, BuildError> {
    let topology = topology_of(b, fields);
    let problems: Vec<String> = weir_topology::check(&topology)
        .into_iter()
        .filter(|p| {
            with_start
                || !matches!(
                    p.kind,
                    ProblemKind::NoEntry | ProblemKind::Unreachable { .. } | ProblemKind::NoPathToEnd { .. }
                )
        })
        .map(|p| p.to_string())
        .collect();
    if !problems.is_empty() {
        return Err(BuildError::new(problems));
    }
    Ok(weir_topology::mermaid(&topology))
}
