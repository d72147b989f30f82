//! `GET /metrics` (LangGraph's tier C): what a deployment's monitoring scrapes. In Prometheus's
//! text format by default, with the names LangGraph's server uses (`lg_api_workers_*`,
//! `lg_api_num_pending_runs`, `lg_api_http_requests_total`, the `lg_api_http_requests_latency`
//! histogram in milliseconds, with its buckets) and the process's own (`process_*`); as
//! LangGraph's JSON snapshot (`queue`, `api.http_requests_total`, `workers`) with
//! `?format=json`. The queue is the deployment's (every process reads the same tables); the
//! workers and the HTTP requests are this process's. Requests are counted by route template
//! (`/threads/{thread_id}/runs/wait`), never by URL, so ids do not grow the series; a URL no
//! route matches is not counted.

use super::{ApiError, AppState};
use crate::db::QueueStats;
use axum::extract::{MatchedPath, Query, Request, State};
use axum::http::{header, Method};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The latency histogram's upper bounds, in milliseconds (LangGraph's).
const BUCKETS_MS: [f64; 14] = [
    10.0,
    100.0,
    500.0,
    1_000.0,
    5_000.0,
    15_000.0,
    30_000.0,
    60_000.0,
    120_000.0,
    300_000.0,
    600_000.0,
    1_800_000.0,
    3_600_000.0,
    f64::INFINITY,
];

/// The HTTP requests this process answered: counts by route and status, latencies by route.
#[derive(Debug, Default)]
pub(super) struct HttpMetrics {
    /// Route template → method → its figures (looked up without allocating once a route was
    /// seen: this runs on every request).
    inner: Mutex<HashMap<String, HashMap<Method, Series>>>,
}

/// The figures of one method on one route.
#[derive(Debug, Default, Clone)]
struct Series {
    /// Status → count.
    statuses: BTreeMap<u16, u64>,
    /// Count per bucket of [`BUCKETS_MS`] (not cumulative).
    buckets: [u64; BUCKETS_MS.len()],
    count: u64,
    sum_ms: f64,
}

/// What was recorded, by (method, route template), sorted.
type Snapshot = BTreeMap<(String, String), Series>;

impl HttpMetrics {
    fn record(&self, method: &Method, route: &str, status: u16, ms: f64) {
        let mut routes = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if !routes.contains_key(route) {
            routes.insert(route.to_owned(), HashMap::new());
        }
        let series = routes
            .get_mut(route)
            .expect("inserted above")
            .entry(method.clone())
            .or_default();
        *series.statuses.entry(status).or_default() += 1;
        let bucket = BUCKETS_MS.iter().position(|b| ms <= *b).unwrap_or(BUCKETS_MS.len() - 1);
        series.buckets[bucket] += 1;
        series.count += 1;
        series.sum_ms += ms;
    }

    fn snapshot(&self) -> Snapshot {
        let routes = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        routes
            .iter()
            .flat_map(|(route, methods)| {
                methods
                    .iter()
                    .map(move |(method, series)| ((method.as_str().to_owned(), route.clone()), series.clone()))
            })
            .collect()
    }
}

/// Counts each request a route matched, with how long its answer took to start: the layer
/// that wraps every route (where the route's template is known).
#[derive(Debug, Clone)]
pub(super) struct Record(pub(super) Arc<HttpMetrics>);

impl<S> tower_layer::Layer<S> for Record {
    type Service = Counted<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Counted {
            inner,
            metrics: self.0.clone(),
        }
    }
}

/// A route's service under [`Record`]. It calls its route in place (no clone of the route's
/// service per request, as a `from_fn` middleware would make: a few percent of a run's time).
#[derive(Debug, Clone)]
pub(super) struct Counted<S> {
    inner: S,
    metrics: Arc<HttpMetrics>,
}

impl<S> tower_service::Service<Request> for Counted<S>
where
    S: tower_service::Service<Request, Response = Response>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = S::Error;
    type Future = futures::future::BoxFuture<'static, Result<Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let route = request.extensions().get::<MatchedPath>().cloned();
        let method = request.method().clone();
        let metrics = self.metrics.clone();
        let started = Instant::now();
        let answer = self.inner.call(request);
        Box::pin(async move {
            let response = answer.await?;
            if let Some(route) = route {
                let ms = started.elapsed().as_secs_f64() * 1e3;
                metrics.record(&method, route.as_str(), response.status().as_u16(), ms);
            }
            Ok(response)
        })
    }
}

/// The query of `GET /metrics`: `format=json` for LangGraph's JSON snapshot.
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct Format {
    format: Option<String>,
}

/// What `GET /metrics` reads: the tables and workers, and what [`Record`] counted.
#[derive(Debug, Clone)]
struct Sources {
    app: AppState,
    http: Arc<HttpMetrics>,
}

/// `GET /metrics`, showing what [`Record`] counts in `http`.
pub(super) fn router<S>(app: AppState, http: Arc<HttpMetrics>) -> axum::Router<S> {
    axum::Router::new()
        .route("/metrics", axum::routing::get(serve))
        .with_state(Sources { app, http })
}

/// `GET /metrics[?format=prometheus|json]`.
async fn serve(
    State(Sources { app: state, http }): State<Sources>,
    Query(format): Query<Format>,
) -> Result<Response, ApiError> {
    let queue = state.queue.queue_stats(&crate::model::now()).await?;
    let workers = state.runs.worker_stats();
    let recorded = http.snapshot();
    Ok(match format.format.as_deref() {
        Some("json") => axum::Json(as_json(&queue, workers, &recorded)).into_response(),
        // LangGraph's server answers an unknown format in Prometheus's, as here.
        _ => (
            [(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
            as_prometheus(&queue, workers, &recorded),
        )
            .into_response(),
    })
}

fn as_json(queue: &QueueStats, workers: Option<(usize, usize)>, recorded: &Snapshot) -> Value {
    let requests: Vec<Value> = recorded
        .iter()
        .flat_map(|((method, path), series)| {
            series
                .statuses
                .iter()
                .map(move |(status, count)| json!({"method": method, "path": path, "status": status, "count": count}))
        })
        .collect();
    let mut out = json!({
        "queue": {
            "n_pending": queue.pending,
            "pending_runs_wait_time_max_secs": queue.pending_wait_max_secs,
            "pending_runs_wait_time_med_secs": queue.pending_wait_median_secs,
            "pending_unblocked_runs_wait_time_max_secs": queue.unblocked_wait_max_secs,
            "n_running": queue.running,
        },
        "api": {"http_requests_total": requests},
    });
    if let Some((max, active)) = workers {
        out["workers"] = json!({"max": max, "active": active, "available": max - active});
    }
    out
}

/// One `# HELP`/`# TYPE` header and its samples.
fn family(out: &mut String, name: &str, kind: &str, help: &str, samples: &[(String, f64)]) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
    for (labels, value) in samples {
        let _ = writeln!(out, "{name}{labels} {}", number(*value));
    }
}

/// A sample's value as Prometheus writes it (`+Inf`, integers without a fraction).
fn number(v: f64) -> String {
    if v.is_infinite() {
        "+Inf".to_owned()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.1}")
    } else {
        v.to_string()
    }
}

/// A label value escaped as Prometheus's text format wants it.
fn label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn as_prometheus(queue: &QueueStats, workers: Option<(usize, usize)>, recorded: &Snapshot) -> String {
    let mut out = String::new();
    let one = |v: f64| vec![(String::new(), v)];
    if let Some((max, active)) = workers {
        family(
            &mut out,
            "lg_api_workers_max",
            "gauge",
            "Runs this process runs at once.",
            &one(max as f64),
        );
        family(
            &mut out,
            "lg_api_workers_active",
            "gauge",
            "Runs this process is running.",
            &one(active as f64),
        );
        let available = (max - active) as f64;
        family(
            &mut out,
            "lg_api_workers_available",
            "gauge",
            "Runs this process could start now.",
            &one(available),
        );
    }
    family(
        &mut out,
        "lg_api_num_pending_runs",
        "gauge",
        "Runs waiting in the queue.",
        &one(queue.pending as f64),
    );
    family(
        &mut out,
        "lg_api_num_running_runs",
        "gauge",
        "Runs running.",
        &one(queue.running as f64),
    );
    let waits = [
        (
            "lg_api_pending_runs_wait_time_max_seconds",
            "The longest a pending run has waited.",
            queue.pending_wait_max_secs,
        ),
        (
            "lg_api_pending_runs_wait_time_med_seconds",
            "How long the median pending run has waited.",
            queue.pending_wait_median_secs,
        ),
        (
            "lg_api_pending_unblocked_runs_wait_time_max_seconds",
            "The longest a pending run whose thread runs nothing has waited.",
            queue.unblocked_wait_max_secs,
        ),
    ];
    for (name, help, secs) in waits {
        family(&mut out, name, "gauge", help, &one(secs.unwrap_or(0.0)));
    }
    let counts: Vec<(String, f64)> = recorded
        .iter()
        .flat_map(|((method, path), series)| {
            series.statuses.iter().map(move |(status, count)| {
                (
                    format!(
                        "{{method=\"{}\",path=\"{}\",status=\"{status}\"}}",
                        label(method),
                        label(path)
                    ),
                    *count as f64,
                )
            })
        })
        .collect();
    family(
        &mut out,
        "lg_api_http_requests_total",
        "counter",
        "HTTP requests answered.",
        &counts,
    );
    let mut latency = Vec::new();
    for ((method, path), h) in recorded {
        let labels = format!("method=\"{}\",path=\"{}\"", label(method), label(path));
        let mut cumulative = 0;
        for (bound, n) in BUCKETS_MS.iter().zip(h.buckets) {
            cumulative += n;
            latency.push((
                format!("_bucket{{{labels},le=\"{}\"}}", number(*bound)),
                cumulative as f64,
            ));
        }
        latency.push((format!("_count{{{labels}}}"), h.count as f64));
        latency.push((format!("_sum{{{labels}}}"), h.sum_ms));
    }
    family(
        &mut out,
        "lg_api_http_requests_latency",
        "histogram",
        "HTTP request latency in milliseconds.",
        &latency,
    );
    process(&mut out);
    out
}

/// The process's own figures, from `/proc/self` (Linux; elsewhere none): its CPU time (which the
/// kernel counts in ticks of 1/100 s), resident memory and open files.
fn process(out: &mut String) {
    if let Some(ticks) = std::fs::read_to_string("/proc/self/stat").ok().and_then(|stat| {
        // utime and stime are the 14th and 15th fields, the 12th and 13th after the command's
        // closing parenthesis (a command may hold spaces).
        let rest = stat.rsplit_once(')')?.1.to_owned();
        let fields: Vec<f64> = rest
            .split_whitespace()
            .skip(11)
            .take(2)
            .filter_map(|f| f.parse().ok())
            .collect();
        (fields.len() == 2).then(|| fields[0] + fields[1])
    }) {
        let cpu = [(String::new(), ticks / 100.0)];
        family(
            out,
            "process_cpu_seconds_total",
            "counter",
            "CPU time the process used, in seconds.",
            &cpu,
        );
    }
    if let Some(kib) = std::fs::read_to_string("/proc/self/status").ok().and_then(|status| {
        let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
        line.split_whitespace().nth(1)?.parse::<f64>().ok()
    }) {
        let rss = [(String::new(), kib * 1024.0)];
        family(
            out,
            "process_resident_memory_bytes",
            "gauge",
            "Resident memory, in bytes.",
            &rss,
        );
    }
    if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
        let open = [(String::new(), fds.count() as f64)];
        family(out, "process_open_fds", "gauge", "Open file descriptors.", &open);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prometheus_text_has_cumulative_buckets_escaped_labels_and_the_queue() {
        let http = HttpMetrics::default();
        http.record(&Method::POST, "/threads/{thread_id}/runs/wait", 200, 4.0);
        http.record(&Method::POST, "/threads/{thread_id}/runs/wait", 200, 250.0);
        http.record(&Method::POST, "/threads/{thread_id}/runs/wait", 404, 2.0);
        http.record(&Method::GET, "/a\"b", 200, 1e9);
        let queue = QueueStats {
            pending: 3,
            running: 1,
            pending_wait_max_secs: Some(50.0),
            pending_wait_median_secs: Some(40.5),
            unblocked_wait_max_secs: None,
        };
        let text = as_prometheus(&queue, Some((10, 4)), &http.snapshot());
        let wait = r#"method="POST",path="/threads/{thread_id}/runs/wait""#;
        for line in [
            "lg_api_workers_max 10.0".to_owned(),
            "lg_api_workers_available 6.0".to_owned(),
            "lg_api_num_pending_runs 3.0".to_owned(),
            "lg_api_pending_runs_wait_time_med_seconds 40.5".to_owned(),
            "lg_api_pending_unblocked_runs_wait_time_max_seconds 0.0".to_owned(),
            format!(r#"lg_api_http_requests_total{{{wait},status="200"}} 2.0"#),
            format!(r#"lg_api_http_requests_total{{{wait},status="404"}} 1.0"#),
            format!(r#"lg_api_http_requests_latency_bucket{{{wait},le="10.0"}} 2.0"#),
            format!(r#"lg_api_http_requests_latency_bucket{{{wait},le="500.0"}} 3.0"#),
            format!(r#"lg_api_http_requests_latency_bucket{{{wait},le="+Inf"}} 3.0"#),
            format!(r#"lg_api_http_requests_latency_count{{{wait}}} 3.0"#),
            format!(r#"lg_api_http_requests_latency_sum{{{wait}}} 256.0"#),
            r#"lg_api_http_requests_latency_bucket{method="GET",path="/a\"b",le="3600000.0"} 0.0"#.to_owned(),
            r#"lg_api_http_requests_latency_bucket{method="GET",path="/a\"b",le="+Inf"} 1.0"#.to_owned(),
        ] {
            assert!(text.lines().any(|l| l == line), "no line `{line}` in:\n{text}");
        }
        assert!(text.contains("# TYPE lg_api_http_requests_latency histogram\n"));
        // An API-only process has no workers to show.
        assert!(!as_prometheus(&queue, None, &http.snapshot()).contains("lg_api_workers"));
        let json = as_json(&queue, None, &http.snapshot());
        assert!(json.get("workers").is_none());
        assert_eq!(json["queue"]["n_pending"], 3);
        assert_eq!(json["api"]["http_requests_total"].as_array().unwrap().len(), 3);
    }
}
