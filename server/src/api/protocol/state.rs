//! The state as the protocol's `values` and `updates` events show it (LangGraph's
//! `state_normalizers.py`): every message, under a `messages` key or in any list, in the
//! protocol's shape (`type` `ai`/`human`/`system`/`tool`, content as protocol content blocks,
//! tool calls as `tool_call` / `invalid_tool_call` blocks, none of LangChain's provider
//! `additional_kwargs`), and no `__interrupt__` key at any depth (interrupts go out on the `input`
//! channel instead).

use serde_json::{json, Map, Value};

/// The content block types the protocol takes as they are.
const PROTOCOL_BLOCKS: &[&str] = &[
    "text",
    "reasoning",
    "tool_call",
    "tool_call_chunk",
    "invalid_tool_call",
    "server_tool_call",
    "server_tool_call_chunk",
    "server_tool_call_result",
    "image",
    "audio",
    "video",
    "file",
    "non_standard",
];

/// `value` with its messages in the protocol's shape and no `__interrupt__` keys.
pub(super) fn normalize_state(value: Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|item| {
                    if is_message(&item) {
                        normalize_message(item)
                    } else {
                        normalize_state(item)
                    }
                })
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(key, _)| key != "__interrupt__")
                .map(|(key, entry)| {
                    let entry = match entry {
                        Value::Array(items) if key == "messages" => Value::Array(
                            items
                                .into_iter()
                                .map(|m| if is_message(&m) { normalize_message(m) } else { m })
                                .collect(),
                        ),
                        other => normalize_state(other),
                    };
                    (key, entry)
                })
                .collect(),
        ),
        other => other,
    }
}

/// A message's `type` in the protocol's words: `assistant` is `ai`, `user` is `human`.
fn message_type(value: &Value) -> Option<&str> {
    match value.as_str()? {
        "assistant" => Some("ai"),
        "user" => Some("human"),
        other => Some(other),
    }
}

fn is_message(value: &Value) -> bool {
    value
        .get("type")
        .and_then(message_type)
        .is_some_and(|t| matches!(t, "human" | "ai" | "system" | "tool" | "function" | "remove"))
}

/// One message in the protocol's shape.
fn normalize_message(value: Value) -> Value {
    let Value::Object(m) = value else { return value };
    let Some(kind) = m.get("type").and_then(message_type).map(str::to_owned) else {
        return Value::Object(m);
    };
    let mut out = Map::new();
    out.insert("type".into(), json!(kind));
    let content = m.get("content").cloned().unwrap_or_else(|| json!(""));
    out.insert("content".into(), normalize_content(content));
    for key in ["id", "name"] {
        if let Some(v @ Value::String(_)) = m.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    if matches!(kind.as_str(), "ai" | "human") {
        if let Some(v @ Value::Bool(_)) = m.get("example") {
            out.insert("example".into(), v.clone());
        }
    }
    if let Some(meta @ Value::Object(o)) = m.get("response_metadata") {
        if !o.is_empty() {
            out.insert("response_metadata".into(), meta.clone());
        }
    }
    if kind == "tool" {
        if let Some(v @ Value::String(_)) = m.get("tool_call_id") {
            out.insert("tool_call_id".into(), v.clone());
        }
        if let Some(v) = m.get("status").filter(|s| *s == "success" || *s == "error") {
            out.insert("status".into(), v.clone());
        }
        if let Some(v) = m.get("artifact") {
            out.insert("artifact".into(), v.clone());
        }
    }
    if kind == "ai" {
        let raw_calls = m
            .get("tool_calls")
            .filter(|c| c.as_array().is_some_and(|a| !a.is_empty()))
            .or_else(|| m.get("additional_kwargs").and_then(|k| k.get("tool_calls")));
        let (calls, invalid_from_calls) = tool_calls(raw_calls);
        let invalid = match m.get("invalid_tool_calls") {
            Some(Value::Array(list)) if !list.is_empty() => invalid_tool_calls(list),
            _ => invalid_from_calls,
        };
        if !calls.is_empty() {
            out.insert("tool_calls".into(), Value::Array(calls));
        }
        if !invalid.is_empty() {
            out.insert("invalid_tool_calls".into(), Value::Array(invalid));
        }
    }
    Value::Object(out)
}

/// A message's content: text stays text; a list's entries become protocol content blocks.
fn normalize_content(content: Value) -> Value {
    let Value::Array(entries) = content else {
        return content;
    };
    let blocks = content_blocks(&entries);
    if blocks.is_empty() {
        Value::Array(entries)
    } else {
        Value::Array(blocks)
    }
}

/// A content list's entries as protocol content blocks: text as `text` blocks, each block as
/// [`normalize_block`] makes it (one without a type left out).
pub(super) fn content_blocks(entries: &[Value]) -> Vec<Value> {
    entries
        .iter()
        .filter_map(|entry| match entry {
            Value::String(text) => Some(json!({"type": "text", "text": text})),
            other => normalize_block(other),
        })
        .collect()
}

/// One content block in the protocol's shape: its own types as they are, OpenAI's
/// `image_url` and `input_audio` as `image` and `audio`, anything else `non_standard`.
fn normalize_block(value: &Value) -> Option<Value> {
    let kind = value.get("type")?.as_str()?;
    if PROTOCOL_BLOCKS.contains(&kind) {
        return Some(value.clone());
    }
    match kind {
        "image_url" => {
            let image = value.get("image_url")?;
            let url = image.as_str().or_else(|| image.get("url").and_then(Value::as_str))?;
            Some(json!({"type": "image", "url": url}))
        }
        "input_audio" => {
            let audio = value.get("input_audio")?.as_object()?;
            let mut out = Map::new();
            out.insert("type".into(), json!("audio"));
            for key in ["data", "mime_type"] {
                if let Some(v @ Value::String(_)) = audio.get(key) {
                    out.insert(key.into(), v.clone());
                }
            }
            Some(Value::Object(out))
        }
        _ => Some(json!({"type": "non_standard", "value": value})),
    }
}

/// A tool call's id and name, from LangChain's form or OpenAI's (`function.name`).
fn identity(call: &Map<String, Value>) -> (Option<&Value>, Option<&Value>) {
    let id = call.get("id").filter(|v| v.is_string());
    let name = call.get("name").filter(|v| v.is_string()).or_else(|| {
        call.get("function")
            .and_then(|f| f.get("name"))
            .filter(|v| v.is_string())
    });
    (id, name)
}

/// A message's tool calls, split into the valid ones (`tool_call` blocks) and those without a
/// name or with arguments that are not JSON (`invalid_tool_call`).
fn tool_calls(raw: Option<&Value>) -> (Vec<Value>, Vec<Value>) {
    let (mut calls, mut invalid) = (Vec::new(), Vec::new());
    for call in raw.and_then(Value::as_array).into_iter().flatten() {
        let Some(call) = call.as_object() else { continue };
        let (id, name) = identity(call);
        let raw_args = call
            .get("args")
            .or_else(|| call.get("function").and_then(|f| f.get("arguments")));
        let mut entry = Map::new();
        if let Some(id) = id {
            entry.insert("id".into(), id.clone());
        }
        let Some(name) = name else {
            entry.insert("type".into(), json!("invalid_tool_call"));
            entry.insert("error".into(), json!("Incomplete tool call."));
            if let Some(args @ Value::String(_)) = raw_args {
                entry.insert("args".into(), args.clone());
            }
            invalid.push(Value::Object(entry));
            continue;
        };
        entry.insert("name".into(), name.clone());
        match parse_args(raw_args) {
            Ok(args) => {
                entry.insert("type".into(), json!("tool_call"));
                entry.insert("args".into(), args);
                calls.push(Value::Object(entry));
            }
            Err(text) => {
                entry.insert("type".into(), json!("invalid_tool_call"));
                entry.insert("error".into(), json!("Malformed args."));
                entry.insert("args".into(), json!(text));
                invalid.push(Value::Object(entry));
            }
        }
    }
    (calls, invalid)
}

/// A tool call's arguments as a value: an object as it is, JSON text parsed (empty text is `{}`),
/// none `{}`; the text when it does not parse.
pub(super) fn parse_args(raw: Option<&Value>) -> Result<Value, String> {
    match raw {
        None | Some(Value::Null) => Ok(json!({})),
        Some(Value::String(text)) if text.is_empty() => Ok(json!({})),
        Some(Value::String(text)) => serde_json::from_str(text).map_err(|_| text.clone()),
        Some(other) => Ok(other.clone()),
    }
}

fn invalid_tool_calls(list: &[Value]) -> Vec<Value> {
    list.iter()
        .filter_map(Value::as_object)
        .map(|call| {
            let (id, name) = identity(call);
            let mut entry = Map::new();
            entry.insert("type".into(), json!("invalid_tool_call"));
            if let Some(id) = id {
                entry.insert("id".into(), id.clone());
            }
            if let Some(name) = name {
                entry.insert("name".into(), name.clone());
            }
            if let Some(args @ Value::String(_)) = call.get("args") {
                entry.insert("args".into(), args.clone());
            }
            let error = call.get("error").filter(|e| e.is_string()).cloned();
            entry.insert("error".into(), error.unwrap_or_else(|| json!("Malformed args.")));
            Value::Object(entry)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_take_the_protocols_shape_and_interrupts_go() {
        let state = json!({
            "messages": [
                {"type": "human", "content": "hi", "id": "h1", "additional_kwargs": {}, "response_metadata": {}},
                {"type": "ai", "content": [{"type": "text", "text": "ok"}, "more", {"type": "image_url", "image_url": {"url": "u"}}],
                 "id": "a1", "tool_calls": [
                     {"id": "c1", "name": "add", "args": {"a": 1}},
                     {"id": "c2", "function": {"name": "mul", "arguments": "{\"b\": 2}"}},
                     {"id": "c3", "name": "bad", "args": "{not json"},
                     {"id": "c4", "args": "{}"}
                 ],
                 "usage_metadata": {"input_tokens": 3}, "response_metadata": {"model_name": "m"}},
                {"type": "tool", "content": "3", "tool_call_id": "c1", "status": "success", "id": "t1"},
                {"type": "user", "content": "bye"}
            ],
            "nested": {"__interrupt__": [1], "k": [{"type": "assistant", "content": "x"}]},
            "__interrupt__": [{"id": "i", "value": 1}]
        });
        let out = normalize_state(state);
        assert_eq!(
            out["messages"][0],
            json!({"type": "human", "content": "hi", "id": "h1"})
        );
        let ai = &out["messages"][1];
        assert_eq!(
            ai["content"],
            json!([{"type": "text", "text": "ok"}, {"type": "text", "text": "more"}, {"type": "image", "url": "u"}])
        );
        assert_eq!(
            ai["tool_calls"],
            json!([
                {"type": "tool_call", "id": "c1", "name": "add", "args": {"a": 1}},
                {"type": "tool_call", "id": "c2", "name": "mul", "args": {"b": 2}}
            ])
        );
        assert_eq!(
            ai["invalid_tool_calls"],
            json!([
                {"type": "invalid_tool_call", "id": "c3", "name": "bad", "error": "Malformed args.", "args": "{not json"},
                {"type": "invalid_tool_call", "id": "c4", "error": "Incomplete tool call.", "args": "{}"}
            ])
        );
        assert_eq!(ai["response_metadata"], json!({"model_name": "m"}));
        assert!(ai.get("usage_metadata").is_none());
        assert_eq!(
            out["messages"][2],
            json!({"type": "tool", "content": "3", "tool_call_id": "c1", "status": "success", "id": "t1"})
        );
        assert_eq!(out["messages"][3], json!({"type": "human", "content": "bye"}));
        assert_eq!(out["nested"], json!({"k": [{"type": "ai", "content": "x"}]}));
        assert!(out.get("__interrupt__").is_none());
    }

    #[test]
    fn blocks_outside_the_protocol_are_non_standard() {
        let odd = json!({"type": "thinking", "thinking": "hm"});
        assert_eq!(
            normalize_block(&odd),
            Some(json!({"type": "non_standard", "value": odd}))
        );
        assert_eq!(
            normalize_block(&json!({"type": "input_audio", "input_audio": {"data": "AA", "format": "wav"}})),
            Some(json!({"type": "audio", "data": "AA"}))
        );
        assert_eq!(normalize_block(&json!({"no": "type"})), None);
        assert_eq!(parse_args(Some(&json!(""))), Ok(json!({})));
        assert_eq!(parse_args(Some(&json!("[1"))), Err("[1".to_owned()));
    }
}
