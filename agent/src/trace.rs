//! The `tracing` spans of the agent layer, named and attributed as OpenTelemetry's GenAI semantic
//! conventions say, so that an OTLP backend shows them as model and tool calls: a chat model's
//! call (`chat {model}`, [`chat`]) and a tool's (`execute_tool {name}`, [`ToolSpan`]). Each is a
//! child of the span current where it starts: inside a graph, the `weir.task` span of the node
//! that made the call.
//!
//! The dynamic span names go through the `otel.name` field, which `tracing-opentelemetry` takes
//! as the span's name; the `tracing` names are the fixed `gen_ai.chat` and
//! `gen_ai.execute_tool`. Nothing is formatted, and no chunk inspected, when no subscriber
//! listens.

use crate::message::{AiMessageChunk, UsageMetadata};
use crate::model::{ChunkStream, ModelError};
use crate::tool::ToolError;
use futures::Stream;
use serde_json::Value;
use std::pin::Pin;
use std::task::{Context, Poll};
use tracing::field::{debug, display, Empty};
use tracing::Span;

/// `chunks`, the streamed answer of `model` from `provider` (`gen_ai.provider.name`, such as
/// `openai`), in a `chat {model}` span that lasts until the stream ends or is dropped and records
/// the answer's model, id, finish reasons and token usage, or the error that ended it.
pub(crate) fn chat<'a>(provider: &'static str, model: &'a str, chunks: ChunkStream<'a>) -> ChunkStream<'a> {
    let span = tracing::info_span!(
        "gen_ai.chat",
        otel.name = %format_args!("chat {model}"),
        otel.kind = "client",
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider,
        // The attribute's name before `gen_ai.provider.name` replaced it, which many backends
        // still read.
        gen_ai.system = provider,
        gen_ai.request.model = model,
        gen_ai.response.model = Empty,
        gen_ai.response.id = Empty,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        error.type = Empty,
    );
    if span.is_disabled() {
        return chunks;
    }
    Box::pin(Chat {
        chunks,
        span,
        seen: Seen::default(),
        ended: false,
    })
}

/// What the chunks of an answer said so far.
#[derive(Default)]
struct Seen {
    model: Option<String>,
    id: Option<String>,
    finish_reasons: Vec<String>,
    usage: Option<UsageMetadata>,
}

impl Seen {
    fn note(&mut self, chunk: &AiMessageChunk) {
        let text = |key: &str| chunk.response_metadata.get(key).and_then(Value::as_str);
        // OpenAI names the model in every chunk: copied once.
        if let Some(model) = text("model_name").filter(|m| self.model.as_deref() != Some(*m)) {
            self.model = Some(model.to_owned());
        }
        if let Some(reason) = text("finish_reason") {
            if !self.finish_reasons.iter().any(|r| r == reason) {
                self.finish_reasons.push(reason.to_owned());
            }
        }
        if let Some(id) = chunk.id.as_deref().filter(|id| !id.is_empty()) {
            self.id.get_or_insert_with(|| id.to_owned());
        }
        if let Some(usage) = &chunk.usage_metadata {
            self.usage = Some(match self.usage.take() {
                Some(before) => before + usage.clone(),
                None => usage.clone(),
            });
        }
    }
}

/// A model's answer streaming in its span.
struct Chat<'a> {
    chunks: ChunkStream<'a>,
    span: Span,
    seen: Seen,
    ended: bool,
}

impl Chat<'_> {
    fn finish(&mut self, error: Option<&ModelError>) {
        self.ended = true;
        let span = &self.span;
        let seen = &self.seen;
        span.record("gen_ai.response.model", seen.model.as_deref());
        span.record("gen_ai.response.id", seen.id.as_deref());
        if !seen.finish_reasons.is_empty() {
            // A string array in the conventions; a `tracing` field holds its debug form.
            span.record("gen_ai.response.finish_reasons", debug(&seen.finish_reasons));
        }
        if let Some(usage) = &seen.usage {
            // Signed: an unsigned field would be exported as text.
            span.record("gen_ai.usage.input_tokens", usage.input_tokens as i64);
            span.record("gen_ai.usage.output_tokens", usage.output_tokens as i64);
        }
        match error {
            None => {
                span.record("otel.status_code", "ok");
            }
            Some(e) => {
                span.record("error.type", display(e.type_name()));
                span.record("otel.status_code", "error");
                span.record("otel.status_description", display(e));
            }
        }
    }
}

impl Stream for Chat<'_> {
    type Item = Result<AiMessageChunk, ModelError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(None);
        }
        let polled = {
            let _in = this.span.enter();
            this.chunks.as_mut().poll_next(cx)
        };
        match &polled {
            Poll::Ready(Some(Ok(chunk))) => this.seen.note(chunk),
            Poll::Ready(Some(Err(e))) => this.finish(Some(e)),
            Poll::Ready(None) => this.finish(None),
            Poll::Pending => {}
        }
        polled
    }
}

/// The span of one tool call: `execute_tool {name}`, with the tool's name and the call's id.
pub(crate) struct ToolSpan(Span);

impl ToolSpan {
    /// Opens the span of call `id` of tool `name`, as a child of the current span.
    pub(crate) fn new(name: &str, id: &str) -> Self {
        Self(tracing::info_span!(
            "gen_ai.execute_tool",
            otel.name = %format_args!("execute_tool {name}"),
            otel.kind = "internal",
            otel.status_code = Empty,
            otel.status_description = Empty,
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = name,
            gen_ai.tool.call.id = id,
            gen_ai.tool.type = "function",
            error.type = Empty,
        ))
    }

    /// The span, to run the call in.
    pub(crate) fn span(&self) -> &Span {
        &self.0
    }

    /// Records that the call returned.
    pub(crate) fn ok(&self) {
        self.0.record("otel.status_code", "ok");
    }

    /// Records that the call failed with `e`, its class being `kind` (`error.type`): an
    /// interrupt is not a failure, and leaves the status unset.
    pub(crate) fn failed(&self, kind: &str, e: &dyn std::fmt::Display) {
        if self.0.is_disabled() {
            return;
        }
        self.0.record("error.type", kind);
        self.0.record("otel.status_code", "error");
        self.0.record("otel.status_description", display(e));
    }

    /// Records how the tool's own call ended.
    pub(crate) fn record(&self, result: &Result<crate::message::Content, ToolError>) {
        match result {
            Ok(_) => self.ok(),
            Err(e) if e.is_interrupt() => {}
            Err(e) if e.is_invalid_args() => self.failed("invalid_arguments", e),
            Err(e) => self.failed("tool_error", e),
        }
    }
}
