//! A scripted chat model that streams (LangChain's `GenericFakeChatModel` and
//! `FakeMessagesListChatModel`), for tests, examples and benchmarks.

use super::{ChatModel, ChunkStream, ModelError};
use crate::message::{AiMessage, AiMessageChunk, Content, Message, ToolCallChunk};
use crate::tool::ToolSpec;
use futures::StreamExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Answers with its scripted messages, one per call, in order; after the last, it fails (or,
/// with [`cycle`](Self::cycle), starts over). Streaming splits each answer into chunks: the text
/// at whitespace (separators kept), each tool call's arguments in two fragments after a first
/// one with its id and name, the usage on the last chunk. The chunks come at once, or, when
/// [`paced`](Self::paced), one pace apart, as a model's tokens do.
///
/// ```
/// use weir_agent::model::{ChatModel, FakeChatModel};
/// use weir_agent::message::{AiMessage, Message};
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let model = FakeChatModel::new([AiMessage::new("hello there")]).recording();
/// let answer = model.invoke(&[Message::human("hi")], &[]).await.unwrap();
/// assert_eq!(answer.content.text(), "hello there");
/// assert_eq!(model.requests()[0][0].text(), "hi");
/// # });
/// ```
#[derive(Debug)]
pub struct FakeChatModel {
    name: String,
    script: Vec<AiMessage>,
    next: AtomicUsize,
    cycle: bool,
    record: bool,
    pace: Duration,
    requests: Mutex<Vec<Vec<Message>>>,
}

impl FakeChatModel {
    /// A model answering with `script`, in order.
    pub fn new(script: impl IntoIterator<Item = AiMessage>) -> Self {
        Self {
            name: "fake".into(),
            script: script.into_iter().collect(),
            next: AtomicUsize::new(0),
            cycle: false,
            record: false,
            pace: Duration::ZERO,
            requests: Mutex::new(Vec::new()),
        }
    }

    /// The same model, named `name`.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The same model, starting the script over after its last answer.
    pub fn cycle(mut self) -> Self {
        self.cycle = true;
        self
    }

    /// The same model, streaming each chunk after the first `pace` after the one before it, so
    /// that a client sees the tokens arrive one by one.
    pub fn paced(mut self, pace: Duration) -> Self {
        self.pace = pace;
        self
    }

    /// The same model, keeping a copy of every conversation it is called with (see
    /// [`requests`](Self::requests)).
    pub fn recording(mut self) -> Self {
        self.record = true;
        self
    }

    /// The conversations it was called with, in call order, when it is
    /// [`recording`](Self::recording).
    pub fn requests(&self) -> Vec<Vec<Message>> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    fn take(&self, messages: &[Message]) -> Result<AiMessage, ModelError> {
        if self.record {
            if let Ok(mut r) = self.requests.lock() {
                r.push(messages.to_vec());
            }
        }
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let len = self.script.len();
        let at = if self.cycle && len > 0 { n % len } else { n };
        self.script.get(at).cloned().ok_or_else(|| {
            ModelError::script(
                &self.name,
                format!("the script has {len} answers; call {} has none", n + 1),
            )
        })
    }
}

/// The chunks a streamed `answer` arrives in (the answer's id on each).
fn chunks_of(answer: AiMessage, call: usize) -> Vec<AiMessageChunk> {
    let id = answer.id.clone().unwrap_or_else(|| format!("fake-{call}"));
    let mut out: Vec<AiMessageChunk> = match &answer.content {
        Content::Text(t) => split_words(t).into_iter().map(AiMessageChunk::text).collect(),
        blocks @ Content::Blocks(_) => vec![AiMessageChunk {
            content: blocks.clone(),
            ..AiMessageChunk::default()
        }],
    };
    for (i, call) in answer.tool_calls.iter().enumerate() {
        let index = i as u32;
        let args = serde_json::Value::Object(call.args.clone()).to_string();
        let mid = args
            .char_indices()
            .nth(args.chars().count() / 2)
            .map_or(0, |(at, _)| at);
        let (a, b) = args.split_at(mid);
        out.push(AiMessageChunk::default().with_tool_call(ToolCallChunk::new(
            index,
            call.id.clone(),
            Some(call.name.clone()),
            None,
        )));
        out.push(AiMessageChunk::default().with_tool_call(ToolCallChunk::new(index, None, None, Some(a.into()))));
        out.push(AiMessageChunk::default().with_tool_call(ToolCallChunk::new(index, None, None, Some(b.into()))));
    }
    for (i, bad) in answer.invalid_tool_calls.iter().enumerate() {
        let index = (answer.tool_calls.len() + i) as u32;
        out.push(AiMessageChunk::default().with_tool_call(ToolCallChunk::new(
            index,
            bad.id.clone(),
            bad.name.clone(),
            bad.args.clone(),
        )));
    }
    if out.is_empty() {
        out.push(AiMessageChunk::text(""));
    }
    let last = out.len() - 1;
    out[last].usage_metadata = answer.usage_metadata;
    out[last].chunk_position = Some("last".into());
    out[0].response_metadata = answer.response_metadata;
    out[0].additional_kwargs = answer.additional_kwargs;
    out[0].name = answer.name;
    for c in &mut out {
        c.id = Some(id.clone());
    }
    out
}

/// `"hello there"` → `["hello", " ", "there"]`.
fn split_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    for ch in text.chars() {
        if ch.is_whitespace() {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            out.push(ch.to_string());
        } else {
            word.push(ch);
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

impl ChatModel for FakeChatModel {
    fn name(&self) -> &str {
        &self.name
    }

    fn stream<'a>(&'a self, messages: &'a [Message], _tools: &'a [ToolSpec]) -> ChunkStream<'a> {
        let call = self.next.load(Ordering::Relaxed);
        let chunks: Vec<Result<AiMessageChunk, ModelError>> = match self.take(messages) {
            Ok(answer) => chunks_of(answer, call).into_iter().map(Ok).collect(),
            Err(e) => vec![Err(e)],
        };
        let pace = self.pace;
        let chunks: ChunkStream<'a> = if pace.is_zero() {
            Box::pin(futures::stream::iter(chunks))
        } else {
            Box::pin(
                futures::stream::iter(chunks)
                    .enumerate()
                    .then(move |(i, chunk)| async move {
                        if i > 0 {
                            tokio::time::sleep(pace).await;
                        }
                        chunk
                    }),
            )
        };
        // Traced as a real provider's calls are, so a graph tested with the fake shows its spans.
        crate::trace::chat("weir.fake", &self.name, chunks)
    }
}
