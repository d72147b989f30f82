//! The OpenAI-compatible chat model: `POST {base}/chat/completions` with `stream: true`, read
//! as server-sent events. Works with OpenAI and with servers that speak its API (vLLM,
//! llama.cpp, Ollama's `/v1`).

mod blocks;
#[cfg(feature = "openai-embeddings")]
mod embed;
mod wire;

#[cfg(feature = "openai-embeddings")]
pub use embed::OpenAiEmbeddings;

use super::{ChatModel, ChunkStream, ModelError, ResponseFormat};
use crate::message::{AiMessage, AiMessageChunk, Message};
use crate::tool::ToolSpec;
use futures::future::BoxFuture;
use futures::stream::{self, BoxStream, StreamExt};
use serde_json::{Map, Value};
use std::collections::VecDeque;
use std::time::Duration;

/// A chat model behind an OpenAI-compatible `/v1/chat/completions` endpoint.
///
/// The base URL and key come from [`base_url`](Self::base_url) and
/// [`api_key`](Self::api_key), or else from `OPENAI_BASE_URL` (default
/// `https://api.openai.com/v1`) and `OPENAI_API_KEY`. [`timeout`](Self::timeout) bounds the wait
/// for the response and for each next piece of the stream. An HTTP error, a timeout, a stream
/// cut short or an unreadable event is a [`ModelError`] naming the model and the status; tool
/// calls whose arguments are not JSON arrive as the answer's `invalid_tool_calls`.
///
/// ```no_run
/// use weir_agent::model::{ChatModel, OpenAiChat};
/// use weir_agent::message::Message;
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// let model = OpenAiChat::new("gpt-4o-mini").base_url("http://127.0.0.1:8000/v1");
/// let answer = model.invoke(&[Message::human("hi")], &[]).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiChat {
    model: String,
    base_url: String,
    api_key: Option<String>,
    timeout: Duration,
    extra: Map<String, Value>,
    client: reqwest::Client,
}

impl OpenAiChat {
    /// The model `model` (as the endpoint names it), configured from the environment.
    pub fn new(model: impl Into<String>) -> Self {
        let base_url = std::env::var("OPENAI_BASE_URL").unwrap_or_else(|_| "https://api.openai.com/v1".into());
        Self {
            model: model.into(),
            base_url,
            api_key: std::env::var("OPENAI_API_KEY").ok().filter(|k| !k.is_empty()),
            timeout: Duration::from_secs(60),
            extra: Map::new(),
            client: reqwest::Client::new(),
        }
    }

    /// The endpoint's base URL, up to and including `/v1`.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into().trim_end_matches('/').to_owned();
        self
    }

    /// The bearer key sent with each request.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// How long to wait for the response, and then for each next piece of the stream.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = limit;
        self
    }

    /// Embeddings from the same endpoint (base URL, key, timeout and HTTP client) with the
    /// embedding model `model`.
    #[cfg(feature = "openai-embeddings")]
    pub fn embeddings(&self, model: impl Into<String>) -> OpenAiEmbeddings {
        OpenAiEmbeddings::with_client(
            model.into(),
            self.base_url.clone(),
            self.api_key.clone(),
            self.timeout,
            self.client.clone(),
        )
    }

    /// A field added to every request body (`temperature`, `max_tokens`, ..).
    pub fn param(mut self, key: impl Into<String>, value: Value) -> Self {
        self.extra.insert(key.into(), value);
        self
    }

    async fn open(&self, messages: &[Message], tools: &[ToolSpec]) -> Result<(u16, reqwest::Response), ModelError> {
        let body = wire::request_body(&self.model, messages, tools, &self.extra)
            .map_err(|why| ModelError::input(&self.model, why))?;
        let mut req = self
            .client
            .post(format!("{}/chat/completions", self.base_url))
            .json(&body);
        if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
        let resp = tokio::time::timeout(self.timeout, req.send())
            .await
            .map_err(|_| ModelError::timeout(&self.model, self.timeout, None))?
            .map_err(|e| ModelError::transport(&self.model, e))?;
        let status = resp.status().as_u16();
        if !resp.status().is_success() {
            let body = tokio::time::timeout(self.timeout, resp.text())
                .await
                .ok()
                .and_then(Result::ok);
            return Err(ModelError::status_error(&self.model, status, body.unwrap_or_default()));
        }
        Ok((status, resp))
    }
}

/// Where a response's stream is.
struct Reading {
    status: u16,
    bytes: BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    raw: Vec<u8>,
    buf: String,
    ready: VecDeque<AiMessageChunk>,
    done: bool,
}

impl OpenAiChat {
    /// The next chunk of the stream, `None` after `[DONE]`.
    async fn next(&self, r: &mut Reading) -> Option<Result<AiMessageChunk, ModelError>> {
        loop {
            if let Some(c) = r.ready.pop_front() {
                return Some(Ok(c));
            }
            if r.done {
                return None;
            }
            let piece = match tokio::time::timeout(self.timeout, r.bytes.next()).await {
                Err(_) => return Some(Err(ModelError::timeout(&self.model, self.timeout, Some(r.status)))),
                Ok(None) => return Some(Err(ModelError::truncated(&self.model, r.status))),
                Ok(Some(Err(e))) => return Some(Err(ModelError::transport(&self.model, e))),
                Ok(Some(Ok(b))) => b,
            };
            // A character may be split between two pieces: keep its first bytes for the next.
            r.raw.extend_from_slice(&piece);
            let valid = match std::str::from_utf8(&r.raw) {
                Ok(s) => s.len(),
                Err(e) if e.error_len().is_none() => e.valid_up_to(),
                Err(e) => return Some(Err(ModelError::malformed(&self.model, r.status, e))),
            };
            let text: Vec<u8> = r.raw.drain(..valid).collect();
            r.buf.push_str(&String::from_utf8_lossy(&text));
            for data in wire::take_events(&mut r.buf) {
                if data.trim() == "[DONE]" {
                    r.done = true;
                    break;
                }
                let event: wire::Event = match serde_json::from_str(&data) {
                    Ok(e) => e,
                    Err(e) => return Some(Err(ModelError::malformed(&self.model, r.status, e))),
                };
                match event.into_chunk() {
                    Ok(c) => r.ready.push_back(c),
                    Err(e) => return Some(Err(ModelError::malformed(&self.model, r.status, e))),
                }
            }
        }
    }
}

impl ChatModel for OpenAiChat {
    fn name(&self) -> &str {
        &self.model
    }

    fn stream<'a>(&'a self, messages: &'a [Message], tools: &'a [ToolSpec]) -> ChunkStream<'a> {
        enum Phase {
            Start,
            Reading(Box<Reading>),
            Over,
        }
        let s = stream::unfold(Phase::Start, move |phase| async move {
            let mut r = match phase {
                Phase::Over => return None,
                Phase::Reading(r) => r,
                Phase::Start => match self.open(messages, tools).await {
                    Err(e) => return Some((Err(e), Phase::Over)),
                    Ok((status, resp)) => Box::new(Reading {
                        status,
                        bytes: resp.bytes_stream().boxed(),
                        raw: Vec::new(),
                        buf: String::new(),
                        ready: VecDeque::new(),
                        done: false,
                    }),
                },
            };
            match self.next(&mut r).await {
                None => None,
                Some(Err(e)) => Some((Err(e), Phase::Over)),
                Some(Ok(c)) => Some((Ok(c), Phase::Reading(r))),
            }
        });
        crate::trace::chat("openai", &self.model, Box::pin(s))
    }

    /// Asks with OpenAI's `response_format` of type `json_schema` set to `format`.
    fn invoke_structured<'a>(
        &'a self,
        messages: &'a [Message],
        format: &'a ResponseFormat,
    ) -> BoxFuture<'a, Result<AiMessage, ModelError>> {
        Box::pin(async move {
            let asking = self.clone().param("response_format", format.openai());
            asking.invoke(messages, &[]).await
        })
    }
}
