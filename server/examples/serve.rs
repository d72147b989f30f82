//! The anchor graphs of LangGraph's server captures (`shared/langgraph/server/graph.py`), typed,
//! served under the same names so that the official SDK and the compatibility suite
//! (`server/tests/sdk`) see the same answers from weir as from `langgraph dev`:
//!
//! - `chain`: `a` (emits `{"progress": "a running"}`, logs `a:<topic>`) → `b` (logs `b`);
//! - `hitl`: `a` → `ask`, which asks `{"question": "ok?"}` and logs `ask:<answer>`;
//! - `failing`: `boom` fails with `ValueError("boom in node")`;
//! - `slow`: `slow` waits (3 s by default) and logs `slow:<topic>`;
//! - `parent`: `chain` as the subgraph node `inner`, then `ask`;
//! - `chatbot`: `chat` answers "hello there friend" with a fake chat model whose tokens stream
//!   (`messages-tuple`), `--token-ms` apart (none by default);
//! - `agent`: a ReAct agent whose fake model calls the tool `add` with `{"a": 2, "b": 3}`, then
//!   answers "the sum is 5".
//!
//! ```text
//! cargo run -p weir-server --example serve -- --db weir.db --port 2024 [--host 127.0.0.1] [--slow-ms 3000] [--token-ms 0]
//! ```

use serde::{Deserialize, Serialize};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use weir::checkpoint::SqliteSaver;
use weir::prelude::*;
use weir_agent::message::ToolCall;
use weir_agent::message::{AiMessage, Message, MessagesState, MessagesStateUpdate};
use weir_agent::model::{ChatModel, FakeChatModel};
use weir_agent::{react_agent, tool};
use weir_server::bus::local::{LocalBus, LocalBusConfig};
use weir_server::db::sqlite::SqliteDb;
use weir_server::{shutdown_signal, Server};

/// The state every anchor graph shares: graph.py's `S`.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct S {
    /// What the run is about.
    pub topic: String,
    /// What the nodes did, in order.
    #[reducer(append)]
    pub log: Vec<String>,
}

/// `a`: reports progress on the custom stream, then logs `a:<topic>`.
fn a(s: &S, ctx: &Context) -> impl std::future::Future<Output = SUpdate> + Send + 'static {
    let (ctx, topic) = (ctx.clone(), s.topic.clone());
    async move {
        ctx.emit(json!({"progress": "a running"})).await;
        SUpdate::default().log(vec![format!("a:{topic}")])
    }
}

/// `b`: logs `b`.
fn b(_: &S) -> SUpdate {
    SUpdate::default().log(vec!["b".to_owned()])
}

/// `ask`: pauses with `{"question": "ok?"}`, then logs `ask:<answer>` (a string answer bare,
/// any other JSON as JSON).
fn ask(_: &S, ctx: &Context) -> Result<SUpdate, BoxError> {
    let answer: serde_json::Value = ctx.interrupt(json!({"question": "ok?"}))?;
    let answer = match answer {
        serde_json::Value::String(s) => s,
        other => other.to_string(),
    };
    Ok(SUpdate::default().log(vec![format!("ask:{answer}")]))
}

/// `chain`: a → b.
pub fn chain() -> Result<CompiledGraph<S>, BoxError> {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("a", a);
    g.add_node("b", b);
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END);
    Ok(g.compile()?)
}

/// `hitl`: a → ask.
pub fn hitl() -> Result<CompiledGraph<S>, BoxError> {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("a", a);
    g.add_node("ask", ask);
    g.add_edge(START, "a").add_edge("a", "ask").add_edge("ask", END);
    Ok(g.compile()?)
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

/// `failing`: boom, which fails.
pub fn failing() -> Result<CompiledGraph<S>, BoxError> {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("boom", |_: &S| -> Result<SUpdate, ValueError> {
        Err(ValueError("boom in node".to_owned()))
    });
    g.add_edge(START, "boom").add_edge("boom", END);
    Ok(g.compile()?)
}

/// `slow`: one node that waits `delay`, then logs `slow:<topic>`.
pub fn slow(delay: Duration) -> Result<CompiledGraph<S>, BoxError> {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("slow", move |s: &S| {
        let topic = s.topic.clone();
        async move {
            tokio::time::sleep(delay).await;
            SUpdate::default().log(vec![format!("slow:{topic}")])
        }
    });
    g.add_edge(START, "slow").add_edge("slow", END);
    Ok(g.compile()?)
}

/// `parent`: `chain` as the subgraph node `inner` (it starts from the parent's state and hands
/// back its whole final state, as a LangGraph subgraph node does), then `ask`.
pub fn parent() -> Result<CompiledGraph<S>, BoxError> {
    let mut g = GraphBuilder::<S>::new();
    g.add_subgraph(
        "inner",
        chain()?,
        |s: &S| SUpdate::default().topic(s.topic.clone()).log(s.log.clone()),
        |t: &S| SUpdate::default().topic(t.topic.clone()).log(t.log.clone()),
    );
    g.add_node("ask", ask);
    g.add_edge(START, "inner").add_edge("inner", "ask").add_edge("ask", END);
    Ok(g.compile()?)
}

/// graph.py's `chatbot`: a `MessagesState` graph whose node `chat` streams a fake model's answer
/// (weir-agent's `stream_in`), token by token in `messages-tuple` mode, `pace` apart.
pub fn chatbot(pace: Duration) -> Result<CompiledGraph<MessagesState>, BoxError> {
    let model = Arc::new(
        FakeChatModel::new([AiMessage::new("hello there friend")])
            .cycle()
            .paced(pace),
    );
    let mut g = GraphBuilder::<MessagesState>::new();
    g.add_node("chat", move |s: &MessagesState, ctx: &Context| {
        let (model, messages, ctx) = (model.clone(), s.messages.clone(), ctx.clone());
        async move {
            let answer = model.stream_in(&ctx, &messages, &[]).await?;
            Ok::<_, BoxError>(MessagesStateUpdate::default().messages(Message::Ai(answer).into()))
        }
    });
    g.add_edge(START, "chat").add_edge("chat", END);
    Ok(g.compile()?)
}

/// Adds two integers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// `agent`: a ReAct agent whose fake model calls `add` on 2 and 3, then says the sum, every run.
pub fn agent() -> Result<CompiledGraph<MessagesState>, BoxError> {
    let call = ToolCall::new(
        "call-add",
        "add",
        json!({"a": 2, "b": 3}).as_object().cloned().unwrap_or_default(),
    );
    let model = FakeChatModel::new([
        AiMessage::new("").with_tool_calls(vec![call]),
        AiMessage::new("the sum is 5"),
    ])
    .cycle();
    react_agent(model, [Add::tool()]).compile()
}

/// The command line: where the server keeps its data and where it listens.
#[derive(Debug)]
struct Args {
    db: PathBuf,
    host: String,
    port: u16,
    slow: Duration,
    token: Duration,
}

const USAGE: &str = "usage: serve [--db weir.db] [--host 127.0.0.1] [--port 2024] [--slow-ms 3000] [--token-ms 0]";

fn args() -> Result<Args, BoxError> {
    let mut out = Args {
        db: PathBuf::from("weir.db"),
        host: "127.0.0.1".to_owned(),
        port: 2024,
        slow: Duration::from_secs(3),
        token: Duration::ZERO,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("`{flag}` needs a value; {USAGE}"));
        match flag.as_str() {
            "--db" => out.db = value()?.into(),
            "--host" => out.host = value()?,
            "--port" => out.port = value()?.parse().map_err(|e| format!("`--port`: {e}"))?,
            "--slow-ms" => {
                let ms: u64 = value()?.parse().map_err(|e| format!("`--slow-ms`: {e}"))?;
                out.slow = Duration::from_millis(ms);
            }
            "--token-ms" => {
                let ms: u64 = value()?.parse().map_err(|e| format!("`--token-ms`: {e}"))?;
                out.token = Duration::from_millis(ms);
            }
            _ => return Err(format!("unknown argument `{flag}`; {USAGE}").into()),
        }
    }
    Ok(out)
}

/// The server, embedded: checkpoints and the server's tables in one SQLite file, the bus in
/// process.
async fn embedded(args: &Args) -> Result<Server, BoxError> {
    let saver = SqliteSaver::open(&args.db)?;
    let db = Arc::new(SqliteDb::open_with(&saver).await?);
    let saver = Arc::new(saver);
    let bus = Arc::new(LocalBus::new(LocalBusConfig::default()));
    Ok(Server::with_backends(saver, db.clone(), db, bus)
        .graph("chain", chain()?)
        .graph("hitl", hitl()?)
        .graph("failing", failing()?)
        .graph("slow", slow(args.slow)?)
        .graph("parent", parent()?)
        .graph("chatbot", chatbot(args.token)?)
        .graph("agent", agent()?))
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args = args()?;
    let server = embedded(&args).await?;
    let listener = tokio::net::TcpListener::bind((args.host.as_str(), args.port)).await?;
    // The harness (`tests/sdk.rs`) and `bench/server.sh` wait for this line; with `--port 0` it
    // says which port the system chose.
    println!("listening on http://{}", listener.local_addr()?);
    server.serve_on(listener, shutdown_signal()).await?;
    Ok(())
}
