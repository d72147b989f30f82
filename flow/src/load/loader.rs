//! The loader: what a load knows as it goes, and the order of its phases.

use super::build::{asking_nodes, build};
use super::flow::{Flow, LoadOptions};
use super::shape::decide_joins;
use crate::error::{Diagnostic, LoadError};
use crate::format::FlowFile;
use crate::node::{NodeImpl, Role};
use crate::registry::Registry;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use weir_topology::{self as topology, Site};

/// A node of the file that is not a note.
pub(super) struct LNode {
    /// Index in `file.nodes`.
    pub(super) at: usize,
    pub(super) id: String,
    pub(super) imp: NodeImpl,
    pub(super) max_steps: u32,
}

/// An edge whose ends are known nodes (notes excluded).
#[derive(Debug, Clone)]
pub(super) struct LEdge {
    pub(super) at: usize,
    pub(super) id: String,
    /// Indices into `Loader::nodes`.
    pub(super) source: usize,
    pub(super) target: usize,
    pub(super) handle: Option<String>,
}

pub(super) struct Loader<'a> {
    pub(super) file: &'a FlowFile,
    pub(super) registry: &'a Registry,
    pub(super) options: LoadOptions,
    pub(super) diags: Vec<Diagnostic>,
    /// Topology sites: JSON path and the id at fault.
    pub(super) sites: Vec<(String, Option<String>)>,
}

pub(super) fn node_path(i: usize) -> String {
    format!("$.nodes[{i}]")
}

pub(super) fn edge_path(j: usize) -> String {
    format!("$.edges[{j}]")
}

impl<'a> Loader<'a> {
    pub(super) fn new(file: &'a FlowFile, registry: &'a Registry, options: LoadOptions) -> Self {
        Self {
            file,
            registry,
            options,
            diags: Vec::new(),
            sites: Vec::new(),
        }
    }

    pub(super) fn error(&mut self, path: impl Into<String>, id: Option<&str>, message: impl Into<String>) {
        self.diags.push(Diagnostic::new(path, id, message));
    }

    pub(super) fn site(&mut self, path: String, id: &str) -> Site {
        self.sites.push((path, Some(id.to_owned())));
        self.sites.len() - 1
    }

    pub(super) fn load(mut self) -> Result<Flow, LoadError> {
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
        let context_schema = context_schema(&nodes);
        Ok(Flow {
            graph,
            schema,
            context_schema,
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

    pub(super) fn sites_root(&mut self) -> Site {
        self.sites.push(("$".to_owned(), None));
        self.sites.len() - 1
    }
}

/// What `nodes` read of the run's context, as [`Flow::context_schema`] gives it.
fn context_schema(nodes: &[LNode]) -> Option<Value> {
    /// A key of the context: who reads it, and the keys read below it.
    #[derive(Default)]
    struct Key {
        by: Vec<String>,
        below: BTreeMap<String, Key>,
    }
    fn schema(key: &Key) -> Value {
        let mut out = Map::new();
        if !key.by.is_empty() {
            out.insert(
                "description".to_owned(),
                json!(format!("Read by {}", key.by.join("; "))),
            );
        }
        if !key.below.is_empty() {
            out.insert("type".to_owned(), json!("object"));
            let properties = key.below.iter().map(|(k, below)| (k.clone(), schema(below))).collect();
            out.insert("properties".to_owned(), Value::Object(properties));
        }
        Value::Object(out)
    }
    if !nodes.iter().any(|n| n.imp.reads_context) {
        return None;
    }
    let mut root = Key::default();
    for n in nodes {
        for read in &n.imp.context_paths {
            let key = read
                .path
                .iter()
                .fold(&mut root, |here, k| here.below.entry(k.clone()).or_default());
            key.by.push(format!("node `{}` at `data{}`", n.id, read.at));
        }
    }
    let Value::Object(mut out) = schema(&root) else {
        return None;
    };
    out.insert("title".to_owned(), json!("flow_context"));
    out.insert("type".to_owned(), json!("object"));
    out.entry("properties").or_insert_with(|| json!({}));
    Some(Value::Object(out))
}
