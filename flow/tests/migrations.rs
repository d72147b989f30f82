//! A flow's state versions: a thread paused by version 1 of a flow, read and resumed by version
//! 2 of it, whose state renamed, dropped, added and retyped fields (`state_version`,
//! `migrations`); the load errors of versions and migrations, each at its JSON path.

use serde_json::{json, Value};
use std::sync::Arc;
use weir_flow::{Flow, LoadOptions, Outcome, Registry};
use weir_runtime::checkpoint::{Checkpointer, SqliteSaver};

/// start -> note (set) -> ask (output, pauses) -> done, over `state`.
fn file(state: Value, extra: &[(&str, Value)], note_assign: Value) -> Value {
    let mut f = json!({
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "note", "type": "set", "data": {"assign": note_assign}},
            {"id": "ask", "type": "output", "data": {"message": "more?", "pause": true}},
            {"id": "done", "type": "end"}
        ],
        "edges": [
            {"id": "e1", "source": "start", "target": "note"},
            {"id": "e2", "source": "note", "target": "ask"},
            {"id": "e3", "source": "ask", "target": "done"}
        ],
        "state": state
    });
    for (k, v) in extra {
        f[*k] = v.clone();
    }
    f
}

fn version_1() -> Value {
    file(
        json!({"note": {"type": "string"}, "count": {"type": "string"}, "scratch": {"type": "bool"}}),
        &[],
        json!({"note": "hello {{ who }}", "count": "abcd"}),
    )
}

fn version_2() -> Value {
    file(
        json!({
            "message": {"type": "string"},
            "count": {"type": "number"},
            "tags": {"type": "list", "default": ["new"]},
            "who": {"type": "string"}
        }),
        &[
            ("state_version", json!(2)),
            (
                "migrations",
                json!([{
                    "from": 1,
                    "rename": {"note": "message"},
                    "drop": ["scratch"],
                    "add": ["tags"],
                    "retype": {"count": "size(value)"}
                }]),
            ),
        ],
        json!({"message": "hi {{ who }}"}),
    )
}

fn load(file: &Value, saver: &Arc<dyn Checkpointer>) -> Flow {
    let options = LoadOptions {
        checkpointer: Some(saver.clone()),
        ..LoadOptions::default()
    };
    Flow::load(&file.to_string(), &Registry::new(), options).unwrap()
}

#[tokio::test]
async fn a_thread_paused_by_version_1_is_read_and_resumed_by_version_2() {
    let dir = tempfile::tempdir().unwrap();
    let saver: Arc<dyn Checkpointer> = Arc::new(SqliteSaver::open(dir.path().join("flows.db")).unwrap());
    // `who` is not a field of version 1: give version 1 one, as its input.
    let mut v1 = version_1();
    v1["state"]["who"] = json!({"type": "string"});
    let old = load(&v1, &saver);
    let out = old
        .run(json!({"who": "ada", "scratch": true}), Some("t"), |_| {})
        .await
        .unwrap();
    assert!(matches!(out, Outcome::Paused { .. }), "the output pauses");

    let new = load(&version_2(), &saver);
    let st = new.state("t").await.unwrap().expect("a checkpoint");
    assert_eq!(
        st.values.get("message"),
        Some(&json!("hello ada")),
        "renamed: {:?}",
        st.values
    );
    assert_eq!(st.values.get("count"), Some(&json!(4)), "retyped by `size(value)`");
    assert_eq!(st.values.get("scratch"), None, "dropped");
    assert_eq!(st.values.get("tags"), Some(&json!(["new"])), "added, at its default");
    assert_eq!(st.next, ["ask"]);

    let out = new.resume("t", None, |_| {}).await.unwrap();
    let Outcome::Done(state) = out else {
        panic!("the resumed run finishes")
    };
    assert_eq!(state.get("message"), Some(&json!("hello ada")));
    assert_eq!(state.get("count"), Some(&json!(4)));
    // Version 1 cannot read what version 2 saved.
    let err = old.state("t").await.unwrap_err().to_string();
    assert!(err.contains("version 2") && err.contains("is version 1"), "{err}");
}

fn load_errors(file: &Value) -> Vec<(String, String)> {
    let err = Flow::from_json(&file.to_string(), &Registry::new()).unwrap_err();
    err.diagnostics()
        .iter()
        .map(|d| (d.path().to_owned(), d.message().to_owned()))
        .collect()
}

#[test]
fn a_missing_migration_is_a_load_error() {
    let mut f = version_2();
    f["state_version"] = json!(3);
    let errors = load_errors(&f);
    assert!(
        errors
            .iter()
            .any(|(path, m)| path == "$.migrations" && m.contains("no migration from state version 2")),
        "{errors:?}"
    );
}

#[test]
fn a_migration_naming_fields_of_the_wrong_version_is_a_load_error_at_its_path() {
    let mut f = version_2();
    f["migrations"] = json!([{
        "from": 1,
        "rename": {"note": "mesage"},
        "drop": ["tags"],
        "retype": {"count": "size(value"}
    }]);
    let errors = load_errors(&f);
    for (path, part) in [
        ("$.migrations[0].rename.note", "no field `mesage` at state version 2"),
        ("$.migrations[0].drop", "still has a field `tags` at state version 2"),
        ("$.migrations[0].retype.count", "not a valid expression"),
    ] {
        assert!(
            errors.iter().any(|(p, m)| p == path && m.contains(part)),
            "{path}: {part:?} not in {errors:?}"
        );
    }
}
