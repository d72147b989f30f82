//! Messages, as LangChain defines them and LangGraph clients read them: the [`Message`] enum
//! (system, human, ai, tool) whose JSON is LangChain's message dict, streamed
//! [`AiMessageChunk`]s and their merging, and the [`add_messages`] reducer with its update type
//! [`Messages`] and the ready-made [`MessagesState`].

mod add;
mod call;
mod chunk;
mod content;
mod de;
mod kinds;
mod schema;

pub use add::{
    add_messages, try_add_messages, MessageUpdate, Messages, MessagesError, RemoveMessage, REMOVE_ALL_MESSAGES,
};
pub use call::{InvalidToolCall, ToolCall, ToolCallChunk, UsageMetadata};
pub use chunk::AiMessageChunk;
pub use content::Content;
pub use kinds::{AiMessage, HumanMessage, SystemMessage, ToolMessage, ToolStatus};

use serde::{Deserialize, Serialize};

/// One message of a conversation. Its JSON is LangChain's message dict, tagged by `type`:
/// `"system"`, `"human"`, `"ai"` or `"tool"`.
///
/// ```
/// use weir_agent::message::Message;
/// let m = Message::human("hi").with_id("1");
/// let json = serde_json::to_value(&m).unwrap();
/// assert_eq!(json["type"], "human");
/// assert_eq!(json["content"], "hi");
/// assert_eq!(serde_json::from_value::<Message>(json).unwrap(), m);
/// ```
// Read by hand (`de.rs`): straight into the kind's struct when `type` comes first.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type")]
pub enum Message {
    /// Instructions for the model.
    #[serde(rename = "system")]
    System(SystemMessage),
    /// What a person said.
    #[serde(rename = "human")]
    Human(HumanMessage),
    /// What a model answered.
    #[serde(rename = "ai")]
    Ai(AiMessage),
    /// A tool's result.
    #[serde(rename = "tool")]
    Tool(ToolMessage),
}

impl Message {
    /// A system message saying `content`.
    pub fn system(content: impl Into<Content>) -> Self {
        Self::System(SystemMessage {
            content: content.into(),
            ..SystemMessage::default()
        })
    }

    /// A human message saying `content`.
    pub fn human(content: impl Into<Content>) -> Self {
        Self::Human(HumanMessage {
            content: content.into(),
            ..HumanMessage::default()
        })
    }

    /// An AI message saying `content`, without tool calls.
    pub fn ai(content: impl Into<Content>) -> Self {
        Self::Ai(AiMessage::new(content))
    }

    /// A successful tool message answering the call `tool_call_id`.
    pub fn tool(tool_call_id: impl Into<String>, content: impl Into<Content>) -> Self {
        Self::Tool(ToolMessage {
            content: content.into(),
            tool_call_id: tool_call_id.into(),
            ..ToolMessage::default()
        })
    }

    /// LangChain's `type`: `"system"`, `"human"`, `"ai"` or `"tool"`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::System(_) => "system",
            Self::Human(_) => "human",
            Self::Ai(_) => "ai",
            Self::Tool(_) => "tool",
        }
    }

    /// The message's id, if it has one.
    pub fn id(&self) -> Option<&str> {
        match self {
            Self::System(m) => m.id.as_deref(),
            Self::Human(m) => m.id.as_deref(),
            Self::Ai(m) => m.id.as_deref(),
            Self::Tool(m) => m.id.as_deref(),
        }
    }

    /// The id slot, to set or clear it.
    pub fn id_mut(&mut self) -> &mut Option<String> {
        match self {
            Self::System(m) => &mut m.id,
            Self::Human(m) => &mut m.id,
            Self::Ai(m) => &mut m.id,
            Self::Tool(m) => &mut m.id,
        }
    }

    /// The same message with id `id`.
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        *self.id_mut() = Some(id.into());
        self
    }

    /// What it says.
    pub fn content(&self) -> &Content {
        match self {
            Self::System(m) => &m.content,
            Self::Human(m) => &m.content,
            Self::Ai(m) => &m.content,
            Self::Tool(m) => &m.content,
        }
    }

    /// Its text (see [`Content::text`]).
    pub fn text(&self) -> String {
        self.content().text()
    }

    /// The AI message, if it is one.
    pub fn as_ai(&self) -> Option<&AiMessage> {
        match self {
            Self::Ai(m) => Some(m),
            _ => None,
        }
    }

    /// The tool message, if it is one.
    pub fn as_tool(&self) -> Option<&ToolMessage> {
        match self {
            Self::Tool(m) => Some(m),
            _ => None,
        }
    }
}

impl From<SystemMessage> for Message {
    fn from(m: SystemMessage) -> Self {
        Self::System(m)
    }
}
impl From<HumanMessage> for Message {
    fn from(m: HumanMessage) -> Self {
        Self::Human(m)
    }
}
impl From<AiMessage> for Message {
    fn from(m: AiMessage) -> Self {
        Self::Ai(m)
    }
}
impl From<ToolMessage> for Message {
    fn from(m: ToolMessage) -> Self {
        Self::Tool(m)
    }
}

/// The state of most agents: one `messages` field merged by [`add_messages`] (LangGraph's
/// `MessagesState`). Nodes write it with `MessagesStateUpdate::default().messages(..)`.
#[derive(weir::State, Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MessagesState {
    /// The conversation so far.
    #[reducer(with = add_messages, update = Messages)]
    pub messages: Vec<Message>,
}

impl MessagesState {
    /// The last message, if any.
    pub fn last(&self) -> Option<&Message> {
        self.messages.last()
    }
}
