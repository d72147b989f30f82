//! Structured output: the [`ResponseFormat`] a model is asked to answer in (a named JSON Schema,
//! OpenAI's `response_format` of type `json_schema`), and reading its answer into a type.

use crate::message::AiMessage;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::fmt;

/// The JSON a model must answer with: a name and a JSON Schema (LangChain's
/// `with_structured_output`, OpenAI's `response_format: {"type": "json_schema", ..}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResponseFormat {
    /// The schema's name (letters, digits, `_` and `-`).
    pub name: String,
    /// The JSON Schema of the answer.
    pub schema: Value,
    /// The Rust type the answer is read into, for errors.
    pub type_name: String,
}

impl ResponseFormat {
    /// The format of a `T`: its schemars schema, named after the type.
    ///
    /// ```
    /// #[derive(schemars::JsonSchema, serde::Deserialize)]
    /// struct Weather { city: String, celsius: f64 }
    /// let f = weir_agent::model::ResponseFormat::of::<Weather>();
    /// assert_eq!(f.name, "Weather");
    /// assert_eq!(f.schema["properties"]["celsius"]["type"], "number");
    /// ```
    pub fn of<T: JsonSchema>() -> Self {
        let mut schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or_else(|_| json!({}));
        let mut name = String::new();
        if let Value::Object(m) = &mut schema {
            m.remove("$schema");
            if let Some(Value::String(title)) = m.remove("title") {
                name = title;
            }
        }
        name.retain(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if name.is_empty() {
            name = "response".into();
        }
        Self {
            name,
            schema,
            type_name: std::any::type_name::<T>().to_owned(),
        }
    }

    /// OpenAI's `response_format` field for it.
    pub fn openai(&self) -> Value {
        json!({"type": "json_schema", "json_schema": {"name": self.name, "schema": self.schema}})
    }

    /// The model's `answer` read into a `T`.
    ///
    /// # Errors
    /// The answer's text is not JSON of a `T`; the error names the type and the model.
    pub fn parse<T: DeserializeOwned>(&self, model: &str, answer: &AiMessage) -> Result<T, StructuredError> {
        let text = answer.content.text();
        serde_json::from_str(strip_fence(&text)).map_err(|e| StructuredError {
            model: model.to_owned(),
            type_name: self.type_name.clone(),
            why: e.to_string(),
            text,
        })
    }
}

/// A ```` ```json .. ``` ```` fence around the answer, which some models add, taken off.
fn strip_fence(text: &str) -> &str {
    let t = text.trim();
    t.strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .and_then(|t| t.strip_suffix("```"))
        .map_or(t, str::trim)
}

/// A model's structured answer that is not a valid value of the asked type.
#[derive(Debug)]
pub struct StructuredError {
    model: String,
    type_name: String,
    why: String,
    text: String,
}

impl StructuredError {
    /// The answer's text as the model sent it.
    pub fn text(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for StructuredError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut shown: String = self.text.chars().take(200).collect();
        if shown.len() < self.text.len() {
            shown.push('…');
        }
        write!(
            f,
            "model `{}` answered with no valid `{}` for the structured response: {}; the answer was {:?}",
            self.model, self.type_name, self.why, shown
        )
    }
}

impl std::error::Error for StructuredError {}
