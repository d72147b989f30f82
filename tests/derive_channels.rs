//! The channel attributes of `#[derive(State)]`, observed through real graph runs: what each
//! step's nodes read.

use std::sync::{Arc, Mutex};
use weir::prelude::*;
use weir::ChannelKind;

#[derive(State, Clone, Debug, Default, PartialEq)]
struct Flow {
    /// What the nodes saw, one line per node run (appended).
    #[reducer(append)]
    seen: Vec<String>,
    #[channel(ephemeral)]
    scratch: Option<String>,
    #[channel(ephemeral, unguarded)]
    loose: Option<String>,
    #[channel(topic)]
    events: Vec<String>,
    #[channel(topic, accumulate)]
    history: Vec<String>,
    #[channel(any)]
    anything: String,
    #[channel(untracked)]
    cache: Option<u32>,
    #[channel(untracked, unguarded)]
    loose_cache: Option<u32>,
    #[channel(after_finish)]
    summary: String,
    #[channel(last_value)]
    status: String,
}

type Node = fn(&Flow) -> FlowUpdate;

/// `START -> a -> b -> c -> END`, each node recording what it saw.
async fn chain(a: Node, b: Node, c: Node) -> Result<Flow, weir::Error> {
    let mut g = GraphBuilder::<Flow>::new();
    g.add_node("a", a);
    g.add_node("b", b);
    g.add_node("c", c);
    g.add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", "c")
        .add_edge("c", END);
    g.compile()
        .expect("a valid graph")
        .invoke(FlowUpdate::default().status("go".into()), &RunConfig::default())
        .await
}

/// `START -> {x, y} -> END`: `x` and `y` run in the same step.
async fn parallel(x: Node, y: Node) -> Result<Flow, weir::Error> {
    let mut g = GraphBuilder::<Flow>::new();
    g.add_node("x", x);
    g.add_node("y", y);
    g.add_edge(START, "x")
        .add_edge(START, "y")
        .add_edge("x", END)
        .add_edge("y", END);
    g.compile()
        .expect("a valid graph")
        .invoke(FlowUpdate::default().status("go".into()), &RunConfig::default())
        .await
}

fn saw(line: String) -> FlowUpdate {
    FlowUpdate::default().seen(vec![line])
}

#[test]
fn channel_attributes_choose_the_channel_kind() {
    let kinds: Vec<(&str, ChannelKind)> = Flow::FIELDS.iter().map(|f| (f.name(), f.kind)).collect();
    assert_eq!(
        kinds,
        [
            ("seen", ChannelKind::Reducer),
            ("scratch", ChannelKind::Ephemeral),
            ("loose", ChannelKind::Ephemeral),
            ("events", ChannelKind::Topic { accumulate: false }),
            ("history", ChannelKind::Topic { accumulate: true }),
            ("anything", ChannelKind::AnyValue),
            ("cache", ChannelKind::Untracked),
            ("loose_cache", ChannelKind::Untracked),
            ("summary", ChannelKind::LastValueAfterFinish),
            ("status", ChannelKind::LastValue),
        ]
    );
}

#[tokio::test]
async fn ephemeral_value_is_gone_the_step_after_the_next() {
    let out = chain(
        |_| FlowUpdate::default().scratch(Some("tmp".into())),
        |s| saw(format!("b: {:?}", s.scratch)),
        |s| saw(format!("c: {:?}", s.scratch)),
    )
    .await
    .unwrap();
    assert_eq!(out.seen, ["b: Some(\"tmp\")", "c: None"]);
    assert_eq!(out.scratch, None);
}

#[tokio::test]
async fn guarded_ephemeral_refuses_two_writes_in_one_step() {
    let err = parallel(
        |_| FlowUpdate::default().scratch(Some("x".into())),
        |_| FlowUpdate::default().scratch(Some("y".into())),
    )
    .await
    .unwrap_err();
    assert_eq!(err.field(), Some("scratch"));
}

#[tokio::test]
async fn unguarded_ephemeral_keeps_the_last_of_several_writes() {
    let out = parallel(
        |_| FlowUpdate::default().loose(Some("x".into())),
        |_| FlowUpdate::default().loose(Some("y".into())),
    )
    .await
    .unwrap();
    assert_eq!(out.loose.as_deref(), Some("y"));
}

#[tokio::test]
async fn topic_keeps_one_step_of_writes_and_accumulating_topic_keeps_all() {
    let out = chain(
        |_| {
            FlowUpdate::default()
                .events(vec!["a1".into(), "a2".into()])
                .history(vec!["a".into()])
        },
        |s| saw(format!("b: {:?} {:?}", s.events, s.history)).history(vec!["b".into()]),
        |s| saw(format!("c: {:?} {:?}", s.events, s.history)),
    )
    .await
    .unwrap();
    assert_eq!(out.seen, ["b: [\"a1\", \"a2\"] [\"a\"]", "c: [] [\"a\", \"b\"]"]);
    assert_eq!(out.events, Vec::<String>::new());
    assert_eq!(out.history, ["a", "b"]);
}

#[tokio::test]
async fn topic_concatenates_the_writes_of_a_step_in_task_order() {
    let out = parallel(
        |_| FlowUpdate::default().events(vec!["x".into()]).history(vec!["x".into()]),
        |_| {
            FlowUpdate::default()
                .events(vec!["y1".into(), "y2".into()])
                .history(vec!["y".into()])
        },
    )
    .await
    .unwrap();
    // Nothing writes `events` after that step, but no step follows to clear it.
    assert_eq!(out.events, ["x", "y1", "y2"]);
    assert_eq!(out.history, ["x", "y"]);
}

#[tokio::test]
async fn any_value_takes_the_last_of_several_writes_and_clears_when_not_written() {
    let out = parallel(
        |_| FlowUpdate::default().anything("x".into()),
        |_| FlowUpdate::default().anything("y".into()),
    )
    .await
    .unwrap();
    assert_eq!(out.anything, "y");

    let out = chain(
        |_| FlowUpdate::default().anything("from a".into()),
        |s| saw(format!("b: {}", s.anything)),
        |s| saw(format!("c: {:?}", s.anything)),
    )
    .await
    .unwrap();
    assert_eq!(out.seen, ["b: from a", "c: \"\""]);
}

#[tokio::test]
async fn untracked_value_is_kept_across_steps() {
    let out = chain(
        |_| FlowUpdate::default().cache(Some(7)),
        |s| saw(format!("b: {:?}", s.cache)),
        |s| saw(format!("c: {:?}", s.cache)),
    )
    .await
    .unwrap();
    assert_eq!(out.seen, ["b: Some(7)", "c: Some(7)"]);
    assert_eq!(out.cache, Some(7));
}

#[tokio::test]
async fn untracked_guard_refuses_two_writes_and_unguarded_keeps_the_last() {
    let err = parallel(
        |_| FlowUpdate::default().cache(Some(1)),
        |_| FlowUpdate::default().cache(Some(2)),
    )
    .await
    .unwrap_err();
    assert_eq!(err.field(), Some("cache"));
    let out = parallel(
        |_| FlowUpdate::default().loose_cache(Some(1)),
        |_| FlowUpdate::default().loose_cache(Some(2)),
    )
    .await
    .unwrap();
    assert_eq!(out.loose_cache, Some(2));
}

#[tokio::test]
async fn after_finish_takes_several_writes_and_the_last_wins() {
    let out = parallel(
        |_| FlowUpdate::default().summary("x".into()),
        |_| FlowUpdate::default().summary("y".into()),
    )
    .await
    .unwrap();
    assert_eq!(out.summary, "y");
}

#[tokio::test]
async fn explicit_last_value_refuses_two_writes_naming_the_field() {
    let err = parallel(
        |_| FlowUpdate::default().status("x".into()),
        |_| FlowUpdate::default().status("y".into()),
    )
    .await
    .unwrap_err();
    assert_eq!(err.field(), Some("status"));
    assert_eq!(
        err.to_string(),
        "field `status` at step 1: can receive only one value per step, got 2; give the field a reducer to take several (written by nodes `x` and `y`)"
    );
}

#[tokio::test]
async fn a_node_subscribed_to_a_field_runs_when_it_changes() {
    // A Pregel graph: `count` runs each time `events` changes, through the field index const.
    let runs = Arc::new(Mutex::new(0));
    let counter = runs.clone();
    let mut g = GraphBuilder::<Flow>::pregel();
    let node = g.add_node("count", move |s: &Flow| {
        *counter.lock().unwrap() += 1;
        saw(format!("count: {:?}", s.events))
    });
    g.subscribe(&node, Flow::__WEIR_FIELD_events);
    g.add_edge("count", END);
    let out = g
        .compile()
        .unwrap()
        .invoke(FlowUpdate::default().events(vec!["e".into()]), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(*runs.lock().unwrap(), 1);
    assert_eq!(out.seen, ["count: [\"e\"]"]);
}
