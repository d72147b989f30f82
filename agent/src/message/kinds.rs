//! The four kinds of message (system, human, ai, tool), one struct each, with LangChain's
//! fields.

use super::{Content, InvalidToolCall, ToolCall, UsageMetadata};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Instructions for the model (LangChain's `SystemMessage`, `"type": "system"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SystemMessage {
    /// What it says.
    pub content: Content,
    /// Provider-specific extras.
    #[serde(default)]
    pub additional_kwargs: Map<String, Value>,
    /// Provider response metadata.
    #[serde(default)]
    pub response_metadata: Map<String, Value>,
    /// An optional name of the speaker.
    #[serde(default)]
    pub name: Option<String>,
    /// The message's id: a message with the id of an earlier one replaces it.
    #[serde(default)]
    pub id: Option<String>,
}

/// What a person said (LangChain's `HumanMessage`, `"type": "human"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HumanMessage {
    /// What it says.
    pub content: Content,
    /// Provider-specific extras.
    #[serde(default)]
    pub additional_kwargs: Map<String, Value>,
    /// Provider response metadata.
    #[serde(default)]
    pub response_metadata: Map<String, Value>,
    /// An optional name of the speaker.
    #[serde(default)]
    pub name: Option<String>,
    /// The message's id: a message with the id of an earlier one replaces it.
    #[serde(default)]
    pub id: Option<String>,
}

/// What a model answered (LangChain's `AIMessage`, `"type": "ai"`): text and tool calls.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AiMessage {
    /// What it says.
    pub content: Content,
    /// Provider-specific extras.
    #[serde(default)]
    pub additional_kwargs: Map<String, Value>,
    /// Provider response metadata (model name, finish reason, ..).
    #[serde(default)]
    pub response_metadata: Map<String, Value>,
    /// An optional name of the speaker.
    #[serde(default)]
    pub name: Option<String>,
    /// The message's id: a message with the id of an earlier one replaces it.
    #[serde(default)]
    pub id: Option<String>,
    /// The tools the model asks to run.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// Tool calls whose arguments did not parse.
    #[serde(default)]
    pub invalid_tool_calls: Vec<InvalidToolCall>,
    /// Token counts, when the provider gave them.
    #[serde(default)]
    pub usage_metadata: Option<UsageMetadata>,
}

impl AiMessage {
    /// An answer saying `content`, without tool calls.
    pub fn new(content: impl Into<Content>) -> Self {
        Self {
            content: content.into(),
            ..Self::default()
        }
    }

    /// The same with `calls` as its tool calls.
    pub fn with_tool_calls(mut self, calls: Vec<ToolCall>) -> Self {
        self.tool_calls = calls;
        self
    }

    /// Whether it asks for tools: any tool call, valid or not.
    pub fn has_tool_calls(&self) -> bool {
        !self.tool_calls.is_empty() || !self.invalid_tool_calls.is_empty()
    }
}

/// Whether a tool call succeeded (LangChain's `ToolMessage.status`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolStatus {
    /// The tool ran and returned.
    #[default]
    Success,
    /// The call failed: unknown tool, bad arguments, or the tool's own error.
    Error,
}

/// A tool's result (LangChain's `ToolMessage`, `"type": "tool"`), answering one tool call.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolMessage {
    /// The result, as the model will read it.
    pub content: Content,
    /// Provider-specific extras.
    #[serde(default)]
    pub additional_kwargs: Map<String, Value>,
    /// Provider response metadata.
    #[serde(default)]
    pub response_metadata: Map<String, Value>,
    /// The tool's name.
    #[serde(default)]
    pub name: Option<String>,
    /// The message's id: a message with the id of an earlier one replaces it.
    #[serde(default)]
    pub id: Option<String>,
    /// The id of the tool call this answers.
    pub tool_call_id: String,
    /// A result not meant for the model (LangChain's `artifact`).
    #[serde(default)]
    pub artifact: Option<Value>,
    /// Whether the call succeeded.
    #[serde(default)]
    pub status: ToolStatus,
}

/// Builders shared by the message kinds.
macro_rules! common {
    ($($ty:ident),*) => {$(
        impl $ty {
            /// The same message with id `id`.
            pub fn with_id(mut self, id: impl Into<String>) -> Self {
                self.id = Some(id.into());
                self
            }
            /// The same message with speaker name `name`.
            pub fn with_name(mut self, name: impl Into<String>) -> Self {
                self.name = Some(name.into());
                self
            }
        }
    )*};
}
common!(SystemMessage, HumanMessage, AiMessage, ToolMessage);
