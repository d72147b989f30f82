//! The superstep loop on hand-built graphs over hand-written states.

#[macro_use]
mod common;

use common::{add, append, Log};
use std::time::Duration;
use weir::channel::{BinaryOperatorAggregate, EphemeralValue, LastValue, ReducerWrite, Topic};
use weir::{ChannelKind, Command, Context, DrainHandle, GraphBuilder, NodeHandle, RunConfig, END, START};

type Append = BinaryOperatorAggregate<Vec<String>, Vec<String>>;
type Add = BinaryOperatorAggregate<i64, i64>;

hand_state! {
    struct Flow, FlowUpdate, FlowChannels {
        value: String => LastValue = LastValue::new(), ChannelKind::LastValue, |v| v;
        log: Vec<String> => Append = Append::new(append), ChannelKind::Reducer, ReducerWrite::Reduce;
        count: i64 => Add = Add::new(add), ChannelKind::Reducer, ReducerWrite::Reduce;
        scratch: Option<String> => EphemeralValue = EphemeralValue::new(), ChannelKind::Ephemeral, |v| v;
        inbox: Vec<String> => Topic = Topic::new(), ChannelKind::Topic { accumulate: false }, |v| v;
    }
}

fn log(x: &str) -> FlowUpdate {
    FlowUpdate::default().log(ReducerWrite::Reduce(vec![x.to_owned()]))
}

/// `START -> plan`, whose router sends `worker` one task per payload `0..n`.
fn plan_sends(g: &mut GraphBuilder<Flow>, worker: &NodeHandle<Flow, u32>, n: u32) {
    g.add_node("plan", |_: &Flow| ());
    g.add_edge(START, "plan");
    let w = worker.clone();
    g.add_router(
        "plan",
        move |_: &Flow| (0..n).map(|i| w.send(i)).collect::<Vec<_>>(),
        [worker],
    );
}

fn cfg() -> RunConfig {
    RunConfig::default()
}

#[tokio::test]
async fn a_three_node_chain_runs_in_order() {
    let mut g = GraphBuilder::<Flow>::new();
    g.add_node("a", |s: &Flow| log(&format!("a:{}", s.value)));
    g.add_node("b", |s: &Flow| log(&format!("b:{}", s.log.len())));
    g.add_node("c", |_: &Flow| FlowUpdate::default().value("done".into()));
    g.add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", "c")
        .add_edge("c", END);
    let app = g.compile().unwrap();
    let out = app
        .invoke(FlowUpdate::default().value("in".into()), &cfg())
        .await
        .unwrap();
    assert_eq!(out.log, ["a:in", "b:1"]);
    assert_eq!(out.value, "done");
}

#[tokio::test]
async fn async_nodes_and_the_context_work() {
    async fn a(s: &Flow) -> FlowUpdate {
        tokio::time::sleep(Duration::from_millis(1)).await;
        log(&format!("a:{}", s.value))
    }
    async fn b(_: &Flow, ctx: &Context) -> FlowUpdate {
        log(&format!("{}@{}", ctx.node(), ctx.step()))
    }
    let mut g = GraphBuilder::<Flow>::new();
    g.add_node("a", a);
    g.add_node("b", b);
    g.add_edge(START, "a").add_edge("a", "b");
    let out = g
        .compile()
        .unwrap()
        .invoke(FlowUpdate::default().value("x".into()), &cfg())
        .await
        .unwrap();
    assert_eq!(
        out.log,
        ["a:x", "b@2"],
        "step 0 is the hidden start, a runs at 1, b at 2"
    );
}

#[tokio::test]
async fn fan_out_to_three_and_a_join_that_runs_once() {
    let runs = Log::default();
    let mut g = GraphBuilder::<Flow>::new();
    g.add_node("fan", |_: &Flow| log("fan"));
    for name in ["x", "y", "z"] {
        let runs = runs.clone();
        g.add_node(name, move |_: &Flow, ctx: &Context| {
            runs.push(ctx.step(), ctx.node());
            log(ctx.node())
        });
    }
    let r = runs.clone();
    g.add_node("join", move |s: &Flow, ctx: &Context| {
        r.push(ctx.step(), "join");
        log(&format!("join saw {}", s.log.join(",")))
    });
    g.add_edge(START, "fan");
    for name in ["x", "y", "z"] {
        g.add_edge("fan", name);
    }
    g.add_join(["x", "y", "z"], "join");
    let out = g.compile().unwrap().invoke(Flow::default(), &cfg()).await.unwrap();
    assert_eq!(out.log, ["fan", "x", "y", "z", "join saw fan,x,y,z"]);
    assert_eq!(runs.count("join"), 1);
    assert_eq!(
        runs.by_step(),
        [(2, vec!["x".into(), "y".into(), "z".into()]), (3, vec!["join".into()])]
    );
}

#[tokio::test]
async fn a_conditional_loop_stops_on_its_condition() {
    let mut g = GraphBuilder::<Flow>::new();
    let work = g.add_node("work", |_: &Flow| FlowUpdate::default().count(ReducerWrite::Reduce(1)));
    let work_id = work.id();
    g.add_edge(START, &work);
    g.add_router(
        &work,
        move |s: &Flow| {
            if s.count < 5 {
                weir::Goto::Node(work_id)
            } else {
                weir::Goto::End
            }
        },
        [weir::NodeRef::from(work_id), END],
    );
    let out = g.compile().unwrap().invoke(Flow::default(), &cfg()).await.unwrap();
    assert_eq!(out.count, 5);
}

#[tokio::test]
async fn two_parallel_writes_to_a_last_value_fail_naming_the_field_and_both_nodes() {
    let mut g = GraphBuilder::<Flow>::new();
    g.add_node("one", |_: &Flow| FlowUpdate::default().value("1".into()));
    g.add_node("two", |_: &Flow| FlowUpdate::default().value("2".into()));
    g.add_edge(START, "one").add_edge(START, "two");
    let err = g.compile().unwrap().invoke(Flow::default(), &cfg()).await.unwrap_err();
    assert!(err.is_invalid_update());
    assert_eq!(err.field(), Some("value"));
    assert_eq!(
        err.to_string(),
        "field `value` at step 1: can receive only one value per step, got 2; give the field a reducer to take several (written by nodes `one` and `two`)"
    );
}

#[tokio::test]
async fn append_order_is_task_order_whatever_order_tasks_finish_in() {
    use rand::Rng;
    let mut g = GraphBuilder::<Flow>::new();
    for name in ["d", "b", "a", "c", "e"] {
        g.add_node(name, move |_: &Flow| async move {
            let ms = rand::rng().random_range(0..4);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            log(name)
        });
        g.add_edge(START, name);
    }
    let app = g.compile().unwrap();
    for _ in 0..50 {
        let out = app.invoke(Flow::default(), &cfg()).await.unwrap();
        assert_eq!(
            out.log,
            ["a", "b", "c", "d", "e"],
            "node-name order, as LangGraph applies them"
        );
    }
}

#[tokio::test]
async fn an_ephemeral_value_is_gone_the_next_step() {
    let seen = Log::default();
    let mut g = GraphBuilder::<Flow>::new();
    g.add_node("write", |_: &Flow| FlowUpdate::default().scratch(Some("tmp".into())));
    let s1 = seen.clone();
    g.add_node("read", move |s: &Flow, c: &Context| {
        s1.push(c.step(), format!("{:?}", s.scratch));
    });
    let s2 = seen.clone();
    g.add_node("later", move |s: &Flow, c: &Context| {
        s2.push(c.step(), format!("{:?}", s.scratch));
    });
    g.add_edge(START, "write")
        .add_edge("write", "read")
        .add_edge("read", "later");
    let out = g.compile().unwrap().invoke(Flow::default(), &cfg()).await.unwrap();
    assert_eq!(
        seen.by_step(),
        [(2, vec!["Some(\"tmp\")".into()]), (3, vec!["None".into()])]
    );
    assert_eq!(out.scratch, None);
}

#[tokio::test]
async fn a_per_step_topic_clears() {
    let seen = Log::default();
    let mut g = GraphBuilder::<Flow>::new();
    g.add_node("a", |_: &Flow| FlowUpdate::default().inbox(vec!["m1".into()]));
    g.add_node("b", |_: &Flow| FlowUpdate::default().inbox(vec!["m2".into()]));
    let s1 = seen.clone();
    g.add_node("read", move |s: &Flow, c: &Context| {
        s1.push(c.step(), s.inbox.join(","))
    });
    let s2 = seen.clone();
    g.add_node("after", move |s: &Flow, c: &Context| {
        s2.push(c.step(), s.inbox.join(","))
    });
    g.add_edge(START, "a")
        .add_edge(START, "b")
        .add_join(["a", "b"], "read")
        .add_edge("read", "after");
    let out = g.compile().unwrap().invoke(Flow::default(), &cfg()).await.unwrap();
    assert_eq!(seen.by_step(), [(2, vec!["m1,m2".into()]), (3, vec![String::new()])]);
    assert!(out.inbox.is_empty());
}

#[tokio::test]
async fn the_recursion_limit_stops_an_endless_loop() {
    let mut g = GraphBuilder::<Flow>::new();
    let spin = g
        .add_node("spin", |_: &Flow| FlowUpdate::default().count(ReducerWrite::Reduce(1)))
        .id();
    g.add_edge(START, "spin");
    g.add_router("spin", move |_: &Flow| spin, [weir::NodeRef::from(spin), END]);
    let err = g
        .compile()
        .unwrap()
        .invoke(Flow::default(), &RunConfig::default().recursion_limit(10))
        .await
        .unwrap_err();
    assert!(err.is_recursion_limit());
    assert_eq!(
        err.to_string(),
        "recursion limit of 10 steps reached without hitting a stop condition; raise it with `RunConfig::recursion_limit`"
    );
}

#[tokio::test]
async fn drain_stops_between_steps() {
    let drain = DrainHandle::new();
    let runs = Log::default();
    let mut g = GraphBuilder::<Flow>::new();
    let (d, r) = (drain.clone(), runs.clone());
    g.add_node("first", move |_: &Flow, c: &Context| {
        r.push(c.step(), "first");
        d.request();
        log("first")
    });
    let r = runs.clone();
    g.add_node("second", move |_: &Flow, c: &Context| r.push(c.step(), "second"));
    g.add_edge(START, "first").add_edge("first", "second");
    let err = g
        .compile()
        .unwrap()
        .invoke(Flow::default(), &cfg().drain(drain))
        .await
        .unwrap_err();
    assert!(err.is_drained());
    assert_eq!(err.step(), Some(2));
    assert_eq!((runs.count("first"), runs.count("second")), (1, 0));
}

#[tokio::test]
async fn a_panicking_node_is_an_error_of_the_run() {
    for parallel in [false, true] {
        let mut g = GraphBuilder::<Flow>::new();
        g.add_node("boom", |_: &Flow| -> FlowUpdate { panic!("kaboom") });
        g.add_edge(START, "boom");
        if parallel {
            g.add_node("fine", |_: &Flow| log("fine"));
            g.add_edge(START, "fine");
        }
        let err = g.compile().unwrap().invoke(Flow::default(), &cfg()).await.unwrap_err();
        assert!(err.is_panic());
        assert_eq!(err.to_string(), "node `boom` panicked at step 1: kaboom");
    }
}

/// A step's tasks run together, whatever the runtime: 40 tasks of a `Send` that each wait for
/// all the others (a barrier) finish, on a single-threaded runtime and on two workers; their
/// writes apply in `Send` order however they were grouped; and a panic in one fails the run
/// naming it, its siblings still running to the end.
#[test]
fn a_wide_step_runs_its_tasks_together_and_applies_them_in_order() {
    const W: u32 = 40;
    for workers in [None, Some(2)] {
        let rt = match workers {
            None => tokio::runtime::Builder::new_current_thread().enable_all().build(),
            Some(n) => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(n)
                .enable_all()
                .build(),
        }
        .unwrap();
        for panic_at in [None, Some(17)] {
            let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(W as usize));
            let finished = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
            let mut g = GraphBuilder::<Flow>::new();
            let (b, f) = (barrier.clone(), finished.clone());
            let worker = g.add_send_node("worker", move |n: &u32| {
                let (b, f) = (b.clone(), f.clone());
                let n = *n;
                async move {
                    b.wait().await;
                    // Later tasks finish first: the order of the log is not the order of ends.
                    tokio::time::sleep(Duration::from_millis(u64::from(W - n) / 8)).await;
                    f.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    assert!(Some(n) != panic_at, "task {n} gives up");
                    log(&n.to_string())
                }
            });
            plan_sends(&mut g, &worker, W);
            let app = g.compile().unwrap();
            // Tasks polled one after another would wait at the barrier for ever.
            let out = rt
                .block_on(async {
                    tokio::time::timeout(Duration::from_secs(20), app.invoke(Flow::default(), &cfg())).await
                })
                .expect("the tasks of one step run together");
            match panic_at {
                None => {
                    let want: Vec<String> = (0..W).map(|n| n.to_string()).collect();
                    assert_eq!(out.unwrap().log, want, "workers {workers:?}");
                }
                Some(n) => {
                    let err = out.unwrap_err();
                    assert!(err.is_panic(), "{err}");
                    assert_eq!(
                        err.to_string(),
                        format!("node `worker` panicked at step 2: task {n} gives up")
                    );
                }
            }
            assert_eq!(finished.load(std::sync::atomic::Ordering::SeqCst), W);
        }
    }
}

#[tokio::test]
async fn a_failing_node_is_named_with_its_step() {
    let mut g = GraphBuilder::<Flow>::new();
    g.add_node("ok", |_: &Flow| log("ok"));
    g.add_node("bad", |_: &Flow| -> Result<FlowUpdate, std::io::Error> {
        Err(std::io::Error::other("disk on fire"))
    });
    g.add_edge(START, "ok").add_edge("ok", "bad");
    let err = g.compile().unwrap().invoke(Flow::default(), &cfg()).await.unwrap_err();
    assert!(err.is_node_error());
    assert_eq!((err.node_name(), err.step()), (Some("bad"), Some(2)));
    assert_eq!(err.to_string(), "node `bad` failed at step 2: disk on fire");
    assert_eq!(std::error::Error::source(&err).unwrap().to_string(), "disk on fire");
}

#[tokio::test]
async fn send_with_100_payloads_runs_100_tasks_in_one_step() {
    let runs = Log::default();
    let mut g = GraphBuilder::<Flow>::new();
    let r = runs.clone();
    let worker = g.add_send_node("worker", move |n: &u32, c: &Context| {
        r.push(c.step(), "worker");
        log(&n.to_string())
    });
    plan_sends(&mut g, &worker, 100);
    let out = g.compile().unwrap().invoke(Flow::default(), &cfg()).await.unwrap();
    let expected: Vec<String> = (0..100).map(|i| i.to_string()).collect();
    assert_eq!(out.log, expected, "every result, in Send order");
    let steps = runs.by_step();
    assert_eq!(steps.len(), 1);
    assert_eq!((steps[0].0, steps[0].1.len()), (2, 100));
}

#[tokio::test]
async fn a_command_goes_where_it_says() {
    let mut g = GraphBuilder::<Flow>::new();
    let target = g.add_node("target", |_: &Flow| log("target"));
    let t = target.id();
    let chooser = g.add_node("chooser", move |_: &Flow| Command::new().update(log("chooser")).goto(t));
    g.add_edge(START, &chooser).declare_destinations(&chooser, [&target]);
    let out = g.compile().unwrap().invoke(Flow::default(), &cfg()).await.unwrap();
    assert_eq!(out.log, ["chooser", "target"]);
}

#[tokio::test]
async fn a_router_choosing_an_undeclared_target_fails_the_run() {
    let mut g = GraphBuilder::<Flow>::new();
    let a = g.add_node("a", |_: &Flow| ());
    let b = g.add_node("b", |_: &Flow| ());
    let b_id = b.id();
    g.add_edge(START, &a).add_edge(&a, &b);
    g.add_router(&a, move |_: &Flow| b_id, [END]);
    let err = g.compile().unwrap().invoke(Flow::default(), &cfg()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "router of node `a` at step 1 chose `b`, which is not one of its declared targets"
    );
}

#[tokio::test]
async fn a_write_outside_the_declared_fields_fails_naming_node_and_field() {
    let mut g = GraphBuilder::<Flow>::new();
    let a = g.add_node("a", |_: &Flow| {
        FlowUpdate::default().value("x".into()).count(ReducerWrite::Reduce(1))
    });
    g.declare_writes(&a, [2]);
    g.add_edge(START, &a);
    let err = g.compile().unwrap().invoke(Flow::default(), &cfg()).await.unwrap_err();
    assert_eq!((err.node_name(), err.field()), (Some("a"), Some("value")));
    assert_eq!(
        err.to_string(),
        "node `a` wrote field `value` at step 1, which is not among the fields it declares in `writes(..)`"
    );
}

#[tokio::test]
async fn a_deferred_node_runs_once_everything_else_is_done() {
    let runs = Log::default();
    let mut g = GraphBuilder::<Flow>::new();
    for (name, next) in [("a", Some("a2")), ("a2", None), ("b", None)] {
        let r = runs.clone();
        g.add_node(name, move |_: &Flow, c: &Context| r.push(c.step(), c.node()));
        if let Some(n) = next {
            g.add_edge(name, n);
        }
    }
    let r = runs.clone();
    let last = g.add_node("last", move |_: &Flow, c: &Context| r.push(c.step(), c.node()));
    g.defer(&last);
    g.add_edge(START, "a")
        .add_edge(START, "b")
        .add_edge("b", "last")
        .add_edge("a2", "last");
    g.compile().unwrap().invoke(Flow::default(), &cfg()).await.unwrap();
    assert_eq!(
        runs.by_step(),
        [
            (1, vec!["a".into(), "b".into()]),
            (2, vec!["a2".into()]),
            (3, vec!["last".into()])
        ]
    );
}

#[test]
fn wiring_errors_are_reported_together_when_the_graph_is_built() {
    let mut g = GraphBuilder::<Flow>::new();
    g.add_node("search", |_: &Flow| ());
    g.add_node("search", |_: &Flow| ());
    g.add_node("write", |_: &Flow| ());
    g.add_edge(START, "serch")
        .add_edge(END, "write")
        .add_edge("write", START);
    let err = g.compile().unwrap_err();
    assert_eq!(
        err.problems(),
        [
            "node `search` is declared twice; node names must be unique",
            "unknown node `serch`; did you mean `search`?",
            "END cannot be the source of an edge; nothing runs after END",
            "START cannot be the target of an edge; START only begins the run",
            "node `write` is unreachable: no path from START leads to it; add an edge into it or remove it",
        ]
    );
}

#[derive(Debug)]
struct Flaky;
impl std::fmt::Display for Flaky {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("flaky")
    }
}
impl std::error::Error for Flaky {}

fn flaky_graph(fail_times: usize, policy: weir::RetryPolicy) -> (weir::CompiledGraph<Flow>, Log) {
    let runs = Log::default();
    let mut g = GraphBuilder::<Flow>::new();
    let r = runs.clone();
    let node = g.add_node("flaky", move |_: &Flow, c: &Context| -> Result<FlowUpdate, Flaky> {
        r.push(c.step(), "attempt");
        if r.count("attempt") <= fail_times {
            Err(Flaky)
        } else {
            Ok(log("ok"))
        }
    });
    g.retry(&node, policy);
    g.add_edge(START, &node);
    (g.compile().unwrap(), runs)
}

fn quick(attempts: u32) -> weir::RetryPolicy {
    weir::RetryPolicy::new(attempts)
        .initial_interval(Duration::from_millis(1))
        .jitter(false)
}

#[tokio::test]
async fn a_node_failing_twice_then_succeeding_under_three_attempts_runs_three_times() {
    let (app, runs) = flaky_graph(2, quick(3));
    let out = app.invoke(Flow::default(), &cfg()).await.unwrap();
    assert_eq!(out.log, ["ok"]);
    assert_eq!(runs.count("attempt"), 3);
}

#[tokio::test]
async fn retries_give_up_after_max_attempts_with_the_last_error() {
    let (app, runs) = flaky_graph(5, quick(2));
    let err = app.invoke(Flow::default(), &cfg()).await.unwrap_err();
    assert_eq!(err.to_string(), "node `flaky` failed at step 1: flaky");
    assert_eq!(runs.count("attempt"), 2);
}

#[tokio::test]
async fn retry_on_selects_the_errors_to_retry() {
    let (app, runs) = flaky_graph(1, quick(3).retry_on(|e| !e.is::<Flaky>()));
    assert!(app.invoke(Flow::default(), &cfg()).await.unwrap_err().is_node_error());
    assert_eq!(runs.count("attempt"), 1, "a Flaky error is not retried");
}

#[test]
fn retry_backoff_grows_geometrically_up_to_the_maximum() {
    // G29: initial 10 ms, factor 2, three attempts: sleeps of 10 ms then 20 ms.
    let p = weir::RetryPolicy::new(3)
        .initial_interval(Duration::from_millis(10))
        .backoff_factor(2.0)
        .jitter(false);
    assert_eq!(
        [p.delay(1), p.delay(2)],
        [Duration::from_millis(10), Duration::from_millis(20)]
    );
    let capped = p.max_interval(Duration::from_millis(15));
    assert_eq!(capped.delay(2), Duration::from_millis(15));
}

#[tokio::test]
async fn a_timeout_fails_naming_the_node_and_the_limit() {
    let mut g = GraphBuilder::<Flow>::new();
    let slow = g.add_node("slow", |_: &Flow| async {
        tokio::time::sleep(Duration::from_secs(5)).await;
        log("late")
    });
    g.timeout(&slow, Duration::from_millis(20));
    g.add_edge(START, &slow);
    let err = g.compile().unwrap().invoke(Flow::default(), &cfg()).await.unwrap_err();
    assert!(err.is_timeout());
    assert_eq!(
        err.to_string(),
        "node `slow` timed out at step 1: an attempt took longer than its limit of 20ms"
    );
}

#[test]
fn a_timeout_on_a_plain_function_is_refused_when_building() {
    let mut g = GraphBuilder::<Flow>::new();
    let n = g.add_node("plain", |_: &Flow| log("x"));
    g.timeout(&n, Duration::from_millis(20));
    g.add_edge(START, &n);
    assert_eq!(
        g.compile().unwrap_err().to_string(),
        "node `plain` has a timeout but is a plain function, which cannot be stopped while it runs: make it async"
    );
}

#[tokio::test]
async fn a_panicking_router_is_an_error_of_the_run() {
    let mut g = GraphBuilder::<Flow>::new();
    let a = g.add_node("a", |_: &Flow| log("a"));
    g.add_edge(START, &a);
    g.add_router(&a, |_: &Flow| -> weir::Goto<Flow> { panic!("no route") }, [END]);
    let err = g.compile().unwrap().invoke(Flow::default(), &cfg()).await.unwrap_err();
    assert!(err.is_panic());
    assert_eq!(
        err.to_string(),
        "node `a` panicked at step 1: its router panicked: no route"
    );
}
