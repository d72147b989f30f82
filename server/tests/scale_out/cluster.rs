//! The processes of a scaled-out deployment under test: API and worker processes of the `scale`
//! example on a fresh PostgreSQL schema and Redis prefix, a small HTTP client for them, and the
//! effects file the graph's nodes write.

use hyper::body::Bytes;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// One process of the deployment, killed when dropped.
pub struct Process {
    pub child: Child,
    /// The API's base URL (`http://127.0.0.1:port`), empty for a worker.
    pub url: String,
}

impl Process {
    /// Its OS process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM (graceful shutdown) and waits for the process to exit.
    pub fn terminate(&mut self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -TERM failed");
        let exit = self.child.wait().expect("the process is waited for");
        assert!(exit.success(), "the worker exited badly after SIGTERM: {exit}");
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A deployment: where its processes keep their data, and how they are started. Its schema is
/// dropped with it (drop its processes first).
pub struct Cluster {
    binary: PathBuf,
    /// The schema of its tables and checkpoints, whose name is also its Redis prefix.
    schema: weir_test_support::Schema,
    redis: String,
    pub effects: PathBuf,
    _dir: tempfile::TempDir,
    /// Extra flags for every process (`--node-ms`, `--heartbeat-ms`, …).
    pub flags: Vec<String>,
}

impl Cluster {
    /// A deployment on `WEIR_POSTGRES_URL` and `WEIR_REDIS_URL`, in a fresh schema and prefix.
    pub fn new(flags: &[&str]) -> Self {
        Self::on_redis(std::env::var("WEIR_REDIS_URL").expect("WEIR_REDIS_URL"), flags)
    }

    /// A deployment on `WEIR_POSTGRES_URL` and the Redis (or Redis Cluster) of `redis`, in a
    /// fresh schema and prefix.
    pub fn on_redis(redis: String, flags: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("a temp dir");
        Self {
            binary: crate::served::example_binary("scale"),
            schema: weir_test_support::Schema::fresh("scale"),
            redis,
            effects: dir.path().join("effects.log"),
            _dir: dir,
            flags: flags.iter().map(|f| (*f).to_owned()).collect(),
        }
    }

    /// The prefix of its Redis keys.
    pub fn prefix(&self) -> &str {
        &self.schema.name
    }

    /// Starts a process with `role`; returns once it listens (API) or works (worker).
    pub fn start(&self, role: &str) -> Process {
        let mut child = Command::new(&self.binary)
            .args(["--postgres", &self.schema.url, "--redis", &self.redis])
            .args([
                "--schema",
                &self.schema.name,
                "--prefix",
                &self.schema.name,
                "--role",
                role,
            ])
            .arg("--effects")
            .arg(&self.effects)
            .args(&self.flags)
            .stdout(Stdio::piped())
            .spawn()
            .expect("the example starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("the {role} process exited before it was ready"))
            .expect("its stdout");
        let url = line.strip_prefix("listening on ").unwrap_or_default().trim().to_owned();
        assert!(
            !url.is_empty() || line.starts_with("working as "),
            "unexpected first line `{line}`"
        );
        Process { child, url }
    }

    /// The effects file's lines: `(topic, node, pid, "start"|"end")`.
    pub fn effects(&self) -> Vec<(String, String, u32, String)> {
        let text = std::fs::read_to_string(&self.effects).unwrap_or_default();
        text.lines()
            .map(|l| {
                let parts: Vec<&str> = l.split(' ').collect();
                assert_eq!(parts.len(), 4, "a malformed effects line `{l}`");
                let pid = parts[2].parse().expect("a pid");
                (parts[0].to_owned(), parts[1].to_owned(), pid, parts[3].to_owned())
            })
            .collect()
    }
}

/// An HTTP answer: status and body.
pub struct Reply {
    pub status: u16,
    pub body: Bytes,
}

impl Reply {
    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
}

/// How long one request may take before the test fails naming it (a run that never ends would
/// otherwise hang the suite).
const CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// Sends one request to the API at `base` on a connection of its own; reads the whole body.
pub async fn call(base: &str, method: &str, path: &str, body: Option<&Value>) -> Reply {
    let request = send(base, method, path, body);
    tokio::time::timeout(CALL_TIMEOUT, request)
        .await
        .unwrap_or_else(|_| panic!("{method} {base}{path} got no whole answer in {CALL_TIMEOUT:?}"))
}

async fn send(base: &str, method: &str, path: &str, body: Option<&Value>) -> Reply {
    use http_body_util::BodyExt;
    let res = request(base, method, path, body).await;
    let status = res.status().as_u16();
    let body = res.into_body().collect().await.expect("the whole body").to_bytes();
    Reply { status, body }
}

/// Sends one request to the API at `base` on a connection of its own; answers as soon as the
/// head has come, the body to be read as it comes (a stream that never ends).
pub async fn request(
    base: &str,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> hyper::Response<hyper::body::Incoming> {
    let authority = base.trim_start_matches("http://");
    let stream = tokio::net::TcpStream::connect(authority)
        .await
        .expect("the API accepts");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
        .await
        .expect("an HTTP handshake");
    tokio::spawn(conn);
    let bytes = body.map(|b| b.to_string()).unwrap_or_default();
    let req = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", authority)
        .header("content-type", "application/json")
        .body(http_body_util::Full::new(Bytes::from(bytes)))
        .expect("a request");
    sender.send_request(req).await.expect("an answer")
}

/// The SSE frames of a stream's body: `(event, data, id)`.
pub fn frames(body: &[u8]) -> Vec<(String, Value, Option<String>)> {
    let text = String::from_utf8_lossy(body).replace("\r\n", "\n");
    let mut out = Vec::new();
    for frame in text.split("\n\n") {
        let (mut event, mut data, mut id) = (None, String::new(), None);
        for line in frame.lines() {
            if let Some(v) = line.strip_prefix("event: ") {
                event = Some(v.to_owned());
            } else if let Some(v) = line.strip_prefix("data: ") {
                data.push_str(v);
            } else if let Some(v) = line.strip_prefix("id: ") {
                id = Some(v.to_owned());
            }
        }
        if let Some(event) = event {
            let data = serde_json::from_str(&data).unwrap_or(Value::String(data));
            out.push((event, data, id));
        }
    }
    out
}
