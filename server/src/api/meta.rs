//! What load balancers, orchestrators and clients ask of the server itself: `GET /ok`, its
//! health (with `check_db=1`, a round trip to each service it depends on), and `GET /info`, the
//! API version it speaks.

use super::params::{flag, Query};
use super::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::time::Duration;

/// How long a service may take to answer a health check, as LangGraph's server allows.
const CHECK_TIMEOUT: Duration = Duration::from_secs(3);

/// `/ok` and `/info`; with `meta` off (`http.disable_meta`), only an `/ok` that answers
/// `{"ok": true}` without looking at anything, as LangGraph's does.
pub(super) fn router(meta: bool) -> axum::Router<AppState> {
    if !meta {
        return axum::Router::new().route("/ok", get(|| async { axum::Json(json!({"ok": true})) }));
    }
    axum::Router::new().route("/ok", get(ok)).route("/info", get(info))
}

/// The query of `GET /ok`.
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct OkQuery {
    check_db: Option<String>,
}

/// `GET /ok`: `{"ok": true, "services": {}}`, at once. With `check_db=1` (a readiness probe),
/// a round trip to each service the server depends on, each within 3 s: its database (the
/// SQLite file, or PostgreSQL) and, scaled out, Redis; `services` names each `healthy` or
/// `unhealthy`, and one that is not makes the answer a 500 with `ok` false. A failure's reason
/// goes to the log, not to whoever asks.
async fn ok(
    State(state): State<AppState>,
    Query(q): Query<OkQuery>,
) -> Result<(StatusCode, axum::Json<Value>), super::ApiError> {
    if !flag("check_db", q.check_db.as_deref())? {
        return Ok((StatusCode::OK, axum::Json(json!({"ok": true, "services": {}}))));
    }
    let catalog = state.catalog.clone();
    let database: BoxFuture<'_, Result<(), String>> = Box::pin(async move {
        // A point read of an assistant no one has: a round trip that changes nothing.
        catalog
            .get_assistant("00000000-0000-0000-0000-000000000000")
            .await
            .map(drop)
            .map_err(|e| e.to_string())
    });
    let mut checks = vec![("database", database)];
    if let Some((name, check)) = state.bus.health() {
        checks.push((name, Box::pin(async move { check.await.map_err(|e| e.to_string()) })));
    }
    let results = futures::future::join_all(checks.into_iter().map(|(name, check)| async move {
        let outcome = match tokio::time::timeout(CHECK_TIMEOUT, check).await {
            Ok(outcome) => outcome,
            Err(_) => Err(format!("no answer within {} s", CHECK_TIMEOUT.as_secs())),
        };
        if let Err(e) = &outcome {
            tracing::warn!(service = name, error = %e, "health check failed");
        }
        (name, outcome.is_ok())
    }))
    .await;
    let healthy = results.iter().all(|(_, up)| *up);
    let services: Map<String, Value> = results
        .into_iter()
        .map(|(name, up)| (name.to_owned(), json!(if up { "healthy" } else { "unhealthy" })))
        .collect();
    let status = if healthy {
        StatusCode::OK
    } else {
        StatusCode::INTERNAL_SERVER_ERROR
    };
    Ok((status, axum::Json(json!({"ok": healthy, "services": services}))))
}

/// `GET /info`: the API version this server speaks, and what it offers (`strict_resume`: a run's
/// `strict_resume` is honoured, which the SDK looks for here).
async fn info() -> axum::Json<Value> {
    axum::Json(json!({
        "version": "0.16.7",
        "weir_version": env!("CARGO_PKG_VERSION"),
        "flags": {
            "assistants": true, "crons": true, "langsmith": false, "langsmith_tracing_replicas": false,
            "strict_resume": true,
        },
        "host": {"kind": "self-hosted", "project_id": null, "host_revision_id": null, "revision_id": null, "tenant_id": null},
    }))
}
