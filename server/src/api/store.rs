//! The `/store/*` routes (LangGraph's server API, rows 24–28): put, get and delete an item,
//! search items, list namespaces, over the server's [`Store`]. Namespaces cross the wire as
//! label arrays, except in `GET /store/items`, where the query holds them dot-joined.

use super::{ApiError, AppState, Json};
use axum::extract::rejection::QueryRejection;
use axum::extract::{FromRef, Query, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::Router;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use weir_runtime::store::{
    GetOp, Index, ListNamespacesOp, MatchCondition, Op, OpResult, PutOp, SearchOp, Store, StoreError,
};

impl FromRef<AppState> for Arc<dyn Store> {
    fn from_ref(state: &AppState) -> Self {
        state.store.clone()
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        if e.is_invalid() {
            Self::invalid(e.to_string())
        } else {
            Self::internal(e.to_string())
        }
    }
}

/// The routes, on any state that holds the store.
pub(super) fn router<S>() -> Router<S>
where
    S: Clone + Send + Sync + 'static,
    Arc<dyn Store>: FromRef<S>,
{
    Router::new()
        .route("/store/items", get(get_item).put(put_item).delete(delete_item))
        .route("/store/items/search", post(search_items))
        .route("/store/namespaces", post(list_namespaces))
}

type Shared = State<Arc<dyn Store>>;

/// `PUT /store/items`'s body.
#[derive(Debug, Deserialize)]
struct PutBody {
    namespace: Vec<String>,
    key: String,
    value: Map<String, Value>,
    /// `null` (the store's fields), `false` (not indexed) or field paths.
    #[serde(default)]
    index: Option<Value>,
    #[serde(default)]
    ttl: Option<f64>,
}

fn index_of(index: Option<Value>) -> Result<Index, ApiError> {
    match index {
        None | Some(Value::Null) => Ok(Index::Default),
        Some(Value::Bool(false)) => Ok(Index::Off),
        Some(v) => serde_json::from_value::<Vec<String>>(v)
            .map(Index::Fields)
            .map_err(|_| ApiError::invalid("body field `index`: expected null, false or a list of field paths")),
    }
}

async fn put_item(State(store): Shared, Json(body): Json<PutBody>) -> Result<StatusCode, ApiError> {
    store
        .put_op(PutOp {
            namespace: body.namespace,
            key: body.key,
            value: Some(body.value),
            index: index_of(body.index)?,
            ttl: body.ttl,
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /store/items`'s query.
#[derive(Debug, Deserialize)]
struct GetQuery {
    /// Dot-joined labels.
    #[serde(default)]
    namespace: String,
    key: String,
    #[serde(default)]
    refresh_ttl: Option<bool>,
}

async fn get_item(
    State(store): Shared,
    query: Result<Query<GetQuery>, QueryRejection>,
) -> Result<axum::Json<Value>, ApiError> {
    let Query(q) = query.map_err(|e| ApiError::invalid(format!("query: {}", e.body_text())))?;
    let namespace: Vec<String> = if q.namespace.is_empty() {
        Vec::new()
    } else {
        q.namespace.split('.').map(str::to_owned).collect()
    };
    let op = Op::Get(GetOp {
        namespace: namespace.clone(),
        key: q.key.clone(),
        refresh_ttl: q.refresh_ttl,
    });
    // No such item is `200 null`, as LangGraph's server answers (its client returns `None`).
    match store.batch(vec![op]).await?.pop() {
        Some(OpResult::Item(item)) => Ok(axum::Json(json!(item))),
        other => Err(ApiError::internal(format!(
            "the store answered a get of item {:?} with {other:?}",
            q.key
        ))),
    }
}

/// `DELETE /store/items`'s body.
#[derive(Debug, Deserialize)]
struct DeleteBody {
    namespace: Vec<String>,
    key: String,
}

async fn delete_item(State(store): Shared, Json(body): Json<DeleteBody>) -> Result<StatusCode, ApiError> {
    let labels: Vec<&str> = body.namespace.iter().map(String::as_str).collect();
    store.delete(&labels, &body.key).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /store/items/search`'s body.
#[derive(Debug, Deserialize)]
struct SearchBody {
    #[serde(default)]
    namespace_prefix: Vec<String>,
    #[serde(default)]
    filter: Option<Map<String, Value>>,
    #[serde(default)]
    query: Option<String>,
    #[serde(default = "ten")]
    limit: usize,
    #[serde(default)]
    offset: usize,
    #[serde(default)]
    refresh_ttl: Option<bool>,
}

fn ten() -> usize {
    10
}

async fn search_items(State(store): Shared, Json(body): Json<SearchBody>) -> Result<axum::Json<Value>, ApiError> {
    let items = store
        .search(SearchOp {
            namespace_prefix: body.namespace_prefix,
            filter: body.filter,
            query: body.query,
            limit: body.limit,
            offset: body.offset,
            refresh_ttl: body.refresh_ttl,
        })
        .await?;
    Ok(axum::Json(json!({ "items": items })))
}

/// `POST /store/namespaces`'s body.
#[derive(Debug, Deserialize)]
struct NamespacesBody {
    #[serde(default)]
    prefix: Option<Vec<String>>,
    #[serde(default)]
    suffix: Option<Vec<String>>,
    #[serde(default)]
    max_depth: Option<usize>,
    #[serde(default = "hundred")]
    limit: usize,
    #[serde(default)]
    offset: usize,
}

fn hundred() -> usize {
    100
}

async fn list_namespaces(
    State(store): Shared,
    Json(body): Json<NamespacesBody>,
) -> Result<axum::Json<Value>, ApiError> {
    let conditions = body
        .prefix
        .map(MatchCondition::Prefix)
        .into_iter()
        .chain(body.suffix.map(MatchCondition::Suffix))
        .collect();
    let namespaces = store
        .list_namespaces(ListNamespacesOp {
            match_conditions: conditions,
            max_depth: body.max_depth,
            limit: body.limit,
            offset: body.offset,
        })
        .await?;
    Ok(axum::Json(json!({ "namespaces": namespaces })))
}

#[cfg(test)]
mod tests;
