//! A ReAct agent using the tools of an MCP server run as a child process: by default
//! `weir-mcp-demo` (this crate's demo server, next to this example in the target directory),
//! or any stdio server given on the command line. The model is the scripted fake, calling the
//! demo's `add` and `echo`.
//!
//! ```text
//! cargo build -p weir-agent --features mcp-server --bin weir-mcp-demo
//! cargo run -p weir-agent --features mcp-server --example mcp
//! cargo run -p weir-agent --features mcp-server --example mcp -- path/to/server --its-flag
//! ```

use serde_json::json;
use std::ffi::OsString;
use weir_agent::mcp::McpServer;
use weir_agent::message::{AiMessage, Message, MessagesStateUpdate, ToolCall};
use weir_agent::model::FakeChatModel;
use weir_agent::react_agent;
use weir_runtime::{BoxError, RunConfig};

/// Connects to `server`, lets a scripted model call its `add` and `echo`, and returns the
/// conversation.
pub async fn run(server: McpServer) -> Result<Vec<Message>, BoxError> {
    let client = server.connect().await?;
    let tools = client.tools().await?;
    let call = |id: &str, name: &str, args: serde_json::Value| {
        ToolCall::new(id, name, args.as_object().cloned().unwrap_or_default())
    };
    let model = FakeChatModel::new([
        AiMessage::new("").with_tool_calls(vec![
            call("call_1", "add", json!({"a": 19, "b": 23})),
            call("call_2", "echo", json!({"text": "hello over MCP"})),
        ]),
        AiMessage::new("19 + 23 = 42, and the server echoed: hello over MCP"),
    ]);
    let app = react_agent(model, tools).system_prompt("Use the tools.").compile()?;
    let input = MessagesStateUpdate::default().messages(Message::human("add 19 and 23, then echo").into());
    Ok(app.invoke(input, &RunConfig::default()).await?.messages)
}

/// `weir-mcp-demo` in the target directory this example was built in.
fn demo_server() -> OsString {
    let exe = std::env::current_exe().unwrap_or_default();
    let dir = exe.parent().and_then(|examples| examples.parent());
    dir.map_or_else(|| "weir-mcp-demo".into(), |d| d.join("weir-mcp-demo").into_os_string())
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let mut args = std::env::args_os().skip(1);
    let server = match args.next() {
        Some(command) => McpServer::stdio(command).args(args),
        None => McpServer::stdio(demo_server()).name("weir-mcp-demo"),
    };
    for m in run(server).await? {
        println!("{:>5}: {}", m.kind(), m.text());
    }
    Ok(())
}
