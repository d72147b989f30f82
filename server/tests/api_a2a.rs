//! `/a2a/{assistant_id}` (A2A 0.3 over JSON-RPC) through the real router: an assistant's agent
//! card, a conversation kept in its context (a thread), a task that asks for input and is resumed
//! by the next message naming it, a streamed task, cancel and resubscribe, files both ways, and
//! every refusal as a JSON-RPC error naming what is wrong. The official client's view is `tests/sdk/test_a2a.py`.

mod runs_support;

use axum::http::StatusCode;
use runs_support::{chatbot, config, frames, open, App};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use weir::prelude::*;
use weir_agent::message::{AiMessage, Content, Message, MessagesState, MessagesStateUpdate};
use weir_server::graph::{Serve, ServedGraph};

/// START -> ask -> END, `ask` pausing with "Proceed?" and answering `approved: <answer>`.
fn approval() -> CompiledGraph<MessagesState> {
    let mut g = GraphBuilder::<MessagesState>::new();
    g.add_node(
        "ask",
        |_: &MessagesState, ctx: &Context| -> Result<MessagesStateUpdate, BoxError> {
            let answer: Value = ctx.interrupt(json!("Proceed?"))?;
            let said = answer.as_str().map_or_else(|| answer.to_string(), str::to_owned);
            let reply = Message::Ai(AiMessage::new(format!("approved: {said}")));
            Ok(MessagesStateUpdate::default().messages(reply.into()))
        },
    );
    g.add_edge(START, "ask").add_edge("ask", END);
    g.compile().unwrap()
}

/// START -> look -> END, `look` saying what the person's last message held (each block's type,
/// and a file's MIME type and name) and sending its files back.
fn looker() -> CompiledGraph<MessagesState> {
    let mut g = GraphBuilder::<MessagesState>::new();
    g.add_node("look", |s: &MessagesState| -> Result<MessagesStateUpdate, BoxError> {
        let Some(Message::Human(h)) = s.messages.last() else {
            return Err("no message to look at".into());
        };
        let Content::Blocks(blocks) = &h.content else {
            return Err(format!("plain text, not blocks: {:?}", h.content).into());
        };
        let seen: Vec<String> = blocks
            .iter()
            .map(|b| {
                let mut what = vec![b["type"].as_str().unwrap_or("?")];
                what.extend(b["mime_type"].as_str());
                what.extend(b["extras"]["filename"].as_str());
                what.join(" ")
            })
            .collect();
        let mut reply = vec![json!({"type": "text", "text": format!("saw {}", seen.join(", "))})];
        reply.extend(blocks.iter().filter(|b| b["type"] != "text").cloned());
        let reply = Message::Ai(AiMessage::new(Content::Blocks(reply)));
        Ok(MessagesStateUpdate::default().messages(reply.into()))
    });
    g.add_edge(START, "look").add_edge("look", END);
    g.compile().unwrap()
}

async fn app() -> (tempfile::TempDir, App) {
    let dir = tempfile::tempdir().unwrap();
    let (db, saver) = open(&dir.path().join("weir.db")).await;
    let app = runs_support::app_on_with(db, saver, config(), |saver| {
        let mut extra: BTreeMap<String, Arc<dyn ServedGraph>> = BTreeMap::new();
        extra.insert("chatbot".into(), chatbot().into_served(saver.clone()));
        extra.insert("approval".into(), approval().into_served(saver.clone()));
        extra.insert("looker".into(), looker().into_served(saver.clone()));
        extra
    })
    .await;
    (dir, app)
}

/// A user's message of text `text` (`extra`'s fields added to it).
fn text(id: &str, text: &str, extra: Value) -> Value {
    let mut m = json!({"kind": "message", "role": "user", "messageId": id, "parts": [{"kind": "text", "text": text}]});
    m.as_object_mut()
        .unwrap()
        .extend(extra.as_object().cloned().unwrap_or_default());
    m
}

/// Calls `method` of assistant `assistant`'s endpoint; answers the JSON-RPC response.
async fn rpc(app: &App, assistant: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": "r1", "method": method, "params": params});
    let reply = app.call("POST", &format!("/a2a/{assistant}"), Some(body)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["jsonrpc"], "2.0");
    reply.body
}

/// The `result` of a call that must succeed.
async fn result(app: &App, assistant: &str, method: &str, params: Value) -> Value {
    let reply = rpc(app, assistant, method, params).await;
    assert_eq!(reply["id"], "r1");
    assert!(reply.get("error").is_none(), "{reply}");
    reply["result"].clone()
}

/// The task `message/send` answers for `message`.
async fn send(app: &App, assistant: &str, message: Value) -> Value {
    result(app, assistant, "message/send", json!({ "message": message })).await
}

/// The `error` of a call that must fail: its code and message.
async fn error(app: &App, assistant: &str, method: &str, params: Value) -> (i64, String) {
    let reply = rpc(app, assistant, method, params).await;
    let e = &reply["error"];
    assert!(reply.get("result").is_none(), "{reply}");
    (e["code"].as_i64().unwrap(), e["message"].as_str().unwrap().to_owned())
}

fn texts_of(parts: &Value) -> Vec<&str> {
    parts
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect()
}

#[tokio::test]
async fn an_assistant_is_an_a2a_agent_whose_context_keeps_the_conversation() {
    let (_dir, app) = app().await;
    let card = app.call("GET", "/a2a/chatbot/.well-known/agent-card.json", None).await;
    assert_eq!(card.status, StatusCode::OK);
    let uuid = weir_server::model::system_assistant_id("chatbot").to_string();
    assert_eq!(card.body["protocolVersion"], "0.3.0");
    assert_eq!(card.body["name"], "chatbot");
    assert_eq!(card.body["preferredTransport"], "JSONRPC");
    assert_eq!(card.body["capabilities"]["streaming"], true);
    assert!(
        card.body["url"].as_str().unwrap().ends_with(&format!("/a2a/{uuid}")),
        "{}",
        card.body
    );
    let asked = app
        .call(
            "GET",
            &format!("/.well-known/agent-card.json?assistant_id={uuid}"),
            None,
        )
        .await;
    assert_eq!(asked.body, card.body);

    let first = send(&app, "chatbot", text("m1", "hi", json!({}))).await;
    assert_eq!(first["kind"], "task");
    assert_eq!(first["status"]["state"], "completed", "{first}");
    let context = first["contextId"].as_str().unwrap().to_owned();
    let task_id = first["id"].as_str().unwrap().to_owned();
    assert!(task_id.starts_with(&format!("{context}:")), "{task_id}");
    assert_eq!(first["artifacts"][0]["name"], "Assistant Response");
    assert_eq!(texts_of(&first["artifacts"][0]["parts"]), ["hello there friend"]);
    let roles: Vec<&str> = first["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "agent"]);
    assert_eq!(first["history"][0]["messageId"], "m1");

    // The same context: the thread goes on, and the answer is the second turn's.
    let second = result(
        &app,
        "chatbot",
        "message/send",
        json!({"message": text("m2", "again", json!({"contextId": context})), "configuration": {"historyLength": 1}}),
    )
    .await;
    assert_eq!(second["contextId"], context.as_str());
    assert_ne!(second["id"], task_id.as_str());
    assert_eq!(second["history"].as_array().unwrap().len(), 1);
    let thread = app.call("GET", &format!("/threads/{context}"), None).await;
    let said: Vec<&str> = thread.body["values"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(said, ["hi", "hello there friend", "again", "hello there friend"]);

    // The first task reads as it was answered, its artifact the same.
    let got = result(&app, "chatbot", "tasks/get", json!({"id": task_id})).await;
    assert_eq!(got["status"]["state"], "completed");
    assert_eq!(got["artifacts"], first["artifacts"]);
    assert_eq!(got["history"].as_array().unwrap().len(), 4);
    let none = result(&app, "chatbot", "tasks/get", json!({"id": task_id, "historyLength": 0})).await;
    assert!(none.get("history").is_none(), "{none}");
}

/// `(messageId, taskId)` of each message of a task's history.
fn owners(task: &Value) -> Vec<(String, String)> {
    task["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["messageId"].as_str().unwrap().to_owned(),
                m["taskId"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_task_s_history_names_each_message_s_task_and_can_show_the_task_s_own() {
    let (_dir, app) = app().await;
    let card = app.call("GET", "/a2a/chatbot/.well-known/agent-card.json", None).await;
    let extension = &card.body["capabilities"]["extensions"][0];
    assert_eq!(
        extension["uri"],
        "https://langchain.com/a2a/extensions/history-scope/v1"
    );
    assert_eq!(extension["params"]["header"], "LangGraph-A2A-History-Scope");
    assert_eq!(
        card.body["defaultInputModes"],
        json!(["application/json", "text/plain"])
    );

    let first = send(&app, "chatbot", text("m1", "hi", json!({}))).await;
    let (one, context) = (first["id"].as_str().unwrap(), first["contextId"].as_str().unwrap());
    let next = json!({"message": text("m2", "again", json!({"contextId": context}))});
    let second = result(&app, "chatbot", "message/send", next).await;
    let two = second["id"].as_str().unwrap();
    let [(m1, t1), (_, t1b), (m2, t2), (_, t2b)] = owners(&second).try_into().unwrap();
    assert_eq!((m1.as_str(), m2.as_str()), ("m1", "m2"));
    assert_eq!(
        [t1, t1b, t2, t2b],
        [one, one, two, two],
        "each message names its own task"
    );

    // The task's own turns: by the params, or by the header when the params say nothing.
    let by_params = result(&app, "chatbot", "tasks/get", json!({"id": two, "historyScope": "task"})).await;
    assert_eq!(owners(&by_params).len(), 2);
    assert!(owners(&by_params).iter().all(|(_, t)| t == two));
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": one}});
    let reply = app
        .open(
            "POST",
            "/a2a/chatbot",
            Some(body),
            &[("LangGraph-A2A-History-Scope", "task")],
        )
        .await;
    let bytes = http_body_util::BodyExt::collect(reply.into_body())
        .await
        .unwrap()
        .to_bytes();
    let by_header: Value = serde_json::from_slice(&bytes).unwrap();
    let mine: Vec<String> = owners(&by_header["result"]).into_iter().map(|(m, _)| m).collect();
    assert_eq!(mine.len(), 2, "{by_header}");
    assert_eq!(mine[0], "m1");
    let asked = json!({"message": text("m3", "x", json!({"contextId": context})), "configuration": {"historyScope": "task", "historyLength": 1}});
    let third = result(&app, "chatbot", "message/send", asked).await;
    assert_eq!(owners(&third).len(), 1);
    assert_eq!(owners(&third)[0].1, third["id"].as_str().unwrap());
    let (code, why) = error(&app, "chatbot", "tasks/get", json!({"id": two, "historyScope": "mine"})).await;
    assert_eq!(
        (code, why.as_str()),
        (
            -32602,
            "params field `historyScope`: expected \"context\" or \"task\", got `mine`"
        )
    );

    // An assistant's card announces the media types its metadata names.
    let made = app
        .call(
            "POST",
            "/assistants",
            Some(json!({"graph_id": "looker", "metadata": {"a2a": {"input_modes": ["text/plain", "image/png"]}}})),
        )
        .await;
    let id = made.body["assistant_id"].as_str().unwrap();
    let card = app
        .call("GET", &format!("/a2a/{id}/.well-known/agent-card.json"), None)
        .await;
    assert_eq!(card.body["defaultInputModes"], json!(["text/plain", "image/png"]));
    assert_eq!(card.body["skills"][0]["inputModes"], json!(["text/plain", "image/png"]));
    assert_eq!(
        card.body["defaultOutputModes"],
        json!(["application/json", "text/plain"])
    );
    let bad = app
        .call(
            "POST",
            "/assistants",
            Some(json!({"graph_id": "looker", "metadata": {"a2a": {"output_modes": []}}})),
        )
        .await;
    let id = bad.body["assistant_id"].as_str().unwrap();
    let card = app
        .call("GET", &format!("/a2a/{id}/.well-known/agent-card.json"), None)
        .await;
    assert_eq!(card.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(
        card.body["detail"]
            .as_str()
            .unwrap()
            .contains("metadata field `a2a.output_modes` must be a non-empty array"),
        "{}",
        card.body
    );
}

#[tokio::test]
async fn a_task_that_asks_for_input_is_resumed_by_the_next_message_naming_it() {
    let (_dir, app) = app().await;
    let asked = send(&app, "approval", text("m1", "deploy", json!({}))).await;
    assert_eq!(asked["status"]["state"], "input-required", "{asked}");
    assert_eq!(texts_of(&asked["status"]["message"]["parts"]), ["Proceed?"]);
    assert_eq!(asked["artifacts"][0]["name"], "Interrupt");
    assert_eq!(asked["artifacts"][0]["parts"][0]["data"]["value"], "Proceed?");
    let task_id = asked["id"].as_str().unwrap();

    let done = send(&app, "approval", text("m2", "yes", json!({"taskId": task_id}))).await;
    assert_eq!(done["id"], task_id);
    assert_eq!(done["status"]["state"], "completed", "{done}");
    assert_eq!(texts_of(&done["artifacts"][0]["parts"]), ["approved: yes"]);
    let got = result(&app, "approval", "tasks/get", json!({"id": task_id})).await;
    assert_eq!(got["status"]["state"], "completed");

    let (code, why) = error(
        &app,
        "approval",
        "message/send",
        json!({"message": text("m3", "again", json!({"taskId": task_id}))}),
    )
    .await;
    assert_eq!(code, -32004);
    assert!(why.contains("is completed") && why.contains(task_id), "{why}");
    let (code, why) = error(&app, "approval", "tasks/cancel", json!({"id": task_id})).await;
    assert_eq!((code, why.contains("completed")), (-32002, true), "{why}");

    // A graph without `messages` asks too, and takes a text answer; its answer is its values.
    let fields =
        json!({"message": {"role": "user", "messageId": "h1", "parts": [{"kind": "data", "data": {"topic": "x"}}]}});
    let asked = result(&app, "hitl", "message/send", fields).await;
    assert_eq!(asked["status"]["state"], "input-required", "{asked}");
    let task_id = asked["id"].as_str().unwrap();
    let resume = json!({"message": text("h2", "yes", json!({"taskId": task_id}))});
    let done = result(&app, "hitl", "message/send", resume).await;
    assert_eq!(done["status"]["state"], "completed", "{done}");
    assert_eq!(
        done["artifacts"][0]["parts"][0]["data"]["log"],
        json!(["a:x", "ask:yes"])
    );
}

#[tokio::test]
async fn files_reach_the_graph_as_content_blocks_and_come_back_as_file_parts() {
    let (_dir, app) = app().await;
    // A PNG's first bytes, sent unpadded: they are checked and written in base64's standard form.
    let png = json!({"kind": "file", "file": {"bytes": "iVBORw0KGgo", "mimeType": "image/png", "name": "cat.png"}});
    let pdf = json!({"kind": "file", "file": {"uri": "https://example.invalid/r.pdf", "mimeType": "application/pdf"}});
    let message = json!({"role": "user", "messageId": "f1", "parts": [{"kind": "text", "text": "look"}, png, pdf]});
    let task = send(&app, "looker", message).await;
    assert_eq!(task["status"]["state"], "completed", "{task}");
    let png_back =
        json!({"kind": "file", "file": {"bytes": "iVBORw0KGgo=", "mimeType": "image/png", "name": "cat.png"}});
    let pdf_back =
        json!({"kind": "file", "file": {"uri": "https://example.invalid/r.pdf", "mimeType": "application/pdf"}});
    assert_eq!(
        task["artifacts"][0]["parts"],
        json!([
            {"kind": "text", "text": "saw text, image image/png cat.png, file application/pdf"},
            png_back, pdf_back,
        ])
    );
    // The thread keeps the person's message as LangChain's blocks; the history shows its files.
    let context = task["contextId"].as_str().unwrap();
    let thread = app.call("GET", &format!("/threads/{context}"), None).await;
    assert_eq!(
        thread.body["values"]["messages"][0]["content"],
        json!([
            {"type": "text", "text": "look"},
            {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png", "extras": {"filename": "cat.png"}},
            {"type": "file", "url": "https://example.invalid/r.pdf", "mime_type": "application/pdf"},
        ])
    );
    assert_eq!(
        task["history"][0]["parts"],
        json!([{"kind": "text", "text": "look"}, png_back, pdf_back])
    );

    // In 1.0's form: the file's fields on the part, both ways.
    let v1 = json!({"messageId": "f2", "role": "ROLE_USER", "parts": [
        {"raw": "JVBERi0=", "mediaType": "application/pdf", "filename": "r.pdf"},
    ]});
    let sent = result(&app, "looker", "SendMessage", json!({ "message": v1 })).await;
    assert_eq!(
        sent["task"]["artifacts"][0]["parts"],
        json!([
            {"text": "saw file application/pdf r.pdf"},
            {"raw": "JVBERi0=", "mediaType": "application/pdf", "filename": "r.pdf"},
        ])
    );

    // A file answers no question.
    let asked = send(&app, "approval", text("q", "go", json!({}))).await;
    let answer = json!({"role": "user", "messageId": "q2", "taskId": asked["id"], "parts": [png_back]});
    let (code, why) = error(&app, "approval", "message/send", json!({ "message": answer })).await;
    assert_eq!(code, -32005);
    assert_eq!(
        why,
        "params field `message.parts[0]`: a file cannot answer the task's question (send text or data)"
    );
    let still = result(&app, "approval", "tasks/get", json!({"id": asked["id"]})).await;
    assert_eq!(still["status"]["state"], "input-required", "the task still waits");
}

/// The results of an A2A stream's events.
async fn stream(app: &App, assistant: &str, method: &str, params: Value) -> Vec<Value> {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let res = app.open("POST", &format!("/a2a/{assistant}"), Some(body), &[]).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    frames(res.into_body())
        .await
        .into_iter()
        .map(|(event, data, _)| {
            assert_eq!(
                (event.as_str(), &data["id"], &data["jsonrpc"]),
                ("message", &json!(7), &json!("2.0"))
            );
            data["result"].clone()
        })
        .collect()
}

#[tokio::test]
async fn message_stream_sends_the_task_the_model_s_text_as_it_comes_the_answer_and_the_end() {
    let (_dir, app) = app().await;
    let events = stream(
        &app,
        "chatbot",
        "message/stream",
        json!({"message": text("m1", "hi", json!({}))}),
    )
    .await;
    let kinds: Vec<&str> = events.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds[0], "task");
    assert_eq!(events[0]["status"]["state"], "submitted");
    assert_eq!(events[0]["history"][0]["messageId"], "m1");
    assert_eq!(kinds[kinds.len() - 2..], ["artifact-update", "status-update"]);
    let task_id = &events[0]["id"];
    assert!(events[1..].iter().all(|e| &e["taskId"] == task_id), "{events:?}");
    let working = &events[1..events.len() - 2];
    assert!(working
        .iter()
        .all(|e| e["status"]["state"] == "working" && e["final"] == false));
    let streamed: String = working
        .iter()
        .filter_map(|e| e["status"]["message"]["parts"][0]["text"].as_str())
        .collect();
    assert_eq!(streamed, "hello there friend");
    assert!(working.len() > 2, "the text came in pieces: {working:?}");
    let answer = &events[events.len() - 2];
    assert_eq!(texts_of(&answer["artifact"]["parts"]), ["hello there friend"]);
    assert_eq!(answer["lastChunk"], true);
    let last = &events[events.len() - 1];
    assert_eq!(
        (&last["status"]["state"], &last["final"]),
        (&json!("completed"), &json!(true))
    );

    let asked = stream(
        &app,
        "approval",
        "message/stream",
        json!({"message": text("m2", "go", json!({}))}),
    )
    .await;
    let last = asked.last().unwrap();
    assert_eq!(last["status"]["state"], "input-required");
    assert_eq!(texts_of(&last["status"]["message"]["parts"]), ["Proceed?"]);
    assert_eq!(asked[asked.len() - 2]["artifact"]["name"], "Interrupt");
}

#[tokio::test]
async fn a_working_task_is_cancelled_and_followed_again_by_resubscribing() {
    let (_dir, app) = app().await;
    let params = json!({
        "message": {"role": "user", "messageId": "m1", "parts": [{"kind": "data", "data": {"topic": "t"}}]},
        "configuration": {"blocking": false},
    });
    let started = result(&app, "gated", "message/send", params.clone()).await;
    assert!(
        ["submitted", "working"].contains(&started["status"]["state"].as_str().unwrap()),
        "{started}"
    );
    let task_id = started["id"].as_str().unwrap().to_owned();
    app.gate.entered.notified().await;

    // Followed again: the task as it stands, then its end once the gate opens.
    let following = {
        let app = app.router.clone();
        let task_id = task_id.clone();
        tokio::spawn(async move {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/resubscribe", "params": {"id": task_id}});
            let req = axum::http::Request::post("/a2a/gated")
                .header("content-type", "application/json")
                .body(axum::body::Body::from(body.to_string()))
                .unwrap();
            let res = tower::ServiceExt::oneshot(app, req).await.unwrap();
            frames(res.into_body()).await
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    app.gate.release();
    let followed: Vec<Value> = following
        .await
        .unwrap()
        .into_iter()
        .map(|(_, d, _)| d["result"].clone())
        .collect();
    assert_eq!(followed[0]["kind"], "task");
    assert_eq!(followed[0]["status"]["state"], "working");
    let last = followed.last().unwrap();
    assert_eq!(
        (&last["status"]["state"], &last["final"]),
        (&json!("completed"), &json!(true))
    );
    assert_eq!(
        followed[followed.len() - 2]["artifact"]["parts"][0]["data"]["log"],
        json!(["a:t", "slow:t"])
    );

    // Another, cancelled while it waits at the gate.
    let started = result(&app, "gated", "message/send", params).await;
    let task_id = started["id"].as_str().unwrap();
    app.gate.entered.notified().await;
    let cancelled = result(&app, "gated", "tasks/cancel", json!({"id": task_id})).await;
    assert_eq!(cancelled["status"]["state"], "canceled", "{cancelled}");
    let (code, _) = error(&app, "gated", "tasks/cancel", json!({"id": task_id})).await;
    assert_eq!(code, -32002);
}

#[tokio::test]
async fn bad_calls_get_json_rpc_errors_that_name_what_is_wrong() {
    let (_dir, app) = app().await;
    let req = axum::http::Request::post("/a2a/chatbot")
        .body(axum::body::Body::from("{not json"))
        .unwrap();
    let raw = tower::ServiceExt::oneshot(app.router.clone(), req).await.unwrap();
    assert_eq!(raw.status(), StatusCode::OK);
    let raw: Value = serde_json::from_slice(
        &http_body_util::BodyExt::collect(raw.into_body())
            .await
            .unwrap()
            .to_bytes(),
    )
    .unwrap();
    assert_eq!(
        (raw["error"]["code"].as_i64(), &raw["id"]),
        (Some(-32700), &Value::Null)
    );
    let old = app
        .call(
            "POST",
            "/a2a/chatbot",
            Some(json!({"jsonrpc": "1.0", "id": 1, "method": "tasks/get"})),
        )
        .await;
    assert_eq!(old.body["error"]["code"], -32600);
    assert_eq!(
        app.call("GET", "/a2a/chatbot", None).await.status,
        StatusCode::METHOD_NOT_ALLOWED
    );
    let missing = app.call("GET", "/.well-known/agent-card.json", None).await;
    assert_eq!(missing.status, StatusCode::BAD_REQUEST);
    assert!(missing.body["detail"].as_str().unwrap().contains("`assistant_id`"));
    let unknown = app.call("GET", "/a2a/nobody/.well-known/agent-card.json", None).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);

    let hi = json!({"message": text("m1", "hi", json!({}))});
    let cases: Vec<(&str, &str, Value, i64, &str)> = vec![
        (
            "chatbot",
            "tasks/list",
            json!({}),
            -32601,
            "Method not found: tasks/list",
        ),
        (
            "nobody",
            "message/send",
            hi.clone(),
            -32602,
            "assistant `nobody` not found",
        ),
        ("chain", "message/send", hi.clone(), -32602, "takes no `messages`"),
        ("chatbot", "message/send", json!({}), -32602, "params field `message`"),
        (
            "chatbot",
            "message/send",
            json!({"message": text("m", "x", json!({"contextId": "c1"}))}),
            -32602,
            "`message.contextId`: `c1` is not a UUID",
        ),
        (
            "chatbot",
            "message/send",
            json!({"message": {"role": "user", "messageId": "m", "parts": [{"kind": "file", "file": {"bytes": "no base64!"}}]}}),
            -32602,
            "params field `message.parts[0].file.bytes`: not base64",
        ),
        (
            "chain",
            "message/send",
            json!({"message": {"role": "user", "messageId": "m", "parts": [{"kind": "file", "file": {"uri": "https://example.invalid/a.png"}}]}}),
            -32602,
            "so a text or file part has nowhere to go",
        ),
        (
            "chatbot",
            "message/send",
            json!({"message": text("m", "x", json!({})), "configuration": {"historyLength": -1}}),
            -32602,
            "`configuration.historyLength`",
        ),
        (
            "chatbot",
            "tasks/get",
            json!({"id": "nope"}),
            -32001,
            "Task not found: nope",
        ),
        ("chatbot", "tasks/get", json!({}), -32602, "params field `id`"),
        (
            "chatbot",
            "tasks/pushNotificationConfig/set",
            json!({}),
            -32003,
            "not supported",
        ),
    ];
    for (assistant, method, params, code, words) in cases {
        let (got, why) = error(&app, assistant, method, params).await;
        assert_eq!(got, code, "{method}: {why}");
        assert!(why.contains(words), "{method}: {why}");
    }
    // A task of another assistant is none of this one's.
    let done = result(&app, "chatbot", "message/send", hi).await;
    let (code, _) = error(&app, "approval", "tasks/get", json!({"id": done["id"]})).await;
    assert_eq!(code, -32001);

    // Data parts are a graph's input fields; a failed run is a failed task that says why.
    let data = |graph: &str| json!({"message": {"role": "user", "messageId": graph, "parts": [{"kind": "data", "data": {"topic": "d"}}]}});
    let chain = result(&app, "chain", "message/send", data("chain")).await;
    assert_eq!(chain["status"]["state"], "completed");
    assert_eq!(
        chain["artifacts"][0]["parts"][0]["data"],
        json!({"topic": "d", "log": ["a:d", "b"]})
    );
    let failed = result(&app, "failing", "message/send", data("failing")).await;
    assert_eq!(failed["status"]["state"], "failed");
    assert_eq!(
        texts_of(&failed["status"]["message"]["parts"]),
        ["Error executing assistant: ValueError: boom in node"]
    );
    let wrong = error(
        &app,
        "chain",
        "message/send",
        json!({"message": {"role": "user", "messageId": "w", "parts": [{"data": {"topic": 7}}]}}),
    )
    .await;
    assert_eq!(wrong.0, -32602);
    assert!(wrong.1.contains("topic"), "{}", wrong.1);
}

/// A 1.0 message of text `text`.
fn text_v1(id: &str, text: &str, extra: Value) -> Value {
    let mut m = json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]});
    m.as_object_mut()
        .unwrap()
        .extend(extra.as_object().cloned().unwrap_or_default());
    m
}

/// Whether `value` holds a `kind` key anywhere (0.3's tags, which 1.0 does not have).
fn has_kind(value: &Value) -> bool {
    match value {
        Value::Object(o) => o.contains_key("kind") || o.values().any(has_kind),
        Value::Array(a) => a.iter().any(has_kind),
        _ => false,
    }
}

#[tokio::test]
async fn a_1_0_client_is_answered_in_1_0_s_method_names_and_shapes() {
    let (_dir, app) = app().await;
    let card = app.call("GET", "/a2a/chatbot/.well-known/agent-card.json", None).await;
    let versions: Vec<&str> = card.body["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["protocolVersion"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["1.0", "0.3.0"]);

    let sent = result(
        &app,
        "chatbot",
        "SendMessage",
        json!({"message": text_v1("m1", "hi", json!({}))}),
    )
    .await;
    let task = &sent["task"];
    assert!(!has_kind(&sent), "{sent}");
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(task["artifacts"][0]["parts"], json!([{"text": "hello there friend"}]));
    let roles: Vec<&str> = task["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["ROLE_USER", "ROLE_AGENT"]);
    let got = result(&app, "chatbot", "GetTask", json!({"id": task["id"]})).await;
    assert_eq!(got["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(got["artifacts"], task["artifacts"]);

    let events = stream(
        &app,
        "chatbot",
        "SendStreamingMessage",
        json!({"message": text_v1("m2", "more", json!({}))}),
    )
    .await;
    let shapes: Vec<&str> = events
        .iter()
        .map(|e| e.as_object().unwrap().keys().next().unwrap().as_str())
        .collect();
    assert_eq!(shapes[0], "task");
    assert_eq!(shapes[shapes.len() - 2..], ["artifactUpdate", "statusUpdate"]);
    assert!(events.iter().all(|e| !has_kind(e)), "{events:?}");
    assert_eq!(
        events.last().unwrap()["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    let streamed_task = events[0]["task"]["id"].clone();

    // The assistant's tasks, newest first, a page at a time.
    let all = result(&app, "chatbot", "ListTasks", json!({})).await;
    let ids: Vec<&Value> = all["tasks"].as_array().unwrap().iter().map(|t| &t["id"]).collect();
    assert_eq!(ids, [&streamed_task, &task["id"]]);
    assert_eq!(
        (all["totalSize"].as_u64(), all["nextPageToken"].as_str()),
        (Some(2), Some(""))
    );
    assert!(all["tasks"][0].get("artifacts").is_none(), "artifacts only when asked");
    let first = result(
        &app,
        "chatbot",
        "ListTasks",
        json!({"pageSize": 1, "includeArtifacts": true}),
    )
    .await;
    assert_eq!(
        (first["tasks"][0]["id"].clone(), first["nextPageToken"].as_str()),
        (streamed_task.clone(), Some("1"))
    );
    assert_eq!(
        first["tasks"][0]["artifacts"][0]["parts"],
        json!([{"text": "hello there friend"}])
    );
    let second = result(
        &app,
        "chatbot",
        "ListTasks",
        json!({"pageSize": 1, "pageToken": "1", "historyLength": 0}),
    )
    .await;
    assert_eq!(second["tasks"][0]["id"], task["id"]);
    assert!(second["tasks"][0].get("history").is_none());
    let of_context = result(&app, "chatbot", "ListTasks", json!({"contextId": task["contextId"]})).await;
    assert_eq!(of_context["totalSize"], 1);
    let waiting = result(
        &app,
        "chatbot",
        "ListTasks",
        json!({"status": "TASK_STATE_INPUT_REQUIRED"}),
    )
    .await;
    assert_eq!(waiting["tasks"], json!([]));
    assert_eq!(result(&app, "approval", "ListTasks", json!({})).await["totalSize"], 0);
    for (params, words) in [
        (json!({"pageSize": 0}), "`pageSize`"),
        (json!({"pageToken": "x"}), "`pageToken`: `x`"),
        (json!({"status": "TASK_STATE_BOGUS"}), "`status`: `TASK_STATE_BOGUS`"),
        (json!({"statusTimestampAfter": "yesterday"}), "`statusTimestampAfter`"),
    ] {
        let (code, why) = error(&app, "chatbot", "ListTasks", params).await;
        assert_eq!(code, -32602, "{why}");
        assert!(why.contains(words), "{why}");
    }

    // An interrupt, and its answer, in 1.0's words.
    let asked = result(
        &app,
        "approval",
        "SendMessage",
        json!({"message": text_v1("a1", "go", json!({}))}),
    )
    .await;
    assert_eq!(asked["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(
        asked["task"]["status"]["message"]["parts"],
        json!([{"text": "Proceed?"}])
    );
    let waiting = result(
        &app,
        "approval",
        "ListTasks",
        json!({"status": "TASK_STATE_INPUT_REQUIRED"}),
    )
    .await;
    assert_eq!(waiting["tasks"][0]["id"], asked["task"]["id"]);
    let resume = json!({"message": text_v1("a2", "sure", json!({"taskId": asked["task"]["id"]})), "configuration": {"returnImmediately": false}});
    let done = result(&app, "approval", "SendMessage", resume).await;
    assert_eq!(done["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        done["task"]["artifacts"][0]["parts"],
        json!([{"text": "approved: sure"}])
    );
}
