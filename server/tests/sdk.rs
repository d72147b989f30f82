//! The official Python client against weir: runs the pytest suite of `tests/sdk` (langgraph-sdk
//! 0.4.14, every tier A/B call, stream modes against the real server's captures, HITL across a
//! restart, multitask, cancel, bad input) and `shared/langgraph/server/anchor/probe.py`,
//! unchanged, against the example server (`examples/serve.rs`) on a fresh SQLite file.
//!
//! Both need a Python venv with the suite's requirements: `.ci/run` makes it with
//! `tests/sdk/setup.sh` and exports its python as `WEIR_SDK_PYTHON`. Without it the tests are
//! ignored; run with `--include-ignored` but without `WEIR_SDK_PYTHON`, they fail naming it.

mod served;

use served::{example_server, Served};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;

const NEEDS: &str = "needs WEIR_SDK_PYTHON: run .ci/run";

/// The venv's python, or a panic that says how to get one.
fn python() -> String {
    std::env::var("WEIR_SDK_PYTHON")
        .unwrap_or_else(|_| panic!("WEIR_SDK_PYTHON is not set: make the venv with server/tests/sdk/setup.sh"))
}

/// A port that was free a moment ago (the suite restarts the server on it, so it must be fixed).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

#[test]
#[ignore = "needs WEIR_SDK_PYTHON: run .ci/run"]
fn python_sdk_suite_passes_against_the_example_server() {
    let python = python();
    let server = example_server();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let port = free_port();
    let command = format!(
        "exec '{}' --db '{}' --port {port} --slow-ms 3000",
        server.display(),
        dir.path().join("weir.db").display()
    );
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("sdk");
    let status = Command::new(&python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE"])
        .current_dir(&suite)
        .env("WEIR_SERVER_URL", format!("http://127.0.0.1:{port}"))
        .env("WEIR_SERVER_CMD", command)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {python} ({NEEDS}): {e}"));
    assert!(
        status.success(),
        "the SDK suite failed against weir (its output is above)"
    );
}

#[test]
#[ignore = "needs WEIR_SDK_PYTHON: run .ci/run"]
fn anchor_probe_runs_unchanged_against_the_example_server() {
    let python = python();
    let probe = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/langgraph/server/anchor/probe.py");
    assert!(
        probe.exists(),
        "no probe at {} (shared/ beside the repository)",
        probe.display()
    );
    let dir = tempfile::tempdir().expect("a temporary directory");
    let served = Served::start(&dir.path().join("weir.db"), &[]);
    let out = Command::new(&python)
        .arg(&probe)
        .args([served.url.as_str(), "20"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python} ({NEEDS}): {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "probe.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = |prefix: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("probe printed no `{prefix}` line"))
            .to_owned()
    };
    assert_eq!(
        line("assistants:"),
        "assistants: ['agent', 'chain', 'chatbot', 'failing', 'hitl', 'parent', 'slow']"
    );
    assert_eq!(line("graph nodes:"), "graph nodes: ['__start__', 'a', 'b', '__end__']");
    // dicts as Python prints them; their key order is the server's JSON order, which the SDK keeps
    let has = |prefix: &str, parts: &[&str]| {
        let l = line(prefix);
        assert!(parts.iter().all(|p| l.contains(p)), "`{l}` lacks one of {parts:?}");
    };
    has("wait ->", &["'topic': 'x'", "'log': ['a:x', 'b']"]);
    assert_eq!(
        line("stream events:"),
        "stream events: ['metadata', 'values', 'updates', 'values', 'updates', 'values']"
    );
    has(
        "state values:",
        &["'topic': 'y'", "'log': ['a:x', 'b', 'a:y', 'b']", "next: []"],
    );
    assert_eq!(line("history len:"), "history len: 8");
    assert_eq!(
        line("hitl paused:"),
        "hitl paused: next ['ask'] interrupts [{'question': 'ok?'}]"
    );
    has("hitl resumed ->", &["'topic': 'z'", "'log': ['a:z', 'ask:yes']"]);
    assert!(line("sequential:").starts_with("sequential: 20 runs"));
    assert!(line("concurrent:").starts_with("concurrent: 20 runs"));
}
