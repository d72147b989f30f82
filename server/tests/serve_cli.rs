//! `weir serve`'s refusals before it serves: a missing or bad config file (the message names the
//! file and the field), a bad flow, a role without a scaled-out backend; and what it serves:
//! the config's flows, with the flags' bounds, and the crons fired as often as asked.

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

/// `weir serve` on the refine flow in `dir` with `args` added: the process and its address.
fn serve(dir: &std::path::Path, args: &[&str]) -> (std::process::Child, String) {
    serve_config(dir, r#"{"graphs": {"refine": "refine.json"}}"#, args)
}

/// [`serve`] with `config` as `weir.json` (its graph `refine.json`, the refine flow).
fn serve_config(dir: &std::path::Path, config: &str, args: &[&str]) -> (std::process::Child, String) {
    use std::io::{BufRead, BufReader};
    let flow = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/flows/refine_loop.json");
    std::fs::copy(flow, dir.join("refine.json")).unwrap();
    std::fs::write(dir.join("weir.json"), config).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_weir"))
        .current_dir(dir)
        .args(["serve", "--port", "0"])
        .args(args)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let line = lines.next().unwrap().unwrap();
    // `weir serve: listening on http://ADDR[/PREFIX] (studio: http://ADDR/studio/)`.
    let addr = line
        .strip_prefix("weir serve: listening on http://")
        .and_then(|rest| rest.split(['/', ' ']).next())
        .unwrap_or_else(|| panic!("{line}"))
        .to_owned();
    (child, addr)
}

/// The whole HTTP/1.1 reply to `method path` with `body` (JSON).
fn request(addr: &str, method: &str, path: &str, body: &str) -> String {
    request_with(addr, method, path, "", body)
}

/// [`request`] with `headers` (each `name: value\r\n`) added.
fn request_with(addr: &str, method: &str, path: &str, headers: &str, body: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nhost: x\r\n{headers}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    reply
}

#[test]
fn the_config_s_http_section_turns_routes_off_sets_cors_and_a_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let config = r#"{"graphs": {"refine": "refine.json"}, "http": {"mount_prefix": "/api",
        "disable_mcp": true, "disable_meta": true, "disable_store": true, "disable_runs": true,
        "cors": {"allow_origins": ["https://app.example.com"], "allow_methods": ["GET", "POST"]}}}"#;
    let (mut child, addr) = serve_config(dir.path(), config, &[]);
    let status = |reply: &str| reply.split_whitespace().nth(1).unwrap().to_owned();
    let found = request(&addr, "POST", "/api/assistants/search", "{}");
    let outside = request(&addr, "POST", "/assistants/search", "{}");
    let mcp = request(&addr, "POST", "/api/mcp", "{}");
    let store = request(&addr, "POST", "/api/store/items/search", "{}");
    let runs = request(
        &addr,
        "POST",
        "/api/runs/wait",
        r#"{"assistant_id": "refine", "input": {}}"#,
    );
    let threads = request(&addr, "POST", "/api/threads", "{}");
    let tid = threads
        .split("\"thread_id\":\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    let thread_stream = request(&addr, "GET", &format!("/api/threads/{tid}/stream"), "");
    let studio = request(&addr, "GET", "/api/studio/", "");
    let ok = request(&addr, "GET", "/api/ok", "");
    let info = request(&addr, "GET", "/api/info", "");
    let allowed = request_with(&addr, "GET", "/api/ok", "origin: https://app.example.com\r\n", "");
    let refused = request_with(&addr, "GET", "/api/ok", "origin: https://evil.example\r\n", "");
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(status(&found), "200", "{found}");
    assert!(found.contains("\"graph_id\":\"refine\""), "{found}");
    assert_eq!(status(&outside), "404", "{outside}");
    assert_eq!(status(&mcp), "404", "{mcp}");
    assert_eq!(status(&store), "404", "{store}");
    assert_eq!(status(&runs), "404", "{runs}");
    assert_eq!(status(&threads), "200", "{threads}");
    assert_eq!(
        status(&thread_stream),
        "404",
        "a thread's stream shows its runs: {thread_stream}"
    );
    assert_eq!(
        status(&studio),
        "404",
        "the studio runs graphs: off with the runs: {studio}"
    );
    assert!(ok.ends_with("{\"ok\":true}"), "{ok}");
    assert_eq!(status(&info), "404", "{info}");
    assert!(
        allowed
            .to_lowercase()
            .contains("access-control-allow-origin: https://app.example.com"),
        "{allowed}"
    );
    assert!(
        !refused.to_lowercase().contains("access-control-allow-origin"),
        "{refused}"
    );
}

#[test]
fn a_graph_s_description_is_its_system_assistant_s_and_follows_the_config() {
    let dir = tempfile::tempdir().unwrap();
    for description in ["Refines a draft.", "Refines a draft, twice."] {
        let config =
            format!(r#"{{"graphs": {{"refine": {{"path": "refine.json", "description": "{description}"}}}}}}"#);
        let (mut child, addr) = serve_config(dir.path(), &config, &[]);
        let found = request(&addr, "POST", "/assistants/search", "{}");
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(found.contains(&format!("\"description\":\"{description}\"")), "{found}");
    }
}

#[test]
fn the_config_s_env_file_is_set_in_the_server_s_environment() {
    let dir = tempfile::tempdir().unwrap();
    // MOUNT_PREFIX is one variable the server reads itself: its routes move under it.
    std::fs::write(dir.path().join(".env"), "# the prefix\nexport MOUNT_PREFIX=\"/v2\"\n").unwrap();
    let config = r#"{"graphs": {"refine": "refine.json"}, "env": ".env", "http": {"mount_prefix": "/api"}}"#;
    let (mut child, addr) = serve_config(dir.path(), config, &[]);
    let under_env = request(&addr, "POST", "/v2/assistants/search", "{}");
    let under_config = request(&addr, "POST", "/api/assistants/search", "{}");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(under_env.starts_with("HTTP/1.1 200"), "{under_env}");
    assert!(under_config.starts_with("HTTP/1.1 404"), "{under_config}");
}

#[test]
fn weir_serve_answers_on_its_port_with_the_config_s_flows() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, addr) = serve(dir.path(), &[]);
    let reply = request(&addr, "POST", "/assistants/search", "{}");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(reply.starts_with("HTTP/1.1 200 OK"), "{reply}");
    assert!(reply.contains(r#""graph_id":"refine""#), "{reply}");
    assert!(dir.path().join("weir.db").is_file());
}

#[test]
fn max_queued_runs_bounds_a_threads_queue() {
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = weir(dir.path(), &["serve", "--max-queued-runs", "0"]);
    assert_eq!(code, 2);
    assert!(err.contains("--max-queued-runs"), "{err}");

    let (mut child, addr) = serve(dir.path(), &["--max-queued-runs", "1"]);
    let thread = request(
        &addr,
        "POST",
        "/threads",
        r#"{"thread_id": "4b6f1a52-0d0c-4a8e-9a51-8d2b7f7c1e01"}"#,
    );
    assert!(thread.starts_with("HTTP/1.1 200 OK"), "{thread}");
    // A run that may not start for an hour holds the thread's one place in its queue.
    let path = "/threads/4b6f1a52-0d0c-4a8e-9a51-8d2b7f7c1e01/runs";
    let body = r#"{"assistant_id": "refine", "input": {}, "after_seconds": 3600}"#;
    let first = request(&addr, "POST", path, body);
    let second = request(&addr, "POST", path, body);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(first.starts_with("HTTP/1.1 200 OK"), "{first}");
    assert!(second.starts_with("HTTP/1.1 429 Too Many Requests"), "{second}");
    assert!(
        second.contains("as many as a thread may queue (max_queued_runs)"),
        "{second}"
    );
}

#[test]
fn a_second_weir_serve_on_the_same_file_is_refused_and_the_first_serves_on() {
    let dir = tempfile::tempdir().unwrap();
    let (mut first, addr) = serve(dir.path(), &[]);
    let (code, err) = weir(dir.path(), &["serve", "--port", "0"]);
    let reply = request(&addr, "POST", "/assistants/search", "{}");
    first.kill().unwrap();
    first.wait().unwrap();
    assert_eq!(code, 1, "{err}");
    let holder = format!("`weir.db` is served by another process (process {})", first.id());
    assert!(err.contains(&holder), "{err}");
    assert!(reply.starts_with("HTTP/1.1 200 OK"), "{reply}");
    // The lock went with the process that held it, however it ended.
    let (mut again, addr) = serve(dir.path(), &[]);
    let reply = request(&addr, "POST", "/assistants/search", "{}");
    again.kill().unwrap();
    again.wait().unwrap();
    assert!(reply.starts_with("HTTP/1.1 200 OK"), "{reply}");
}

#[test]
fn cron_poll_sets_how_often_the_due_crons_fire() {
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = weir(dir.path(), &["serve", "--cron-poll", "0"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--cron-poll") && err.contains("from 0.01 to 86400"),
        "{err}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_weir"))
        .current_dir(dir.path())
        .arg("serve")
        .env("CRON_SCHEDULER_SLEEP_TIME", "soon")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        err.contains("CRON_SCHEDULER_SLEEP_TIME: `soon` is not a number of seconds"),
        "{err}"
    );

    // An every-second cron: looked for every 0.2 s it fires at once; every minute, not yet.
    for (poll, tid, fires) in [
        ("60", "6f0f6c2e-0d3b-4b1e-9a8e-1c1d2e3f4a01", false),
        ("0.2", "6f0f6c2e-0d3b-4b1e-9a8e-1c1d2e3f4a02", true),
    ] {
        let (mut child, addr) = serve(dir.path(), &["--cron-poll", poll]);
        let made = request(&addr, "POST", "/threads", &format!(r#"{{"thread_id": "{tid}"}}"#));
        assert!(made.starts_with("HTTP/1.1 200 OK"), "{made}");
        let cron = r#"{"assistant_id": "refine", "schedule": "* * * * * *", "input": {}}"#;
        let made = request(&addr, "POST", &format!("/threads/{tid}/runs/crons"), cron);
        assert!(made.starts_with("HTTP/1.1 200 OK"), "{made}");
        std::thread::sleep(std::time::Duration::from_millis(2_500));
        let runs = request(&addr, "GET", &format!("/threads/{tid}/runs"), "");
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(runs.contains(r#""run_id""#), fires, "--cron-poll {poll}: {runs}");
    }
}
