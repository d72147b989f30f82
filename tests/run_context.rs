//! The typed run context (LangGraph's `context_schema` / `Runtime.context`): nodes read the
//! context their run carries, typed; concurrent runs each see their own; subgraphs see their
//! parent's; a resumed run sees its own, never the paused run's (the context is not
//! checkpointed).

use std::sync::Arc;
use weir::checkpoint::MemorySaver;
use weir::prelude::*;
use weir::{RunContext, RunStream, StreamMode};

#[derive(State, Clone, Debug, Default)]
struct Log {
    #[reducer(append)]
    seen: Vec<String>,
}

/// What LangGraph's docs put in a context: who runs, and with which model.
#[derive(Debug, Clone, PartialEq)]
struct User {
    id: String,
    model: String,
}

fn user(id: &str) -> User {
    User {
        id: id.into(),
        model: format!("model-of-{id}"),
    }
}

fn line(node: &str, u: &User) -> LogUpdate {
    LogUpdate::default().seen(vec![format!("{node}:{}:{}", u.id, u.model)])
}

/// START -> a (sync) -> b (async) -> END, both reading the context.
fn chain() -> GraphBuilder<Log, User> {
    let mut g = GraphBuilder::<Log>::new().context::<User>();
    g.add_node("a", |_: &Log, _: &Context, u: &User| line("a", u));
    g.add_node("b", |_: &Log, _: &Context, u: &User| {
        let u = u.clone();
        async move {
            // Other runs' tasks get to run in between.
            tokio::task::yield_now().await;
            line("b", &u)
        }
    });
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END);
    g
}

#[tokio::test]
async fn a_node_reads_the_context_of_its_run() {
    let app = chain().compile().unwrap();
    let out = app
        .invoke(Log::default(), &RunConfig::default().context(user("ada")))
        .await
        .unwrap();
    assert_eq!(out.seen, ["a:ada:model-of-ada", "b:ada:model-of-ada"]);
}

#[tokio::test]
async fn concurrent_runs_each_see_their_own_context() {
    let app = chain().compile().unwrap();
    let runs = (0..8).map(|i| {
        let app = app.clone();
        tokio::spawn(async move {
            let id = format!("u{i}");
            let out = app
                .invoke(Log::default(), &RunConfig::default().context(user(&id)))
                .await;
            (id, out.unwrap())
        })
    });
    for run in futures::future::join_all(runs).await {
        let (id, out) = run.unwrap();
        assert_eq!(
            out.seen,
            [format!("a:{id}:model-of-{id}"), format!("b:{id}:model-of-{id}")]
        );
    }
}

#[tokio::test]
async fn a_shared_context_is_not_cloned() {
    let shared = Arc::new(user("pool"));
    let app = chain().compile().unwrap();
    let config = RunConfig::default().with_context(RunContext::from_arc(shared.clone()));
    // The config holds the very value shared, not a copy.
    assert!(std::ptr::eq(config.context.get().unwrap(), &*shared));
    let out = app.invoke(Log::default(), &config).await.unwrap();
    assert_eq!(out.seen[0], "a:pool:model-of-pool");
}

#[tokio::test]
async fn a_node_without_the_typed_argument_looks_the_context_up() {
    let mut g = GraphBuilder::<Log>::new().context::<User>();
    g.add_node("a", |_: &Log, ctx: &Context| {
        let right = ctx.context::<User>().map(|u| u.id.clone());
        let wrong = ctx.context::<String>().is_some();
        LogUpdate::default().seen(vec![format!("{right:?} {wrong}")])
    });
    g.add_edge(START, "a").add_edge("a", END);
    let app = g.compile().unwrap();
    let out = app
        .invoke(Log::default(), &RunConfig::default().context(user("bo")))
        .await
        .unwrap();
    assert_eq!(out.seen, ["Some(\"bo\") false"]);
}

#[tokio::test]
async fn a_graph_without_a_context_has_none() {
    let mut g = GraphBuilder::<Log>::new();
    g.add_node("a", |_: &Log, ctx: &Context| {
        LogUpdate::default().seen(vec![format!("{}", ctx.context::<()>().is_none())])
    });
    g.add_edge(START, "a").add_edge("a", END);
    let out = g
        .compile()
        .unwrap()
        .invoke(Log::default(), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.seen, ["true"]);
}

/// A parent reading the context, around a subgraph node `sub`.
fn parent<SC: weir::ContextValue>(sub: CompiledGraph<Log, SC>) -> CompiledGraph<Log, User> {
    let mut g = GraphBuilder::<Log>::new().context::<User>();
    g.add_node("p", |_: &Log, _: &Context, u: &User| line("p", u));
    g.add_subgraph(
        "sub",
        sub,
        |_: &Log| LogUpdate::default(),
        |t: &Log| LogUpdate::default().seen(t.seen.clone()),
    );
    g.add_edge(START, "p").add_edge("p", "sub").add_edge("sub", END);
    g.compile().unwrap()
}

#[tokio::test]
async fn a_subgraph_declaring_the_same_context_reads_its_parents() {
    let app = parent(chain().compile().unwrap());
    let out = app
        .invoke(Log::default(), &RunConfig::default().context(user("cy")))
        .await
        .unwrap();
    assert_eq!(out.seen, ["p:cy:model-of-cy", "a:cy:model-of-cy", "b:cy:model-of-cy"]);
    // Checkpointed, the subgraph runs under the parent's thread and still sees the context.
    let app = app.with_checkpointer(MemorySaver::new());
    let out = app
        .invoke(Log::default(), &RunConfig::thread("t").context(user("di")))
        .await
        .unwrap();
    assert_eq!(out.seen, ["p:di:model-of-di", "a:di:model-of-di", "b:di:model-of-di"]);
}

#[tokio::test]
async fn a_subgraph_declaring_no_context_runs_and_may_look_it_up() {
    let mut g = GraphBuilder::<Log>::new();
    g.add_node("plain", |_: &Log, ctx: &Context| {
        let id = ctx.context::<User>().map_or("none".to_owned(), |u| u.id.clone());
        LogUpdate::default().seen(vec![format!("plain:{id}")])
    });
    g.add_edge(START, "plain").add_edge("plain", END);
    let app = parent(g.compile().unwrap());
    let out = app
        .invoke(Log::default(), &RunConfig::default().context(user("ed")))
        .await
        .unwrap();
    assert_eq!(out.seen, ["p:ed:model-of-ed", "plain:ed"]);
}

#[tokio::test]
async fn a_subgraph_declaring_another_context_fails_naming_both_types() {
    let mut g = GraphBuilder::<Log>::new().context::<String>();
    g.add_node("other", |_: &Log, _: &Context, s: &String| {
        LogUpdate::default().seen(vec![s.clone()])
    });
    g.add_edge(START, "other").add_edge("other", END);
    let app = parent(g.compile().unwrap());
    let err = app
        .invoke(Log::default(), &RunConfig::default().context(user("fy")))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`other`") && err.contains("alloc::string::String"),
        "{err}"
    );
    assert!(err.contains("User"), "{err}");
}

#[tokio::test]
async fn a_resumed_run_reads_its_own_context_not_the_paused_runs() {
    let mut g = chain();
    g.interrupt_before("b");
    let app = g.with_checkpointer(MemorySaver::new()).compile().unwrap();
    let first = RunConfig::thread("t").context(user("first"));
    assert!(app.run(Log::default(), &first).await.unwrap().is_paused());
    let second = RunConfig::thread("t").context(user("second"));
    let out = app.resume(&second).await.unwrap();
    assert_eq!(out.state().seen, ["a:first:model-of-first", "b:second:model-of-second"]);
    // The checkpoint holds the state only: its metadata and values name no context.
    let snap = app.get_state(&RunConfig::thread("t")).await.unwrap().unwrap();
    assert!(!format!("{:?}", snap.metadata).contains("second"));
}

#[tokio::test]
async fn an_interrupt_answer_is_read_beside_the_resuming_runs_context() {
    let mut g = GraphBuilder::<Log>::new().context::<User>();
    g.add_node(
        "ask",
        |_: &Log, ctx: &Context, u: &User| -> Result<LogUpdate, BoxError> {
            let ok: bool = ctx.interrupt(format!("publish for {}?", u.id))?;
            Ok(LogUpdate::default().seen(vec![format!("{}:{ok}", u.id)]))
        },
    );
    g.add_edge(START, "ask").add_edge("ask", END);
    let app = g.with_checkpointer(MemorySaver::new()).compile().unwrap();
    let out = app
        .run(Log::default(), &RunConfig::thread("q").context(user("gus")))
        .await
        .unwrap();
    assert!(out.is_paused());
    let out = app
        .resume_with(true, &RunConfig::thread("q").context(user("hal")))
        .await
        .unwrap();
    assert_eq!(out.state().seen, ["hal:true"]);
}

#[tokio::test]
async fn a_stream_carries_the_context() {
    let app = chain().compile().unwrap();
    let stream: RunStream<Log> = app.stream(
        Log::default(),
        &RunConfig::default().context(user("ivy")),
        StreamMode::VALUES,
    );
    let out = stream.outcome().await.unwrap();
    assert_eq!(out.state().seen, ["a:ivy:model-of-ivy", "b:ivy:model-of-ivy"]);
}

mod declared_in_the_macro {
    use super::*;

    fn a(_: &Log, _: &Context, u: &User) -> LogUpdate {
        line("a", u)
    }

    async fn b(_: &Log) -> LogUpdate {
        LogUpdate::default().seen(vec!["b".into()])
    }

    graph! {
        struct WithUser;
        state: Log,
        context: User,
        START -> a -> b -> END;
    }

    #[tokio::test]
    async fn graph_declares_a_context_its_nodes_read() {
        let app: CompiledGraph<Log, User> = WithUser::compile().unwrap();
        let out = app
            .invoke(Log::default(), &RunConfig::default().context(user("jo")))
            .await
            .unwrap();
        assert_eq!(out.seen, ["a:jo:model-of-jo", "b"]);
        let inline = graph! { state: Log, context: User, START -> a -> END; }
            .compile()
            .unwrap();
        let out = inline
            .invoke(Log::default(), &RunConfig::default().context(user("kim")))
            .await
            .unwrap();
        assert_eq!(out.seen, ["a:kim:model-of-kim"]);
    }
}

/// Routers and fresh reads that read the run's context (LangGraph's
/// `def route(state, runtime: Runtime[C])`).
mod routers {
    use super::*;

    /// START -> a -> (router on the context) -> pro | free -> END.
    fn by_plan() -> GraphBuilder<Log, User> {
        let mut g = GraphBuilder::<Log>::new().context::<User>();
        g.add_node("a", |_: &Log| LogUpdate::default().seen(vec!["a".into()]));
        g.add_node("pro", |_: &Log| LogUpdate::default().seen(vec!["pro".into()]));
        g.add_node("free", |_: &Log| LogUpdate::default().seen(vec!["free".into()]));
        g.add_edge(START, "a").add_edge("pro", END).add_edge("free", END);
        g.add_router_with_context(
            "a",
            |_: &Log, u: &User| Goto::from(if u.id.starts_with("pro") { "pro" } else { "free" }),
            ["pro", "free"],
        );
        g
    }

    #[tokio::test]
    async fn a_router_reads_the_context_of_its_run() {
        let app = by_plan().compile().unwrap();
        let out = app
            .invoke(Log::default(), &RunConfig::default().context(user("pro-ada")))
            .await
            .unwrap();
        assert_eq!(out.seen, ["a", "pro"]);
        let out = app
            .invoke(Log::default(), &RunConfig::default().context(user("bo")))
            .await
            .unwrap();
        assert_eq!(out.seen, ["a", "free"]);
    }

    #[tokio::test]
    async fn a_router_in_a_step_of_several_tasks_reads_the_context() {
        // `a` runs beside `b`: its router runs on its fresh read, before the step's writes.
        let mut g = by_plan();
        g.add_node("b", |_: &Log| LogUpdate::default().seen(vec!["b".into()]));
        g.add_edge(START, "b").add_edge("b", END);
        let app = g.compile().unwrap();
        for (id, to) in [("pro-cy", "pro"), ("di", "free")] {
            let out = app
                .invoke(Log::default(), &RunConfig::default().context(user(id)))
                .await
                .unwrap();
            assert_eq!(out.seen, ["a", "b", to], "{id}");
        }
    }

    #[tokio::test]
    async fn a_fresh_read_reads_the_context() {
        let mut g = GraphBuilder::<Log>::new().context::<User>();
        let a = g
            .add_node("a", |_: &Log| LogUpdate::default().seen(vec!["a".into()]))
            .id();
        g.add_node("b", |_: &Log| LogUpdate::default().seen(vec!["b".into()]));
        g.then_fresh_with_context(a, |fresh: &Log, u: &User| {
            LogUpdate::default().seen(vec![format!("fresh:{}:{}", fresh.seen.join("+"), u.id)])
        });
        g.add_edge(START, "a")
            .add_edge(START, "b")
            .add_edge("a", END)
            .add_edge("b", END);
        let app = g.compile().unwrap();
        let out = app
            .invoke(Log::default(), &RunConfig::default().context(user("ed")))
            .await
            .unwrap();
        assert_eq!(out.seen, ["a", "fresh:a:ed", "b"]);
    }

    #[tokio::test]
    async fn a_router_of_a_subgraph_declaring_another_context_fails_naming_its_node_and_both_types() {
        let mut g = GraphBuilder::<Log>::new().context::<String>();
        g.add_node("pick", |_: &Log| LogUpdate::default());
        g.add_router_with_context("pick", |_: &Log, s: &String| Goto::from(s.as_str()), [END]);
        g.add_edge(START, "pick");
        let app = parent(g.compile().unwrap());
        let err = app
            .invoke(Log::default(), &RunConfig::default().context(user("fy")))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("node `pick`"), "{err}");
        assert!(
            err.contains("its router reads a run context of type `alloc::string::String`, but the run's context is `run_context::User`"),
            "{err}"
        );
    }

    fn after_a(_: &Log, u: &User) -> Plan {
        if u.id.starts_with("pro") {
            Plan::Paid
        } else {
            Plan::Free
        }
    }

    enum Plan {
        Paid,
        Free,
    }

    fn a(_: &Log) -> LogUpdate {
        LogUpdate::default().seen(vec!["a".into()])
    }
    fn pro(_: &Log) -> LogUpdate {
        LogUpdate::default().seen(vec!["pro".into()])
    }
    fn free(_: &Log) -> LogUpdate {
        LogUpdate::default().seen(vec!["free".into()])
    }

    graph! {
        struct ByPlan;
        state: Log,
        context: User,
        START -> a -> after_a(context) ? { Plan::Paid => pro, Plan::Free => free };
        pro -> END;
        free -> END;
    }

    #[tokio::test]
    async fn graph_routes_on_the_context_with_router_context() {
        let app = ByPlan::compile().unwrap();
        for (id, to) in [("pro-gil", "pro"), ("hal", "free")] {
            let out = app
                .invoke(Log::default(), &RunConfig::default().context(user(id)))
                .await
                .unwrap();
            assert_eq!(out.seen, ["a", to], "{id}");
        }
    }

    #[tokio::test]
    async fn graph_routes_on_the_context_with_a_closure_of_two_arguments() {
        let app = graph! {
            state: Log,
            context: User,
            START -> a -> (|_: &Log, u: &User| u.model.ends_with("pro-ivy")) ? { true => pro, false => free };
            pro -> END;
            free -> END;
        }
        .compile()
        .unwrap();
        for (id, to) in [("pro-ivy", "pro"), ("jo", "free")] {
            let out = app
                .invoke(Log::default(), &RunConfig::default().context(user(id)))
                .await
                .unwrap();
            assert_eq!(out.seen, ["a", to], "{id}");
        }
    }

    #[tokio::test]
    async fn graph_sends_one_task_per_payload_the_context_gives() {
        fn fan(_: &Log, u: &User) -> Vec<String> {
            u.id.split('+').map(str::to_owned).collect()
        }
        fn each(item: &String) -> LogUpdate {
            LogUpdate::default().seen(vec![format!("each:{item}")])
        }
        let app = graph! {
            state: Log,
            context: User,
            START -> a -> fan(context) ?> each;
            each -> END;
        }
        .compile()
        .unwrap();
        let out = app
            .invoke(Log::default(), &RunConfig::default().context(user("x+y")))
            .await
            .unwrap();
        assert_eq!(out.seen, ["a", "each:x", "each:y"]);
    }
}
