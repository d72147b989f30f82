//! The HTTP API: axum routers for assistants, threads, runs, crons and the store (plus the studio's
//! page and its own routes under `/studio/api/`, `/metrics`, `/mcp`, the assistants as MCP
//! tools, `/a2a`, the assistants as A2A agents, and LangGraph's thread-centric streaming
//! protocol, `/threads/{thread_id}/commands` and `…/stream/events`), the `{"detail": …}` errors, JSON bodies sent
//! as `text/plain`, CORS and body limits.
//! Handlers only translate between HTTP and the layers below ([`crate::db`], [`crate::graph`],
//! [`crate::runs`]); no run logic lives here.

use crate::bus::Bus;
use crate::db::{Catalog, RunQueue};
use crate::graph::ServedGraph;
use crate::runs::Manager;
use std::collections::BTreeMap;
use std::sync::Arc;

mod a2a;
mod assistants;
mod body;
mod crons;
mod error;
mod jsonrpc;
mod layers;
mod mcp;
mod meta;
mod metrics;
mod params;
mod protocol;
mod runs;
mod select;
mod state;
mod store;
mod studio;
mod threads;

pub use body::Json;
pub use error::ApiError;
pub use layers::ApiOptions;

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    /// The served graphs, by graph id.
    pub graphs: Arc<BTreeMap<String, Arc<dyn ServedGraph>>>,
    /// Assistants and threads.
    pub catalog: Arc<dyn Catalog>,
    /// Runs.
    pub queue: Arc<dyn RunQueue>,
    /// Signals and stream fan-out.
    pub bus: Arc<dyn Bus>,
    /// The run manager (creating, joining, cancelling runs).
    pub runs: Manager,
    /// Long-term memory, shared by every graph, thread and run (the `/store/*` routes, and
    /// `ctx.store()` in the served graphs' nodes).
    pub store: Arc<dyn weir_runtime::store::Store>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("graphs", &self.graphs.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// The whole API with the default [`ApiOptions`]: every route, with CORS (plus
/// `Access-Control-Allow-Private-Network`), the body limit, a JSON 404 for unknown paths and JSON
/// errors for axum's own refusals.
pub fn router(state: AppState) -> axum::Router {
    router_with(state, &ApiOptions::default())
}

/// A group of routes the config's `http.disable_*` may leave out.
type RouteGroup = fn() -> axum::Router<AppState>;

/// [`router`] with `options`: the body limit, and the config file's `http` (route groups turned
/// off, as LangGraph's `disable_*`; CORS rules; every route under `mount_prefix`).
pub fn router_with(state: AppState, options: &ApiOptions) -> axum::Router {
    let off = &options.http;
    let http = std::sync::Arc::new(metrics::HttpMetrics::default());
    let groups: [(bool, RouteGroup); 11] = [
        (!off.disable_assistants, assistants::router),
        (!off.disable_threads, threads::router),
        (!off.disable_runs, runs::router),
        (!(off.disable_threads || off.disable_runs), runs::thread_stream_router),
        (!(off.disable_threads || off.disable_runs), protocol::router),
        (!off.disable_runs, crons::router),
        (!off.disable_store, store::router),
        (!off.disable_mcp, mcp::router),
        (!off.disable_a2a, a2a::router),
        (off.serves_studio(), studio::router),
        (off.serves_studio(), crate::studio::router),
    ];
    let mut routes = meta::router(!off.disable_meta);
    for (on, group) in groups {
        if on {
            routes = routes.merge(group());
        }
    }
    if !off.disable_meta {
        routes = routes.merge(metrics::router(state.clone(), http.clone()));
    }
    let routes = match &off.mount_prefix {
        Some(prefix) => axum::Router::new().nest(prefix, routes),
        None => routes,
    };
    let routes = routes
        .fallback(|| async { ApiError::not_found("Not Found") })
        .with_state(state)
        // Counted inside the layers of `wrap`, where the route's template is known: a request
        // they refuse (413, a NUL in the URL) is not counted.
        .layer(metrics::Record(http));
    layers::wrap(routes, options)
}

pub(crate) use crate::model::now;
