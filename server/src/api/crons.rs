//! The crons routes (LangGraph's tier C `/runs/crons`): make a cron on a thread or a stateless
//! one, read, change, delete, search and count them. The bodies, answers and status codes are
//! those of LangGraph's server (`Cron` objects; 204 on delete); the making, checking and firing
//! are [`crate::runs::Manager`]'s.

use super::body::parse;
use super::params::{checked_uuid, thread_id};
use super::select::select_fields;
use super::{ApiError, AppState, Json};
use crate::db::CronQuery;
use crate::model::{Cron, Object};
use crate::runs::{CronFields, RunCreate};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::Value;

pub(super) fn router() -> axum::Router<AppState> {
    axum::Router::new()
        .route("/runs/crons", post(create_stateless))
        .route("/threads/{thread_id}/runs/crons", post(create_on_thread))
        .route("/runs/crons/search", post(search))
        .route("/runs/crons/count", post(count))
        .route("/runs/crons/{cron_id}", get(read).patch(update).delete(delete))
}

/// The fields of a cron (for `select`).
const CRON_FIELDS: &[&str] = &[
    "cron_id",
    "assistant_id",
    "thread_id",
    "user_id",
    "end_time",
    "schedule",
    "timezone",
    "payload",
    "next_run_date",
    "metadata",
    "on_run_completed",
    "enabled",
    "created_at",
    "updated_at",
];

fn cron_json(cron: &Cron) -> Value {
    serde_json::to_value(cron).expect("a cron serializes")
}

/// Makes a cron from a create body, read three ways: as sent (its payload), as a run's body and
/// as the cron's own fields; each reading's error names the field at fault.
async fn create(state: &AppState, thread_id: Option<&str>, bytes: &Bytes) -> Result<axum::Json<Value>, ApiError> {
    let body: Object = parse(bytes)?;
    let run: RunCreate = parse(bytes)?;
    let fields: CronFields = parse(bytes)?;
    let cron = state.runs.create_cron(thread_id, body, run, fields).await?;
    Ok(axum::Json(cron_json(&cron)))
}

async fn create_stateless(State(state): State<AppState>, bytes: Bytes) -> Result<axum::Json<Value>, ApiError> {
    create(&state, None, &bytes).await
}

async fn create_on_thread(
    State(state): State<AppState>,
    Path(tid): Path<String>,
    bytes: Bytes,
) -> Result<axum::Json<Value>, ApiError> {
    create(&state, Some(&thread_id(&tid)?), &bytes).await
}

fn cron_id(id: &str) -> Result<String, ApiError> {
    checked_uuid("path parameter `cron_id`", id)
}

async fn read(State(state): State<AppState>, Path(id): Path<String>) -> Result<axum::Json<Value>, ApiError> {
    let id = cron_id(&id)?;
    match state.catalog.get_cron(&id).await? {
        Some(cron) => Ok(axum::Json(cron_json(&cron))),
        None => Err(ApiError::not_found(format!("Cron '{id}' not found"))),
    }
}

async fn update(
    State(state): State<AppState>,
    Path(id): Path<String>,
    bytes: Bytes,
) -> Result<axum::Json<Value>, ApiError> {
    let id = cron_id(&id)?;
    let body: Object = parse(&bytes)?;
    if body.is_empty() {
        return Err(ApiError::bad_request("Request body cannot be empty"));
    }
    let patch: CronFields = parse(&bytes)?;
    let cron = state.runs.update_cron(&id, body, patch).await?;
    Ok(axum::Json(cron_json(&cron)))
}

async fn delete(State(state): State<AppState>, Path(id): Path<String>) -> Result<StatusCode, ApiError> {
    let id = cron_id(&id)?;
    if state.catalog.delete_cron(&id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found(format!("Cron '{id}' not found")))
    }
}

/// `POST /runs/crons/search` and `/runs/crons/count`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SearchBody {
    assistant_id: Option<String>,
    thread_id: Option<String>,
    enabled: Option<bool>,
    metadata: Option<Object>,
    #[serde(default = "super::params::page_size")]
    limit: usize,
    offset: usize,
    sort_by: Option<String>,
    sort_order: Option<String>,
    select: Option<Vec<String>>,
}

impl SearchBody {
    fn query(self, state: &AppState) -> Result<CronQuery, ApiError> {
        let assistant_id = match self.assistant_id {
            None => None,
            // A graph's name stands for its system assistant, as in a run's body.
            Some(id) if state.graphs.contains_key(&id) => Some(crate::model::system_assistant_id(&id).to_string()),
            Some(id) => Some(checked_uuid("body field `assistant_id`", &id)?),
        };
        let thread_id = self
            .thread_id
            .map(|id| checked_uuid("body field `thread_id`", &id))
            .transpose()?;
        let query = CronQuery {
            assistant_id,
            thread_id,
            enabled: self.enabled,
            metadata: self.metadata,
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

async fn search(State(state): State<AppState>, Json(body): Json<SearchBody>) -> Result<axum::Json<Value>, ApiError> {
    let select = body.select.clone();
    let found = state.catalog.search_crons(&body.query(&state)?).await?;
    let rows = found.iter().map(cron_json).collect();
    let rows = select_fields(rows, select.as_deref(), CRON_FIELDS, "body field `select`")?;
    Ok(axum::Json(Value::Array(rows)))
}

async fn count(State(state): State<AppState>, Json(body): Json<SearchBody>) -> Result<axum::Json<u64>, ApiError> {
    Ok(axum::Json(state.catalog.count_crons(&body.query(&state)?).await?))
}
