//! What loading gives back: the `Flow`, and the settings of a load.

use super::loader::Loader;
use crate::error::{Diagnostic, LoadError};
use crate::format::FlowFile;
use crate::registry::Registry;
use crate::state::{FlowState, Schema};
use std::sync::Arc;
use weir_runtime::checkpoint::Checkpointer;
use weir_runtime::CompiledGraph;
use weir_topology::{self as topology, Topology};

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
    pub(super) topology: Topology,
    pub(super) recursion_limit: usize,
    pub(super) joins: Vec<(String, Vec<String>)>,
    pub(super) levels: Vec<(String, Option<usize>)>,
    /// The ids of the end nodes.
    pub(crate) ends: Vec<String>,
    /// What the nodes read of the run's context, as a JSON Schema; `None` when none reads it.
    pub(super) context_schema: Option<serde_json::Value>,
}

impl Flow {
    /// The compiled graph the flow runs on (for a server that serves it as it serves any graph).
    pub fn graph(&self) -> &CompiledGraph<FlowState> {
        &self.graph
    }

    /// The flow's state fields.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The update a run on `input` starts from: the input checked against the declared fields,
    /// and the declared defaults of the fields it does not set (what [`Flow::run`] runs).
    ///
    /// # Errors
    /// An input that is not an object, or a field not declared or of another type (the error
    /// names the field).
    pub fn input(&self, input: &serde_json::Value) -> Result<crate::FlowUpdate, crate::RunError> {
        self.input_update(input)
    }
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

    /// What the flow's nodes read of a run's context, as a JSON Schema (what a server reports
    /// as a graph's `context_schema`): an object with each key a condition or template reads by
    /// name (`context.user.id`, `context['plan']`), nested, each described with the nodes that
    /// read it and where. No key is required: a node on a branch a run does not take needs
    /// nothing, and one that runs without its key fails naming it. `None` when no node reads the
    /// context.
    pub fn context_schema(&self) -> Option<&serde_json::Value> {
        self.context_schema.as_ref()
    }
}
