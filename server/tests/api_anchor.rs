//! `weir serve --config examples/anchor/weir.json` end to end: the `weir` binary serving the
//! anchor app's two graphs as JSON flows, driven by the load generator `bench/server.sh` measures
//! with (`examples/load.rs`), and by `shared/langgraph/server/anchor/probe.py` unchanged through
//! the official Python client. The probe's test is ignored unless asked for: it needs the SDK's
//! venv (`tests/sdk/setup.sh`) named by `WEIR_SDK_PYTHON`; run with `--include-ignored` but
//! without it, it fails naming it.

mod served;

use served::Served;
use std::path::Path;
use std::process::Command;

/// `weir serve` on the anchor config, on a fresh file.
fn serve_anchor(db: &Path) -> Served {
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/anchor/weir.json");
    Served::weir(&[
        "serve".as_ref(),
        "--config".as_ref(),
        config.as_os_str(),
        "--db".as_ref(),
        db.as_os_str(),
        "--port".as_ref(),
        "0".as_ref(),
    ])
}

/// The load generator's figures come from runs that all answered (it fails on any error or
/// failed run), and name every figure `bench/server_report.py` reads.
#[test]
fn the_load_generator_measures_weir_serve() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let served = serve_anchor(&dir.path().join("weir.db"));
    let load = served::example_binary("load");
    let run = |args: &[&str]| {
        let out = Command::new(&load)
            .arg(&served.url)
            .args(args)
            .output()
            .expect("load runs");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "load {args:?} failed: {}{stdout}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };
    let figures = run(&["--runs", "3", "--concurrent-runs", "8", "--clients", "3"]);
    assert!(figures.contains("sequential: 3 runs"), "{figures}");
    assert!(figures.contains("concurrent: 8 runs, 3 at a time"), "{figures}");
    let result = figures.lines().last().unwrap_or_default();
    for key in ["seq_rps=", "seq_p50_ms=", "seq_p99_ms=", "conc_rps=", "first_p50_ms="] {
        assert!(
            result.starts_with("result ") && result.contains(key),
            "`{result}` lacks {key}"
        );
    }
    let idle = run(&["--idle-threads", "7"]);
    assert!(
        idle.lines()
            .last()
            .unwrap_or_default()
            .starts_with("result idle_threads=7.000 "),
        "{idle}"
    );
    let open = run(&["--idle-connections", "7"]);
    assert_eq!(
        open.lines().last().unwrap_or_default(),
        "result idle_connections=7.000",
        "{open}"
    );
    let pings = run(&["--pings", "9", "--clients", "2"]);
    assert!(pings.contains("concurrent: 9 pings, 2 at a time"), "{pings}");
    assert!(
        pings.lines().last().unwrap_or_default().starts_with("result ping_rps="),
        "{pings}"
    );
}

#[test]
#[ignore = "needs WEIR_SDK_PYTHON: make the venv with server/tests/sdk/setup.sh"]
fn anchor_probe_runs_unchanged_against_weir_serve_with_the_anchor_config() {
    let python = std::env::var("WEIR_SDK_PYTHON")
        .unwrap_or_else(|_| panic!("WEIR_SDK_PYTHON is not set: make the venv with server/tests/sdk/setup.sh"));
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let probe = here.join("../../shared/langgraph/server/anchor/probe.py");
    assert!(
        probe.exists(),
        "no probe at {} (shared/ beside the repository)",
        probe.display()
    );
    let dir = tempfile::tempdir().expect("a temporary directory");
    let served = serve_anchor(&dir.path().join("weir.db"));
    let out = Command::new(&python)
        .arg(&probe)
        .args([served.url.as_str(), "20"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
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
    let has = |prefix: &str, parts: &[&str]| {
        let l = line(prefix);
        assert!(parts.iter().all(|p| l.contains(p)), "`{l}` lacks one of {parts:?}");
    };
    assert_eq!(line("assistants:"), "assistants: ['chain', 'hitl']");
    has("wait ->", &["'topic': 'x'", "'log': ['a:x', 'b']"]);
    has(
        "state values:",
        &["'topic': 'y'", "'log': ['a:x', 'b', 'a:y', 'b']", "next: []"],
    );
    // The flow's `ask` pauses (which needs the server's checkpointer) and takes a choice id.
    has("hitl paused:", &["'question': 'ok?'", "{'id': 'yes', 'label': 'Yes'}"]);
    has("hitl resumed ->", &["'answer': 'yes'", "'log': ['a:z', 'ok?']"]);
    assert!(line("sequential:").starts_with("sequential: 20 runs"));
    assert!(line("concurrent:").starts_with("concurrent: 20 runs"));
    assert!(line("stream first update").starts_with("stream first update p50"));
}
