//! The OpenAI-compatible adapter against a local stub server: chunks as they stream,
//! fragments reassembled, usage summed, and every way a call can fail as a `ModelError` that
//! names the model and the status.

mod stub;

use futures::StreamExt;
use serde_json::json;
use std::time::Duration;
use stub::{call, done, event, text, usage, Reply, Stub};
use weir_agent::message::{AiMessageChunk, Content, Message, UsageMetadata};
use weir_agent::model::{ChatModel, ModelError, OpenAiChat};

fn model(stub: &Stub) -> OpenAiChat {
    OpenAiChat::new("stub-model").base_url(&stub.base_url)
}

async fn ask(stub: &Stub) -> Result<weir_agent::message::AiMessage, ModelError> {
    model(stub).invoke(&[Message::human("hi")], &[]).await
}

#[tokio::test]
async fn chunks_stream_in_order_and_merge_into_the_whole_answer() {
    let reply = Reply::Stream(vec![
        text("c", "Hel"),
        text("c", "lo"),
        call("c", 0, Some("k1"), Some("add"), "{\"a\""),
        call("c", 0, None, None, ": 1}"),
        usage("c", 7, 2),
        usage("c", 0, 3),
        done(),
    ]);
    let stub = Stub::start(vec![reply]).await;
    let m = model(&stub);
    let chunks: Vec<AiMessageChunk> = m
        .stream(&[Message::human("hi")], &[])
        .map(|c| c.unwrap())
        .collect()
        .await;
    assert_eq!(chunks.len(), 6);
    assert_eq!(chunks[0].content.text(), "Hel");
    assert_eq!(chunks[3].tool_call_chunks[0].args.as_deref(), Some(": 1}"));
    let whole = chunks
        .into_iter()
        .fold(AiMessageChunk::default(), |a, c| a + c)
        .into_message();
    assert_eq!(whole.content.text(), "Hello");
    assert_eq!(whole.id.as_deref(), Some("c"));
    assert_eq!(whole.tool_calls[0].id.as_deref(), Some("k1"));
    assert_eq!(whole.tool_calls[0].args["a"], 1);
    assert_eq!(
        whole.usage_metadata,
        Some(UsageMetadata::new(7, 5)),
        "usage summed over chunks"
    );
    assert_eq!(whole.response_metadata["model_name"], "stub-model");
}

#[tokio::test]
async fn an_http_error_names_the_model_and_the_status() {
    let stub = Stub::start(vec![
        Reply::Status(500, "boom".into()),
        Reply::Status(401, "bad key".into()),
    ])
    .await;
    let e = ask(&stub).await.unwrap_err();
    assert_eq!(e.to_string(), "model `stub-model` answered HTTP status 500: boom");
    assert_eq!(
        (e.model(), e.status(), e.is_retryable()),
        ("stub-model", Some(500), true)
    );
    let e = ask(&stub).await.unwrap_err();
    assert_eq!((e.status(), e.is_retryable()), (Some(401), false));
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let stub = Stub::start(vec![Reply::Hang]).await;
    let m = model(&stub).timeout(Duration::from_millis(200));
    let e = m.invoke(&[Message::human("hi")], &[]).await.unwrap_err();
    assert!(e.is_timeout());
    assert_eq!(e.to_string(), "model `stub-model` did not answer within 200ms");
}

#[tokio::test]
async fn a_stream_cut_before_its_end_marker_is_an_error_not_a_short_answer() {
    let stub = Stub::start(vec![Reply::Stream(vec![text("c", "Hel")])]).await;
    let e = ask(&stub).await.unwrap_err();
    assert!(e.is_truncated());
    assert_eq!(
        e.to_string(),
        "model `stub-model` (HTTP status 200): the stream ended before its end marker"
    );
}

#[tokio::test]
async fn an_unreadable_event_or_a_provider_error_event_is_an_error_naming_the_status() {
    let garbage = Reply::Stream(vec!["data: {not json\n\n".into(), done()]);
    let provider = Reply::Stream(vec![event(&serde_json::json!({"error": {"message": "overloaded"}}))]);
    let stub = Stub::start(vec![garbage, provider]).await;
    let e = ask(&stub).await.unwrap_err();
    assert!(
        e.to_string()
            .starts_with("model `stub-model` (HTTP status 200) sent a malformed stream event: key must be a string"),
        "{e}"
    );
    let e = ask(&stub).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "model `stub-model` (HTTP status 200) sent a malformed stream event: overloaded"
    );
}

#[tokio::test]
async fn invalid_tool_call_json_arrives_as_an_invalid_tool_call() {
    let stub = Stub::start(vec![Reply::Stream(vec![
        call("c", 0, Some("k"), Some("add"), "{\"a\": "),
        done(),
    ])])
    .await;
    let answer = ask(&stub).await.unwrap();
    assert!(answer.tool_calls.is_empty());
    let bad = &answer.invalid_tool_calls[0];
    assert_eq!(
        (bad.id.as_deref(), bad.name.as_deref(), bad.args.as_deref()),
        (Some("k"), Some("add"), Some("{\"a\": "))
    );
    assert!(bad
        .error
        .as_deref()
        .unwrap()
        .starts_with("the arguments are not valid JSON"));
}

#[tokio::test]
async fn an_unreachable_endpoint_is_an_error_naming_the_model() {
    // A port just freed: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let m = OpenAiChat::new("stub-model").base_url(format!("http://127.0.0.1:{port}/v1"));
    let e = m.invoke(&[Message::human("hi")], &[]).await.unwrap_err();
    assert!(
        e.to_string().starts_with("model `stub-model` could not be reached"),
        "{e}"
    );
    assert_eq!(e.status(), None);
}

#[tokio::test]
async fn a_stream_that_stalls_mid_answer_times_out_naming_the_status() {
    let stub = Stub::start(vec![Reply::Stall(vec![text("c", "Hel")])]).await;
    let m = model(&stub).timeout(Duration::from_millis(200));
    let question = [Message::human("hi")];
    let mut chunks = m.stream(&question, &[]);
    assert_eq!(chunks.next().await.unwrap().unwrap().content.text(), "Hel");
    let e = chunks.next().await.unwrap().unwrap_err();
    assert!(e.is_timeout() && e.is_retryable());
    assert_eq!(
        e.to_string(),
        "model `stub-model` (HTTP status 200) sent nothing for 200ms mid-stream"
    );
    assert!(chunks.next().await.is_none(), "the stream ends after its error");
}

#[tokio::test]
async fn images_and_files_a_chat_ui_sends_reach_the_model_in_openai_s_shapes() {
    let stub = Stub::start(vec![stub::answer("c", &["a cat"], 1, 1)]).await;
    // What agent-chat-ui sends: an image and a PDF in LangChain's older block form.
    let question = Message::human(Content::Blocks(vec![
        json!({"type": "text", "text": "what is this?"}),
        json!({"type": "image", "source_type": "base64", "mime_type": "image/png", "data": "iVBORw0KGgo=", "metadata": {"name": "cat.png"}}),
        json!({"type": "file", "source_type": "base64", "mime_type": "application/pdf", "data": "JVBERi0=", "metadata": {"filename": "cat.pdf"}}),
    ]));
    let answer = model(&stub).invoke(&[question], &[]).await.unwrap();
    assert_eq!(answer.content.text(), "a cat");
    assert_eq!(
        stub.requests()[0]["messages"][0]["content"],
        json!([
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "cat.pdf"}},
        ])
    );
}

#[tokio::test]
async fn a_block_the_model_cannot_take_is_an_error_naming_it_and_nothing_is_sent() {
    let stub = Stub::start(vec![stub::answer("c", &["never"], 1, 1)]).await;
    let messages = [
        Message::human("hi"),
        Message::human(Content::Blocks(vec![
            json!({"type": "text", "text": "and this?"}),
            json!({"type": "video", "url": "https://example.invalid/v.mp4"}),
        ])),
    ];
    let e = model(&stub).invoke(&messages, &[]).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "model `stub-model` cannot take the messages: messages[1].content[1]: OpenAI's chat completions take \
         no `video` block"
    );
    assert!(!e.is_retryable());
    assert!(stub.requests().is_empty(), "nothing was sent");
}
