//! The server's config file, `weir.json`, in `langgraph.json`'s shape: `{"graphs": {name: path},
//! "store": {…}, "ttl": {…}, "http": {…}, "otel": {…}}`, and weir's own `"postgres": {…}` (a
//! scaled-out server's pools). [`Config::load`] parses and checks it, each error naming the field
//! at fault (`graphs.chain`, `store.index.dims`); paths are taken relative to the file. `env`
//! (an object of strings, or a `.env` file) is read for the server to set, as
//! `langgraph dev` does. Keys `langgraph.json` has for building a Python deployment
//! (`dependencies`, `python_version`, …) are accepted and ignored, so one file can serve both; keys that change how
//! the server behaves and that weir cannot honour ([`UNHONOURED`]: Python auth or encryption
//! handlers, a custom app, …) are refused by name rather than served without. [`StoreConfig::to_runtime`] and
//! [`TtlConfig`]'s methods turn the store and thread TTL settings into what the server takes.

mod dotenv;
mod http;

pub use http::{check_prefix, CorsConfig, HttpConfig};

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
        http.check()?;
        let env = dotenv::env_vars(raw.env, base)?;
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
mod tests;
