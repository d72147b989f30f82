//! The JSON Schema of a [`Message`]: LangChain's message dict (`type`, `content`, …), so a
//! [`MessagesState`](super::MessagesState) graph describes itself to a server
//! (`/assistants/{id}/schemas`) and can be served.

use super::Message;
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use std::borrow::Cow;

impl JsonSchema for Message {
    fn schema_name() -> Cow<'static, str> {
        "Message".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "description": "A LangChain message dict: `type` is system, human, ai or tool (a tool message also has `tool_call_id`).",
            "properties": {
                "type": {"type": "string", "enum": ["system", "human", "ai", "tool"]},
                "content": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "object"}}]},
                "id": {"type": ["string", "null"]},
                "name": {"type": ["string", "null"]},
                "tool_calls": {"type": "array", "items": {"type": "object"}},
                "tool_call_id": {"type": "string"}
            },
            "required": ["type"]
        })
    }
}
