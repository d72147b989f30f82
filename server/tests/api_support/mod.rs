//! What the API tests share: a real HTTP client over a served port ([`Client`]), an embedded
//! server on a fresh SQLite file ([`serve`]), and the captures' `chain` graph as a flow.

#![allow(dead_code)]

pub mod graph;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::Arc;
use weir_server::Server;

/// A response: status, headers, body (as JSON when it parses, else a string).
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub body: Value,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// `res` read whole: its body as JSON when it parses, else as a string.
    pub async fn read(res: hyper::Response<hyper::body::Incoming>) -> Reply {
        let status = res.status().as_u16();
        let headers = res.headers().clone();
        let bytes = res.into_body().collect().await.unwrap().to_bytes();
        let body =
            serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
        Reply { status, headers, body }
    }
}

/// A client of one served port (holding what the server keeps its data in: its directory, or
/// its PostgreSQL schema).
#[derive(Clone)]
pub struct Client {
    pub addr: SocketAddr,
    _keep: Arc<dyn std::any::Any + Send + Sync>,
}

impl Client {
    /// Sends one request on a fresh connection and reads the whole answer.
    pub async fn send(&self, method: &str, path: &str, headers: &[(&str, &str)], body: Vec<u8>) -> Reply {
        Reply::read(self.open(method, path, headers, body).await).await
    }

    /// Sends one request on a fresh connection; the answer's body is the caller's to read (an
    /// event stream that does not end, say).
    pub async fn open(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> hyper::Response<hyper::body::Incoming> {
        let stream = tokio::net::TcpStream::connect(self.addr).await.unwrap();
        let (mut sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
        tokio::spawn(conn);
        let mut req = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header("host", self.addr.to_string());
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        sender
            .send_request(req.body(Full::new(Bytes::from(body))).unwrap())
            .await
            .unwrap()
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.send("GET", path, &[], Vec::new()).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Reply {
        self.send(
            "POST",
            path,
            &[("content-type", "application/json")],
            body.to_string().into_bytes(),
        )
        .await
    }

    pub async fn patch(&self, path: &str, body: Value) -> Reply {
        self.send(
            "PATCH",
            path,
            &[("content-type", "application/json")],
            body.to_string().into_bytes(),
        )
        .await
    }

    pub async fn delete(&self, path: &str) -> Reply {
        self.send("DELETE", path, &[], Vec::new()).await
    }
}

/// An embedded server with the graph `chain`, its SQLite file in a fresh directory, on a free port
/// of 127.0.0.1; `body_limit` when given.
pub async fn serve(body_limit: Option<usize>) -> Client {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::embedded(dir.path().join("weir.db"))
        .await
        .unwrap()
        .graph("chain", graph::chain());
    if let Some(limit) = body_limit {
        server = server.body_limit(limit);
    }
    serving(server, Arc::new(dir)).await
}

/// A scaled-out server (the PostgreSQL of `WEIR_POSTGRES_URL` in a schema of its own, dropped
/// with the last clone of the client; the Redis of `WEIR_REDIS_URL` under a prefix of its own)
/// with the graph `chain`, on a free port of 127.0.0.1.
pub async fn serve_scaled_out() -> Client {
    serve_scaled_out_with(&redis_url()).await
}

/// The Redis of `WEIR_REDIS_URL`.
pub fn redis_url() -> String {
    std::env::var("WEIR_REDIS_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .expect("WEIR_REDIS_URL is not set: this test needs a Redis server, e.g. redis://127.0.0.1:6379")
}

/// [`serve_scaled_out`] with the Redis at `redis` (a proxy in front of the real one, say).
pub async fn serve_scaled_out_with(redis: &str) -> Client {
    let schema = weir_test_support::Schema::fresh("weir_api_test");
    let server = Server::scale_out_in(&schema.url, redis, &schema.name, &schema.name)
        .await
        .unwrap()
        .graph("chain", graph::chain());
    serving(server, Arc::new(schema)).await
}

/// A client of `server`, served on a free port of 127.0.0.1 until the test ends, keeping `keep`
/// (where the server's data lives) as long as a clone of it.
async fn serving(server: Server, keep: Arc<dyn std::any::Any + Send + Sync>) -> Client {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(server.serve_on(listener, std::future::pending()));
    Client { addr, _keep: keep }
}
