//! The config file's `http` section, as `langgraph.json` has it: route groups turned off, CORS
//! rules and a prefix, read and checked (each bad value named); the API applies them
//! ([`crate::api::ApiOptions`]).

use serde::Deserialize;

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

impl HttpConfig {
    /// Whether the studio is served: it reads threads and makes runs, so it goes with either,
    /// and with `disable_ui`.
    pub fn serves_studio(&self) -> bool {
        !(self.disable_ui || self.disable_threads || self.disable_runs)
    }

    /// Refuses what `http` asks that weir serve cannot do, or cannot read, naming the field.
    pub(super) fn check(&self) -> Result<(), (String, String)> {
        if self.app.as_ref().is_some_and(|v| !v.is_null()) {
            return Err((
                "http.app".into(),
                "weir serve cannot mount a Python (Starlette/FastAPI) app; remove it, or serve weir's router \
                 from a Rust app of your own (`Server::router`)"
                    .into(),
            ));
        }
        if self.configurable_headers.as_ref().is_some_and(|v| !v.is_null()) {
            return Err((
                "http.configurable_headers".into(),
                "weir serve does not copy request headers into runs' configuration; remove it".into(),
            ));
        }
        if let Some(prefix) = &self.mount_prefix {
            check_prefix(prefix).map_err(|why| ("http.mount_prefix".to_owned(), why))?;
        }
        let Some(cors) = &self.cors else { return Ok(()) };
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
                "`*` cannot go with `allow_credentials` (browsers read it as a header named `*`); name the headers"
                    .into(),
            );
        }
        Ok(())
    }
}
