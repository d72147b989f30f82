//! The agent card of an assistant (A2A's discovery document): its name and description, its
//! endpoint's URL on the host the client asked, both protocol versions it speaks, LangGraph's
//! history-scope extension, the media types it takes and gives (from the assistant's metadata),
//! and one skill, itself.

use super::{find_assistant, HISTORY_SCOPE_HEADER};
use crate::api::jsonrpc::INTERNAL_ERROR;
use crate::api::{ApiError, AppState};
use crate::model::Assistant;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

/// LangGraph's A2A extension choosing a task's history: the whole context, or the task's own.
const HISTORY_SCOPE_EXTENSION: &str = "https://langchain.com/a2a/extensions/history-scope/v1";

/// The protocol version the cards announce as their main one (0.3's field); they list 1.0 too.
const PROTOCOL_VERSION: &str = "0.3.0";

/// `GET /.well-known/agent-card.json?assistant_id=…`.
pub(super) async fn card_asked(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(query): Query<std::collections::HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let Some(id) = query.get("assistant_id").filter(|s| !s.is_empty()) else {
        return Err(ApiError::bad_request(
            "query parameter `assistant_id`: missing (the assistant whose card this is)",
        ));
    };
    card(&state, &headers, id).await
}

/// `GET /a2a/{assistant_id}/.well-known/agent-card.json`.
pub(super) async fn card_of(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(assistant_id): Path<String>,
) -> Result<Response, ApiError> {
    card(&state, &headers, &assistant_id).await
}

/// The media types an assistant's card announces it takes (`field` `input_modes`) or gives
/// (`output_modes`): those of its metadata's `a2a` object, as LangGraph's server reads them, else
/// JSON and text.
fn card_modes(assistant: &Assistant, field: &str) -> Result<Value, ApiError> {
    let default = || json!(["application/json", "text/plain"]);
    let Some(a2a) = assistant.metadata.get("a2a") else {
        return Ok(default());
    };
    let id = &assistant.assistant_id;
    let Some(a2a) = a2a.as_object() else {
        return Err(ApiError::internal(format!(
            "assistant `{id}`: metadata field `a2a` must be an object"
        )));
    };
    let modes = match a2a.get(field) {
        None | Some(Value::Null) => return Ok(default()),
        Some(Value::Array(modes)) if !modes.is_empty() => modes,
        Some(_) => {
            return Err(ApiError::internal(format!(
                "assistant `{id}`: metadata field `a2a.{field}` must be a non-empty array of media types"
            )))
        }
    };
    modes
        .iter()
        .map(|m| match m.as_str().map(str::trim) {
            Some(mode) if !mode.is_empty() => Ok(json!(mode)),
            _ => Err(ApiError::internal(format!(
                "assistant `{id}`: metadata field `a2a.{field}` must be a non-empty array of media types, not {m}"
            ))),
        })
        .collect()
}

/// The agent card of assistant `id`: its name and description, its endpoint's URL on the host
/// the client asked, what it takes and gives, and one skill, itself.
async fn card(state: &AppState, headers: &HeaderMap, id: &str) -> Result<Response, ApiError> {
    let assistant = find_assistant(state, id).await.map_err(|(code, why)| match code {
        INTERNAL_ERROR => ApiError::internal(why),
        _ => ApiError::not_found(why),
    })?;
    if !state.graphs.contains_key(&assistant.graph_id) {
        return Err(ApiError::not_found(format!(
            "graph `{}` of assistant `{id}` is not served here",
            assistant.graph_id
        )));
    }
    let description = assistant
        .description
        .clone()
        .unwrap_or_else(|| format!("{} assistant", assistant.name));
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    let scheme = headers
        .get("x-forwarded-proto")
        .and_then(|h| h.to_str().ok())
        .unwrap_or("http");
    let url = format!("{scheme}://{host}/a2a/{}", assistant.assistant_id);
    let (input_modes, output_modes) = (
        card_modes(&assistant, "input_modes")?,
        card_modes(&assistant, "output_modes")?,
    );
    let card = json!({
        "protocolVersion": PROTOCOL_VERSION,
        "name": assistant.name,
        "description": description,
        "url": url,
        "preferredTransport": "JSONRPC",
        "additionalInterfaces": [{"url": url, "transport": "JSONRPC"}],
        // A2A 1.0's list of the same endpoint: a 1.0 client takes the 1.0 entry.
        "supportedInterfaces": [
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": PROTOCOL_VERSION},
        ],
        "version": env!("CARGO_PKG_VERSION"),
        "capabilities": {
            "streaming": true, "pushNotifications": false, "stateTransitionHistory": false,
            "extensions": [{
                "uri": HISTORY_SCOPE_EXTENSION,
                "description": "Choose task-only or full-context response history",
                "required": false,
                "params": {
                    "header": HISTORY_SCOPE_HEADER, "values": ["context", "task"], "default": "context",
                    "methods": ["SendMessage", "GetTask", "ListTasks"],
                },
            }],
        },
        "defaultInputModes": input_modes,
        "defaultOutputModes": output_modes,
        "skills": [{
            "id": format!("{}-main", assistant.assistant_id),
            "name": format!("{} Capabilities", assistant.name),
            "description": description,
            "tags": ["assistant", "weir"],
            "examples": [],
            "inputModes": input_modes,
            "outputModes": output_modes,
        }],
        "supportsAuthenticatedExtendedCard": false,
    });
    Ok(axum::Json(card).into_response())
}
