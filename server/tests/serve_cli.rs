//! `weir serve`'s refusals before it serves: a missing or bad config file (the message names the
//! file and the field), a bad flow, a role without a scaled-out backend.

use std::process::Command;

fn weir(dir: &std::path::Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_weir"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_missing_config_file_is_bad_usage_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = weir(dir.path(), &["serve", "--port", "0"]);
    assert_eq!(code, 2);
    assert!(err.starts_with("error: weir.json: cannot read it:"), "{err}");
}

#[test]
fn a_config_error_names_the_field() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("weir.json"),
        r#"{"graphs": {"chain": "./graph.py:chain"}}"#,
    )
    .unwrap();
    let (code, err) = weir(dir.path(), &["serve"]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with("error: weir.json: field `graphs.chain`: `./graph.py:chain` is not a flow file"),
        "{err}"
    );
    std::fs::write(
        dir.path().join("my.json"),
        r#"{"graphs": {"chain": "flow.json"}, "ttl": {"strategy": "keep"}}"#,
    )
    .unwrap();
    std::fs::write(dir.path().join("flow.json"), "{}").unwrap();
    let (code, err) = weir(dir.path(), &["serve", "--config", "my.json"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("field `ttl.strategy`: `keep` is not a TTL strategy"),
        "{err}"
    );
}

#[test]
fn a_bad_flow_is_reported_with_its_graph_and_path() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("weir.json"), r#"{"graphs": {"chain": "flow.json"}}"#).unwrap();
    std::fs::write(
        dir.path().join("flow.json"),
        r#"{"nodes": [{"id": "a", "type": "nope"}], "edges": []}"#,
    )
    .unwrap();
    let (code, err) = weir(dir.path(), &["serve"]);
    assert_eq!(code, 1);
    assert!(err.contains("(graph `chain`)"), "{err}");
}

#[test]
fn a_role_needs_the_scaled_out_backends() {
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = weir(dir.path(), &["serve", "--role", "worker"]);
    assert_eq!(code, 2);
    assert!(err.contains("give `--postgres URL --redis URL` too"), "{err}");
    let (code, err) = weir(dir.path(), &["serve", "--postgres", "postgres://x"]);
    assert_eq!(code, 2);
    assert!(err.contains("--redis"), "{err}");
}

#[test]
fn weir_serve_answers_on_its_port_with_the_config_s_flows() {
    use std::io::{BufRead, BufReader, Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let flow = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/flows/refine_loop.json");
    std::fs::copy(flow, dir.path().join("refine.json")).unwrap();
    std::fs::write(dir.path().join("weir.json"), r#"{"graphs": {"refine": "refine.json"}}"#).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_weir"))
        .current_dir(dir.path())
        .args(["serve", "--port", "0"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let line = lines.next().unwrap().unwrap();
    // `weir serve: listening on http://ADDR (studio: http://ADDR/studio/)`.
    let addr = line
        .strip_prefix("weir serve: listening on http://")
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("{line}"));
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST /assistants/search HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{{}}"
    )
    .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(reply.starts_with("HTTP/1.1 200 OK"), "{reply}");
    assert!(reply.contains(r#""graph_id":"refine""#), "{reply}");
    assert!(dir.path().join("weir.db").is_file());
}
