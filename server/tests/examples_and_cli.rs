//! The example flows in `examples/flows/`, through the library and through the `weir` binary.

use serde_json::json;
use std::path::PathBuf;
use std::process::Command;
use weir_flow::{Flow, Registry};

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/flows")
        .join(name)
}

fn load(name: &str) -> Flow {
    Flow::from_json(&std::fs::read_to_string(example(name)).unwrap(), &Registry::new())
        .unwrap_or_else(|e| panic!("{e}"))
}

fn weir(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_weir")).args(args).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// [`weir`] with the threads on the PostgreSQL server at `url`, in `schema`.
fn weir_on(url: &str, schema: &str, args: &[&str]) -> (i32, String, String) {
    let mut all = args.to_vec();
    all.extend(["--postgres", url, "--schema", schema]);
    weir(&all)
}

#[tokio::test]
async fn triage_refunds_small_amounts_and_asks_about_large_ones() {
    let flow = load("support_triage.json");
    let out = flow
        .invoke(json!({"customer": "Cy", "subject": "refund", "body": "x", "amount": 20}))
        .await
        .unwrap();
    assert_eq!(out.get("status"), Some(&json!("refunded")));
    assert_eq!(
        out.get("transcript"),
        Some(&json!(["To Cy: We refunded 20 EUR to Cy."]))
    );
    let err = flow
        .invoke(json!({"customer": "Ana", "subject": "Refund please", "body": "b", "amount": 120}))
        .await
        .unwrap_err();
    // Without a checkpointer the question cannot wait for its answer.
    assert_eq!(err.node(), Some("approval"));
}

#[tokio::test]
async fn the_refine_loop_stops_on_its_condition() {
    let flow = load("refine_loop.json");
    let out = flow.invoke(json!({"topic": "rust graphs"})).await.unwrap();
    assert_eq!(out.get("revision"), Some(&json!(3)));
    assert_eq!(
        out.get("draft"),
        Some(&json!("Rust Graphs; add an example; cite a source"))
    );
    // A target it cannot reach: the condition stops the loop after 6 rounds, within max_steps (8).
    let out = flow.invoke(json!({"topic": "t", "target": 9})).await.unwrap();
    assert_eq!(out.get("revision"), Some(&json!(6)));
}

#[tokio::test]
async fn the_fan_in_waits_for_every_branch() {
    let flow = load("fanout_fanin.json");
    assert_eq!(
        flow.joins(),
        [(
            "write_report".to_owned(),
            vec![
                "search_docs".to_owned(),
                "search_issues".to_owned(),
                "read_bench".to_owned()
            ]
        )]
    );
    let out = flow.invoke(json!({"topic": "weir"})).await.unwrap();
    assert_eq!(
        out.get("report"),
        Some(&json!("weir: 3 findings from 6 sources. bench: median 12 ms / docs: weir docs covers the API / issues: weir issues lists 3 open bugs"))
    );
}

#[test]
fn weir_check_prints_every_problem_and_fails() {
    let dir = std::env::temp_dir().join(format!("weir-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.json");
    std::fs::write(
        &bad,
        r#"{"nodes": [{"id": "s", "type": "start"}, {"id": "x", "type": "llm"}],
            "edges": [{"id": "1", "source": "s", "target": "y"}]}"#,
    )
    .unwrap();
    let (code, stdout, _) = weir(&["check", bad.to_str().unwrap(), "--json"]);
    assert_eq!(code, 1);
    let lines: Vec<serde_json::Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(
        lines,
        [
            json!({"path": "$.nodes[1].type", "id": "x", "message": "node `x` has unknown type `llm`; registered types are `condition`, `end`, `note`, `output`, `set`, `start`"}),
            json!({"path": "$.edges[0].target", "id": "1", "message": "edge `1` leads to unknown node `y`; node ids are `s`, `x`"}),
            json!({"path": "$.nodes", "id": null, "message": "the flow has no `end` node; add one where the run finishes"}),
        ]
    );
    let (code, stdout, _) = weir(&["check", example("fanout_fanin.json").to_str().unwrap()]);
    assert_eq!(
        (code, stdout.ends_with("ok (9 nodes, recursion limit 72)\n")),
        (0, true),
        "{stdout}"
    );
}

#[test]
fn weir_graph_prints_mermaid() {
    let (code, stdout, _) = weir(&["graph", example("refine_loop.json").to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(stdout.starts_with("graph TD;\n"), "{stdout}");
    assert!(stdout.contains("\tgood_enough -.->|again| draft;\n"), "{stdout}");
}

fn temp_db(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("weir-flow-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("threads.db")
}

/// Two processes: the first runs until the approval asks, the second answers it from the
/// SQLite file and finishes the run.
#[test]
fn an_output_choice_round_trips_across_two_processes_through_sqlite() {
    let db = temp_db("round-trip");
    let db = db.to_str().unwrap();
    let flow = example("support_triage.json");
    let (code, stdout, stderr) = weir(&[
        "run",
        flow.to_str().unwrap(),
        "--json",
        "--thread",
        "ticket-42",
        "--db",
        db,
        "--input",
        r#"{"customer":"Ana","subject":"Refund please","body":"b","amount":120}"#,
    ]);
    assert_eq!(code, 3, "{stderr}");
    let events: Vec<serde_json::Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(
        events,
        [
            json!({"event": "node", "node": "start", "step": 1, "writes": {}}),
            json!({"event": "node", "node": "classify", "step": 2, "writes": {}}),
            json!({"event": "node", "node": "check_amount", "step": 3, "writes": {}}),
            // Seed 003: the output runs (its message out, its write applied), then the run pauses.
            json!({"event": "message", "node": "approval", "step": 4, "text": "Refund 120 EUR to Ana (Refund please)?",
                   "choices": [{"id": "approve", "label": "Approve the refund"}, {"id": "reject", "label": "Decline it"}]}),
            json!({"event": "node", "node": "approval", "step": 4,
                   "writes": {"transcript": "Refund 120 EUR to Ana (Refund please)?"}}),
            json!({"event": "paused", "node": "approval", "question": "Refund 120 EUR to Ana (Refund please)?",
                   "choices": [{"id": "approve", "label": "Approve the refund"}, {"id": "reject", "label": "Decline it"}]}),
        ]
    );

    let (code, stdout, _) = weir(&["state", "--thread", "ticket-42", "--db", db]);
    assert_eq!(code, 0);
    let state: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(state["next"], json!(["approval"]));
    assert_eq!(state["values"]["status"], json!("new"));
    assert_eq!(
        state["values"]["transcript"],
        json!(["Refund 120 EUR to Ana (Refund please)?"])
    );

    let (code, stdout, stderr) = weir(&[
        "resume",
        "--thread",
        "ticket-42",
        "--db",
        db,
        "--choice",
        "reject",
        "--json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["event"], "done");
    assert_eq!(last["state"]["status"], "declined");
    assert!(
        !stdout.contains(r#""event":"message","node":"approval""#),
        "the output does not run again: {stdout}"
    );
    assert_eq!(
        last["state"]["transcript"],
        json!([
            "Refund 120 EUR to Ana (Refund please)?",
            "To Ana: We cannot refund this order; a colleague will call you."
        ])
    );

    let (code, stdout, _) = weir(&["history", "--thread", "ticket-42", "--db", db]);
    assert_eq!(code, 0);
    let steps: Vec<i64> = stdout
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["step"]
                .as_i64()
                .unwrap()
        })
        .collect();
    // The question is a step of its own, after the output's (step 5).
    assert_eq!(steps, [8, 7, 6, 5, 4, 3, 2, 1, 0, -1]);

    let (code, _, stderr) = weir(&["resume", "--thread", "nope", "--db", db]);
    assert_eq!(
        (code, stderr.as_str()),
        (
            2,
            "error: no thread `nope` in this database; start it with `weir run`\n"
        )
    );
}

#[test]
fn weir_run_streams_json_events_and_exits_3_on_a_choice() {
    let flow = example("support_triage.json");
    let (code, stdout, _) = weir(&[
        "run",
        flow.to_str().unwrap(),
        "--json",
        "--thread",
        "t1",
        "--db",
        temp_db("stream").to_str().unwrap(),
        "--input",
        r#"{"customer":"Ana","subject":"Refund please","body":"b","amount":120}"#,
    ]);
    assert_eq!(code, 3);
    let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(
        last,
        json!({"event": "paused", "node": "approval", "question": "Refund 120 EUR to Ana (Refund please)?",
               "choices": [{"id": "approve", "label": "Approve the refund"}, {"id": "reject", "label": "Decline it"}]})
    );
    let first: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    assert_eq!(
        first,
        json!({"event": "node", "node": "start", "step": 1, "writes": {}})
    );
}

/// The same round trip with the threads on the PostgreSQL server of `WEIR_POSTGRES_URL`, in a
/// database of the test's own, in a schema it names (`--schema`).
///
/// Ignored unless asked for (`-- --include-ignored`); asked for without a database, it fails
/// rather than pass having tested nothing.
#[test]
#[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
fn an_output_choice_round_trips_across_two_processes_through_postgres() {
    // A database of its own: the check of the default schema below makes `weir` in it.
    let db = weir_test_support::Database::fresh("weir_cli");
    let on = |args: &[&str]| weir_on(&db.url, "cli_threads", args);
    let thread = "pg-ticket";
    let flow = example("support_triage.json");
    let input = r#"{"customer":"Ana","subject":"Refund please","body":"b","amount":120}"#;
    let (code, _, stderr) = on(&["run", flow.to_str().unwrap(), "--thread", thread, "--input", input]);
    assert_eq!(code, 3, "{stderr}");
    let (code, _, stderr) = weir(&["resume", "--thread", thread, "--postgres", &db.url]);
    assert_eq!(code, 2, "the thread is in the test's schema, not in `weir`: {stderr}");
    assert!(stderr.contains("no thread `pg-ticket` in this database"), "{stderr}");
    let (code, stdout, stderr) = on(&["resume", "--thread", thread, "--choice", "approve", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["state"]["status"], "refunded");
    let (code, stdout, _) = on(&["history", "--thread", thread]);
    assert_eq!((code, stdout.lines().count()), (0, 10));
    let (code, _, stderr) = on(&["state", "--thread", thread, "--db", "x.db"]);
    assert_eq!(code, 2, "`--db` and `--postgres` exclude each other: {stderr}");
    let (code, _, stderr) = weir(&[
        "state",
        "--thread",
        thread,
        "--postgres",
        &db.url,
        "--schema",
        "Bad\"; x",
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("`Bad\"; x` cannot name a PostgreSQL schema"),
        "{stderr}"
    );
}

/// The command line over TLS: the URL's `sslmode` and libpq's `sslrootcert` reach every
/// connection it makes, the record of which flow a thread runs included (that one connected in
/// plaintext, whatever the URL said).
#[test]
#[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
fn the_command_line_reaches_postgresql_over_tls_with_the_urls_ca_file() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let proxy = rt.block_on(weir_test_support::TlsProxy::start());
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &proxy.ca).unwrap();
    let url = format!("{}&sslrootcert={}", proxy.url("verify-full"), ca.display());
    let schema = weir_test_support::Schema::fresh("weir_cli_tls");
    let on = |args: &[&str]| weir_on(&url, &schema.name, args);
    let flow = example("support_triage.json");
    let input = r#"{"customer":"Ana","subject":"Refund please","body":"b","amount":120}"#;
    let (code, _, stderr) = on(&["run", flow.to_str().unwrap(), "--thread", "t1", "--input", input]);
    assert_eq!(code, 3, "{stderr}");
    let (code, stdout, stderr) = on(&["state", "--thread", "t1"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("\"customer\": \"Ana\""), "{stdout}");
    assert!(proxy.ssl_requests() >= 4, "the saver's and the record's, twice");
    assert_eq!(proxy.plaintext(), 0, "every connection was TLS");
}

/// Before `--schema`, the record of which flow a thread runs lived in the database's `public`
/// schema, beside checkpoints in `weir`: such a thread still resumes. Its own database, for the
/// test touches `public` and the default schema.
#[test]
#[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
fn a_thread_recorded_before_schemas_resumes() {
    let db = weir_test_support::Database::fresh("weir_cli_older");
    let flow = example("support_triage.json");
    let input = r#"{"customer":"Ana","subject":"Refund please","body":"b","amount":120}"#;
    let (code, _, stderr) = weir(&[
        "run",
        flow.to_str().unwrap(),
        "--thread",
        "t1",
        "--postgres",
        &db.url,
        "--input",
        input,
    ]);
    assert_eq!(code, 3, "{stderr}");
    // Where an older `weir` left the record.
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(&db.url, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(conn);
        client
            .batch_execute("ALTER TABLE weir.weir_flow_threads SET SCHEMA public")
            .await
            .unwrap();
    });
    let resume = [
        "resume",
        "--thread",
        "t1",
        "--postgres",
        &db.url,
        "--choice",
        "approve",
        "--json",
    ];
    let (code, stdout, stderr) = weir(&resume);
    assert_eq!(code, 0, "{stderr}");
    let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["state"]["status"], "refunded");
    let (code, stdout, stderr) = weir(&["state", "--thread", "t1", "--postgres", &db.url]);
    assert_eq!(code, 0, "once copied, the record is read from `weir`: {stderr}");
    assert!(stdout.contains("refunded"), "{stdout}");
}

#[test]
fn a_served_flow_describes_its_fields_with_their_json_types() {
    use std::sync::Arc;
    use weir_runtime::checkpoint::MemorySaver;
    use weir_server::graph::Serve;
    let schemas = load("support_triage.json")
        .into_served(Arc::new(MemorySaver::new()))
        .schemas();
    let props = &schemas.state["properties"];
    assert_eq!(
        props["customer"],
        json!({"type": "string", "description": "Who wrote in."})
    );
    assert_eq!(
        props["amount"],
        json!({"type": "number", "description": "The order's amount, in EUR.", "default": 0})
    );
    assert_eq!(props["transcript"], json!({"type": "array"}));
    assert_eq!(schemas.input["properties"]["priority"]["default"], json!("normal"));
}
