//! The assistants routes (`/assistants/*`): search, count, read, the graph drawing, schemas and
//! subgraphs through [`ServedGraph`], and the create, patch, delete and versions calls of
//! Studio's assistant editor. Shapes as `sdk_trace.txt`.

use super::params::{assistant_id, flag, Query};
use super::select::select_fields;
use super::{now, ApiError, AppState, Json};
use crate::db::{AssistantQuery, IfExists, ThreadQuery, VersionQuery};
use crate::graph::{Schemas, ServedGraph};
use crate::model::{Assistant, Object, TtlStrategy};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

pub(super) fn router() -> axum::Router<AppState> {
    axum::Router::new()
        .route("/assistants", post(create))
        .route("/assistants/search", post(search))
        .route("/assistants/count", post(count))
        .route("/assistants/{assistant_id}", get(read).patch(patch).delete(delete))
        .route("/assistants/{assistant_id}/graph", get(graph))
        .route("/assistants/{assistant_id}/schemas", get(schemas))
        .route("/assistants/{assistant_id}/subgraphs", get(subgraphs))
        .route("/assistants/{assistant_id}/subgraphs/{namespace}", get(subgraphs_under))
        .route("/assistants/{assistant_id}/versions", post(versions))
        .route("/assistants/{assistant_id}/latest", post(latest))
}

/// The filters of `POST /assistants/search` and `/count`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SearchBody {
    graph_id: Option<String>,
    metadata: Option<Object>,
    name: Option<String>,
    #[serde(default = "super::params::page_size")]
    limit: usize,
    offset: usize,
    sort_by: Option<String>,
    sort_order: Option<String>,
    select: Option<Vec<String>>,
}

impl SearchBody {
    fn query(self) -> Result<AssistantQuery, ApiError> {
        let query = AssistantQuery {
            graph_id: self.graph_id,
            metadata: self.metadata,
            name: self.name,
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

/// An assistant's fields, what a `select` may name.
const ASSISTANT_FIELDS: &[&str] = &[
    "assistant_id",
    "graph_id",
    "config",
    "context",
    "metadata",
    "name",
    "description",
    "version",
    "created_at",
    "updated_at",
];

async fn search(State(state): State<AppState>, Json(body): Json<SearchBody>) -> Result<axum::Json<Value>, ApiError> {
    let select = body.select.clone();
    let found = state.catalog.search_assistants(&body.query()?).await?;
    let rows = found.iter().map(to_json).collect();
    let rows = select_fields(rows, select.as_deref(), ASSISTANT_FIELDS, "body field `select`")?;
    Ok(axum::Json(Value::Array(rows)))
}

async fn count(State(state): State<AppState>, Json(body): Json<SearchBody>) -> Result<axum::Json<u64>, ApiError> {
    Ok(axum::Json(state.catalog.count_assistants(&body.query()?).await?))
}

fn to_json(a: &Assistant) -> Value {
    serde_json::to_value(a).unwrap_or(Value::Null)
}

/// The assistant `id` names (a UUID or a graph name), or 404.
async fn find(state: &AppState, id: &str) -> Result<Assistant, ApiError> {
    let aid = assistant_id(state, id)?;
    state
        .catalog
        .get_assistant(&aid)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Assistant {aid} not found")))
}

/// The served graph of `assistant`, or 404 when the server no longer serves it.
fn served(state: &AppState, assistant: &Assistant) -> Result<Arc<dyn ServedGraph>, ApiError> {
    state
        .graphs
        .get(&assistant.graph_id)
        .cloned()
        .ok_or_else(|| ApiError::not_found(format!("Graph {} not found", assistant.graph_id)))
}

async fn read(State(state): State<AppState>, Path(id): Path<String>) -> Result<axum::Json<Assistant>, ApiError> {
    Ok(axum::Json(find(&state, &id).await?))
}

#[derive(Debug, Deserialize, Default)]
struct GraphParams {
    xray: Option<String>,
}

/// `GET /assistants/{id}/graph?xray=false|true|N`.
async fn graph(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(params): Query<GraphParams>,
) -> Result<axum::Json<Value>, ApiError> {
    let xray = match params.xray.as_deref() {
        None | Some("false") | Some("0") => 0,
        Some("true") => u32::MAX,
        Some(n) => n.parse().map_err(|_| {
            ApiError::invalid(format!(
                "query parameter `xray`: `{n}` is not `true`, `false` or a depth"
            ))
        })?,
    };
    let assistant = find(&state, &id).await?;
    Ok(axum::Json(served(&state, &assistant)?.drawing(xray)))
}

/// The schemas object of `/schemas` and of each entry of `/subgraphs`.
fn schemas_json(graph_id: &str, s: Schemas) -> Value {
    json!({
        "graph_id": graph_id,
        "input_schema": s.input,
        "output_schema": s.output,
        "state_schema": s.state,
        "config_schema": s.config,
        "context_schema": s.context,
    })
}

async fn schemas(State(state): State<AppState>, Path(id): Path<String>) -> Result<axum::Json<Value>, ApiError> {
    let assistant = find(&state, &id).await?;
    let graph = served(&state, &assistant)?;
    Ok(axum::Json(schemas_json(&assistant.graph_id, graph.schemas())))
}

#[derive(Debug, Deserialize, Default)]
struct SubgraphParams {
    #[serde(default)]
    recurse: bool,
    namespace: Option<String>,
}

async fn subgraphs(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(params): Query<SubgraphParams>,
) -> Result<axum::Json<Value>, ApiError> {
    subgraphs_of(&state, &id, params.namespace.as_deref(), params.recurse).await
}

async fn subgraphs_under(
    State(state): State<AppState>,
    Path((id, namespace)): Path<(String, String)>,
    Query(params): Query<SubgraphParams>,
) -> Result<axum::Json<Value>, ApiError> {
    subgraphs_of(&state, &id, Some(&namespace), params.recurse).await
}

async fn subgraphs_of(
    state: &AppState,
    id: &str,
    namespace: Option<&str>,
    recurse: bool,
) -> Result<axum::Json<Value>, ApiError> {
    let assistant = find(state, id).await?;
    let graph = served(state, &assistant)?;
    let map = graph
        .subgraphs(namespace, recurse)
        .into_iter()
        .map(|(ns, s)| (ns, schemas_json(&assistant.graph_id, s)))
        .collect();
    Ok(axum::Json(Value::Object(map)))
}

/// `POST /assistants`.
#[derive(Debug, Deserialize)]
struct CreateBody {
    graph_id: String,
    assistant_id: Option<String>,
    #[serde(default)]
    config: Object,
    #[serde(default)]
    context: Object,
    #[serde(default)]
    metadata: Object,
    name: Option<String>,
    description: Option<String>,
    #[serde(default)]
    if_exists: IfExistsBody,
}

/// `if_exists` of `POST /assistants` and `POST /threads`.
#[derive(Debug, Deserialize, Default, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub(super) enum IfExistsBody {
    #[default]
    Raise,
    DoNothing,
}

impl From<IfExistsBody> for IfExists {
    fn from(b: IfExistsBody) -> Self {
        match b {
            IfExistsBody::Raise => IfExists::Raise,
            IfExistsBody::DoNothing => IfExists::DoNothing,
        }
    }
}

async fn create(
    State(state): State<AppState>,
    Json(body): Json<CreateBody>,
) -> Result<axum::Json<Assistant>, ApiError> {
    if !state.graphs.contains_key(&body.graph_id) {
        return Err(ApiError::not_found(format!(
            "Graph {} not found; served graphs are {}",
            body.graph_id,
            state.graphs.keys().cloned().collect::<Vec<_>>().join(", ")
        )));
    }
    let id = match &body.assistant_id {
        Some(id) => super::params::checked_uuid("body field `assistant_id`", id)?,
        None => uuid::Uuid::new_v4().to_string(),
    };
    if let Some(existing) = state.catalog.get_assistant(&id).await? {
        return match body.if_exists {
            IfExistsBody::DoNothing => Ok(axum::Json(existing)),
            IfExistsBody::Raise => Err(ApiError::conflict(format!("Assistant {id} already exists"))),
        };
    }
    let at = now();
    let assistant = Assistant {
        assistant_id: id,
        name: body.name.unwrap_or_else(|| "Untitled".to_owned()),
        graph_id: body.graph_id,
        config: body.config,
        context: body.context,
        metadata: body.metadata,
        created_at: at.clone(),
        updated_at: at,
        version: 1,
        description: body.description,
    };
    state.catalog.put_assistant(&assistant).await?;
    Ok(axum::Json(assistant))
}

/// `PATCH /assistants/{id}`: the fields given replace the old ones (metadata is merged); the
/// version goes up by one.
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct PatchBody {
    graph_id: Option<String>,
    config: Option<Object>,
    context: Option<Object>,
    metadata: Option<Object>,
    name: Option<String>,
    description: Option<String>,
}

async fn patch(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Json(body): Json<PatchBody>,
) -> Result<axum::Json<Assistant>, ApiError> {
    let mut a = find(&state, &id).await?;
    if let Some(graph_id) = body.graph_id {
        if !state.graphs.contains_key(&graph_id) {
            return Err(ApiError::not_found(format!("Graph {graph_id} not found")));
        }
        a.graph_id = graph_id;
    }
    a.config = body.config.unwrap_or(a.config);
    a.context = body.context.unwrap_or(a.context);
    a.metadata.extend(body.metadata.unwrap_or_default());
    a.name = body.name.unwrap_or(a.name);
    a.description = body.description.or(a.description);
    // The new version follows the highest recorded one (`/latest` may have gone back).
    let newest = state
        .catalog
        .assistant_versions(
            &a.assistant_id,
            &VersionQuery {
                limit: 1,
                ..VersionQuery::default()
            },
        )
        .await?;
    a.version = newest.first().map_or(a.version, |v| v.version.max(a.version)) + 1;
    a.updated_at = now();
    state.catalog.put_assistant(&a).await?;
    Ok(axum::Json(a))
}

/// The query of `DELETE /assistants/{id}`: `delete_threads` (the SDK's
/// `assistants.delete(delete_threads=True)`).
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct DeleteQuery {
    delete_threads: Option<String>,
}

/// `DELETE /assistants/{id}`: the assistant and its versions; with `delete_threads=true` first
/// the threads its runs were made on (their metadata's `assistant_id` is its id), each as
/// `DELETE /threads/{id}` deletes it.
async fn delete(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<DeleteQuery>,
) -> Result<StatusCode, ApiError> {
    let delete_threads = flag("delete_threads", q.delete_threads.as_deref())?;
    let a = find(&state, &id).await?;
    if delete_threads {
        let mut query = ThreadQuery {
            metadata: Some(Object::from_iter([("assistant_id".to_owned(), json!(a.assistant_id))])),
            limit: 100,
            without_values: true,
            ..ThreadQuery::default()
        };
        loop {
            let threads = state.catalog.search_threads(&query).await?;
            for thread in &threads {
                // A thread whose graph is not served here is left (a warning says so), as the
                // TTL sweeper leaves it: the next page starts after it.
                if !state.runs.prune_thread(thread, TtlStrategy::Delete).await? {
                    query.offset += 1;
                }
            }
            if threads.len() < query.limit {
                break;
            }
        }
    }
    state.catalog.delete_assistant(&a.assistant_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /assistants/{id}/versions`: the assistant's versions, newest first, those whose
/// metadata contains `metadata`; `limit` (default 10) and `offset` page them.
#[derive(Debug, Deserialize)]
#[serde(default)]
struct VersionsBody {
    metadata: Option<Object>,
    limit: usize,
    offset: usize,
}

impl Default for VersionsBody {
    fn default() -> Self {
        Self {
            metadata: None,
            limit: 10,
            offset: 0,
        }
    }
}

async fn versions(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Json(body): Json<VersionsBody>,
) -> Result<axum::Json<Vec<Assistant>>, ApiError> {
    let a = find(&state, &id).await?;
    let query = VersionQuery {
        metadata: body.metadata,
        limit: body.limit,
        offset: body.offset,
    };
    Ok(axum::Json(
        state.catalog.assistant_versions(&a.assistant_id, &query).await?,
    ))
}

/// `POST /assistants/{id}/latest`: `{"version": n}` makes version `n` the current one.
#[derive(Debug, Deserialize)]
struct LatestBody {
    version: i64,
}

async fn latest(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Json(body): Json<LatestBody>,
) -> Result<axum::Json<Assistant>, ApiError> {
    let a = find(&state, &id).await?;
    state
        .catalog
        .set_latest_version(&a.assistant_id, body.version)
        .await?
        .map(axum::Json)
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "Version {} of assistant {} not found",
                body.version, a.assistant_id
            ))
        })
}
