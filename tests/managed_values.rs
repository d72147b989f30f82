//! The managed values a node reads from its `Context` (LangGraph's `RemainingSteps` and
//! `IsLastStep`): their exact values at each step of a new run, a resumed run and a subgraph,
//! and the recursion limit of a resumed run, counted from the resume's first step.

use weir::checkpoint::MemorySaver;
use weir::prelude::*;
use weir::NodeRef;

/// What a node saw: `node step remaining last`.
#[derive(State, Clone, Debug, Default)]
struct Seen {
    #[reducer(append)]
    seen: Vec<String>,
}

fn saw(name: &str, ctx: &Context) -> SeenUpdate {
    let line = format!("{name} {} {} {}", ctx.step(), ctx.remaining_steps(), ctx.is_last_step());
    SeenUpdate::default().seen(vec![line])
}

/// START -> a -> b -> c -> END, each node noting what it saw.
fn chain(g: &mut GraphBuilder<Seen>) {
    for n in ["a", "b", "c"] {
        g.add_node(n, move |_: &Seen, ctx: &Context| saw(n, ctx));
    }
    g.add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", "c")
        .add_edge("c", END);
}

#[tokio::test]
async fn a_new_run_counts_remaining_steps_down_from_the_recursion_limit() {
    let mut g = GraphBuilder::<Seen>::new();
    chain(&mut g);
    let out = g
        .compile()
        .unwrap()
        .invoke(Seen::default(), &RunConfig::default().recursion_limit(5))
        .await
        .unwrap();
    // The input is step -1 and the start step 0: stop = -1 + 5 + 1 = 5.
    assert_eq!(out.seen, ["a 1 4 false", "b 2 3 false", "c 3 2 false"]);
}

#[tokio::test]
async fn a_loop_sees_its_last_step_then_the_step_with_none_left() {
    let mut g = GraphBuilder::<Seen>::new();
    let a = g.add_node("a", |_: &Seen, ctx: &Context| saw("a", ctx)).id();
    g.add_edge(START, "a");
    g.add_router("a", move |_: &Seen| a, [NodeRef::from(a), END]);
    let app = g.with_checkpointer(MemorySaver::new()).compile().unwrap();
    let cfg = RunConfig::thread("loop").recursion_limit(4);
    let err = app.invoke(Seen::default(), &cfg).await.unwrap_err();
    assert!(err.is_recursion_limit(), "{err}");
    let state = app.get_state(&cfg).await.unwrap().unwrap().values;
    // LangGraph's definitions exactly: `IsLastStep` is `step == stop - 1`, so the step at `stop`
    // itself (0 remaining) still runs and sees `false`.
    assert_eq!(state.seen, ["a 1 3 false", "a 2 2 false", "a 3 1 true", "a 4 0 false"]);
}

/// The chain, paused before `b`.
fn paused_chain() -> CompiledGraph<Seen> {
    let mut g = GraphBuilder::<Seen>::new();
    chain(&mut g);
    g.interrupt_before("b");
    g.with_checkpointer(MemorySaver::new()).compile().unwrap()
}

#[tokio::test]
async fn a_resumed_run_counts_its_steps_from_its_own_first_step() {
    let app = paused_chain();
    let cfg = RunConfig::thread("t").recursion_limit(2);
    let out = app.run(Seen::default(), &cfg).await.unwrap();
    assert!(out.is_paused());
    assert_eq!(out.state().seen, ["a 1 1 true"]);
    // The resume loads the checkpoint of step 1: its first step is 2 and its stop 2 + 2 + 1.
    let out = app.resume(&cfg).await.unwrap();
    assert!(!out.is_paused());
    assert_eq!(out.state().seen, ["a 1 1 true", "b 2 3 false", "c 3 2 false"]);
}

#[tokio::test]
async fn the_recursion_limit_of_a_resumed_run_is_its_own() {
    // LangGraph (SEMANTICS §2.7, G10): a resume may take `limit + 1` steps with tasks. Here the
    // two nodes left and the step that finds nothing to do need a limit of 1; a first run of the
    // same three nodes needs 4.
    let app = paused_chain();
    let cfg = RunConfig::thread("t").recursion_limit(2);
    assert!(app.run(Seen::default(), &cfg).await.unwrap().is_paused());
    let out = app.resume(&cfg.clone().recursion_limit(1)).await.unwrap();
    assert_eq!(out.state().seen, ["a 1 1 true", "b 2 2 false", "c 3 1 true"]);

    // Paused after `a` of a longer chain: three nodes left need a limit of 2, and fail with 1
    // after running all three (the tick after the last is past the limit).
    let mut g = GraphBuilder::<Seen>::new();
    chain(&mut g);
    g.add_node("d", |_: &Seen, ctx: &Context| saw("d", ctx));
    g.add_edge("c", "d").add_edge("d", END);
    g.interrupt_before("b");
    let app = g.with_checkpointer(MemorySaver::new()).compile().unwrap();
    for (thread, limit) in [("ok", 2), ("short", 1)] {
        let cfg = RunConfig::thread(thread).recursion_limit(5);
        assert!(app.run(Seen::default(), &cfg).await.unwrap().is_paused());
        let resumed = app.resume(&cfg.clone().recursion_limit(limit)).await;
        let state = app.get_state(&cfg).await.unwrap().unwrap().values;
        if limit == 2 {
            assert!(!resumed.unwrap().is_paused());
            assert_eq!(state.seen[1..], ["b 2 3 false", "c 3 2 false", "d 4 1 true"]);
        } else {
            let err = resumed.unwrap_err();
            assert!(err.is_recursion_limit(), "{err}");
            assert_eq!(state.seen[1..], ["b 2 2 false", "c 3 1 true", "d 4 0 false"]);
        }
    }
}

#[tokio::test]
async fn an_answered_interrupt_resumes_with_the_steps_of_a_resume() {
    let mut g = GraphBuilder::<Seen>::new();
    g.add_node("a", |_: &Seen, ctx: &Context| saw("a", ctx));
    g.add_node("ask", |_: &Seen, ctx: &Context| -> Result<SeenUpdate, BoxError> {
        let answer: String = ctx.interrupt("go on?")?;
        Ok(saw(&format!("ask:{answer}"), ctx))
    });
    g.add_edge(START, "a").add_edge("a", "ask").add_edge("ask", END);
    let app = g.with_checkpointer(MemorySaver::new()).compile().unwrap();
    let cfg = RunConfig::thread("t").recursion_limit(3);
    assert!(app.run(Seen::default(), &cfg).await.unwrap().is_paused());
    let out = app.resume_with("yes", &cfg).await.unwrap();
    // The step that paused runs again as the resume's first step: 2, with stop 2 + 3 + 1.
    assert_eq!(out.state().seen, ["a 1 2 false", "ask:yes 2 4 false"]);
}

/// The subgraph: START -> x -> y -> END.
fn sub() -> CompiledGraph<Seen> {
    let mut s = GraphBuilder::<Seen>::new();
    s.add_node("x", |_: &Seen, ctx: &Context| saw("x", ctx));
    s.add_node("y", |_: &Seen, ctx: &Context| saw("y", ctx));
    s.add_edge(START, "x").add_edge("x", "y").add_edge("y", END);
    s.compile().unwrap()
}

fn parent_of(sub: CompiledGraph<Seen>) -> GraphBuilder<Seen> {
    let mut g = GraphBuilder::<Seen>::new();
    g.add_node("p", |_: &Seen, ctx: &Context| saw("p", ctx));
    g.add_subgraph(
        "sub",
        sub,
        |_: &Seen| SeenUpdate::default(),
        |t: &Seen| SeenUpdate::default().seen(t.seen.clone()),
    );
    g.add_edge(START, "p").add_edge("p", "sub").add_edge("sub", END);
    g
}

#[tokio::test]
async fn a_subgraph_counts_its_own_steps_under_its_parents_limit() {
    let cfg = RunConfig::default().recursion_limit(6);
    let out = parent_of(sub())
        .compile()
        .unwrap()
        .invoke(Seen::default(), &cfg)
        .await
        .unwrap();
    // The subgraph is a new run of its own (stop = 6), not one of the parent's default 25.
    assert_eq!(out.seen, ["p 1 5 false", "x 1 5 false", "y 2 4 false"]);

    // Checkpointed, the subgraph runs under the parent's thread, with the same counting.
    let app = parent_of(sub())
        .with_checkpointer(MemorySaver::new())
        .compile()
        .unwrap();
    let out = app
        .invoke(Seen::default(), &RunConfig::thread("t").recursion_limit(6))
        .await
        .unwrap();
    assert_eq!(out.seen, ["p 1 5 false", "x 1 5 false", "y 2 4 false"]);

    // A limit the subgraph's own steps pass fails the run, although the parent's steps do not.
    let err = parent_of(sub())
        .compile()
        .unwrap()
        .invoke(Seen::default(), &RunConfig::default().recursion_limit(2))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("recursion limit of 2"), "{err}");
}

#[tokio::test]
async fn a_subgraph_resumed_after_its_pause_counts_from_its_resume() {
    let mut s = GraphBuilder::<Seen>::new();
    s.add_node("x", |_: &Seen, ctx: &Context| -> Result<SeenUpdate, BoxError> {
        let answer: String = ctx.interrupt("go on?")?;
        Ok(saw(&format!("x:{answer}"), ctx))
    });
    s.add_node("y", |_: &Seen, ctx: &Context| saw("y", ctx));
    s.add_edge(START, "x").add_edge("x", "y").add_edge("y", END);
    let app = parent_of(s.compile().unwrap())
        .with_checkpointer(MemorySaver::new())
        .compile()
        .unwrap();
    let cfg = RunConfig::thread("t").recursion_limit(6);
    assert!(app.run(Seen::default(), &cfg).await.unwrap().is_paused());
    let out = app.resume_with("yes", &cfg).await.unwrap();
    // The parent resumes at its step 2 (stop 2 + 6 + 1); the subgraph at its own step 1, from
    // the checkpoint of its start step 0 (stop 1 + 6 + 1).
    assert_eq!(out.state().seen, ["p 1 5 false", "x:yes 1 7 false", "y 2 6 false"]);
}
