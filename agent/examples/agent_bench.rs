//! The agent benchmark (`bench/agent.sh` runs it next to LangGraph's `create_react_agent`): a
//! ReAct agent with a model that answers instantly and two trivial `#[tool]`s, in memory.
//!
//! - **turn**: one `invoke` on one thread kept by a `MemorySaver`: the human message, the model
//!   calling both tools, the tools, the model's answer (3 steps, 5 messages). Timed over
//!   `--turns` turns after 10 unmeasured ones; the conversation grows as in a real chat.
//! - **fresh turn**: CPU time per turn of `10 × --turns` new conversations without a checkpointer (the fixed
//!   cost of a turn).
//! - **memory**: the resident memory a thread adds once it holds `--messages` messages (its
//!   checkpoints included), averaged over `--threads` threads; and what the saver keeps for such
//!   a thread (its checkpoints, the bytes of their value blobs, its pending writes).
//!
//! Prints one JSON line. Build it in release: `cargo build --release -p weir-agent --example
//! agent_bench`.

use futures::future::BoxFuture;
use serde_json::json;
use std::time::Instant;
use weir_agent::message::{AiMessage, Message, MessagesStateUpdate, ToolCall};
use weir_agent::model::{ChatModel, ChunkStream, ModelError};
use weir_agent::react_agent;
use weir_agent::tool;
use weir_agent::tool::ToolSpec;
use weir_runtime::checkpoint::{Checkpointer, MemorySaver};
use weir_runtime::{BoxError, CompiledGraph, RunConfig};

/// Adds two integers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Repeats the text.
#[tool]
fn echo(text: String) -> String {
    text
}

/// A model that answers instantly: after a human message it calls both tools, after the tools'
/// answers it answers in words. No id, so `add_messages` gives each answer a fresh one.
struct InstantModel;

impl ChatModel for InstantModel {
    fn name(&self) -> &str {
        "instant"
    }

    fn stream<'a>(&'a self, _: &'a [Message], _: &'a [ToolSpec]) -> ChunkStream<'a> {
        Box::pin(futures::stream::empty())
    }

    fn invoke<'a>(
        &'a self,
        messages: &'a [Message],
        _: &'a [ToolSpec],
    ) -> BoxFuture<'a, Result<AiMessage, ModelError>> {
        let after_tools = matches!(messages.last(), Some(Message::Tool(_)));
        Box::pin(async move {
            Ok(if after_tools {
                AiMessage::new("3, and hello.")
            } else {
                let obj = |v: serde_json::Value| v.as_object().cloned().unwrap_or_default();
                AiMessage::new("").with_tool_calls(vec![
                    ToolCall::new("call_add", "add", obj(json!({"a": 1, "b": 2}))),
                    ToolCall::new("call_echo", "echo", obj(json!({"text": "hello"}))),
                ])
            })
        })
    }
}

fn agent(saver: MemorySaver) -> Result<CompiledGraph<weir_agent::message::MessagesState>, BoxError> {
    react_agent(InstantModel, [Add::tool(), Echo::tool()])
        .checkpointer(saver)
        .compile()
}

/// The CPU time per turn of `turns` new conversations without a checkpointer: the engine's
/// fixed cost of a turn, without the history.
async fn fresh_turns(turns: usize) -> Result<(f64, f64), BoxError> {
    let app = react_agent(InstantModel, [Add::tool(), Echo::tool()]).compile()?;
    for _ in 0..10 {
        turn(&app, &RunConfig::default()).await?;
    }
    let (cpu, wall) = (cpu_ns(), Instant::now());
    for _ in 0..turns {
        assert_eq!(turn(&app, &RunConfig::default()).await?, 5);
    }
    let wall_us = wall.elapsed().as_secs_f64() * 1e6 / turns as f64;
    Ok(((cpu_ns() - cpu) as f64 / 1e3 / turns as f64, wall_us))
}

async fn turn(app: &CompiledGraph<weir_agent::message::MessagesState>, cfg: &RunConfig) -> Result<usize, BoxError> {
    let input = MessagesStateUpdate::default().messages(Message::human("add 1 and 2, and echo hello").into());
    Ok(app.invoke(input, cfg).await?.messages.len())
}

/// The CPU time the process's threads have run, in nanoseconds (Linux's schedstat): a turn's
/// cost on a loaded machine, where wall time also counts the waits for a core.
fn cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next().and_then(|n| n.parse::<u64>().ok()))
        .sum()
}

/// The process's resident memory, in bytes (Linux).
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), BoxError> {
    let (turns, threads, messages) = (arg("--turns", 100), arg("--threads", 5), arg("--messages", 1000));
    let app = agent(MemorySaver::new())?;
    let cfg = RunConfig::thread("turns");
    for _ in 0..10 {
        turn(&app, &RunConfig::thread("warm-up")).await?;
    }
    let mut times = Vec::with_capacity(turns);
    let mut len = 0;
    let cpu = cpu_ns();
    for _ in 0..turns {
        let t = Instant::now();
        len = turn(&app, &cfg).await?;
        times.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let cpu_us = (cpu_ns() - cpu) as f64 / 1e3 / turns as f64;
    assert_eq!(len, 5 * turns, "each turn adds 5 messages");
    let mean = times.iter().sum::<f64>() / turns as f64;
    times.sort_by(f64::total_cmp);
    let median = times[turns / 2];

    // Ten times as many: Linux updates a running thread's CPU time at scheduler ticks.
    let (fresh_cpu_us, fresh_wall_us) = fresh_turns(10 * turns).await?;
    let saver = MemorySaver::new();
    let mem_app = agent(saver.clone())?;
    let before = rss();
    for t in 0..threads {
        let cfg = RunConfig::thread(format!("memory-{t}"));
        let mut n = 0;
        while n < messages {
            n = turn(&mem_app, &cfg).await?;
        }
    }
    let per_thread = (rss().saturating_sub(before)) as f64 / threads as f64 / (1024.0 * 1024.0);
    let kept = saver.usage("memory-0").await?;
    println!(
        "{}",
        json!({
            "impl": "weir", "turns": turns, "turn_us_median": median, "turn_us_mean": mean, "turn_cpu_us": cpu_us, "fresh_turn_cpu_us": fresh_cpu_us, "fresh_turn_us_mean": fresh_wall_us,
            "threads": threads, "messages": messages, "mib_per_thread": per_thread,
            "saver_checkpoints": kept.checkpoints, "saver_blob_kib": kept.blob_bytes as f64 / 1024.0, "saver_pending_writes": kept.pending_writes,
        })
    );
    Ok(())
}
