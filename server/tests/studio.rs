//! weir studio in a real browser: `weir studio examples/flows/support_triage.json` on a fresh
//! SQLite file, driven by `tests/studio/studio.mjs` (Playwright in Debian's headless Chromium):
//! run the flow to its interrupt from the launcher, answer it in the form, see the run finish and
//! the timeline grow, a checkpoint's changes, a run made by another client appear live, a fork
//! from step 2, and the threads search. Then, against the example server (`examples/serve.rs`,
//! its chatbot streaming a token every 60 ms), the studio's chat view (`chat.mjs`) and a page on
//! LangGraph's own `useStream` React hook (`usestream/`, what agent-chat-ui is built on) each send
//! a message and must render the reply growing before it is whole; the `useStream` page must also
//! rejoin a run after a reload, resume an interrupt and branch from the history; and LangGraph's
//! JS client (in node) joins a thread's own stream (`thread_stream.mjs`) and speaks the
//! thread-centric streaming protocol over SSE and WebSocket (`protocol.mjs`). Last, the studio on a
//! thread of 10,000 checkpoints and a state of ~10 MB (`big_thread`, `perf.mjs`) must paint the
//! thread, scroll its timeline to the bottom and show a checkpoint's changes within generous
//! bounds, printing the figures it measured. The screenshots land in `target/studio-screenshots/`.
//!
//! Needs Chromium (`/usr/bin/chromium`, or `CHROMIUM`) and the script's packages
//! (`npm ci --prefix server/tests/studio`): `.ci/run` installs both. Ignored by a plain
//! `cargo test`; run with `--include-ignored` without them, it fails saying what is missing.

mod big_thread;
mod served;

use served::Served;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `weir studio FLOW` on `db`, on a port of its choosing.
fn studio(flow: &Path, db: &Path) -> Served {
    Served::weir(&[
        "studio".as_ref(),
        flow.as_os_str(),
        "--db".as_ref(),
        db.as_os_str(),
        "--port".as_ref(),
        "0".as_ref(),
    ])
}

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `node tests/studio/SCRIPT ARGS…` in Debian's Chromium and returns what it printed,
/// failing the test with its output if it failed.
fn browser(script: &str, args: &[&std::ffi::OsStr]) -> String {
    let dir = manifest().join("tests/studio");
    assert!(
        dir.join("node_modules/playwright-core").exists(),
        "the browser test's packages are missing: run `bash server/tests/studio/setup.sh` (.ci/run does)"
    );
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(
        Path::new(&chromium).exists(),
        "no Chromium at {chromium}: `apt-get install chromium` (.ci/run does), or set CHROMIUM"
    );
    let out = Command::new("node")
        // Node 20's WebSocket (the JS client's transport for the streaming protocol's sockets).
        .arg("--experimental-websocket")
        .arg(dir.join(script))
        .args(args)
        .env("CHROMIUM", &chromium)
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(out.status.success(), "{script} failed:\n{stdout}\n{stderr}");
    stdout
}

/// Where the browser tests save their screenshots.
fn shots() -> PathBuf {
    manifest().join("../target/studio-screenshots")
}

#[test]
#[ignore = "needs Chromium and server/tests/studio/node_modules: run .ci/run"]
fn a_person_runs_answers_and_forks_the_support_triage_flow_in_the_studio() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let flow = manifest().join("../examples/flows/support_triage.json");
    let studio = studio(&flow, &dir.path().join("studio.db"));
    let stdout = browser("studio.mjs", &[studio.url.as_ref(), shots().as_os_str()]);
    assert!(
        stdout.contains("ok - forking from step 2 runs again from there"),
        "{stdout}"
    );
}

#[test]
#[ignore = "needs Chromium and server/tests/studio/node_modules: run .ci/run"]
fn langgraphs_js_client_joins_a_threads_stream() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let served = Served::start(&dir.path().join("weir.db"), &[]);
    let stdout = browser("thread_stream.mjs", &[served.url.as_ref()]);
    assert!(stdout.contains("ok - lastEventId"), "{stdout}");
}

#[test]
#[ignore = "needs Chromium and server/tests/studio/node_modules: run .ci/run"]
fn langgraphs_js_client_speaks_the_thread_streaming_protocol() {
    let dir = tempfile::tempdir().expect("a temp dir");
    // Tokens 60 ms apart: the client's message view opens while the answer streams (one opened
    // after the run ended is closed at once, by the client's design).
    let served = Served::start(&dir.path().join("weir.db"), &["--token-ms", "60"]);
    let stdout = browser("protocol.mjs", &[served.url.as_ref()]);
    assert!(stdout.contains("ok - a model's tokens as one message"), "{stdout}");
}

#[test]
#[ignore = "needs Chromium and server/tests/studio/node_modules: run .ci/run"]
fn the_studio_chat_shows_a_reply_growing_token_by_token() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let served = Served::start(&dir.path().join("weir.db"), &["--token-ms", "60"]);
    let stdout = browser(
        "chat.mjs",
        &[served.url.as_ref(), "hello there friend".as_ref(), shots().as_os_str()],
    );
    assert!(stdout.contains("ok - the studio's chat grew"), "{stdout}");
}

/// Runs `usestream.mjs` for `scenarios` against the example server started with `args`.
fn use_stream(args: &[&str], scenarios: &[&str]) -> String {
    assert!(
        manifest().join("tests/studio/usestream/dist/app.js").exists(),
        "the useStream page is not built: run `bash server/tests/studio/setup.sh` (.ci/run does)"
    );
    let dir = tempfile::tempdir().expect("a temp dir");
    let served = Served::start(&dir.path().join("weir.db"), args);
    let shots = shots();
    let mut argv: Vec<&std::ffi::OsStr> = vec![served.url.as_ref(), shots.as_os_str()];
    argv.extend(scenarios.iter().map(std::ffi::OsStr::new));
    browser("usestream.mjs", &argv)
}

#[test]
#[ignore = "needs Chromium and server/tests/studio/node_modules (with usestream/dist): run .ci/run"]
fn a_page_on_langgraphs_use_stream_hook_renders_a_chat_streamed_by_weir() {
    let stdout = use_stream(&["--token-ms", "60"], &["chat"]);
    assert!(stdout.contains("ok - chat: useStream rendered"), "{stdout}");
}

#[test]
#[ignore = "needs Chromium and server/tests/studio/node_modules (with usestream/dist): run .ci/run"]
fn a_page_on_langgraphs_use_stream_hook_rejoins_a_streaming_run_after_a_reload() {
    // A token a second: the reply takes two seconds, the reload comes after its first token.
    let stdout = use_stream(&["--token-ms", "1000"], &["rejoin"]);
    assert!(stdout.contains("ok - rejoin: reloaded at"), "{stdout}");
}

#[test]
#[ignore = "needs Chromium and server/tests/studio/node_modules (with usestream/dist): run .ci/run"]
fn a_page_on_langgraphs_use_stream_hook_resumes_an_interrupt_and_branches_from_history() {
    let stdout = use_stream(&["--token-ms", "60"], &["resume", "branch"]);
    assert!(stdout.contains("ok - resume: the interrupt"), "{stdout}");
    assert!(stdout.contains("ok - branch: editing the first message"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and server/tests/studio/node_modules: run .ci/run"]
async fn the_studio_stays_responsive_on_a_thread_of_10000_checkpoints_and_a_10_mb_state() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let started = std::time::Instant::now();
    let big = big_thread::serve(&dir.path().join("big.db")).await;
    println!(
        "the fixture: {} checkpoints, a state of {} bytes, written in {:.1} s",
        big_thread::CHECKPOINTS,
        big.state_bytes,
        started.elapsed().as_secs_f64()
    );
    assert!(big.state_bytes > 10_000_000, "the state is {} bytes", big.state_bytes);
    let (url, tid) = (big.url.clone(), big.thread_id.clone());
    let stdout = tokio::task::spawn_blocking(move || {
        let count = big_thread::CHECKPOINTS.to_string();
        browser(
            "perf.mjs",
            &[url.as_ref(), tid.as_ref(), count.as_ref(), shots().as_os_str()],
        )
    })
    .await
    .expect("the browser script ran");
    assert!(stdout.contains("ok - the timeline scrolled to the bottom"), "{stdout}");
}

#[test]
fn the_studio_page_and_its_modules_are_served_with_their_types() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let flow = manifest().join("../examples/flows/support_triage.json");
    let studio = studio(&flow, &dir.path().join("studio.db"));
    let host = studio.url.trim_start_matches("http://").to_owned();
    let get = |path: &str| {
        use std::io::{Read, Write};
        let mut conn = std::net::TcpStream::connect(&host).expect("the studio listens");
        write!(conn, "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").expect("a request");
        let mut answer = String::new();
        conn.read_to_string(&mut answer).expect("an answer");
        answer
    };
    let redirect = get("/studio");
    assert!(redirect.starts_with("HTTP/1.1 308"), "{redirect}");
    let page = get("/studio/");
    assert!(page.contains("text/html") && page.contains("js/main.js"), "{page}");
    let module = get("/studio/js/graph.js");
    assert!(
        module.contains("text/javascript") && module.contains("export function draw"),
        "{module}"
    );
    let missing = get("/studio/js/nope.js");
    assert!(
        missing.starts_with("HTTP/1.1 404") && missing.contains("nope.js"),
        "{missing}"
    );
}
