//! A local OpenAI-compatible server for the tests: `POST /v1/chat/completions` answers with the
//! next scripted reply (a streamed answer, an HTTP error, a stream cut short, or nothing at all)
//! and records each request body.

#![allow(dead_code)]

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use futures::{StreamExt, TryStreamExt};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// One scripted reply.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A 200 event stream: each item is sent as its own piece of the body, then the body ends.
    Stream(Vec<String>),
    /// An HTTP error with this body.
    Status(u16, String),
    /// Never answers.
    Hang,
    /// A 200 event stream that sends these pieces, then stalls without ending.
    Stall(Vec<String>),
}

#[derive(Default)]
struct Script {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Value>>,
}

/// A running stub.
pub struct Stub {
    /// `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    script: Arc<Script>,
}

impl Stub {
    /// Starts a stub on a free port of 127.0.0.1 with `replies`, in order.
    pub async fn start(replies: Vec<Reply>) -> Self {
        let script = Arc::new(Script {
            replies: Mutex::new(replies.into()),
            requests: Mutex::default(),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(complete))
            .with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self {
            base_url: format!("http://{addr}/v1"),
            script,
        }
    }

    /// The request bodies received, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.script.requests.lock().unwrap().clone()
    }
}

async fn complete(State(script): State<Arc<Script>>, body: axum::Json<Value>) -> Response {
    script.requests.lock().unwrap().push(body.0);
    let reply = script.replies.lock().unwrap().pop_front();
    match reply {
        None => (StatusCode::GONE, "the stub's script is over").into_response(),
        Some(Reply::Status(code, text)) => (StatusCode::from_u16(code).unwrap(), text).into_response(),
        Some(Reply::Hang) => std::future::pending().await,
        Some(Reply::Stream(pieces)) => stream(futures::stream::iter(pieces.into_iter().map(Ok)).boxed()),
        Some(Reply::Stall(pieces)) => {
            let sent = futures::stream::iter(pieces.into_iter().map(Ok));
            stream(sent.chain(futures::stream::pending()).boxed())
        }
    }
}

/// A 200 event stream sending `pieces`, each as its own piece of the body.
fn stream(pieces: futures::stream::BoxStream<'static, Result<String, std::io::Error>>) -> Response {
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(pieces.map_ok(Bytes::from)))
        .unwrap()
}

/// A server-sent event carrying `data`.
pub fn event(data: &Value) -> String {
    format!("data: {data}\n\n")
}

/// The end marker.
pub fn done() -> String {
    "data: [DONE]\n\n".into()
}

/// A `chat.completion.chunk` with `delta` and optional finish reason.
pub fn chunk(id: &str, delta: Value, finish: Option<&str>) -> Value {
    json!({
        "id": id, "object": "chat.completion.chunk", "model": "stub-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    })
}

/// A text delta.
pub fn text(id: &str, t: &str) -> String {
    event(&chunk(id, json!({"content": t}), None))
}

/// A tool-call delta: call `index`, with id and name when given, and an arguments fragment.
pub fn call(id: &str, index: u32, call_id: Option<&str>, name: Option<&str>, args: &str) -> String {
    let mut f = json!({"arguments": args});
    if let Some(n) = name {
        f["name"] = json!(n);
    }
    let mut c = json!({"index": index, "function": f});
    if let Some(cid) = call_id {
        c["id"] = json!(cid);
        c["type"] = json!("function");
    }
    event(&chunk(id, json!({"tool_calls": [c]}), None))
}

/// The finish event.
pub fn finish(id: &str, reason: &str) -> String {
    event(&chunk(id, json!({}), Some(reason)))
}

/// The usage event (`stream_options.include_usage`): no choices.
pub fn usage(id: &str, prompt: u64, completion: u64) -> String {
    event(&json!({
        "id": id, "object": "chat.completion.chunk", "model": "stub-model", "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }))
}

/// A whole streamed text answer: words, finish, usage, end marker.
pub fn answer(id: &str, words: &[&str], prompt: u64, completion: u64) -> Reply {
    let mut pieces: Vec<String> = words.iter().map(|w| text(id, w)).collect();
    pieces.push(finish(id, "stop"));
    pieces.push(usage(id, prompt, completion));
    pieces.push(done());
    Reply::Stream(pieces)
}
