//! A model call inside a node that streams its tokens: each chunk goes to the run's stream in
//! `messages` mode (LangChain's `AIMessageChunk` dict, [`Context::emit_message`]) as it arrives,
//! and the chunks merge into the answer, whose id is theirs.

use super::{ChatModel, ModelError};
use crate::message::{AiMessage, AiMessageChunk, Message};
use crate::tool::ToolSpec;
use futures::StreamExt;
use weir_runtime::Context;

/// A new message id, LangChain's form for an answer whose provider gave none.
pub(super) fn new_id() -> String {
    format!("lc_run--{}", uuid::Uuid::new_v4())
}

/// `model`'s answer to `messages` with `tools`, its chunks emitted through `ctx` when the run
/// streams messages. Every chunk carries the answer's id: the provider's (the first chunk's, if not empty),
/// or a new `lc_run--<uuid>`; the last one has `"chunk_position": "last"` (an empty chunk is
/// added when the provider's last had none). Without a messages stream, the model is invoked
/// and nothing is emitted.
pub(super) async fn stream_in<M: ChatModel + ?Sized>(
    model: &M,
    ctx: &Context,
    messages: &[Message],
    tools: &[ToolSpec],
) -> Result<AiMessage, ModelError> {
    if !ctx.streams_messages() {
        let mut answer = model.invoke(messages, tools).await?;
        answer.id.get_or_insert_with(new_id);
        return Ok(answer);
    }
    let mut chunks = model.stream(messages, tools);
    let mut whole = AiMessageChunk::default();
    let mut id: Option<String> = None;
    let mut ended = false;
    while let Some(chunk) = chunks.next().await {
        let mut chunk = chunk?;
        let id = id.get_or_insert_with(|| chunk.id.clone().filter(|i| !i.is_empty()).unwrap_or_else(new_id));
        chunk.id = Some(id.clone());
        ended = chunk.chunk_position.as_deref() == Some("last");
        ctx.emit_message(&chunk).await;
        whole += chunk;
    }
    let id = id.unwrap_or_else(new_id);
    if !ended {
        let mut last = AiMessageChunk::text("").with_id(id.clone());
        last.chunk_position = Some("last".into());
        ctx.emit_message(&last).await;
    }
    let mut answer = whole.into_message();
    answer.id = Some(id);
    Ok(answer)
}
