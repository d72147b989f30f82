//! Tools from [Model Context Protocol](https://modelcontextprotocol.io) servers (feature `mcp`,
//! on rmcp, the official Rust SDK): connect to a server run as a child process over stdio or
//! reached over streamable HTTP, list its tools, and use each as a weir [`Tool`] whose call is
//! a `tools/call` request.
//!
//! # MCP
//!
//! Connect with [`McpServer`] (or [`connect_stdio`], [`connect_http`] for the defaults), then
//! give [`McpClient::tools`] to a [`ToolNode`](crate::tool::ToolNode) or
//! [`react_agent`](crate::react_agent). `weir-mcp-demo`, the server of this crate's tests
//! (feature `mcp-server`), serves `add` and `echo` to try it with.
//!
//! ```no_run
//! use weir_agent::mcp::McpServer;
//! use weir_agent::model::FakeChatModel;
//! use weir_agent::react_agent;
//! use std::time::Duration;
//!
//! # async fn run() -> Result<(), weir_runtime::BoxError> {
//! // A server run as a child process (reaped when the client and its tools are dropped) ...
//! let files = McpServer::stdio("npx")
//!     .args(["-y", "@modelcontextprotocol/server-filesystem", "/tmp"])
//!     .call_timeout(Duration::from_secs(10))
//!     .connect()
//!     .await?;
//! // ... and one over streamable HTTP.
//! let math = McpServer::http("http://127.0.0.1:8000/mcp").header("x-api-key", "k").connect().await?;
//! let mut tools = files.tools().await?;
//! tools.extend(math.tools().await?);
//! let app = react_agent(FakeChatModel::new([]), tools).compile()?;
//! # Ok(()) }
//! ```
//!
//! A tool's result becomes the tool message's content (text, or content blocks); a result
//! flagged `isError`, a JSON-RPC error, a server that exited and a call without an answer
//! within [`McpServer::call_timeout`] are the tool's errors, naming the server and the tool
//! (so [`ToolNode`](crate::tool::ToolNode) answers the model with them, by default).

mod error;
mod tool;

pub use error::{McpError, McpErrorKind};
pub use tool::{result_content, McpTool};

use crate::tool::Tool;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::RunningService;
use rmcp::transport::common::client_side_sse::SseRetryPolicy;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// How long connecting (starting the process, `initialize`) and listing tools may take, by
/// default.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a tool call may take, by default.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// Where a server is.
#[derive(Clone, Debug)]
enum Endpoint {
    Stdio {
        command: OsString,
        args: Vec<OsString>,
        env: Vec<(OsString, OsString)>,
    },
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// An MCP server to connect to: [`stdio`](Self::stdio) or [`http`](Self::http), then options,
/// then [`connect`](Self::connect).
#[derive(Clone, Debug)]
pub struct McpServer {
    name: Option<String>,
    endpoint: Endpoint,
    connect_timeout: Duration,
    call_timeout: Duration,
}

impl McpServer {
    /// A server run as a child process, `command`, speaking MCP on its stdin and stdout (its
    /// stderr is this process's). It inherits this process's environment.
    pub fn stdio(command: impl Into<OsString>) -> Self {
        Self::at(Endpoint::Stdio {
            command: command.into(),
            args: Vec::new(),
            env: Vec::new(),
        })
    }

    /// A server reached over streamable HTTP at `url` (e.g. `http://127.0.0.1:8000/mcp`).
    pub fn http(url: impl Into<String>) -> Self {
        Self::at(Endpoint::Http {
            url: url.into(),
            headers: Vec::new(),
        })
    }

    fn at(endpoint: Endpoint) -> Self {
        Self {
            name: None,
            endpoint,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            call_timeout: DEFAULT_CALL_TIMEOUT,
        }
    }

    /// Names the server in errors (by default the command or the URL).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Adds arguments to a stdio server's command (ignored for HTTP).
    pub fn args(mut self, args: impl IntoIterator<Item = impl Into<OsString>>) -> Self {
        if let Endpoint::Stdio { args: a, .. } = &mut self.endpoint {
            a.extend(args.into_iter().map(Into::into));
        }
        self
    }

    /// Sets an environment variable for a stdio server's process (ignored for HTTP).
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        if let Endpoint::Stdio { env, .. } = &mut self.endpoint {
            env.push((key.into(), value.into()));
        }
        self
    }

    /// Sends an HTTP header with every request to an HTTP server (ignored for stdio). An
    /// `Authorization: Bearer <token>` header is sent as the bearer token.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let Endpoint::Http { headers, .. } = &mut self.endpoint {
            headers.push((name.into(), value.into()));
        }
        self
    }

    /// How long starting and initializing the connection, and listing tools, may take
    /// ([`DEFAULT_CONNECT_TIMEOUT`] by default).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long one tool call may take before it fails ([`DEFAULT_CALL_TIMEOUT`] by default).
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    fn display_name(&self) -> String {
        if let Some(n) = &self.name {
            return n.clone();
        }
        match &self.endpoint {
            Endpoint::Stdio { command, .. } => std::path::Path::new(command)
                .file_name()
                .unwrap_or(command)
                .to_string_lossy()
                .into_owned(),
            Endpoint::Http { url, .. } => url.clone(),
        }
    }

    /// Starts (stdio) or reaches (HTTP) the server and runs MCP's `initialize` handshake.
    ///
    /// # Errors
    /// The process cannot start ([`McpErrorKind::Spawn`]), a header is invalid
    /// ([`McpErrorKind::Config`]), the handshake fails ([`McpErrorKind::Connect`]) or does not
    /// finish within the connect timeout ([`McpErrorKind::Timeout`]).
    pub async fn connect(self) -> Result<McpClient, McpError> {
        let name = self.display_name();
        let err = |kind| McpError::new(&name, kind);
        let info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("weir-agent", env!("CARGO_PKG_VERSION")),
        );
        let (service, pid) = match &self.endpoint {
            Endpoint::Stdio { command, args, env } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).envs(env.iter().map(|(k, v)| (k, v))).kill_on_drop(true);
                let process = TokioChildProcess::new(cmd).map_err(|e| err(McpErrorKind::Spawn(e)))?;
                let pid = process.id();
                let started = tokio::time::timeout(self.connect_timeout, info.serve(process)).await;
                (started.map(|r| r.map_err(|e| e.to_string())), pid)
            }
            Endpoint::Http { url, headers } => {
                let config = http_config(url, headers).map_err(|e| err(McpErrorKind::Config(e)))?;
                install_crypto_provider();
                let transport = StreamableHttpClientTransport::from_config(config);
                let started = tokio::time::timeout(self.connect_timeout, info.serve(transport)).await;
                (started.map(|r| r.map_err(|e| e.to_string())), None)
            }
        };
        let service = service
            .map_err(|_| err(McpErrorKind::Timeout(self.connect_timeout)))?
            .map_err(|e| err(McpErrorKind::Connect(e)))?;
        Ok(McpClient {
            conn: Arc::new(Connection {
                name,
                service,
                pid,
                connect_timeout: self.connect_timeout,
                call_timeout: self.call_timeout,
            }),
        })
    }
}

/// The streamable HTTP transport's configuration: `url`, the bearer token and other headers.
fn http_config(url: &str, headers: &[(String, String)]) -> Result<StreamableHttpClientTransportConfig, String> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    config.retry_config = Arc::new(Reconnect);
    let mut custom = HashMap::new();
    for (k, v) in headers {
        if k.eq_ignore_ascii_case("authorization") {
            if let Some(token) = v.strip_prefix("Bearer ") {
                config = config.auth_header(token.to_owned());
                continue;
            }
        }
        let name = http::HeaderName::try_from(k.as_str()).map_err(|e| format!("header `{k}`: {e}"))?;
        let value = http::HeaderValue::try_from(v.as_str()).map_err(|e| format!("header `{k}`: {e}"))?;
        custom.insert(name, value);
    }
    Ok(config.custom_headers(custom))
}

/// How a response stream cut short is resumed: rmcp retries forever by default, so a call to a
/// server that died would wait for its timeout; this gives up after [`Reconnect::TIMES`]
/// attempts, 250 ms apart and doubling (under 4 s in all), and the call fails as
/// [`McpErrorKind::Closed`].
#[derive(Debug)]
struct Reconnect;

impl Reconnect {
    const TIMES: usize = 4;
}

impl SseRetryPolicy for Reconnect {
    fn retry(&self, attempt: usize) -> Option<Duration> {
        (attempt < Self::TIMES).then(|| Duration::from_millis(250) * (1 << attempt))
    }
}

/// rmcp's HTTP client uses rustls without a built-in crypto provider: install ring's as the
/// process default unless one is installed already.
fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Another thread may install one first: either is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// One open connection, shared by the client and its tools.
pub(crate) struct Connection {
    name: String,
    service: RunningService<RoleClient, ClientConfig>,
    pid: Option<u32>,
    connect_timeout: Duration,
    call_timeout: Duration,
}

/// A connection to an MCP server, made by [`McpServer::connect`] (or [`connect_stdio`],
/// [`connect_http`]). Cloning shares it. The connection closes, and a stdio server's process
/// is stopped and reaped, when the client and every tool it gave are dropped (or at
/// [`close`](Self::close)).
#[derive(Clone)]
pub struct McpClient {
    conn: Arc<Connection>,
}

impl fmt::Debug for McpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpClient")
            .field("server", &self.conn.name)
            .field("pid", &self.conn.pid)
            .finish_non_exhaustive()
    }
}

impl McpClient {
    /// The server's name, as errors give it.
    pub fn name(&self) -> &str {
        &self.conn.name
    }

    /// The process id of a stdio server.
    pub fn pid(&self) -> Option<u32> {
        self.conn.pid
    }

    /// The server's tools (all pages of `tools/list`), as weir tools for a
    /// [`ToolNode`](crate::tool::ToolNode) or [`react_agent`](crate::react_agent).
    ///
    /// # Errors
    /// The server fails or does not answer within the connect timeout.
    pub async fn tools(&self) -> Result<Vec<Arc<dyn Tool>>, McpError> {
        let listed = self.list_tools().await?;
        Ok(listed.into_iter().map(|t| Arc::new(t) as Arc<dyn Tool>).collect())
    }

    /// The server's tools (all pages of `tools/list`), in the server's order.
    ///
    /// # Errors
    /// The server fails or does not answer within the connect timeout.
    pub async fn list_tools(&self) -> Result<Vec<McpTool>, McpError> {
        let c = &self.conn;
        let listed = tokio::time::timeout(c.connect_timeout, c.service.list_all_tools())
            .await
            .map_err(|_| McpError::new(&c.name, McpErrorKind::Timeout(c.connect_timeout)))?
            .map_err(|e| McpError::service(&c.name, e))?;
        Ok(listed.into_iter().map(|t| McpTool::new(t, c.clone())).collect())
    }

    /// Closes the connection now (a stdio server's stdin is closed, and the process stopped if
    /// it does not exit); its tools' calls fail from then on.
    pub fn close(&self) {
        self.conn.service.cancellation_token().cancel();
    }
}

/// Connects to a stdio server: `command` with `args` and the extra environment `env`, with the
/// default timeouts (see [`McpServer`] for the options).
///
/// # Errors
/// As [`McpServer::connect`].
pub async fn connect_stdio<K, V>(
    command: impl Into<OsString>,
    args: impl IntoIterator<Item = impl Into<OsString>>,
    env: impl IntoIterator<Item = (K, V)>,
) -> Result<McpClient, McpError>
where
    K: Into<OsString>,
    V: Into<OsString>,
{
    let server = env
        .into_iter()
        .fold(McpServer::stdio(command).args(args), |s, (k, v)| s.env(k, v));
    server.connect().await
}

/// Connects to a streamable HTTP server at `url`, sending `headers` with every request, with
/// the default timeouts (see [`McpServer`] for the options).
///
/// # Errors
/// As [`McpServer::connect`].
pub async fn connect_http(
    url: impl Into<String>,
    headers: impl IntoIterator<Item = (String, String)>,
) -> Result<McpClient, McpError> {
    let server = headers
        .into_iter()
        .fold(McpServer::http(url), |s, (k, v)| s.header(k, v));
    server.connect().await
}
