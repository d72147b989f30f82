//! What handlers read from the URL: [`Query`] (a query string refused with a 422 that names the
//! parameter), boolean parameters ([`flag`]), and the checks of ids, which LangGraph types as
//! UUIDs ([`checked_uuid`]; in paths, [`thread_id`] and [`assistant_id`]).

use super::{ApiError, AppState};
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

/// A query string read as a `T`.
#[derive(Debug, Clone)]
pub(crate) struct Query<T>(pub(crate) T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        axum::extract::Query::try_from_uri(&parts.uri)
            .map(|q| Query(q.0))
            .map_err(|e| ApiError::invalid(e.body_text()))
    }
}

/// A boolean query parameter (`1`, `0`, `true`, `false`), or a 422 naming it.
pub(crate) fn flag(name: &str, v: Option<&str>) -> Result<bool, ApiError> {
    match v.map(str::to_ascii_lowercase).as_deref() {
        None | Some("0" | "false") => Ok(false),
        Some("1" | "true") => Ok(true),
        Some(other) => Err(ApiError::invalid(format!(
            "query parameter `{name}`: expected true, false, 1 or 0, got `{other}`"
        ))),
    }
}

/// The page size of a search that names none (LangGraph's 10).
pub(crate) fn page_size() -> usize {
    10
}

/// `id` as a UUID's text if it is one, else a 422 naming `place` (``body field `thread_id` ``).
pub(crate) fn checked_uuid(place: &str, id: &str) -> Result<String, ApiError> {
    uuid::Uuid::parse_str(id)
        .map(|u| u.to_string())
        .map_err(|_| ApiError::invalid(format!("{place}: `{id}` is not a UUID")))
}

/// `tid` if it is a UUID, else a 422 naming the parameter.
pub(crate) fn thread_id(tid: &str) -> Result<String, ApiError> {
    checked_uuid("path parameter `thread_id`", tid)
}

/// The assistant id `id` stands for: a UUID as is, a served graph's name as its system
/// assistant's id ([`crate::model::system_assistant_id`]); anything else is a 422.
pub(crate) fn assistant_id(state: &AppState, id: &str) -> Result<String, ApiError> {
    if let Ok(uuid) = uuid::Uuid::parse_str(id) {
        return Ok(uuid.to_string());
    }
    if state.graphs.contains_key(id) {
        return Ok(crate::model::system_assistant_id(id).to_string());
    }
    Err(ApiError::invalid(format!(
        "path parameter `assistant_id`: `{id}` is neither a UUID nor a served graph's name"
    )))
}
