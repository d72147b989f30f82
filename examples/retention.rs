//! Retention benchmark (issue 27): checkpoint storage of a long chat thread on SQLite, with and
//! without a keep-last-N policy, and the time a prune of a large database takes.
//!
//! ```text
//! # 10,000 turns, keep the last 100 checkpoints (pruned every 10 turns); a line per 1,000 turns
//! # (µs a turn since the last line, and µs one copy of the state takes)
//! cargo run --release --example retention -- chat --db /tmp/chat.db --turns 10000 --keep-last 100
//! # the same thread with no retention
//! cargo run --release --example retention -- chat --db /tmp/chat-all.db --turns 10000
//! # a chat that keeps its last 200 messages (a model's context window), keep-last-100
//! cargo run --release --example retention -- chat --db /tmp/win.db --turns 10000 --keep-last 100 --window 200
//! # fill a file to about 1 GB (threads of 1 KB checkpoints), then time a keep-last-100 prune
//! cargo run --release --example retention -- fill --db /tmp/big.db --mb 1024
//! cargo run --release --example retention -- prune --db /tmp/big.db --keep-last 100
//! ```
//!
//! `bench/retention.sh` runs all of them and LangGraph's side.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use weir::checkpoint::{
    new_checkpoint_id_after, Blob, ChannelRef, CheckpointRecord, Checkpointer, Retention, Source, SqliteSaver,
    Timestamp,
};
use weir::prelude::*;

/// A chat: the messages so far, which only grow.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Chat {
    #[reducer(append)]
    pub messages: Vec<String>,
    pub turns: u64,
}

/// A chat that keeps only its last messages (as one sent to a model with a context window):
/// the state stops growing once the window is full.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Window {
    /// The user's new message.
    pub user: String,
    /// The last `size` messages.
    pub messages: Vec<String>,
    /// How many messages the window keeps.
    pub size: usize,
    /// Turns answered.
    pub turns: u64,
}

/// The bytes of a file and its write-ahead log.
fn bytes_on_disk(db: &Path) -> u64 {
    let wal = PathBuf::from(format!("{}-wal", db.display()));
    [db.to_path_buf(), wal]
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum()
}

/// The fake model's answer on turn `turn` to a message of `len` bytes.
fn answer(turn: u64, len: usize) -> String {
    format!(
        "assistant {turn}: {} (the fake model's answer to {len} bytes, padded to a typical reply length {})",
        "ok ".repeat(30),
        "·".repeat(40)
    )
}

/// The user's message on turn `turn`.
fn question(turn: u64) -> String {
    format!("user {turn}: {}", "question ".repeat(8))
}

/// The chat graph: one node answering the user's message.
fn graph(saver: Arc<SqliteSaver>) -> Result<CompiledGraph<Chat>, BoxError> {
    let mut g = GraphBuilder::<Chat>::new();
    g.add_node("reply", |s: &Chat| {
        let last = s.messages.last().map_or(0, String::len);
        ChatUpdate::default()
            .messages(vec![answer(s.turns, last)])
            .turns(s.turns + 1)
    });
    g.add_edge(START, "reply").add_edge("reply", END);
    g.set_checkpointer(saver);
    Ok(g.compile()?)
}

/// The windowed chat's graph: one node answering the user's message, keeping the window's
/// last messages.
fn window_graph(saver: Arc<SqliteSaver>) -> Result<CompiledGraph<Window>, BoxError> {
    let mut g = GraphBuilder::<Window>::new();
    g.add_node("reply", |s: &Window| {
        let mut messages = s.messages.clone();
        messages.push(s.user.clone());
        messages.push(answer(s.turns, s.user.len()));
        let over = messages.len().saturating_sub(s.size);
        messages.drain(..over);
        WindowUpdate::default().messages(messages).turns(s.turns + 1)
    });
    g.add_edge(START, "reply").add_edge("reply", END);
    g.set_checkpointer(saver);
    Ok(g.compile()?)
}

/// One of the two chats.
enum Chatting {
    Growing(CompiledGraph<Chat>),
    Window(CompiledGraph<Window>, usize),
}

impl Chatting {
    async fn turn(&self, turn: u64, config: &RunConfig) -> Result<(), BoxError> {
        match self {
            Self::Growing(app) => {
                app.invoke(ChatUpdate::default().messages(vec![question(turn)]), config)
                    .await?;
            }
            Self::Window(app, size) => {
                app.invoke(WindowUpdate::default().user(question(turn)).size(*size), config)
                    .await?;
            }
        }
        Ok(())
    }

    /// The µs one copy of the thread's state takes (made and dropped): what a run's result,
    /// which hands the caller the whole state, costs at least.
    async fn copy_us(&self, config: &RunConfig) -> Result<u64, BoxError> {
        const COPIES: u32 = 5;
        fn time<T: Clone>(value: &T) -> u64 {
            let started = Instant::now();
            for _ in 0..COPIES {
                drop(std::hint::black_box(value.clone()));
            }
            started.elapsed().as_micros() as u64 / u64::from(COPIES)
        }
        Ok(match self {
            Self::Growing(app) => time(&app.get_state(config).await?.ok_or("no state")?.values),
            Self::Window(app, _) => time(&app.get_state(config).await?.ok_or("no state")?.values),
        })
    }

    /// The messages the thread holds at the end.
    async fn messages(&self, config: &RunConfig) -> Result<usize, BoxError> {
        Ok(match self {
            Self::Growing(app) => app.get_state(config).await?.ok_or("no state")?.values.messages.len(),
            Self::Window(app, _) => app.get_state(config).await?.ok_or("no state")?.values.messages.len(),
        })
    }
}

async fn chat(
    db: &Path,
    turns: u64,
    keep_last: Option<usize>,
    prune_every: u64,
    window: Option<usize>,
) -> Result<(), BoxError> {
    let _ = std::fs::remove_file(db);
    let saver = Arc::new(SqliteSaver::open(db)?);
    let app = match window {
        Some(size) => Chatting::Window(window_graph(saver.clone())?, size),
        None => Chatting::Growing(graph(saver.clone())?),
    };
    let config = RunConfig::thread("chat");
    let policy = keep_last.map(|n| Retention::new().keep_last(n));
    println!("turn,bytes_on_disk,checkpoints,blob_bytes,us_per_turn,us_per_copy");
    let (mut started, mut since) = (Instant::now(), 0);
    for turn in 1..=turns {
        app.turn(turn, &config).await?;
        if let Some(policy) = &policy {
            if turn % prune_every == 0 {
                saver.prune("chat", policy).await?;
            }
        }
        if turn % 1000 == 0 || turn == 100 {
            let per_turn = started.elapsed().as_micros() as u64 / (turn - since);
            let usage = saver.usage("chat").await?;
            let per_copy = app.copy_us(&config).await?;
            println!(
                "{turn},{},{},{},{per_turn},{per_copy}",
                bytes_on_disk(db),
                usage.checkpoints,
                usage.blob_bytes
            );
            (started, since) = (Instant::now(), turn);
        }
    }
    let expected = window.map_or(2 * turns, |size| (2 * turns).min(size as u64));
    assert_eq!(app.messages(&config).await? as u64, expected);
    Ok(())
}

/// Fills `db` to about `mb` megabytes: threads of 1,000 checkpoints, each storing 1 KB.
async fn fill(db: &Path, mb: u64) -> Result<(), BoxError> {
    let saver = SqliteSaver::open(db)?;
    let payload = vec![b'x'; 1024];
    let mut thread = 0u64;
    let started = Instant::now();
    while bytes_on_disk(db) < mb * 1024 * 1024 {
        thread += 1;
        let name: Arc<str> = format!("thread-{thread}").into();
        let mut head: Option<Arc<str>> = None;
        let mut batch = Vec::new();
        for step in 0..1000i64 {
            let id: Arc<str> = new_checkpoint_id_after(head.as_deref()).into();
            batch.push(CheckpointRecord {
                thread_id: name.clone(),
                ns: "".into(),
                id: id.clone(),
                parent_id: head.clone(),
                step,
                source: Source::Loop,
                writes: [Arc::from("reply")].into(),
                metadata: Default::default(),
                created_at: Timestamp::now(),
                channels: vec![ChannelRef {
                    channel: "messages".into(),
                    version: step as u64 + 1,
                    blob: Some(id.clone()),
                }],
                body: Vec::new(),
                blobs: vec![Blob {
                    channel: "messages".into(),
                    delta_of: None,
                    bytes: payload.clone(),
                }],
            });
            head = Some(id);
        }
        saver.put_many(batch, None).await?;
    }
    println!(
        "filled `{}`: {} threads, {} MB, in {:.1} s",
        db.display(),
        thread,
        bytes_on_disk(db) / (1024 * 1024),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

async fn prune(db: &Path, keep_last: usize) -> Result<(), BoxError> {
    let saver = SqliteSaver::open(db)?;
    let before = bytes_on_disk(db);
    let started = Instant::now();
    let pruned = saver.prune_all(&Retention::new().keep_last(keep_last)).await?;
    println!(
        "pruned `{}` ({} MB): {} checkpoints of {} threads removed in {:.2} s",
        db.display(),
        before / (1024 * 1024),
        pruned.checkpoints,
        pruned.threads_pruned,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The value after `--name` in `args`.
fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let db = PathBuf::from(arg(&args, "--db").unwrap_or_else(|| "retention.db".into()));
    let number = |name: &str, default: u64| -> Result<u64, BoxError> {
        Ok(arg(&args, name).map(|v| v.parse()).transpose()?.unwrap_or(default))
    };
    match args.first().map(String::as_str) {
        Some("chat") => {
            let keep = arg(&args, "--keep-last").map(|v| v.parse()).transpose()?;
            chat(
                &db,
                number("--turns", 10_000)?,
                keep,
                number("--prune-every", 10)?.max(1),
                arg(&args, "--window").map(|v| v.parse()).transpose()?,
            )
            .await
        }
        Some("fill") => fill(&db, number("--mb", 1024)?).await,
        Some("prune") => prune(&db, number("--keep-last", 100)? as usize).await,
        _ => {
            Err("usage: retention chat|fill|prune --db FILE [--turns N] [--keep-last N] [--window N] [--mb MB]".into())
        }
    }
}
