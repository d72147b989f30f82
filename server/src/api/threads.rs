//! The threads routes' catalog side (`/threads`, `/threads/{tid}`, search, count, copy, prune):
//! the rows of [`Catalog`](crate::db::Catalog), and the checkpoints a delete or a copy must
//! follow through the thread's graph. The state routes (`/state`, `/history`) are [`super::state`]'s.

use super::assistants::IfExistsBody;
use super::params::{checked_uuid, thread_id, Query};
use super::select::{select_fields, Extract};
use super::{state, ApiError, AppState, Json};
use crate::db::{ThreadQuery, ThreadUpdate};
use crate::graph::{ServedGraph, StateUpdate};
use crate::model::{Object, Thread, ThreadStatus, ThreadTtl, TtlStrategy};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;

pub(super) fn router() -> axum::Router<AppState> {
    axum::Router::new()
        .route("/threads", post(create))
        .route("/threads/search", post(search))
        .route("/threads/count", post(count))
        .route("/threads/prune", post(prune))
        .route("/threads/{thread_id}", get(read).patch(patch).delete(delete))
        .route("/threads/{thread_id}/copy", post(copy))
        .merge(state::router())
}

/// The thread `tid`, or 404 `Thread {tid} not found`.
pub(super) async fn find(state: &AppState, tid: &str) -> Result<Thread, ApiError> {
    let tid = thread_id(tid)?;
    state
        .catalog
        .get_thread(&tid)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Thread {tid} not found")))
}

/// The thread `tid` without its values (see [`Catalog::get_thread_without_values`]), or 404
/// `Thread {tid} not found`: for the routes that need only its graph.
///
/// [`Catalog::get_thread_without_values`]: crate::db::Catalog::get_thread_without_values
pub(super) async fn find_without_values(state: &AppState, tid: &str) -> Result<Thread, ApiError> {
    let tid = thread_id(tid)?;
    state
        .catalog
        .get_thread_without_values(&tid)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Thread {tid} not found")))
}

/// The graph whose checkpoints the thread holds: the one its metadata's `graph_id` names (set by
/// its first run, or when it was made); `None` for a thread no graph has touched.
pub(super) fn graph_of(state: &AppState, thread: &Thread) -> Result<Option<Arc<dyn ServedGraph>>, ApiError> {
    let Some(graph_id) = thread.metadata.get("graph_id") else {
        return Ok(None);
    };
    let name = graph_id.as_str().unwrap_or_default();
    match state.graphs.get(name) {
        Some(graph) => Ok(Some(graph.clone())),
        None => Err(ApiError::not_found(format!(
            "Graph {graph_id} of thread {} not found",
            thread.thread_id
        ))),
    }
}

/// `POST /threads`.
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct CreateBody {
    thread_id: Option<String>,
    metadata: Object,
    if_exists: IfExistsBody,
    /// Minutes, or `{"ttl": minutes, "strategy": "delete" | "keep_latest"}`.
    ttl: Option<Value>,
    supersteps: Vec<Superstep>,
}

/// One superstep of `POST /threads`' `supersteps`: updates applied as one edit each, in order.
#[derive(Debug, Deserialize)]
struct Superstep {
    updates: Vec<SuperstepUpdate>,
}

#[derive(Debug, Deserialize)]
struct SuperstepUpdate {
    values: Option<Value>,
    as_node: Option<String>,
}

/// A thread as the API shows it. A thread whose state was never written (made, not yet run) has
/// no `error` and `interrupts` keys, as LangGraph's (`sdk_trace.txt`, `threads.create`); they
/// appear once a run or a state update has written its state.
pub(super) fn thread_json(t: &Thread) -> Value {
    let mut json = serde_json::to_value(t).unwrap_or(Value::Null);
    let fresh =
        t.state_updated_at == t.created_at && t.values.is_null() && t.interrupts.is_empty() && t.error.is_null();
    if let (true, Some(object)) = (fresh, json.as_object_mut()) {
        object.remove("error");
        object.remove("interrupts");
    }
    json
}

async fn create(State(state): State<AppState>, Json(body): Json<CreateBody>) -> Result<axum::Json<Value>, ApiError> {
    let tid = match &body.thread_id {
        Some(tid) => checked_uuid("body field `thread_id`", tid)?,
        None => uuid::Uuid::now_v7().to_string(),
    };
    let ttl = ttl_of(&state, body.ttl.as_ref())?;
    let thread = Thread::new(tid, body.metadata);
    let graph = if body.supersteps.is_empty() {
        None
    } else {
        let graph = graph_of(&state, &thread)?;
        let no_graph = || ApiError::bad_request(format!("Thread {} has no graph ID", thread.thread_id));
        Some(graph.ok_or_else(no_graph)?)
    };
    let made = state.catalog.create_thread(&thread, body.if_exists.into()).await?;
    let new = made == thread;
    if let (true, Some(ttl)) = (new, ttl) {
        state.catalog.set_thread_ttl(&made.thread_id, Some(ttl)).await?;
    }
    let (Some(graph), true) = (graph, new) else {
        return Ok(axum::Json(thread_json(&made)));
    };
    // Each superstep one checkpoint, its updates applied together; as LangGraph's, the thread's
    // `graph_id` in the first one's metadata (its bulk update carries the request's
    // configuration to its first superstep only).
    let mut metadata = state::graph_id_pair(&made);
    for (step, superstep) in body.supersteps.into_iter().enumerate() {
        let edits = superstep
            .updates
            .into_iter()
            .map(|update| StateUpdate {
                values: update.values,
                as_node: update.as_node,
                checkpoint_id: None,
                // A superstep's checkpoint takes its updates' pairs: the first update's suffice.
                metadata: std::mem::take(&mut metadata),
            })
            .collect();
        graph
            .update_superstep(&made.thread_id, edits)
            .await
            .map_err(|e| ApiError::from(e).prefixed(&format!("body field `supersteps[{step}]`: ")))?;
    }
    let head = graph.state(&made.thread_id, None, false).await?;
    Ok(axum::Json(thread_json(
        &state::refresh(&state, made, head.as_ref()).await?,
    )))
}

/// The query of `GET /threads/{tid}`: `include`, extra fields, comma-separated (the SDK's
/// `threads.get(include=["ttl"])`).
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct ReadQuery {
    include: Option<String>,
}

/// `GET /threads/{tid}`: the thread; with `include=ttl`, its time-to-live as `ttl`
/// (`{"strategy", "ttl_minutes", "expires_at"}`, absent when it has none), as LangGraph's server
/// gives it.
async fn read(
    State(state): State<AppState>,
    Path(tid): Path<String>,
    Query(q): Query<ReadQuery>,
) -> Result<axum::Json<Value>, ApiError> {
    let mut ttl = false;
    for field in q.include.iter().flat_map(|i| i.split(',')).map(str::trim) {
        match field {
            "ttl" => ttl = true,
            "" => {}
            other => {
                return Err(ApiError::invalid(format!(
                    "query parameter `include`: `{other}` is no field to include: `ttl` is"
                )))
            }
        }
    }
    let thread = find(&state, &tid).await?;
    let mut json = thread_json(&thread);
    if ttl {
        if let (Some(ttl), Some(object)) = (state.catalog.thread_ttl(&thread.thread_id).await?, json.as_object_mut()) {
            object.insert("ttl".into(), ttl_json(&thread, ttl));
        }
    }
    Ok(axum::Json(json))
}

/// A thread's TTL as LangGraph's server shows it: it expires `ttl_minutes` after the thread's
/// last change (its `updated_at`), unless a run or an update comes first.
fn ttl_json(thread: &Thread, ttl: ThreadTtl) -> Value {
    let expires_at = thread
        .updated_at
        .parse::<jiff::Timestamp>()
        .ok()
        .and_then(|at| {
            jiff::SignedDuration::try_from_secs_f64(ttl.minutes * 60.0)
                .ok()
                .and_then(|d| at.checked_add(d).ok())
        })
        .map(crate::model::wire_time);
    serde_json::json!({
        "strategy": ttl.strategy.as_str(),
        "ttl_minutes": ttl.minutes,
        "expires_at": expires_at,
    })
}

/// The time-to-live of a new thread: the request's `ttl`, or the server's default.
fn ttl_of(state: &AppState, ttl: Option<&Value>) -> Result<Option<ThreadTtl>, ApiError> {
    match ttl {
        None | Some(Value::Null) => Ok(state.runs.config().thread_ttl),
        Some(ttl) => ThreadTtl::from_json(ttl, "ttl").map(Some).map_err(ApiError::invalid),
    }
}

/// `PATCH /threads/{tid}`: `{"metadata": {…}}`, merged into the thread's, and a new `ttl`.
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct PatchBody {
    metadata: Object,
    ttl: Option<Value>,
}

/// `PATCH /threads/{tid}`: the thread as patched, or `204` with no body when the request has
/// `Prefer: return=minimal` (the SDK's `threads.update(return_minimal=True)`).
async fn patch(
    State(state): State<AppState>,
    Path(tid): Path<String>,
    headers: axum::http::HeaderMap,
    Json(body): Json<PatchBody>,
) -> Result<axum::response::Response, ApiError> {
    let thread = find(&state, &tid).await?;
    let ttl = match &body.ttl {
        None | Some(Value::Null) => None,
        Some(ttl) => Some(ThreadTtl::from_json(ttl, "ttl").map_err(ApiError::invalid)?),
    };
    if ttl.is_some() {
        state.catalog.set_thread_ttl(&thread.thread_id, ttl).await?;
    }
    let update = ThreadUpdate {
        metadata: Some(body.metadata),
        ..ThreadUpdate::default()
    };
    // A narrow update: a worker settling a run at the same time keeps its status and values.
    let patched = state.catalog.update_thread(&thread.thread_id, &update).await?;
    let patched = patched.ok_or_else(|| ApiError::not_found(format!("Thread {} not found", thread.thread_id)))?;
    let minimal = headers.get("prefer").is_some_and(|v| v.as_bytes() == b"return=minimal");
    Ok(if minimal {
        StatusCode::NO_CONTENT.into_response()
    } else {
        axum::Json(thread_json(&patched)).into_response()
    })
}

/// `DELETE /threads/{tid}`: its row, its runs, and its checkpoints.
async fn delete(State(state): State<AppState>, Path(tid): Path<String>) -> Result<StatusCode, ApiError> {
    let thread = find_without_values(&state, &tid).await?;
    // A 404 when the thread's graph is not served here, where the prune would pass it over.
    graph_of(&state, &thread)?;
    state.runs.prune_thread(&thread, TtlStrategy::Delete).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /threads/prune`.
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct PruneBody {
    thread_ids: Vec<String>,
    strategy: Option<TtlStrategy>,
}

/// `POST /threads/prune`: deletes the threads named (`strategy` `delete`, the default), or prunes
/// each to its latest checkpoint (`keep_latest`), as their TTL would; `{"pruned_count": n}`, the
/// threads found and pruned (an id no thread has is passed over, as LangGraph's server does).
async fn prune(State(state): State<AppState>, Json(body): Json<PruneBody>) -> Result<axum::Json<Value>, ApiError> {
    let ids = body
        .thread_ids
        .iter()
        .enumerate()
        .map(|(i, tid)| checked_uuid(&format!("body field `thread_ids[{i}]`"), tid))
        .collect::<Result<std::collections::BTreeSet<_>, _>>()?;
    let strategy = body.strategy.unwrap_or(TtlStrategy::Delete);
    let mut pruned = 0;
    for tid in ids {
        let Some(thread) = state.catalog.get_thread_without_values(&tid).await? else {
            continue;
        };
        if state.runs.prune_thread(&thread, strategy).await? {
            pruned += 1;
        }
    }
    Ok(axum::Json(serde_json::json!({ "pruned_count": pruned })))
}

/// The filters of `POST /threads/search` and `/count`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SearchBody {
    ids: Option<Vec<String>>,
    metadata: Option<Object>,
    values: Option<Object>,
    status: Option<ThreadStatus>,
    #[serde(default = "super::params::page_size")]
    limit: usize,
    offset: usize,
    sort_by: Option<String>,
    sort_order: Option<String>,
    select: Option<Vec<String>>,
    /// Search only (see [`Extract`]).
    extract: Option<Value>,
}

impl SearchBody {
    fn query(self) -> Result<ThreadQuery, ApiError> {
        // A `select` without `values` needs none read.
        let without_values = self.select.as_ref().is_some_and(|s| !s.iter().any(|f| f == "values"));
        let query = ThreadQuery {
            without_values,
            ids: self.ids,
            metadata: self.metadata,
            values: self.values,
            status: self.status,
            limit: self.limit,
            offset: self.offset,
            sort_by: self.sort_by,
            sort_order: self.sort_order,
        };
        query
            .check()
            .map_err(|e| ApiError::invalid(format!("body field {e}")))?;
        Ok(query)
    }
}

/// A thread's fields, what a `select` may name.
const THREAD_FIELDS: &[&str] = &[
    "thread_id",
    "created_at",
    "updated_at",
    "state_updated_at",
    "metadata",
    "status",
    "config",
    "values",
    "interrupts",
    "error",
];

async fn search(State(state): State<AppState>, Json(body): Json<SearchBody>) -> Result<axum::Json<Value>, ApiError> {
    let select = body.select.clone();
    let extract = Extract::parse(body.extract.as_ref(), THREAD_FIELDS)?;
    let mut query = body.query()?;
    query.without_values &= !extract.as_ref().is_some_and(|e| e.reads("values"));
    let found = state.catalog.search_threads(&query).await?;
    let rows: Vec<Value> = found.iter().map(thread_json).collect();
    let extracted: Vec<Value> = match &extract {
        Some(extract) => rows.iter().map(|row| extract.from(row)).collect(),
        None => Vec::new(),
    };
    let mut rows = select_fields(rows, select.as_deref(), THREAD_FIELDS, "body field `select`")?;
    for (row, extracted) in rows.iter_mut().zip(extracted) {
        if let Some(row) = row.as_object_mut() {
            row.insert("extracted".into(), extracted);
        }
    }
    Ok(axum::Json(Value::Array(rows)))
}

async fn count(State(state): State<AppState>, Json(body): Json<SearchBody>) -> Result<axum::Json<u64>, ApiError> {
    Ok(axum::Json(state.catalog.count_threads(&body.query()?).await?))
}

/// `POST /threads/{tid}/copy`: a new thread with the same metadata and every checkpoint.
async fn copy(State(state): State<AppState>, Path(tid): Path<String>) -> Result<axum::Json<Value>, ApiError> {
    let from = find(&state, &tid).await?;
    let mut to = Thread::new(uuid::Uuid::now_v7().to_string(), from.metadata.clone());
    to.config = from.config.clone();
    to.values = from.values.clone();
    to.status = match from.status {
        ThreadStatus::Busy => ThreadStatus::Idle,
        other => other,
    };
    to.interrupts = from.interrupts.clone();
    to.error = from.error.clone();
    let made = state.catalog.create_thread(&to, crate::db::IfExists::Raise).await?;
    if let Some(ttl) = ttl_of(&state, None)? {
        state.catalog.set_thread_ttl(&made.thread_id, Some(ttl)).await?;
    }
    if let Some(graph) = graph_of(&state, &from)? {
        graph.copy_thread(&from.thread_id, &made.thread_id).await?;
    }
    Ok(axum::Json(thread_json(&made)))
}
