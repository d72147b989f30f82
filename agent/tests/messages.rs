//! Messages: LangGraph's own `add_messages` cases (tests/test_messages_state.py), the JSON
//! LangGraph's server sends (a recorded `messages-tuple` stream), chunk merging, and the
//! reducer inside runs: errors, and removals and replacements kept across a checkpoint.

use serde_json::{json, Value};
use weir_agent::message::{
    add_messages, try_add_messages, AiMessageChunk, Message, Messages, MessagesState, MessagesStateUpdate,
    RemoveMessage, ToolCallChunk, UsageMetadata, REMOVE_ALL_MESSAGES,
};
use weir_runtime::checkpoint::SqliteSaver;
use weir_runtime::{GraphBuilder, RunConfig, END, START};

fn h(text: &str, id: &str) -> Message {
    Message::human(text).with_id(id)
}
fn ai(text: &str, id: &str) -> Message {
    Message::ai(text).with_id(id)
}
fn sys(text: &str, id: &str) -> Message {
    Message::system(text).with_id(id)
}
fn merged(mut left: Vec<Message>, right: impl Into<Messages>) -> Vec<Message> {
    add_messages(&mut left, right.into());
    left
}

// The cases of LangGraph's test_messages_state.py, one test each.

#[test]
fn add_single_message() {
    assert_eq!(
        merged(vec![h("Hello", "1")], ai("Hi there!", "2")),
        [h("Hello", "1"), ai("Hi there!", "2")]
    );
}

#[test]
fn add_multiple_messages() {
    let right = vec![ai("Hi there!", "2"), sys("System message", "3")];
    assert_eq!(
        merged(vec![h("Hello", "1")], right),
        [h("Hello", "1"), ai("Hi there!", "2"), sys("System message", "3")]
    );
}

#[test]
fn update_existing_message() {
    assert_eq!(
        merged(vec![h("Hello", "1")], h("Hello again", "1")),
        [h("Hello again", "1")]
    );
}

#[test]
fn missing_ids_are_assigned_uuid_v4s() {
    let out = merged(vec![Message::human("Hello")], vec![Message::ai("Hi there!")]);
    assert_eq!(out.len(), 2);
    for m in &out {
        let id = uuid::Uuid::parse_str(m.id().unwrap()).unwrap();
        assert_eq!(id.get_version_num(), 4);
    }
    assert_ne!(out[0].id(), out[1].id());
}

#[test]
fn duplicates_in_input_keep_the_last() {
    let out = merged(vec![], vec![ai("Hi there!", "1"), ai("Hi there again!", "1")]);
    assert_eq!(out, [ai("Hi there again!", "1")]);
}

#[test]
fn remove_message() {
    let out = merged(vec![h("Hello", "1"), ai("Hi there!", "2")], RemoveMessage::new("2"));
    assert_eq!(out, [h("Hello", "1")]);
}

#[test]
fn duplicate_remove_message() {
    let out = merged(
        vec![h("Hello", "1"), ai("Hi there!", "2")],
        Messages::new().remove("2").remove("2"),
    );
    assert_eq!(out, [h("Hello", "1")]);
}

#[test]
fn remove_nonexistent_message_is_an_error_naming_the_id_and_changes_nothing() {
    let mut list = vec![h("Hello", "1")];
    let err = try_add_messages(&mut list, Messages::new().put(ai("x", "5")).remove("2")).unwrap_err();
    assert_eq!(err.id(), "2");
    assert_eq!(err.to_string(), "cannot remove message `2`: no message has that id");
    assert_eq!(list, [h("Hello", "1")]);
}

#[test]
fn mixed_operations() {
    let right = Messages::new()
        .put(h("Updated hello", "1"))
        .remove("2")
        .put(sys("New message", "3"));
    let out = merged(vec![h("Hello", "1"), ai("Hi there!", "2")], right);
    assert_eq!(out, [h("Updated hello", "1"), sys("New message", "3")]);
}

#[test]
fn empty_inputs() {
    assert_eq!(merged(vec![], Messages::new()), []);
    assert_eq!(merged(vec![], h("Hello", "1")), [h("Hello", "1")]);
    assert_eq!(merged(vec![h("Hello", "1")], Messages::new()), [h("Hello", "1")]);
}

#[test]
fn delete_all_one_by_one() {
    let out = merged(
        vec![h("Hello", "1"), ai("Hi there!", "2")],
        Messages::new().remove("1").remove("2"),
    );
    assert_eq!(out, []);
}

#[test]
fn remove_all_keeps_only_what_follows_it() {
    let right = Messages::new()
        .put(h("dropped too", "9"))
        .remove(REMOVE_ALL_MESSAGES)
        .put(h("fresh", "3"));
    assert_eq!(merged(vec![h("Hello", "1"), ai("Hi", "2")], right), [h("fresh", "3")]);
    assert_eq!(RemoveMessage::all().id, REMOVE_ALL_MESSAGES);
}

#[test]
fn a_message_put_then_removed_in_one_write_is_gone() {
    assert_eq!(
        merged(vec![h("a", "1")], Messages::new().put(ai("b", "2")).remove("2")),
        [h("a", "1")]
    );
}

#[test]
fn a_long_write_replaces_removes_and_appends_as_a_short_one_does() {
    // More than a handful of items: the merge goes through an index instead of a scan.
    let left = vec![h("a", "1"), h("b", "2"), h("c", "3")];
    let mut right = Messages::new().put(h("B", "2")).remove("3");
    for i in 10..20 {
        right = right.put(ai(&format!("n{i}"), &i.to_string()));
    }
    right = right.put(ai("n10 again", "10")).remove("11").put(h("c back", "3"));
    let out = merged(left, right);
    let texts: Vec<String> = out.iter().map(Message::text).collect();
    let mut want = vec!["a", "B", "c back", "n10 again"];
    want.extend(["n12", "n13", "n14", "n15", "n16", "n17", "n18", "n19"]);
    assert_eq!(texts, want);
}

// JSON: LangChain's message dicts, as LangGraph's server streamed them.

fn fixture_events(kind: &str) -> Vec<Value> {
    let sse = include_str!("fixtures/raw_messages_tuple.sse");
    let mut out = Vec::new();
    let mut current = "";
    for line in sse.lines() {
        if let Some(k) = line.strip_prefix("event: ") {
            current = k;
        } else if let Some(d) = line.strip_prefix("data: ") {
            if current == kind {
                out.push(serde_json::from_str(d).unwrap());
            }
        }
    }
    out
}

#[test]
fn messages_read_and_write_langchain_dicts_exactly() {
    let values = fixture_events("values");
    let last = values.last().unwrap()["messages"].clone();
    let messages: Vec<Message> = serde_json::from_value(last.clone()).unwrap();
    assert_eq!(messages[0].kind(), "human");
    assert_eq!(messages[1].text(), "hello there friend");
    assert_eq!(serde_json::to_value(&messages).unwrap(), last, "written back unchanged");
}

#[test]
fn a_dict_reads_the_same_wherever_its_type_is_and_an_unknown_type_is_named() {
    let first = r#"{"type":"ai","content":"hi","id":"1","tool_calls":[{"name":"f","args":{"x":1},"id":"c1"}]}"#;
    let last = r#"{"content":"hi","id":"1","tool_calls":[{"name":"f","args":{"x":1},"id":"c1"}],"type":"ai"}"#;
    let (a, b): (Message, Message) = (
        serde_json::from_str(first).unwrap(),
        serde_json::from_str(last).unwrap(),
    );
    assert_eq!(a, b);
    assert_eq!((a.kind(), a.as_ai().unwrap().tool_calls.len()), ("ai", 1));
    // LangChain's other spellings of a kind, first or not.
    for json in [r#"{"type":"user","content":"yo"}"#, r#"{"content":"yo","type":"user"}"#] {
        assert_eq!(serde_json::from_str::<Message>(json).unwrap(), Message::human("yo"));
    }
    let chunk: Message = serde_json::from_str(r#"{"type":"AIMessageChunk","content":"x"}"#).unwrap();
    assert_eq!(chunk.kind(), "ai");
    // A key escaped in the input reads as well.
    let escaped: Message = serde_json::from_str(r#"{"typ\u0065":"tool","content":"4","tool_call_id":"c1"}"#).unwrap();
    assert_eq!(escaped.as_tool().unwrap().tool_call_id, "c1");
    for bad in [r#"{"type":"robot","content":"x"}"#, r#"{"content":"x","type":"robot"}"#] {
        let err = serde_json::from_str::<Message>(bad).unwrap_err().to_string();
        assert!(err.contains("robot"), "{err}");
    }
    let err = serde_json::from_str::<Message>(r#"{"content":"x"}"#)
        .unwrap_err()
        .to_string();
    assert!(err.contains("type"), "{err}");
    assert!(serde_json::from_str::<Message>("{}")
        .unwrap_err()
        .to_string()
        .contains("type"));
}

#[test]
fn streamed_chunks_read_write_and_merge_into_the_recorded_answer() {
    let chunks: Vec<Value> = fixture_events("messages").into_iter().map(|t| t[0].clone()).collect();
    let typed: Vec<AiMessageChunk> = chunks
        .iter()
        .map(|c| serde_json::from_value(c.clone()).unwrap())
        .collect();
    for (json, chunk) in chunks.iter().zip(&typed) {
        assert_eq!(&serde_json::to_value(chunk).unwrap(), json);
    }
    let whole = typed.into_iter().reduce(|a, b| a + b).unwrap().into_message();
    let recorded = fixture_events("values").last().unwrap()["messages"][1].clone();
    assert_eq!(serde_json::to_value(Message::Ai(whole)).unwrap(), recorded);
}

#[test]
fn tool_and_ai_messages_have_langchain_fields() {
    let tool = serde_json::to_value(Message::tool("call_1", "5").with_id("t")).unwrap();
    assert_eq!(
        tool,
        json!({"type": "tool", "content": "5", "additional_kwargs": {}, "response_metadata": {}, "name": null,
               "id": "t", "tool_call_id": "call_1", "artifact": null, "status": "success"})
    );
    let chunk = AiMessageChunk::default().with_tool_call(ToolCallChunk::new(
        0,
        Some("c".into()),
        Some("add".into()),
        Some("{\"a\":1}".into()),
    ));
    let whole = serde_json::to_value(Message::Ai(chunk.into_message().clone())).unwrap();
    assert_eq!(
        whole["tool_calls"],
        json!([{"name": "add", "args": {"a": 1}, "id": "c", "type": "tool_call"}])
    );
    let removal = serde_json::to_value(Messages::new().remove("7")).unwrap();
    assert_eq!(removal, json!([{"type": "remove", "id": "7"}]));
    let back: Messages =
        serde_json::from_value(json!([{"type": "remove", "id": "7"}, {"type": "human", "content": "x"}])).unwrap();
    assert_eq!(back, Messages::new().remove("7").put(Message::human("x")));
    // A message with an id, as LangGraph's clients send them, is put, not taken for a removal.
    let with_id: Messages = serde_json::from_value(json!([{"type": "human", "content": "x", "id": "7"}])).unwrap();
    assert_eq!(with_id, Messages::new().put(Message::human("x").with_id("7")));
    assert!(serde_json::from_value::<RemoveMessage>(json!({"type": "human", "id": "7"})).is_err());
}

#[test]
fn chunks_merge_text_fragments_by_index_and_sum_usage() {
    let a = AiMessageChunk::text("Hel")
        .with_id("r1")
        .with_tool_call(ToolCallChunk::new(
            0,
            Some("c0".into()),
            Some("f".into()),
            Some("{\"x\":".into()),
        ))
        .with_tool_call(ToolCallChunk::new(1, Some("c1".into()), Some("g".into()), None))
        .with_usage(UsageMetadata::new(3, 1));
    let b = AiMessageChunk::text("lo")
        .with_tool_call(ToolCallChunk::new(1, None, None, Some("{}".into())))
        .with_tool_call(ToolCallChunk::new(0, None, None, Some("2}".into())))
        .with_usage(UsageMetadata::new(0, 4));
    let whole = (a + b).into_message();
    assert_eq!(whole.content.text(), "Hello");
    assert_eq!(whole.id.as_deref(), Some("r1"));
    let calls: Vec<(&str, Value)> = whole
        .tool_calls
        .iter()
        .map(|c| (c.name.as_str(), Value::Object(c.args.clone())))
        .collect();
    assert_eq!(calls, [("f", json!({"x": 2})), ("g", json!({}))]);
    assert_eq!(whole.usage_metadata, Some(UsageMetadata::new(3, 5)));
}

// The reducer in runs.

fn echo_graph(db: &std::path::Path) -> weir_runtime::CompiledGraph<MessagesState> {
    let mut g = GraphBuilder::<MessagesState>::new();
    g.add_node("echo", |s: &MessagesState| {
        let last = s.last().map(Message::text).unwrap_or_default();
        MessagesStateUpdate::default().messages(Message::ai(format!("echo: {last}")).into())
    });
    g.add_edge(START, "echo").add_edge("echo", END);
    g.with_checkpointer(SqliteSaver::open(db).unwrap()).compile().unwrap()
}

#[tokio::test]
async fn remove_message_and_replace_by_id_survive_a_checkpoint_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let cfg = RunConfig::thread("t");
    let first = Messages::new().put(h("one", "1")).put(h("two", "2"));
    echo_graph(&db)
        .invoke(MessagesStateUpdate::default().messages(first), &cfg)
        .await
        .unwrap();
    let edit = Messages::new().put(h("ONE", "1")).remove("2");
    echo_graph(&db)
        .invoke(MessagesStateUpdate::default().messages(edit), &cfg)
        .await
        .unwrap();

    // A new saver on the same file reads what the runs left.
    let saved = echo_graph(&db).get_state(&cfg).await.unwrap().unwrap().values.messages;
    let texts: Vec<String> = saved.iter().map(Message::text).collect();
    assert_eq!(
        texts,
        ["ONE", "echo: two", "echo: echo: two"],
        "1 replaced in place, 2 removed"
    );
    assert_eq!(saved[0].id(), Some("1"));
    assert!(saved.iter().all(|m| m.id().is_some()), "every message got an id");
}

#[tokio::test]
async fn removing_a_missing_id_fails_the_run_naming_the_field_and_the_id() {
    let dir = tempfile::tempdir().unwrap();
    let app = echo_graph(&dir.path().join("m.db"));
    let input = MessagesStateUpdate::default().messages(Messages::new().remove("ghost"));
    let err = app
        .invoke(input, &RunConfig::thread("t"))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("messages"), "{err}");
    assert!(
        err.contains("cannot remove message `ghost`: no message has that id"),
        "{err}"
    );
}

#[derive(weir::State, Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Chat {
    #[reducer(with = add_messages, update = Messages)]
    messages: Vec<Message>,
    turns: u32,
}

fn reply(s: &Chat) -> ChatUpdate {
    let heard = s.messages.last().map(Message::text).unwrap_or_default();
    ChatUpdate::default()
        .messages(Message::ai(format!("heard {heard}")).into())
        .turns(s.turns + 1)
}

#[tokio::test]
async fn add_messages_works_as_a_with_reducer_in_a_users_own_state_and_graph() {
    let app = weir::graph! { state: Chat, START -> reply -> END; }.compile().unwrap();
    let input = ChatUpdate::default().messages(Messages::new().put(Message::human("x").with_id("h")));
    let out = app.invoke(input, &RunConfig::default()).await.unwrap();
    let texts: Vec<String> = out.messages.iter().map(Message::text).collect();
    assert_eq!((texts, out.turns), (vec!["x".to_owned(), "heard x".to_owned()], 1));
}

#[test]
fn content_blocks_round_trip_and_read_as_text() {
    let blocks = json!([{"type": "text", "text": "look: "}, {"type": "image_url", "image_url": {"url": "data:,"}}, {"type": "text", "text": "a cat"}]);
    let m: Message = serde_json::from_value(json!({"type": "human", "content": blocks.clone(), "id": "1"})).unwrap();
    assert_eq!(m.text(), "look: a cat");
    assert_eq!(serde_json::to_value(&m).unwrap()["content"], blocks);
}

#[test]
fn text_then_blocks_merge_into_blocks_in_order() {
    let a = AiMessageChunk::text("see ");
    let b = AiMessageChunk {
        content: weir_agent::message::Content::Blocks(vec![json!({"type": "image_url", "image_url": {"url": "u"}})]),
        ..AiMessageChunk::default()
    };
    let c = AiMessageChunk::text("there");
    let whole = (a + b + c).into_message();
    assert_eq!(
        serde_json::to_value(&whole.content).unwrap(),
        json!([{"type": "text", "text": "see "}, {"type": "image_url", "image_url": {"url": "u"}}, {"type": "text", "text": "there"}])
    );
    assert_eq!(whole.content.text(), "see there");
}

// What LangChain's `convert_to_messages` takes, as LangGraph's own examples send it: a dict with
// an OpenAI-style `role`, a `[role, content]` pair, a bare string; one message for a list.
#[test]
fn messages_are_read_in_every_form_langchain_takes() {
    let read = |v: Value| serde_json::from_value::<Message>(v);
    assert_eq!(
        read(json!({"role": "user", "content": "hi"})).unwrap(),
        Message::human("hi")
    );
    assert_eq!(
        read(json!({"role": "assistant", "content": "yo"})).unwrap(),
        Message::ai("yo")
    );
    assert_eq!(
        read(json!({"role": "developer", "content": "be brief"})).unwrap(),
        Message::system("be brief")
    );
    assert_eq!(
        read(json!({"content": "x", "id": "7", "role": "human"})).unwrap(),
        Message::human("x").with_id("7")
    );
    // As LangChain, a `role` is read before a `type`.
    assert_eq!(
        read(json!({"content": "x", "type": "ai", "role": "user"})).unwrap(),
        Message::human("x")
    );
    assert_eq!(read(json!(["user", "hi"])).unwrap(), Message::human("hi"));
    let blocks = read(json!(["assistant", [{"type": "text", "text": "a"}]])).unwrap();
    assert_eq!(serde_json::to_value(blocks).unwrap()["type"], "ai");
    assert_eq!(read(json!("hi")).unwrap(), Message::human("hi"));
    let wizard = read(json!({"role": "wizard", "content": "x"})).unwrap_err().to_string();
    assert!(
        wizard.contains("unknown variant `wizard`") && wizard.contains("assistant"),
        "{wizard}"
    );
    assert!(read(json!({"content": "x"}))
        .unwrap_err()
        .to_string()
        .contains("missing field `type`"));
    assert!(read(json!(["user"])).is_err());
    assert!(
        read(json!({"type": "remove", "id": "1"})).is_err(),
        "a removal is no message"
    );

    let write = |v: Value| serde_json::from_value::<Messages>(v).unwrap();
    assert_eq!(
        write(json!({"role": "user", "content": "hi"})),
        Messages::new().put(Message::human("hi"))
    );
    assert_eq!(write(json!("hi")), Messages::new().put(Message::human("hi")));
    assert_eq!(
        write(json!(["a", ["ai", "b"], {"type": "remove", "id": "9"}])),
        Messages::new()
            .put(Message::human("a"))
            .put(Message::ai("b"))
            .remove("9")
    );
}
