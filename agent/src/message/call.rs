//! The parts of an AI message that are not text: tool calls (whole, invalid, or as streamed
//! chunks) and token usage, each with LangChain's JSON shape.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::ops::{Add, AddAssign};

/// Writes a fixed `type` string (LangChain's `"type": "tool_call"` and kin) and accepts any.
macro_rules! type_tag {
    ($name:ident, $value:literal) => {
        #[doc = concat!("The `\"type\": \"", $value, "\"` of the JSON form.")]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub(crate) struct $name;
        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str($value)
            }
        }
    };
}
type_tag!(ToolCallTag, "tool_call");
type_tag!(InvalidToolCallTag, "invalid_tool_call");
type_tag!(ToolCallChunkTag, "tool_call_chunk");

/// A model's request to run a tool (LangChain's `ToolCall`): `{name, args, id, type}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The tool's name.
    pub name: String,
    /// The arguments, a JSON object.
    #[serde(default)]
    pub args: Map<String, Value>,
    /// The call's id, which the tool message answering it repeats.
    #[serde(default)]
    pub id: Option<String>,
    #[serde(rename = "type", default, skip_deserializing)]
    tag: ToolCallTag,
}

impl ToolCall {
    /// A call of tool `name` with `args`, named `id`.
    pub fn new(id: impl Into<String>, name: impl Into<String>, args: Map<String, Value>) -> Self {
        Self {
            name: name.into(),
            args,
            id: Some(id.into()),
            tag: ToolCallTag,
        }
    }
}

/// A tool call whose arguments did not parse (LangChain's `InvalidToolCall`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InvalidToolCall {
    /// The tool's name, if the model gave one.
    #[serde(default)]
    pub name: Option<String>,
    /// The arguments as the model wrote them.
    #[serde(default)]
    pub args: Option<String>,
    /// The call's id.
    #[serde(default)]
    pub id: Option<String>,
    /// Why they did not parse.
    #[serde(default)]
    pub error: Option<String>,
    #[serde(rename = "type", default, skip_deserializing)]
    tag: InvalidToolCallTag,
}

impl InvalidToolCall {
    /// A call that could not be parsed, and why.
    pub fn new(id: Option<String>, name: Option<String>, args: Option<String>, error: impl Into<String>) -> Self {
        Self {
            name,
            args,
            id,
            error: Some(error.into()),
            tag: InvalidToolCallTag,
        }
    }
}

/// A fragment of a tool call in a stream (LangChain's `ToolCallChunk`): fragments with the same
/// `index` belong to one call; `args` fragments are concatenated.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolCallChunk {
    /// The tool's name (usually in the first fragment only).
    #[serde(default)]
    pub name: Option<String>,
    /// A piece of the JSON arguments.
    #[serde(default)]
    pub args: Option<String>,
    /// The call's id (usually in the first fragment only).
    #[serde(default)]
    pub id: Option<String>,
    /// Which call of the message this fragment belongs to.
    #[serde(default)]
    pub index: Option<u32>,
    #[serde(rename = "type", default, skip_deserializing)]
    tag: ToolCallChunkTag,
}

impl ToolCallChunk {
    /// A fragment of call `index`.
    pub fn new(index: u32, id: Option<String>, name: Option<String>, args: Option<String>) -> Self {
        Self {
            name,
            args,
            id,
            index: Some(index),
            tag: ToolCallChunkTag,
        }
    }

    /// Folds a later fragment of the same call in: arguments concatenated, the first id and
    /// name kept.
    pub fn merge(&mut self, later: ToolCallChunk) {
        self.id = self.id.take().or(later.id);
        self.name = self.name.take().or(later.name);
        match (&mut self.args, later.args) {
            (Some(a), Some(b)) => a.push_str(&b),
            (a @ None, b) => *a = b,
            (Some(_), None) => {}
        }
    }

    /// The whole call: a [`ToolCall`], or an [`InvalidToolCall`] when the arguments are not a
    /// JSON object (empty arguments are `{}`, as in LangChain).
    pub fn parse(&self) -> Result<ToolCall, InvalidToolCall> {
        let invalid = |e: String| InvalidToolCall::new(self.id.clone(), self.name.clone(), self.args.clone(), e);
        let Some(name) = self.name.clone() else {
            return Err(invalid("the tool call has no name".into()));
        };
        let raw = self.args.as_deref().unwrap_or("").trim();
        let args = if raw.is_empty() {
            Map::new()
        } else {
            match serde_json::from_str::<Value>(raw) {
                Ok(Value::Object(m)) => m,
                Ok(other) => return Err(invalid(format!("the arguments are not a JSON object: {other}"))),
                Err(e) => return Err(invalid(format!("the arguments are not valid JSON: {e}"))),
            }
        };
        Ok(ToolCall {
            name,
            args,
            id: self.id.clone(),
            tag: ToolCallTag,
        })
    }
}

/// Token counts of a model call (LangChain's `UsageMetadata`); `+` sums them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageMetadata {
    /// Tokens read.
    pub input_tokens: u64,
    /// Tokens written.
    pub output_tokens: u64,
    /// Both.
    pub total_tokens: u64,
}

impl UsageMetadata {
    /// Counts of `input` and `output` tokens, and their total.
    pub fn new(input: u64, output: u64) -> Self {
        Self {
            input_tokens: input,
            output_tokens: output,
            total_tokens: input + output,
        }
    }
}

impl AddAssign for UsageMetadata {
    fn add_assign(&mut self, o: Self) {
        self.input_tokens += o.input_tokens;
        self.output_tokens += o.output_tokens;
        self.total_tokens += o.total_tokens;
    }
}

impl Add for UsageMetadata {
    type Output = Self;
    fn add(mut self, o: Self) -> Self {
        self += o;
        self
    }
}
