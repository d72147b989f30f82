//! A message's content: plain text, or LangChain's list of content blocks.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a message says: text (LangChain's `str` content), or content blocks (`list[dict]`, such as
/// `{"type": "text", "text": ".."}` or `{"type": "image_url", ..}`), kept as JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Content blocks, each a JSON object with a `type`.
    Blocks(Vec<Value>),
}

impl Default for Content {
    fn default() -> Self {
        Self::Text(String::new())
    }
}

impl Content {
    /// The text: the string itself, or the `text` of the text blocks joined.
    ///
    /// ```
    /// use weir_agent::message::Content;
    /// let blocks = Content::Blocks(vec![serde_json::json!({"type": "text", "text": "hi"})]);
    /// assert_eq!(blocks.text(), "hi");
    /// ```
    pub fn text(&self) -> String {
        match self {
            Self::Text(t) => t.clone(),
            Self::Blocks(blocks) => blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect(),
        }
    }

    /// Whether there is nothing: empty text or no blocks.
    pub fn is_empty(&self) -> bool {
        match self {
            Self::Text(t) => t.is_empty(),
            Self::Blocks(b) => b.is_empty(),
        }
    }

    /// Appends `more` as a streamed delta does: text to text, blocks after blocks, text after
    /// blocks as a new text block.
    pub fn extend(&mut self, more: Content) {
        match (self, more) {
            (Self::Text(a), Self::Text(b)) => a.push_str(&b),
            (Self::Blocks(a), Self::Blocks(b)) => a.extend(b),
            (Self::Blocks(a), Self::Text(b)) => {
                if !b.is_empty() {
                    a.push(serde_json::json!({"type": "text", "text": b}));
                }
            }
            (this @ Self::Text(_), Self::Blocks(b)) => {
                let mut blocks = Vec::with_capacity(b.len() + 1);
                if !this.is_empty() {
                    blocks.push(serde_json::json!({"type": "text", "text": this.text()}));
                }
                blocks.extend(b);
                *this = Self::Blocks(blocks);
            }
        }
    }
}

impl From<&str> for Content {
    fn from(t: &str) -> Self {
        Self::Text(t.to_owned())
    }
}

impl From<String> for Content {
    fn from(t: String) -> Self {
        Self::Text(t)
    }
}
