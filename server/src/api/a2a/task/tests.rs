//! A client's message read, a task's ids, its answer and its history.

use super::*;

fn read(message: Value) -> Result<Incoming, RpcFailure> {
    Incoming::read(&json!({ "message": message }))
}

#[test]
fn a_message_gives_its_text_as_a_human_message_and_its_data_as_fields() {
    let m = read(json!({
        "role": "user", "messageId": "m1", "kind": "message",
        "parts": [{"kind": "text", "text": "hi"}, {"kind": "data", "data": {"topic": "t"}}],
    }))
    .unwrap();
    assert_eq!(
        m.input(),
        json!({"topic": "t", "messages": [{"type": "human", "content": "hi", "id": "m1"}]})
    );
    assert_eq!(m.answer(), Ok(json!({"topic": "t"})));
    let two = read(json!({"role": "user", "messageId": "m2", "parts": [{"text": "a"}, {"text": "b"}]})).unwrap();
    assert_eq!(
        two.input()["messages"][0]["content"],
        json!([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])
    );
    assert_eq!(two.answer(), Ok(json!("a\nb")));
}

#[test]
fn a_bad_message_is_refused_naming_the_field() {
    let cases = [
        (json!(null), "params field `message`: missing, or not an object"),
        (
            json!({"role": "user", "parts": [{"text": "a"}]}),
            "`message.messageId`: missing",
        ),
        (
            json!({"messageId": "m", "role": "agent", "parts": [{"text": "a"}]}),
            "`message.role`: `agent`",
        ),
        (
            json!({"messageId": "m", "role": "user", "parts": []}),
            "`message.parts`: empty",
        ),
        (
            json!({"messageId": "m", "role": "user", "parts": [{"data": 3}]}),
            "`message.parts[0].data`: expected an object",
        ),
        (
            json!({"messageId": "m", "role": "user", "parts": [{"kind": "text", "text": 1}]}),
            "`message.parts[0]`: expected one of",
        ),
        (
            json!({"messageId": "m", "role": "user", "contextId": 7, "parts": [{"text": "a"}]}),
            "`message.contextId`: expected a non-empty string",
        ),
    ];
    for (message, expected) in cases {
        let (code, why) = read(message.clone()).unwrap_err();
        assert_eq!(code, INVALID_PARAMS, "{message}");
        assert!(why.contains(expected), "{message}: {why}");
    }
    let file =
        json!({"messageId": "m", "role": "user", "parts": [{"text": "a"}, {"kind": "file", "file": {"uri": ""}}]});
    assert_eq!(
        read(file).unwrap_err(),
        (
            INVALID_PARAMS,
            "params field `message.parts[1].file.uri`: empty".to_owned()
        )
    );
}

#[test]
fn files_and_text_make_one_message_of_blocks_in_order_and_answer_no_question() {
    let m = read(json!({
        "role": "user", "messageId": "m3",
        "parts": [
            {"kind": "text", "text": "what is this?"},
            {"kind": "data", "data": {"topic": "t"}},
            {"kind": "file", "file": {"bytes": "iVBORw0KGgo=", "mimeType": "image/png", "name": "cat.png"}},
        ],
    }))
    .unwrap();
    assert_eq!(
        m.input(),
        json!({"topic": "t", "messages": [{"type": "human", "id": "m3", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png", "extras": {"filename": "cat.png"}},
        ]}]})
    );
    assert_eq!(
        m.answer(),
        Err((
            CONTENT_TYPE_NOT_SUPPORTED,
            "params field `message.parts[2]`: a file cannot answer the task's question (send text or data)".to_owned()
        ))
    );
}

#[test]
fn a_task_id_names_its_context_and_first_run() {
    let (c, r) = (
        "0190a3b4-0000-7000-8000-000000000001",
        "0190a3b4-0000-7000-8000-000000000002",
    );
    let id = task_id(c, r);
    assert_eq!(parse_task_id(&id), Some((c, r)));
    assert_eq!(parse_task_id("nope"), None);
    assert_eq!(parse_task_id(&format!("{c}:x")), None);
}

#[test]
fn the_answer_is_the_last_agent_text_of_the_task_s_turn() {
    let values = json!({"messages": [
        {"type": "human", "content": "one", "id": "h1"},
        {"type": "ai", "content": "first", "id": "a1"},
        {"type": "human", "content": "two", "id": "h2"},
        {"type": "ai", "content": [{"type": "text", "text": "sec"}, {"type": "text", "text": "ond"}], "id": "a2"},
        {"type": "ai", "content": "", "id": "a3", "tool_calls": []},
    ]});
    assert_eq!(
        answer_parts(&values, Some("h1")),
        [json!({"kind": "text", "text": "first"})]
    );
    assert_eq!(
        answer_parts(&values, Some("h2")),
        [json!({"kind": "text", "text": "second"})]
    );
    assert_eq!(
        answer_parts(&json!({"topic": "t", "__interrupt__": []}), None),
        [json!({"kind": "data", "data": {"topic": "t"}})]
    );
    let ids = TaskIds {
        task_id: "t",
        context_id: "c",
        run_id: "r",
        assistant_id: "a",
    };
    let last_two = HistoryView {
        length: Some(2),
        scope: Scope::Context,
    };
    let h = history(&values, &ids, last_two, &HashMap::new());
    assert_eq!(h.len(), 2);
    assert_eq!(
        (h[0]["role"].as_str(), h[1]["role"].as_str()),
        (Some("user"), Some("agent"))
    );
    assert_eq!(h[1]["parts"][0]["text"], "second");
}

#[test]
fn each_message_of_the_history_names_its_task_and_a_task_s_scope_shows_its_own() {
    let values = json!({"messages": [
        {"type": "human", "content": "before any task", "id": "h0"},
        {"type": "human", "content": "one", "id": "h1"},
        {"type": "ai", "content": "first", "id": "a1"},
        {"type": "human", "content": "two", "id": "h2"},
        {"type": "ai", "content": "second", "id": "a2"},
    ]});
    let starts = HashMap::from([
        ("h1".to_owned(), "c:r1".to_owned()),
        ("h2".to_owned(), "c:r2".to_owned()),
    ]);
    let ids = TaskIds {
        task_id: "c:r2",
        context_id: "c",
        run_id: "r2",
        assistant_id: "a",
    };
    let owners = |scope| {
        let view = HistoryView { length: None, scope };
        history(&values, &ids, view, &starts)
            .iter()
            .map(|m| format!("{}={}", m["messageId"].as_str().unwrap(), m["taskId"].as_str().unwrap()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        owners(Scope::Context),
        ["h0=c:r2", "h1=c:r1", "a1=c:r1", "h2=c:r2", "a2=c:r2"]
    );
    assert_eq!(owners(Scope::Task), ["h2=c:r2", "a2=c:r2"]);
}
