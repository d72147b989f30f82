//! Loading a flow file onto the runtime, as the seed's engine does: validate, instantiate the
//! nodes through the registry, connect START and END, compute each node's level, translate the
//! plain, condition and output edges, decide what each multi-input node waits for, compile.
//!
//! Where weir is stricter than the seed:
//! - an edge out of an `end` node is a load error (the seed ignores it): nothing runs after an
//!   end node, so the edge can only be a mistake;
//! - every branch of a `condition` needs an edge, `else` included (the seed lets a branch
//!   without one end the run quietly, before any end node);
//! - a run that stops before any end node while a join still waits fails, naming the join and
//!   what it waited for, instead of ending as done.
//!
//! Levels are the seed's (the longest simple path from the start, see [`topology::levels`]),
//! so they, and the joins decided from them, do not depend on the order of the file's edges.

use crate::error::{ticks, Diagnostic, LoadError};
use crate::format::{FieldType, FlowFile};
use crate::node::{Brancher, NodeImpl, Role};
use crate::registry::Registry;
use crate::runner::{AskRuntime, NodeRuntime};
use crate::state::{fits, FlowState, Reduce, Schema};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use weir_runtime::checkpoint::Checkpointer;
use weir_runtime::{CompiledGraph, GraphBuilder, NodeId, END, START};
use weir_topology::{self as topology, Ref, Route, Site, Topology};

/// Loader settings.
#[derive(Clone)]
pub struct LoadOptions {
    /// How many times a node may run in one run, for nodes (and flows) that do not say.
    pub max_steps: u32,
    /// Where runs keep their checkpoints, by thread. Without one, a flow runs to the end in one
    /// go and an `output` node that asks for a choice or an acknowledgement fails the run,
    /// before its message is sent.
    pub checkpointer: Option<Arc<dyn Checkpointer>>,
    /// The most steps a run may take, instead of the seed's formula (see
    /// [`Flow::recursion_limit`]). `weir run --recursion-limit` sets it.
    pub recursion_limit: Option<usize>,
}

impl std::fmt::Debug for LoadOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadOptions")
            .field("max_steps", &self.max_steps)
            .field("checkpointer", &self.checkpointer.is_some())
            .field("recursion_limit", &self.recursion_limit)
            .finish()
    }
}

impl Default for LoadOptions {
    fn default() -> Self {
        Self {
            max_steps: 10,
            checkpointer: None,
            recursion_limit: None,
        }
    }
}

impl LoadOptions {
    /// Keeps the runs' checkpoints with `saver`.
    pub fn checkpointer(mut self, saver: impl Checkpointer) -> Self {
        self.checkpointer = Some(Arc::new(saver));
        self
    }

    /// Lets a run take at most `steps` steps, instead of the seed's formula.
    pub fn recursion_limit(mut self, steps: usize) -> Self {
        self.recursion_limit = Some(steps);
        self
    }
}

/// A loaded flow, ready to run: a compiled graph over [`FlowState`].
pub struct Flow {
    pub(crate) graph: CompiledGraph<FlowState>,
    pub(crate) schema: Arc<Schema>,
    topology: Topology,
    recursion_limit: usize,
    joins: Vec<(String, Vec<String>)>,
    levels: Vec<(String, Option<usize>)>,
    /// The ids of the end nodes.
    pub(crate) ends: Vec<String>,
}

impl std::fmt::Debug for Flow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Flow")
            .field("nodes", &self.graph.node_names())
            .field("joins", &self.joins)
            .field("recursion_limit", &self.recursion_limit)
            .finish_non_exhaustive()
    }
}

impl Flow {
    /// Loads a flow from its JSON text with the default [`LoadOptions`].
    ///
    /// # Errors
    /// Every problem found in the file, each naming the node or edge and the JSON path.
    pub fn from_json(text: &str, registry: &Registry) -> Result<Self, LoadError> {
        Self::load(text, registry, LoadOptions::default())
    }

    /// Loads a flow from its JSON text.
    ///
    /// # Errors
    /// Every problem found in the file, each naming the node or edge and the JSON path.
    pub fn load(text: &str, registry: &Registry, options: LoadOptions) -> Result<Self, LoadError> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            LoadError::new(vec![Diagnostic::new(
                "$",
                None,
                format!("the file is not valid JSON: {e}"),
            )])
        })?;
        Self::from_value(&value, registry, options)
    }

    /// Loads a flow from a parsed JSON value.
    ///
    /// # Errors
    /// Every problem found, each naming the node or edge and the JSON path.
    pub fn from_value(value: &serde_json::Value, registry: &Registry, options: LoadOptions) -> Result<Self, LoadError> {
        let problems = crate::schema::validate(value);
        if !problems.is_empty() {
            return Err(LoadError::new(problems));
        }
        let file: FlowFile = serde_json::from_value(value.clone()).map_err(|e| {
            LoadError::new(vec![Diagnostic::new(
                "$",
                None,
                format!("the file does not fit the flow format: {e}"),
            )])
        })?;
        Loader::new(&file, registry, options).load()
    }

    /// The flow drawn as a Mermaid `graph TD`.
    pub fn mermaid(&self) -> String {
        topology::mermaid(&self.topology)
    }

    /// The recursion limit of a run: the most steps it may take. Unless
    /// [`LoadOptions::recursion_limit`] sets it, the seed's
    /// max((nodes − ends − 1) × max_steps, 1) + ends + 1, where nodes counts the hidden node
    /// asking each pausing `output`'s question (seed 003's fake output node). A run that
    /// reaches it fails with [`RunError::is_recursion_limit`].
    ///
    /// [`RunError::is_recursion_limit`]: crate::RunError::is_recursion_limit
    pub fn recursion_limit(&self) -> usize {
        self.recursion_limit
    }

    /// The multi-input nodes that wait for several upstreams, with those upstreams.
    pub fn joins(&self) -> &[(String, Vec<String>)] {
        &self.joins
    }

    /// Each node's level: the longest path from START to it, back edges cut.
    pub fn levels(&self) -> &[(String, Option<usize>)] {
        &self.levels
    }

    /// The names of the state's declared fields, in slot order.
    pub fn field_names(&self) -> Vec<&str> {
        self.schema.field_names()
    }
}

/// A node of the file that is not a note.
struct LNode {
    /// Index in `file.nodes`.
    at: usize,
    id: String,
    imp: NodeImpl,
    max_steps: u32,
}

/// An edge whose ends are known nodes (notes excluded).
#[derive(Debug, Clone)]
struct LEdge {
    at: usize,
    id: String,
    /// Indices into `Loader::nodes`.
    source: usize,
    target: usize,
    handle: Option<String>,
}

struct Loader<'a> {
    file: &'a FlowFile,
    registry: &'a Registry,
    options: LoadOptions,
    diags: Vec<Diagnostic>,
    /// Topology sites: JSON path and the id at fault.
    sites: Vec<(String, Option<String>)>,
}

fn node_path(i: usize) -> String {
    format!("$.nodes[{i}]")
}

fn edge_path(j: usize) -> String {
    format!("$.edges[{j}]")
}

impl<'a> Loader<'a> {
    fn new(file: &'a FlowFile, registry: &'a Registry, options: LoadOptions) -> Self {
        Self {
            file,
            registry,
            options,
            diags: Vec::new(),
            sites: Vec::new(),
        }
    }

    fn error(&mut self, path: impl Into<String>, id: Option<&str>, message: impl Into<String>) {
        self.diags.push(Diagnostic::new(path, id, message));
    }

    fn site(&mut self, path: String, id: &str) -> Site {
        self.sites.push((path, Some(id.to_owned())));
        self.sites.len() - 1
    }

    fn load(mut self) -> Result<Flow, LoadError> {
        let schema = self.state_schema();
        self.ids();
        let nodes = self.instantiate(&schema);
        let edges = self.edges(&nodes);
        self.start_and_end(&nodes);
        self.handles_have_edges(&nodes, &edges);
        self.writes_fit(&nodes, &schema);

        // Levels, on the graph without joins: the longest simple path from START, as the seed.
        let pre = self.topology(&nodes, &edges, &[], &schema);
        let levels = topology::levels(&pre);
        let joins = decide_joins(&nodes, &edges, &levels);

        // The checks, on the graph as it will run.
        let topo = self.topology(&nodes, &edges, &joins, &schema);
        let no_start = !nodes.iter().any(|n| matches!(n.imp.role, Role::Start));
        // The shared rules, and the joins a loop can starve (the levels should leave none).
        for p in topology::check(&topo)
            .into_iter()
            .chain(topology::starving_joins(&topo))
        {
            if no_start && matches!(p.kind, topology::ProblemKind::NoEntry) {
                continue;
            }
            let (path, id) = self.sites.get(p.site).cloned().unwrap_or(("$".to_owned(), None));
            self.diags.push(Diagnostic::new(path, id.as_deref(), p.to_string()));
        }
        if !self.diags.is_empty() {
            return Err(LoadError::new(self.diags));
        }

        let schema = Arc::new(schema);
        let graph = build(&nodes, &edges, &joins, &schema, self.options.checkpointer.clone()).map_err(|e| {
            LoadError::new(
                e.problems()
                    .iter()
                    .map(|p| Diagnostic::new("$", None, p.clone()))
                    .collect(),
            )
        })?;
        // The hidden node asking each pausing output's question is a node of the graph, as the
        // seed's fake output nodes are: it runs once each time its output does.
        let n = nodes.len() + asking_nodes(&nodes).1.len();
        let ends = nodes.iter().filter(|n| matches!(n.imp.role, Role::End)).count();
        let max_steps = nodes.iter().map(|n| n.max_steps as usize).max().unwrap_or(1);
        let recursion_limit = self
            .options
            .recursion_limit
            .unwrap_or_else(|| (n.saturating_sub(ends + 1) * max_steps).max(1) + ends + 1);
        let joins = joins
            .iter()
            .map(|(t, us)| (nodes[*t].id.clone(), us.iter().map(|u| nodes[*u].id.clone()).collect()))
            .collect();
        Ok(Flow {
            graph,
            schema,
            topology: topo,
            recursion_limit,
            joins,
            levels,
            ends: nodes
                .iter()
                .filter(|n| matches!(n.imp.role, Role::End))
                .map(|n| n.id.clone())
                .collect(),
        })
    }

    /// The state section: reserved names, reducers that fit their type, defaults of the type.
    fn state_schema(&mut self) -> Schema {
        for (name, f) in &self.file.state.fields {
            let path = format!("$.state.{name}");
            if name.starts_with("__") {
                self.error(
                    &path,
                    None,
                    format!("field name `{name}` is reserved: names starting with `__` are weir's"),
                );
            }
            let fits = matches!(
                (f.reducer, f.ty),
                (crate::format::ReducerKind::Last, _)
                    | (crate::format::ReducerKind::Append, FieldType::List)
                    | (crate::format::ReducerKind::Add, FieldType::Number)
                    | (crate::format::ReducerKind::Merge, FieldType::Object)
            );
            if !fits {
                let wants = match f.reducer {
                    crate::format::ReducerKind::Append => "list",
                    crate::format::ReducerKind::Add => "number",
                    _ => "object",
                };
                self.error(
                    format!("{path}.reducer"),
                    None,
                    format!(
                        "field `{name}` is a {}, but reducer `{}` takes a {wants} field",
                        f.ty,
                        f.reducer.as_str()
                    ),
                );
            }
            if let Some(d) = &f.default {
                if !f.ty.admits(d) {
                    self.error(
                        format!("{path}.default"),
                        None,
                        format!(
                            "field `{name}` has a default of type {}; it is declared {}",
                            FieldType::name_of(d),
                            f.ty
                        ),
                    );
                }
            }
        }
        Schema::new(&self.file.state)
    }

    /// Ids are unique across nodes and edges, and usable as node names.
    fn ids(&mut self) {
        let mut seen: HashMap<&str, String> = HashMap::new();
        let file = self.file;
        let all = file
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id.as_str(), format!("{}.id", node_path(i)), "node"))
            .chain(
                file.edges
                    .iter()
                    .enumerate()
                    .map(|(j, e)| (e.id.as_str(), format!("{}.id", edge_path(j)), "edge")),
            );
        for (id, path, what) in all {
            if let Some(first) = seen.get(id) {
                self.error(
                    &path,
                    Some(id),
                    format!("{what} id `{id}` is already used at `{first}`; ids must be unique"),
                );
            } else {
                seen.insert(id, path.trim_end_matches(".id").to_owned());
            }
            if what == "node" && id.contains(['|', ':']) {
                self.error(&path, Some(id), format!("node id `{id}` may not contain `|` or `:`"));
            }
            if what == "node" && id.ends_with(crate::node::ASK_SUFFIX) {
                self.error(
                    &path,
                    Some(id),
                    format!(
                        "node id `{id}` may not end with `{}`: weir names the question of an `output` node so",
                        crate::node::ASK_SUFFIX
                    ),
                );
            }
        }
    }

    /// Each node through the registry; notes are skipped.
    fn instantiate(&mut self, schema: &Schema) -> Vec<LNode> {
        let mut out = Vec::new();
        let types = self.registry.types();
        for (i, n) in self.file.nodes.iter().enumerate() {
            if n.kind == "note" {
                continue;
            }
            let path = node_path(i);
            let mut data = n.data.clone();
            let max_steps = match data.remove("max_steps") {
                None => self.file.max_steps.unwrap_or(self.options.max_steps),
                Some(v) => match v.as_u64().filter(|m| (1..=u64::from(u32::MAX)).contains(m)) {
                    Some(m) => m as u32,
                    None => {
                        self.error(
                            format!("{path}.data.max_steps"),
                            Some(&n.id),
                            format!("node `{}` has `max_steps` {v}; it must be a positive integer", n.id),
                        );
                        1
                    }
                },
            };
            match self.registry.build(&n.kind, &data, schema) {
                None => {
                    let hint = match topology::suggest(&n.kind, types.iter().copied()) {
                        Some(s) => format!("did you mean `{s}`?"),
                        None => format!("registered types are {}", ticks(types.iter().copied())),
                    };
                    self.error(
                        format!("{path}.type"),
                        Some(&n.id),
                        format!("node `{}` has unknown type `{}`; {hint}", n.id, n.kind),
                    );
                }
                Some(Err(errors)) => {
                    for e in errors {
                        self.error(
                            format!("{path}.data{}", e.path),
                            Some(&n.id),
                            format!("node `{}`: {}", n.id, e.message),
                        );
                    }
                }
                Some(Ok(imp)) => out.push(LNode {
                    at: i,
                    id: n.id.clone(),
                    imp,
                    max_steps,
                }),
            }
        }
        out
    }

    /// Edges between known nodes; dangling ones reported; handles checked against branches.
    fn edges(&mut self, nodes: &[LNode]) -> Vec<LEdge> {
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

    fn handle_ok(&mut self, b: &Brancher, edge: &str, node: &str, handle: Option<&str>, path: &str) -> bool {
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

    /// One start node, at least one end node.
    fn start_and_end(&mut self, nodes: &[LNode]) {
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
    fn handles_have_edges(&mut self, nodes: &[LNode], edges: &[LEdge]) {
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
    fn writes_fit(&mut self, nodes: &[LNode], schema: &Schema) {
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

    /// The flow's shape for the shared checks, with `joins` (target, sources) in place of the
    /// plain edges they replace.
    fn topology(
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

    fn sites_root(&mut self) -> Site {
        self.sites.push(("$".to_owned(), None));
        self.sites.len() - 1
    }
}

fn reducer_note(r: Reduce) -> &'static str {
    match r {
        Reduce::Add => " with reducer `add`, which takes numbers",
        Reduce::Merge => " with reducer `merge`, which takes objects",
        _ => "",
    }
}

/// For each multi-input node, whether it waits for all its upstreams on a lower level (a join)
/// or runs on any: an edge that re-enters a loop comes from a higher level and never makes it
/// wait, and neither do upstreams that exclude each other (they follow different branches of
/// one condition or output) or that choose a branch themselves.
fn decide_joins(nodes: &[LNode], edges: &[LEdge], levels: &[(String, Option<usize>)]) -> Vec<(usize, Vec<usize>)> {
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

/// The graph the loop runs: one runtime node per flow node, in file order, then the asking
/// node of each pausing `output` (`<id>:ask`), which takes over the output's out-edges.
fn build(
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
fn asking_nodes(nodes: &[LNode]) -> (Vec<NodeId>, Vec<usize>) {
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
