//! The ReAct agent's run context (LangGraph's `create_react_agent(..., context_schema=C)`): its
//! system prompt and its choice of model as functions of the run's context, with the scripted
//! fake model; two runs with two contexts send two prompts, to two models.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use weir_agent::message::{AiMessage, Message, MessagesStateUpdate};
use weir_agent::model::{ChatModel, FakeChatModel};
use weir_agent::{react_agent, StructuredStateUpdate};
use weir_runtime::RunConfig;

/// Who runs the agent, and on which plan.
struct User {
    name: String,
    paid: bool,
}

fn user(name: &str, paid: bool) -> RunConfig<User> {
    RunConfig::default().context(User {
        name: name.into(),
        paid,
    })
}

fn human(text: &str) -> MessagesStateUpdate {
    MessagesStateUpdate::default().messages(Message::human(text).into())
}

/// The texts of every conversation `model` was called with.
fn asked(model: &FakeChatModel) -> Vec<Vec<String>> {
    model
        .requests()
        .iter()
        .map(|r| r.iter().map(Message::text).collect())
        .collect()
}

#[tokio::test]
async fn two_runs_with_two_contexts_send_two_prompts() {
    let model = Arc::new(FakeChatModel::new([AiMessage::new("hello")]).cycle().recording());
    let chosen: Arc<dyn ChatModel> = model.clone();
    let app = react_agent(FakeChatModel::new([]), [])
        .context::<User>()
        .system_prompt_fn(|messages, u: &User| format!("Speak to {} ({} messages so far).", u.name, messages.len()))
        .select_model(move |_, _| chosen.clone())
        .compile()
        .unwrap();
    app.invoke(human("hi"), &user("ada", false)).await.unwrap();
    app.invoke(human("hey"), &user("bo", true)).await.unwrap();
    assert_eq!(
        asked(&model),
        [
            ["Speak to ada (1 messages so far).", "hi"],
            ["Speak to bo (1 messages so far).", "hey"],
        ]
    );
}

#[tokio::test]
async fn two_runs_with_two_contexts_call_two_models() {
    let small = Arc::new(
        FakeChatModel::new([AiMessage::new("small answer")])
            .named("small")
            .recording(),
    );
    let large = Arc::new(
        FakeChatModel::new([AiMessage::new("large answer")])
            .named("large")
            .recording(),
    );
    let (s, l): (Arc<dyn ChatModel>, Arc<dyn ChatModel>) = (small.clone(), large.clone());
    let app = react_agent(FakeChatModel::new([]).named("unused"), [])
        .context::<User>()
        .system_prompt("Be brief.")
        .select_model(move |_, u: &User| if u.paid { l.clone() } else { s.clone() })
        .compile()
        .unwrap();
    let free = app.invoke(human("hi"), &user("ada", false)).await.unwrap();
    let paid = app.invoke(human("hi"), &user("bo", true)).await.unwrap();
    assert_eq!(free.messages[1].text(), "small answer");
    assert_eq!(paid.messages[1].text(), "large answer");
    // Each model was called once, with the fixed prompt before the conversation.
    assert_eq!(asked(&small), [["Be brief.", "hi"]]);
    assert_eq!(asked(&large), [["Be brief.", "hi"]]);
}

#[tokio::test]
async fn a_prompt_function_set_before_the_context_is_kept() {
    let model = Arc::new(FakeChatModel::new([AiMessage::new("ok")]).recording());
    let chosen: Arc<dyn ChatModel> = model.clone();
    let app = react_agent(FakeChatModel::new([]), [])
        .system_prompt_fn(|m, _: &()| format!("{} message(s).", m.len()))
        .select_model(move |_, _| chosen.clone())
        .context::<User>()
        .compile()
        .unwrap();
    app.invoke(human("hi"), &user("cy", false)).await.unwrap();
    assert_eq!(asked(&model), [["1 message(s).", "hi"]]);
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Verdict {
    ok: bool,
}

#[tokio::test]
async fn a_structured_agent_asks_the_model_its_context_chose_for_the_answer_too() {
    let large = Arc::new(
        FakeChatModel::new([AiMessage::new("fine"), AiMessage::new(r#"{"ok": true}"#)])
            .named("large")
            .recording(),
    );
    let l: Arc<dyn ChatModel> = large.clone();
    let app = react_agent(FakeChatModel::new([]).named("unused"), [])
        .context::<User>()
        .system_prompt_fn(|_, u: &User| format!("For {}.", u.name))
        .select_model(move |_, _| l.clone())
        .response_format::<Verdict>()
        .compile()
        .unwrap();
    let input = StructuredStateUpdate::<Verdict>::default().messages(Message::human("ok?").into());
    let out = app.invoke(input, &user("di", true)).await.unwrap();
    assert_eq!(out.structured_response, Some(Verdict { ok: true }));
    assert_eq!(asked(&large), [vec!["For di.", "ok?"], vec!["ok?", "fine"]]);
}
