//! A thread's state routes: `GET /threads/{tid}/state[/{checkpoint_id}]`, `POST …/state/checkpoint`,
//! `POST …/state` (an edit) and `…/history`, through the [`ServedGraph`](crate::graph::ServedGraph) whose checkpoints the
//! thread holds. A thread no graph has touched reads as the empty state, as LangGraph's server.

use super::threads::{find, find_without_values, graph_of};
use super::{ApiError, AppState, Json};
use crate::db::ThreadUpdate;
use crate::graph::{HistoryQuery, StateUpdate};
use crate::model::{Thread, ThreadStatus};
use axum::extract::{Path, State};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

pub(super) fn router() -> axum::Router<AppState> {
    axum::Router::new()
        .route("/threads/{thread_id}/state", get(read).post(update))
        .route("/threads/{thread_id}/state/checkpoint", post(read_at_body))
        .route("/threads/{thread_id}/state/{checkpoint_id}", get(read_at))
        .route("/threads/{thread_id}/history", post(history).get(history_get))
}

/// The state of a thread without checkpoints.
fn empty_state() -> Value {
    json!({
        "values": {}, "next": [], "tasks": [], "metadata": null, "created_at": null,
        "checkpoint": null, "parent_checkpoint": null, "interrupts": [],
        "checkpoint_id": null, "parent_checkpoint_id": null,
    })
}

/// The thread's state at `checkpoint_id` (its head when `None`).
pub(super) async fn state_at(
    state: &AppState,
    tid: &str,
    checkpoint_id: Option<&str>,
    subgraphs: bool,
) -> Result<Value, ApiError> {
    let thread = find_without_values(state, tid).await?;
    let Some(graph) = graph_of(state, &thread)? else {
        return match checkpoint_id {
            None => Ok(empty_state()),
            Some(id) => Err(ApiError::not_found(format!(
                "Checkpoint {id} of thread {tid} not found"
            ))),
        };
    };
    match graph.state(&thread.thread_id, checkpoint_id, subgraphs).await? {
        Some(s) => Ok(s),
        None => match checkpoint_id {
            None => Ok(empty_state()),
            Some(id) => Err(ApiError::not_found(format!(
                "Checkpoint {id} of thread {tid} not found"
            ))),
        },
    }
}

#[derive(Debug, Deserialize, Default)]
struct StateParams {
    #[serde(default)]
    subgraphs: bool,
}

async fn read(
    State(state): State<AppState>,
    Path(tid): Path<String>,
    super::params::Query(p): super::params::Query<StateParams>,
) -> Result<axum::Json<Value>, ApiError> {
    Ok(axum::Json(state_at(&state, &tid, None, p.subgraphs).await?))
}

async fn read_at(
    State(state): State<AppState>,
    Path((tid, checkpoint_id)): Path<(String, String)>,
    super::params::Query(p): super::params::Query<StateParams>,
) -> Result<axum::Json<Value>, ApiError> {
    Ok(axum::Json(
        state_at(&state, &tid, Some(&checkpoint_id), p.subgraphs).await?,
    ))
}

/// A checkpoint as clients send it: `{"checkpoint_id": …, "checkpoint_ns": …}`.
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct CheckpointRef {
    checkpoint_id: Option<String>,
}

/// `POST /threads/{tid}/state/checkpoint`.
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct AtBody {
    checkpoint: CheckpointRef,
    subgraphs: bool,
}

async fn read_at_body(
    State(state): State<AppState>,
    Path(tid): Path<String>,
    Json(body): Json<AtBody>,
) -> Result<axum::Json<Value>, ApiError> {
    let id = body.checkpoint.checkpoint_id;
    Ok(axum::Json(state_at(&state, &tid, id.as_deref(), body.subgraphs).await?))
}

/// `POST /threads/{tid}/state`.
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct UpdateBody {
    values: Option<Value>,
    as_node: Option<String>,
    checkpoint: Option<CheckpointRef>,
    checkpoint_id: Option<String>,
}

async fn update(
    State(state): State<AppState>,
    Path(tid): Path<String>,
    Json(body): Json<UpdateBody>,
) -> Result<axum::Json<Value>, ApiError> {
    let thread = find(&state, &tid).await?;
    if thread.status == crate::model::ThreadStatus::Busy {
        return Err(ApiError::conflict("Thread is busy"));
    }
    let graph = graph_of(&state, &thread)?
        .ok_or_else(|| ApiError::bad_request(format!("Thread {} has no graph ID", thread.thread_id)))?;
    let checkpoint_id = body.checkpoint_id.or(body.checkpoint.and_then(|c| c.checkpoint_id));
    let edit = StateUpdate {
        values: body.values,
        as_node: body.as_node,
        checkpoint_id,
        metadata: graph_id_pair(&thread),
    };
    let id = graph.update_state(&thread.thread_id, edit).await?;
    let tid = thread.thread_id.clone();
    let head = graph.state(&tid, None, false).await?;
    refresh(&state, thread, head.as_ref()).await?;
    state
        .runs
        .state_updated(&tid, head.as_ref().unwrap_or(&empty_state()))
        .await;
    let configurable = json!({"thread_id": tid, "checkpoint_ns": "", "checkpoint_id": id});
    Ok(axum::Json(json!({
        "checkpoint": configurable,
        "configurable": configurable,
        "checkpoint_id": id,
    })))
}

/// The `graph_id` LangGraph's server records in the metadata of a checkpoint an edit writes:
/// the thread's.
pub(super) fn graph_id_pair(thread: &Thread) -> BTreeMap<String, String> {
    let graph_id = thread.metadata.get("graph_id").and_then(Value::as_str);
    graph_id
        .map(|g| ("graph_id".to_owned(), g.to_owned()))
        .into_iter()
        .collect()
}

/// Writes the thread's row after its state changed outside a run: its values and open
/// interrupts from `head` (the thread's state now; `None` without checkpoints), the times, and
/// its status as LangGraph's server sets it then: `interrupted` while the head has tasks to run
/// (an edit `as_node` that leaves a next node, a thread made with `supersteps`), else `idle`.
/// A narrow update of the row, so a run's worker writing the status meanwhile is not undone:
/// a thread a run holds stays busy.
pub(super) async fn refresh(state: &AppState, thread: Thread, head: Option<&Value>) -> Result<Thread, ApiError> {
    let pending = head
        .as_ref()
        .and_then(|h| h.get("next"))
        .and_then(Value::as_array)
        .is_some_and(|next| !next.is_empty());
    let update = ThreadUpdate {
        values: Some(head.and_then(|h| h.get("values").cloned()).unwrap_or(thread.values)),
        interrupts: Some(head.map(interrupts_by_task).unwrap_or(thread.interrupts)),
        status_unless_busy: Some(if pending {
            ThreadStatus::Interrupted
        } else {
            ThreadStatus::Idle
        }),
        ..ThreadUpdate::default()
    };
    state
        .catalog
        .update_thread(&thread.thread_id, &update)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Thread {} not found", thread.thread_id)))
}

/// `{task_id: [{id, value}]}` from a ThreadState's tasks.
fn interrupts_by_task(head: &Value) -> Map<String, Value> {
    let tasks = head.get("tasks").and_then(Value::as_array).into_iter().flatten();
    tasks
        .filter_map(|t| {
            let open = t.get("interrupts")?.as_array().filter(|i| !i.is_empty())?;
            Some((t.get("id")?.as_str()?.to_owned(), Value::Array(open.clone())))
        })
        .collect()
}

/// `POST /threads/{tid}/history`.
#[derive(Debug, Deserialize)]
#[serde(default)]
struct HistoryBody {
    limit: usize,
    before: Option<Value>,
    metadata: Option<Map<String, Value>>,
    checkpoint: Option<CheckpointRef>,
}

impl Default for HistoryBody {
    fn default() -> Self {
        Self {
            limit: 10,
            before: None,
            metadata: None,
            checkpoint: None,
        }
    }
}

/// `before` as a checkpoint id: a string, or `{"checkpoint_id": …}` / `{"configurable": {…}}`.
fn before_id(before: Option<Value>) -> Result<Option<String>, ApiError> {
    let Some(before) = before else { return Ok(None) };
    let id = match &before {
        Value::Null => return Ok(None),
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o
            .get("checkpoint_id")
            .or_else(|| o.get("configurable").and_then(|c| c.get("checkpoint_id")))
            .and_then(Value::as_str)
            .map(str::to_owned),
        _ => None,
    };
    id.map(Some)
        .ok_or_else(|| ApiError::invalid("body field `before`: expected a checkpoint id or {\"checkpoint_id\": …}"))
}

async fn history(
    State(state): State<AppState>,
    Path(tid): Path<String>,
    Json(body): Json<HistoryBody>,
) -> Result<axum::Json<Vec<Value>>, ApiError> {
    let query = HistoryQuery {
        limit: body.limit,
        before: before_id(body.before)?,
        metadata: body.metadata,
        checkpoint_id: body.checkpoint.and_then(|c| c.checkpoint_id),
    };
    history_of(&state, &tid, &query).await
}

/// `GET /threads/{tid}/history?limit=&before=`.
#[derive(Debug, Deserialize)]
struct HistoryParams {
    limit: Option<usize>,
    before: Option<String>,
}

async fn history_get(
    State(state): State<AppState>,
    Path(tid): Path<String>,
    super::params::Query(p): super::params::Query<HistoryParams>,
) -> Result<axum::Json<Vec<Value>>, ApiError> {
    let query = HistoryQuery {
        limit: p.limit.unwrap_or(10),
        before: p.before,
        ..HistoryQuery::default()
    };
    history_of(&state, &tid, &query).await
}

async fn history_of(state: &AppState, tid: &str, query: &HistoryQuery) -> Result<axum::Json<Vec<Value>>, ApiError> {
    let thread = find_without_values(state, tid).await?;
    match graph_of(state, &thread)? {
        Some(graph) => Ok(axum::Json(graph.history(&thread.thread_id, query).await?)),
        None => Ok(axum::Json(Vec::new())),
    }
}
