//! `weir::otel` end to end: a ReAct agent over the OpenAI-compatible adapter (against the local
//! stub server) and a graph whose node fails, their spans exported over OTLP/HTTP to an
//! in-process collector, which decodes them. Alone in its test binary: it installs the process's
//! global `tracing` subscriber.

mod collector;
mod stub;

use collector::{Collector, Span};
use schemars::JsonSchema;
use serde::Deserialize;
use std::time::Duration;
use stub::{call, done, finish, usage, Reply, Stub};
use weir_agent::message::{Message, MessagesState, MessagesStateUpdate};
use weir_agent::model::{is_retryable, OpenAiChat};
use weir_agent::react_agent;
use weir_agent::tool::tool_fn;
use weir_runtime::checkpoint::MemorySaver;
use weir_runtime::{BoxError, Context, GraphBuilder, RetryPolicy, RunConfig, END, START};

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

#[derive(Deserialize, JsonSchema)]
struct CityArgs {
    city: String,
}

/// The model's first answer: calls `add` and `forecast`, its usage 11 in, 7 out.
fn two_calls() -> Reply {
    Reply::Stream(vec![
        call("c-1", 0, Some("call_add"), Some("add"), "{\"a\": 2, \"b\": 3}"),
        call(
            "c-1",
            1,
            Some("call_forecast"),
            Some("forecast"),
            "{\"city\": \"Oslo\"}",
        ),
        finish("c-1", "tool_calls"),
        usage("c-1", 11, 7),
        done(),
    ])
}

fn one<'a>(spans: &'a [Span], what: &str, pick: impl Fn(&Span) -> bool) -> &'a Span {
    let found: Vec<&Span> = spans.iter().filter(|s| pick(s)).collect();
    assert_eq!(found.len(), 1, "expected one {what}, found {}: {spans:#?}", found.len());
    found[0]
}

fn of_run<'a>(spans: &'a [Span], run: &Span) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.trace_id == run.trace_id).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_steps_tasks_and_model_and_tool_calls_reach_an_otlp_collector_as_one_trace_each() {
    let collector = Collector::start();
    let guard = weir::otel::Otel::new()
        .endpoint(&collector.base_url)
        .service_name("otel-test")
        .install()
        .unwrap();

    // An agent run: the model answers 503 (retried), then calls two tools (one fails), then
    // answers.
    let stub = Stub::start(vec![
        Reply::Status(503, "busy".into()),
        two_calls(),
        stub::answer("c-2", &["5", " and no forecast"], 20, 4),
    ])
    .await;
    let tools = [
        tool_fn("add", "Adds two integers.", |x: AddArgs| async move {
            Ok::<_, BoxError>(x.a + x.b)
        }),
        tool_fn("forecast", "The forecast for a city.", |x: CityArgs| async move {
            Err::<String, BoxError>(format!("no forecast for {}", x.city).into())
        }),
    ];
    let policy = RetryPolicy::new(2)
        .initial_interval(Duration::from_millis(1))
        .jitter(false)
        .retry_on(is_retryable);
    let agent = react_agent(OpenAiChat::new("stub-model").base_url(&stub.base_url), tools)
        .model_retry(policy)
        .checkpointer(MemorySaver::new())
        .compile()
        .unwrap();
    let mut config = RunConfig::thread("agent-thread");
    config.metadata.insert("run_id".into(), "run-7".into());
    let input = MessagesStateUpdate::default().messages(Message::human("2 + 3, and the forecast?").into());
    let out = agent.invoke(input, &config).await.unwrap();
    assert_eq!(out.messages.last().unwrap().text(), "5 and no forecast");

    // A failing run: two tasks in one step, one of them fails.
    let mut g = GraphBuilder::<MessagesState>::new();
    g.add_node("fine", |_: &MessagesState| MessagesStateUpdate::default());
    g.add_node("broken", |_: &MessagesState| -> Result<MessagesStateUpdate, BoxError> {
        Err("the database is down".into())
    });
    g.add_edge(START, "fine").add_edge(START, "broken");
    g.add_edge("fine", END).add_edge("broken", END);
    let failing = g.compile().unwrap();
    let err = failing
        .invoke(MessagesStateUpdate::default(), &RunConfig::thread("failing-thread"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("the database is down"), "{err}");

    // A paused run: interrupted, which is not an error.
    let mut g = GraphBuilder::<MessagesState>::new();
    g.add_node(
        "ask",
        |_: &MessagesState, ctx: &Context| -> Result<MessagesStateUpdate, BoxError> {
            let _: bool = ctx.interrupt("publish?")?;
            Ok(MessagesStateUpdate::default())
        },
    );
    g.add_edge(START, "ask").add_edge("ask", END);
    let pausing = g.with_checkpointer(MemorySaver::new()).compile().unwrap();
    let out = pausing
        .run(MessagesStateUpdate::default(), &RunConfig::thread("paused-thread"))
        .await
        .unwrap();
    assert!(out.is_paused());

    // Dropping the guard sends what is buffered.
    drop(guard);
    let spans = collector.spans();
    assert!(spans.iter().all(|s| s.service == "otel-test"), "{spans:#?}");

    // The agent's run: one trace, run → step → task → chat / execute_tool.
    let run = one(&spans, "agent run", |s| {
        s.name == "weir.run" && s.str("thread") == Some("agent-thread")
    });
    assert_eq!(run.parent_id, "");
    assert_eq!(run.str("run_id"), Some("run-7"));
    assert_eq!(run.str("status"), Some("ok"));
    assert_eq!(run.status_code, 1);
    let trace = of_run(&spans, run);
    let steps: Vec<&Span> = trace.iter().copied().filter(|s| s.name == "weir.step").collect();
    let mut numbers: Vec<i64> = steps.iter().map(|s| s.int("step").unwrap()).collect();
    numbers.sort();
    // Step 0 is the input's (`__start__`), then agent, tools, agent.
    assert_eq!(numbers, [0, 1, 2, 3], "{steps:#?}");
    assert!(steps
        .iter()
        .all(|s| s.parent_id == run.span_id && s.str("status") == Some("ok")));
    let step = |n: i64| *steps.iter().find(|s| s.int("step") == Some(n)).unwrap();
    let task = |node: &str, n: i64| {
        one(&spans, "task", |s| {
            s.name == "weir.task"
                && s.trace_id == run.trace_id
                && s.str("node") == Some(node)
                && s.int("step") == Some(n)
        })
    };
    let (agent_1, tools_2, agent_3) = (task("agent", 1), task("tools", 2), task("agent", 3));
    for (t, n) in [(task("__start__", 0), 0), (agent_1, 1), (tools_2, 2), (agent_3, 3)] {
        assert_eq!(t.parent_id, step(n).span_id, "{t:#?}");
        assert_eq!((t.str("status"), t.status_code), (Some("ok"), 1), "{t:#?}");
    }
    // The 503 was retried inside the task: an event of its span.
    let retry = agent_1.events.iter().find(|(name, _)| name == "weir.task.retry");
    let (_, retry) = retry.unwrap_or_else(|| panic!("no retry event: {agent_1:#?}"));
    assert_eq!(retry.get("attempt").and_then(|v| v.as_i64()), Some(1));
    assert!(retry["reason"].as_str().unwrap().contains("503"), "{retry:?}");

    // Model calls: `chat stub-model`, client spans under the agent's tasks.
    let chats: Vec<&Span> = trace.iter().copied().filter(|s| s.name == "chat stub-model").collect();
    assert_eq!(chats.len(), 3, "{trace:#?}");
    for c in &chats {
        assert_eq!(c.kind, 3, "a chat span is a client span: {c:#?}");
        assert_eq!(c.str("gen_ai.operation.name"), Some("chat"));
        assert_eq!(c.str("gen_ai.provider.name"), Some("openai"));
        assert_eq!(c.str("gen_ai.system"), Some("openai"));
        assert_eq!(c.str("gen_ai.request.model"), Some("stub-model"));
    }
    let under = |parent: &Span| -> Vec<&Span> {
        let mut v: Vec<&Span> = chats
            .iter()
            .copied()
            .filter(|c| c.parent_id == parent.span_id)
            .collect();
        v.sort_by_key(|c| c.status_code);
        v
    };
    let [called, failed] = under(agent_1)[..] else {
        panic!("two chats under the first agent task: {chats:#?}")
    };
    assert_eq!(
        (failed.status_code, failed.str("error.type")),
        (2, Some("503")),
        "{failed:#?}"
    );
    assert!(failed.status_message.contains("503"), "{failed:#?}");
    assert_eq!(called.status_code, 1);
    assert_eq!(called.str("gen_ai.response.model"), Some("stub-model"));
    assert_eq!(called.str("gen_ai.response.id"), Some("c-1"));
    assert_eq!(called.str("gen_ai.response.finish_reasons"), Some(r#"["tool_calls"]"#));
    assert_eq!(called.int("gen_ai.usage.input_tokens"), Some(11));
    assert_eq!(called.int("gen_ai.usage.output_tokens"), Some(7));
    let [answered] = under(agent_3)[..] else {
        panic!("one chat under the last agent task: {chats:#?}")
    };
    assert_eq!(answered.str("gen_ai.response.finish_reasons"), Some(r#"["stop"]"#));
    assert_eq!(answered.int("gen_ai.usage.input_tokens"), Some(20));
    assert_eq!(answered.int("gen_ai.usage.output_tokens"), Some(4));

    // Tool calls: `execute_tool {name}` under the tools task; the failed one says why.
    let add = one(&spans, "add call", |s| s.name == "execute_tool add");
    assert_eq!(add.parent_id, tools_2.span_id);
    assert_eq!(add.str("gen_ai.operation.name"), Some("execute_tool"));
    assert_eq!(add.str("gen_ai.tool.name"), Some("add"));
    assert_eq!(add.str("gen_ai.tool.call.id"), Some("call_add"));
    assert_eq!(add.status_code, 1);
    let forecast = one(&spans, "forecast call", |s| s.name == "execute_tool forecast");
    assert_eq!(forecast.parent_id, tools_2.span_id);
    assert_eq!(forecast.str("gen_ai.tool.call.id"), Some("call_forecast"));
    assert_eq!(
        (forecast.status_code, forecast.str("error.type")),
        (2, Some("tool_error"))
    );
    assert_eq!(forecast.status_message, "no forecast for Oslo");

    // The failing run: its step and the failed task carry the error; the sibling task is ok.
    let run = one(&spans, "failing run", |s| {
        s.name == "weir.run" && s.str("thread") == Some("failing-thread")
    });
    assert_eq!(run.str("run_id"), None);
    assert_eq!(run.str("status"), Some("error"));
    assert_eq!(run.status_code, 2);
    assert!(run.status_message.contains("the database is down"), "{run:#?}");
    assert_eq!(run.str("error"), Some(run.status_message.as_str()));
    let trace = of_run(&spans, run);
    let step = one(&spans, "failing step", |s| {
        s.name == "weir.step" && s.trace_id == run.trace_id && s.int("step") == Some(1)
    });
    assert_eq!(
        (step.parent_id.as_str(), step.int("tasks")),
        (run.span_id.as_str(), Some(2))
    );
    assert_eq!((step.str("status"), step.status_code), (Some("error"), 2));
    let task = |node: &str| *trace.iter().find(|s| s.str("node") == Some(node)).unwrap();
    let (fine, broken) = (task("fine"), task("broken"));
    assert!(fine.parent_id == step.span_id && broken.parent_id == step.span_id);
    assert_eq!((fine.str("status"), fine.status_code), (Some("ok"), 1));
    assert_eq!((broken.str("status"), broken.status_code), (Some("error"), 2));
    assert_eq!(broken.status_message, "the database is down");
    assert_eq!(broken.str("error"), Some("the database is down"));

    // The paused run and its task: interrupted, their OpenTelemetry status unset.
    let run = one(&spans, "paused run", |s| {
        s.name == "weir.run" && s.str("thread") == Some("paused-thread")
    });
    assert_eq!(
        (run.str("status"), run.status_code, run.str("error")),
        (Some("interrupted"), 0, None)
    );
    let ask = one(&spans, "paused task", |s| {
        s.trace_id == run.trace_id && s.str("node") == Some("ask")
    });
    assert_eq!((ask.str("status"), ask.status_code), (Some("interrupted"), 0));
}
