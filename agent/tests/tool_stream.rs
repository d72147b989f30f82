//! The `tools` stream mode: a ReAct agent's tool node reports each call of a known tool as it
//! runs (`tool-started` with its arguments, then `tool-finished` with its tool message, or
//! `tool-error`), under the tool node's task; a call of an unknown tool reports nothing, a call
//! that pauses reports its start only, and nothing is reported when the mode is off.

use futures::StreamExt;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use weir_agent::message::{AiMessage, Message, MessagesState, MessagesStateUpdate, ToolCall};
use weir_agent::model::FakeChatModel;
use weir_agent::{react_agent, tool};
use weir_runtime::checkpoint::MemorySaver;
use weir_runtime::{BoxError, CompiledGraph, Context, Event, RunConfig, StreamMode};

/// The weather in a city.
#[tool]
async fn weather(city: String) -> Result<String, BoxError> {
    if city.is_empty() {
        return Err("no city given".into());
    }
    Ok(format!("sunny in {city}"))
}

/// Deletes a file, once a person approves.
#[tool]
async fn delete(ctx: &Context, path: String) -> Result<String, BoxError> {
    let approved: bool = ctx.interrupt(json!({"approve": path.clone()}))?;
    Ok(if approved {
        format!("deleted {path}")
    } else {
        "refused".into()
    })
}

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall::new(id, name, args.as_object().cloned().unwrap())
}

fn agent(calls: Vec<ToolCall>) -> CompiledGraph<MessagesState> {
    let model = FakeChatModel::new([AiMessage::new("").with_tool_calls(calls), AiMessage::new("done")]);
    react_agent(model, [Weather::tool(), Delete::tool()])
        .checkpointer(MemorySaver::new())
        .compile()
        .unwrap()
}

fn human(text: &str) -> MessagesStateUpdate {
    MessagesStateUpdate::default().messages(Message::human(text).into())
}

/// The tool reports of a run, by call id, in the order each call made them, with the node
/// that made them.
async fn reports(
    app: &CompiledGraph<MessagesState>,
    cfg: &RunConfig,
    modes: StreamMode,
) -> BTreeMap<String, Vec<(String, Value)>> {
    let mut by_call: BTreeMap<String, Vec<(String, Value)>> = BTreeMap::new();
    let mut events = app.stream(human("go"), cfg, modes);
    while let Some(event) = events.next().await {
        if let Event::Tool { event, meta } = event.unwrap() {
            let id = event["tool_call_id"].as_str().unwrap().to_owned();
            by_call.entry(id).or_default().push((meta.node.clone(), event));
        }
    }
    by_call
}

#[tokio::test]
async fn each_known_tools_call_reports_its_start_then_its_end_or_its_error() {
    let app = agent(vec![
        call("c1", "weather", json!({"city": "Paris"})),
        call("c2", "weather", json!({"city": ""})),
        call("c3", "nowhere", json!({})),
    ]);
    let cfg = RunConfig::thread("t1");
    let got = reports(&app, &cfg, StreamMode::TOOLS | StreamMode::UPDATES).await;
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        ["c1", "c2"],
        "an unknown tool reports nothing"
    );
    let c1 = &got["c1"];
    assert!(c1.iter().all(|(node, _)| node == "tools"));
    assert_eq!(
        c1[0].1,
        json!({"event": "tool-started", "tool_call_id": "c1", "tool_name": "weather", "input": {"city": "Paris"}})
    );
    assert_eq!(c1[1].1["event"], "tool-finished");
    let output = &c1[1].1["output"];
    assert_eq!(
        (
            &output["type"],
            &output["content"],
            &output["tool_call_id"],
            &output["status"]
        ),
        (
            &json!("tool"),
            &json!("sunny in Paris"),
            &json!("c1"),
            &json!("success")
        )
    );
    assert_eq!(c1.len(), 2);
    assert_eq!(
        got["c2"][1].1,
        json!({"event": "tool-error", "tool_call_id": "c2", "message": "no city given"})
    );
    // The finished call's message is the one the state holds, id included.
    let state = app.get_state(&cfg).await.unwrap().unwrap();
    let held = state.values.messages.iter().find_map(Message::as_tool).unwrap();
    assert_eq!(Some(output["id"].as_str().unwrap()), held.id.as_deref());
}

#[tokio::test]
async fn a_paused_call_reports_its_start_only_and_nothing_goes_out_with_the_mode_off() {
    let app = agent(vec![call("d1", "delete", json!({"path": "/tmp/x"}))]);
    let cfg = RunConfig::thread("t2");
    let got = reports(&app, &cfg, StreamMode::TOOLS).await;
    let events: Vec<&str> = got["d1"].iter().map(|(_, e)| e["event"].as_str().unwrap()).collect();
    assert_eq!(events, ["tool-started"]);
    let other = RunConfig::thread("t3");
    assert!(reports(&app, &other, StreamMode::UPDATES | StreamMode::MESSAGES)
        .await
        .is_empty());
}

/// A node that reports through its context, in a subgraph: the report comes under the
/// subgraph's namespace.
#[tokio::test]
async fn a_subgraphs_reports_come_under_its_namespace() {
    use weir_runtime::{GraphBuilder, SubgraphEvent, END, START};
    let mut inner = GraphBuilder::<MessagesState>::new();
    inner.add_node("work", |_: &MessagesState, ctx: &Context| {
        let ctx = ctx.clone();
        async move {
            ctx.emit_tool(json!({"event": "tool-started", "tool_call_id": "x", "tool_name": "w"}))
                .await;
            MessagesStateUpdate::default()
        }
    });
    inner.add_edge(START, "work").add_edge("work", END);
    let mut outer = GraphBuilder::<MessagesState>::new();
    outer.add_subgraph(
        "inner",
        inner.compile().unwrap(),
        |_: &MessagesState| MessagesStateUpdate::default(),
        |_: &MessagesState| MessagesStateUpdate::default(),
    );
    outer.add_edge(START, "inner").add_edge("inner", END);
    let app = outer.compile().unwrap();
    let cfg = RunConfig::default().subgraphs(true);
    let mut seen = Vec::new();
    let mut events = app.stream(MessagesStateUpdate::default(), &cfg, StreamMode::TOOLS);
    while let Some(event) = events.next().await {
        if let Event::Subgraph {
            ns,
            event: SubgraphEvent::Tool { event, meta },
            ..
        } = event.unwrap()
        {
            seen.push((
                ns[0].split(':').next().unwrap().to_owned(),
                meta.node.clone(),
                event["tool_call_id"].clone(),
            ));
        }
    }
    assert_eq!(seen, [("inner".to_owned(), "work".to_owned(), json!("x"))]);
}
