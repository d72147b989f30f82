//! From a [`GraphBuilder`] to the static tables the loop runs on: node indices, trigger lists,
//! the channel each edge writes. No name is looked up once this is done.

use super::policy::NodePolicy;
use super::{GraphBuilder, HandlerFn, NodeFn, NodeRef, PacketDecoder, RouterFn};
use crate::cache::{CachePolicy, NodeCache};
use crate::error::BuildError;
use crate::state::{FieldInfo, State, Update};
use std::collections::HashMap;
use std::sync::Arc;
use weir_topology::{NodeDecl, ProblemKind, Ref, Route, Topology};

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
    /// Declared writable fields, when declared.
    pub(crate) writes: Option<Vec<bool>>,
    pub(crate) policy: NodePolicy,
    pub(crate) cache: Option<CachePolicy<S>>,
    pub(crate) handler: Option<HandlerFn<S>>,
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
    pub(crate) cache: Option<Arc<dyn NodeCache>>,
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
        let allowed = self.nodes[n as usize].writes.as_ref()?;
        (0..self.n_fields()).find(|&f| !allowed[f] && update.is_written(f))
    }

    /// The channel id of internal channel `index`.
    pub(crate) fn control_id(&self, index: usize) -> u32 {
        (self.fields.len() + index) as u32
    }

    pub(crate) fn build(mut b: GraphBuilder<S>) -> Result<Self, BuildError> {
        let n_user = b.nodes.len();
        let prototype = b.prototype.take().unwrap_or_else(S::empty);
        let fields = prototype.0.fields().to_vec();
        let n_fields = fields.len();
        let with_start = b.mode == InputMode::Start;

        // The graph-shape rules shared with `graph!` and the JSON loader. A pregel graph has no
        // START: reachability does not apply to it.
        let topology = topology_of(&b, &fields);
        let mut problems: Vec<String> = weir_topology::check(&topology)
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
        let mermaid = weir_topology::mermaid(&topology);

        // Names checkpoints cannot tell apart from LangGraph's own channel names.
        let mut by_name: HashMap<&str, u32> = HashMap::new();
        for (i, n) in b.nodes.iter().enumerate() {
            if n.name.is_empty() || n.name.contains(['|', ':']) {
                problems.push(format!(
                    "node name `{}` is invalid: names may not be empty or contain `|` or `:`",
                    n.name
                ));
            }
            by_name.insert(&n.name, i as u32);
        }
        let resolve = |r: &NodeRef, problems: &mut Vec<String>| -> Option<Endpoint> {
            match r {
                NodeRef::Start => Some(Endpoint::Start),
                NodeRef::End => Some(Endpoint::End),
                NodeRef::Id(id) if id.index() < n_user => Some(Endpoint::Node(id.0)),
                NodeRef::Id(id) => {
                    problems.push(format!("node id {} does not belong to this graph", id.index()));
                    None
                }
                // Unknown names were reported by the shared rules.
                NodeRef::Name(n) => by_name.get(&**n).map(|i| Endpoint::Node(*i)),
            }
        };

        let start = with_start.then_some(n_user as u32);
        let n_nodes = n_user + usize::from(with_start);
        let mut nodes: Vec<CompiledNode<S>> = b
            .nodes
            .iter()
            .map(|n| CompiledNode {
                func: n.func.clone(),
                triggers: Vec::new(),
                edges: Vec::new(),
                joins: Vec::new(),
                routers: Vec::new(),
                writes: n.writes.as_ref().map(|w| {
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
                policy: NodePolicy {
                    retry: n.retry.clone().or_else(|| b.default_retry.clone()),
                    timeout: n.timeout,
                },
            })
            .collect();
        for n in &b.nodes {
            if n.timeout.is_some() && !n.is_async {
                problems.push(format!(
                    "node `{}` has a timeout but is a plain function, which cannot be stopped while it runs: make it async",
                    n.name
                ));
            }
            if let Some(f) = n.writes.iter().flatten().find(|f| **f >= n_fields) {
                problems.push(format!(
                    "node `{}` declares writes of field {f}, but the state has {n_fields} fields",
                    n.name
                ));
            }
        }
        if with_start {
            nodes.push(CompiledNode {
                func: None,
                triggers: Vec::new(),
                edges: Vec::new(),
                joins: Vec::new(),
                routers: Vec::new(),
                writes: None,
                policy: NodePolicy::default(),
                cache: None,
                handler: None,
            });
        }
        // One branch channel per node (for the start node: the input channel).
        let mut controls: Vec<ControlSpec> = (0..n_nodes)
            .map(|i| ControlSpec::Branch {
                deferred: i < n_user && b.nodes[i].defer,
            })
            .collect();

        // Edges out of END and into START were reported by the shared rules.
        let source_of = |e: Endpoint, what: &str, problems: &mut Vec<String>| -> Option<u32> {
            match e {
                Endpoint::Node(i) => Some(i),
                Endpoint::Start if with_start => Some(n_user as u32),
                Endpoint::Start => {
                    problems.push(format!(
                        "{what} from START in a pregel graph, which has no START: nodes subscribe to fields instead"
                    ));
                    None
                }
                Endpoint::End => None,
            }
        };
        let target_of = |e: Endpoint| -> Option<Option<u32>> {
            match e {
                Endpoint::Node(i) => Some(Some(i)),
                Endpoint::End => Some(None),
                Endpoint::Start => None,
            }
        };

        // Plain edges: the source writes the target's branch channel.
        for (from, to) in &b.edges {
            let (Some(f), Some(t)) = (resolve(from, &mut problems), resolve(to, &mut problems)) else {
                continue;
            };
            let (Some(f), Some(t)) = (source_of(f, "edge", &mut problems), target_of(t)) else {
                continue;
            };
            if let Some(t) = t {
                if b.nodes[t as usize].func.is_none() {
                    problems.push(format!(
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

        // Joins: each source writes its name to the barrier; the target is triggered by it.
        for (from, to) in &b.joins {
            let Some(t) = resolve(to, &mut problems) else {
                continue;
            };
            let Some(t) = target_of(t) else {
                continue;
            };
            let mut sources = Vec::new();
            for r in from {
                let Some(e) = resolve(r, &mut problems) else {
                    continue;
                };
                let Some(s) = source_of(e, "join", &mut problems) else {
                    continue;
                };
                // A source named twice was reported by the shared rules.
                if !sources.contains(&s) {
                    sources.push(s);
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
            nodes[t as usize].triggers.push((n_fields as u32) + index);
        }

        // Routers.
        for r in b.routers {
            let Some(e) = resolve(&r.source, &mut problems) else {
                continue;
            };
            let Some(s) = source_of(e, "router", &mut problems) else {
                continue;
            };
            let mut targets = Vec::new();
            for t in &r.targets {
                if let Some(t) = resolve(t, &mut problems).and_then(target_of) {
                    targets.push(t);
                }
            }
            nodes[s as usize].routers.push(CompiledRouter { func: r.func, targets });
        }

        // Triggers: the node's own branch channel, then subscribed fields.
        for (i, node) in nodes.iter_mut().enumerate() {
            node.triggers.insert(0, (n_fields + i) as u32);
            if i < n_user {
                for &f in &b.nodes[i].subscribes {
                    if f >= n_fields {
                        problems.push(format!(
                            "node `{}` subscribes to field {f}, but the state has {n_fields} fields",
                            b.nodes[i].name
                        ));
                        continue;
                    }
                    node.triggers.push(f as u32);
                }
            }
        }
        let interrupt = |refs: &[NodeRef], problems: &mut Vec<String>| {
            let mut mask = vec![false; n_nodes];
            for r in refs {
                match resolve(r, problems) {
                    Some(Endpoint::Node(i)) => mask[i as usize] = true,
                    Some(_) => problems.push("interrupts name nodes, not START or END".to_owned()),
                    None => {}
                }
            }
            mask
        };
        let interrupt_before = interrupt(&b.interrupt_before, &mut problems);
        let interrupt_after = interrupt(&b.interrupt_after, &mut problems);

        if !problems.is_empty() {
            return Err(BuildError::new(problems));
        }

        let mut all_names: Vec<Arc<str>> = b.nodes.iter().map(|n| Arc::from(n.name.as_str())).collect();
        if with_start {
            all_names.push(Arc::from(START_NAME));
        }
        let mut order: Vec<u32> = (0..n_nodes as u32).collect();
        order.sort_by(|a, b| all_names[*a as usize].as_bytes().cmp(all_names[*b as usize].as_bytes()));
        let mut rank = vec![0u32; n_nodes];
        for (pos, id) in order.iter().enumerate() {
            rank[*id as usize] = pos as u32;
        }
        let mut trigger_to_nodes = vec![Vec::new(); n_fields + controls.len()];
        for (i, node) in nodes.iter().enumerate() {
            for &t in &node.triggers {
                trigger_to_nodes[t as usize].push(i as u32);
            }
        }
        let mut channel_names: Vec<String> = fields.iter().map(|f| f.name().to_owned()).collect();
        for c in &controls {
            channel_names.push(match c {
                ControlSpec::Branch { .. } if channel_names.len() - n_fields == n_user => START_NAME.to_owned(),
                ControlSpec::Branch { .. } => format!("branch:to:{}", all_names[channel_names.len() - n_fields]),
                ControlSpec::Join { sources, .. } => String::new() + &sources.len().to_string(),
            });
        }
        // Joins are named after their sources and target: fill those names in now.
        let mut join_targets = vec![None; controls.len()];
        for (i, node) in nodes.iter().enumerate() {
            for &t in &node.triggers {
                let c = t as usize;
                if c >= n_fields && matches!(controls[c - n_fields], ControlSpec::Join { .. }) {
                    join_targets[c - n_fields] = Some(i);
                }
            }
        }
        for (c, spec) in controls.iter().enumerate() {
            if let (ControlSpec::Join { sources, .. }, Some(t)) = (spec, join_targets[c]) {
                let from: Vec<&str> = sources.iter().map(|s| &*all_names[*s as usize]).collect();
                channel_names[n_fields + c] = format!("join:{}:{}", from.join("+"), all_names[t]);
            }
        }
        let channel_ids = channel_names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.to_string(), i as u32))
            .collect();
        let channel_names = channel_names.into_iter().map(Arc::from).collect();
        let node_ids = all_names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.to_string(), i as u32))
            .collect();
        let mut decoders: Vec<Option<PacketDecoder<S>>> = b.nodes.iter().map(|n| n.decode.clone()).collect();
        decoders.resize(n_nodes, None);
        Ok(Self {
            channel_names,
            quoted: std::sync::OnceLock::new(),
            channel_ids,
            node_ids,
            decoders,
            cache: b.cache.clone(),
            mermaid,
            mode: b.mode,
            prototype,
            fields,
            interrupt_before,
            interrupt_after,
            lone_writers: all_names.iter().map(|n| Arc::from([n.clone()])).collect(),
            names: all_names,
            n_user,
            start,
            rank,
            nodes,
            controls,
            trigger_to_nodes,
        })
    }
}

#[derive(Debug, Clone, Copy)]
enum Endpoint {
    Start,
    End,
    Node(u32),
}

/// The builder's graph as the shared rules see it. Sites are indices into nothing: the rules'
/// messages name the nodes themselves.
fn topology_of<S: State>(b: &GraphBuilder<S>, fields: &[FieldInfo]) -> Topology {
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
        if let Some(w) = &n.writes {
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
