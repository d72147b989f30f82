//! What the bridge's tests share: the anchor graphs of `graph.py` built in Rust (chain a→b, hitl
//! with an interrupt, failing, parent with a subgraph), a SQLite saver in a temporary
//! directory, running a request to its end, and the captures of `langgraph dev` read back.

// Each test binary uses part of it.
#![allow(dead_code, unused_imports)]

pub use futures::StreamExt;
pub use serde::{Deserialize, Serialize};
pub use serde_json::{json, Value};
pub use std::sync::Arc;
pub use weir::checkpoint::{Checkpointer, MemorySaver, SqliteSaver};
pub use weir::prelude::*;
pub use weir_server::graph::{
    GraphError, HistoryQuery, Mode, RunEnd, RunEvent, RunRequest, Serve, ServedGraph, StateUpdate,
};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct S {
    pub topic: String,
    #[reducer(append)]
    pub log: Vec<String>,
}

pub fn a(s: &S, ctx: &Context) -> impl std::future::Future<Output = SUpdate> + Send + 'static {
    let (ctx, topic) = (ctx.clone(), s.topic.clone());
    async move {
        ctx.emit(json!({"progress": "a running"})).await;
        SUpdate::default().log(vec![format!("a:{topic}")])
    }
}

pub fn ask(_: &S, ctx: &Context) -> Result<SUpdate, BoxError> {
    let answer: String = ctx.interrupt(json!({"question": "ok?"}))?;
    Ok(SUpdate::default().log(vec![format!("ask:{answer}")]))
}

pub fn chain() -> CompiledGraph<S> {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("a", a);
    g.add_node("b", |_: &S| SUpdate::default().log(vec!["b".into()]));
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END);
    g.compile().unwrap()
}

pub fn hitl() -> CompiledGraph<S> {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("a", a);
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

pub fn failing() -> CompiledGraph<S> {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("boom", |_: &S| -> Result<SUpdate, ValueError> {
        Err(ValueError("boom in node".to_owned()))
    });
    g.add_edge(START, "boom").add_edge("boom", END);
    g.compile().unwrap()
}

pub fn parent() -> CompiledGraph<S> {
    let mut g = GraphBuilder::<S>::new();
    g.add_subgraph(
        "inner",
        chain(),
        |s: &S| SUpdate::default().topic(s.topic.clone()),
        |t: &S| SUpdate::default().topic(t.topic.clone()).log(t.log.clone()),
    );
    g.add_node("ask", ask);
    g.add_edge(START, "inner").add_edge("inner", "ask").add_edge("ask", END);
    g.compile().unwrap()
}

/// A SQLite saver in a temporary directory (kept alive with it).
pub fn sqlite() -> (tempfile::TempDir, Arc<dyn Checkpointer>) {
    let dir = tempfile::tempdir().unwrap();
    let saver = SqliteSaver::open(dir.path().join("weir.db")).unwrap();
    (dir, Arc::new(saver))
}

pub fn request(thread: &str, input: Value, modes: &[Mode]) -> RunRequest {
    RunRequest {
        thread_id: thread.into(),
        run_id: "run-1".into(),
        input: Some(input),
        modes: modes.to_vec(),
        ..RunRequest::default()
    }
}

/// The run's stream events (name, data) and its end.
pub async fn run(g: &Arc<dyn ServedGraph>, r: RunRequest) -> (Vec<(String, Value)>, RunEnd) {
    let mut events = Vec::new();
    let mut end = None;
    let mut stream = g.run(r).unwrap();
    while let Some(e) = stream.next().await {
        match e {
            RunEvent::Stream { event, data } => events.push((event, data)),
            RunEvent::End(e) => {
                assert!(end.replace(e).is_none(), "one end");
            }
        }
    }
    (events, end.expect("the stream ends with an end"))
}

/// A capture's events after `metadata`, each namespace's task id replaced by `*`, interrupt ids
/// by `*`.
pub fn capture(name: &str) -> Vec<(String, Value)> {
    let text = std::fs::read_to_string(format!("{}/tests/captures/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let mut out = Vec::new();
    let mut event = String::new();
    for line in text.lines() {
        if let Some(e) = line.strip_prefix("event: ") {
            event = e.to_owned();
        } else if let Some(d) = line.strip_prefix("data: ") {
            if event != "metadata" {
                out.push((event.clone(), serde_json::from_str(d).unwrap()));
            }
        }
    }
    normalize(out)
}

pub fn normalize(events: Vec<(String, Value)>) -> Vec<(String, Value)> {
    events
        .into_iter()
        .map(|(name, mut data)| {
            let name = match name.split_once('|') {
                Some((mode, ns)) => format!("{mode}|{}:*", ns.split(':').next().unwrap()),
                None => name,
            };
            if let Some(list) = data.get_mut("__interrupt__").and_then(Value::as_array_mut) {
                for i in list {
                    i["id"] = json!("*");
                }
            }
            (name, data)
        })
        .collect()
}
