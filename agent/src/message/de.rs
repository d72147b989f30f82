//! How a [`Message`] is read from JSON: straight into its kind's struct when `type` is the dict's
//! first key (as weir and LangChain write it), and through a buffered copy of the dict otherwise.
//! serde's derive for an internally tagged enum always buffers the dict first, which made reading
//! a conversation back from a checkpoint cost some 2 µs a message.

use super::{AiMessage, HumanMessage, Message, SystemMessage, ToolMessage};
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::borrow::Cow;
use std::fmt;

/// The derived reading, for a dict whose `type` does not come first.
#[derive(Deserialize)]
#[serde(tag = "type")]
enum Tagged {
    #[serde(rename = "system")]
    System(SystemMessage),
    #[serde(rename = "human", alias = "user")]
    Human(HumanMessage),
    #[serde(rename = "ai", alias = "AIMessageChunk")]
    Ai(AiMessage),
    #[serde(rename = "tool")]
    Tool(ToolMessage),
}

impl From<Tagged> for Message {
    fn from(t: Tagged) -> Self {
        match t {
            Tagged::System(m) => Self::System(m),
            Tagged::Human(m) => Self::Human(m),
            Tagged::Ai(m) => Self::Ai(m),
            Tagged::Tool(m) => Self::Tool(m),
        }
    }
}

const KINDS: &[&str] = &["system", "human", "user", "ai", "AIMessageChunk", "tool"];

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(MessageVisitor)
    }
}

struct MessageVisitor;

impl<'de> Visitor<'de> for MessageVisitor {
    type Value = Message;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a message dict with a `type`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Message, A::Error> {
        let Some(first) = map.next_key::<Str<'de>>()? else {
            return Err(de::Error::missing_field("type"));
        };
        if first.0 != "type" {
            // Buffer the dict, the key read included, and read it as the derive does.
            let mut dict = serde_json::Map::new();
            dict.insert(first.0.into_owned(), map.next_value()?);
            while let Some((k, v)) = map.next_entry::<String, serde_json::Value>()? {
                dict.insert(k, v);
            }
            return Tagged::deserialize(serde_json::Value::Object(dict))
                .map(Message::from)
                .map_err(de::Error::custom);
        }
        let kind = map.next_value::<Str<'de>>()?.0;
        let rest = MapAccessDeserializer::new(map);
        Ok(match &*kind {
            "system" => Message::System(SystemMessage::deserialize(rest)?),
            "human" | "user" => Message::Human(HumanMessage::deserialize(rest)?),
            "ai" | "AIMessageChunk" => Message::Ai(AiMessage::deserialize(rest)?),
            "tool" => Message::Tool(ToolMessage::deserialize(rest)?),
            other => return Err(de::Error::unknown_variant(other, KINDS)),
        })
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
