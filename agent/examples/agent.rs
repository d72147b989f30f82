//! A ReAct agent with two tools (`weather`, `add`) keeping its conversation in SQLite.
//!
//! Offline by default, with a scripted fake model; `--openai` talks to a real
//! OpenAI-compatible endpoint instead (`OPENAI_BASE_URL`, `OPENAI_API_KEY`, `OPENAI_MODEL`).
//!
//! ```text
//! cargo run -p weir-agent --example agent
//! OPENAI_API_KEY=sk-.. cargo run -p weir-agent --example agent -- --openai
//! ```

use schemars::JsonSchema;
use serde::Deserialize;
use std::path::Path;
use std::sync::Arc;
use weir_agent::message::{AiMessage, Message, MessagesStateUpdate, ToolCall};
use weir_agent::model::{ChatModel, FakeChatModel};
use weir_agent::react_agent;
use weir_agent::tool::{tool_fn, Tool};
use weir_runtime::checkpoint::SqliteSaver;
use weir_runtime::{BoxError, RunConfig};

#[derive(Deserialize, JsonSchema)]
struct WeatherArgs {
    /// The city to look up.
    city: String,
}

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
}

/// The agent's two tools.
pub fn tools() -> Vec<Arc<dyn Tool>> {
    vec![
        tool_fn(
            "weather",
            "The current temperature in a city.",
            |x: WeatherArgs| async move { Ok::<_, BoxError>(format!("21°C in {}", x.city)) },
        ),
        tool_fn("add", "Adds two integers.", |x: AddArgs| async move {
            Ok::<_, BoxError>(x.a + x.b)
        }),
    ]
}

/// The fake model's script: two tool calls, the answer, then the answer to the follow-up.
pub fn script() -> FakeChatModel {
    let args = |v: serde_json::Value| v.as_object().cloned().unwrap_or_default();
    FakeChatModel::new([
        AiMessage::new("").with_tool_calls(vec![
            ToolCall::new("call_1", "weather", args(serde_json::json!({"city": "Paris"}))),
            ToolCall::new("call_2", "add", args(serde_json::json!({"a": 21, "b": 21}))),
        ]),
        AiMessage::new("It is 21°C in Paris, and 21 + 21 = 42."),
        AiMessage::new("You asked about Paris."),
    ])
}

/// Two turns on one thread saved in `db`; returns the agent's two answers.
pub async fn run(model: impl ChatModel, db: &Path) -> Result<Vec<String>, BoxError> {
    let app = react_agent(model, tools())
        .system_prompt("You are a concise assistant. Use the tools.")
        .checkpointer(SqliteSaver::open(db)?)
        .compile()?;
    let cfg = RunConfig::thread("demo");
    let mut answers = Vec::new();
    for question in [
        "What is the weather in Paris, and what is 21 + 21?",
        "Which city did I ask about?",
    ] {
        let input = MessagesStateUpdate::default().messages(Message::human(question).into());
        let out = app.invoke(input, &cfg).await?;
        answers.push(out.messages.last().map(Message::text).unwrap_or_default());
    }
    Ok(answers)
}

/// [`run`] with the scripted model.
pub async fn run_offline(db: &Path) -> Result<Vec<String>, BoxError> {
    run(script(), db).await
}

/// [`run`] against the OpenAI-compatible endpoint of the environment.
#[cfg(feature = "openai")]
async fn online(db: &Path) -> Result<Vec<String>, BoxError> {
    let name = std::env::var("OPENAI_MODEL").unwrap_or_else(|_| "gpt-4o-mini".into());
    run(weir_agent::model::OpenAiChat::new(name), db).await
}

#[cfg(not(feature = "openai"))]
async fn online(_: &Path) -> Result<Vec<String>, BoxError> {
    Err("`--openai` needs the `openai` feature of weir-agent".into())
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let dir = std::env::temp_dir().join(format!("weir-agent-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let db = dir.join("agent.db");
    let answers = if std::env::args().any(|a| a == "--openai") {
        online(&db).await?
    } else {
        run_offline(&db).await?
    };
    for a in answers {
        println!("agent: {a}");
    }
    println!("(thread `demo` saved in {})", db.display());
    Ok(())
}
