//! `weir serve`: LangGraph's server API over weir graphs, so that the official `langgraph-sdk`
//! (Python and JS), agent-chat-ui's `useStream` and LangGraph Studio work against a weir server
//! unchanged. The contract is `../shared/langgraph/server/README.md`, observed on the real server.
//!
//! The crate is in layers, each using only those above it:
//! - [`cron`]: cron schedules (croniter's syntax) and when they next fire in a time zone;
//! - [`model`]: the API's objects (assistants, threads, runs, crons) as they cross the wire;
//! - [`graph`]: the JSON bridge, [`ServedGraph`](graph::ServedGraph): what the server asks of a
//!   graph (run from JSON with LangGraph-shaped events, state, history, drawing, schemas);
//! - [`db`]: the server's tables (assistants, threads, runs as the queue), SQLite or PostgreSQL;
//! - [`bus`]: waking, cancellation, stream fan-out and heartbeats, in process or over Redis;
//! - [`runs`]: the workers and the multitask strategies;
//! - [`api`]: the HTTP routes;
//! - [`Server`]: the library API that puts them together, and [`config`]: `weir serve`'s file.
//!
//! # Quick start
//!
//! Serve a graph (a typed [`CompiledGraph`](weir_runtime::CompiledGraph) or a JSON
//! [`Flow`](weir_flow::Flow)) on an embedded server, then talk to it as any LangGraph client:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//! use weir_flow::{Flow, LoadOptions, Registry};
//! use weir_server::Server;
//!
//! let flow = r#"{"nodes": [{"id": "start", "type": "start"},
//!                          {"id": "hi", "type": "set", "data": {"assign": {"reply": "hi {{ name }}"}}},
//!                          {"id": "end", "type": "end"}],
//!                "edges": [{"id": "e1", "source": "start", "target": "hi"},
//!                          {"id": "e2", "source": "hi", "target": "end"}],
//!                "state": {"name": {"type": "string"}, "reply": {"type": "string"}}}"#;
//! let flow = Flow::load(flow, &Registry::new(), LoadOptions::default())?;
//! let dir = tempfile::tempdir()?;
//! let server = Server::embedded(dir.path().join("weir.db")).await?.graph("hello", flow);
//!
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let addr = listener.local_addr()?;
//! tokio::spawn(server.serve_on(listener, std::future::pending()));
//!
//! let mut http = tokio::net::TcpStream::connect(addr).await?;
//! http.write_all(b"GET /ok HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").await?;
//! let mut reply = String::new();
//! http.read_to_string(&mut reply).await?;
//! assert!(reply.starts_with("HTTP/1.1 200 OK"));
//! assert!(reply.ends_with(r#"{"ok":true,"services":{}}"#));
//! # Ok(())
//! # }
//! ```
//!
//! `weir serve --config weir.json` does the same from the command line, for the flows a config
//! file names ([`config`]).

#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]
#![forbid(unsafe_code)]

pub mod api;
pub mod bus;
pub mod config;
pub mod cron;
pub mod db;
pub mod graph;
pub mod model;
pub mod runs;
mod server;
mod studio;

pub use server::{listen, shutdown_signal, Role, ServeError, Server};

/// The OTLP exporter of the runs' spans (feature `otel`): `weir serve --otel` installs it.
#[cfg(feature = "otel")]
pub use weir::otel;
