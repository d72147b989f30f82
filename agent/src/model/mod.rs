//! Chat models: the [`ChatModel`] trait (a call with messages and tool schemas, or a stream of
//! [`AiMessageChunk`]s merged into the whole answer, or, inside a node, a call whose tokens go to
//! the run's `messages` stream: [`ChatModel::stream_in`]), the scripted [`FakeChatModel`], the
//! OpenAI-compatible [`OpenAiChat`] (feature `openai`) and [`OpenAiEmbeddings`] for a store's
//! index (feature `openai-embeddings`), and [`ModelError`].

mod error;
mod fake;
#[cfg(feature = "openai")]
mod openai;
mod stream_in;
mod structured;

pub use error::{is_retryable, ModelError};
pub use fake::FakeChatModel;
#[cfg(feature = "openai")]
pub use openai::OpenAiChat;
#[cfg(feature = "openai-embeddings")]
pub use openai::OpenAiEmbeddings;
pub use structured::{ResponseFormat, StructuredError};

use crate::message::{AiMessage, AiMessageChunk, Message};
use crate::tool::ToolSpec;
use futures::future::BoxFuture;
use futures::stream::{BoxStream, StreamExt};
use weir_runtime::Context;

/// The chunks of one streamed answer.
pub type ChunkStream<'a> = BoxStream<'a, Result<AiMessageChunk, ModelError>>;

/// A chat model: given the conversation and the tools it may call, it answers with an
/// [`AiMessage`], whole ([`invoke`](Self::invoke)) or as a stream of chunks
/// ([`stream`](Self::stream)).
///
/// Implementors write `stream`; the provided `invoke` merges its chunks with `+`.
pub trait ChatModel: Send + Sync + 'static {
    /// The model's name, as errors and metadata show it.
    fn name(&self) -> &str;

    /// Streams the answer to `messages`, offering `tools`: text deltas, tool-call fragments by
    /// index, usage. An error ends the stream.
    fn stream<'a>(&'a self, messages: &'a [Message], tools: &'a [ToolSpec]) -> ChunkStream<'a>;

    /// The whole answer: the stream's chunks merged.
    ///
    /// # Errors
    /// The stream's first error.
    fn invoke<'a>(
        &'a self,
        messages: &'a [Message],
        tools: &'a [ToolSpec],
    ) -> BoxFuture<'a, Result<AiMessage, ModelError>> {
        Box::pin(async move {
            let mut chunks = self.stream(messages, tools);
            let mut whole = AiMessageChunk::default();
            while let Some(chunk) = chunks.next().await {
                whole += chunk?;
            }
            Ok(whole.into_message())
        })
    }

    /// The answer, called inside a node whose context is `ctx`: when the run streams messages
    /// ([`StreamMode::MESSAGES`](weir_runtime::StreamMode::MESSAGES), the server's
    /// `messages-tuple`), each chunk goes to the stream as it arrives, as LangChain's
    /// `AIMessageChunk` dict (`"type": "AIMessageChunk"`, `content`, `tool_call_chunks`,
    /// `usage_metadata`, …) with the task's metadata, while the chunks merge into the answer.
    /// Every chunk carries the answer's id (the provider's, or a new `lc_run--<uuid>`), which is
    /// the returned message's id too, so a client merging chunks by id finds the message in the
    /// state; the last chunk has `"chunk_position": "last"`. Without a messages stream this is
    /// [`invoke`](Self::invoke) (with an id given to an answer without one).
    ///
    /// ```
    /// use futures::StreamExt;
    /// use weir_agent::message::{AiMessage, Message, MessagesState, MessagesStateUpdate};
    /// use weir_agent::model::{ChatModel, FakeChatModel};
    /// use weir_runtime::{BoxError, Context, Event, GraphBuilder, RunConfig, StreamMode, END, START};
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let model = std::sync::Arc::new(FakeChatModel::new([AiMessage::new("hello there")]));
    /// let mut g = GraphBuilder::<MessagesState>::new();
    /// g.add_node("chat", move |s: &MessagesState, ctx: &Context| {
    ///     let (model, messages, ctx) = (model.clone(), s.messages.clone(), ctx.clone());
    ///     async move {
    ///         let answer = model.stream_in(&ctx, &messages, &[]).await?;
    ///         Ok::<_, BoxError>(MessagesStateUpdate::default().messages(Message::Ai(answer).into()))
    ///     }
    /// });
    /// g.add_edge(START, "chat").add_edge("chat", END);
    /// let app = g.compile().unwrap();
    /// let input = MessagesStateUpdate::default().messages(Message::human("hi").into());
    /// let mut stream = app.stream(input, &RunConfig::default(), StreamMode::MESSAGES);
    /// let mut tokens = Vec::new();
    /// while let Some(event) = stream.next().await {
    ///     if let Event::Message { chunk, meta } = event.unwrap() {
    ///         assert_eq!((chunk["type"].as_str(), meta.node.as_str()), (Some("AIMessageChunk"), "chat"));
    ///         tokens.push(chunk["content"].as_str().unwrap().to_owned());
    ///     }
    /// }
    /// assert_eq!(tokens, ["hello", " ", "there"]);
    /// # });
    /// ```
    ///
    /// # Errors
    /// The stream's first error (the chunks before it were emitted).
    fn stream_in<'a>(
        &'a self,
        ctx: &'a Context,
        messages: &'a [Message],
        tools: &'a [ToolSpec],
    ) -> BoxFuture<'a, Result<AiMessage, ModelError>> {
        Box::pin(stream_in::stream_in(self, ctx, messages, tools))
    }

    /// The answer to `messages` as JSON fitting `format` (LangChain's `with_structured_output`),
    /// with no tools offered. The default asks [`invoke`](Self::invoke) and relies on the
    /// conversation to ask for JSON; `OpenAiChat` sends OpenAI's `response_format`.
    ///
    /// # Errors
    /// The model's errors.
    fn invoke_structured<'a>(
        &'a self,
        messages: &'a [Message],
        format: &'a ResponseFormat,
    ) -> BoxFuture<'a, Result<AiMessage, ModelError>> {
        let _ = format;
        self.invoke(messages, &[])
    }
}
