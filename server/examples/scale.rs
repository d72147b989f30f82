//! One process of a scaled-out weir server (PostgreSQL + Redis) serving a typed graph whose nodes
//! leave a trace, for the multi-process test (`tests/scale_out.rs`) and the throughput figures:
//!
//! - `steps`: `s1` → `s2` → `s3`; each node appends `<topic> <node> <pid> start` to the effects
//!   file, waits `--node-ms`, appends `<topic> <node> <pid> end`, and logs its name.
//!
//! An API process prints `listening on http://…`; a worker prints `working as <pid>`.
//!
//! ```text
//! cargo run -p weir-server --example scale -- --postgres URL --redis URL --schema s --prefix p \
//!     --role api|worker|all --effects effects.log [--port 0] [--workers 10] [--node-ms 20] \
//!     [--heartbeat-ms 1000] [--grace-ms 10000] [--poll-ms 1000]
//! ```

use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use weir::prelude::*;
use weir_server::runs::ManagerConfig;
use weir_server::{shutdown_signal, Role, Server};

/// The graph's state.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct S {
    /// Names the run (the test gives each run its own).
    pub topic: String,
    /// The nodes that ran, in order.
    #[reducer(append)]
    pub log: Vec<String>,
}

/// The command line.
#[derive(Debug)]
struct Args {
    postgres: String,
    redis: String,
    schema: String,
    prefix: String,
    role: Role,
    host: String,
    port: u16,
    effects: PathBuf,
    node: Duration,
    manager: ManagerConfig,
}

const USAGE: &str = "usage: scale --postgres URL --redis URL --effects FILE [--schema weir] [--prefix weir] \
     [--role api|worker|all] [--host 127.0.0.1] [--port 0] [--workers 10] [--node-ms 20] [--heartbeat-ms 1000] \
     [--grace-ms 10000] [--poll-ms 1000]";

fn millis(flag: &str, text: &str) -> Result<Duration, BoxError> {
    let ms: u64 = text.parse().map_err(|e| format!("`{flag}`: {e}"))?;
    Ok(Duration::from_millis(ms))
}

fn role(text: &str) -> Result<Role, BoxError> {
    match text {
        "api" => Ok(Role::Api),
        "worker" => Ok(Role::Worker),
        "all" => Ok(Role::All),
        _ => Err(format!("`--role`: expected api, worker or all, got `{text}`").into()),
    }
}

fn args() -> Result<Args, BoxError> {
    let mut out = Args {
        postgres: String::new(),
        redis: String::new(),
        schema: "weir".to_owned(),
        prefix: "weir".to_owned(),
        role: Role::All,
        host: "127.0.0.1".to_owned(),
        port: 0,
        effects: PathBuf::new(),
        node: Duration::from_millis(20),
        manager: ManagerConfig {
            requeue_on_start: false,
            heartbeat: Duration::from_secs(1),
            ..ManagerConfig::default()
        },
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("`{flag}` needs a value; {USAGE}"))?;
        let m = &mut out.manager;
        match flag.as_str() {
            "--postgres" => out.postgres = value,
            "--redis" => out.redis = value,
            "--schema" => out.schema = value,
            "--prefix" => out.prefix = value,
            "--role" => out.role = role(&value)?,
            "--host" => out.host = value,
            "--port" => out.port = value.parse().map_err(|e| format!("`--port`: {e}"))?,
            "--effects" => out.effects = value.into(),
            "--workers" => m.workers = value.parse().map_err(|e| format!("`--workers`: {e}"))?,
            "--node-ms" => out.node = millis(&flag, &value)?,
            "--heartbeat-ms" => m.heartbeat = millis(&flag, &value)?,
            "--grace-ms" => m.grace = millis(&flag, &value)?,
            "--poll-ms" => m.poll = millis(&flag, &value)?,
            _ => return Err(format!("unknown argument `{flag}`; {USAGE}").into()),
        }
    }
    if out.postgres.is_empty() || out.redis.is_empty() || out.effects.as_os_str().is_empty() {
        return Err(format!("`--postgres`, `--redis` and `--effects` are required; {USAGE}").into());
    }
    Ok(out)
}

/// Appends one line to the effects file (one `write` of a short line in append mode: lines of
/// several processes do not interleave).
fn trace(effects: &std::path::Path, line: String) {
    let appended = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(effects)
        .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
    if let Err(e) = appended {
        eprintln!("scale: cannot append to {}: {e}", effects.display());
    }
}

/// `steps`: s1 → s2 → s3, each traced in the effects file.
fn steps(effects: PathBuf, delay: Duration) -> Result<CompiledGraph<S>, BoxError> {
    let effects = Arc::new(effects);
    let mut g = GraphBuilder::<S>::new();
    for name in ["s1", "s2", "s3"] {
        let effects = effects.clone();
        g.add_node(name, move |s: &S| {
            let (effects, topic, pid) = (effects.clone(), s.topic.clone(), std::process::id());
            async move {
                trace(&effects, format!("{topic} {name} {pid} start"));
                tokio::time::sleep(delay).await;
                trace(&effects, format!("{topic} {name} {pid} end"));
                SUpdate::default().log(vec![name.to_owned()])
            }
        });
    }
    g.add_edge(START, "s1")
        .add_edge("s1", "s2")
        .add_edge("s2", "s3")
        .add_edge("s3", END);
    Ok(g.compile()?)
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args = args()?;
    let server = Server::scale_out_in(&args.postgres, &args.redis, &args.schema, &args.prefix)
        .await?
        .manager_config(args.manager.clone())
        .role(args.role)
        .graph("steps", steps(args.effects.clone(), args.node)?);
    if args.role == Role::Worker {
        println!("working as {}", std::process::id());
        return Ok(server.serve((args.host.as_str(), args.port)).await?);
    }
    let listener = tokio::net::TcpListener::bind((args.host.as_str(), args.port)).await?;
    println!("listening on http://{}", listener.local_addr()?);
    server.serve_on(listener, shutdown_signal()).await?;
    Ok(())
}
