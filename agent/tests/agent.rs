//! The agent layer end to end: a ReAct agent over the OpenAI-compatible adapter against a local
//! stub server, tools run concurrently, tool errors as messages, the step budget, pausing before
//! tools, and conversations kept by the SQLite checkpointer.

mod stub;

#[path = "../examples/agent.rs"]
#[allow(dead_code)]
mod example;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use stub::{call, done, finish, usage, Reply, Stub};
use tokio::sync::Barrier;
use weir_agent::message::{AiMessage, Message, MessagesStateUpdate, ToolCall, ToolStatus, UsageMetadata};
use weir_agent::model::{is_retryable, FakeChatModel, OpenAiChat};
use weir_agent::tool::{tool_fn, Tool};
use weir_agent::{react_agent, NEED_MORE_STEPS};
use weir_runtime::checkpoint::{MemorySaver, SqliteSaver};
use weir_runtime::{RetryPolicy, RunConfig};

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

#[derive(Deserialize, JsonSchema)]
struct CityArgs {
    city: String,
}

/// `add` and `weather`; with a barrier, each waits for the other to be running too.
fn tools(barrier: Option<Arc<Barrier>>) -> Vec<Arc<dyn Tool>> {
    let (b1, b2) = (barrier.clone(), barrier);
    vec![
        tool_fn("add", "Adds two integers.", move |x: AddArgs| {
            let wait = meet(b1.clone());
            async move {
                wait.await?;
                Ok::<_, weir_runtime::BoxError>(x.a + x.b)
            }
        }),
        tool_fn("weather", "The weather in a city.", move |x: CityArgs| {
            let wait = meet(b2.clone());
            async move {
                wait.await?;
                Ok::<_, weir_runtime::BoxError>(format!("sunny in {}", x.city))
            }
        }),
    ]
}

/// Waits at the barrier, if any, for the other tool (a bounded wait: a run that calls the tools
/// one after the other fails instead of hanging).
async fn meet(barrier: Option<Arc<Barrier>>) -> Result<(), weir_runtime::BoxError> {
    if let Some(b) = barrier {
        tokio::time::timeout(Duration::from_secs(10), b.wait())
            .await
            .map_err(|_| "the other tool call never ran alongside this one")?;
    }
    Ok(())
}

fn human(text: &str) -> MessagesStateUpdate {
    MessagesStateUpdate::default().messages(Message::human(text).into())
}

/// The first answer: two tool calls whose arguments arrive in fragments, one event split
/// across two pieces of the body.
fn two_calls() -> Reply {
    let split = call("c-1", 1, None, None, "\"Paris\"}");
    let (head, tail) = split.split_at(split.len() / 2);
    Reply::Stream(vec![
        call("c-1", 0, Some("call_add"), Some("add"), ""),
        call("c-1", 1, Some("call_weather"), Some("weather"), "{\"city\":"),
        call("c-1", 0, None, None, "{\"a\": 2, "),
        head.to_owned(),
        tail.to_owned(),
        call("c-1", 0, None, None, "\"b\": 3}"),
        finish("c-1", "tool_calls"),
        usage("c-1", 10, 5),
        done(),
    ])
}

#[tokio::test]
async fn a_react_agent_runs_two_tool_calls_concurrently_then_answers() {
    let stub = Stub::start(vec![
        two_calls(),
        stub::answer("c-2", &["It is ", "sunny; ", "5."], 30, 4),
    ])
    .await;
    let model = OpenAiChat::new("stub-model").base_url(&stub.base_url).api_key("k");
    let app = react_agent(model, tools(Some(Arc::new(Barrier::new(2)))))
        .system_prompt("Be brief.")
        .compile()
        .unwrap();
    let out = app
        .invoke(human("add 2 and 3, and Paris weather?"), &RunConfig::default())
        .await
        .unwrap();

    let kinds: Vec<&str> = out.messages.iter().map(Message::kind).collect();
    assert_eq!(kinds, ["human", "ai", "tool", "tool", "ai"]);
    let first = out.messages[1].as_ai().unwrap();
    let mut want_add = serde_json::Map::new();
    want_add.insert("a".into(), json!(2));
    want_add.insert("b".into(), json!(3));
    assert_eq!(first.tool_calls[0], ToolCall::new("call_add", "add", want_add));
    assert_eq!(first.tool_calls[1].args["city"], "Paris");
    assert_eq!(first.usage_metadata, Some(UsageMetadata::new(10, 5)));
    let answers: Vec<(&str, String)> = out.messages[2..4]
        .iter()
        .map(|m| (m.as_tool().unwrap().tool_call_id.as_str(), m.text()))
        .collect();
    assert_eq!(
        answers,
        [
            ("call_add", "5".to_owned()),
            ("call_weather", "sunny in Paris".to_owned())
        ]
    );
    assert_eq!(out.messages[4].text(), "It is sunny; 5.");
    assert_eq!(
        out.messages[4].as_ai().unwrap().usage_metadata,
        Some(UsageMetadata::new(30, 4))
    );

    // What the model was sent the second time: the prompt, the exchange, the tools.
    let second = &stub.requests()[1];
    assert_eq!(second["stream"], true);
    assert_eq!(second["messages"][0], json!({"role": "system", "content": "Be brief."}));
    assert_eq!(
        second["messages"][2]["tool_calls"][0]["function"]["arguments"],
        r#"{"a":2,"b":3}"#
    );
    assert_eq!(
        second["messages"][3],
        json!({"role": "tool", "tool_call_id": "call_add", "content": "5"})
    );
    assert_eq!(second["tools"][0]["function"]["name"], "add");
    assert_eq!(
        second["tools"][0]["function"]["parameters"]["required"],
        json!(["a", "b"])
    );
}

#[tokio::test]
async fn invalid_tool_call_json_and_unknown_tools_answer_with_error_tool_messages() {
    let bad = Reply::Stream(vec![
        call("c-1", 0, Some("call_bad"), Some("add"), "{\"a\": 2,"),
        call("c-1", 1, Some("call_nope"), Some("teleport"), "{}"),
        finish("c-1", "tool_calls"),
        done(),
    ]);
    let stub = Stub::start(vec![bad, stub::answer("c-2", &["sorry"], 1, 1)]).await;
    let model = OpenAiChat::new("stub-model").base_url(&stub.base_url);
    let app = react_agent(model, tools(None)).compile().unwrap();
    let out = app.invoke(human("go"), &RunConfig::default()).await.unwrap();

    let ai = out.messages[1].as_ai().unwrap();
    assert_eq!(ai.tool_calls.len(), 1, "the unknown tool's call parses");
    assert_eq!(ai.invalid_tool_calls[0].args.as_deref(), Some("{\"a\": 2,"));
    let unknown = out.messages[2].as_tool().unwrap();
    assert_eq!(
        (unknown.tool_call_id.as_str(), unknown.status),
        ("call_nope", ToolStatus::Error)
    );
    assert_eq!(
        unknown.content.text(),
        "Error: teleport is not a valid tool, try one of [add, weather]."
    );
    let invalid = out.messages[3].as_tool().unwrap();
    assert_eq!(
        (invalid.tool_call_id.as_str(), invalid.status),
        ("call_bad", ToolStatus::Error)
    );
    assert!(invalid
        .content
        .text()
        .starts_with("Error: invalid arguments: the arguments are not valid JSON"));
    assert_eq!(out.messages[4].text(), "sorry");
}

#[tokio::test]
async fn fail_on_tool_error_fails_the_run_naming_the_tool_and_the_call() {
    let wrong = AiMessage::new("").with_tool_calls(vec![ToolCall::new("c9", "add", serde_json::Map::new())]);
    let app = react_agent(FakeChatModel::new([wrong]), tools(None))
        .fail_on_tool_error()
        .compile()
        .unwrap();
    let err = app
        .invoke(human("go"), &RunConfig::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("tool `add` (call `c9`) failed: invalid arguments: missing field `a`"),
        "{err}"
    );
}

#[tokio::test]
async fn an_http_500_fails_the_run_naming_the_model_and_the_status() {
    let stub = Stub::start(vec![Reply::Status(500, "upstream exploded".into())]).await;
    let app = react_agent(OpenAiChat::new("stub-model").base_url(&stub.base_url), [])
        .compile()
        .unwrap();
    let err = app.invoke(human("hi"), &RunConfig::default()).await.unwrap_err();
    assert_eq!(err.node_name(), Some("agent"));
    assert!(
        err.to_string()
            .contains("model `stub-model` answered HTTP status 500: upstream exploded"),
        "{err}"
    );
}

#[tokio::test]
async fn the_model_node_retries_a_500_through_the_retry_policy() {
    let stub = Stub::start(vec![
        Reply::Status(503, "busy".into()),
        stub::answer("c-1", &["ok"], 1, 1),
    ])
    .await;
    let policy = RetryPolicy::new(2)
        .initial_interval(Duration::from_millis(1))
        .jitter(false)
        .retry_on(is_retryable);
    let app = react_agent(OpenAiChat::new("stub-model").base_url(&stub.base_url), [])
        .model_retry(policy)
        .compile()
        .unwrap();
    let out = app.invoke(human("hi"), &RunConfig::default()).await.unwrap();
    assert_eq!(out.messages[1].text(), "ok");
    assert_eq!(stub.requests().len(), 2);
}

#[tokio::test]
async fn the_step_budget_ends_the_run_with_a_final_message_instead_of_a_recursion_error() {
    let forever = AiMessage::new("").with_tool_calls(vec![ToolCall::new(
        "c",
        "weather",
        json!({"city": "Oslo"}).as_object().unwrap().clone(),
    )]);
    let model = FakeChatModel::new([forever]).cycle();
    let app = react_agent(model, tools(None)).compile().unwrap();
    let out = app
        .invoke(human("loop"), &RunConfig::default().recursion_limit(6))
        .await
        .unwrap();
    let last = out.messages.last().unwrap();
    assert_eq!(last.text(), NEED_MORE_STEPS);
    assert!(!last.as_ai().unwrap().has_tool_calls());
    // Steps 1..=6: agent, tools, agent, tools, agent (its calls replaced), then nothing left.
    let kinds: Vec<&str> = out.messages.iter().map(Message::kind).collect();
    assert_eq!(kinds, ["human", "ai", "tool", "ai", "tool", "ai"]);
}

#[tokio::test]
async fn interrupt_before_tools_pauses_with_the_calls_and_resuming_runs_them() {
    let calls = AiMessage::new("").with_tool_calls(vec![ToolCall::new(
        "c1",
        "add",
        json!({"a": 1, "b": 1}).as_object().unwrap().clone(),
    )]);
    let app = react_agent(FakeChatModel::new([calls, AiMessage::new("2")]), tools(None))
        .interrupt_before_tools()
        .checkpointer(MemorySaver::new())
        .compile()
        .unwrap();
    let cfg = RunConfig::thread("t");
    let paused = app.run(human("1+1?"), &cfg).await.unwrap();
    assert!(paused.is_paused());
    assert_eq!(app.get_state(&cfg).await.unwrap().unwrap().next, ["tools"]);
    assert_eq!(paused.state().messages.len(), 2);
    let done = app.resume(&cfg).await.unwrap();
    let texts: Vec<String> = done.state().messages.iter().map(Message::text).collect();
    assert_eq!(texts, ["1+1?", "", "2", "2"]);
}

#[tokio::test]
async fn two_invokes_on_one_thread_continue_the_conversation_from_the_sqlite_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("agent.db");
    let model = Arc::new(FakeChatModel::new([AiMessage::new("hello Ada"), AiMessage::new("you are Ada")]).recording());
    let app = react_agent(SharedModel(model.clone()), [])
        .checkpointer(SqliteSaver::open(&db).unwrap())
        .compile()
        .unwrap();
    let cfg = RunConfig::thread("t-1");
    app.invoke(human("I am Ada"), &cfg).await.unwrap();
    let out = app.invoke(human("who am I?"), &cfg).await.unwrap();
    let texts: Vec<String> = out.messages.iter().map(Message::text).collect();
    assert_eq!(texts, ["I am Ada", "hello Ada", "who am I?", "you are Ada"]);
    let second_request: Vec<String> = model.requests()[1].iter().map(Message::text).collect();
    assert_eq!(second_request, ["I am Ada", "hello Ada", "who am I?"]);
}

/// A model shared with the test, to read what it was asked.
struct SharedModel(Arc<FakeChatModel>);

impl weir_agent::model::ChatModel for SharedModel {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn stream<'a>(
        &'a self,
        m: &'a [Message],
        t: &'a [weir_agent::tool::ToolSpec],
    ) -> weir_agent::model::ChunkStream<'a> {
        self.0.stream(m, t)
    }
}

#[tokio::test]
async fn the_example_agent_answers_offline_and_keeps_its_thread() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("example.db");
    let answers = example::run_offline(&db).await.unwrap();
    assert_eq!(
        answers,
        ["It is 21°C in Paris, and 21 + 21 = 42.", "You asked about Paris."]
    );
}

/// A tool that asks a person before it acts.
struct Delete {
    spec: weir_agent::tool::ToolSpec,
}

impl Tool for Delete {
    fn spec(&self) -> &weir_agent::tool::ToolSpec {
        &self.spec
    }
    fn call<'a>(
        &'a self,
        args: serde_json::Map<String, serde_json::Value>,
        ctx: &'a weir_runtime::Context,
    ) -> futures::future::BoxFuture<'a, Result<weir_agent::message::Content, weir_agent::tool::ToolError>> {
        Box::pin(async move {
            let path = args["path"].as_str().unwrap_or_default().to_owned();
            let approved: bool = ctx
                .interrupt(json!({"approve": format!("delete {path}?")}))
                .map_err(weir_agent::tool::ToolError::failed)?;
            Ok(if approved {
                format!("deleted {path}")
            } else {
                "refused".to_owned()
            }
            .into())
        })
    }
}

#[tokio::test]
async fn an_interrupt_inside_a_tool_pauses_the_run_and_the_answer_reaches_the_tool() {
    let delete = Arc::new(Delete {
        spec: weir_agent::tool::ToolSpec {
            name: "delete".into(),
            description: "Deletes a file, once a person approves.".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        },
    });
    let calls = AiMessage::new("").with_tool_calls(vec![ToolCall::new(
        "c1",
        "delete",
        json!({"path": "/tmp/x"}).as_object().unwrap().clone(),
    )]);
    let app = react_agent(
        FakeChatModel::new([calls, AiMessage::new("done")]),
        [delete as Arc<dyn Tool>],
    )
    .checkpointer(MemorySaver::new())
    .compile()
    .unwrap();
    let cfg = RunConfig::thread("t");
    let paused = app.run(human("delete /tmp/x"), &cfg).await.unwrap();
    assert!(paused.is_paused());
    let snapshot = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snapshot.pauses[0].question, Some(json!({"approve": "delete /tmp/x?"})));
    let out = app.resume_with(true, &cfg).await.unwrap();
    let texts: Vec<String> = out.state().messages.iter().map(Message::text).collect();
    assert_eq!(texts, ["delete /tmp/x", "", "deleted /tmp/x", "done"]);
}
