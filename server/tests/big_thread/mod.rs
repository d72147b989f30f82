//! A long, heavy thread for the studio's speed test: an embedded server (one SQLite file) serving
//! `notebook`, whose node `write` appends a note, with a thread of [`CHECKPOINTS`] checkpoints
//! whose state has grown to ~10 MB (a note of [`NOTE_CHARS`] characters per checkpoint). The
//! checkpoints are written in one `bulk_update_state` through the server's own checkpointer
//! (one superstep each, as if `write` had run), not by as many runs; the last one is an update
//! through the API, so that the thread's row holds its values and status as a real thread's
//! does.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::path::Path;
use tower::ServiceExt;
use weir::prelude::*;
use weir::StateEdit;
use weir_server::Server;

/// How many checkpoints the thread has.
pub const CHECKPOINTS: usize = 10_000;

/// The length of each note: 10,000 of them make the state ~10 MB.
pub const NOTE_CHARS: usize = 1_000;

/// The notebook's state.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Notebook {
    /// What it is about.
    pub title: String,
    /// A note per step.
    #[reducer(append)]
    pub notes: Vec<String>,
}

/// `notebook`: `write` appends a note.
fn notebook() -> CompiledGraph<Notebook> {
    let mut g = GraphBuilder::<Notebook>::new();
    g.add_node("write", |s: &Notebook| {
        NotebookUpdate::default().notes(vec![note(s.notes.len())])
    });
    g.add_edge(START, "write").add_edge("write", END);
    g.compile().expect("the notebook graph compiles")
}

/// Note `i`: its number, then filler up to [`NOTE_CHARS`].
pub fn note(i: usize) -> String {
    let head = format!("note {i}: ");
    format!(
        "{head}{}",
        "lorem ipsum "
            .repeat(NOTE_CHARS)
            .get(..NOTE_CHARS - head.len())
            .unwrap_or_default()
    )
}

/// The server, listening, and the thread.
pub struct BigThread {
    /// Where the server listens: `http://127.0.0.1:PORT`.
    pub url: String,
    /// The thread.
    pub thread_id: String,
    /// The head's values, serialized, in bytes.
    pub state_bytes: usize,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for BigThread {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Sends `method path body` to the router and returns the answer's JSON, failing on an error.
async fn call(app: &axum::Router, method: &str, path: &str, body: Value) -> Value {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .expect("a request");
    let answer = app.clone().oneshot(request).await.expect("the router answers");
    let status = answer.status();
    let bytes = answer.into_body().collect().await.expect("the body").to_bytes();
    assert_eq!(
        status,
        StatusCode::OK,
        "{method} {path}: {}",
        String::from_utf8_lossy(&bytes)
    );
    serde_json::from_slice(&bytes).expect("JSON")
}

/// Makes the thread on a server on `db` and serves it on a port of the system's choosing.
pub async fn serve(db: &Path) -> BigThread {
    let server = Server::embedded(db).await.expect("the embedded server opens");
    let graph = notebook();
    let writer = graph.with_checkpointer_arc(server.checkpointer());
    let app = server.graph("notebook", graph).router().await.expect("the router");

    let thread = call(&app, "POST", "/threads", json!({"metadata": {"graph_id": "notebook"}})).await;
    let thread_id = thread["thread_id"].as_str().expect("a thread id").to_owned();
    let config = RunConfig::thread(&thread_id);
    let first = vec![StateEdit::new(
        NotebookUpdate::default()
            .title("a long notebook".to_owned())
            .notes(vec![note(0)]),
        Some("write"),
    )];
    let rest = (1..CHECKPOINTS - 1).map(|i| {
        vec![StateEdit::new(
            NotebookUpdate::default().notes(vec![note(i)]),
            Some("write"),
        )]
    });
    writer
        .bulk_update_state(&config, std::iter::once(first).chain(rest).collect())
        .await
        .expect("the checkpoints are written");
    let last = json!({"values": {"notes": [note(CHECKPOINTS - 1)]}, "as_node": "write"});
    call(&app, "POST", &format!("/threads/{thread_id}/state"), last).await;
    let head = call(&app, "GET", &format!("/threads/{thread_id}/state"), Value::Null).await;
    assert_eq!(head["values"]["notes"].as_array().map(Vec::len), Some(CHECKPOINTS));
    let state_bytes = head["values"].to_string().len();

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let url = format!("http://{}", listener.local_addr().expect("its address"));
    let server = tokio::spawn(async move {
        axum::serve(listener, app).await.expect("the server serves");
    });
    BigThread {
        url,
        thread_id,
        state_bytes,
        server,
    }
}
