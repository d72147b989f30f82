//! A native load generator for any LangGraph-API server (weir or `langgraph dev`), printing the
//! figures `shared/langgraph/server/anchor/probe.py` prints, without the Python client's cost:
//! sequential `runs.wait` latency (p50, p99) and rate, the throughput with `--clients` runs in
//! flight (each client on its own connection, starting its next run as its last one answers;
//! `--concurrent-runs` of them, `--runs` by default), and the time to the first streamed
//! `updates` event of a stateless run. `bench/server.sh` runs it.
//! The last line, `result key=value …`, is the figures for `bench/server_report.py`. With
//! `--idle-threads N` it only makes N threads (50 requests at a time) and reports how long that took,
//! for the memory figure; with `--idle-connections N` it only opens N connections, each asking
//! `GET /ok` once, and holds them all open for a second (the memory of keep-alive clients); with
//! `--pings N` it only sends N `GET /ok` by `--clients` clients at once: the rate of the server's
//! HTTP stack alone on this machine, a ceiling for any figure of runs.
//!
//! ```text
//! cargo run --release -p weir-server --example load -- http://127.0.0.1:2024 [--runs 100] \
//!     [--concurrent-runs 2000] [--clients 100] [--graph chain]
//! cargo run --release -p weir-server --example load -- http://127.0.0.1:2024 --idle-threads 10000
//! cargo run --release -p weir-server --example load -- http://127.0.0.1:2024 --idle-connections 5000
//! cargo run --release -p weir-server --example load -- http://127.0.0.1:2024 --pings 20000
//! ```

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// One HTTP/1.1 connection to the server.
struct Conn {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    host: String,
}

impl Conn {
    async fn open(host: &str) -> Result<Self, BoxError> {
        let stream = tokio::net::TcpStream::connect(host).await?;
        stream.set_nodelay(true)?;
        let (sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
        tokio::spawn(conn);
        Ok(Self {
            sender,
            host: host.to_owned(),
        })
    }

    /// Sends `body` to `path` and returns the response, failing on a status other than 2xx.
    async fn post(&mut self, path: &str, body: &Value) -> Result<hyper::Response<hyper::body::Incoming>, BoxError> {
        self.sender.ready().await?;
        let req = hyper::Request::post(path)
            .header("host", &self.host)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body.to_string())))?;
        let res = self.sender.send_request(req).await?;
        if !res.status().is_success() {
            return Err(format!("POST {path}: status {}", res.status()).into());
        }
        Ok(res)
    }

    /// `GET path`, its whole answer read, failing on a status other than 2xx.
    async fn get(&mut self, path: &str) -> Result<(), BoxError> {
        self.sender.ready().await?;
        let req = hyper::Request::get(path)
            .header("host", &self.host)
            .body(Full::new(Bytes::new()))?;
        let res = self.sender.send_request(req).await?;
        if !res.status().is_success() {
            return Err(format!("GET {path}: status {}", res.status()).into());
        }
        res.into_body().collect().await?;
        Ok(())
    }

    /// POSTs and reads the whole JSON answer.
    async fn json(&mut self, path: &str, body: &Value) -> Result<Value, BoxError> {
        let bytes = self.post(path, body).await?.into_body().collect().await?.to_bytes();
        Ok(serde_json::from_slice(&bytes)?)
    }

    /// One run on a new thread, as probe.py does it: `threads.create`, then `runs.wait`.
    async fn run_on_new_thread(&mut self, graph: &str, topic: &str) -> Result<(), BoxError> {
        let thread = self.json("/threads", &json!({})).await?;
        let tid = thread["thread_id"]
            .as_str()
            .ok_or("`POST /threads` answered no `thread_id`")?;
        let out = self
            .json(
                &format!("/threads/{tid}/runs/wait"),
                &json!({"assistant_id": graph, "input": {"topic": topic}}),
            )
            .await?;
        if out.get("__error__").is_some() {
            return Err(format!("the run failed: {out}").into());
        }
        Ok(())
    }

    /// The time from sending a stateless `runs.stream` to its first `updates` event.
    async fn first_update(&mut self, graph: &str) -> Result<Duration, BoxError> {
        let start = Instant::now();
        let body = json!({"assistant_id": graph, "input": {"topic": "q"}, "stream_mode": "updates"});
        let mut body = self.post("/runs/stream", &body).await?.into_body();
        let mut seen = Vec::new();
        let mut first = None;
        while let Some(frame) = body.frame().await {
            if let Some(data) = frame?.data_ref() {
                seen.extend_from_slice(data);
                if first.is_none() && seen.windows(14).any(|w| w == b"event: updates") {
                    first = Some(start.elapsed());
                }
            }
        }
        first.ok_or_else(|| "the stream had no `updates` event".into())
    }
}

/// The `q`-quantile of sorted durations, in milliseconds.
fn quantile_ms(sorted: &[Duration], q: f64) -> f64 {
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64() * 1e3
}

/// The figures of one measurement, printed last as `result key=value …`.
#[derive(Default)]
struct Figures(Vec<(&'static str, f64)>);

impl Figures {
    fn print(&self) {
        let pairs: Vec<String> = self.0.iter().map(|(k, v)| format!("{k}={v:.3}")).collect();
        println!("result {}", pairs.join(" "));
    }
}

async fn sequential(host: &str, graph: &str, n: usize, figures: &mut Figures) -> Result<(), BoxError> {
    let mut conn = Conn::open(host).await?;
    let mut lat = Vec::with_capacity(n);
    let t0 = Instant::now();
    for i in 0..n {
        let s = Instant::now();
        conn.run_on_new_thread(graph, &i.to_string()).await?;
        lat.push(s.elapsed());
    }
    let dt = t0.elapsed().as_secs_f64();
    lat.sort();
    let (p50, p99) = (quantile_ms(&lat, 0.5), quantile_ms(&lat, 0.99));
    println!(
        "sequential: {n} runs in {dt:.2}s = {:.1} runs/s; p50 {p50:.2} ms p99 {p99:.2} ms",
        n as f64 / dt
    );
    figures
        .0
        .extend([("seq_rps", n as f64 / dt), ("seq_p50_ms", p50), ("seq_p99_ms", p99)]);
    Ok(())
}

/// What a client of [`concurrent`] asks, again and again.
#[derive(Clone, Copy, PartialEq)]
enum Ask {
    /// A run on a new thread (`threads.create`, then `runs.wait`).
    Run,
    /// `GET /ok`: the server's HTTP stack alone, the ceiling of any request on this machine.
    Ping,
}

/// `n` asks by `clients` clients at once, each on a connection of its own, taking the next as
/// soon as its last one answered: the throughput with `clients` requests in flight.
async fn concurrent(
    host: &str,
    graph: &str,
    ask: Ask,
    n: usize,
    clients: usize,
    figures: &mut Figures,
) -> Result<(), BoxError> {
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let t0 = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..clients.min(n) {
        let (host, graph, next) = (host.to_owned(), graph.to_owned(), next.clone());
        tasks.spawn(async move {
            let mut conn = Conn::open(&host).await?;
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= n {
                    return Ok::<_, BoxError>(());
                }
                match ask {
                    Ask::Run => conn.run_on_new_thread(&graph, &i.to_string()).await?,
                    Ask::Ping => conn.get("/ok").await?,
                }
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    let dt = t0.elapsed().as_secs_f64();
    let (what, key) = match ask {
        Ask::Run => ("runs", "conc_rps"),
        Ask::Ping => ("pings", "ping_rps"),
    };
    println!(
        "concurrent: {n} {what}, {clients} at a time, in {dt:.2}s = {:.1} {what}/s",
        n as f64 / dt
    );
    figures.0.push((key, n as f64 / dt));
    Ok(())
}

async fn first_events(host: &str, graph: &str, n: usize, figures: &mut Figures) -> Result<(), BoxError> {
    let mut conn = Conn::open(host).await?;
    let mut lat = Vec::with_capacity(n);
    for _ in 0..n {
        lat.push(conn.first_update(graph).await?);
    }
    lat.sort();
    let p50 = quantile_ms(&lat, 0.5);
    println!("stream first update p50 {p50:.2} ms");
    figures.0.push(("first_p50_ms", p50));
    Ok(())
}

/// Makes `n` threads, 50 requests at a time, and leaves them idle.
async fn idle_threads(host: &str, n: usize) -> Result<(), BoxError> {
    let t0 = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    let per = n.div_ceil(50);
    for start in (0..n).step_by(per.max(1)) {
        let (host, count) = (host.to_owned(), per.min(n - start));
        tasks.spawn(async move {
            let mut conn = Conn::open(&host).await?;
            for _ in 0..count {
                conn.json("/threads", &json!({})).await?;
            }
            Ok::<_, BoxError>(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    let dt = t0.elapsed().as_secs_f64();
    println!("idle threads: {n} made in {dt:.2}s");
    Figures(vec![("idle_threads", n as f64), ("idle_threads_s", dt)]).print();
    Ok(())
}

/// Opens `n` connections, 200 at a time, each answered once (`GET /ok`), and holds them all
/// open for a second.
async fn idle_connections(host: &str, n: usize) -> Result<(), BoxError> {
    let t0 = Instant::now();
    let mut held = Vec::with_capacity(n);
    for start in (0..n).step_by(200) {
        let mut opening = tokio::task::JoinSet::new();
        for _ in start..(start + 200).min(n) {
            let host = host.to_owned();
            opening.spawn(async move {
                let mut conn = Conn::open(&host).await?;
                conn.get("/ok").await?;
                Ok::<_, BoxError>(conn)
            });
        }
        while let Some(conn) = opening.join_next().await {
            held.push(conn??);
        }
    }
    let dt = t0.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_secs(1)).await;
    println!("idle connections: {} opened in {dt:.2}s, held for 1s", held.len());
    Figures(vec![("idle_connections", held.len() as f64)]).print();
    Ok(())
}

const USAGE: &str = "usage: load URL [--runs 100] [--concurrent-runs RUNS] [--clients 100] [--graph chain] \
     [--idle-threads N | --idle-connections N | --pings N]";

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let mut args = std::env::args().skip(1);
    let url = args.next().ok_or(USAGE)?;
    let host = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("`{url}`: only http:// URLs; {USAGE}"))?
        .trim_end_matches('/')
        .to_owned();
    let (mut runs, mut graph, mut idle, mut open) = (100usize, "chain".to_owned(), None, None);
    let (mut concurrent_runs, mut clients, mut pings) = (None, 100usize, None);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("`{flag}` needs a value; {USAGE}"))?;
        match flag.as_str() {
            "--runs" => runs = value.parse().map_err(|e| format!("`--runs`: {e}"))?,
            "--concurrent-runs" => {
                concurrent_runs = Some(value.parse().map_err(|e| format!("`--concurrent-runs`: {e}"))?)
            }
            "--clients" => clients = value.parse().map_err(|e| format!("`--clients`: {e}"))?,
            "--graph" => graph = value,
            "--idle-threads" => idle = Some(value.parse().map_err(|e| format!("`--idle-threads`: {e}"))?),
            "--pings" => pings = Some(value.parse().map_err(|e| format!("`--pings`: {e}"))?),
            "--idle-connections" => open = Some(value.parse().map_err(|e| format!("`--idle-connections`: {e}"))?),
            _ => return Err(format!("unknown argument `{flag}`; {USAGE}").into()),
        }
    }
    if let Some(n) = idle {
        return idle_threads(&host, n).await;
    }
    if let Some(n) = open {
        return idle_connections(&host, n).await;
    }
    let mut figures = Figures::default();
    if let Some(n) = pings {
        concurrent(&host, &graph, Ask::Ping, n, clients.max(1), &mut figures).await?;
        figures.print();
        return Ok(());
    }
    sequential(&host, &graph, runs, &mut figures).await?;
    let n = concurrent_runs.unwrap_or(runs);
    concurrent(&host, &graph, Ask::Run, n, clients.max(1), &mut figures).await?;
    first_events(&host, &graph, 20, &mut figures).await?;
    figures.print();
    Ok(())
}
