//! G01, G04, G06, G07, G08, G10, G17, G25, G34: state graphs.

use crate::common::{add, append, Log};
use crate::pregel::{items, SeqState, SeqStateUpdate};
use std::time::Duration;
use weir::channel::{BinaryOperatorAggregate, LastValue, ReducerWrite};
use weir::{ChannelKind, Context, Goto, GraphBuilder, NodeRef, RunConfig, END, START};

type Append<T> = BinaryOperatorAggregate<Vec<T>, Vec<T>>;
type Concat = BinaryOperatorAggregate<String, String>;
type Add = BinaryOperatorAggregate<i64, i64>;

fn sorted_concat(v: &mut Vec<String>, more: Vec<String>) {
    v.extend(more);
    v.sort();
}

fn concat(v: &mut String, more: String) {
    v.push_str(&more);
}

hand_state! {
    struct Docs, DocsUpdate, DocsChannels {
        query: String => LastValue = LastValue::new(), ChannelKind::LastValue, |v| v;
        answer: String => LastValue = LastValue::new(), ChannelKind::LastValue, |v| v;
        docs: Vec<String> => Append<String> = Append::new(sorted_concat), ChannelKind::Reducer, ReducerWrite::Reduce;
    }
}

fn docs(d: &[&str]) -> DocsUpdate {
    DocsUpdate::default().docs(ReducerWrite::Reduce(d.iter().map(|s| s.to_string()).collect()))
}

// G01: a fan-out with a waiting edge: qa runs once, at step 4, after both retrievers.
#[tokio::test]
async fn g01_fan_in_waiting_edge() {
    let log = Log::default();
    let mut g = GraphBuilder::<Docs>::new();
    let l = log.clone();
    g.add_node("rewrite_query", move |s: &Docs, c: &Context| {
        l.push(c.step(), c.node());
        DocsUpdate::default().query(format!("query: {}", s.query))
    });
    let l = log.clone();
    g.add_node("analyzer_one", move |s: &Docs, c: &Context| {
        l.push(c.step(), c.node());
        DocsUpdate::default().query(format!("analyzed: {}", s.query))
    });
    let l = log.clone();
    g.add_node("retriever_one", move |_: &Docs, c: &Context| {
        l.push(c.step(), c.node());
        docs(&["doc1", "doc2"])
    });
    let l = log.clone();
    g.add_node("retriever_two", move |_: &Docs, c: &Context| {
        let l = l.clone();
        let (step, node) = (c.step(), c.node().to_owned());
        async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            l.push(step, node);
            docs(&["doc3", "doc4"])
        }
    });
    let l = log.clone();
    g.add_node("qa", move |s: &Docs, c: &Context| {
        l.push(c.step(), c.node());
        DocsUpdate::default().answer(s.docs.join(","))
    });
    g.add_edge(START, "rewrite_query")
        .add_edge("rewrite_query", "analyzer_one")
        .add_edge("analyzer_one", "retriever_one")
        .add_edge("rewrite_query", "retriever_two")
        .add_join(["retriever_one", "retriever_two"], "qa")
        .add_edge("qa", END);
    let out = g
        .compile()
        .unwrap()
        .invoke(
            DocsUpdate::default().query("what is weather in sf".into()),
            &RunConfig::default(),
        )
        .await
        .unwrap();
    assert_eq!(out.query, "analyzed: query: what is weather in sf");
    assert_eq!(out.docs, ["doc1", "doc2", "doc3", "doc4"]);
    assert_eq!(out.answer, "doc1,doc2,doc3,doc4");
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
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

hand_state! {
    struct Key, KeyUpdate, KeyChannels {
        my_key: String => Concat = Concat::new(concat), ChannelKind::Reducer, ReducerWrite::Reduce;
    }
}

// G04: a join whose sources run in different steps: up at step 1, side at step 2.
#[tokio::test]
async fn g04_join_edge_across_supersteps() {
    let log = Log::default();
    let mut g = GraphBuilder::<Key>::new();
    for name in ["up", "side", "down"] {
        let l = log.clone();
        g.add_node(name, move |_: &Key, c: &Context| l.push(c.step(), c.node()));
    }
    let l = log.clone();
    g.add_node("other", move |_: &Key, c: &Context| {
        l.push(c.step(), c.node());
        KeyUpdate::default().my_key(ReducerWrite::Reduce("_more".into()))
    });
    g.add_edge(START, "up")
        .add_edge("up", "side")
        .add_edge("up", "other")
        .add_join(["up", "side"], "down");
    let out = g
        .compile()
        .unwrap()
        .invoke(
            KeyUpdate::default().my_key(ReducerWrite::Reduce("my_value".into())),
            &RunConfig::default(),
        )
        .await
        .unwrap();
    assert_eq!(out.my_key, "my_value_more");
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        log.by_step(),
        [(1, s(&["up"])), (2, s(&["other", "side"])), (3, s(&["down"]))]
    );
}

hand_state! {
    struct Weather, WeatherUpdate, WeatherChannels {
        locations: Vec<String> => LastValue = LastValue::new(), ChannelKind::LastValue, |v| v;
        results: Vec<String> => Append<String> = Append::new(append), ChannelKind::Reducer, ReducerWrite::Reduce;
    }
}

// G06: a conditional entry point that Sends one task per location; results keep input order.
#[tokio::test]
async fn g06_send_map_reduce_from_a_conditional_entry() {
    let mut g = GraphBuilder::<Weather>::new();
    let get_weather = g.add_send_node("get_weather", |location: &String| {
        let location = location.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(if location == "sf" { 5 } else { 0 })).await;
            let w = if location == "sf" { "cloudy" } else { "sunny" };
            WeatherUpdate::default().results(ReducerWrite::Reduce(vec![format!("It's {w} in {location}")]))
        }
    });
    let w = get_weather.clone();
    g.add_router(
        START,
        move |s: &Weather| s.locations.iter().map(|l| w.send(l.clone())).collect::<Vec<_>>(),
        [&get_weather],
    );
    let out = g
        .compile()
        .unwrap()
        .invoke(
            WeatherUpdate::default().locations(vec!["sf".into(), "nyc".into()]),
            &RunConfig::default(),
        )
        .await
        .unwrap();
    assert_eq!(out.locations, ["sf", "nyc"]);
    assert_eq!(out.results, ["It's cloudy in sf", "It's sunny in nyc"]);
}

// G07: a conditional edge after a node that ran twice from Sends: 3 runs once.
#[tokio::test]
async fn g07_conditional_edge_after_send() {
    let mut g = GraphBuilder::<SeqState>::new();
    g.add_node("1", |_: &SeqState| items("1"));
    let two = g.add_node("2", |_: &SeqState| items("2"));
    let three = g.add_node("3", |_: &SeqState| items("3"));
    g.add_edge(START, "1");
    let t = two.clone();
    g.add_router(
        "1",
        move |s: &SeqState| vec![t.send(s.clone()), t.send(s.clone())],
        [&two],
    );
    let three_id = three.id();
    g.add_router("2", move |_: &SeqState| three_id, [&three]);
    let out = g
        .compile()
        .unwrap()
        .invoke(items("0"), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.items, ["0", "1", "2", "2", "3"]);
}

// G08: pull tasks before push tasks, Sends in the order they were emitted.
#[tokio::test]
async fn g08_concurrent_emit_sends() {
    let mut g = GraphBuilder::<SeqState>::new();
    g.add_node("1", |_: &SeqState| items("1"));
    g.add_node("1.1", |_: &SeqState| items("1.1"));
    let three_one = g.add_node("3.1", |_: &SeqState| items("3.1"));
    let three = g.add_node("3", |_: &SeqState| items("3"));
    let two = g.add_send_node("2", |arg: &i64| {
        let arg = *arg;
        async move {
            tokio::time::sleep(Duration::from_millis(4 - arg as u64)).await;
            items(&format!("2|{arg}"))
        }
    });
    g.add_edge(START, "1").add_edge(START, "1.1");
    let (t, t31) = (two.clone(), three_one.id());
    g.add_router(
        "1",
        move |_: &SeqState| vec![t.send(1), t.send(2), Goto::Node(t31)],
        [NodeRef::from(&two), NodeRef::from(&three_one)],
    );
    let t = two.clone();
    g.add_router("1.1", move |_: &SeqState| vec![t.send(3), t.send(4)], [&two]);
    let three_id = three.id();
    g.add_router("2", move |_: &SeqState| three_id, [&three]);
    let out = g
        .compile()
        .unwrap()
        .invoke(items("0"), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.items, ["0", "1", "1.1", "3.1", "2|1", "2|2", "2|3", "2|4", "3"]);
}

hand_state! {
    struct Count, CountUpdate, CountChannels {
        n: i64 => Add = Add::new(add), ChannelKind::Reducer, ReducerWrite::Reduce;
    }
}

fn inc() -> CountUpdate {
    CountUpdate::default().n(ReducerWrite::Reduce(1))
}

// G10: how the recursion limit counts steps (the resume cases are in tests/managed_values.rs).
#[tokio::test]
async fn g10_recursion_limit_counting() {
    for limit in [1, 3, 5] {
        let calls = Log::default();
        let mut g = GraphBuilder::<Count>::new();
        let c = calls.clone();
        let a = g
            .add_node("a", move |_: &Count, ctx: &Context| {
                c.push(ctx.step(), "a");
                inc()
            })
            .id();
        // A self-loop that never ends. weir's graph checks refuse a node with no way to END, so
        // the loop is a route that could end but never does (LangGraph accepts a bare `a -> a`).
        g.add_edge(START, "a");
        g.add_router("a", move |_: &Count| a, [NodeRef::from(a), END]);
        let err = g
            .compile()
            .unwrap()
            .invoke(Count::default(), &RunConfig::default().recursion_limit(limit))
            .await;
        assert!(err.unwrap_err().is_recursion_limit());
        assert_eq!(calls.count("a"), limit, "a self-loop runs exactly `limit` times");
    }
    let mut g = GraphBuilder::<Count>::new();
    g.add_node("x", |_: &Count| inc());
    g.add_node("y", |_: &Count| inc());
    g.add_node("z", |_: &Count| inc());
    g.add_edge(START, "x").add_edge("x", "y").add_edge("y", "z");
    let app = g.compile().unwrap();
    let err = app
        .invoke(Count::default(), &RunConfig::default().recursion_limit(3))
        .await
        .unwrap_err();
    assert!(err.is_recursion_limit());
    let out = app
        .invoke(Count::default(), &RunConfig::default().recursion_limit(4))
        .await
        .unwrap();
    assert_eq!(out.n, 3);
    let err = app
        .invoke(Count::default(), &RunConfig::default().recursion_limit(0))
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "recursion limit must be at least 1");
}

hand_state! {
    struct Messages, MessagesUpdate, MessagesChannels {
        messages: Vec<String> => Append<String> = Append::new(append), ChannelKind::Reducer, ReducerWrite::Reduce;
    }
}

fn msg(x: &str) -> MessagesUpdate {
    MessagesUpdate::default().messages(ReducerWrite::Reduce(vec![x.to_owned()]))
}

fn overwrite(x: &str) -> MessagesUpdate {
    MessagesUpdate::default().messages(ReducerWrite::Overwrite(vec![x.to_owned()]))
}

// G17: an overwrite bypasses the reducer; a sibling's write in the same step after it is
// discarded; two overwrites in one step fail.
#[tokio::test]
async fn g17_overwrite_bypasses_the_reducer() {
    let input = || msg("START");
    let mut g = GraphBuilder::<Messages>::new();
    g.add_node("a", |_: &Messages| msg("a"));
    g.add_node("b", |_: &Messages| overwrite("b"));
    g.add_edge(START, "a").add_edge("a", "b");
    let out = g
        .compile()
        .unwrap()
        .invoke(input(), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.messages, ["b"]);

    for c_overwrites in [false, true] {
        let mut g = GraphBuilder::<Messages>::new();
        g.add_node("a", |_: &Messages| msg("a"));
        g.add_node("b", |_: &Messages| overwrite("b"));
        if c_overwrites {
            g.add_node("c", |_: &Messages| overwrite("c"));
        } else {
            g.add_node("c", |_: &Messages| msg("c"));
        }
        g.add_node("d", |_: &Messages| msg("d"));
        g.add_edge(START, "a")
            .add_edge("a", "b")
            .add_edge("a", "c")
            .add_join(["b", "c"], "d");
        let result = g.compile().unwrap().invoke(input(), &RunConfig::default()).await;
        if c_overwrites {
            let err = result.unwrap_err();
            assert!(err.is_invalid_update());
            assert_eq!(
                err.to_string(),
                "field `messages` at step 2: can receive only one overwrite per step (written by nodes `b` and `c`)"
            );
        } else {
            assert_eq!(result.unwrap().messages, ["b", "d"]);
        }
    }
}

hand_state! {
    struct Overall, OverallUpdate, OverallChannels {
        foo: i64 => Add = Add::new(add), ChannelKind::Reducer, ReducerWrite::Reduce;
        bar: String => LastValue = LastValue::new(), ChannelKind::LastValue, |v| v;
        baz: String => LastValue = LastValue::new(), ChannelKind::LastValue, |v| v;
    }
}

// G25: a router reads the state with its own node's writes applied. LangGraph restricts the
// router's view to its input schema (`{foo: 2, bar: "bar"}`, no private `baz`); weir's router reads
// the whole typed state, so it also sees `baz`. The untyped-branch case (a node's extra output
// keys merged into the router's input) cannot be written with typed updates.
#[tokio::test]
async fn g25_router_reads_its_own_writes() {
    let seen = Log::default();
    let mut g = GraphBuilder::<Overall>::new();
    g.add_node("node_1", |_: &Overall| {
        OverallUpdate::default().foo(ReducerWrite::Reduce(1)).baz("baz".into())
    });
    let node_2 = g.add_node("node_2", |_: &Overall| {
        OverallUpdate::default().foo(ReducerWrite::Reduce(1)).bar("bar".into())
    });
    let node_3 = g.add_node("node_3", |_: &Overall| {
        OverallUpdate::default().foo(ReducerWrite::Reduce(1))
    });
    g.add_edge(START, "node_1")
        .add_edge("node_1", &node_2)
        .add_edge(&node_3, END);
    let (s, n3) = (seen.clone(), node_3.id());
    g.add_router(
        &node_2,
        move |st: &Overall| {
            s.push(0, format!("foo={} bar={}", st.foo, st.bar));
            n3
        },
        [&node_3],
    );
    let out = g
        .compile()
        .unwrap()
        .invoke(
            OverallUpdate::default().foo(ReducerWrite::Reduce(0)),
            &RunConfig::default(),
        )
        .await
        .unwrap();
    assert_eq!((out.foo, out.bar.as_str()), (3, "bar"));
    assert_eq!(seen.by_step(), [(0, vec!["foo=2 bar=bar".to_string()])]);
}

// G25, with siblings: in a step of several tasks, each router sees its own node's writes and
// nobody else's.
#[tokio::test]
async fn routers_in_a_parallel_step_see_only_their_own_writes() {
    let seen = Log::default();
    let mut g = GraphBuilder::<Overall>::new();
    let a = g.add_node("a", |_: &Overall| {
        OverallUpdate::default().foo(ReducerWrite::Reduce(1)).bar("a".into())
    });
    let b = g.add_node("b", |_: &Overall| {
        OverallUpdate::default().foo(ReducerWrite::Reduce(10))
    });
    g.add_edge(START, &a).add_edge(START, &b);
    for node in [&a, &b] {
        let s = seen.clone();
        g.add_router(
            node,
            move |st: &Overall| {
                s.push(0, format!("foo={} bar={}", st.foo, st.bar));
                Goto::End
            },
            [END],
        );
    }
    let out = g
        .compile()
        .unwrap()
        .invoke(Overall::default(), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.foo, 11);
    assert_eq!(
        seen.by_step(),
        [(0, vec!["foo=1 bar=a".to_string(), "foo=10 bar=".to_string()])]
    );
}

// G34: two START edges joined into END; a router choosing several nodes fans out, and their
// writes apply in node-name order, not in the order the router listed them.
#[tokio::test]
async fn g34_conditional_edge_to_multiple_nodes_and_join_to_end() {
    let mut g = GraphBuilder::<SeqState>::new();
    g.add_node("A", |_: &SeqState| items("A"));
    g.add_node("B", |_: &SeqState| items("B"));
    g.add_edge(START, "A").add_edge(START, "B").add_join(["A", "B"], END);
    let out = g
        .compile()
        .unwrap()
        .invoke(SeqStateUpdate::default(), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.items, ["A", "B"]);

    let mut g = GraphBuilder::<SeqState>::new();
    g.add_node("r", |_: &SeqState| items("r"));
    let x = g.add_node("x", |_: &SeqState| items("x"));
    let y = g.add_node("y", |_: &SeqState| items("y"));
    g.add_edge(START, "r");
    #[derive(PartialEq)]
    enum Go {
        X,
        Y,
    }
    let (xi, yi) = (x.id(), y.id());
    // LangGraph's path_map {"go_x": "x", "go_y": "y"}: a typed route maps every variant, so an
    // unknown key (LangGraph's KeyError) cannot be written here; `graph!` checks it at compile time.
    g.add_router(
        "r",
        move |_: &SeqState| {
            [Go::Y, Go::X]
                .into_iter()
                .map(|k| if k == Go::X { xi } else { yi })
                .collect::<Vec<_>>()
        },
        [&x, &y],
    );
    let out = g
        .compile()
        .unwrap()
        .invoke(SeqStateUpdate::default(), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.items, ["r", "x", "y"]);
}
