//! A streamed piece of an AI message (LangChain's `AIMessageChunk`) and `+`, which merges the
//! pieces of one answer into the whole [`AiMessage`].

use super::{AiMessage, Content, ToolCallChunk, UsageMetadata};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};
use std::ops::{Add, AddAssign};

/// A piece of a streamed AI answer: a text delta, tool-call fragments by index, usage. Chunks
/// merge with `+` (text concatenated, fragments of the same call index joined, usage summed,
/// the first id kept) and [`into_message`](Self::into_message) makes the whole answer.
///
/// ```
/// use weir_agent::message::{AiMessageChunk, ToolCallChunk, UsageMetadata};
/// let a = AiMessageChunk::text("Hel").with_tool_call(ToolCallChunk::new(0, Some("c1".into()), Some("add".into()), Some("{\"a\":".into())));
/// let b = AiMessageChunk::text("lo").with_tool_call(ToolCallChunk::new(0, None, None, Some("1}".into())));
/// let whole = (a + b).with_usage(UsageMetadata::new(3, 2)).into_message();
/// assert_eq!(whole.content.text(), "Hello");
/// assert_eq!(whole.tool_calls[0].args["a"], 1);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct AiMessageChunk {
    /// The text delta (or content blocks).
    #[serde(default)]
    pub content: Content,
    /// The id of the answer the chunk belongs to.
    #[serde(default)]
    pub id: Option<String>,
    /// An optional name of the speaker.
    #[serde(default)]
    pub name: Option<String>,
    /// Provider-specific extras.
    #[serde(default)]
    pub additional_kwargs: Map<String, Value>,
    /// Provider response metadata (finish reason, model name, ..), merged key by key.
    #[serde(default)]
    pub response_metadata: Map<String, Value>,
    /// Tool-call fragments.
    #[serde(default)]
    pub tool_call_chunks: Vec<ToolCallChunk>,
    /// Token counts carried by this chunk (summed on merge).
    #[serde(default)]
    pub usage_metadata: Option<UsageMetadata>,
    /// `Some("last")` on the final chunk of an answer.
    #[serde(default)]
    pub chunk_position: Option<String>,
}

impl AiMessageChunk {
    /// A chunk carrying the text delta `delta`.
    pub fn text(delta: impl Into<String>) -> Self {
        Self {
            content: Content::Text(delta.into()),
            ..Self::default()
        }
    }

    /// The same chunk with a tool-call fragment added.
    pub fn with_tool_call(mut self, fragment: ToolCallChunk) -> Self {
        self.tool_call_chunks.push(fragment);
        self
    }

    /// The same chunk carrying token counts.
    pub fn with_usage(mut self, usage: UsageMetadata) -> Self {
        self.usage_metadata = Some(usage);
        self
    }

    /// The same chunk with id `id`.
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// The whole answer: the text, each tool call parsed from its joined fragments (or listed
    /// as invalid, with why), the usage and metadata.
    pub fn into_message(self) -> AiMessage {
        let mut tool_calls = Vec::new();
        let mut invalid_tool_calls = Vec::new();
        for c in &self.tool_call_chunks {
            match c.parse() {
                Ok(call) => tool_calls.push(call),
                Err(bad) => invalid_tool_calls.push(bad),
            }
        }
        AiMessage {
            content: self.content,
            additional_kwargs: self.additional_kwargs,
            response_metadata: self.response_metadata,
            name: self.name,
            id: self.id,
            tool_calls,
            invalid_tool_calls,
            usage_metadata: self.usage_metadata,
        }
    }
}

impl AddAssign for AiMessageChunk {
    fn add_assign(&mut self, later: Self) {
        self.content.extend(later.content);
        self.id = self.id.take().or(later.id);
        self.name = self.name.take().or(later.name);
        self.additional_kwargs.extend(later.additional_kwargs);
        self.response_metadata.extend(later.response_metadata);
        for fragment in later.tool_call_chunks {
            let same = fragment
                .index
                .and_then(|i| self.tool_call_chunks.iter_mut().find(|c| c.index == Some(i)));
            match same {
                Some(c) => c.merge(fragment),
                None => self.tool_call_chunks.push(fragment),
            }
        }
        self.usage_metadata = match (self.usage_metadata.take(), later.usage_metadata) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        if later.chunk_position.is_some() {
            self.chunk_position = later.chunk_position;
        }
    }
}

impl Add for AiMessageChunk {
    type Output = Self;
    fn add(mut self, later: Self) -> Self {
        self += later;
        self
    }
}

/// LangChain's dict for a chunk: `"type": "AIMessageChunk"`, with the tool calls parsed so far.
impl Serialize for AiMessageChunk {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Wire<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            content: &'a Content,
            additional_kwargs: &'a Map<String, Value>,
            response_metadata: &'a Map<String, Value>,
            name: &'a Option<String>,
            id: &'a Option<String>,
            tool_calls: Vec<super::ToolCall>,
            invalid_tool_calls: Vec<super::InvalidToolCall>,
            usage_metadata: &'a Option<UsageMetadata>,
            tool_call_chunks: &'a [ToolCallChunk],
            chunk_position: &'a Option<String>,
        }
        let (mut tool_calls, mut invalid_tool_calls) = (Vec::new(), Vec::new());
        for c in &self.tool_call_chunks {
            match c.parse() {
                Ok(call) => tool_calls.push(call),
                Err(bad) => invalid_tool_calls.push(bad),
            }
        }
        Wire {
            kind: "AIMessageChunk",
            content: &self.content,
            additional_kwargs: &self.additional_kwargs,
            response_metadata: &self.response_metadata,
            name: &self.name,
            id: &self.id,
            tool_calls,
            invalid_tool_calls,
            usage_metadata: &self.usage_metadata,
            tool_call_chunks: &self.tool_call_chunks,
            chunk_position: &self.chunk_position,
        }
        .serialize(s)
    }
}
