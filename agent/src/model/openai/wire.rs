//! The JSON of OpenAI's `/v1/chat/completions`: the request body built from weir's messages and
//! tool specs, and the streamed `chat.completion.chunk` events read into [`AiMessageChunk`]s.

use crate::message::{AiMessageChunk, Content, Message, ToolCallChunk, UsageMetadata};
use crate::tool::ToolSpec;
use serde::Deserialize;
use serde_json::{json, Map, Value};

/// The request body: the model, the messages in OpenAI's roles (their multimodal blocks in
/// OpenAI's shapes, [`super::blocks`]), the tools as functions, and a streamed answer with
/// usage; or why a message cannot be sent, naming it and its block.
pub(super) fn request_body(
    model: &str,
    messages: &[Message],
    tools: &[ToolSpec],
    extra: &Map<String, Value>,
) -> Result<Value, String> {
    let messages = messages
        .iter()
        .enumerate()
        .map(|(i, m)| to_openai(m).map_err(|(block, why)| format!("messages[{i}].content[{block}]: {why}")))
        .collect::<Result<Vec<_>, _>>()?;
    let mut body = json!({
        "model": model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !tools.is_empty() {
        body["tools"] = tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
            .collect();
    }
    if let Value::Object(b) = &mut body {
        b.extend(extra.clone());
    }
    Ok(body)
}

/// A message's content as OpenAI takes it, or the index of the block it cannot take and why.
fn content_json(c: &Content) -> Result<Value, (usize, String)> {
    match c {
        Content::Text(t) => Ok(Value::String(t.clone())),
        Content::Blocks(blocks) => {
            let mut out = Vec::with_capacity(blocks.len());
            for (i, block) in blocks.iter().enumerate() {
                out.extend(super::blocks::to_openai(block).map_err(|why| (i, why))?);
            }
            Ok(Value::Array(out))
        }
    }
}

/// One message in OpenAI's form (`role`: system, user, assistant, tool), or the index of the
/// content block it cannot take and why.
fn to_openai(m: &Message) -> Result<Value, (usize, String)> {
    let mut out = match m {
        Message::System(s) => json!({"role": "system", "content": content_json(&s.content)?}),
        Message::Human(h) => json!({"role": "user", "content": content_json(&h.content)?}),
        Message::Tool(t) => {
            json!({"role": "tool", "tool_call_id": t.tool_call_id, "content": content_json(&t.content)?})
        }
        Message::Ai(a) => {
            let mut calls: Vec<Value> = a
                .tool_calls
                .iter()
                .map(|c| {
                    let args = Value::Object(c.args.clone()).to_string();
                    json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": args}})
                })
                .collect();
            calls.extend(a.invalid_tool_calls.iter().map(|c| {
                json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.args.clone().unwrap_or_default()}})
            }));
            let content = if a.content.is_empty() && !calls.is_empty() {
                Value::Null
            } else {
                content_json(&a.content)?
            };
            let mut v = json!({"role": "assistant", "content": content});
            if !calls.is_empty() {
                v["tool_calls"] = Value::Array(calls);
            }
            v
        }
    };
    let name = match m {
        Message::System(s) => s.name.as_ref(),
        Message::Human(h) => h.name.as_ref(),
        Message::Ai(a) => a.name.as_ref(),
        Message::Tool(_) => None,
    };
    if let Some(name) = name {
        out["name"] = Value::String(name.clone());
    }
    Ok(out)
}

#[derive(Deserialize)]
pub(super) struct Event {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Delta,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<CallDelta>,
}

#[derive(Deserialize)]
struct CallDelta {
    index: u32,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    total_tokens: u64,
}

impl Event {
    /// The chunk this event carries, or the provider's error object as text.
    pub(super) fn into_chunk(self) -> Result<AiMessageChunk, String> {
        if let Some(e) = self.error {
            return Err(e
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| e.to_string(), str::to_owned));
        }
        let mut chunk = AiMessageChunk {
            id: self.id,
            ..AiMessageChunk::default()
        };
        if let Some(model) = self.model {
            chunk
                .response_metadata
                .insert("model_name".into(), Value::String(model));
        }
        for choice in self.choices {
            if let Some(text) = choice.delta.content {
                chunk.content.extend(Content::Text(text));
            }
            for call in choice.delta.tool_calls {
                let (name, args) = call.function.map_or((None, None), |f| (f.name, f.arguments));
                chunk
                    .tool_call_chunks
                    .push(ToolCallChunk::new(call.index, call.id, name, args));
            }
            if let Some(reason) = choice.finish_reason {
                chunk
                    .response_metadata
                    .insert("finish_reason".into(), Value::String(reason));
            }
        }
        chunk.usage_metadata = self.usage.map(|u| UsageMetadata {
            input_tokens: u.prompt_tokens,
            output_tokens: u.completion_tokens,
            total_tokens: u.total_tokens,
        });
        Ok(chunk)
    }
}

/// Splits complete server-sent events off the front of `buf`, returning each event's `data`
/// (its `data:` lines joined); an incomplete event stays in `buf`.
pub(super) fn take_events(buf: &mut String) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        let normalized_end = buf
            .find("\n\n")
            .map(|i| (i, 2))
            .or_else(|| buf.find("\r\n\r\n").map(|i| (i, 4)));
        let Some((end, sep)) = normalized_end else { break };
        let event: String = buf.drain(..end + sep).collect();
        let data: Vec<&str> = event
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        if !data.is_empty() {
            out.push(data.join("\n"));
        }
    }
    out
}
