//! The runs routes (§1.2 rows 15–23): create a run in the background, wait for it, or stream it,
//! on a thread or stateless (`/runs/*`, on a temporary thread); read, list, join, rejoin the
//! stream of (`Last-Event-ID`), cancel and delete a run, and follow a thread's own stream of all
//! its runs (`GET /threads/{thread_id}/stream`). The `Location` / `Content-Location` headers are
//! those of the captures. The run logic is [`crate::runs::Manager`]'s.

use super::params::flag;
use super::select::select_fields;
use super::{ApiError, AppState, Json};
use crate::bus::CancelAction;
use crate::db::InFlight;
use crate::model::{Run, RunStatus};
use crate::runs::{OnDisconnect, RunCreate, RunError, ThreadModes};
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::{FutureExt, StreamExt};
use serde::Deserialize;
use serde_json::Value;

pub(super) mod sse;

impl From<RunError> for ApiError {
    fn from(e: RunError) -> Self {
        match e {
            RunError::BadRequest(m) => Self::bad_request(m),
            RunError::Invalid(m) => Self::invalid(m),
            RunError::NotFound(m) => Self::not_found(m),
            RunError::Conflict(m) => Self::conflict(m),
            RunError::Full(m) => Self::too_many(m),
            RunError::Internal(m) => Self::internal(m),
        }
    }
}

pub(super) fn router() -> axum::Router<AppState> {
    axum::Router::new()
        .route("/threads/{thread_id}/runs", post(create).get(list))
        .route("/threads/{thread_id}/runs/wait", post(wait))
        .route("/threads/{thread_id}/runs/stream", post(stream))
        .route("/threads/{thread_id}/runs/{run_id}", get(read).delete(delete))
        .route("/threads/{thread_id}/runs/{run_id}/join", get(join))
        .route("/threads/{thread_id}/runs/{run_id}/stream", get(join_stream))
        .route("/threads/{thread_id}/runs/{run_id}/cancel", post(cancel))
        .route("/runs", post(create_stateless))
        .route("/runs/wait", post(wait_stateless))
        .route("/runs/stream", post(stream_stateless))
        .route("/runs/cancel", post(cancel_many))
        .route("/runs/batch", post(create_batch))
}

/// A thread's own stream (its runs' events): a thread's and its runs' data at once.
pub(super) fn thread_stream_router() -> axum::Router<AppState> {
    axum::Router::new().route("/threads/{thread_id}/stream", get(thread_stream))
}

fn run_path(run: &Run) -> String {
    format!("/threads/{}/runs/{}", run.thread_id, run.run_id)
}

/// `res` with the given header, when its value is a valid header value.
fn with_header(mut res: Response, name: header::HeaderName, value: String) -> Response {
    if let Ok(v) = HeaderValue::from_str(&value) {
        res.headers_mut().insert(name, v);
    }
    res
}

async fn start_background(state: &AppState, thread_id: Option<&str>, body: RunCreate) -> Result<Response, ApiError> {
    let run = state.runs.create(thread_id, body).await?;
    let loc = run_path(&run);
    Ok(with_header(
        axum::Json(run).into_response(),
        header::CONTENT_LOCATION,
        loc,
    ))
}

async fn start_wait(state: &AppState, thread_id: Option<&str>, body: RunCreate) -> Result<Response, ApiError> {
    let run = state.runs.create(thread_id, body).await?;
    // The answer is the outcome, an error included (`{"__error__": …}` with 200), as LangGraph.
    let out = state.runs.outcome(&run).await?;
    let loc = run_path(&run);
    let res = with_header(axum::Json(out).into_response(), header::LOCATION, format!("{loc}/join"));
    Ok(with_header(res, header::CONTENT_LOCATION, loc))
}

async fn start_stream(state: &AppState, thread_id: Option<&str>, body: RunCreate) -> Result<Response, ApiError> {
    let cancel = body.on_disconnect == OnDisconnect::Cancel;
    let run = state.runs.create(thread_id, body).await?;
    let items = state.runs.follow(&run, Some("-1")).await?;
    let opts = sse::SseOptions {
        resumable: run.kwargs.resumable,
        heartbeat: state.runs.config().sse_heartbeat,
        modes: None,
        cancel_on_disconnect: cancel.then(|| (state.runs.bus().clone(), run.run_id.clone())),
    };
    let loc = run_path(&run);
    Ok(sse::response(items, opts, Some(format!("{loc}/stream")), Some(loc)))
}

async fn create(
    State(state): State<AppState>,
    Path(thread_id): Path<String>,
    Json(body): Json<RunCreate>,
) -> Result<Response, ApiError> {
    start_background(&state, Some(&thread_id), body).await
}

async fn wait(
    State(state): State<AppState>,
    Path(thread_id): Path<String>,
    Json(body): Json<RunCreate>,
) -> Result<Response, ApiError> {
    start_wait(&state, Some(&thread_id), body).await
}

async fn stream(
    State(state): State<AppState>,
    Path(thread_id): Path<String>,
    Json(body): Json<RunCreate>,
) -> Result<Response, ApiError> {
    start_stream(&state, Some(&thread_id), body).await
}

async fn create_stateless(State(state): State<AppState>, Json(body): Json<RunCreate>) -> Result<Response, ApiError> {
    start_background(&state, None, body).await
}

async fn wait_stateless(State(state): State<AppState>, Json(body): Json<RunCreate>) -> Result<Response, ApiError> {
    start_wait(&state, None, body).await
}

async fn stream_stateless(State(state): State<AppState>, Json(body): Json<RunCreate>) -> Result<Response, ApiError> {
    start_stream(&state, None, body).await
}

/// A run's fields, what a `select` may name.
const RUN_FIELDS: &[&str] = &[
    "run_id",
    "thread_id",
    "assistant_id",
    "metadata",
    "status",
    "kwargs",
    "multitask_strategy",
    "created_at",
    "updated_at",
    "langsmith_session_name",
];

/// `GET /threads/{tid}/runs`: `limit` (10), `offset`, `status`, and `select`, repeated once a
/// field (`?select=run_id&select=status`), which a struct of the query cannot take.
async fn list(
    State(state): State<AppState>,
    Path(thread_id): Path<String>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Result<axum::Json<Value>, ApiError> {
    let (mut limit, mut offset, mut status, mut select) = (10, 0, None, None::<Vec<String>>);
    let number = |name: &str, v: &str| {
        v.parse::<usize>()
            .map_err(|_| ApiError::invalid(format!("query parameter `{name}`: `{v}` is not a number >= 0")))
    };
    for (name, value) in pairs {
        match name.as_str() {
            "limit" => limit = number(&name, &value)?,
            "offset" => offset = number(&name, &value)?,
            "status" => {
                let parsed = serde_json::from_value(Value::String(value.clone()));
                status = Some(parsed.map_err(|_| {
                    ApiError::invalid(format!("query parameter `status`: `{value}` is not a run status"))
                })?);
            }
            "select" => select.get_or_insert_with(Vec::new).push(value),
            _ => {}
        }
    }
    let runs = state.runs.list(&thread_id, limit, offset, status).await?;
    let rows = runs
        .iter()
        .map(|r| serde_json::to_value(r).unwrap_or(Value::Null))
        .collect();
    let rows = select_fields(rows, select.as_deref(), RUN_FIELDS, "query parameter `select`")?;
    Ok(axum::Json(Value::Array(rows)))
}

async fn read(
    State(state): State<AppState>,
    Path((thread_id, run_id)): Path<(String, String)>,
) -> Result<axum::Json<Run>, ApiError> {
    Ok(axum::Json(state.runs.get(&thread_id, &run_id).await?))
}

async fn delete(
    State(state): State<AppState>,
    Path((thread_id, run_id)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    state.runs.delete(&thread_id, &run_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn join(
    State(state): State<AppState>,
    Path((thread_id, run_id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let out: Value = state.runs.join(&thread_id, &run_id).await?;
    let loc = format!("/threads/{thread_id}/runs/{run_id}");
    let res = with_header(axum::Json(out).into_response(), header::LOCATION, format!("{loc}/join"));
    Ok(with_header(res, header::CONTENT_LOCATION, loc))
}

/// `GET …/runs/{rid}/stream`: the run's events, only those of the `stream_mode`s asked for
/// (repeated, `?stream_mode=values&stream_mode=updates`, as the SDK sends a list, or
/// comma-separated; empty or absent for all the run's own), and `cancel_on_disconnect`.
async fn join_stream(
    State(state): State<AppState>,
    Path((thread_id, run_id)): Path<(String, String)>,
    Query(pairs): Query<Vec<(String, String)>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let mut cancel = false;
    let mut modes = Vec::new();
    for (name, value) in &pairs {
        match name.as_str() {
            "cancel_on_disconnect" => cancel = flag(name, Some(value))?,
            "stream_mode" => modes.extend(value.split(',').filter(|s| !s.is_empty()).map(str::to_owned)),
            _ => {}
        }
    }
    let modes = (!modes.is_empty()).then_some(modes);
    let run = state.runs.get(&thread_id, &run_id).await?;
    let last = headers.get("last-event-id").and_then(|v| v.to_str().ok());
    let items = state.runs.follow(&run, last).await?;
    let opts = sse::SseOptions {
        resumable: run.kwargs.resumable,
        heartbeat: state.runs.config().sse_heartbeat,
        modes,
        cancel_on_disconnect: (cancel && !run.status.is_final()).then(|| (state.runs.bus().clone(), run_id.clone())),
    };
    // A run that ended has nothing live to wait for: answer what is kept for replay (ready at
    // once), or an empty stream when its replay has expired, rather than waiting forever.
    let items = if run.status.is_final() {
        let mut items = items.peekable();
        let kept = std::pin::Pin::new(&mut items).peek().now_or_never().flatten().is_some();
        if kept && last.is_some() {
            items.boxed()
        } else {
            futures::stream::empty().boxed()
        }
    } else {
        items
    };
    Ok(sse::response(items, opts, None, Some(run_path(&run))))
}

/// `GET /threads/{thread_id}/stream`: the thread's own stream ([`crate::runs::Manager::thread_stream`]),
/// in the modes of `stream_mode` (the SDK's parameter) or `stream_modes` (LangGraph's server's),
/// each given once per mode or as a comma-separated list; every event carries its `id:`.
async fn thread_stream(
    State(state): State<AppState>,
    Path(thread_id): Path<String>,
    Query(pairs): Query<Vec<(String, String)>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let words = pairs
        .iter()
        .filter(|(name, _)| name == "stream_mode" || name == "stream_modes")
        .flat_map(|(_, value)| value.split(','))
        .map(str::trim)
        .filter(|word| !word.is_empty());
    let modes =
        ThreadModes::parse(words).map_err(|e| ApiError::invalid(format!("query parameter `stream_mode`: {e}")))?;
    let thread = super::threads::find_without_values(&state, &thread_id).await?;
    let last = match headers.get("last-event-id") {
        None => None,
        Some(value) => Some(
            value
                .to_str()
                .ok()
                .filter(|id| *id == "-1" || crate::bus::parse_event_id(id).is_some())
                .ok_or_else(|| {
                    ApiError::invalid(format!(
                        "header `Last-Event-ID`: expected `-1` or an event id `<ms>-<seq>`, got {value:?}"
                    ))
                })?,
        ),
    };
    let items = state.runs.thread_stream(&thread.thread_id, last, modes).await?;
    let opts = sse::SseOptions {
        resumable: true,
        heartbeat: state.runs.config().sse_heartbeat,
        modes: None,
        cancel_on_disconnect: None,
    };
    Ok(sse::response(items, opts, None, None))
}

/// `POST …/cancel` query.
#[derive(Debug, Deserialize)]
struct CancelQuery {
    wait: Option<String>,
    action: Option<String>,
}

fn action(v: Option<&str>) -> Result<CancelAction, ApiError> {
    match v {
        None | Some("interrupt") => Ok(CancelAction::Interrupt),
        Some("rollback") => Ok(CancelAction::Rollback),
        Some(other) => Err(ApiError::invalid(format!(
            "query parameter `action`: expected interrupt or rollback, got `{other}`"
        ))),
    }
}

async fn cancel(
    State(state): State<AppState>,
    Path((thread_id, run_id)): Path<(String, String)>,
    Query(q): Query<CancelQuery>,
) -> Result<Response, ApiError> {
    let wait = flag("wait", q.wait.as_deref())?;
    let action = action(q.action.as_deref())?;
    state.runs.cancel(&thread_id, &run_id, action, wait).await?;
    Ok(if wait {
        axum::Json(serde_json::json!({})).into_response()
    } else {
        StatusCode::ACCEPTED.into_response()
    })
}

/// `POST /runs/cancel` body: a thread's runs, or every run with a `status`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CancelMany {
    thread_id: Option<String>,
    run_ids: Vec<String>,
    status: Option<String>,
}

/// The `thread_id` of a `POST /runs/batch` item (the rest is a run's body).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct BatchThread {
    thread_id: Option<String>,
}

/// `POST /runs/batch` (`runs.create_batch`): background runs, each stateless unless its item
/// names a `thread_id`; the runs, in the items' order.
async fn create_batch(
    State(state): State<AppState>,
    bytes: axum::body::Bytes,
) -> Result<axum::Json<Vec<Run>>, ApiError> {
    let bodies: Vec<RunCreate> = super::body::parse(&bytes)?;
    let threads: Vec<BatchThread> = super::body::parse(&bytes)?;
    let mut items = Vec::with_capacity(bodies.len());
    for (i, (body, thread)) in bodies.into_iter().zip(threads).enumerate() {
        let thread_id = thread
            .thread_id
            .map(|id| super::params::checked_uuid(&format!("body field `[{i}].thread_id`"), &id))
            .transpose()?;
        items.push((thread_id, body));
    }
    Ok(axum::Json(state.runs.create_batch(items).await?))
}

/// `POST /runs/cancel`: several runs of one thread (`thread_id` and `run_ids`; all its runs in
/// flight when `run_ids` is empty), or every run of any thread with `status` (`pending`,
/// `running` or `all`: the SDK's `runs.cancel_many(status=…)`), never both; 204, or 404 when
/// none of them is pending or running (as LangGraph's).
async fn cancel_many(
    State(state): State<AppState>,
    Query(q): Query<CancelQuery>,
    Json(body): Json<CancelMany>,
) -> Result<StatusCode, ApiError> {
    let action = action(q.action.as_deref())?;
    let runs: Vec<(String, String)> = match (body.status, body.thread_id) {
        (Some(status), None) if body.run_ids.is_empty() => {
            let statuses: &[InFlight] = match status.to_ascii_lowercase().as_str() {
                "pending" => &[InFlight::Pending],
                "running" => &[InFlight::Running],
                "all" => &[InFlight::Pending, InFlight::Running],
                _ => {
                    return Err(ApiError::invalid(format!(
                        "body field `status`: expected pending, running or all, got `{status}`"
                    )))
                }
            };
            let mut runs = Vec::new();
            for status in statuses {
                runs.extend(state.queue.in_flight(*status).await?);
            }
            runs
        }
        (Some(_), _) => {
            return Err(ApiError::invalid(
                "body field `status` cancels every run with that status, on any thread: give it \
                 without `thread_id` and `run_ids`",
            ))
        }
        (None, None) => {
            return Err(ApiError::invalid(
                "body field `thread_id`: missing (or `status`, to cancel every run with it)",
            ))
        }
        (None, Some(thread_id)) => {
            let mut ids = body.run_ids;
            if ids.is_empty() {
                for status in [RunStatus::Pending, RunStatus::Running] {
                    let runs = state.runs.list(&thread_id, usize::MAX, 0, Some(status)).await?;
                    ids.extend(runs.into_iter().map(|r| r.run_id));
                }
            }
            ids.into_iter().map(|run_id| (thread_id.clone(), run_id)).collect()
        }
    };
    let mut cancelled = 0;
    for (thread_id, run_id) in runs {
        match state.runs.cancel(&thread_id, &run_id, action, false).await {
            Ok(()) => cancelled += 1,
            // Ended (or gone) meanwhile: the others are still cancelled.
            Err(RunError::NotFound(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    if cancelled == 0 {
        return Err(ApiError::not_found(crate::runs::NOTHING_TO_CANCEL));
    }
    Ok(StatusCode::NO_CONTENT)
}
