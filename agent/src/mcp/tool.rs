//! [`McpTool`]: one tool of an MCP server as a weir [`Tool`], and the conversion of a
//! `tools/call` result into a tool message's content.

use super::{Connection, McpError, McpErrorKind};
use crate::message::Content;
use crate::tool::{Tool, ToolError, ToolSpec};
use futures::future::BoxFuture;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::{Map, Value};
use std::fmt;
use std::sync::Arc;
use weir_runtime::Context;

/// A tool listed by an MCP server: its spec is the server's name, description and input JSON
/// Schema; a call sends `tools/call` to the server. It keeps the connection open while it
/// lives.
#[derive(Clone)]
pub struct McpTool {
    spec: ToolSpec,
    conn: Arc<Connection>,
}

impl fmt::Debug for McpTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpTool")
            .field("server", &self.conn.name)
            .field("name", &self.spec.name)
            .finish_non_exhaustive()
    }
}

impl McpTool {
    pub(super) fn new(tool: rmcp::model::Tool, conn: Arc<Connection>) -> Self {
        let description = tool
            .description
            .map(|d| d.into_owned())
            .or(tool.title)
            .unwrap_or_default();
        let spec = ToolSpec {
            name: tool.name.into_owned(),
            description,
            parameters: Value::Object((*tool.input_schema).clone()),
        };
        Self { spec, conn }
    }

    /// The name of the server it comes from.
    pub fn server(&self) -> &str {
        &self.conn.name
    }

    /// Calls the tool with `args`, outside a graph: what [`Tool::call`] does.
    ///
    /// # Errors
    /// The tool's error result, a JSON-RPC error, a closed connection, or no answer within the
    /// call timeout, naming the server and the tool.
    pub async fn invoke(&self, args: Map<String, Value>) -> Result<Content, McpError> {
        let (server, name) = (&self.conn.name, &self.spec.name);
        let params = CallToolRequestParams::new(name.clone()).with_arguments(args);
        let call = self.conn.service.call_tool(params);
        let result = match tokio::time::timeout(self.conn.call_timeout, call).await {
            Err(_) => Err(McpError::new(server, McpErrorKind::Timeout(self.conn.call_timeout))),
            Ok(r) => r.map_err(|e| McpError::service(server, e)),
        };
        result
            .and_then(|r| result_content(r).map_err(|text| McpError::new(server, McpErrorKind::Tool(text))))
            .map_err(|e| e.for_tool(name))
    }
}

impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, args: Map<String, Value>, _: &'a Context) -> BoxFuture<'a, Result<Content, ToolError>> {
        Box::pin(async move { self.invoke(args).await.map_err(ToolError::failed) })
    }
}

/// The content of a tool message for a `tools/call` result, or, when the result is an error
/// (`isError`), its text.
///
/// One text block is plain text; several blocks, or any that is not text (an image, an embedded
/// resource), are kept as content blocks (text blocks as `{"type": "text", "text": ..}`, the
/// others as MCP sends them). A result with structured content and no content blocks is that
/// JSON as text.
pub fn result_content(result: CallToolResult) -> Result<Content, String> {
    let mut blocks: Vec<Value> = result
        .content
        .iter()
        .filter_map(|b| serde_json::to_value(b).ok())
        .map(|mut b| {
            if let Some(m) = b
                .as_object_mut()
                .filter(|m| m.get("type") == Some(&Value::from("text")))
            {
                m.retain(|k, _| k == "type" || k == "text");
            }
            b
        })
        .collect();
    if blocks.is_empty() {
        if let Some(structured) = &result.structured_content {
            blocks.push(serde_json::json!({"type": "text", "text": structured.to_string()}));
        }
    }
    let content = match blocks.as_slice() {
        [one] if one.get("type") == Some(&Value::from("text")) => {
            Content::Text(one.get("text").and_then(Value::as_str).unwrap_or_default().to_owned())
        }
        [] => Content::Text(String::new()),
        _ => Content::Blocks(blocks),
    };
    if result.is_error == Some(true) {
        let text = content.text();
        return Err(if text.is_empty() {
            "(no message)".to_owned()
        } else {
            text
        });
    }
    Ok(content)
}
