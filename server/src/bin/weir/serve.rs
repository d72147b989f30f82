//! `weir serve`: LangGraph's server API over the flows a config file names, embedded (one SQLite
//! file) or scaled out (PostgreSQL + Redis, with `--role api|worker|all` per process).

use clap::{Args, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use weir_flow::{Flow, LoadOptions};
use weir_runtime::store::StoreConfig;
use weir_server::config::{Config, HttpConfig, PostgresConfig, TtlConfig};
use weir_server::{shutdown_signal, ServeError, Server};

/// What this process does in a scaled-out deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Role {
    /// Serve the HTTP API only; the workers run elsewhere.
    Api,
    /// Run the queued runs only.
    Worker,
    /// Both (the only role of an embedded server).
    All,
}

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The config file: `{"graphs": {"name": "path/to/flow.json"}, "store": {…}, "ttl": {…},
    /// "otel": {…}}`.
    #[arg(long, default_value = "weir.json")]
    config: PathBuf,
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// The port to listen on.
    #[arg(long, default_value_t = 2024)]
    port: u16,
    /// Embedded mode: the SQLite file keeping threads, runs and checkpoints.
    #[arg(long, default_value = "weir.db")]
    db: PathBuf,
    /// Scale-out mode: the PostgreSQL server keeping threads, runs and checkpoints.
    #[arg(long, requires = "redis", conflicts_with = "db")]
    postgres: Option<String>,
    /// Scale-out mode: the Redis server carrying wake-ups, cancellations and streams, or a node
    /// of a Redis Cluster (found by asking it; several comma-separated URLs name several seeds).
    #[arg(long, requires = "postgres")]
    redis: Option<String>,
    /// Scale-out mode: the PostgreSQL schema holding the tables and checkpoints.
    #[arg(long, requires = "postgres", default_value = "weir", value_parser = crate::schema_name)]
    schema: String,
    /// Scale-out mode: the prefix of every Redis key and channel.
    #[arg(long, requires = "redis", default_value = "weir")]
    prefix: String,
    /// What this process does (scale-out mode; an embedded server is always `all`).
    #[arg(long, value_enum, default_value_t = Role::All)]
    role: Role,
    /// How many runs this process runs at once.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    workers: u32,
    /// The most runs a thread may have pending or running when a run is queued behind them
    /// (multitask strategy `enqueue`, the default); past it a new run is refused with a 429.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u32).range(1..))]
    max_queued_runs: u32,
    /// How often, in seconds, the workers fire the crons that are due (decimals allowed): a
    /// cron fires at most this late. Without it, LangGraph's CRON_SCHEDULER_SLEEP_TIME if set,
    /// else 1.
    #[arg(long, value_name = "SECONDS", value_parser = cron_poll)]
    cron_poll: Option<Duration>,
    /// Export the runs' spans over OTLP/HTTP, to OTEL_EXPORTER_OTLP_ENDPOINT (else
    /// http://localhost:4318) as OTEL_SERVICE_NAME (else `weir`). On too when the config has an
    /// `otel` section or OTEL_EXPORTER_OTLP_ENDPOINT is set. Needs a weir built with feature `otel`.
    #[arg(long)]
    otel: bool,
}

impl ServeArgs {
    /// An embedded server on `db`, listening on `host:port` (what `weir studio` opens).
    pub(crate) fn embedded(db: PathBuf, host: String, port: u16) -> Self {
        Self {
            config: PathBuf::new(),
            host,
            port,
            db,
            postgres: None,
            redis: None,
            schema: "weir".into(),
            prefix: "weir".into(),
            role: Role::All,
            workers: 10,
            max_queued_runs: 1_000,
            cron_poll: None,
            otel: false,
        }
    }
}

/// `--cron-poll`: seconds, from a hundredth to a day.
fn cron_poll(text: &str) -> Result<Duration, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| (0.01..=86_400.0).contains(s))
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("`{text}` is not a number of seconds from 0.01 to 86400 (such as 1 or 0.5)"))
}

/// Runs `weir serve`.
pub(crate) fn serve(mut args: ServeArgs) -> Result<ExitCode, ExitCode> {
    if args.postgres.is_none() && args.role != Role::All {
        return Err(super::usage(
            "`--role api|worker` splits a scaled-out server: give `--postgres URL --redis URL` too",
        ));
    }
    if args.cron_poll.is_none() {
        if let Some(seconds) = std::env::var("CRON_SCHEDULER_SLEEP_TIME")
            .ok()
            .filter(|s| !s.is_empty())
        {
            let every = cron_poll(&seconds).map_err(|e| super::usage(format!("CRON_SCHEDULER_SLEEP_TIME: {e}")))?;
            args.cron_poll = Some(every);
        }
    }
    let mut config = Config::load(&args.config).map_err(super::usage)?;
    // As `langgraph dev` does: the config's `env` goes into this process's environment (over
    // what it held), before anything reads it and before any thread starts.
    for (key, value) in &config.env {
        std::env::set_var(key, value);
    }
    // And its variables for the prefix, over the config's.
    for var in ["MOUNT_PREFIX", "LANGGRAPH_MOUNT_PREFIX"] {
        if let Some(prefix) = std::env::var(var).ok().filter(|p| !p.is_empty()) {
            weir_server::config::check_prefix(&prefix).map_err(|why| super::usage(format!("{var}: {why}")))?;
            config.http.mount_prefix = Some(prefix);
        }
    }
    let store = match &config.store {
        Some(store) => store
            .to_runtime()
            .map_err(|e| super::usage(format!("{}: {e}", args.config.display())))?,
        None => StoreConfig::default(),
    };
    // Checked now, so a bad flow is reported before any backend is opened; loaded again on the
    // server's checkpointer in `start`, so that its nodes may pause for a person.
    let mut flows = Vec::new();
    for (name, path) in &config.graphs {
        let text = super::read(path)?;
        let at = format!("{} (graph `{name}`)", path.display());
        super::load(&text, &at, LoadOptions::default())?;
        flows.push((name.clone(), at, text));
    }
    // Kept until the server stops: dropped, it sends the spans still buffered.
    let _otel = export_spans(&args, &config)?;
    let settings = Settings {
        store,
        ttl: config.ttl,
        postgres: config.postgres,
        http: config.http,
        descriptions: config.descriptions,
    };
    let runtime = super::runtime()?;
    runtime.block_on(start(&args, flows, settings))
}

/// Whether the environment names an OTLP endpoint, which turns the export on.
#[cfg(feature = "otel")]
fn endpoint_in_env() -> bool {
    ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()))
}

/// Starts exporting the runs' spans over OTLP when `--otel`, the config's `otel` section or
/// the environment asks for it; the guard flushes when dropped.
#[cfg(feature = "otel")]
fn export_spans(args: &ServeArgs, config: &Config) -> Result<Option<weir_server::otel::OtelGuard>, ExitCode> {
    if !(args.otel || config.otel.is_some() || endpoint_in_env()) {
        return Ok(None);
    }
    let settings = config.otel.clone().unwrap_or_default();
    let mut otel = weir_server::otel::Otel::new();
    if let Some(endpoint) = settings.endpoint {
        otel = otel.endpoint(endpoint);
    }
    if let Some(name) = settings.service_name {
        otel = otel.service_name(name);
    }
    let guard = otel.install().map_err(super::usage)?;
    eprintln!("weir serve: exporting the runs' spans over OTLP");
    Ok(Some(guard))
}

/// Without the feature, asking for the export is an error; an endpoint in the environment (set
/// for other processes, perhaps) is not.
#[cfg(not(feature = "otel"))]
fn export_spans(args: &ServeArgs, config: &Config) -> Result<Option<()>, ExitCode> {
    if args.otel || config.otel.is_some() {
        return Err(super::usage(
            "`--otel` / the config's `otel`: this weir was built without OpenTelemetry (feature `otel` of weir-server)",
        ));
    }
    Ok(None)
}

/// What the config file sets besides the graphs: the store's index and TTL, the threads' TTL, and
/// the PostgreSQL pools.
#[derive(Debug, Default)]
pub(crate) struct Settings {
    store: StoreConfig,
    ttl: Option<TtlConfig>,
    postgres: Option<PostgresConfig>,
    http: HttpConfig,
    descriptions: std::collections::BTreeMap<String, String>,
}

/// Builds the server on its backends and serves the flows (name, where it was read, its text)
/// until Ctrl-C or SIGTERM.
pub(crate) async fn start(
    args: &ServeArgs,
    flows: Vec<(String, String, String)>,
    settings: Settings,
) -> Result<ExitCode, ExitCode> {
    let failed = |e: ServeError| {
        eprintln!("error: {e}");
        ExitCode::FAILURE
    };
    // `store.ttl.sweep_interval_minutes`: how often the store's expired items are deleted.
    let store_sweep = settings.store.ttl.as_ref().and_then(|t| t.sweep_interval());
    let server = match (&args.postgres, &args.redis) {
        (Some(pg), Some(redis)) => match &settings.postgres {
            Some(postgres) => {
                let pool = postgres.to_pool_options(&args.schema);
                Server::scale_out_pooled(pg, redis, &args.prefix, settings.store, pool).await
            }
            None => Server::scale_out_with(pg, redis, &args.schema, &args.prefix, settings.store).await,
        },
        _ => Server::embedded_with(&args.db, settings.store).await,
    };
    let role = match args.role {
        Role::Api => weir_server::Role::Api,
        Role::Worker => weir_server::Role::Worker,
        Role::All => weir_server::Role::All,
    };
    let mut server = server
        .map_err(failed)?
        .workers(args.workers as usize)
        .max_queued_runs(args.max_queued_runs as usize)
        .role(role);
    if let Some(every) = args.cron_poll {
        server = server.cron_poll(every);
    }
    if let Some(every) = store_sweep {
        server = server.store_sweep(every);
    }
    if let Some(ttl) = &settings.ttl {
        server = server.thread_ttl(ttl.default_thread_ttl()).ttl_sweep(ttl.sweep_every());
    }
    let prefix = settings.http.mount_prefix.clone().unwrap_or_default();
    let studio = settings.http.serves_studio();
    server = server.http(settings.http);
    for (graph_id, description) in settings.descriptions {
        server = server.describe(graph_id, description);
    }
    for (name, at, text) in flows {
        let options = LoadOptions {
            checkpointer: Some(server.checkpointer()),
            ..LoadOptions::default()
        };
        let flow: Flow = super::load(&text, &at, options)?;
        server = server.graph(name, flow);
    }
    if role == weir_server::Role::Worker {
        eprintln!("weir serve: working (role worker)");
        server.serve((args.host.as_str(), args.port)).await.map_err(failed)?;
        return Ok(ExitCode::SUCCESS);
    }
    let listener = weir_server::listen((args.host.as_str(), args.port))
        .await
        .map_err(|e| super::usage(format!("cannot listen on {}:{}: {e}", args.host, args.port)))?;
    let at = listener.local_addr().map_err(|e| failed(ServeError::Io(e)))?;
    if studio {
        eprintln!("weir serve: listening on http://{at}{prefix} (studio: http://{at}{prefix}/studio/)");
    } else {
        eprintln!("weir serve: listening on http://{at}{prefix}");
    }
    server.serve_on(listener, shutdown_signal()).await.map_err(failed)?;
    Ok(ExitCode::SUCCESS)
}
