//! The `weir` binary's side of issue 29: `--recursion-limit`, its message, a wrong choice
//! that keeps the question, and an output that waits for an acknowledgement.

use serde_json::json;
use std::path::PathBuf;
use std::process::Command;

fn weir(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_weir")).args(args).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// A fresh directory holding `flow` as `flow.json`; returns the flow's and the database's paths.
fn setup(name: &str, flow: &serde_json::Value) -> (String, String) {
    let dir = std::env::temp_dir().join(format!("weir-flow-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path: PathBuf = dir.join("flow.json");
    std::fs::write(&path, flow.to_string()).unwrap();
    let s = |p: PathBuf| p.to_str().unwrap().to_owned();
    (s(path), s(dir.join("threads.db")))
}

#[test]
fn weir_run_takes_a_recursion_limit_and_its_message_names_the_flag() {
    // s -> body -> check ? {again -> body, done -> e}, looping while n < 100.
    let flow = json!({
        "nodes": [{"id": "s", "type": "start"},
                  {"id": "body", "type": "set", "data": {"assign": {"n": 1}}},
                  {"id": "check", "type": "condition", "data": {"branches": [{"id": "again", "when": "n < 100"}], "else": "done"}},
                  {"id": "e", "type": "end"}],
        "edges": [{"id": "1", "source": "s", "target": "body"}, {"id": "2", "source": "body", "target": "check"},
                  {"id": "3", "source": "check", "sourceHandle": "again", "target": "body"},
                  {"id": "4", "source": "check", "sourceHandle": "done", "target": "e"}],
        "state": {"n": {"type": "number", "reducer": "add"}}
    });
    let (path, db) = setup("limit", &flow);
    let (code, _, stderr) = weir(&["run", &path, "--thread", "t", "--db", &db, "--recursion-limit", "5"]);
    assert_eq!(
        (code, stderr.as_str()),
        (
            1,
            "error: the run reached its recursion limit of 5 steps before an end node; a loop may not stop: \
             check its condition, or raise the limit with `--recursion-limit <STEPS>`\n"
        )
    );
    let (code, _, stderr) = weir(&["run", &path, "--thread", "t", "--db", &db, "--recursion-limit", "0"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--recursion-limit"), "{stderr}");
}

#[test]
fn weir_resume_refuses_a_wrong_choice_listing_the_valid_ones_and_keeps_the_question() {
    let flow = json!({
        "nodes": [{"id": "s", "type": "start"},
                  {"id": "ask", "type": "output", "data": {"message": "Refund?", "choices": [{"id": "yes"}, {"id": "no"}]}},
                  {"id": "ko", "type": "set", "data": {"assign": {"verdict": "declined"}}},
                  {"id": "ok", "type": "set", "data": {"assign": {"verdict": "approved"}}},
                  {"id": "e", "type": "end"}],
        "edges": [{"id": "1", "source": "s", "target": "ask"},
                  {"id": "2", "source": "ask", "sourceHandle": "yes", "target": "ok"},
                  {"id": "3", "source": "ask", "sourceHandle": "no", "target": "ko"},
                  {"id": "4", "source": "ok", "target": "e"}, {"id": "5", "source": "ko", "target": "e"}],
        "state": {"verdict": {"type": "string"}}
    });
    let (path, db) = setup("choice", &flow);
    let (code, _, stderr) = weir(&["run", &path, "--thread", "t", "--db", &db]);
    assert_eq!(code, 3, "{stderr}");
    let (code, _, stderr) = weir(&["resume", "--thread", "t", "--db", &db, "--choice", "maybe"]);
    assert_eq!(
        (code, stderr.as_str()),
        (
            1,
            "error: `maybe` is not a choice of the paused question: node `ask` asks \"Refund?\" and its \
             choices are `yes`, `no`; the question is still waiting\n"
        )
    );
    let (code, stdout, _) = weir(&["state", "--thread", "t", "--db", &db]);
    assert_eq!(code, 0);
    let state: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(state["next"], json!(["ask"]));
    let (code, stdout, stderr) = weir(&["resume", "--thread", "t", "--db", &db, "--choice", "no", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["state"]["verdict"], "declined");
}

#[test]
fn weir_prints_the_message_then_waits_for_an_acknowledgement_and_resume_gives_it() {
    let flow = json!({
        "nodes": [{"id": "s", "type": "start"},
                  {"id": "note", "type": "output", "data": {"message": "Shipped {{ n }} parcels", "pause": true}},
                  {"id": "done", "type": "set", "data": {"assign": {"verdict": "closed"}}},
                  {"id": "e", "type": "end"}],
        "edges": [{"id": "1", "source": "s", "target": "note"}, {"id": "2", "source": "note", "target": "done"},
                  {"id": "3", "source": "done", "target": "e"}],
        "state": {"n": {"type": "number"}, "verdict": {"type": "string"}}
    });
    let (path, db) = setup("ack", &flow);
    let (code, stdout, stderr) = weir(&["run", &path, "--thread", "t", "--db", &db, "--input", r#"{"n": 3}"#]);
    assert_eq!(code, 3, "{stderr}");
    // The message is printed as the output runs, then the question that waits for it.
    let tail: Vec<&str> = stdout.lines().rev().take(2).collect();
    assert_eq!(
        tail,
        ["acknowledge with: weir resume --thread <ID>", "? Shipped 3 parcels"],
        "{stdout}"
    );
    let (code, _, stderr) = weir(&["resume", "--thread", "t", "--db", &db, "--choice", "yes"]);
    assert_eq!(
        (code, stderr.as_str()),
        (
            1,
            "error: node `note` asks for an acknowledgement, not a choice: resume without `yes`; the question \
             is still waiting\n"
        )
    );
    let (code, stdout, stderr) = weir(&["resume", "--thread", "t", "--db", &db, "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["state"]["verdict"], "closed");
}
