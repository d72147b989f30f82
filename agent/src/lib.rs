//! # weir-agent
//!
//! weir's agent layer, built on the public engine API: LangChain-compatible [`message`]s and the
//! `add_messages` reducer, [`model`]s that stream (the [`model::ChatModel`] trait, a scripted
//! fake, and an OpenAI-compatible adapter behind the `openai` feature), [`tool`](mod@tool)s with the
//! [`tool::ToolNode`] that runs them and the [`tool::tools_condition`] route, and the prebuilt
//! [`react_agent`].
//!
//! # Quick start
//!
//! ```
//! use weir_agent::message::{AiMessage, Message, MessagesStateUpdate, ToolCall};
//! use weir_agent::model::FakeChatModel;
//! use weir_agent::react_agent;
//! use weir_agent::tool::tool_fn;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Add {
//!     a: i64,
//!     b: i64,
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let add = tool_fn("add", "Adds two integers.", |x: Add| async move { Ok::<_, std::io::Error>(x.a + x.b) });
//! let args = serde_json::json!({"a": 2, "b": 3}).as_object().cloned().unwrap();
//! let model = FakeChatModel::new([
//!     AiMessage::new("").with_tool_calls(vec![ToolCall::new("call_1", "add", args)]),
//!     AiMessage::new("2 + 3 = 5"),
//! ]);
//! let app = react_agent(model, [add]).system_prompt("Use the tools.").compile()?;
//! let input = MessagesStateUpdate::default().messages(Message::human("2 + 3?").into());
//! let out = app.invoke(input, &weir_runtime::RunConfig::default()).await?;
//! let texts: Vec<String> = out.messages.iter().map(Message::text).collect();
//! assert_eq!(texts, ["2 + 3?", "", "5", "2 + 3 = 5"]);
//! # Ok::<(), weir_runtime::BoxError>(())
//! # }).unwrap();
//! ```
//!
//! With the `openai` feature (on by default), [`model::OpenAiChat`] talks to any
//! OpenAI-compatible `/v1/chat/completions`. A model called inside a node with
//! [`model::ChatModel::stream_in`] (as [`react_agent`] does) streams its tokens through the run's
//! `messages` mode ([`weir_runtime::StreamMode::MESSAGES`]) as LangChain's `AIMessageChunk`
//! dicts. [`macro@tool`] makes a typed fn a tool; [`ReactAgent::response_format`] ends a run with
//! a structured answer (see docs/agent.md).
//!
//! Model calls and tool calls are `tracing` spans named and attributed as OpenTelemetry's GenAI
//! conventions say (`chat {model}` with `gen_ai.request.model`, `gen_ai.usage.input_tokens`, …;
//! `execute_tool {name}` with `gen_ai.tool.name` and `gen_ai.tool.call.id`), children of the
//! `weir.task` span of the node that made them; `weir::otel` exports them (docs/operations.md).
//!
//! With the `mcp` feature, the `mcp` module gives the tools of Model Context Protocol servers (stdio
//! child processes or streamable HTTP) as weir tools.

#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]
#![forbid(unsafe_code)]

#[cfg(feature = "mcp")]
pub mod mcp;
pub mod message;
pub mod model;
mod react;
pub mod tool;
mod trace;

pub use react::{
    react_agent, ReactAgent, StructuredAgent, StructuredOutput, StructuredState, StructuredStateUpdate, NEED_MORE_STEPS,
};

#[doc = include_str!("tool/attribute.md")]
pub use weir_agent_macros::tool;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
