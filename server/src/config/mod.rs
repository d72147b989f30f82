//! The server's config file, `weir.json`, in `langgraph.json`'s shape: `{"graphs": {name: path},
//! "store": {…}, "ttl": {…}, "http": {…}, "otel": {…}}`, and weir's own `"postgres": {…}` (a
//! scaled-out server's pools). [`Config::load`] parses and checks it, each error naming the field
//! at fault (`graphs.chain`, `store.index.dims`); paths are taken relative to the file. `env`
//! (an object of strings, or a `.env` file, [`dotenv`]) is read for the server to set, as
//! `langgraph dev` does. Keys `langgraph.json` has for building a Python deployment
//! (`dependencies`, `python_version`, …) are accepted and ignored, so one file can serve both; keys that change how
//! the server behaves and that weir cannot honour ([`UNHONOURED`]: Python auth or encryption
//! handlers, a custom app, …) are refused by name rather than served without. [`StoreConfig::to_runtime`] and
//! [`TtlConfig`]'s methods turn the store and thread TTL settings into what the server takes.

mod dotenv;

use crate::model::{ThreadTtl, TtlStrategy};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// A checked config file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Config {
    /// The flows to serve, by graph id: paths to flow JSON files.
    pub graphs: BTreeMap<String, PathBuf>,
    /// The graphs' descriptions (a graph given as `{"path": …, "description": …}`), which
    /// their system assistants carry.
    pub descriptions: BTreeMap<String, String>,
    /// The long-term store's settings.
    pub store: Option<StoreConfig>,
    /// The threads' time-to-live.
    pub ttl: Option<TtlConfig>,
    /// Where the runs' spans are exported over OTLP (a server built with feature `otel`).
    pub otel: Option<OtelConfig>,
    /// The PostgreSQL pools of a scaled-out server.
    pub postgres: Option<PostgresConfig>,
    /// How the HTTP API is served (`http`): routes turned off, CORS, a prefix.
    pub http: HttpConfig,
    /// The environment variables `env` sets (its object's, or its `.env` file's), in order.
    pub env: Vec<(String, String)>,
}

/// `http`, as `langgraph.json` has it: route groups turned off, CORS rules, and a prefix every
/// route is served under. Its `app` (a Python app to mount) and `configurable_headers` are
/// refused; `logging_headers` (weir logs no request header), `middleware_order` and
/// `enable_custom_route_auth` (which order authentication and a custom app, neither of which
/// weir serve has) are accepted as they change nothing here.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(default)]
pub struct HttpConfig {
    /// No `/assistants` routes.
    pub disable_assistants: bool,
    /// No `/threads` routes (a thread's state, history, copy, search, …), nor the studio's.
    pub disable_threads: bool,
    /// No routes that make or read runs (`/runs`, a thread's runs and stream, crons).
    pub disable_runs: bool,
    /// No `/store` routes.
    pub disable_store: bool,
    /// No `/mcp`.
    pub disable_mcp: bool,
    /// No `/a2a` nor agent cards.
    pub disable_a2a: bool,
    /// No `/info` nor `/metrics`; `/ok` answers `{"ok": true}` without looking at anything.
    pub disable_meta: bool,
    /// No studio page (weir has no generative UI routes of LangGraph's `/ui`).
    pub disable_ui: bool,
    /// Runs' webhooks are not sent (the runs still run).
    pub disable_webhooks: bool,
    /// LangGraph's switch for its thread-centric streaming protocol, which weir does not serve:
    /// nothing to turn off.
    pub disable_event_streaming: bool,
    /// CORS rules in place of the permissive default.
    pub cors: Option<CorsConfig>,
    /// A path every route is served under (`/api`).
    pub mount_prefix: Option<String>,
    // Read to be refused or accepted as above.
    app: Option<serde_json::Value>,
    configurable_headers: Option<serde_json::Value>,
    logging_headers: Option<serde_json::Value>,
    middleware_order: Option<serde_json::Value>,
    enable_custom_route_auth: Option<serde_json::Value>,
}

/// `http.cors`: Starlette's `CORSMiddleware` settings, which LangGraph's server takes, with its
/// defaults (`GET` only, no headers, no credentials, a preflight kept 600 seconds).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CorsConfig {
    /// The origins allowed (`"*"`: any).
    pub allow_origins: Vec<String>,
    /// A regular expression an allowed origin matches, beside `allow_origins`.
    pub allow_origin_regex: Option<String>,
    /// The methods allowed (`"*"`: any).
    pub allow_methods: Vec<String>,
    /// The request headers allowed (`"*"`: any).
    pub allow_headers: Vec<String>,
    /// Whether credentials (cookies, `Authorization`) may be sent.
    pub allow_credentials: bool,
    /// The response headers a page may read.
    pub expose_headers: Vec<String>,
    /// How long a browser may keep a preflight's answer, in seconds.
    pub max_age: u64,
}

impl Default for CorsConfig {
    fn default() -> Self {
        Self {
            allow_origins: Vec::new(),
            allow_origin_regex: None,
            allow_methods: vec!["GET".to_owned()],
            allow_headers: Vec::new(),
            allow_credentials: false,
            expose_headers: Vec::new(),
            max_age: 600,
        }
    }
}

/// `otel`: export the runs' spans over OTLP/HTTP. Either key may be left out: the endpoint then
/// comes from `OTEL_EXPORTER_OTLP_ENDPOINT` (else `http://localhost:4318`), the service name
/// from `OTEL_SERVICE_NAME` (else `weir`).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OtelConfig {
    /// The collector's OTLP/HTTP base URL (`http://localhost:4318`; `/v1/traces` is added).
    pub endpoint: Option<String>,
    /// The `service.name` the traces are listed under.
    pub service_name: Option<String>,
}

/// `postgres`: each of a scaled-out server's three pools (checkpoints, tables, store) is made
/// with these; the URL (`--postgres`) says the rest, its `sslmode` whether TLS is used.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostgresConfig {
    /// How many connections each pool opens at most (default 4).
    pub pool_size: Option<u32>,
    /// How long an operation waits for a free connection before it fails (default: no limit).
    pub acquire_timeout_secs: Option<f64>,
    /// How long opening a connection may take (default: as long as the system tries).
    pub connect_timeout_secs: Option<f64>,
    /// The server's `statement_timeout` on each connection (default: the server's).
    pub statement_timeout_secs: Option<f64>,
    /// The connections' `application_name` (default `weir`).
    pub application_name: Option<String>,
    /// A PEM file of the CA certificates to check the server's against (a managed database's
    /// private CA), relative to the config file; default: the webpki roots.
    pub ca_file: Option<PathBuf>,
}

impl PostgresConfig {
    /// The pool options these settings make, in `schema`.
    pub fn to_pool_options(&self, schema: &str) -> weir_runtime::postgres::PoolOptions {
        let mut options = weir_runtime::postgres::PoolOptions::new()
            .size(self.pool_size.map_or(4, |n| n as usize))
            .schema(schema);
        let secs = std::time::Duration::from_secs_f64;
        if let Some(t) = self.acquire_timeout_secs {
            options = options.acquire_timeout(secs(t));
        }
        if let Some(t) = self.connect_timeout_secs {
            options = options.connect_timeout(secs(t));
        }
        if let Some(t) = self.statement_timeout_secs {
            options = options.statement_timeout(secs(t));
        }
        if let Some(name) = &self.application_name {
            options = options.application_name(name);
        }
        if let Some(file) = &self.ca_file {
            options = options.tls_roots(weir_runtime::postgres::TlsRoots::pem_file(file));
        }
        options
    }
}

/// `store`: the long-term store's semantic index and item TTL.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// The semantic index of the items.
    pub index: Option<IndexConfig>,
    /// The items' time-to-live.
    pub ttl: Option<StoreTtl>,
}

/// `store.index`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexConfig {
    /// The embedding model (`provider:model`).
    pub embed: String,
    /// The embeddings' dimension.
    pub dims: u32,
    /// The value fields to embed (all when absent).
    pub fields: Option<Vec<String>>,
}

/// `store.ttl`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreTtl {
    /// Whether reading an item renews its TTL.
    pub refresh_on_read: Option<bool>,
    /// The TTL of items put without one, in minutes.
    pub default_ttl: Option<f64>,
    /// How often expired items are swept, in minutes.
    pub sweep_interval_minutes: Option<u32>,
}

/// `ttl` (or `checkpointer.ttl`, as `langgraph.json` spells it): the threads' time-to-live.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TtlConfig {
    /// What happens to an expired thread: `delete` (the default) or `keep_latest`.
    pub strategy: Option<String>,
    /// The TTL of threads made without one, in minutes.
    pub default_ttl: Option<f64>,
    /// How often expired threads are swept, in minutes.
    pub sweep_interval_minutes: Option<u32>,
}

impl IndexConfig {
    /// The model of an `openai:<model>` embedding (the one provider weir serve knows).
    pub fn openai_model(&self) -> Option<&str> {
        self.embed.strip_prefix("openai:").filter(|m| !m.is_empty())
    }
}

impl StoreConfig {
    /// The store's settings as the runtime takes them: the TTL policy, and the index over
    /// OpenAI-compatible embeddings (OPENAI_BASE_URL, OPENAI_API_KEY).
    ///
    /// # Errors
    /// When an index is configured but this build has no embeddings (feature `openai-embeddings`).
    pub fn to_runtime(&self) -> Result<weir_runtime::store::StoreConfig, String> {
        let ttl = self.ttl.as_ref().map(|t| weir_runtime::store::TtlConfig {
            refresh_on_read: t.refresh_on_read.unwrap_or(true),
            default_ttl: t.default_ttl,
            sweep_interval_minutes: t.sweep_interval_minutes.map(f64::from),
        });
        let index = match &self.index {
            None => None,
            Some(index) => Some(embeddings_index(index)?),
        };
        Ok(weir_runtime::store::StoreConfig {
            index,
            ttl,
            ..weir_runtime::store::StoreConfig::default()
        })
    }
}

#[cfg(feature = "openai-embeddings")]
fn embeddings_index(index: &IndexConfig) -> Result<weir_runtime::store::IndexConfig, String> {
    let model = index
        .openai_model()
        .ok_or("`store.index.embed`: not `openai:<model>`")?;
    let dims = index.dims as usize;
    let embed = weir_agent::model::OpenAiEmbeddings::new(model).dimensions(dims);
    let config = weir_runtime::store::IndexConfig::new(dims, embed);
    Ok(match &index.fields {
        Some(fields) => config.fields(fields.iter().cloned()),
        None => config,
    })
}

#[cfg(not(feature = "openai-embeddings"))]
fn embeddings_index(_: &IndexConfig) -> Result<weir_runtime::store::IndexConfig, String> {
    Err("`store.index`: this weir was built without embeddings (feature `openai-embeddings` of weir-server)".into())
}

impl TtlConfig {
    /// The TTL a new thread gets (`default_ttl` minutes, by `strategy`), if any.
    pub fn default_thread_ttl(&self) -> Option<ThreadTtl> {
        let strategy = match self.strategy.as_deref() {
            Some(s) => TtlStrategy::parse(s).ok()?,
            None => TtlStrategy::Delete,
        };
        self.default_ttl.map(|minutes| ThreadTtl { strategy, minutes })
    }

    /// How often the threads' TTLs are applied (`sweep_interval_minutes`, 5 by default).
    pub fn sweep_every(&self) -> std::time::Duration {
        std::time::Duration::from_secs(u64::from(self.sweep_interval_minutes.unwrap_or(5)) * 60)
    }
}

/// Why a config file was refused: the file, and the field at fault with what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    /// The file.
    pub file: PathBuf,
    /// The field (`graphs.chain`), empty for the whole file.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.field.as_str() {
            "" => write!(f, "{}: {}", self.file.display(), self.message),
            field => write!(f, "{}: field `{field}`: {}", self.file.display(), self.message),
        }
    }
}

impl std::error::Error for ConfigError {}

/// `langgraph.json`'s graph definition.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GraphDef {
    path: String,
    description: Option<String>,
}

/// The file as written, before the checks.
#[derive(Debug, Deserialize)]
struct Raw {
    graphs: BTreeMap<String, serde_json::Value>,
    store: Option<StoreConfig>,
    ttl: Option<TtlConfig>,
    checkpointer: Option<RawCheckpointer>,
    otel: Option<OtelConfig>,
    postgres: Option<PostgresConfig>,
    http: Option<HttpConfig>,
    env: Option<serde_json::Value>,
    /// Every other key, for [`UNHONOURED`].
    #[serde(flatten)]
    rest: BTreeMap<String, serde_json::Value>,
}

/// `langgraph.json`'s keys that change what the server does and that weir serve cannot honour,
/// with why: serving without them would be serving something else than was asked (without
/// authentication, say), so a file that sets one is refused.
pub const UNHONOURED: [(&str, &str); 5] = [
    ("auth", "names Python authentication handlers, which weir serve cannot run; remove it to serve without authentication (behind a proxy that authenticates, say)"),
    ("encryption", "names Python encryption handlers, which weir serve cannot run; remove it to store data unencrypted"),
    ("priority", "names a Python function that sets runs' priorities, which weir serve cannot run; remove it to run each thread's runs in order"),
    ("webhooks", "sets a policy for runs' webhook URLs, which weir serve does not apply; remove it (a run's webhook is then sent to any `http://` or `https://` URL it names)"),
    ("ui", "names generative UI components, which weir serve does not build or serve; remove it"),
];

#[derive(Debug, Deserialize)]
struct RawCheckpointer {
    ttl: Option<TtlConfig>,
}

impl Config {
    /// Reads and checks the config file at `path`.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: path.to_owned(),
            field: String::new(),
            message: format!("cannot read it: {e}"),
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        Config::parse(&text, base).map_err(|(field, message)| ConfigError {
            file: path.to_owned(),
            field,
            message,
        })
    }

    /// Parses and checks a config's `text`, its paths relative to `base`; an error is
    /// `(field, message)`.
    pub fn parse(text: &str, base: &Path) -> Result<Config, (String, String)> {
        let de = &mut serde_json::Deserializer::from_str(text);
        let raw: Raw = serde_path_to_error::deserialize(de).map_err(|e| {
            // Text that is not JSON names its line and column, not a field (the path would
            // be where the parser stopped: `graphs.?`).
            if e.inner().is_syntax() || e.inner().is_eof() {
                return (String::new(), format!("not JSON: {}", e.into_inner()));
            }
            let field = e.path().to_string();
            let field = if field == "." || field == "?" {
                String::new()
            } else {
                field
            };
            (field, e.into_inner().to_string())
        })?;
        for (key, why) in UNHONOURED {
            if raw.rest.get(key).is_some_and(|v| !v.is_null()) {
                return Err((key.to_owned(), format!("weir serve cannot honour it: it {why}")));
            }
        }
        if raw.graphs.is_empty() {
            return Err((
                "graphs".into(),
                "names no graph; give at least one `name: path/to/flow.json`".into(),
            ));
        }
        let mut graphs = BTreeMap::new();
        let mut descriptions = BTreeMap::new();
        for (name, given) in raw.graphs {
            // A flow's path, or `{"path": …, "description": …}`.
            let file = match given {
                serde_json::Value::String(file) => file,
                def @ serde_json::Value::Object(_) => {
                    let GraphDef { path, description } =
                        serde_json::from_value(def).map_err(|e| (format!("graphs.{name}"), e.to_string()))?;
                    descriptions.extend(description.map(|d| (name.clone(), d)));
                    path
                }
                other => {
                    let why = format!(
                        "expected the path of a flow file, or `{{\"path\": …, \"description\": …}}`, got {other}"
                    );
                    return Err((format!("graphs.{name}"), why));
                }
            };
            graphs.insert(name.clone(), graph_path(&name, &file, base)?);
        }
        if let Some(index) = raw.store.as_ref().and_then(|s| s.index.as_ref()) {
            if index.dims == 0 {
                return Err(("store.index.dims".into(), "must be at least 1".into()));
            }
            if index.openai_model().is_none() {
                return Err((
                    "store.index.embed".into(),
                    format!(
                        "`{}` is not an embedding model weir serve knows: `openai:<model>` (an \
                         OpenAI-compatible `/v1/embeddings`, at OPENAI_BASE_URL with OPENAI_API_KEY)",
                        index.embed
                    ),
                ));
            }
        }
        let store_ttl = raw.store.as_ref().and_then(|s| s.ttl.as_ref());
        check_minutes(
            "store.ttl",
            store_ttl.and_then(|t| t.default_ttl),
            store_ttl.and_then(|t| t.sweep_interval_minutes),
        )?;
        let (ttl, at) = match (raw.ttl, raw.checkpointer.and_then(|c| c.ttl)) {
            (Some(_), Some(_)) => return Err(("ttl".into(), "is given twice: here and as `checkpointer.ttl`".into())),
            (Some(t), None) => (Some(t), "ttl"),
            (None, t) => (t, "checkpointer.ttl"),
        };
        if let Some(t) = &ttl {
            if let Some(s) = &t.strategy {
                TtlStrategy::parse(s).map_err(|e| (format!("{at}.strategy"), e))?;
            }
            check_minutes(at, t.default_ttl, t.sweep_interval_minutes)?;
        }
        if let Some(endpoint) = raw.otel.as_ref().and_then(|o| o.endpoint.as_deref()) {
            if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
                return Err((
                    "otel.endpoint".into(),
                    format!("`{endpoint}` is not an `http://` or `https://` URL"),
                ));
            }
        }
        let mut postgres = raw.postgres;
        if let Some(pg) = &mut postgres {
            if pg.pool_size == Some(0) {
                return Err(("postgres.pool_size".into(), "must be at least 1".into()));
            }
            for (field, secs) in [
                ("acquire_timeout_secs", pg.acquire_timeout_secs),
                ("connect_timeout_secs", pg.connect_timeout_secs),
                ("statement_timeout_secs", pg.statement_timeout_secs),
            ] {
                if secs.is_some_and(|s| !(s.is_finite() && s > 0.0 && s < 1e9)) {
                    return Err((
                        format!("postgres.{field}"),
                        "must be a positive number of seconds".into(),
                    ));
                }
            }
            if let Some(file) = &mut pg.ca_file {
                *file = base.join(&*file);
            }
        }
        let http = raw.http.unwrap_or_default();
        check_http(&http)?;
        let env = env_vars(raw.env, base)?;
        Ok(Config {
            graphs,
            descriptions,
            store: raw.store,
            ttl,
            otel: raw.otel,
            postgres,
            http,
            env,
        })
    }
}

/// `env`'s variables: an object's string values, or the pairs of the `.env` file it names
/// (relative to `base`; `${VAR}` in it from the process's environment).
fn env_vars(env: Option<serde_json::Value>, base: &Path) -> Result<Vec<(String, String)>, (String, String)> {
    use serde_json::Value;
    match env {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(vars)) => vars
            .into_iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k, s)),
                other => Err((format!("env.{k}"), format!("expected a string, got {other}"))),
            })
            .collect(),
        Some(Value::String(file)) => {
            let path = base.join(&file);
            let text = std::fs::read_to_string(&path)
                .map_err(|e| ("env".to_owned(), format!("cannot read `{}`: {e}", path.display())))?;
            dotenv::parse(&text, |name| std::env::var(name).ok())
                .map_err(|(line, why)| ("env".to_owned(), format!("`{}` line {line}: {why}", path.display())))
        }
        Some(other) => Err((
            "env".into(),
            format!("expected the path of a `.env` file or an object of strings, got {other}"),
        )),
    }
}

/// Refuses a `mount_prefix` that is not a path prefix such as `/api`.
pub fn check_prefix(prefix: &str) -> Result<(), String> {
    let ok = prefix.len() > 1
        && prefix.starts_with('/')
        && !prefix.ends_with('/')
        && !prefix.contains(['{', '}', '*', '?', '#'])
        && !prefix.contains("//");
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{prefix}` is not a path prefix such as `/api` (a leading `/`, no trailing one)"
        ))
    }
}

/// Refuses what `http` asks that weir serve cannot do, or cannot read, naming the field.
fn check_http(http: &HttpConfig) -> Result<(), (String, String)> {
    if http.app.as_ref().is_some_and(|v| !v.is_null()) {
        return Err((
            "http.app".into(),
            "weir serve cannot mount a Python (Starlette/FastAPI) app; remove it, or serve weir's router \
             from a Rust app of your own (`Server::router`)"
                .into(),
        ));
    }
    if http.configurable_headers.as_ref().is_some_and(|v| !v.is_null()) {
        return Err((
            "http.configurable_headers".into(),
            "weir serve does not copy request headers into runs' configuration; remove it".into(),
        ));
    }
    if let Some(prefix) = &http.mount_prefix {
        check_prefix(prefix).map_err(|why| ("http.mount_prefix".to_owned(), why))?;
    }
    let Some(cors) = &http.cors else { return Ok(()) };
    let bad = |field: &str, why: String| Err((format!("http.cors.{field}"), why));
    for origin in cors.allow_origins.iter().filter(|o| *o != "*") {
        if axum::http::HeaderValue::from_str(origin).is_err() || !origin.contains("://") {
            return bad(
                "allow_origins",
                format!("`{origin}` is not an origin such as `https://app.example.com`"),
            );
        }
    }
    if let Some(pattern) = &cors.allow_origin_regex {
        if let Err(e) = regex::Regex::new(pattern) {
            return bad("allow_origin_regex", format!("not a regular expression: {e}"));
        }
    }
    for method in cors.allow_methods.iter().filter(|m| *m != "*") {
        if axum::http::Method::from_bytes(method.as_bytes()).is_err() {
            return bad("allow_methods", format!("`{method}` is not an HTTP method"));
        }
    }
    for (field, names) in [
        ("allow_headers", &cors.allow_headers),
        ("expose_headers", &cors.expose_headers),
    ] {
        for name in names.iter().filter(|h| *h != "*") {
            if axum::http::HeaderName::from_bytes(name.as_bytes()).is_err() {
                return bad(field, format!("`{name}` is not a header name"));
            }
        }
    }
    if cors.allow_credentials && cors.expose_headers.iter().any(|h| h == "*") {
        return bad(
            "expose_headers",
            "`*` cannot go with `allow_credentials` (browsers read it as a header named `*`); name the headers".into(),
        );
    }
    Ok(())
}

/// The flow file of graph `name`: a `.json` path, relative to `base`, that exists.
fn graph_path(name: &str, file: &str, base: &Path) -> Result<PathBuf, (String, String)> {
    let field = format!("graphs.{name}");
    if name.is_empty() || name.contains('/') {
        return Err((field, "a graph id must be non-empty and have no `/`".into()));
    }
    if !file.ends_with(".json") {
        return Err((
            field,
            format!("`{file}` is not a flow file: weir serves flows (`path/to/flow.json`), not Python graphs"),
        ));
    }
    let path = base.join(file);
    if !path.is_file() {
        return Err((field, format!("no file `{}`", path.display())));
    }
    Ok(path)
}

/// Refuses a TTL that is not a positive number of minutes up to
/// [`MAX_TTL_MINUTES`](weir_runtime::store::MAX_TTL_MINUTES), or a zero sweep interval, under `at`.
fn check_minutes(at: &str, ttl: Option<f64>, sweep: Option<u32>) -> Result<(), (String, String)> {
    let most = weir_runtime::store::MAX_TTL_MINUTES;
    if let Some(t) = ttl.filter(|t| !(*t > 0.0 && *t <= most)) {
        return Err((
            format!("{at}.default_ttl"),
            format!("{t:?} is not a positive number of minutes up to {most}"),
        ));
    }
    if sweep == Some(0) {
        return Err((format!("{at}.sweep_interval_minutes"), "must be at least 1".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with_flow() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("chain.json"), "{}").unwrap();
        dir
    }

    fn refused(text: &str) -> (String, String) {
        let dir = dir_with_flow();
        Config::parse(text, dir.path()).unwrap_err()
    }

    #[test]
    fn a_langgraph_json_shaped_file_is_read_with_paths_relative_to_it() {
        let dir = dir_with_flow();
        let text = r#"{"dependencies": ["."], "graphs": {"chain": "chain.json"},
            "store": {"index": {"embed": "openai:text-embedding-3-small", "dims": 1536}, "ttl": {"default_ttl": 60}},
            "checkpointer": {"ttl": {"strategy": "delete", "default_ttl": 43200, "sweep_interval_minutes": 10}}}"#;
        let c = Config::parse(text, dir.path()).unwrap();
        assert_eq!(
            c.graphs,
            BTreeMap::from([("chain".to_owned(), dir.path().join("chain.json"))])
        );
        assert_eq!(c.store.unwrap().index.unwrap().dims, 1536);
        assert_eq!(c.ttl.unwrap().sweep_interval_minutes, Some(10));
    }

    #[test]
    fn a_key_weir_cannot_honour_is_refused_by_name_and_null_ones_pass() {
        for (key, value) in [
            ("auth", r#"{"path": "./auth.py:auth"}"#),
            ("encryption", r#"{"path": "./enc.py:encryption"}"#),
            ("webhooks", r#"{"url": {"require_https": true}}"#),
        ] {
            let (field, message) = refused(&format!(r#"{{"graphs": {{"chain": "chain.json"}}, "{key}": {value}}}"#));
            assert_eq!(field, key);
            assert!(message.starts_with("weir serve cannot honour it: it "), "{message}");
        }
        let (_, message) = refused(r#"{"graphs": {"chain": "chain.json"}, "auth": {"path": "a.py:auth"}}"#);
        assert!(
            message.contains("remove it to serve without authentication"),
            "{message}"
        );
        let dir = dir_with_flow();
        let text =
            r#"{"graphs": {"chain": "chain.json"}, "auth": null, "dependencies": ["."], "python_version": "3.12"}"#;
        assert!(Config::parse(text, dir.path()).is_ok());
    }

    #[test]
    fn the_http_section_is_read_and_what_weir_cannot_do_or_read_is_refused_by_name() {
        let dir = dir_with_flow();
        let text = r#"{"graphs": {"chain": "chain.json"}, "http": {"disable_mcp": true, "mount_prefix": "/api",
            "cors": {"allow_origins": ["https://app.example.com"], "allow_headers": ["*"], "max_age": 60},
            "logging_headers": {"excludes": ["authorization"]}, "middleware_order": "auth_first"}}"#;
        let http = Config::parse(text, dir.path()).unwrap().http;
        assert!(http.disable_mcp && !http.disable_runs);
        assert_eq!(http.mount_prefix.as_deref(), Some("/api"));
        let cors = http.cors.unwrap();
        assert_eq!(
            (cors.allow_methods, cors.allow_headers, cors.max_age),
            (vec!["GET".to_owned()], vec!["*".to_owned()], 60)
        );
        let cases = [
            (r#"{"app": "./app.py:app"}"#, "http.app", "cannot mount a Python"),
            (
                r#"{"configurable_headers": {"includes": ["x-*"]}}"#,
                "http.configurable_headers",
                "does not copy",
            ),
            (
                r#"{"mount_prefix": "api/"}"#,
                "http.mount_prefix",
                "`api/` is not a path prefix",
            ),
            (
                r#"{"cors": {"allow_origins": ["app.example.com"]}}"#,
                "http.cors.allow_origins",
                "is not an origin",
            ),
            (
                r#"{"cors": {"allow_origin_regex": "(["}}"#,
                "http.cors.allow_origin_regex",
                "not a regular expression",
            ),
            (
                r#"{"cors": {"allow_methods": ["GE T"]}}"#,
                "http.cors.allow_methods",
                "not an HTTP method",
            ),
            (
                r#"{"cors": {"expose_headers": ["*"], "allow_credentials": true}}"#,
                "http.cors.expose_headers",
                "cannot go with",
            ),
            (
                r#"{"cors": {"allow_origin": ["*"]}}"#,
                "http.cors.allow_origin",
                "unknown field `allow_origin`",
            ),
            (r#"{"disable_runs": "yes"}"#, "http.disable_runs", "invalid type"),
        ];
        for (http, field, words) in cases {
            let (f, message) = refused(&format!(r#"{{"graphs": {{"chain": "chain.json"}}, "http": {http}}}"#));
            assert_eq!(f, field, "{http}: {message}");
            assert!(message.contains(words), "{http}: {message}");
        }
    }

    #[test]
    fn a_graph_may_be_given_as_a_definition_with_a_description() {
        let dir = dir_with_flow();
        let text = r#"{"graphs": {"chain": {"path": "chain.json", "description": "Writes a chain."}}}"#;
        let c = Config::parse(text, dir.path()).unwrap();
        assert_eq!(c.graphs["chain"], dir.path().join("chain.json"));
        assert_eq!(c.descriptions["chain"], "Writes a chain.");
        let (field, message) = refused(r#"{"graphs": {"chain": {"file": "chain.json"}}}"#);
        assert_eq!(field, "graphs.chain");
        assert!(message.starts_with("unknown field `file`"), "{message}");
    }

    #[test]
    fn env_is_an_object_of_strings_or_a_dotenv_file_relative_to_the_config() {
        let dir = dir_with_flow();
        std::fs::write(
            dir.path().join(".env"),
            "OPENAI_API_KEY=sk-1\nexport BASE=\"http://x/v1\"\n",
        )
        .unwrap();
        let file = Config::parse(r#"{"graphs": {"chain": "chain.json"}, "env": ".env"}"#, dir.path()).unwrap();
        let pairs = |c: Config| c.env.into_iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>();
        assert_eq!(pairs(file), ["OPENAI_API_KEY=sk-1", "BASE=http://x/v1"]);
        let object = Config::parse(r#"{"graphs": {"chain": "chain.json"}, "env": {"A": "1"}}"#, dir.path()).unwrap();
        assert_eq!(pairs(object), ["A=1"]);
        std::fs::write(dir.path().join("bad.env"), "A=1\nwords\n").unwrap();
        let cases = [
            (r#"{"A": 1}"#, "env.A", "expected a string, got 1".to_owned()),
            (r#""missing.env""#, "env", "cannot read `".to_owned()),
            (
                r#""bad.env""#,
                "env",
                format!(
                    "`{}` line 2: expected `KEY=VALUE`",
                    dir.path().join("bad.env").display()
                ),
            ),
            (
                "[1]",
                "env",
                "expected the path of a `.env` file or an object of strings".to_owned(),
            ),
        ];
        for (env, field, words) in cases {
            let text = format!(r#"{{"graphs": {{"chain": "chain.json"}}, "env": {env}}}"#);
            let (f, message) = Config::parse(&text, dir.path()).unwrap_err();
            assert_eq!(f, field, "{env}: {message}");
            assert!(message.contains(&words), "{env}: {message}");
        }
    }

    #[test]
    fn the_postgres_section_sets_the_pools_with_the_ca_file_relative_to_the_config() {
        let dir = dir_with_flow();
        let text = r#"{"graphs": {"chain": "chain.json"}, "postgres": {"pool_size": 3,
            "acquire_timeout_secs": 2.5, "statement_timeout_secs": 30, "application_name": "api",
            "ca_file": "ca.pem"}}"#;
        let pg = Config::parse(text, dir.path()).unwrap().postgres.unwrap();
        assert_eq!(pg.ca_file, Some(dir.path().join("ca.pem")));
        assert_eq!((pg.pool_size, pg.acquire_timeout_secs), (Some(3), Some(2.5)));
        let options = pg.to_pool_options("weir");
        assert_eq!((options.pool_size(), options.schema_name()), (3, Some("weir")));
        let graphs = r#""graphs": {"chain": "chain.json"}"#;
        let (field, _) = refused(&format!(r#"{{{graphs}, "postgres": {{"pool_size": 0}}}}"#));
        assert_eq!(field, "postgres.pool_size");
        let (field, _) = refused(&format!(r#"{{{graphs}, "postgres": {{"connect_timeout_secs": -1}}}}"#));
        assert_eq!(field, "postgres.connect_timeout_secs");
        let (field, message) = refused(&format!(r#"{{{graphs}, "postgres": {{"pool": 3}}}}"#));
        assert!(field.starts_with("postgres"), "{field}");
        assert!(message.starts_with("unknown field `pool`"), "{message}");
    }

    #[test]
    fn each_error_names_its_field() {
        assert_eq!(refused(r#"{"graphs": {}}"#).0, "graphs");
        let (field, message) = refused(r#"{"graphs": {"chain": "./graph.py:chain"}}"#);
        assert_eq!(field, "graphs.chain");
        assert!(message.contains("not a flow file"), "{message}");
        let (field, message) = refused(r#"{"graphs": {"other": "other.json"}}"#);
        assert_eq!(field, "graphs.other");
        assert!(message.starts_with("no file"), "{message}");
        let (field, message) = refused(r#"{"graphs": {"chain": 3}}"#);
        assert_eq!(field, "graphs.chain");
        assert!(message.starts_with("expected the path of a flow file"), "{message}");
        let graphs = r#""graphs": {"chain": "chain.json"}"#;
        assert_eq!(
            refused(&format!(
                r#"{{{graphs}, "store": {{"index": {{"embed": "x", "dims": 0}}}}}}"#
            ))
            .0,
            "store.index.dims"
        );
        assert_eq!(
            refused(&format!(r#"{{{graphs}, "store": {{"indx": {{}}}}}}"#)).0,
            "store.indx"
        );
        assert_eq!(
            refused(&format!(r#"{{{graphs}, "ttl": {{"strategy": "keep"}}}}"#)).0,
            "ttl.strategy"
        );
        assert_eq!(
            refused(&format!(r#"{{{graphs}, "ttl": {{"default_ttl": -1}}}}"#)).0,
            "ttl.default_ttl"
        );
        assert_eq!(
            refused(&format!(r#"{{{graphs}, "store": {{"ttl": {{"default_ttl": 1e12}}}}}}"#)),
            (
                "store.ttl.default_ttl".to_owned(),
                "1000000000000.0 is not a positive number of minutes up to 2147483647".to_owned()
            )
        );
        let twice = format!(r#"{{{graphs}, "ttl": {{}}, "checkpointer": {{"ttl": {{}}}}}}"#);
        assert_eq!(refused(&twice).0, "ttl");
        assert_eq!(
            refused("{"),
            (
                String::new(),
                "not JSON: EOF while parsing an object at line 1 column 1".into()
            )
        );
        assert_eq!(
            refused(r#"{"graphs": {"chain": "chain.json""#),
            (
                String::new(),
                "not JSON: EOF while parsing an object at line 1 column 33".into()
            )
        );
    }

    #[test]
    fn the_store_and_thread_ttl_settings_become_what_the_server_takes() {
        let dir = dir_with_flow();
        let text = r#"{"graphs": {"chain": "chain.json"},
            "store": {"index": {"embed": "openai:text-embedding-3-small", "dims": 8, "fields": ["text"]},
                      "ttl": {"default_ttl": 60, "refresh_on_read": false, "sweep_interval_minutes": 2}},
            "checkpointer": {"ttl": {"strategy": "keep_latest", "default_ttl": 1440}}}"#;
        let c = Config::parse(text, dir.path()).unwrap();
        let store = c.store.unwrap().to_runtime().unwrap();
        let ttl = store.ttl.unwrap();
        assert_eq!(
            (ttl.refresh_on_read, ttl.default_ttl, ttl.sweep_interval_minutes),
            (false, Some(60.0), Some(2.0))
        );
        let index = store.index.unwrap();
        assert_eq!((index.dims, index.fields), (8, vec!["text".to_owned()]));
        let threads = c.ttl.unwrap();
        assert_eq!(
            threads.default_thread_ttl(),
            Some(ThreadTtl {
                strategy: TtlStrategy::KeepLatest,
                minutes: 1440.0
            })
        );
        assert_eq!(threads.sweep_every(), std::time::Duration::from_secs(300));
        let (field, message) = refused(
            r#"{"graphs": {"chain": "chain.json"}, "store": {"index": {"embed": "cohere:embed-v3", "dims": 8}}}"#,
        );
        assert_eq!(field, "store.index.embed");
        assert!(message.contains("`openai:<model>`"), "{message}");
    }
}
