//! G15, G16, G24, G29, G32, G33: streaming, interrupts in streams, several writes of one node,
//! `Send` with an untracked value, retries, mixed returns. States are derived here.

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use weir::checkpoint::MemorySaver;
use weir::prelude::*;
use weir::{Event, RetryPolicy, StreamMode};

fn join_non_empty(acc: &mut String, x: String) {
    let parts: Vec<&str> = [acc.as_str(), x.as_str()]
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect();
    *acc = parts.join(", ");
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Human {
    robot_input: String,
    human_input: String,
}

fn show<S: State>(e: &Event<S>, values: impl Fn(&S) -> String) -> String {
    match e {
        Event::Update { node, update, .. } => format!("updates {node} {update:?}"),
        Event::Values { state, .. } => format!("values {}", values(state)),
        Event::Paused(p) => format!(
            "paused {} {}",
            p[0].node,
            p[0].question.as_ref().map_or(String::new(), |q| q.to_string())
        ),
        other => format!("{other:?}"),
    }
}

// G15: an interrupt in a stream of updates and values, then the resumed stream.
#[tokio::test]
async fn g15_an_interrupt_in_a_stream_of_updates_and_values() {
    let mut g = GraphBuilder::<Human>::new();
    g.add_node("robot_input_node", |_: &Human| {
        HumanUpdate::default().robot_input("beep boop i am a robot".into())
    });
    g.add_node(
        "human_input_node",
        |_: &Human, ctx: &Context| -> Result<HumanUpdate, BoxError> {
            let answer: String = ctx.interrupt("interrupt")?;
            Ok(HumanUpdate::default().human_input(answer))
        },
    );
    g.add_edge(START, "robot_input_node")
        .add_edge("robot_input_node", "human_input_node");
    let app = g.with_checkpointer(MemorySaver::new()).compile().unwrap();
    let cfg = RunConfig::thread("g15");
    let modes = StreamMode::UPDATES | StreamMode::VALUES;
    let values = |s: &Human| format!("robot={:?} human={:?}", s.robot_input, s.human_input);
    let first: Vec<String> = app
        .stream(HumanUpdate::default(), &cfg, modes)
        .map(|e| show(&e.unwrap(), values))
        .collect()
        .await;
    assert_eq!(
        first,
        [
            // LangGraph's input `{}` writes nothing: weir's first `values` is the state after the
            // hidden start step, with its defaults.
            "values robot=\"\" human=\"\"",
            "updates robot_input_node HumanUpdate { robot_input: One(\"beep boop i am a robot\") }",
            "values robot=\"beep boop i am a robot\" human=\"\"",
            // LangGraph: an `updates` event `{"__interrupt__": (Interrupt("interrupt"),)}` and a
            // `values` event with `__interrupt__`; weir: one typed `Paused` event, the last one.
            "paused human_input_node \"interrupt\"",
        ]
    );
    let resumed: Vec<String> = app
        .stream_resume(Some("i am a human"), &cfg, modes)
        .unwrap()
        .map(|e| show(&e.unwrap(), values))
        .collect()
        .await;
    assert_eq!(
        resumed,
        [
            "values robot=\"beep boop i am a robot\" human=\"\"",
            "updates human_input_node HumanUpdate { human_input: One(\"i am a human\") }",
            "values robot=\"beep boop i am a robot\" human=\"i am a human\"",
        ]
    );
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Foo {
    #[reducer(with = join_non_empty)]
    foo: String,
}

// G16: one node writes one field twice; the reducer sees both writes in order; the update event
// lists both; history shows each step's values, and (keeping task results) each checkpoint's
// task with its result (the update it returned; the start task's is the input).
#[tokio::test]
async fn g16_several_writes_of_one_node_to_one_field() {
    let seen = Arc::new(Mutex::new(String::new()));
    let mut g = GraphBuilder::<Foo>::new();
    g.add_node("one", |_: &Foo| {
        Command::new().update(FooUpdate::default().foo("one.0".into()).foo("one.1".into()))
    });
    let s = seen.clone();
    g.add_node("two", move |st: &Foo| {
        *s.lock().unwrap() = st.foo.clone();
        FooUpdate::default().foo("two".into())
    });
    g.add_edge(START, "one").add_edge("one", "two");
    let app = g.with_checkpointer(MemorySaver::new()).compile().unwrap();
    let cfg = RunConfig::thread("g16").task_results(true);
    let updates: Vec<String> = app
        .stream(FooUpdate::default().foo("input".into()), &cfg, StreamMode::UPDATES)
        .map(|e| show(&e.unwrap(), |_: &Foo| String::new()))
        .collect()
        .await;
    assert_eq!(
        updates,
        [
            "updates one FooUpdate { foo: Many([Reduce(\"one.0\"), Reduce(\"one.1\")]) }",
            "updates two FooUpdate { foo: One(Reduce(\"two\")) }",
        ]
    );
    assert_eq!(*seen.lock().unwrap(), "input, one.0, one.1", "two's input");
    let history: Vec<String> = app
        .get_state_history(&cfg, None)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.values.foo)
        .collect();
    assert_eq!(
        history,
        ["input, one.0, one.1, two", "input, one.0, one.1", "input", ""]
    );
    let tasks: Vec<Vec<(String, String)>> = app
        .get_state_history(&cfg, None)
        .await
        .unwrap()
        .into_iter()
        .map(|s| {
            s.tasks
                .iter()
                .map(|t| (t.name.clone(), format!("{:?}", t.result)))
                .collect()
        })
        .collect();
    let task = |name: &str, result: &str| vec![(name.to_owned(), result.to_owned())];
    assert_eq!(
        tasks,
        [
            vec![],
            task("two", "Some(FooUpdate { foo: One(Reduce(\"two\")) })"),
            task(
                "one",
                "Some(FooUpdate { foo: Many([Reduce(\"one.0\"), Reduce(\"one.1\")]) })"
            ),
            task("__start__", "Some(FooUpdate { foo: One(Reduce(\"input\")) })"),
        ]
    );
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Session {
    #[reducer(append)]
    messages: Vec<String>,
    #[channel(untracked)]
    session_resource: String,
}

/// What `setup` sends the tool: LangGraph strips untracked values from a `Send`'s saved
/// argument; here the payload's resource is not serialized (`#[serde(skip)]`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct ToolCall {
    #[serde(skip)]
    resource: String,
}

// G24: a `Send` carries an untracked value; the tool sees it; the checkpoint does not keep it.
#[tokio::test]
async fn g24_send_with_an_untracked_value() {
    let mut g = GraphBuilder::<Session>::new();
    g.add_node("setup", |_: &Session| {
        SessionUpdate::default()
            .messages(vec!["setup complete".into()])
            .session_resource("test_session".into())
    });
    let tool = g.add_send_node("tool_node", |call: &ToolCall| {
        SessionUpdate::default()
            .messages(vec![format!("tool used resource: {}", call.resource)])
            .session_resource("new_session".into())
    });
    let t = tool.clone();
    g.add_edge(START, "setup");
    g.add_router(
        "setup",
        move |s: &Session| {
            t.send(ToolCall {
                resource: s.session_resource.clone(),
            })
        },
        [&tool],
    );
    let app = g.with_checkpointer(MemorySaver::new()).compile().unwrap();
    let cfg = RunConfig::thread("g24");
    let out = app.invoke(Session::default(), &cfg).await.unwrap();
    assert_eq!(out.messages, ["setup complete", "tool used resource: test_session"]);
    assert_eq!(out.session_resource, "new_session");
    let saved = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(
        saved.values.session_resource, "",
        "an untracked value is not in the checkpoint"
    );
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Retried {
    foo: String,
}

#[derive(Debug)]
struct ValueError(&'static str);
impl std::fmt::Display for ValueError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}
impl std::error::Error for ValueError {}

// G29: RetryPolicy(max_attempts=3, initial_interval=10 ms, backoff 2, no jitter, retry on
// ValueError): three attempts, sleeping at least 10 ms then 20 ms. (LangGraph's default
// `retry_on`, which skips ValueError and friends, has no counterpart for Rust error types: weir's
// default retries every error a node returns, and `retry_on` selects.)
#[tokio::test]
async fn g29_retry_policy_attempts_and_backoff() {
    let attempts = Arc::new(Mutex::new(Vec::new()));
    let build = |fail_until: usize, max: u32| {
        let a = attempts.clone();
        let mut g = GraphBuilder::<Retried>::new();
        let node = g.add_node("other_node", move |_: &Retried| -> Result<RetriedUpdate, ValueError> {
            let mut a = a.lock().unwrap();
            a.push(Instant::now());
            if a.len() < fail_until {
                Err(ValueError("Always fails"))
            } else {
                Ok(RetriedUpdate::default().foo("other_node".into()))
            }
        });
        let policy = RetryPolicy::new(max)
            .initial_interval(Duration::from_millis(10))
            .backoff_factor(2.0)
            .jitter(false)
            .retry_on(|e| e.is::<ValueError>());
        g.retry(&node, policy);
        g.add_edge(START, &node);
        g.compile().unwrap()
    };
    let out = build(3, 3)
        .invoke(Retried::default(), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.foo, "other_node");
    let at = attempts.lock().unwrap().clone();
    assert_eq!(at.len(), 3);
    assert!(at[1] - at[0] >= Duration::from_millis(10) && at[2] - at[1] >= Duration::from_millis(20));
    attempts.lock().unwrap().clear();
    let err = build(usize::MAX, 2)
        .invoke(Retried::default(), &RunConfig::default())
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "node `other_node` failed at step 1: Always fails");
    assert_eq!(attempts.lock().unwrap().len(), 2);
}

// G32: what LangGraph checks at run time about node outputs is typed here. A node returning
// something that is not an update (`"not a dict"`) does not compile (`tests/ui/graph-node-
// return-type.rs`); an update cannot name a field the state lacks, so nothing is dropped. A run
// of a fresh thread with no input (LangGraph's `invoke(None)`, `EmptyInputError`) is a resume
// with nothing to resume.
#[tokio::test]
async fn g32_no_input_on_a_fresh_thread_is_an_error() {
    let mut g = GraphBuilder::<Retried>::new();
    g.add_node("n", |_: &Retried| RetriedUpdate::default().foo("x".into()));
    g.add_edge(START, "n");
    let app = g.with_checkpointer(MemorySaver::new()).compile().unwrap();
    let err = app.resume(&RunConfig::thread("fresh")).await.unwrap_err();
    assert!(err.is_bad_resume());
    assert_eq!(
        err.to_string(),
        "thread `fresh` has no paused node to give an answer to"
    );
    let out = app
        .invoke(RetriedUpdate::default(), &RunConfig::thread("empty"))
        .await
        .unwrap();
    assert_eq!(out.foo, "x", "an input that writes no field still starts the graph");
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Mixed {
    #[reducer(append)]
    root: Vec<String>,
    #[reducer(with = concat)]
    foo: String,
}

fn concat(acc: &mut String, x: String) {
    acc.push_str(&x);
}

// G33: a node returning several commands: their updates apply in order.
#[tokio::test]
async fn g33_mixed_and_multiple_command_returns() {
    let mut g = GraphBuilder::<Mixed>::new();
    g.add_node("node_a", |_: &Mixed| {
        vec![
            Command::new().update(MixedUpdate::default().root(vec!["a".into()]).foo("a1".into())),
            Command::new().update(MixedUpdate::default().root(vec!["b".into()]).foo("a2".into())),
        ]
    });
    g.add_node("node_b", |_: &Mixed| MixedUpdate::default().foo("b".into()));
    g.add_edge(START, "node_a").add_edge("node_a", "node_b");
    let app = g.compile().unwrap();
    let updates: Vec<String> = app
        .stream(Mixed::default(), &RunConfig::default(), StreamMode::UPDATES)
        .map(|e| show(&e.unwrap(), |_: &Mixed| String::new()))
        .collect()
        .await;
    assert_eq!(
        updates,
        [
            "updates node_a MixedUpdate { root: Many([Reduce([\"a\"]), Reduce([\"b\"])]), foo: Many([Reduce(\"a1\"), Reduce(\"a2\")]) }",
            "updates node_b MixedUpdate { foo: One(Reduce(\"b\")) }",
        ]
    );
    let out = app.invoke(Mixed::default(), &RunConfig::default()).await.unwrap();
    assert_eq!(
        (out.root.as_slice(), out.foo.as_str()),
        (&["a".to_string(), "b".to_string()][..], "a1a2b")
    );
}
