//! G01, G04, G06, G07, G08, G17, G34 in macro form.

use crate::common::Log;
use std::time::Duration;
use weir::prelude::*;

fn sorted_concat(v: &mut Vec<String>, more: Vec<String>) {
    v.extend(more);
    v.sort();
}

fn concat(v: &mut String, more: String) {
    v.push_str(&more);
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// A node that records its step and name in `log`, then runs `f`.
fn logged<S, U>(
    log: &Log,
    f: impl Fn(&S) -> U + Send + Sync + 'static,
) -> impl Fn(&S, &Context) -> U + Send + Sync + 'static {
    let log = log.clone();
    move |state: &S, c: &Context| {
        log.push(c.step(), c.node());
        f(state)
    }
}

#[derive(State, Clone, Debug, Default)]
struct Docs {
    query: String,
    answer: String,
    #[reducer(with = sorted_concat)]
    docs: Vec<String>,
}

fn docs(d: &[&str]) -> DocsUpdate {
    DocsUpdate::default().docs(s(d))
}

fn rewrite_query(s: &Docs) -> DocsUpdate {
    DocsUpdate::default().query(format!("query: {}", s.query))
}
fn analyzer_one(s: &Docs) -> DocsUpdate {
    DocsUpdate::default().query(format!("analyzed: {}", s.query))
}
fn retriever_one(_: &Docs) -> DocsUpdate {
    docs(&["doc1", "doc2"])
}
fn qa(s: &Docs) -> DocsUpdate {
    DocsUpdate::default().answer(s.docs.join(","))
}

// G01: a fan-out with a waiting edge: qa runs once, at step 4, after both retrievers.
#[tokio::test]
async fn g01_fan_in_waiting_edge() {
    let log = Log::default();
    let l = log.clone();
    let app = graph! {
        state: Docs,
        nodes: [
            rewrite_query = (logged(&log, rewrite_query)),
            analyzer_one = (logged(&log, analyzer_one)),
            retriever_one = (logged(&log, retriever_one)),
            retriever_two = (move |_: &Docs, c: &Context| {
                let l = l.clone();
                let (step, node) = (c.step(), c.node().to_owned());
                async move {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    l.push(step, node);
                    docs(&["doc3", "doc4"])
                }
            }),
            qa = (logged(&log, qa)),
        ],
        START -> rewrite_query -> [analyzer_one, retriever_two];
        analyzer_one -> retriever_one;
        [retriever_one, retriever_two] -> qa;
        qa -> END;
    }
    .compile()
    .unwrap();
    let out = app
        .invoke(
            DocsUpdate::default().query("what is weather in sf".into()),
            &RunConfig::default(),
        )
        .await
        .unwrap();
    assert_eq!(out.query, "analyzed: query: what is weather in sf");
    assert_eq!(out.docs, ["doc1", "doc2", "doc3", "doc4"]);
    assert_eq!(out.answer, "doc1,doc2,doc3,doc4");
    assert_eq!(
        log.by_step(),
        [
            (1, s(&["rewrite_query"])),
            (2, s(&["analyzer_one", "retriever_two"])),
            (3, s(&["retriever_one"])),
            (4, s(&["qa"])),
        ]
    );
}

#[derive(State, Clone, Debug, Default)]
struct Key {
    #[reducer(with = concat)]
    my_key: String,
}

fn nothing(_: &Key) {}
fn more(_: &Key) -> KeyUpdate {
    KeyUpdate::default().my_key("_more".into())
}

// G04: a join whose sources run in different steps: up at step 1, side at step 2.
#[tokio::test]
async fn g04_join_edge_across_supersteps() {
    let log = Log::default();
    let app = graph! {
        state: Key,
        nodes: [
            up = (logged(&log, nothing)),
            side = (logged(&log, nothing)),
            down = (logged(&log, nothing)),
            other = (logged(&log, more)),
        ],
        START -> up -> [side, other];
        [up, side] -> down;
    }
    .compile()
    .unwrap();
    let out = app
        .invoke(KeyUpdate::default().my_key("my_value".into()), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.my_key, "my_value_more");
    assert_eq!(
        log.by_step(),
        [(1, s(&["up"])), (2, s(&["other", "side"])), (3, s(&["down"]))]
    );
}

#[derive(State, Clone, Debug, Default)]
struct Weather {
    locations: Vec<String>,
    #[reducer(append)]
    results: Vec<String>,
}

fn each_location(s: &Weather) -> Vec<String> {
    s.locations.clone()
}

async fn get_weather(location: &String) -> WeatherUpdate {
    tokio::time::sleep(Duration::from_millis(if location == "sf" { 5 } else { 0 })).await;
    let w = if location == "sf" { "cloudy" } else { "sunny" };
    WeatherUpdate::default().results(vec![format!("It's {w} in {location}")])
}

// G06: a conditional entry point that Sends one task per location; results keep input order.
#[tokio::test]
async fn g06_send_map_reduce_from_a_conditional_entry() {
    let app = graph! {
        state: Weather,
        START -> each_location ?> get_weather;
    }
    .compile()
    .unwrap();
    let out = app
        .invoke(
            WeatherUpdate::default().locations(s(&["sf", "nyc"])),
            &RunConfig::default(),
        )
        .await
        .unwrap();
    assert_eq!(out.locations, ["sf", "nyc"]);
    assert_eq!(out.results, ["It's cloudy in sf", "It's sunny in nyc"]);
}

#[derive(State, Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Seq {
    #[reducer(append)]
    items: Vec<String>,
}

fn items(x: &str) -> SeqUpdate {
    SeqUpdate::default().items(vec![x.to_owned()])
}

fn one(_: &Seq) -> SeqUpdate {
    items("1")
}
fn two(_: &Seq) -> SeqUpdate {
    items("2")
}
fn three(_: &Seq) -> SeqUpdate {
    items("3")
}
fn twice(s: &Seq) -> Vec<Seq> {
    vec![s.clone(), s.clone()]
}

enum Next {
    Three,
}

fn to_three(_: &Seq) -> Next {
    Next::Three
}

// G07: a conditional edge after a node that ran twice from Sends: 3 runs once.
#[tokio::test]
async fn g07_conditional_edge_after_send() {
    let app = graph! {
        state: Seq,
        START -> one;
        one -> twice ?> two;
        two -> to_three ? { Next::Three => three };
    }
    .compile()
    .unwrap();
    let out = app.invoke(items("0"), &RunConfig::default()).await.unwrap();
    assert_eq!(out.items, ["0", "1", "2", "2", "3"]);
}

fn one_one(_: &Seq) -> SeqUpdate {
    items("1.1")
}
fn three_one(_: &Seq) -> SeqUpdate {
    items("3.1")
}
async fn two_of(arg: &i64) -> SeqUpdate {
    tokio::time::sleep(Duration::from_millis(4 - *arg as u64)).await;
    items(&format!("2|{arg}"))
}
fn send_1_2(_: &Seq) -> Vec<i64> {
    vec![1, 2]
}
fn send_3_4(_: &Seq) -> Vec<i64> {
    vec![3, 4]
}

// G08: pull tasks before push tasks, Sends in the order they were emitted. LangGraph's router on
// `1` returns `[Send(2, 1), Send(2, 2), "3.1"]`; here the Sends and the edge to `3.1` are two
// connections out of `one`, which trigger the same tasks.
#[tokio::test]
async fn g08_concurrent_emit_sends() {
    let app = graph! {
        state: Seq,
        nodes: [one, one_one, three_one, three, two = two_of],
        START -> [one, one_one];
        one -> send_1_2 ?> two;
        one -> three_one;
        one_one -> send_3_4 ?> two;
        two -> to_three ? { Next::Three => three };
    }
    .compile()
    .unwrap();
    let out = app.invoke(items("0"), &RunConfig::default()).await.unwrap();
    assert_eq!(out.items, ["0", "1", "1.1", "3.1", "2|1", "2|2", "2|3", "2|4", "3"]);
}

#[derive(State, Clone, Debug, Default)]
struct Messages {
    #[reducer(append)]
    messages: Vec<String>,
}

fn msg(x: &str) -> MessagesUpdate {
    MessagesUpdate::default().messages(vec![x.to_owned()])
}
fn overwrite(x: &str) -> MessagesUpdate {
    MessagesUpdate::default().overwrite_messages(vec![x.to_owned()])
}
fn msg_a(_: &Messages) -> MessagesUpdate {
    msg("a")
}
fn overwrite_b(_: &Messages) -> MessagesUpdate {
    overwrite("b")
}
fn msg_c(_: &Messages) -> MessagesUpdate {
    msg("c")
}
fn overwrite_c(_: &Messages) -> MessagesUpdate {
    overwrite("c")
}
fn msg_d(_: &Messages) -> MessagesUpdate {
    msg("d")
}

// G17: an overwrite bypasses the reducer; a sibling's write in the same step after it is
// discarded; two overwrites in one step fail.
#[tokio::test]
async fn g17_overwrite_bypasses_the_reducer() {
    let input = || msg("START");
    let app = graph! {
        state: Messages,
        nodes: [a = msg_a, b = overwrite_b],
        START -> a -> b;
    }
    .compile()
    .unwrap();
    let out = app.invoke(input(), &RunConfig::default()).await.unwrap();
    assert_eq!(out.messages, ["b"]);

    let appends = graph! {
        state: Messages,
        nodes: [a = msg_a, b = overwrite_b, c = msg_c, d = msg_d],
        START -> a -> [b, c];
        [b, c] -> d;
    }
    .compile()
    .unwrap();
    let out = appends.invoke(input(), &RunConfig::default()).await.unwrap();
    assert_eq!(out.messages, ["b", "d"]);

    let overwrites = graph! {
        state: Messages,
        nodes: [a = msg_a, b = overwrite_b, c = overwrite_c, d = msg_d],
        START -> a -> [b, c];
        [b, c] -> d;
    }
    .compile()
    .unwrap();
    let err = overwrites.invoke(input(), &RunConfig::default()).await.unwrap_err();
    assert!(err.is_invalid_update());
    assert_eq!(
        err.to_string(),
        "field `messages` at step 2: can receive only one overwrite per step (written by nodes `b` and `c`)"
    );
}

fn item_a(_: &Seq) -> SeqUpdate {
    items("A")
}
fn item_b(_: &Seq) -> SeqUpdate {
    items("B")
}
fn item_r(_: &Seq) -> SeqUpdate {
    items("r")
}
fn item_x(_: &Seq) -> SeqUpdate {
    items("x")
}
fn item_y(_: &Seq) -> SeqUpdate {
    items("y")
}

enum Go {
    X,
    Y,
}

fn go_both(_: &Seq) -> Vec<Go> {
    vec![Go::Y, Go::X]
}

// G34: two START edges joined into END; a router choosing several nodes fans out, and their
// writes apply in node-name order, not in the order the router listed them.
#[tokio::test]
async fn g34_conditional_edge_to_multiple_nodes_and_join_to_end() {
    let app = graph! {
        state: Seq,
        nodes: [A = item_a, B = item_b],
        START -> [A, B];
        [A, B] -> END;
    }
    .compile()
    .unwrap();
    let out = app.invoke(SeqUpdate::default(), &RunConfig::default()).await.unwrap();
    assert_eq!(out.items, ["A", "B"]);

    // LangGraph's path_map {"go_x": "x", "go_y": "y"}: an unknown key (LangGraph's KeyError) is a
    // compile error here (see tests/ui/graph-route-not-exhaustive.rs).
    let app = graph! {
        state: Seq,
        nodes: [r = item_r, x = item_x, y = item_y],
        START -> r;
        r -> go_both ? [Go::X => x, Go::Y => y];
    }
    .compile()
    .unwrap();
    let out = app.invoke(SeqUpdate::default(), &RunConfig::default()).await.unwrap();
    assert_eq!(out.items, ["r", "x", "y"]);
}

#[derive(State, Clone, Debug, Default)]
struct Count {
    #[reducer(add)]
    n: i64,
}

fn inc(_: &Count) -> CountUpdate {
    CountUpdate::default().n(1)
}

enum Again {
    Yes,
    No,
}

/// Loops forever: `n` only grows.
fn always(s: &Count) -> Again {
    if s.n >= 0 {
        Again::Yes
    } else {
        Again::No
    }
}

// G10: a self-loop runs exactly `limit` times; a chain of three needs a limit of 4. (The loop is a
// route that could end, as `graph!` refuses a node with no way to END.)
#[tokio::test]
async fn g10_recursion_limit_counting() {
    let app = graph! {
        state: Count,
        nodes: [a = inc],
        START -> a;
        a -> always ? { Again::Yes => a, Again::No => END };
    }
    .compile()
    .unwrap();
    for limit in [1, 3, 5] {
        let err = app
            .invoke(Count::default(), &RunConfig::default().recursion_limit(limit))
            .await
            .unwrap_err();
        assert!(err.is_recursion_limit());
    }
    let chain = graph! {
        state: Count,
        nodes: [x = inc, y = inc, z = inc],
        START -> x -> y -> z;
    }
    .compile()
    .unwrap();
    assert!(chain
        .invoke(Count::default(), &RunConfig::default().recursion_limit(3))
        .await
        .unwrap_err()
        .is_recursion_limit());
    assert_eq!(
        chain
            .invoke(Count::default(), &RunConfig::default().recursion_limit(4))
            .await
            .unwrap()
            .n,
        3
    );
}

#[derive(State, Clone, Debug, Default)]
struct Overall {
    #[reducer(add)]
    foo: i64,
    bar: String,
    baz: String,
}

fn node_1(_: &Overall) -> OverallUpdate {
    OverallUpdate::default().foo(1).baz("baz".into())
}
fn node_2(_: &Overall) -> OverallUpdate {
    OverallUpdate::default().foo(1).bar("bar".into())
}
fn node_3(_: &Overall) -> OverallUpdate {
    OverallUpdate::default().foo(1)
}

enum ToThree {
    Three,
}

static ROUTER_SAW: std::sync::Mutex<Vec<(i64, String)>> = std::sync::Mutex::new(Vec::new());

fn router(s: &Overall) -> ToThree {
    ROUTER_SAW.lock().unwrap().push((s.foo, s.bar.clone()));
    ToThree::Three
}

// G25: the router reads the state with its node's own writes applied (`foo == 2`, `bar`).
#[tokio::test]
async fn g25_router_reads_its_own_writes() {
    let app = graph! {
        state: Overall,
        START -> node_1 -> node_2;
        node_2 -> router ? { ToThree::Three => node_3 };
    }
    .compile()
    .unwrap();
    let out = app
        .invoke(OverallUpdate::default().foo(0), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!((out.foo, out.bar.as_str()), (3, "bar"));
    assert_eq!(*ROUTER_SAW.lock().unwrap(), [(2, "bar".to_string())]);
}

// P01–P04 are low-level Pregel graphs (nodes subscribe to fields, there is no START): that is the
// builder's `GraphBuilder::pregel()` (tests/conformance/pregel.rs); `graph!` declares state graphs.
