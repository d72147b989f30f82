//! The OpenAI-compatible embeddings against a local stub of `POST /v1/embeddings`: batches,
//! order by index, the key and model sent, errors naming the model and the status, and a store
//! searching by meaning with them.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use weir_agent::model::{ModelError, OpenAiChat, OpenAiEmbeddings};
use weir_runtime::store::{Embeddings, InMemoryStore, IndexConfig, SearchOp, Store, StoreConfig};

/// What the stub answers: vectors (reversed in order, each with its index), or an error.
#[derive(Clone)]
enum Mode {
    Vectors,
    Status(u16, &'static str),
    TooFew,
    Hang,
}

struct Seen {
    mode: Mode,
    bodies: Mutex<Vec<Value>>,
    keys: Mutex<Vec<Option<String>>>,
}

/// A vector of a text: its length, its count of `a`s, and 1 — distinct per test text.
fn vector(text: &str) -> Vec<f32> {
    let a = text.matches('a').count() as f32;
    vec![text.len() as f32, a, 1.0]
}

async fn embeddings(State(seen): State<Arc<Seen>>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    let key = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    seen.keys.lock().unwrap().push(key);
    seen.bodies.lock().unwrap().push(body.clone());
    let texts: Vec<String> = serde_json::from_value(body["input"].clone()).unwrap();
    match seen.mode.clone() {
        Mode::Status(code, text) => (StatusCode::from_u16(code).unwrap(), text).into_response(),
        Mode::Hang => std::future::pending().await,
        Mode::TooFew => Json(json!({"data": [{"embedding": [1.0], "index": 0}]})).into_response(),
        Mode::Vectors => {
            // Out of order on purpose: the adapter must place each by its index.
            let data: Vec<Value> = texts
                .iter()
                .enumerate()
                .rev()
                .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": vector(t)}))
                .collect();
            Json(json!({"object": "list", "data": data, "model": body["model"]})).into_response()
        }
    }
}

async fn stub(mode: Mode) -> (String, Arc<Seen>) {
    let seen = Arc::new(Seen {
        mode,
        bodies: Mutex::default(),
        keys: Mutex::default(),
    });
    let app = Router::new()
        .route("/v1/embeddings", post(embeddings))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/v1"), seen)
}

fn texts(n: usize) -> Vec<String> {
    (0..n).map(|i| "a".repeat(i % 4) + &"b".repeat(i)).collect()
}

#[tokio::test]
async fn texts_go_in_batches_and_come_back_in_order() {
    let (url, seen) = stub(Mode::Vectors).await;
    let e = OpenAiEmbeddings::new("embed-model")
        .base_url(&url)
        .api_key("sk-test")
        .batch_size(3)
        .dimensions(3);
    let input = texts(7);
    let vectors = e.embed_documents(&input).await.unwrap();
    let want: Vec<Vec<f32>> = input.iter().map(|t| vector(t)).collect();
    assert_eq!(vectors, want);
    let bodies = seen.bodies.lock().unwrap().clone();
    let sizes: Vec<usize> = bodies.iter().map(|b| b["input"].as_array().unwrap().len()).collect();
    assert_eq!(sizes, [3, 3, 1]);
    assert_eq!(bodies[0]["model"], "embed-model");
    assert_eq!(bodies[0]["dimensions"], 3);
    assert!(seen
        .keys
        .lock()
        .unwrap()
        .iter()
        .all(|k| k.as_deref() == Some("Bearer sk-test")));
    let q = e.embed_query("aab").await.unwrap();
    assert_eq!(q, vector("aab"));
}

#[tokio::test]
async fn a_chat_models_endpoint_is_reused() {
    let (url, seen) = stub(Mode::Vectors).await;
    let chat = OpenAiChat::new("chat-model").base_url(&url).api_key("sk-chat");
    let e = chat.embeddings("embed-model");
    assert_eq!(e.embed_query("ab").await.unwrap(), vector("ab"));
    assert_eq!(seen.keys.lock().unwrap()[0].as_deref(), Some("Bearer sk-chat"));
    assert_eq!(seen.bodies.lock().unwrap()[0]["model"], "embed-model");
}

#[tokio::test]
async fn failures_name_the_model_and_the_status() {
    let (url, _) = stub(Mode::Status(429, "slow down")).await;
    let e = OpenAiEmbeddings::new("embed-model").base_url(&url);
    let err = e.embed_documents(&texts(2)).await.unwrap_err();
    let err = err.downcast::<ModelError>().unwrap();
    assert_eq!(
        err.to_string(),
        "model `embed-model` answered HTTP status 429: slow down"
    );
    assert!(err.is_retryable());

    let (url, _) = stub(Mode::TooFew).await;
    let err = OpenAiEmbeddings::new("embed-model")
        .base_url(&url)
        .embed_documents(&texts(2))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("model `embed-model` (HTTP status 200)")
            && err.to_string().contains("1 embeddings for 2 texts"),
        "{err}"
    );

    let (url, _) = stub(Mode::Hang).await;
    let err = OpenAiEmbeddings::new("embed-model")
        .base_url(&url)
        .timeout(Duration::from_millis(100))
        .embed_query("x")
        .await
        .unwrap_err();
    assert!(err.downcast::<ModelError>().unwrap().is_timeout());
}

#[tokio::test]
async fn a_store_searches_by_meaning_with_them() {
    let (url, _) = stub(Mode::Vectors).await;
    let e = OpenAiEmbeddings::new("embed-model").base_url(&url);
    let config = StoreConfig::default().index(IndexConfig::new(3, e).fields(["text"]));
    let store = InMemoryStore::with_config(config);
    store
        .put(&["docs"], "long", json!({"text": "bbbbbbbbbbbbbbbbbbbb"}))
        .await
        .unwrap();
    store.put(&["docs"], "aaa", json!({"text": "aaab"})).await.unwrap();
    let found = store.search(SearchOp::new(&["docs"]).query("aaab")).await.unwrap();
    assert_eq!(found[0].item.key, "aaa");
    assert!(found[0].score.unwrap() > found[1].score.unwrap());
}
