//! [`ApiError`]: every failure of a request as LangGraph's server reports it, `{"detail": "…"}`
//! with its status code (404 unknown thread or assistant, 409 conflict, 422 bad input, 429 a
//! thread's queue full, 500).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// A failed request: its status and the `detail` text, which names what is at fault.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The status code.
    pub status: StatusCode,
    /// The message.
    pub detail: String,
}

impl ApiError {
    /// A 400.
    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            detail: detail.into(),
        }
    }
    /// A 404.
    pub fn not_found(detail: impl Into<String>) -> Self {
        Self {
            status: StatusCode::NOT_FOUND,
            detail: detail.into(),
        }
    }
    /// A 409.
    pub fn conflict(detail: impl Into<String>) -> Self {
        Self {
            status: StatusCode::CONFLICT,
            detail: detail.into(),
        }
    }
    /// A 422.
    pub fn invalid(detail: impl Into<String>) -> Self {
        Self {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            detail: detail.into(),
        }
    }
    /// The same error with `prefix` before its detail (which part of the request it concerns).
    pub fn prefixed(self, prefix: &str) -> Self {
        Self {
            status: self.status,
            detail: format!("{prefix}{}", self.detail),
        }
    }
    /// A 429: a bound was reached; the same request may succeed later.
    pub fn too_many(detail: impl Into<String>) -> Self {
        Self {
            status: StatusCode::TOO_MANY_REQUESTS,
            detail: detail.into(),
        }
    }
    /// A 500.
    pub fn internal(detail: impl Into<String>) -> Self {
        Self {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            detail: detail.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, axum::Json(serde_json::json!({ "detail": self.detail }))).into_response()
    }
}

impl From<crate::graph::GraphError> for ApiError {
    fn from(e: crate::graph::GraphError) -> Self {
        use crate::graph::GraphError as G;
        match e {
            G::Invalid(m) => Self::invalid(m),
            G::NotFound(m) => Self::not_found(m),
            G::Conflict(m) => Self::conflict(m),
            G::Internal(m) => Self::internal(m),
        }
    }
}

impl From<crate::db::DbError> for ApiError {
    fn from(e: crate::db::DbError) -> Self {
        match e {
            crate::db::DbError::Conflict(m) => Self::conflict(m),
            crate::db::DbError::Backend(m) => Self::internal(m),
        }
    }
}
