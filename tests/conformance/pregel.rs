//! P01–P04: low-level Pregel graphs (nodes subscribe to fields, no START).

use crate::common::append;
use weir::channel::{BinaryOperatorAggregate, LastValue, ReducerWrite, Topic};
use weir::{ChannelKind, GraphBuilder, RunConfig, START};

type Append<T> = BinaryOperatorAggregate<Vec<T>, Vec<T>>;

hand_state! {
    struct Io, IoUpdate, IoChannels {
        input: i64 => LastValue = LastValue::new(), ChannelKind::LastValue, |v| v;
        inbox: i64 => LastValue = LastValue::new(), ChannelKind::LastValue, |v| v;
        output: i64 => LastValue = LastValue::new(), ChannelKind::LastValue, |v| v;
    }
}

hand_state! {
    struct Topics, TopicsUpdate, TopicsChannels {
        input: i64 => LastValue = LastValue::new(), ChannelKind::LastValue, |v| v;
        inbox: Vec<i64> => Topic = Topic::new(), ChannelKind::Topic { accumulate: false }, |v| v;
        output: Vec<i64> => Topic = Topic::new(), ChannelKind::Topic { accumulate: false }, |v| v;
        sorted: Vec<i64> => LastValue = LastValue::new(), ChannelKind::LastValue, |v| v;
    }
}

const INPUT: usize = 0;
const INBOX: usize = 1;

// P01: one and two both subscribe to `input` and write the last-value `output`.
#[tokio::test]
async fn p01_two_writers_of_a_last_value_fail() {
    let mut g = GraphBuilder::<Io>::pregel();
    let one = g.add_node("one", |s: &Io| IoUpdate::default().output(s.input + 1));
    let two = g.add_node("two", |s: &Io| IoUpdate::default().output(s.input + 1));
    g.subscribe(&one, INPUT).subscribe(&two, INPUT);
    let err = g
        .compile()
        .unwrap()
        .invoke(IoUpdate::default().input(2), &RunConfig::default())
        .await
        .unwrap_err();
    assert!(err.is_invalid_update());
    assert_eq!(err.field(), Some("output"));
}

hand_state! {
    struct Hello, HelloUpdate, HelloChannels {
        hello: String => LastValue = LastValue::new(), ChannelKind::LastValue, |v| v;
    }
}

// P01, StateGraph form: entry routes to one and two, both return {hello: "world"}; the message
// names the key.
#[tokio::test]
async fn p01_state_graph_message_names_the_key() {
    let mut g = GraphBuilder::<Hello>::new();
    let one = g.add_node("one", |_: &Hello| HelloUpdate::default().hello("world".into()));
    let two = g.add_node("two", |_: &Hello| HelloUpdate::default().hello("world".into()));
    let ids = [one.id(), two.id()];
    g.add_router(START, move |_: &Hello| ids.to_vec(), [&one, &two]);
    let err = g
        .compile()
        .unwrap()
        .invoke(HelloUpdate::default().hello("x".into()), &RunConfig::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("field `hello`"), "{err}");
}

// P02: the same two writers on a topic: `2 -> [3, 3]`.
#[tokio::test]
async fn p02_two_writers_of_a_topic() {
    let mut g = GraphBuilder::<Topics>::pregel();
    let one = g.add_node("one", |s: &Topics| TopicsUpdate::default().output(vec![s.input + 1]));
    let two = g.add_node("two", |s: &Topics| TopicsUpdate::default().output(vec![s.input + 1]));
    g.subscribe(&one, INPUT).subscribe(&two, INPUT);
    let out = g
        .compile()
        .unwrap()
        .invoke(TopicsUpdate::default().input(2), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.output, [3, 3]);
}

// P03: one and three write `input + 1` to the inbox topic; four reads it: `2 -> [13, 13]`, 20 runs.
#[tokio::test]
async fn p03_topic_join_then_clear() {
    let mut g = GraphBuilder::<Topics>::pregel();
    let one = g.add_node("one", |s: &Topics| TopicsUpdate::default().inbox(vec![s.input + 1]));
    let three = g.add_node("three", |s: &Topics| TopicsUpdate::default().inbox(vec![s.input + 1]));
    let four = g.add_node("four", |s: &Topics| {
        let mut v: Vec<i64> = s.inbox.iter().map(|x| x + 10).collect();
        v.sort();
        TopicsUpdate::default().sorted(v)
    });
    g.subscribe(&one, INPUT)
        .subscribe(&three, INPUT)
        .subscribe(&four, INBOX);
    let app = g.compile().unwrap();
    for _ in 0..20 {
        let out = app
            .invoke(TopicsUpdate::default().input(2), &RunConfig::default())
            .await
            .unwrap();
        assert_eq!(out.sorted, [13, 13]);
        assert!(out.inbox.is_empty(), "the per-step topic is cleared after four read it");
    }
}

// P04: one: input -> inbox (+1); two: inbox -> output (+1). `2 -> 4`; limit 1 fails, 2 is enough.
#[tokio::test]
async fn p04_recursion_limit_of_a_pregel_chain() {
    let mut g = GraphBuilder::<Io>::pregel();
    let one = g.add_node("one", |s: &Io| IoUpdate::default().inbox(s.input + 1));
    let two = g.add_node("two", |s: &Io| IoUpdate::default().output(s.inbox + 1));
    g.subscribe(&one, INPUT).subscribe(&two, INBOX);
    let app = g.compile().unwrap();
    let out = app
        .invoke(IoUpdate::default().input(2), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.output, 4);
    let err = app
        .invoke(IoUpdate::default().input(2), &RunConfig::default().recursion_limit(1))
        .await
        .unwrap_err();
    assert!(err.is_recursion_limit());
    let out = app
        .invoke(IoUpdate::default().input(2), &RunConfig::default().recursion_limit(2))
        .await
        .unwrap();
    assert_eq!(out.output, 4);
}

// A pregel graph given no input at all has nothing to run.
#[tokio::test]
async fn pregel_empty_input_is_an_error() {
    let mut g = GraphBuilder::<Io>::pregel();
    let one = g.add_node("one", |s: &Io| IoUpdate::default().inbox(s.input + 1));
    g.subscribe(&one, INPUT);
    let err = g
        .compile()
        .unwrap()
        .invoke(IoUpdate::default(), &RunConfig::default())
        .await
        .unwrap_err();
    assert!(err.is_empty_input());
}

hand_state! {
    struct Seq, SeqUpdate, SeqChannels {
        items: Vec<String> => Append<String> = Append::new(append), ChannelKind::Reducer, ReducerWrite::Reduce;
    }
}

pub(crate) fn items(x: &str) -> SeqUpdate {
    SeqUpdate::default().items(ReducerWrite::Reduce(vec![x.to_owned()]))
}

pub(crate) use {Seq as SeqState, SeqUpdate as SeqStateUpdate};
