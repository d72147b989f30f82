//! Structured output for the ReAct agent: the loop, then one more model call for a `T`, with
//! the fake model and with the OpenAI-compatible adapter against a local stub (which must
//! receive `response_format`), and a malformed answer as an error naming the type.

mod stub;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::Arc;
use stub::{call, done, finish, Reply, Stub};
use weir_agent::message::{AiMessage, Message, ToolCall};
use weir_agent::model::{FakeChatModel, OpenAiChat};
use weir_agent::tool::{tool_fn, Tool};
use weir_agent::{react_agent, StructuredStateUpdate};
use weir_runtime::checkpoint::MemorySaver;
use weir_runtime::RunConfig;

/// The answer the agent must give.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Forecast {
    /// The city.
    city: String,
    /// Degrees Celsius.
    celsius: f64,
}

#[derive(Deserialize, JsonSchema)]
struct CityArgs {
    city: String,
}

fn weather() -> Arc<dyn Tool> {
    tool_fn("weather", "The weather in a city.", |x: CityArgs| async move {
        Ok::<_, weir_runtime::BoxError>(format!("21.5°C in {}", x.city))
    })
}

fn ask(text: &str) -> StructuredStateUpdate<Forecast> {
    StructuredStateUpdate::default().messages(Message::human(text).into())
}

fn weather_call() -> AiMessage {
    AiMessage::new("").with_tool_calls(vec![ToolCall::new(
        "c1",
        "weather",
        json!({"city": "Paris"}).as_object().cloned().unwrap(),
    )])
}

#[tokio::test]
async fn the_fake_model_s_last_answer_is_parsed_into_the_structured_response() {
    let model = FakeChatModel::new([
        weather_call(),
        AiMessage::new("It is 21.5°C in Paris."),
        AiMessage::new(r#"{"city": "Paris", "celsius": 21.5}"#),
    ]);
    let app = react_agent(model, [weather()])
        .checkpointer(MemorySaver::new())
        .response_format::<Forecast>()
        .compile()
        .unwrap();
    let cfg = RunConfig::thread("s-1");
    let out = app.invoke(ask("weather in Paris?"), &cfg).await.unwrap();
    assert_eq!(
        out.structured_response,
        Some(Forecast {
            city: "Paris".into(),
            celsius: 21.5
        })
    );
    let kinds: Vec<&str> = out.messages.iter().map(Message::kind).collect();
    assert_eq!(
        kinds,
        ["human", "ai", "tool", "ai"],
        "the structured answer is no message"
    );
    // The checkpoint keeps it.
    let saved = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(saved.values.structured_response, out.structured_response);
}

#[tokio::test]
async fn an_answer_that_is_not_the_type_fails_the_run_naming_the_type() {
    let model = FakeChatModel::new([AiMessage::new("hi"), AiMessage::new(r#"{"city": "Paris"}"#)]).named("fake-x");
    let app = react_agent(model, []).response_format::<Forecast>().compile().unwrap();
    let err = app.invoke(ask("?"), &RunConfig::default()).await.unwrap_err();
    assert_eq!(err.node_name(), Some("respond"));
    let msg = err.to_string();
    assert!(
        msg.contains("model `fake-x` answered with no valid `structured::Forecast` for the structured response: missing field `celsius`"),
        "{msg}"
    );
}

#[tokio::test]
async fn a_structured_prompt_is_sent_before_the_conversation() {
    let model = Arc::new(
        FakeChatModel::new([
            AiMessage::new("ok"),
            AiMessage::new(
                r#"```json
{"city": "Oslo", "celsius": -3}
```"#,
            ),
        ])
        .recording(),
    );
    let app = react_agent(Shared(model.clone()), [])
        .system_prompt("Be brief.")
        .response_format::<Forecast>()
        .prompt("Answer as a forecast.")
        .compile()
        .unwrap();
    let out = app.invoke(ask("Oslo?"), &RunConfig::default()).await.unwrap();
    assert_eq!(
        out.structured_response.unwrap().celsius,
        -3.0,
        "a fenced answer is read too"
    );
    let asked: Vec<Vec<String>> = model
        .requests()
        .iter()
        .map(|r| r.iter().map(Message::text).collect())
        .collect();
    assert_eq!(asked[0], ["Be brief.", "Oslo?"]);
    assert_eq!(asked[1], ["Answer as a forecast.", "Oslo?", "ok"]);
}

struct Shared(Arc<FakeChatModel>);

impl weir_agent::model::ChatModel for Shared {
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
async fn openai_is_asked_with_a_json_schema_response_format() {
    let stub = Stub::start(vec![
        Reply::Stream(vec![
            call("c-1", 0, Some("call_w"), Some("weather"), "{\"city\": \"Paris\"}"),
            finish("c-1", "tool_calls"),
            done(),
        ]),
        stub::answer("c-2", &["It is ", "21.5°C."], 20, 4),
        stub::answer("c-3", &["{\"city\": ", "\"Paris\", \"celsius\": 21.5}"], 30, 9),
    ])
    .await;
    let model = OpenAiChat::new("stub-model").base_url(&stub.base_url);
    let app = react_agent(model, [weather()])
        .response_format::<Forecast>()
        .compile()
        .unwrap();
    let out = app.invoke(ask("Paris?"), &RunConfig::default()).await.unwrap();
    assert_eq!(out.structured_response.unwrap().city, "Paris");

    let requests = stub.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests[0].get("response_format").is_none(),
        "the loop's calls are plain"
    );
    assert!(requests[0]["tools"].is_array());
    let last = &requests[2];
    assert!(last.get("tools").is_none(), "no tools for the structured answer");
    let rf = &last["response_format"];
    assert_eq!(rf["type"], "json_schema");
    assert_eq!(rf["json_schema"]["name"], "Forecast");
    assert_eq!(rf["json_schema"]["schema"]["properties"]["celsius"]["type"], "number");
    assert_eq!(rf["json_schema"]["schema"]["required"], json!(["city", "celsius"]));
    let roles: Vec<&str> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
}
