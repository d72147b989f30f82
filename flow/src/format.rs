//! The flow file: what a visual editor saves, as Rust types.
//!
//! The shape is React Flow's (xyflow's) `{nodes, edges}`, which most graph editors save, plus a
//! `state` section declaring the workflow's fields. Keys an editor adds for itself (`position`,
//! `measured`, `selected`, `style`, ...) are allowed and ignored. The JSON Schema published as
//! `flow/schema/flow.schema.json` is generated from these types ([`json_schema`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;

/// A workflow as an editor saves it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    title = "weir flow",
    description = "A workflow drawn in a visual editor: React Flow / xyflow nodes and edges, plus the declaration of its state."
)]
pub struct FlowFile {
    /// The nodes, in any order. `id`s are unique across nodes and edges.
    pub nodes: Vec<NodeSpec>,
    /// The edges, in any order.
    #[serde(default)]
    pub edges: Vec<EdgeSpec>,
    /// The state's fields, by name.
    #[serde(default)]
    pub state: StateSpec,
    /// The most times one node may run in a run, for nodes that do not set their own
    /// (`data.max_steps`). Defaults to the loader's setting (10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_steps: Option<u32>,
    /// The version of the state section (default 1), recorded in each checkpoint. Raise it when
    /// the fields change while threads saved by the older flow live on, and give a migration
    /// from each older version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub state_version: Option<u32>,
    /// How a checkpoint of each older state version becomes the next: one entry per version
    /// from 1 to `state_version - 1`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub migrations: Vec<MigrationSpec>,
}

/// How a checkpoint of state version `from` becomes version `from + 1`. Applied in this order:
/// renames, drops, adds, then retypes (which name fields as version `from + 1` has them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MigrationSpec {
    /// The version a checkpoint is migrated from.
    #[schemars(range(min = 1))]
    pub from: u32,
    /// Fields renamed: old name to new name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rename: BTreeMap<String, String>,
    /// Fields gone: their values and pending writes are dropped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drop: Vec<String>,
    /// Fields new in this version: a checkpoint has none of them; they start at their default.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub add: Vec<String>,
    /// Fields whose values change shape: a CEL expression over `value` (the saved value, or a
    /// pending write) giving the new one, e.g. `size(value)` or `{"text": value}`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub retype: BTreeMap<String, String>,
}

/// One node: its id, its type (a key of the node registry) and its type's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NodeSpec {
    /// Unique among the flow's nodes and edges.
    #[schemars(length(min = 1))]
    pub id: String,
    /// The node type: `start`, `end`, `condition`, `set`, `output`, `note`, or one registered
    /// from Rust.
    #[serde(rename = "type")]
    #[schemars(length(min = 1))]
    pub kind: String,
    /// The type's settings; each type reads its own shape. `max_steps` (a positive integer) is
    /// read for every type. An `output` reads `message` (a template), `to` (the field the
    /// message is also written to), `choices` (`[{"id", "label"}]`: the run pauses after the
    /// message is sent and follows the edges whose `sourceHandle` is the chosen id) and `pause`
    /// (`true` without choices: the run pauses after the message is sent until it is
    /// acknowledged, by a resume without a choice; an output with choices always pauses).
    #[serde(default)]
    pub data: Map<String, Value>,
}

/// One edge. Out of a `condition` node, `sourceHandle` names the branch; out of an `output`
/// node with choices, the choice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EdgeSpec {
    /// Unique among the flow's nodes and edges.
    #[schemars(length(min = 1))]
    pub id: String,
    /// The id of the node the edge leaves.
    pub source: String,
    /// The id of the node the edge enters.
    pub target: String,
    /// The handle of the source the edge leaves: a branch or choice id.
    #[serde(rename = "sourceHandle", default, skip_serializing_if = "Option::is_none")]
    pub source_handle: Option<String>,
}

/// The state's fields, by name (names may not start with `__`, which weir reserves).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct StateSpec {
    /// The fields, by name; a run's state has them in name order.
    pub fields: BTreeMap<String, FieldSpec>,
}

/// One field of the state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FieldSpec {
    /// The JSON type of the field's value.
    #[serde(rename = "type")]
    pub ty: FieldType,
    /// How the writes of one step combine. Defaults to `last`.
    #[serde(default)]
    pub reducer: ReducerKind,
    /// The value the field has when the run's input does not set it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// What the field is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// The JSON type of a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FieldType {
    /// A JSON string.
    String,
    /// A JSON number.
    Number,
    /// `true` or `false`.
    Bool,
    /// A JSON array.
    List,
    /// A JSON object.
    Object,
}

impl FieldType {
    /// Whether `v` is of this type (`null` is of none).
    pub fn admits(self, v: &Value) -> bool {
        matches!(
            (self, v),
            (Self::String, Value::String(_))
                | (Self::Number, Value::Number(_))
                | (Self::Bool, Value::Bool(_))
                | (Self::List, Value::Array(_))
                | (Self::Object, Value::Object(_))
        )
    }

    /// The type's name, as written in a flow.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Number => "number",
            Self::Bool => "bool",
            Self::List => "list",
            Self::Object => "object",
        }
    }

    /// The type of a JSON value (`None` for null).
    pub fn of(v: &Value) -> Option<Self> {
        Some(match v {
            Value::Null => return None,
            Value::Bool(_) => FieldType::Bool,
            Value::Number(_) => FieldType::Number,
            Value::String(_) => FieldType::String,
            Value::Array(_) => FieldType::List,
            Value::Object(_) => FieldType::Object,
        })
    }

    /// The name of a JSON value's type, in the same words (`null` for null).
    pub fn name_of(v: &Value) -> &'static str {
        match v {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "list",
            Value::Object(_) => "object",
        }
    }
}

impl fmt::Display for FieldType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the writes of one step to a field combine (the field's channel kind).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReducerKind {
    /// The value written replaces the old one; two writes in one step are an error (a last-value
    /// channel).
    #[default]
    Last,
    /// `list` fields: each write (a list, or one item) is appended.
    Append,
    /// `number` fields: each write is added.
    Add,
    /// `object` fields: each write's keys replace the old ones (a shallow merge).
    Merge,
}

impl ReducerKind {
    /// The reducer's name, as written in a flow.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Last => "last",
            Self::Append => "append",
            Self::Add => "add",
            Self::Merge => "merge",
        }
    }
}

/// The JSON Schema of a flow file, generated from [`FlowFile`].
///
/// # Examples
///
/// ```
/// let schema = weir_flow::json_schema();
/// assert_eq!(schema["title"], "weir flow");
/// ```
pub fn json_schema() -> Value {
    serde_json::to_value(schemars::schema_for!(FlowFile)).expect("a schema serializes")
}
