//! How a [`Message`] is read from JSON, as LangChain reads what a client sends (its
//! `convert_to_messages`): a dict with a `type` (as weir and LangChain write messages) or with an
//! OpenAI-style `role` in its place (`{"role": "user", "content": "hi"}`, as LangGraph's own
//! examples send them; `user`, `assistant` and `developer` name the human, AI and system kinds),
//! a `[role, content]` pair, or a bare string (what a person said). A write to a `messages` field
//! ([`MessageUpdate`], [`Messages`]) reads the same, plus removals (`{"type": "remove", "id":
//! …}`), and takes one message where LangGraph takes one in place of a list.
//!
//! A dict whose first key is `type` (as weir and LangChain write it) is read straight into its
//! kind's struct; any other is buffered first. serde's derive for an internally tagged enum
//! always buffers the dict, which made reading a conversation back from a checkpoint cost some
//! 2 µs a message.

use super::add::{MessageUpdate, Messages, RemoveMessage};
use super::{AiMessage, HumanMessage, Message, SystemMessage, ToolMessage};
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;

/// The names a message's `type` or `role` may take.
const KINDS: &[&str] = &[
    "human",
    "user",
    "ai",
    "assistant",
    "AIMessageChunk",
    "system",
    "developer",
    "tool",
];

/// A message read, or (in a write) the id of a message to remove.
// Moved once into its place, as `MessageUpdate`: a box would cost an allocation a message.
#[allow(clippy::large_enum_variant)]
enum Read {
    Message(Message),
    Remove(String),
}

/// Reads a message in any of its forms; a removal too when `removals`.
#[derive(Clone, Copy)]
struct ReadVisitor {
    removals: bool,
}

impl ReadVisitor {
    /// `rest` (the dict's other fields) read as a message of `kind`, or as a removal.
    fn kind<'de, D: Deserializer<'de>>(self, kind: &str, rest: D) -> Result<Read, D::Error> {
        #[derive(Deserialize)]
        struct Removal {
            id: String,
        }
        Ok(Read::Message(match kind {
            "human" | "user" => Message::Human(HumanMessage::deserialize(rest)?),
            "ai" | "assistant" | "AIMessageChunk" => Message::Ai(AiMessage::deserialize(rest)?),
            "system" | "developer" => Message::System(SystemMessage::deserialize(rest)?),
            "tool" => Message::Tool(ToolMessage::deserialize(rest)?),
            "remove" if self.removals => return Removal::deserialize(rest).map(|r| Read::Remove(r.id)),
            other => return Err(de::Error::unknown_variant(other, KINDS)),
        }))
    }
}

impl<'de> Visitor<'de> for ReadVisitor {
    type Value = Read;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a message: a dict with a `type` or a `role`, a [role, content] pair, or a string")
    }

    /// What a person said.
    fn visit_str<E: de::Error>(self, text: &str) -> Result<Read, E> {
        Ok(Read::Message(Message::human(text)))
    }

    /// A `[role, content]` pair.
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Read, A::Error> {
        let role: String = seq.next_element()?.ok_or_else(|| de::Error::invalid_length(0, &self))?;
        let content: Value = seq.next_element()?.ok_or_else(|| de::Error::invalid_length(1, &self))?;
        if seq.next_element::<de::IgnoredAny>()?.is_some() {
            return Err(de::Error::invalid_length(3, &"a [role, content] pair"));
        }
        let mut dict = Map::new();
        dict.insert("content".to_owned(), content);
        self.kind(&role, Value::Object(dict)).map_err(de::Error::custom)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Read, A::Error> {
        let Some(first) = map.next_key::<Str<'de>>()? else {
            return Err(de::Error::missing_field("type"));
        };
        if first.0 == "type" {
            let kind = map.next_value::<Str<'de>>()?.0;
            return self.kind(&kind, MapAccessDeserializer::new(map));
        }
        // Buffer the dict, the key read included; as LangChain, a `role` is read before a `type`.
        let mut dict = Map::new();
        dict.insert(first.0.into_owned(), map.next_value()?);
        while let Some((k, v)) = map.next_entry::<String, Value>()? {
            dict.insert(k, v);
        }
        let kind = match dict.remove("role").or_else(|| dict.remove("type")) {
            Some(Value::String(kind)) => kind,
            Some(other) => {
                return Err(de::Error::invalid_type(
                    unexpected(&other),
                    &"a message's kind (a string)",
                ));
            }
            None => return Err(de::Error::missing_field("type")),
        };
        self.kind(&kind, Value::Object(dict)).map_err(de::Error::custom)
    }
}

/// What `value` is, for an error.
fn unexpected(value: &Value) -> de::Unexpected<'_> {
    match value {
        Value::Null => de::Unexpected::Unit,
        Value::Bool(b) => de::Unexpected::Bool(*b),
        Value::Number(_) => de::Unexpected::Other("a number"),
        Value::String(s) => de::Unexpected::Str(s),
        Value::Array(_) => de::Unexpected::Seq,
        Value::Object(_) => de::Unexpected::Map,
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match deserializer.deserialize_any(ReadVisitor { removals: false })? {
            Read::Message(m) => Ok(m),
            // Not read without `removals`.
            Read::Remove(id) => Err(de::Error::custom(format!("the removal of `{id}` is not a message"))),
        }
    }
}

impl From<Read> for MessageUpdate {
    fn from(read: Read) -> Self {
        match read {
            Read::Message(m) => MessageUpdate::Put(m),
            Read::Remove(id) => MessageUpdate::Remove(RemoveMessage::new(id)),
        }
    }
}

impl<'de> Deserialize<'de> for MessageUpdate {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(ReadVisitor { removals: true })
            .map(Self::from)
    }
}

/// A list of messages and removals, or one alone (a dict, a string).
impl<'de> Deserialize<'de> for Messages {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct WriteVisitor;
        impl<'de> Visitor<'de> for WriteVisitor {
            type Value = Messages;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of messages, or one message")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Messages, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(update) = seq.next_element()? {
                    out.push(update);
                }
                Ok(Messages(out))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Messages, E> {
                Ok(Message::human(text).into())
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Messages, A::Error> {
                let one = ReadVisitor { removals: true }.visit_map(map)?;
                Ok(Messages(vec![one.into()]))
            }
        }
        deserializer.deserialize_any(WriteVisitor)
    }
}

/// A string of the input, borrowed when it has no escapes (a `Cow<str>` is always copied).
struct Str<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Str<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StrVisitor;
        impl<'de> Visitor<'de> for StrVisitor {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(StrVisitor)
    }
}
