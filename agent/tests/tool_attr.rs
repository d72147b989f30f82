//! `#[tool]` end to end: the spec it derives from the fn, its calls through a ReAct agent (sync
//! and async, named and whole arguments, errors as tool messages), and a tool that asks a person
//! through its `&Context`, paused and resumed from SQLite by a new graph instance.

use serde_json::json;
use std::sync::Arc;
use weir_agent::message::{AiMessage, Message, MessagesStateUpdate, ToolCall, ToolStatus};
use weir_agent::model::FakeChatModel;
use weir_agent::react_agent;
use weir_agent::tool;
use weir_agent::tool::Tool;
use weir_runtime::checkpoint::SqliteSaver;
use weir_runtime::{BoxError, Context, RunConfig};

/// The weather in a city.
///
/// Temperatures are in Celsius.
#[tool]
async fn weather(city: String, hour: Option<u32>) -> Result<String, BoxError> {
    if city.is_empty() {
        return Err("no city given".into());
    }
    Ok(format!("21°C in {city} at {}h", hour.unwrap_or(12)))
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Pair {
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
}

/// Adds two integers.
#[tool(name = "add")]
fn add_pair(args: Pair) -> i64 {
    args.a + args.b
}

/// Deletes a file, once a person approves.
#[tool]
async fn delete(ctx: &Context, path: String) -> Result<String, BoxError> {
    let approved: bool = ctx.interrupt(json!({"approve": format!("delete {path}?")}))?;
    Ok(if approved {
        format!("deleted {path}")
    } else {
        "refused".into()
    })
}

fn args(v: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    v.as_object().cloned().unwrap()
}

fn human(text: &str) -> MessagesStateUpdate {
    MessagesStateUpdate::default().messages(Message::human(text).into())
}

#[test]
fn the_spec_comes_from_the_fn_its_doc_and_its_argument_types() {
    let spec = Weather.spec();
    assert_eq!(spec.name, "weather");
    assert_eq!(
        spec.description,
        "The weather in a city.\n\nTemperatures are in Celsius."
    );
    let p = &spec.parameters;
    assert_eq!(p["type"], "object");
    assert_eq!(p["properties"]["city"]["type"], "string");
    assert_eq!(p["required"], json!(["city"]), "an Option argument may be left out");
    assert!(p.get("title").is_none() && p.get("$schema").is_none());

    let add = AddNumbersCheck::spec();
    assert_eq!(add.name, "add");
    assert_eq!(add.parameters["properties"]["b"]["description"], "The second number.");
    assert_eq!(add.parameters["required"], json!(["a", "b"]));
    // The context is no argument of the model's.
    assert_eq!(Delete.spec().parameters["required"], json!(["path"]));
    assert!(Delete.spec().parameters["properties"].get("ctx").is_none());
}

/// `add_pair`'s struct is `AddPair`; its tool is named `add`.
struct AddNumbersCheck;
impl AddNumbersCheck {
    fn spec() -> weir_agent::tool::ToolSpec {
        AddPair.spec().clone()
    }
}

#[test]
fn the_fn_stays_callable() {
    assert_eq!(add_pair(Pair { a: 2, b: 2 }), 4);
}

#[tokio::test]
async fn a_react_agent_calls_sync_and_async_tools_and_answers_their_errors() {
    let calls = AiMessage::new("").with_tool_calls(vec![
        ToolCall::new("c1", "weather", args(json!({"city": "Paris", "hour": 9}))),
        ToolCall::new("c2", "add", args(json!({"a": 40, "b": 2}))),
        ToolCall::new("c3", "weather", args(json!({"city": ""}))),
        ToolCall::new("c4", "add", args(json!({"a": "x"}))),
        ToolCall::new("c5", "weather", args(json!({"city": 5}))),
        ToolCall::new("c6", "weather", args(json!({"hour": 5}))),
    ]);
    let model = FakeChatModel::new([calls, AiMessage::new("done")]);
    let app = react_agent(model, [Weather::tool(), AddPair::tool()])
        .compile()
        .unwrap();
    let out = app.invoke(human("go"), &RunConfig::default()).await.unwrap();
    let answers: Vec<(String, ToolStatus)> = out.messages[2..8]
        .iter()
        .map(|m| {
            let t = m.as_tool().unwrap();
            (t.content.text(), t.status)
        })
        .collect();
    assert_eq!(answers[0], ("21°C in Paris at 9h".to_owned(), ToolStatus::Success));
    assert_eq!(answers[1], ("42".to_owned(), ToolStatus::Success));
    assert_eq!(
        answers[2],
        (
            "Error: no city given\n Please fix your mistakes.".to_owned(),
            ToolStatus::Error
        )
    );
    assert_eq!(answers[3].1, ToolStatus::Error);
    assert!(
        answers[3]
            .0
            .starts_with("Error: invalid arguments: invalid type: string \"x\", expected i64"),
        "{}",
        answers[3].0
    );
    // A named argument's error names it.
    assert_eq!(
        answers[4].0,
        "Error: invalid arguments: `city`: invalid type: integer `5`, expected a string\n Please fix your mistakes."
    );
    assert_eq!(
        answers[5].0,
        "Error: invalid arguments: missing field `city`\n Please fix your mistakes."
    );
    assert_eq!(out.messages[8].text(), "done");
}

#[tokio::test]
async fn fail_on_error_fails_the_run_on_a_tool_error() {
    let calls = AiMessage::new("").with_tool_calls(vec![ToolCall::new("c3", "weather", args(json!({"city": ""})))]);
    let app = react_agent(FakeChatModel::new([calls]), [Weather::tool()])
        .fail_on_tool_error()
        .compile()
        .unwrap();
    let err = app.invoke(human("go"), &RunConfig::default()).await.unwrap_err();
    assert_eq!(err.node_name(), Some("tools"));
    assert!(
        err.to_string()
            .contains("tool `weather` (call `c3`) failed: no city given"),
        "{err}"
    );
}

#[tokio::test]
async fn fail_on_error_fails_the_run_on_an_unknown_tool() {
    let calls = AiMessage::new("").with_tool_calls(vec![ToolCall::new("c1", "nope", args(json!({})))]);
    let app = react_agent(FakeChatModel::new([calls]), [Weather::tool()])
        .fail_on_tool_error()
        .compile()
        .unwrap();
    let err = app.invoke(human("go"), &RunConfig::default()).await.unwrap_err();
    assert!(
        err.to_string().contains("tool call `c1` names unknown tool `nope`"),
        "{err}"
    );
}

fn delete_agent(
    db: &std::path::Path,
    script: Vec<AiMessage>,
) -> weir_runtime::CompiledGraph<weir_agent::message::MessagesState> {
    react_agent(FakeChatModel::new(script), [Delete::tool(), Weather::tool()])
        .checkpointer(SqliteSaver::open(db).unwrap())
        .compile()
        .unwrap()
}

#[tokio::test]
async fn a_tool_asks_a_person_and_a_new_graph_on_the_same_sqlite_file_resumes_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("approve.db");
    let calls = AiMessage::new("").with_tool_calls(vec![
        ToolCall::new("c1", "delete", args(json!({"path": "/tmp/x"}))),
        ToolCall::new("c2", "weather", args(json!({"city": "Oslo"}))),
    ]);
    let cfg = RunConfig::thread("approve-1");
    {
        let first = delete_agent(&db, vec![calls]);
        let paused = first.run(human("delete /tmp/x"), &cfg).await.unwrap();
        assert!(paused.is_paused());
        let snapshot = first.get_state(&cfg).await.unwrap().unwrap();
        assert_eq!(snapshot.next, ["tools"]);
        assert_eq!(snapshot.pauses[0].question, Some(json!({"approve": "delete /tmp/x?"})));
        assert_eq!(snapshot.values.messages.len(), 2, "no tool message before the answer");
    }
    // Another process, another graph: the paused thread is in the file.
    // (An id of its own: a new fake model numbers its answers from `fake-0` again, and
    // add_messages would replace the first model's answer by id.)
    let answer = AiMessage {
        id: Some("second-0".into()),
        ..AiMessage::new("deleted it")
    };
    let second = delete_agent(&db, vec![answer]);
    let out = second.resume_with(true, &cfg).await.unwrap();
    let texts: Vec<String> = out.state().messages.iter().map(Message::text).collect();
    assert_eq!(
        texts,
        [
            "delete /tmp/x",
            "",
            "deleted /tmp/x",
            "21°C in Oslo at 12h",
            "deleted it"
        ]
    );
    assert!(!out.is_paused());
}

#[tokio::test]
async fn a_refusal_reaches_the_tool() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("refuse.db");
    let calls = AiMessage::new("").with_tool_calls(vec![ToolCall::new("c1", "delete", args(json!({"path": "/etc"})))]);
    let app = delete_agent(&db, vec![calls, AiMessage::new("ok, kept it")]);
    let cfg = RunConfig::thread("refuse-1");
    assert!(app.run(human("delete /etc"), &cfg).await.unwrap().is_paused());
    let out = app.resume_with(false, &cfg).await.unwrap();
    assert_eq!(out.state().messages[2].text(), "refused");
    assert_eq!(out.state().messages[3].text(), "ok, kept it");
}

#[tokio::test]
async fn an_answer_of_the_wrong_type_is_an_error_naming_the_node() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("wrong.db");
    let calls = AiMessage::new("").with_tool_calls(vec![ToolCall::new("c1", "delete", args(json!({"path": "/a"})))]);
    let app = delete_agent(&db, vec![calls]);
    let cfg = RunConfig::thread("wrong-1");
    assert!(app.run(human("delete /a"), &cfg).await.unwrap().is_paused());
    let err = app.resume_with("yes please", &cfg).await.unwrap_err();
    assert_eq!(err.node_name(), Some("tools"), "{err}");
}

/// A shared tool list keeps its tools' specs.
#[test]
fn tool_gives_a_shared_tool() {
    let t: Arc<dyn Tool> = Delete::tool();
    assert_eq!(t.spec().name, "delete");
}
