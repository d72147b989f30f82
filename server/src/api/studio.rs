//! The studio's own routes under `/studio/api/`, weir extensions beside LangGraph's API (which
//! they leave unchanged): a thread's timeline a page at a time without the checkpoints' values,
//! and one checkpoint with its values abbreviated and its changes from its parent computed here
//! ([`crate::studio::diff`]), so that a state of megabytes never travels whole to the browser.

use super::state::state_at;
use super::threads::{find_without_values, graph_of};
use super::{ApiError, AppState};
use crate::studio::diff::{abbreviate, diff, LIMITS};
use axum::extract::{Path, State};
use axum::routing::get;
use serde::Deserialize;
use serde_json::{json, Value};

/// The most checkpoints one page of the timeline lists.
const MAX_PAGE: usize = 1_000;

pub(super) fn router() -> axum::Router<AppState> {
    axum::Router::new()
        .route("/studio/api/threads/{tid}/timeline", get(timeline))
        .route("/studio/api/threads/{tid}/checkpoint", get(checkpoint))
}

/// `GET /studio/api/threads/{tid}/timeline?limit=&before=`.
#[derive(Debug, Deserialize)]
struct TimelineParams {
    limit: Option<usize>,
    before: Option<String>,
}

/// One page of the thread's checkpoints, newest first, without their values.
async fn timeline(
    State(state): State<AppState>,
    Path(tid): Path<String>,
    super::params::Query(p): super::params::Query<TimelineParams>,
) -> Result<axum::Json<Vec<Value>>, ApiError> {
    let limit = p.limit.unwrap_or(100);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(ApiError::invalid(format!(
            "query parameter `limit`: {limit} is not between 1 and {MAX_PAGE}"
        )));
    }
    let thread = find_without_values(&state, &tid).await?;
    let Some(graph) = graph_of(&state, &thread)? else {
        return Ok(axum::Json(Vec::new()));
    };
    Ok(axum::Json(
        graph.timeline(&thread.thread_id, p.before.as_deref(), limit).await?,
    ))
}

/// `GET /studio/api/threads/{tid}/checkpoint?checkpoint_id=`.
#[derive(Debug, Deserialize)]
struct CheckpointParams {
    checkpoint_id: Option<String>,
}

/// The checkpoint (the head without `checkpoint_id`): `{"state": its ThreadState with `values`
/// abbreviated, "changes": [{path, kind, before?, after?}] from its parent, "more_changes": the
/// count of changes not listed}`. A thread without checkpoints has `"state": null`.
async fn checkpoint(
    State(state): State<AppState>,
    Path(tid): Path<String>,
    super::params::Query(p): super::params::Query<CheckpointParams>,
) -> Result<axum::Json<Value>, ApiError> {
    let mut at = state_at(&state, &tid, p.checkpoint_id.as_deref(), false).await?;
    if at["checkpoint_id"].is_null() {
        return Ok(axum::Json(json!({"state": null, "changes": [], "more_changes": 0})));
    }
    let parent = match at["parent_checkpoint_id"].as_str() {
        Some(id) => Some(state_at(&state, &tid, Some(id), false).await?),
        None => None,
    };
    let (changes, more) = diff(parent.as_ref().map(|p| &p["values"]), &at["values"], &LIMITS);
    at["values"] = abbreviate(&at["values"], &LIMITS);
    Ok(axum::Json(json!({
        "state": at,
        "changes": changes.iter().map(|c| c.to_json(&LIMITS)).collect::<Vec<_>>(),
        "more_changes": more,
    })))
}
