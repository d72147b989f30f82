//! What the runs tests share: the captures' graphs (chain, hitl, failing, and the `chatbot` a
//! served model streams for, which tests add where they need it) plus a `gated` graph whose node
//! waits on a [`Gate`] the test opens, and a `panics` graph; a manager and router on
//! one SQLite file in a temporary directory (the server's tables and the checkpoints, as embedded
//! mode keeps them), or on the tables and checkpointer a test gives (PostgreSQL's); requests
//! through the real router; a worker stuck in a run.

#![allow(dead_code)]

use axum::body::Body;
use axum::http::{Request, StatusCode};
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use http_body_util::BodyExt;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, Semaphore};
use tower::ServiceExt;
use weir::checkpoint::{Checkpointer, SqliteSaver};
use weir::prelude::*;
use weir_server::api::{router, AppState};
use weir_server::bus::local::LocalBus;
use weir_server::bus::{Bus, BusError, CancelAction, Publisher, StreamItem, ThreadNotice};
use weir_server::db::sqlite::SqliteDb;
use weir_server::graph::{Serve, ServedGraph};
use weir_server::model::{system_assistant_id, Assistant, Object};
use weir_server::runs::{Manager, ManagerConfig};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct S {
    topic: String,
    #[reducer(append)]
    log: Vec<String>,
}

/// A door a node waits at: `entered` is signalled when a node arrives, `open` lets one through.
#[derive(Debug)]
pub struct Gate {
    pub entered: Notify,
    pub open: Semaphore,
    /// How many nodes wait at the gate now (a node cut off while it waits leaves).
    waiting: std::sync::atomic::AtomicUsize,
}

impl Default for Gate {
    fn default() -> Self {
        Self {
            entered: Notify::new(),
            open: Semaphore::new(0),
            waiting: std::sync::atomic::AtomicUsize::new(0),
        }
    }
}

impl Gate {
    pub fn release(&self) {
        self.open.add_permits(1);
    }

    /// How many nodes wait at the gate now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits at the gate until a permit lets this node through.
    async fn pass(&self) {
        struct Waiting<'a>(&'a std::sync::atomic::AtomicUsize);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            }
        }
        self.waiting.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let _waiting = Waiting(&self.waiting);
        self.entered.notify_one();
        self.open.acquire().await.unwrap().forget();
    }
}

fn chain() -> CompiledGraph<S> {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("a", |s: &S| SUpdate::default().log(vec![format!("a:{}", s.topic)]));
    g.add_node("b", |_: &S| SUpdate::default().log(vec!["b".into()]));
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END);
    g.compile().unwrap()
}

fn ask(_: &S, ctx: &Context) -> Result<SUpdate, BoxError> {
    let answer: String = ctx.interrupt(json!({"question": "ok?"}))?;
    Ok(SUpdate::default().log(vec![format!("ask:{answer}")]))
}

fn hitl() -> CompiledGraph<S> {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("a", |s: &S| SUpdate::default().log(vec![format!("a:{}", s.topic)]));
    g.add_node("ask", ask);
    g.add_edge(START, "a").add_edge("a", "ask").add_edge("ask", END);
    g.compile().unwrap()
}

/// The error `boom` fails with: graph.py's `ValueError("boom in node")`, whose class name is
/// the run's `error` kind.
#[derive(Debug)]
pub struct ValueError(pub String);

impl std::fmt::Display for ValueError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ValueError {}

/// graph.py's `chatbot`: START -> chat -> END, `chat` answering "hello there friend", streamed
/// token by token (weir-agent's `stream_in`).
pub fn chatbot() -> CompiledGraph<weir_agent::message::MessagesState> {
    use weir_agent::message::{AiMessage, Message, MessagesState, MessagesStateUpdate};
    use weir_agent::model::{ChatModel, FakeChatModel};
    let model = Arc::new(FakeChatModel::new([AiMessage::new("hello there friend")]).cycle());
    let mut g = GraphBuilder::<MessagesState>::new();
    g.add_node("chat", move |s: &MessagesState, ctx: &Context| {
        let (model, messages, ctx) = (model.clone(), s.messages.clone(), ctx.clone());
        async move {
            let answer = model.stream_in(&ctx, &messages, &[]).await?;
            Ok::<_, BoxError>(MessagesStateUpdate::default().messages(Message::Ai(answer).into()))
        }
    });
    g.add_edge(START, "chat").add_edge("chat", END);
    g.compile().unwrap()
}

fn failing() -> CompiledGraph<S> {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("boom", |_: &S| -> Result<SUpdate, ValueError> {
        Err(ValueError("boom in node".to_owned()))
    });
    g.add_edge(START, "boom").add_edge("boom", END);
    g.compile().unwrap()
}

fn panics() -> CompiledGraph<S> {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("explode", |_: &S| -> SUpdate { panic!("node exploded") });
    g.add_edge(START, "explode").add_edge("explode", END);
    g.compile().unwrap()
}

/// `a`, then `slow`, which waits at the gate.
fn gated(gate: Arc<Gate>) -> CompiledGraph<S> {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("a", |s: &S| SUpdate::default().log(vec![format!("a:{}", s.topic)]));
    g.add_node("slow", move |s: &S| {
        let (gate, topic) = (gate.clone(), s.topic.clone());
        async move {
            gate.pass().await;
            SUpdate::default().log(vec![format!("slow:{topic}")])
        }
    });
    g.add_edge(START, "a").add_edge("a", "slow").add_edge("slow", END);
    g.compile().unwrap()
}

/// The server's tables: SQLite's, as embedded mode keeps them, or PostgreSQL's.
pub trait Tables: weir_server::db::Catalog + weir_server::db::RunQueue + 'static {}
impl<T: weir_server::db::Catalog + weir_server::db::RunQueue + 'static> Tables for T {}

/// A server's parts: what the tests look into beside the HTTP API.
pub struct App<D = SqliteDb> {
    pub router: axum::Router,
    pub manager: Manager,
    pub db: Arc<D>,
    pub graphs: Arc<BTreeMap<String, Arc<dyn ServedGraph>>>,
    pub gate: Arc<Gate>,
    pub bus: Arc<dyn Bus>,
}

/// Long enough that a test waiting on it is a hung test, not a slow one.
pub const HUNG: Duration = Duration::from_secs(120);

/// A worker on `db` stuck in a run of `gated` it started on a new thread, after the graph's first
/// three checkpoints (its input's, `__start__`'s, `a`'s): `slots` slots (with one, it cannot claim
/// the run back while stuck in it), beating every `heartbeat` (once an hour: a beat that comes
/// once, so it never sweeps another worker, nor looks at its own claims again), and time to
/// finish its run on shutdown. Returns it, the thread and the run.
pub async fn stuck_worker_beating<D: Tables>(
    db: &Arc<D>,
    saver: &Arc<dyn Checkpointer>,
    slots: usize,
    heartbeat: Duration,
) -> (App<D>, String, String) {
    stuck_worker_on(db, saver, slots, heartbeat, Arc::new(LocalBus::default())).await
}

/// [`stuck_worker_beating`] on `bus`.
pub async fn stuck_worker_on<D: Tables>(
    db: &Arc<D>,
    saver: &Arc<dyn Checkpointer>,
    slots: usize,
    heartbeat: Duration,
    bus: Arc<dyn Bus>,
) -> (App<D>, String, String) {
    let slow = ManagerConfig {
        workers: slots,
        heartbeat,
        grace: HUNG,
        ..config()
    };
    let a = app_on_bus(db.clone(), saver.clone(), slow, |_| BTreeMap::new(), bus).await;
    let tid = a.thread().await;
    let created = a
        .call(
            "POST",
            &format!("/threads/{tid}/runs"),
            Some(json!({"input": {"topic": "x"}, "assistant_id": "gated"})),
        )
        .await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.body);
    let rid = created.body["run_id"].as_str().unwrap().to_owned();
    tokio::time::timeout(HUNG, a.gate.entered.notified()).await.unwrap();
    a.until_checkpoints(&tid, 3).await;
    (a, tid, rid)
}

/// A [`LocalBus`] with a fault: its wakes fail (Redis gone for longer than a retry), its beats
/// never arrive (a worker that others, on the same bus, take for dead), its sweeper's fences
/// never arrive (as if each came after the next attempt's first event), or Redis is away while
/// `away` is set, as this worker sees it ([`Away`]).
pub struct Faulty {
    bus: Arc<dyn Bus>,
    wakes_fail: bool,
    beats_lost: bool,
    fences_lost: bool,
    away: Option<(Arc<std::sync::atomic::AtomicBool>, Away)>,
}

/// What a [`Faulty`] bus does while Redis is away.
#[derive(Clone, Copy)]
enum Away {
    /// Its beats fail.
    BeatsFail,
    /// Its beats and heartbeat reads wait for it, as the Redis bus's commands do; once it is
    /// back, a beat waits [`RECONNECT`] more (this worker's connection is made again later than
    /// another's question is answered).
    Waits,
}

/// How much later than a heartbeat read a beat goes through once Redis is back ([`Away::Waits`]).
const RECONNECT: Duration = Duration::from_millis(500);

impl Faulty {
    fn new(bus: Arc<dyn Bus>) -> Self {
        Self {
            bus,
            wakes_fail: false,
            beats_lost: false,
            fences_lost: false,
            away: None,
        }
    }
    /// `bus`, whose wakes fail.
    pub fn wakes_fail(bus: impl Bus) -> Self {
        Self {
            wakes_fail: true,
            ..Self::new(Arc::new(bus))
        }
    }
    /// `bus`, whose beats are lost.
    pub fn beats_lost(bus: Arc<dyn Bus>) -> Self {
        Self {
            beats_lost: true,
            ..Self::new(bus)
        }
    }
    /// `bus`, whose fences ([`Bus::supersede`]) are lost.
    pub fn fences_lost(bus: Arc<dyn Bus>) -> Self {
        Self {
            fences_lost: true,
            ..Self::new(bus)
        }
    }
    /// `bus`, whose beats fail while `away` is set.
    pub fn beats_fail_while(bus: impl Bus, away: Arc<std::sync::atomic::AtomicBool>) -> Self {
        Self {
            away: Some((away, Away::BeatsFail)),
            ..Self::new(Arc::new(bus))
        }
    }
    /// `bus`, whose beats and heartbeat reads wait while `away` is set ([`Away::Waits`]).
    pub fn waits_while(bus: Arc<dyn Bus>, away: Arc<std::sync::atomic::AtomicBool>) -> Self {
        Self {
            away: Some((away, Away::Waits)),
            ..Self::new(bus)
        }
    }

    /// Whether Redis is away, and what this bus does then.
    fn away(&self) -> Option<Away> {
        self.away
            .as_ref()
            .filter(|(away, _)| away.load(std::sync::atomic::Ordering::SeqCst))
            .map(|(_, how)| *how)
    }

    /// Waits while Redis is away.
    async fn until_back(&self) {
        while self.away().is_some() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Bus for Faulty {
    fn wake(&self) -> BoxFuture<'_, Result<(), BusError>> {
        if self.wakes_fail {
            return Box::pin(async { Err(BusError("redis bus: waking a worker failed: broken pipe".into())) });
        }
        self.bus.wake()
    }
    fn wait_wake(&self, timeout: Duration) -> BoxFuture<'_, ()> {
        self.bus.wait_wake(timeout)
    }
    fn cancel<'a>(&'a self, run_id: &'a str, action: CancelAction) -> BoxFuture<'a, Result<(), BusError>> {
        self.bus.cancel(run_id, action)
    }
    fn cancellations(&self) -> BoxFuture<'_, Result<BoxStream<'static, (String, CancelAction)>, BusError>> {
        self.bus.cancellations()
    }
    fn publish<'a>(
        &'a self,
        run_id: &'a str,
        by: Publisher,
        item: StreamItem,
    ) -> BoxFuture<'a, Result<bool, BusError>> {
        self.bus.publish(run_id, by, item)
    }
    fn supersede<'a>(&'a self, run_id: &'a str, attempt: u32) -> BoxFuture<'a, Result<(), BusError>> {
        if self.fences_lost {
            return Box::pin(async { Ok(()) });
        }
        self.bus.supersede(run_id, attempt)
    }
    fn subscribe<'a>(
        &'a self,
        run_id: &'a str,
        last_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<BoxStream<'static, StreamItem>, BusError>> {
        self.bus.subscribe(run_id, last_id)
    }
    fn notify_thread<'a>(&'a self, thread_id: &'a str, notice: ThreadNotice) -> BoxFuture<'a, Result<(), BusError>> {
        self.bus.notify_thread(thread_id, notice)
    }
    fn watch_thread<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<BoxStream<'static, ThreadNotice>, BusError>> {
        self.bus.watch_thread(thread_id)
    }
    fn replay_window(&self) -> Duration {
        self.bus.replay_window()
    }
    fn beat<'a>(&'a self, worker: &'a str, ttl: Duration) -> BoxFuture<'a, Result<(), BusError>> {
        if self.beats_lost {
            return Box::pin(async { Ok(()) });
        }
        match self.away() {
            Some(Away::BeatsFail) => Box::pin(async {
                Err(BusError(
                    "redis bus: recording a heartbeat failed: connection refused".into(),
                ))
            }),
            Some(Away::Waits) => Box::pin(async move {
                self.until_back().await;
                tokio::time::sleep(RECONNECT).await;
                self.bus.beat(worker, ttl).await
            }),
            None => self.bus.beat(worker, ttl),
        }
    }
    fn is_alive<'a>(&'a self, worker: &'a str) -> BoxFuture<'a, Result<bool, BusError>> {
        Box::pin(async move {
            if let Some(Away::Waits) = self.away() {
                self.until_back().await;
            }
            self.bus.is_alive(worker).await
        })
    }
}

/// The server's tables and the checkpointer on one SQLite file.
pub async fn open(path: &std::path::Path) -> (Arc<SqliteDb>, Arc<dyn Checkpointer>) {
    let saver = SqliteSaver::open(path).unwrap();
    let db = Arc::new(SqliteDb::open_with(&saver).await.unwrap());
    (db, Arc::new(saver))
}

/// A test configuration: 4 workers, a 1 s heartbeat, no grace.
pub fn config() -> ManagerConfig {
    ManagerConfig {
        workers: 4,
        poll: Duration::from_millis(200),
        heartbeat: Duration::from_secs(1),
        grace: Duration::ZERO,
        requeue_on_start: true,
        sse_heartbeat: Duration::from_secs(5),
        thread_ttl: None,
        ttl_sweep: None,
        max_queued_runs: 1_000,
        cron_poll: None,
        webhooks: true,
    }
}

/// The test graphs on `saver`, `gated` waiting at `gate`.
pub fn graphs(saver: &Arc<dyn Checkpointer>, gate: &Arc<Gate>) -> Arc<BTreeMap<String, Arc<dyn ServedGraph>>> {
    graphs_with(saver, gate, BTreeMap::new())
}

/// [`graphs`] added to `graphs`.
fn graphs_with(
    saver: &Arc<dyn Checkpointer>,
    gate: &Arc<Gate>,
    mut graphs: BTreeMap<String, Arc<dyn ServedGraph>>,
) -> Arc<BTreeMap<String, Arc<dyn ServedGraph>>> {
    graphs.insert("chain".into(), chain().into_served(saver.clone()));
    graphs.insert("hitl".into(), hitl().into_served(saver.clone()));
    graphs.insert("failing".into(), failing().into_served(saver.clone()));
    graphs.insert("panics".into(), panics().into_served(saver.clone()));
    graphs.insert("gated".into(), gated(gate.clone()).into_served(saver.clone()));
    Arc::new(graphs)
}

/// A started server on `db` and `saver` with the test graphs.
pub async fn app_on<D: Tables>(db: Arc<D>, saver: Arc<dyn Checkpointer>, config: ManagerConfig) -> App<D> {
    app_on_with(db, saver, config, |_| BTreeMap::new()).await
}

/// [`app_on`], serving besides the graphs `extra` makes on the server's saver.
pub async fn app_on_with<D: Tables>(
    db: Arc<D>,
    saver: Arc<dyn Checkpointer>,
    config: ManagerConfig,
    extra: impl FnOnce(&Arc<dyn Checkpointer>) -> BTreeMap<String, Arc<dyn ServedGraph>>,
) -> App<D> {
    app_on_bus(db, saver, config, extra, Arc::new(LocalBus::default())).await
}

/// [`app_with`] over `bus` in place of a [`LocalBus`].
pub async fn app_with_bus(config: ManagerConfig, bus: Arc<dyn Bus>) -> (tempfile::TempDir, App) {
    let dir = tempfile::tempdir().unwrap();
    let (db, saver) = open(&dir.path().join("weir.db")).await;
    (dir, app_on_bus(db, saver, config, |_| BTreeMap::new(), bus).await)
}

/// [`app_on_with`] over `bus` in place of a [`LocalBus`] of its own.
pub async fn app_on_bus<D: Tables>(
    db: Arc<D>,
    saver: Arc<dyn Checkpointer>,
    config: ManagerConfig,
    extra: impl FnOnce(&Arc<dyn Checkpointer>) -> BTreeMap<String, Arc<dyn ServedGraph>>,
    bus: Arc<dyn Bus>,
) -> App<D> {
    let gate = Arc::new(Gate::default());
    let graphs = graphs_with(&saver, &gate, extra(&saver));
    for graph_id in graphs.keys() {
        let mut metadata = Object::new();
        metadata.insert("created_by".into(), json!("system"));
        let a = Assistant {
            assistant_id: system_assistant_id(graph_id).to_string(),
            graph_id: graph_id.clone(),
            config: Object::new(),
            context: Object::new(),
            metadata,
            name: graph_id.clone(),
            created_at: "2026-12-01T00:00:00.000000+00:00".into(),
            updated_at: "2026-12-01T00:00:00.000000+00:00".into(),
            version: 1,
            description: None,
        };
        weir_server::db::Catalog::put_assistant(&*db, &a).await.unwrap();
    }
    let manager = Manager::new(graphs.clone(), db.clone(), db.clone(), bus.clone(), config);
    manager.start().await.unwrap();
    let state = AppState {
        graphs: graphs.clone(),
        catalog: db.clone(),
        queue: db.clone(),
        bus: bus.clone(),
        runs: manager.clone(),
        store: Arc::new(weir::store::InMemoryStore::new()),
    };
    App {
        router: router(state),
        manager,
        db,
        graphs,
        gate,
        bus,
    }
}

/// A started server on a fresh SQLite file; keep the directory alive for the test.
pub async fn app() -> (tempfile::TempDir, App) {
    app_with(config()).await
}

/// [`app`] with this configuration.
pub async fn app_with(config: ManagerConfig) -> (tempfile::TempDir, App) {
    let dir = tempfile::tempdir().unwrap();
    let (db, saver) = open(&dir.path().join("weir.db")).await;
    (dir, app_on(db, saver, config).await)
}

/// A response: status, headers, and the body as JSON (or a JSON string of its text).
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub body: Value,
}

impl Reply {
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).map_or("", |v| v.to_str().unwrap())
    }
}

impl<D: Tables> App<D> {
    /// Sends a request and reads the whole body.
    pub async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Reply {
        let res = self.open(method, path, body, &[]).await;
        let status = res.status();
        let headers = res.headers().clone();
        let bytes = res.into_body().collect().await.unwrap().to_bytes();
        let body =
            serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
        Reply { status, headers, body }
    }

    /// Sends a request; the body is left to read (a stream).
    pub async fn open(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> axum::response::Response {
        let mut req = Request::builder().method(method).uri(path);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let body = body.map_or_else(Body::empty, |b| Body::from(b.to_string()));
        self.router.clone().oneshot(req.body(body).unwrap()).await.unwrap()
    }

    /// A new thread (through a run-less path: the catalog), its id.
    pub async fn thread(&self) -> String {
        let tid = uuid::Uuid::now_v7().to_string();
        let t = weir_server::model::Thread::new(tid.clone(), Object::new());
        weir_server::db::Catalog::create_thread(&*self.db, &t, Default::default())
            .await
            .unwrap();
        tid
    }

    /// The thread's row.
    pub async fn thread_row(&self, tid: &str) -> Option<weir_server::model::Thread> {
        weir_server::db::Catalog::get_thread(&*self.db, tid).await.unwrap()
    }

    /// The run's status, `None` when it is gone.
    pub async fn status(&self, tid: &str, rid: &str) -> Option<weir_server::model::RunStatus> {
        weir_server::db::RunQueue::get_run(&*self.db, tid, rid)
            .await
            .unwrap()
            .map(|r| r.status)
    }

    /// The thread's runs, newest first.
    pub async fn runs(&self, tid: &str) -> Vec<weir_server::model::Run> {
        weir_server::db::RunQueue::list_runs(&*self.db, tid, 100, 0, None)
            .await
            .unwrap()
    }

    /// How many checkpoints the thread has.
    pub async fn checkpoints(&self, tid: &str) -> usize {
        let q = weir_server::graph::HistoryQuery {
            limit: 1000,
            ..Default::default()
        };
        self.graphs["chain"].history(tid, &q).await.unwrap().len()
    }
}

impl<D: Tables> App<D> {
    /// Waits until the thread has at least `n` checkpoints. The runtime writes checkpoints in the
    /// background (async durability) and offers no event for "written", so this polls, bounded.
    pub async fn until_checkpoints(&self, tid: &str, n: usize) {
        for _ in 0..1000 {
            if self.checkpoints(tid).await >= n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("thread {tid} never reached {n} checkpoints");
    }
}

/// Reads SSE frames from `body` until it ends: `(event, data, id)` per event; heartbeats skipped.
pub async fn frames(body: Body) -> Vec<(String, Value, Option<String>)> {
    let bytes = body.collect().await.unwrap().to_bytes();
    parse_frames(std::str::from_utf8(&bytes).unwrap())
}

/// The events of an SSE text.
pub fn parse_frames(text: &str) -> Vec<(String, Value, Option<String>)> {
    text.split("\r\n\r\n")
        .filter(|f| f.starts_with("event: "))
        .map(|f| {
            let mut event = String::new();
            let mut data = Value::Null;
            let mut id = None;
            for line in f.split("\r\n") {
                if let Some(e) = line.strip_prefix("event: ") {
                    event = e.to_owned();
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data = serde_json::from_str(d).unwrap();
                } else if let Some(i) = line.strip_prefix("id: ") {
                    id = Some(i.to_owned());
                }
            }
            (event, data, id)
        })
        .collect()
}

/// The next chunk of a streaming body as text, `None` at its end.
pub async fn next_chunk(body: &mut Body) -> Option<String> {
    loop {
        let frame = body.frame().await?.unwrap();
        if let Ok(data) = frame.into_data() {
            return Some(String::from_utf8(data.to_vec()).unwrap());
        }
    }
}
