//! A small MCP server, built on rmcp's server side, for weir-agent's tests and docs (feature
//! `mcp-server`). Its tools: `add` (two integers; an overflow is a tool error), `echo`, and, for
//! tests of failures, `sleep` (waits `ms` milliseconds) and `crash` (the process exits mid-call).
//!
//! ```text
//! weir-mcp-demo            # MCP over stdin/stdout
//! weir-mcp-demo --http     # streamable HTTP on 127.0.0.1, a free port; prints its URL, then serves
//! weir-mcp-demo --garbage  # writes lines that are not JSON-RPC to stdout until stdin closes
//! ```

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{schemars, tool, tool_handler, tool_router, ServerHandler, ServiceExt};
use std::io::Write;
use std::time::Duration;
use tokio::io::AsyncReadExt;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct SleepArgs {
    /// How long to wait, in milliseconds.
    ms: u64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct CrashArgs {
    /// The exit code.
    code: i32,
}

#[derive(Clone)]
struct Demo {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Demo {
    fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "Adds two integers.")]
    fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> CallToolResult {
        match a.checked_add(b) {
            Some(sum) => CallToolResult::success(vec![ContentBlock::text(sum.to_string())]),
            None => CallToolResult::error(vec![ContentBlock::text(format!(
                "{a} + {b} overflows a 64-bit integer"
            ))]),
        }
    }

    #[tool(description = "Sends the text back.")]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }

    #[tool(description = "Waits, then answers `slept`.")]
    async fn sleep(&self, Parameters(SleepArgs { ms }): Parameters<SleepArgs>) -> String {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        "slept".to_owned()
    }

    #[tool(description = "Exits the server process with the code, without answering.")]
    fn crash(&self, Parameters(CrashArgs { code }): Parameters<CrashArgs>) -> String {
        std::process::exit(code)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Demo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_instructions("weir-agent's demo MCP server")
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    match std::env::args().nth(1).as_deref() {
        None => Demo::new()
            .serve(rmcp::transport::stdio())
            .await?
            .waiting()
            .await
            .map(drop)?,
        Some("--http") => serve_http().await?,
        Some("--garbage") => garbage().await?,
        Some(other) => return Err(format!("unknown argument `{other}`: use --http or --garbage").into()),
    }
    Ok(())
}

/// Streamable HTTP at `/mcp` on a free port of 127.0.0.1; the URL is the first line of stdout.
async fn serve_http() -> std::io::Result<()> {
    let service: StreamableHttpService<Demo, LocalSessionManager> = StreamableHttpService::new(
        || Ok(Demo::new()),
        Default::default(),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let mut out = std::io::stdout();
    writeln!(out, "http://{}/mcp", listener.local_addr()?)?;
    out.flush()?;
    axum::serve(listener, router.into_make_service()).await
}

/// Not MCP: text on stdout, until stdin closes.
async fn garbage() -> std::io::Result<()> {
    let mut out = std::io::stdout();
    writeln!(out, "this is not JSON-RPC")?;
    writeln!(out, "{{\"neither\": \"is this\"}}")?;
    out.flush()?;
    let mut sink = Vec::new();
    tokio::io::stdin().read_to_end(&mut sink).await?;
    Ok(())
}
