//! [`McpError`]: what went wrong talking to an MCP server, naming the server and, for a call,
//! the tool.

use std::fmt;
use std::time::Duration;

/// An MCP server could not be reached, or one of its tools could not be called. Its message
/// names the server and, for a tool call, the tool: `MCP server `math`, tool `add`: ...`.
#[derive(Debug)]
pub struct McpError {
    server: String,
    tool: Option<String>,
    kind: McpErrorKind,
}

/// Why an MCP request failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum McpErrorKind {
    /// The server's process could not be started (e.g. the command was not found).
    Spawn(std::io::Error),
    /// The configuration is wrong (e.g. a header that is not a valid HTTP header).
    Config(String),
    /// The server did not answer `initialize` as MCP requires (it exited, wrote something that
    /// is not JSON-RPC, or refused).
    Connect(String),
    /// The connection is gone: the server's process exited or the HTTP session ended.
    Closed,
    /// The server answered with a JSON-RPC error (e.g. an unknown tool or bad arguments).
    Protocol(String),
    /// The tool ran and reported an error (`isError`); this is its text.
    Tool(String),
    /// No answer within the configured time.
    Timeout(Duration),
}

impl McpError {
    pub(crate) fn new(server: &str, kind: McpErrorKind) -> Self {
        Self {
            server: server.to_owned(),
            tool: None,
            kind,
        }
    }

    pub(crate) fn for_tool(mut self, tool: &str) -> Self {
        self.tool = Some(tool.to_owned());
        self
    }

    /// The server's name.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The tool being called, if any.
    pub fn tool(&self) -> Option<&str> {
        self.tool.as_deref()
    }

    /// Why it failed.
    pub fn kind(&self) -> &McpErrorKind {
        &self.kind
    }

    /// Maps rmcp's request error: a closed transport or a cancelled request is
    /// [`McpErrorKind::Closed`], a JSON-RPC error [`McpErrorKind::Protocol`].
    pub(crate) fn service(server: &str, e: rmcp::ServiceError) -> Self {
        use rmcp::ServiceError as E;
        let kind = match e {
            E::TransportClosed | E::Cancelled { .. } => McpErrorKind::Closed,
            E::Timeout { timeout } => McpErrorKind::Timeout(timeout),
            E::McpError(data) => McpErrorKind::Protocol(data.message.to_string()),
            other => McpErrorKind::Protocol(other.to_string()),
        };
        Self::new(server, kind)
    }
}

impl fmt::Display for McpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MCP server `{}`", self.server)?;
        if let Some(t) = &self.tool {
            write!(f, ", tool `{t}`")?;
        }
        match &self.kind {
            McpErrorKind::Spawn(e) => write!(f, ": cannot start the server process: {e}"),
            McpErrorKind::Config(e) => write!(f, ": {e}"),
            McpErrorKind::Connect(e) => write!(f, ": MCP initialization failed: {e}"),
            McpErrorKind::Closed => write!(f, ": the connection is closed (did the server exit?)"),
            McpErrorKind::Protocol(e) => write!(f, ": the server answered with an error: {e}"),
            McpErrorKind::Tool(e) => write!(f, ": the tool failed: {e}"),
            McpErrorKind::Timeout(d) => write!(f, ": no answer within {d:?}"),
        }
    }
}

impl std::error::Error for McpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            McpErrorKind::Spawn(e) => Some(e),
            _ => None,
        }
    }
}
