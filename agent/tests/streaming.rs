//! Token streaming from the agent layer: `react_agent`'s model calls emit each chunk through
//! the run's `messages` mode as LangChain's `AIMessageChunk` dict, in order, with one id per
//! answer that the answer in the state keeps; tool-call deltas arrive as `tool_call_chunks`;
//! the tool node's answers follow as whole tool messages. Against the local OpenAI stub.

mod stub;

use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use stub::{call, done, finish, usage, Reply, Stub};
use weir_agent::message::{AiMessageChunk, Message, MessagesState, MessagesStateUpdate};
use weir_agent::model::{FakeChatModel, OpenAiChat};
use weir_agent::react_agent;
use weir_agent::tool::{tool_fn, Tool};
use weir_runtime::{CompiledGraph, Event, MessageMeta, RunConfig, StreamMode};

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

fn add() -> std::sync::Arc<dyn Tool> {
    tool_fn("add", "Adds two integers.", |x: AddArgs| async move {
        Ok::<_, std::io::Error>(x.a + x.b)
    })
}

fn human(text: &str) -> MessagesStateUpdate {
    MessagesStateUpdate::default().messages(Message::human(text).into())
}

/// The run's message events, `(chunk, metadata)`, and its final state.
async fn run(
    app: &CompiledGraph<MessagesState>,
    input: MessagesStateUpdate,
) -> (Vec<(Value, std::sync::Arc<MessageMeta>)>, MessagesState) {
    let mut stream = app.stream(input, &RunConfig::default(), StreamMode::MESSAGES | StreamMode::VALUES);
    let (mut messages, mut last) = (Vec::new(), None);
    while let Some(event) = stream.next().await {
        match event.unwrap() {
            Event::Message { chunk, meta } => messages.push((chunk, meta)),
            Event::Values { state, .. } => last = Some(state),
            _ => {}
        }
    }
    (messages, (*last.unwrap()).clone())
}

#[tokio::test]
async fn react_agent_streams_tokens_and_tool_call_deltas_in_order() {
    let stub = Stub::start(vec![
        Reply::Stream(vec![
            call("c-1", 0, Some("call_add"), Some("add"), ""),
            call("c-1", 0, None, None, "{\"a\": 2, "),
            call("c-1", 0, None, None, "\"b\": 3}"),
            finish("c-1", "tool_calls"),
            usage("c-1", 10, 5),
            done(),
        ]),
        stub::answer("c-2", &["It is ", "5", "."], 30, 4),
    ])
    .await;
    let model = OpenAiChat::new("stub-model").base_url(&stub.base_url).api_key("k");
    let app = react_agent(model, [add()]).compile().unwrap();
    let (events, state) = run(&app, human("2 + 3?")).await;

    // Who emitted what, in order: the model's chunks, the tool's answer, the model's again.
    let seen: Vec<(String, i64, String, String)> = events
        .iter()
        .map(|(c, m)| {
            let kind = c["type"].as_str().unwrap().to_owned();
            (
                m.node.clone(),
                m.step,
                kind,
                c["id"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let chunk = |step, id: &str| ("agent".to_owned(), step, "AIMessageChunk".to_owned(), id.to_owned());
    let tool_id = state.messages[2].id().unwrap().to_owned();
    let mut want = vec![chunk(1, "c-1"); 5];
    want.extend([chunk(1, "c-1")]); // the closing chunk, `chunk_position: "last"`
    want.push(("tools".to_owned(), 2, "tool".to_owned(), tool_id));
    want.extend(vec![chunk(3, "c-2"); 6]);
    assert_eq!(seen, want);

    // The tool-call deltas, as the provider sent them.
    let fragments: Vec<Value> = events[..5]
        .iter()
        .flat_map(|(c, _)| c["tool_call_chunks"].as_array().unwrap().clone())
        .map(|f| json!([f["index"], f["id"], f["name"], f["args"]]))
        .collect();
    assert_eq!(
        fragments,
        [
            json!([0, "call_add", "add", ""]),
            json!([0, null, null, "{\"a\": 2, "]),
            json!([0, null, null, "\"b\": 3}"]),
        ]
    );
    // The tokens, in order, make the answer in the state, which has the chunks' id.
    let tokens: String = events[7..]
        .iter()
        .map(|(c, _)| c["content"].as_str().unwrap())
        .collect();
    assert_eq!(tokens, "It is 5.");
    let answer = state.messages.last().unwrap().as_ai().unwrap();
    assert_eq!(
        (answer.content.text(), answer.id.as_deref()),
        ("It is 5.".to_owned(), Some("c-2"))
    );
    assert_eq!(state.messages[1].id(), Some("c-1"));
    assert_eq!(events.last().unwrap().0["chunk_position"], "last");
    // The chunks merge into the first answer's tool call.
    let merged = events[..6]
        .iter()
        .map(|(c, _)| serde_json::from_value::<AiMessageChunk>(c.clone()).unwrap())
        .fold(AiMessageChunk::default(), |a, b| a + b)
        .into_message();
    assert_eq!(merged.tool_calls[0].args["b"], 3);
    assert_eq!(merged.usage_metadata.unwrap().total_tokens, 15);
}

// A provider that gives no id: the chunks share a new `lc_run--<uuid>` id, which the answer
// keeps; the fake model's last chunk closes the answer, so none is added.
#[tokio::test]
async fn chunks_without_a_provider_id_share_a_new_one_with_the_answer() {
    let stub = Stub::start(vec![Reply::Stream(vec![
        stub::text("", "hello"),
        stub::text("", " there"),
        done(),
    ])])
    .await;
    let model = OpenAiChat::new("stub-model").base_url(&stub.base_url).api_key("k");
    let app = react_agent(model, []).compile().unwrap();
    let (events, state) = run(&app, human("hi")).await;
    let id = state.messages[1].id().unwrap().to_owned();
    assert!(id.starts_with("lc_run--"), "{id}");
    assert!(events.iter().all(|(c, _)| c["id"] == id.as_str()));
    let tokens: Vec<&str> = events.iter().map(|(c, _)| c["content"].as_str().unwrap()).collect();
    assert_eq!(tokens, ["hello", " there", ""]);

    let fake = FakeChatModel::new([weir_agent::message::AiMessage::new("hello there friend")]);
    let app = react_agent(fake, []).compile().unwrap();
    let (events, state) = run(&app, human("hi")).await;
    let tokens: Vec<&str> = events.iter().map(|(c, _)| c["content"].as_str().unwrap()).collect();
    assert_eq!(tokens, ["hello", " ", "there", " ", "friend"]);
    assert_eq!(events[4].0["chunk_position"], "last");
    assert!(events.iter().all(|(c, _)| c["id"] == state.messages[1].id().unwrap()));
}

// A run that does not stream messages gets no chunk events and the same answer.
#[tokio::test]
async fn without_the_mode_the_model_is_invoked_and_nothing_streams() {
    let fake = FakeChatModel::new([weir_agent::message::AiMessage::new("hello there")]);
    let app = react_agent(fake, []).compile().unwrap();
    let mut stream = app.stream(
        human("hi"),
        &RunConfig::default(),
        StreamMode::VALUES | StreamMode::UPDATES | StreamMode::TASKS | StreamMode::CUSTOM,
    );
    let mut n = 0;
    while let Some(e) = stream.next().await {
        assert!(!matches!(e.unwrap(), Event::Message { .. }));
        n += 1;
    }
    assert!(n > 0);
}

#[tokio::test(start_paused = true)]
async fn a_paced_fake_model_streams_its_chunks_one_pace_apart() {
    use weir_agent::model::ChatModel;
    let pace = std::time::Duration::from_millis(40);
    let fake = FakeChatModel::new([weir_agent::message::AiMessage::new("hello there friend")]).paced(pace);
    let started = tokio::time::Instant::now();
    let mut arrivals = Vec::new();
    let question = [Message::human("hi")];
    let mut chunks = fake.stream(&question, &[]);
    while let Some(chunk) = chunks.next().await {
        arrivals.push((chunk.unwrap().content.text(), started.elapsed()));
    }
    let expected: Vec<_> = ["hello", " ", "there", " ", "friend"]
        .iter()
        .enumerate()
        .map(|(i, t)| (t.to_string(), pace * i as u32))
        .collect();
    assert_eq!(arrivals, expected);
}
