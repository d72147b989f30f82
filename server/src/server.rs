//! [`Server`]: the library API that serves graphs in a few lines — which graphs, on which
//! backends, with which options — and starts the API on a listener with graceful shutdown. At
//! start it makes each graph's system assistant (id [`system_assistant_id`]).

use crate::api::{ApiOptions, AppState};
use crate::bus::local::LocalBus;
use crate::bus::redis::RedisBus;
use crate::bus::{Bus, BusError};
use crate::db::postgres::PostgresDb;
use crate::db::sqlite::SqliteDb;
use crate::db::{Catalog, DbError, RunQueue};
use crate::graph::{Serve, ServedGraph};
use crate::model::{system_assistant_id, Assistant, Object, ThreadTtl};
use crate::runs::{Manager, ManagerConfig, RunError};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use weir_runtime::checkpoint::{Checkpointer, PostgresSaver, SaverError, SqliteSaver};
use weir_runtime::postgres::{Pool, PoolOptions};
use weir_runtime::store::{InMemoryStore, PostgresStore, SqliteStore, Store, StoreConfig, StoreError};

/// A weir server: its graphs, its backends and its options.
///
/// # Examples
///
/// See the crate's quick start.
pub struct Server {
    graphs: BTreeMap<String, Graph>,
    saver: Arc<dyn Checkpointer>,
    store: Arc<dyn Store>,
    catalog: Arc<dyn Catalog>,
    queue: Arc<dyn RunQueue>,
    bus: Arc<dyn Bus>,
    options: ApiOptions,
    manager: ManagerConfig,
    role: Role,
    store_sweep: Option<Duration>,
    /// The graphs' descriptions, for their system assistants.
    descriptions: BTreeMap<String, String>,
}

/// What a server process does: in a scaled-out deployment, API processes and worker processes
/// can be started apart; an embedded server does both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Role {
    /// Serve the HTTP API only; the runs are run by worker processes.
    Api,
    /// Run the queued runs only, with no HTTP listener.
    Worker,
    /// Both (the default).
    #[default]
    All,
}

/// Serves a graph on the server's checkpointer and store.
type MakeServed = Box<dyn FnOnce(Arc<dyn Checkpointer>, Arc<dyn Store>) -> Arc<dyn ServedGraph> + Send + Sync>;

/// A graph given to the builder: served when the server starts, on the checkpointer and store
/// the server has then (so the order of the builder's calls does not matter).
enum Graph {
    /// A typed graph or a flow, to serve on the server's backends.
    Pending(MakeServed),
    /// A bridge of the user's own.
    Served(Arc<dyn ServedGraph>),
}

impl Graph {
    fn serve(self, saver: &Arc<dyn Checkpointer>, store: &Arc<dyn Store>) -> Arc<dyn ServedGraph> {
        match self {
            Graph::Pending(make) => make(saver.clone(), store.clone()),
            Graph::Served(graph) => graph,
        }
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("graphs", &self.graphs.keys().collect::<Vec<_>>())
            .field("options", &self.options)
            .field("manager", &self.manager)
            .field("role", &self.role)
            .finish_non_exhaustive()
    }
}

/// Why a server could not start.
#[derive(Debug)]
pub enum ServeError {
    /// The checkpointer could not be opened.
    Saver(SaverError),
    /// The store could not be opened.
    Store(StoreError),
    /// The server's tables could not be opened, or making the system assistants failed.
    Db(DbError),
    /// The bus could not connect.
    Bus(BusError),
    /// The listener failed.
    Io(std::io::Error),
    /// The workers could not start (the run queue or the bus failed).
    Workers(RunError),
}

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServeError::Saver(e) => write!(f, "cannot open the checkpointer: {e}"),
            ServeError::Store(e) => write!(f, "cannot open the store: {e}"),
            ServeError::Db(e) => write!(f, "cannot open the server's tables: {e}"),
            ServeError::Bus(e) => write!(f, "cannot connect the bus: {e}"),
            ServeError::Io(e) => write!(f, "cannot serve: {e}"),
            ServeError::Workers(e) => write!(f, "cannot start the workers: {e}"),
        }
    }
}

impl std::error::Error for ServeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServeError::Saver(e) => Some(e),
            ServeError::Store(e) => Some(e),
            ServeError::Db(e) => Some(e),
            ServeError::Bus(e) => Some(e),
            ServeError::Io(e) => Some(e),
            ServeError::Workers(_) => None,
        }
    }
}

impl Server {
    /// An embedded server: threads, runs and checkpoints in the one SQLite file at `path` (made
    /// when missing), streams and signals in process. Runs left running by a previous process on
    /// the file are put back in the queue when the workers start. The file's server tables
    /// belong to this server while it lives: another process opening them is refused, naming
    /// this one (see [`SqliteDb::open`](crate::db::sqlite::SqliteDb::open)).
    pub async fn embedded(path: impl AsRef<std::path::Path>) -> Result<Self, ServeError> {
        Self::embedded_with(path, StoreConfig::default()).await
    }

    /// [`Server::embedded`], its store (in the same file) set up with `store` (index, TTL).
    pub async fn embedded_with(path: impl AsRef<std::path::Path>, store: StoreConfig) -> Result<Self, ServeError> {
        let path = path.as_ref();
        let saver = SqliteSaver::open(path).map_err(ServeError::Saver)?;
        let db = Arc::new(SqliteDb::open_with(&saver).await.map_err(ServeError::Db)?);
        let store = SqliteStore::open(path, store).map_err(ServeError::Store)?;
        Ok(Self::with_backends(Arc::new(saver), db.clone(), db, Arc::new(LocalBus::default())).store(Arc::new(store)))
    }

    /// A scaled-out server: threads, runs and checkpoints on the PostgreSQL server at
    /// `postgres_url`, wake-ups, cancellations, streams and heartbeats over the Redis server at
    /// `redis_url`. Start as many as you like, each with its [`Role`]; a worker whose heartbeat
    /// stops has its runs put back in the queue by the others.
    pub async fn scale_out(postgres_url: &str, redis_url: &str) -> Result<Self, ServeError> {
        Self::scale_out_in(postgres_url, redis_url, "weir", "weir").await
    }

    /// [`Server::scale_out`] with its tables and checkpoints in the PostgreSQL schema `schema`
    /// and its keys under the Redis prefix `prefix` (both `weir` by default), so that several
    /// deployments, or tests, can share the two servers without meeting.
    pub async fn scale_out_in(
        postgres_url: &str,
        redis_url: &str,
        schema: &str,
        prefix: &str,
    ) -> Result<Self, ServeError> {
        Self::scale_out_with(postgres_url, redis_url, schema, prefix, StoreConfig::default()).await
    }

    /// [`Server::scale_out_in`], its store (in the same schema) set up with `store` (index, TTL).
    pub async fn scale_out_with(
        postgres_url: &str,
        redis_url: &str,
        schema: &str,
        prefix: &str,
        store: StoreConfig,
    ) -> Result<Self, ServeError> {
        // The checkpoints' and the store's pools of four connections, the tables' of eight.
        let pool = |size| PoolOptions::new().size(size).schema(schema);
        Self::scale_out_on(postgres_url, redis_url, prefix, store, [pool(4), pool(8), pool(4)]).await
    }

    /// [`Server::scale_out_with`], its checkpoints, tables and store each on a pool made with
    /// `pool`: its size, timeouts, `application_name` and TLS roots, and its schema (`weir` when
    /// unset). The URL's `sslmode` says whether TLS is used.
    pub async fn scale_out_pooled(
        postgres_url: &str,
        redis_url: &str,
        prefix: &str,
        store: StoreConfig,
        pool: PoolOptions,
    ) -> Result<Self, ServeError> {
        let pool = match pool.schema_name() {
            Some(_) => pool,
            None => pool.schema("weir"),
        };
        let pools = [pool.clone(), pool.clone(), pool];
        Self::scale_out_on(postgres_url, redis_url, prefix, store, pools).await
    }

    /// A scaled-out server on the pools of its checkpoints, tables and store, all in the first's
    /// schema.
    async fn scale_out_on(
        postgres_url: &str,
        redis_url: &str,
        prefix: &str,
        store: StoreConfig,
        [saver, tables, items]: [PoolOptions; 3],
    ) -> Result<Self, ServeError> {
        let store_config = store;
        let schema = saver.schema_name().unwrap_or("weir").to_owned();
        let saver = PostgresSaver::options()
            .schema(&schema)
            .pool(saver)
            .connect(postgres_url)
            .await
            .map_err(ServeError::Saver)?;
        let db = PostgresDb::connect_with(postgres_url, tables).await;
        let db = Arc::new(db.map_err(ServeError::Db)?);
        db.fence_checkpoints().await.map_err(ServeError::Db)?;
        let bus = RedisBus::options()
            .prefix(prefix)
            .connect(redis_url)
            .await
            .map_err(ServeError::Bus)?;
        let manager = ManagerConfig {
            requeue_on_start: false,
            ..ManagerConfig::default()
        };
        let store = PostgresStore::with_pool(Pool::new(postgres_url, items.then_public()), store_config).await;
        let store = Arc::new(store.map_err(ServeError::Store)?);
        Ok(Self::with_backends(Arc::new(saver), db.clone(), db, Arc::new(bus))
            .store(store)
            .manager_config(manager))
    }

    /// A server on these backends — the checkpointer keeping the threads' state, the catalog,
    /// the run queue and the bus — serving no graph yet, with 10 workers and a store in memory
    /// (see [`Server::store`]).
    pub fn with_backends(
        saver: Arc<dyn Checkpointer>,
        catalog: Arc<dyn Catalog>,
        queue: Arc<dyn RunQueue>,
        bus: Arc<dyn Bus>,
    ) -> Self {
        Self {
            graphs: BTreeMap::new(),
            saver,
            store: Arc::new(InMemoryStore::new()),
            catalog,
            queue,
            bus,
            options: ApiOptions::default(),
            manager: ManagerConfig::default(),
            role: Role::All,
            store_sweep: None,
            descriptions: BTreeMap::new(),
        }
    }

    /// The checkpointer the server keeps its threads' state on: a JSON flow whose nodes pause for
    /// a person is loaded with it (`LoadOptions { checkpointer: Some(server.checkpointer()), .. }`).
    pub fn checkpointer(&self) -> Arc<dyn Checkpointer> {
        self.saver.clone()
    }

    /// Serves `graph` as `graph_id`, its threads on the server's checkpointer: a typed
    /// [`CompiledGraph`](weir_runtime::CompiledGraph) or a JSON [`Flow`](weir_flow::Flow). A second
    /// graph with the same id replaces the first.
    /// Its nodes see the server's store as `ctx.store()`.
    pub fn graph(mut self, graph_id: impl Into<String>, graph: impl Serve + Send + Sync + 'static) -> Self {
        let make = move |saver, store| graph.into_served_with(saver, Some(store));
        self.graphs.insert(graph_id.into(), Graph::Pending(Box::new(make)));
        self
    }

    /// The description of graph `graph_id`, which its system assistant carries (as a graph
    /// given as `{"path": …, "description": …}` in `langgraph.json`); kept in step with the
    /// assistant already stored.
    pub fn describe(mut self, graph_id: impl Into<String>, description: impl Into<String>) -> Self {
        self.descriptions.insert(graph_id.into(), description.into());
        self
    }

    /// Serves a graph through a [`ServedGraph`] of your own, as `graph_id`.
    pub fn served(mut self, graph_id: impl Into<String>, graph: Arc<dyn ServedGraph>) -> Self {
        self.graphs.insert(graph_id.into(), Graph::Served(graph));
        self
    }

    /// The long-term memory behind `/store/*` and the served graphs' `ctx.store()`: by default
    /// the SQLite file of an embedded server, the PostgreSQL schema of a scaled-out one, and
    /// memory for [`Server::with_backends`].
    pub fn store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = store;
        self
    }

    /// Deletes the store's expired items every `every` (LangGraph's `store.ttl.sweep_interval_minutes`)
    /// while the server runs.
    pub fn store_sweep(mut self, every: Duration) -> Self {
        self.store_sweep = Some(every);
        self
    }

    /// The time-to-live a new thread gets when its request gives none (`checkpointer.ttl`'s
    /// `default_ttl` and `strategy`).
    pub fn thread_ttl(mut self, ttl: Option<ThreadTtl>) -> Self {
        self.manager.thread_ttl = ttl;
        self
    }

    /// How often the workers apply the threads' TTLs (default every 5 minutes).
    pub fn ttl_sweep(mut self, every: Duration) -> Self {
        self.manager.ttl_sweep = Some(every);
        self
    }

    /// How often the workers fire the crons that are due (default every second).
    pub fn cron_poll(mut self, every: Duration) -> Self {
        self.manager.cron_poll = Some(every);
        self
    }

    /// How many runs this process runs at once (default 10, LangGraph's).
    pub fn workers(mut self, workers: usize) -> Self {
        self.manager.workers = workers;
        self
    }

    /// The most runs a thread may have pending or running when a run is queued behind them
    /// (multitask strategy `enqueue`, the default); past it a new run is refused with a 429
    /// (default 1,000).
    pub fn max_queued_runs(mut self, runs: usize) -> Self {
        self.manager.max_queued_runs = runs;
        self
    }

    /// How the workers behave (poll interval, heartbeats, shutdown grace, …); replaces
    /// [`Server::workers`]' and [`Server::max_queued_runs`]' settings too.
    pub fn manager_config(mut self, config: ManagerConfig) -> Self {
        self.manager = config;
        self
    }

    /// What this process does (default [`Role::All`]).
    pub fn role(mut self, role: Role) -> Self {
        self.role = role;
        self
    }

    /// The largest request body accepted, in bytes (default 8 MiB).
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.options.body_limit = bytes;
        self
    }

    /// How the API is served, as the config file's `http` says: route groups turned off, CORS
    /// rules, a prefix, and whether runs' webhooks are sent. Give it as [`Config::load`] read and
    /// checked it (an origin, a method or a header name that does not parse is left out).
    ///
    /// [`Config::load`]: crate::config::Config::load
    pub fn http(mut self, http: crate::config::HttpConfig) -> Self {
        self.manager.webhooks = !http.disable_webhooks;
        self.options.http = http;
        self
    }

    /// Makes the system assistants, starts the workers (unless the role is [`Role::Api`]), and
    /// returns the API's router (for tests, or to nest in an app of your own). The workers run
    /// until the process ends; [`Server::serve_on`] stops them gracefully instead.
    pub async fn router(self) -> Result<axum::Router, ServeError> {
        Ok(self.start().await?.0)
    }

    /// The router, the started manager, and the store's sweeper if it has one.
    async fn start(self) -> Result<(axum::Router, Manager, Option<tokio::task::JoinHandle<()>>), ServeError> {
        for graph_id in self.graphs.keys() {
            let description = self.descriptions.get(graph_id).map(String::as_str);
            ensure_system_assistant(self.catalog.as_ref(), graph_id, description)
                .await
                .map_err(ServeError::Db)?;
        }
        let (saver, store) = (&self.saver, &self.store);
        let graphs: BTreeMap<_, _> = self
            .graphs
            .into_iter()
            .map(|(id, g)| (id, g.serve(saver, store)))
            .collect();
        let graphs = Arc::new(graphs);
        let runs = Manager::new(
            graphs.clone(),
            self.catalog.clone(),
            self.queue.clone(),
            self.bus.clone(),
            self.manager,
        );
        if self.role != Role::Api {
            runs.start().await.map_err(ServeError::Workers)?;
        }
        let sweeper = self
            .store_sweep
            .map(|every| weir_runtime::store::spawn_sweeper(self.store.clone(), every));
        let state = AppState {
            graphs,
            catalog: self.catalog,
            queue: self.queue,
            bus: self.bus,
            runs: runs.clone(),
            store: self.store,
        };
        Ok((crate::api::router_with(state, &self.options), runs, sweeper))
    }

    /// Serves on `listener` until `shutdown` resolves (with [`Role::Worker`], runs the workers
    /// without answering on it), then finishes the requests in flight and stops the workers:
    /// runs still going after the grace period go back to the queue.
    pub async fn serve_on(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        let role = self.role;
        let (app, runs, sweeper) = self.start().await?;
        let served = if role == Role::Worker {
            drop(listener);
            shutdown.await;
            Ok(())
        } else {
            use axum::serve::ListenerExt;
            // Small SSE frames would otherwise wait for Nagle's algorithm.
            let listener = listener.tap_io(|tcp| {
                if let Err(e) = tcp.set_nodelay(true) {
                    tracing::warn!(error = %e, "cannot set TCP_NODELAY on an accepted connection");
                }
            });
            // A `Router` served as it is copies its whole route table for each connection
            // (axum's `Service<IncomingStream>` calls `with_state` on a clone): 80 KB an idle
            // connection. Made into a service once, each connection shares it.
            axum::serve(listener, app.into_make_service())
                .with_graceful_shutdown(shutdown)
                .await
                .map_err(ServeError::Io)
        };
        runs.shutdown().await;
        if let Some(sweeper) = sweeper {
            sweeper.abort();
        }
        served
    }

    /// Serves on `addr` until Ctrl-C (SIGINT) or SIGTERM; with [`Role::Worker`], binds nothing
    /// and runs the workers until then.
    pub async fn serve(self, addr: impl tokio::net::ToSocketAddrs) -> Result<(), ServeError> {
        if self.role == Role::Worker {
            let (_, runs, sweeper) = self.start().await?;
            shutdown_signal().await;
            runs.shutdown().await;
            if let Some(sweeper) = sweeper {
                sweeper.abort();
            }
            return Ok(());
        }
        let listener = listen(addr).await.map_err(ServeError::Io)?;
        self.serve_on(listener, shutdown_signal()).await
    }
}

/// How many connections may wait to be accepted (the kernel caps it at `net.core.somaxconn`).
/// `TcpListener::bind` asks for 1024: a burst of more clients connecting at once had some of
/// their connections dropped, each retried a second or more later.
const BACKLOG: u32 = 4096;

/// A listener on the first of `addr`'s addresses that binds, with a backlog of 4,096 connections:
/// what [`Server::serve`] and `weir serve` listen with.
///
/// # Errors
/// The last address's error when none binds (or none resolves).
pub async fn listen(addr: impl tokio::net::ToSocketAddrs) -> std::io::Result<tokio::net::TcpListener> {
    let mut last = std::io::Error::new(std::io::ErrorKind::InvalidInput, "the address resolves to nothing");
    for at in tokio::net::lookup_host(addr).await? {
        let socket = match at {
            std::net::SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
            std::net::SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
        };
        // As `TcpListener::bind` does on Unix: a restarted server binds while old connections
        // linger (on Windows the option would let two servers share the port).
        #[cfg(unix)]
        socket.set_reuseaddr(true)?;
        match socket.bind(at).and_then(|()| socket.listen(BACKLOG)) {
            Ok(listener) => return Ok(listener),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Makes `graph_id`'s system assistant unless it exists.
async fn ensure_system_assistant(
    catalog: &dyn Catalog,
    graph_id: &str,
    description: Option<&str>,
) -> Result<(), DbError> {
    let id = system_assistant_id(graph_id).to_string();
    if let Some(mut stored) = catalog.get_assistant(&id).await? {
        // As LangGraph's: the description follows the config's.
        if stored.description.as_deref() != description {
            stored.description = description.map(str::to_owned);
            stored.updated_at = crate::api::now();
            catalog.put_assistant(&stored).await?;
        }
        return Ok(());
    }
    let at = crate::api::now();
    let mut metadata = Object::new();
    metadata.insert("created_by".into(), "system".into());
    let assistant = Assistant {
        assistant_id: id,
        graph_id: graph_id.to_owned(),
        config: Object::new(),
        context: Object::new(),
        metadata,
        name: graph_id.to_owned(),
        created_at: at.clone(),
        updated_at: at,
        version: 1,
        description: description.map(str::to_owned),
    };
    catalog.put_assistant(&assistant).await
}

/// Resolves on Ctrl-C, or on SIGTERM on Unix.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

#[cfg(test)]
mod tests {
    use super::listen;

    #[tokio::test]
    async fn listen_accepts_and_a_port_in_use_is_an_error() {
        let listener = listen("127.0.0.1:0").await.unwrap();
        let at = listener.local_addr().unwrap();
        let client = tokio::spawn(tokio::net::TcpStream::connect(at));
        listener.accept().await.unwrap();
        client.await.unwrap().unwrap();
        let e = listen(at).await.unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AddrInUse, "{e}");
    }
}
