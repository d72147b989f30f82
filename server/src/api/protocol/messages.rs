//! A run's chat messages as the protocol's `messages` channel carries them (LangChain's
//! `_compat_bridge`): each message a `message-start`, then for each of its content blocks a
//! `content-block-start`, its `content-block-delta`s and a `content-block-finish`, then a
//! `message-finish` with its usage and response metadata. A model's streamed chunks (the
//! `messages-tuple` events of weir's runs, LangChain's `AIMessageChunk` dicts) become deltas as
//! they come, and the message finishes at its chunk marked `"chunk_position": "last"`; a message a
//! node returned whole is replayed as the same sequence at once. Tool messages are not replayed:
//! the `tools` channel carries tool results.

use super::state::{content_blocks, parse_args};
use serde_json::{json, Map, Value};

/// Where a block sits in its message across chunks: its `index` when it has one, else its type
/// and position.
#[derive(Debug, Clone, PartialEq)]
enum BlockKey {
    Index(Value),
    At(String, usize),
}

/// A block being streamed: its key, its index on the wire, and what it holds so far.
struct OpenBlock {
    key: BlockKey,
    wire: usize,
    so_far: Value,
}

/// A streamed message not finished yet.
#[derive(Default)]
struct OpenMessage {
    blocks: Vec<OpenBlock>,
    usage: Option<Value>,
    response_metadata: Map<String, Value>,
}

/// The message events of one run.
#[derive(Default)]
pub(super) struct MessageEvents {
    /// The streamed messages not finished, by id, in the order they started.
    open: Vec<(String, OpenMessage)>,
}

impl MessageEvents {
    /// The protocol's events for one message chunk, or one whole message, a node emitted.
    pub(super) fn take(&mut self, message: &Value) -> Vec<Value> {
        let kind = message.get("type").and_then(Value::as_str).unwrap_or_default();
        if kind.ends_with("MessageChunk") {
            self.chunk(message)
        } else if matches!(kind, "tool" | "ToolMessage" | "remove" | "RemoveMessage") {
            Vec::new()
        } else {
            whole(message)
        }
    }

    fn chunk(&mut self, chunk: &Value) -> Vec<Value> {
        let id = chunk.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
        let mut out = Vec::new();
        let at = match self.open.iter().position(|(open, _)| *open == id) {
            Some(at) => at,
            None => {
                out.push(start(chunk, &id));
                self.open.push((id, OpenMessage::default()));
                self.open.len() - 1
            }
        };
        let open = &mut self.open[at].1;
        if let Some(Value::Object(meta)) = chunk.get("response_metadata") {
            open.response_metadata.extend(meta.clone());
        }
        for (key, block) in blocks(chunk) {
            let wire = match open.blocks.iter_mut().find(|b| b.key == key) {
                Some(b) => {
                    accumulate(&mut b.so_far, &block);
                    b.wire
                }
                None => {
                    let wire = open.blocks.len();
                    out.push(json!({"event": "content-block-start", "index": wire, "content": skeleton(&block)}));
                    open.blocks.push(OpenBlock {
                        key,
                        wire,
                        so_far: block.clone(),
                    });
                    wire
                }
            };
            if let Some(delta) = delta(&block) {
                out.push(json!({"event": "content-block-delta", "index": wire, "delta": delta}));
            }
        }
        if let Some(usage @ Value::Object(_)) = chunk.get("usage_metadata") {
            add_usage(&mut open.usage, usage);
        }
        if chunk.get("chunk_position").and_then(Value::as_str) == Some("last") {
            let (_, open) = self.open.remove(at);
            for block in &open.blocks {
                out.push(
                    json!({"event": "content-block-finish", "index": block.wire, "content": finalize(&block.so_far)}),
                );
            }
            out.push(finish(open.usage.as_ref(), &open.response_metadata));
        }
        out
    }
}

/// A message returned whole, replayed as if streamed: one delta a block.
fn whole(message: &Value) -> Vec<Value> {
    let id = message.get("id").and_then(Value::as_str).unwrap_or_default();
    let mut out = vec![start(message, id)];
    for (wire, (_, block)) in blocks(message).into_iter().enumerate() {
        out.push(json!({"event": "content-block-start", "index": wire, "content": skeleton(&block)}));
        if let Some(delta) = delta(&block) {
            out.push(json!({"event": "content-block-delta", "index": wire, "delta": delta}));
        }
        out.push(json!({"event": "content-block-finish", "index": wire, "content": finalize(&block)}));
    }
    let meta = message
        .get("response_metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    out.push(finish(message.get("usage_metadata").filter(|u| u.is_object()), &meta));
    out
}

/// `message-start`: the author's role, the message's id, and the provider and model when the
/// response metadata names them.
fn start(message: &Value, id: &str) -> Value {
    let role = match message.get("type").and_then(Value::as_str).unwrap_or_default() {
        "human" | "HumanMessage" | "HumanMessageChunk" => "human",
        "system" | "SystemMessage" | "SystemMessageChunk" => "system",
        _ => "ai",
    };
    let mut out = json!({"event": "message-start", "role": role, "id": id});
    let meta = message.get("response_metadata");
    let mut hints = Map::new();
    if let Some(provider) = meta.and_then(|m| m.get("model_provider")) {
        hints.insert("provider".into(), provider.clone());
    }
    if let Some(model) = meta.and_then(|m| m.get("model_name")) {
        hints.insert("model".into(), model.clone());
    }
    if !hints.is_empty() {
        out["metadata"] = Value::Object(hints);
    }
    out
}

/// `message-finish`: the usage summed over the chunks and the response metadata, when any.
fn finish(usage: Option<&Value>, response_metadata: &Map<String, Value>) -> Value {
    let mut out = json!({"event": "message-finish"});
    if let Some(usage) = usage {
        out["usage"] = usage.clone();
    }
    if !response_metadata.is_empty() {
        out["metadata"] = Value::Object(response_metadata.clone());
    }
    out
}

/// A message's (or chunk's) content blocks with their keys: its text or content list, then its
/// tool-call fragments (a chunk: the calls a chunk also carries are its fragments parsed on their
/// own, not calls yet) or its tool calls, valid and not (a whole message).
fn blocks(message: &Value) -> Vec<(BlockKey, Value)> {
    let is_chunk = message
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| t.ends_with("MessageChunk"));
    let mut found = Vec::new();
    match message.get("content") {
        Some(Value::String(text)) if !text.is_empty() => found.push(json!({"type": "text", "text": text})),
        Some(Value::Array(entries)) => found.extend(content_blocks(entries)),
        _ => {}
    }
    let calls = |key: &str, wanted: bool| {
        let list = message.get(key).and_then(Value::as_array).filter(|_| wanted);
        list.cloned().unwrap_or_default()
    };
    for fragment in calls("tool_call_chunks", is_chunk) {
        found.push(json!({
            "type": "tool_call_chunk", "id": fragment.get("id"), "name": fragment.get("name"),
            "args": fragment.get("args").and_then(Value::as_str).unwrap_or_default(),
            "index": fragment.get("index"),
        }));
    }
    for call in calls("tool_calls", !is_chunk) {
        found.push(
            json!({"type": "tool_call", "id": call.get("id"), "name": call.get("name"), "args": call.get("args")}),
        );
    }
    for call in calls("invalid_tool_calls", !is_chunk) {
        let mut block = json!({"type": "invalid_tool_call"});
        for key in ["id", "name", "args", "error"] {
            if let Some(v) = call.get(key).filter(|v| !v.is_null()) {
                block[key] = v.clone();
            }
        }
        found.push(block);
    }
    found
        .into_iter()
        .enumerate()
        .map(|(at, block)| {
            let key = match block.get("index").filter(|i| !i.is_null()) {
                Some(index) => BlockKey::Index(index.clone()),
                None => BlockKey::At(kind(&block).to_owned(), at),
            };
            (key, block)
        })
        .collect()
}

fn kind(block: &Value) -> &str {
    block.get("type").and_then(Value::as_str).unwrap_or_default()
}

/// What `content-block-start` shows of a block: text and reasoning empty, a tool-call fragment
/// with its id, name and index but no arguments, other blocks without their heavy fields.
fn skeleton(block: &Value) -> Value {
    let mut out = block.clone();
    let Some(map) = out.as_object_mut() else { return out };
    match kind(block) {
        "text" => {
            map.retain(|k, _| !matches!(k.as_str(), "index" | "annotations"));
            map.insert("text".into(), json!(""));
        }
        "reasoning" => {
            map.remove("index");
            map.insert("reasoning".into(), json!(""));
        }
        "tool_call_chunk" | "server_tool_call_chunk" => {
            map.insert("args".into(), json!(""));
            map.retain(|_, v| !v.is_null());
        }
        other => {
            map.retain(|k, _| !matches!(k.as_str(), "args" | "data" | "output" | "transcript" | "value"));
            if matches!(other, "tool_call" | "server_tool_call") {
                map.insert("args".into(), json!({}));
            } else if other == "non_standard" {
                map.insert("value".into(), json!({}));
            }
        }
    }
    out
}

/// The delta a block slice carries, if any: new text, reasoning, or tool-call argument text.
fn delta(block: &Value) -> Option<Value> {
    let non_empty = |key: &str| block.get(key).and_then(Value::as_str).filter(|s| !s.is_empty());
    match kind(block) {
        "text" => non_empty("text").map(|t| json!({"type": "text-delta", "text": t})),
        "reasoning" => non_empty("reasoning").map(|r| json!({"type": "reasoning-delta", "reasoning": r})),
        "tool_call_chunk" | "server_tool_call_chunk" => {
            non_empty("args").map(|a| json!({"type": "tool-call-delta", "args": a}))
        }
        _ => None,
    }
}

/// Merges the later slice `later` of a block into what it holds so far.
fn accumulate(so_far: &mut Value, later: &Value) {
    let append = |so_far: &mut Value, key: &str| {
        let more = later.get(key).and_then(Value::as_str).unwrap_or_default();
        let text = format!("{}{more}", so_far.get(key).and_then(Value::as_str).unwrap_or_default());
        so_far[key] = json!(text);
    };
    match (kind(so_far), kind(later)) {
        ("text", "text") => append(so_far, "text"),
        ("reasoning", "reasoning") => append(so_far, "reasoning"),
        (a, b) if a == b && (a == "tool_call_chunk" || a == "server_tool_call_chunk") => {
            append(so_far, "args");
            for key in ["id", "name"] {
                if let Some(v) = later.get(key).filter(|v| !v.is_null()) {
                    so_far[key] = v.clone();
                }
            }
            return;
        }
        _ => {
            *so_far = later.clone();
            return;
        }
    }
    // Text and reasoning: late fields (an id, annotations) join the block.
    if let (Some(to), Some(from)) = (so_far.as_object_mut(), later.as_object()) {
        for (key, v) in from {
            if !matches!(key.as_str(), "type" | "text" | "reasoning") && !v.is_null() {
                to.insert(key.clone(), v.clone());
            }
        }
    }
}

/// A block as `content-block-finish` shows it: a tool-call fragment's joined arguments parsed
/// into a `tool_call`, or an `invalid_tool_call` when they are not JSON.
fn finalize(block: &Value) -> Value {
    if kind(block) != "tool_call_chunk" {
        return block.clone();
    }
    let (id, name) = (block.get("id").cloned(), block.get("name").cloned());
    let text = block.get("args").and_then(Value::as_str).unwrap_or_default();
    match parse_args(Some(&json!(text))) {
        Ok(args) => {
            json!({"type": "tool_call", "id": id.unwrap_or(json!("")), "name": name.unwrap_or(json!("")), "args": args})
        }
        Err(raw) => json!({
            "type": "invalid_tool_call", "id": id, "name": name, "args": raw,
            "error": "Failed to parse tool call arguments as JSON",
        }),
    }
}

/// Adds a chunk's token counts to the message's.
fn add_usage(total: &mut Option<Value>, usage: &Value) {
    let Some(sum) = total else {
        *total = Some(usage.clone());
        return;
    };
    for key in ["input_tokens", "output_tokens", "total_tokens"] {
        if let Some(n) = usage.get(key).and_then(Value::as_i64) {
            sum[key] = json!(sum.get(key).and_then(Value::as_i64).unwrap_or(0) + n);
        }
    }
    for key in ["input_token_details", "output_token_details"] {
        if let Some(Value::Object(details)) = usage.get(key) {
            if !sum.get(key).is_some_and(Value::is_object) {
                sum[key] = json!({});
            }
            if let Some(to) = sum[key].as_object_mut() {
                to.extend(details.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(out: &[Value]) -> Vec<&str> {
        out.iter().map(|e| e["event"].as_str().unwrap()).collect()
    }

    #[test]
    fn a_streamed_answer_with_a_tool_call_is_started_delta_by_delta_and_finished_at_its_last_chunk() {
        let mut m = MessageEvents::default();
        let first = m.take(&json!({
            "type": "AIMessageChunk", "id": "run-1", "content": "Hel",
            "response_metadata": {"model_provider": "openai", "model_name": "gpt"},
        }));
        assert_eq!(
            first,
            vec![
                json!({"event": "message-start", "role": "ai", "id": "run-1", "metadata": {"provider": "openai", "model": "gpt"}}),
                json!({"event": "content-block-start", "index": 0, "content": {"type": "text", "text": ""}}),
                json!({"event": "content-block-delta", "index": 0, "delta": {"type": "text-delta", "text": "Hel"}}),
            ]
        );
        // A chunk also carries its fragments parsed on their own (`tool_calls`,
        // `invalid_tool_calls`, as LangChain's chunks do): not blocks of their own.
        let second = m.take(&json!({"type": "AIMessageChunk", "id": "run-1", "content": "lo",
            "tool_call_chunks": [{"id": "c1", "name": "add", "args": "{\"a\":", "index": 0}],
            "tool_calls": [], "invalid_tool_calls": [{"id": "c1", "name": "add", "args": "{\"a\":", "error": "e"}]}));
        assert_eq!(
            events(&second),
            ["content-block-delta", "content-block-start", "content-block-delta"]
        );
        assert_eq!(
            second[1]["content"],
            json!({"type": "tool_call_chunk", "id": "c1", "name": "add", "args": "", "index": 0})
        );
        assert_eq!(
            second[2]["delta"],
            json!({"type": "tool-call-delta", "args": "{\"a\":"})
        );
        let last = m.take(&json!({"type": "AIMessageChunk", "id": "run-1", "content": "",
            "tool_call_chunks": [{"id": null, "name": null, "args": " 1}", "index": 0}],
            "usage_metadata": {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5},
            "response_metadata": {"finish_reason": "tool_calls"}, "chunk_position": "last"}));
        assert_eq!(
            events(&last),
            [
                "content-block-delta",
                "content-block-finish",
                "content-block-finish",
                "message-finish"
            ]
        );
        assert_eq!(last[1]["content"], json!({"type": "text", "text": "Hello"}));
        assert_eq!(
            last[2],
            json!({"event": "content-block-finish", "index": 1,
            "content": {"type": "tool_call", "id": "c1", "name": "add", "args": {"a": 1}}})
        );
        assert_eq!(last[3]["usage"]["total_tokens"], 5);
        assert_eq!(last[3]["metadata"]["finish_reason"], "tool_calls");
        assert!(m.open.is_empty());
    }

    #[test]
    fn a_whole_message_is_replayed_at_once_and_a_tool_message_not_at_all() {
        let mut m = MessageEvents::default();
        let out = m.take(&json!({"type": "ai", "id": "a1", "content": "done",
            "tool_calls": [{"id": "c", "name": "f", "args": {"x": 1}}]}));
        assert_eq!(
            events(&out),
            [
                "message-start",
                "content-block-start",
                "content-block-delta",
                "content-block-finish",
                "content-block-start",
                "content-block-finish",
                "message-finish"
            ]
        );
        assert_eq!(
            out[4]["content"],
            json!({"type": "tool_call", "id": "c", "name": "f", "args": {}})
        );
        assert_eq!(out[5]["content"]["args"], json!({"x": 1}));
        assert_eq!(
            m.take(&json!({"type": "human", "id": "h", "content": "hi"}))[0]["role"],
            "human"
        );
        assert!(m
            .take(&json!({"type": "tool", "content": "3", "tool_call_id": "c"}))
            .is_empty());
    }

    #[test]
    fn arguments_that_do_not_parse_finish_as_an_invalid_tool_call() {
        let mut m = MessageEvents::default();
        m.take(&json!({"type": "AIMessageChunk", "id": "r", "content": "",
            "tool_call_chunks": [{"id": "c", "name": "f", "args": "{oops", "index": 0}]}));
        let out = m.take(&json!({"type": "AIMessageChunk", "id": "r", "content": "", "chunk_position": "last"}));
        assert_eq!(out[0]["content"]["type"], "invalid_tool_call");
        assert_eq!(out[0]["content"]["args"], "{oops");
    }
}
