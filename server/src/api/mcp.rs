//! `/mcp`: the deployment's assistants as the tools of an MCP server (the Model Context
//! Protocol's streamable HTTP transport, without sessions), as LangGraph's server offers them, so
//! that Claude Desktop, an IDE or another agent (weir's own `McpServer` among them) calls a weir
//! agent as a tool. `tools/list` names each assistant (its name made a valid tool name: spaces to
//! `_`, other characters outside `[A-Za-z0-9_.-]` dropped, 128 at most) with its graph's input
//! schema; `tools/call` runs it as a stateless run with the call's arguments as input (and its
//! `context`) and answers the run's output as JSON text, a failed run as a result with `isError`.
//! Every answer is one JSON body; a `GET` (the server's own event stream) and a `DELETE` (the end
//! of a session) are refused with 405, as the transport allows.

use super::jsonrpc::{internal, RpcFailure, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR};
use super::AppState;
use crate::db::AssistantQuery;
use crate::model::Assistant;
use crate::runs::{RunCreate, RunError};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{json, Map, Value};
use std::collections::HashSet;

/// The protocol versions this server speaks; it answers a client that asks for another with
/// the latest, which the client may take or leave.
const VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// How many tools a page of `tools/list` holds (LangGraph's page).
const PAGE: usize = 100;

/// How many assistants `tools/call` looks through for the one a tool name stands for.
const MAX_ASSISTANTS: usize = 1_000;

pub(super) fn router() -> axum::Router<AppState> {
    let endpoint = || post(message).get(refused).delete(refused);
    axum::Router::new().route("/mcp", endpoint()).route("/mcp/", endpoint())
}

/// `GET` and `DELETE`: no server-sent stream, no session to end.
async fn refused() -> Response {
    (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "POST")]).into_response()
}

/// A JSON-RPC error, answered with `status` (400 for a message that is none, 200 for a request
/// that failed).
fn rpc_error(status: StatusCode, id: &Value, code: i64, message: impl Into<String>) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}});
    (status, axum::Json(body)).into_response()
}

/// Whether the client takes a JSON answer: its `Accept` names JSON, event streams or anything
/// (no `Accept` at all is taken as anything).
fn accepts_json(headers: &HeaderMap) -> bool {
    let Some(accept) = headers.get(header::ACCEPT) else {
        return true;
    };
    let accept = accept.to_str().unwrap_or_default();
    ["application/json", "text/event-stream", "*/*", "application/*"]
        .iter()
        .any(|kind| accept.contains(kind))
}

/// `POST /mcp`: one JSON-RPC message. A request is answered; a notification or a response (the
/// client's answer to a server request, which this server never makes) is taken with 202.
async fn message(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let none = Value::Null;
    if !accepts_json(&headers) {
        let detail = "header `Accept`: must include application/json or text/event-stream";
        return rpc_error(StatusCode::NOT_ACCEPTABLE, &none, INVALID_REQUEST, detail);
    }
    let message: Value = match serde_json::from_slice(&body) {
        Ok(m) => m,
        Err(e) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                &none,
                PARSE_ERROR,
                format!("body: not JSON: {e}"),
            )
        }
    };
    let Some(message) = message.as_object() else {
        let detail = "body: expected one JSON-RPC message (an object; batches are not taken)";
        return rpc_error(StatusCode::BAD_REQUEST, &none, INVALID_REQUEST, detail);
    };
    let id = message.get("id").unwrap_or(&none);
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        let detail = "body field `jsonrpc`: expected \"2.0\"";
        return rpc_error(StatusCode::BAD_REQUEST, id, INVALID_REQUEST, detail);
    }
    let method = match message.get("method") {
        None => None,
        Some(Value::String(method)) => Some(method.as_str()),
        Some(_) => {
            let detail = "body field `method`: expected a method's name (a string)";
            return rpc_error(StatusCode::BAD_REQUEST, id, INVALID_REQUEST, detail);
        }
    };
    let answered = message.contains_key("result") || message.contains_key("error");
    let method = match method {
        Some(method) if !id.is_null() => method,
        // A notification, or the client's answer to a request (this server makes none).
        Some(_) => return StatusCode::ACCEPTED.into_response(),
        None if answered && !id.is_null() => return StatusCode::ACCEPTED.into_response(),
        None => {
            let detail = "body: neither a request, a notification nor a response (no `method`; no `id` with a `result` or an `error`)";
            return rpc_error(StatusCode::BAD_REQUEST, id, INVALID_REQUEST, detail);
        }
    };
    let params = message.get("params").cloned().unwrap_or_else(|| json!({}));
    let answer = match method {
        "initialize" => Ok(initialize(&params)),
        "ping" => Ok(json!({})),
        "tools/list" => tools_list(&state, &params).await,
        "tools/call" => tools_call(&state, &params).await,
        other => Err((METHOD_NOT_FOUND, format!("Method not found: {other}"))),
    };
    match answer {
        Ok(result) => axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response(),
        Err((code, message)) => rpc_error(StatusCode::OK, id, code, message),
    }
}

/// `initialize`: the version asked for if spoken here, else the latest; tools only.
fn initialize(params: &Value) -> Value {
    let asked = params.get("protocolVersion").and_then(Value::as_str);
    let version = asked
        .filter(|v| VERSIONS.contains(v))
        .unwrap_or(VERSIONS[VERSIONS.len() - 1]);
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": {"name": "weir", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// An assistant's name as a tool name (`^[A-Za-z0-9_.-]{1,128}$`): runs of white space become
/// one `_`, other characters outside the set are dropped, and it is cut at 128.
pub(crate) fn tool_name(name: &str) -> String {
    let mut out = String::new();
    let mut space = false;
    for c in name.trim().chars() {
        if c.is_whitespace() {
            space = true;
            continue;
        }
        if space {
            out.push('_');
            space = false;
        }
        if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
            out.push(c);
        }
    }
    out.chars().take(128).collect()
}

/// The tool of `assistant`, or `None` when its graph is not served here.
fn tool(state: &AppState, assistant: &Assistant, name: String) -> Option<Value> {
    let Some(graph) = state.graphs.get(&assistant.graph_id) else {
        tracing::warn!(assistant_id = %assistant.assistant_id, graph_id = %assistant.graph_id, "an assistant's graph is not served; left out of the MCP tools");
        return None;
    };
    let mut schema = match graph.schemas().input {
        Value::Object(schema) => schema,
        _ => Map::new(),
    };
    // MCP asks for an object's schema.
    schema.entry("type").or_insert_with(|| json!("object"));
    let description = assistant
        .description
        .clone()
        .unwrap_or_else(|| format!("Tool based on the {} assistant", assistant.name));
    Some(json!({
        "name": name,
        "title": assistant.name,
        "description": description,
        "inputSchema": schema,
        "annotations": {
            "readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": true,
        },
    }))
}

/// `tools/list`: a page of the assistants (`cursor`: how many come before it), each once by
/// tool name (the first of those sharing one).
async fn tools_list(state: &AppState, params: &Value) -> Result<Value, RpcFailure> {
    let offset = match params.get("cursor") {
        None | Some(Value::Null) => Some(0),
        Some(Value::String(s)) => s.parse().ok(),
        Some(n) => n.as_u64().and_then(|n| usize::try_from(n).ok()),
    }
    .ok_or_else(|| {
        (
            INVALID_PARAMS,
            "params field `cursor`: not a cursor this server gave".to_owned(),
        )
    })?;
    let query = AssistantQuery {
        limit: PAGE,
        offset,
        ..AssistantQuery::default()
    };
    let assistants = state.catalog.search_assistants(&query).await.map_err(internal)?;
    let mut names = HashSet::new();
    let tools: Vec<Value> = assistants
        .iter()
        .filter_map(|a| {
            let name = tool_name(&a.name);
            names.insert(name.clone()).then(|| tool(state, a, name)).flatten()
        })
        .collect();
    let mut result = json!({"tools": tools});
    if assistants.len() == PAGE {
        result["nextCursor"] = json!((offset + PAGE).to_string());
    }
    Ok(result)
}

/// `tools/call`: the assistant named, run as a stateless run on the call's `arguments`.
async fn tools_call(state: &AppState, params: &Value) -> Result<Value, RpcFailure> {
    let name = params.get("name").and_then(Value::as_str).unwrap_or_default();
    if name.is_empty() {
        return Err((INVALID_PARAMS, "params field `name`: expected a tool's name".to_owned()));
    }
    let query = AssistantQuery {
        limit: MAX_ASSISTANTS,
        ..AssistantQuery::default()
    };
    let assistants = state.catalog.search_assistants(&query).await.map_err(internal)?;
    let mut named = assistants.iter().filter(|a| tool_name(&a.name) == name);
    let assistant = match (named.next(), named.next()) {
        (Some(a), None) => a,
        (None, _) => return Err((INVALID_PARAMS, format!("Unknown tool: {name}"))),
        (Some(_), Some(_)) => return Err((INVALID_PARAMS, format!("Multiple tools found with the name {name}"))),
    };
    let arguments = params.get("arguments").cloned().unwrap_or_else(|| json!({}));
    for field in ["arguments", "context"] {
        if let Some(path) = params.get(field).and_then(|v| super::body::nul_at(v, field.to_owned())) {
            let why = "holds the NUL character (\\u0000), which the server does not store";
            return Err((INVALID_PARAMS, format!("params field `{path}`: {why}")));
        }
    }
    let body = json!({
        "assistant_id": assistant.assistant_id,
        "input": arguments,
        "context": params.get("context").cloned().unwrap_or(Value::Null),
    });
    let body: RunCreate =
        serde_json::from_value(body).map_err(|e| (INVALID_PARAMS, format!("params field `context`: {e}")))?;
    let out = async {
        let run = state.runs.create(None, body).await?;
        state.runs.outcome(&run).await
    };
    let out = out.await.map_err(|e| match e {
        // The arguments do not fit the graph's input: the message names the field, here.
        RunError::Invalid(m) | RunError::BadRequest(m) => (INVALID_PARAMS, in_arguments(&m)),
        other => internal(other),
    })?;
    if let Some(error) = out.get("__error__") {
        let kind = error.get("error").and_then(Value::as_str).unwrap_or("Error");
        let message = error.get("message").and_then(Value::as_str).unwrap_or_default();
        let text = if message.is_empty() {
            kind.to_owned()
        } else {
            format!("{kind}: {message}")
        };
        return Ok(json!({"isError": true, "content": [{"type": "text", "text": text}]}));
    }
    let mut result = json!({"content": [{"type": "text", "text": out.to_string()}]});
    if out.is_object() {
        result["structuredContent"] = out;
    }
    Ok(result)
}

/// A run body's refusal (`input.topic: invalid type…`, `body field \`context\`: …`) in the
/// words of the call: the field under `params`.
fn in_arguments(message: &str) -> String {
    let message = message.strip_prefix("body field ").unwrap_or(message);
    let Some((path, why)) = message.split_once(": ") else {
        return format!("params field `arguments`: {message}");
    };
    let path = path.trim_matches('`');
    match path.strip_prefix("input") {
        Some(rest) if rest.is_empty() || rest.starts_with(['.', '[']) => {
            format!("params field `arguments{rest}`: {why}")
        }
        _ if path.starts_with("context") => format!("params field `{path}`: {why}"),
        _ => format!("params field `arguments`: {message}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_assistants_name_becomes_a_valid_tool_name() {
        assert_eq!(tool_name("chain"), "chain");
        assert_eq!(tool_name("  my  research\tagent "), "my_research_agent");
        assert_eq!(tool_name("café/agent v2.1"), "cafagent_v2.1");
        assert_eq!(tool_name("a-b_c.d"), "a-b_c.d");
        assert_eq!(tool_name(&"x".repeat(200)).len(), 128);
        assert_eq!(tool_name("!!!"), "");
    }

    #[test]
    fn a_refused_input_names_the_field_of_the_call() {
        let topic = "input.topic: invalid type: integer `7`, expected a string";
        assert_eq!(
            in_arguments(topic),
            "params field `arguments.topic`: invalid type: integer `7`, expected a string"
        );
        assert_eq!(
            in_arguments("input: expected an object"),
            "params field `arguments`: expected an object"
        );
        assert_eq!(
            in_arguments("body field `context.user`: missing"),
            "params field `context.user`: missing"
        );
        assert_eq!(in_arguments("no field here"), "params field `arguments`: no field here");
    }

    #[test]
    fn initialize_answers_the_version_asked_when_spoken_else_the_latest() {
        assert_eq!(
            initialize(&json!({"protocolVersion": "2025-03-26"}))["protocolVersion"],
            "2025-03-26"
        );
        assert_eq!(
            initialize(&json!({"protocolVersion": "2099-01-01"}))["protocolVersion"],
            "2025-11-25"
        );
        assert_eq!(
            initialize(&json!({}))["capabilities"],
            json!({"tools": {"listChanged": false}})
        );
    }
}
