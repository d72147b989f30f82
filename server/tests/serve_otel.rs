//! `weir serve` with an `otel` section in its config exports its runs' spans over OTLP: the run
//! span carries the server's run id and thread, under the configured service name, and the spans
//! still buffered are sent when the server stops on SIGTERM.

#[path = "../../agent/tests/collector/mod.rs"]
mod collector;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

const FLOW: &str = r#"{"nodes": [{"id": "start", "type": "start"},
    {"id": "hi", "type": "set", "data": {"assign": {"reply": "hi {{ name }}"}}},
    {"id": "end", "type": "end"}],
  "edges": [{"id": "e1", "source": "start", "target": "hi"}, {"id": "e2", "source": "hi", "target": "end"}],
  "state": {"name": {"type": "string"}, "reply": {"type": "string"}}}"#;

#[test]
fn weir_serve_exports_the_run_span_with_the_server_s_run_id_to_the_configured_collector() {
    let collector = collector::Collector::start();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hello.json"), FLOW).unwrap();
    let config = format!(
        r#"{{"graphs": {{"hello": "hello.json"}}, "otel": {{"endpoint": "{}", "service_name": "served"}}}}"#,
        collector.base_url
    );
    std::fs::write(dir.path().join("weir.json"), config).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_weir"))
        .current_dir(dir.path())
        .args(["serve", "--port", "0"])
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_SERVICE_NAME")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut said = Vec::new();
    let addr = loop {
        let line = lines.next().expect("weir serve said it listens").unwrap();
        // `weir serve: listening on http://ADDR (studio: http://ADDR/studio/)`.
        if let Some(rest) = line.strip_prefix("weir serve: listening on http://") {
            break rest.split_whitespace().next().unwrap().to_owned();
        }
        said.push(line);
    };
    assert_eq!(said, ["weir serve: exporting the runs' spans over OTLP"]);

    let body = r#"{"assistant_id": "hello", "input": {"name": "otel"}}"#;
    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        stream,
        "POST /runs/wait HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200 OK"), "{reply}");
    assert!(reply.contains(r#""reply":"hi otel""#), "{reply}");
    // `content-location: /threads/THREAD/runs/RUN`.
    let location = reply
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-location: ")
                .map(str::to_owned)
        })
        .unwrap_or_else(|| panic!("{reply}"));
    let parts: Vec<&str> = location.trim().split('/').collect();
    let [_, "threads", thread_id, "runs", run_id] = parts[..] else {
        panic!("{location}")
    };

    // SIGTERM: the server stops cleanly, and sends the spans it holds.
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    assert!(child.wait().unwrap().success());

    let spans = collector.spans();
    let runs: Vec<_> = spans.iter().filter(|s| s.name == "weir.run").collect();
    assert_eq!(runs.len(), 1, "{spans:#?}");
    let run = runs[0];
    assert_eq!(run.service, "served");
    assert_eq!(run.str("run_id"), Some(run_id));
    assert_eq!(run.str("thread"), Some(thread_id));
    assert_eq!((run.str("status"), run.status_code), (Some("ok"), 1));
    let hi = spans
        .iter()
        .find(|s| s.name == "weir.task" && s.str("node") == Some("hi"));
    let hi = hi.unwrap_or_else(|| panic!("no task span of node `hi`: {spans:#?}"));
    assert_eq!(hi.trace_id, run.trace_id);
}
