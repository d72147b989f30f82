//! `update_state` and `bulk_update_state` in LangGraph's forms: a thread's first checkpoint,
//! updates as the input (`__input__`) or as the start node (`__start__`), several nodes'
//! updates in one superstep, copies of a checkpoint (`__copy__`) and of a whole thread, and the
//! errors of each.

use weir::checkpoint::{MemorySaver, Source};
use weir::prelude::*;
use weir::{NodeRef, StateEdit, StateSnapshot, AS_END, AS_INPUT};

#[derive(State, Clone, Debug, Default, PartialEq)]
struct Steps {
    #[reducer(append)]
    log: Vec<String>,
    status: String,
}

fn log(line: &str) -> StepsUpdate {
    StepsUpdate::default().log(vec![line.to_owned()])
}

/// `START -> a -> b -> END`, each node logging its name.
fn chain() -> CompiledGraph<Steps> {
    let mut g = GraphBuilder::<Steps>::new();
    g.add_node("a", |_: &Steps| log("a"));
    g.add_node("b", |_: &Steps| log("b"));
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END);
    g.with_checkpointer(MemorySaver::new()).compile().unwrap()
}

/// `START -> {x, y}`, `[x, y] -> z -> END`: `z` waits for both.
fn join() -> CompiledGraph<Steps> {
    let mut g = GraphBuilder::<Steps>::new();
    g.add_node("x", |_: &Steps| log("x"));
    g.add_node("y", |_: &Steps| log("y"));
    g.add_node("z", |_: &Steps| log("z"));
    g.add_edge(START, "x").add_edge(START, "y");
    g.add_join(["x", "y"], "z").add_edge("z", END);
    g.with_checkpointer(MemorySaver::new()).compile().unwrap()
}

#[tokio::test]
async fn an_update_as_a_node_on_a_fresh_thread_writes_its_first_checkpoint() {
    let app = chain();
    let cfg = RunConfig::thread("fresh");
    let id = app.update_state(&cfg, log("x"), Some("a")).await.unwrap();
    let st = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(st.checkpoint_id, id);
    assert_eq!(st.values.log, ["x"]);
    assert_eq!(st.next, ["b"]);
    assert_eq!((st.source, st.step, st.parent_id.as_deref()), (Source::Update, 0, None));
    assert_eq!(st.writes, ["a"]);
    let out = app.resume(&cfg).await.unwrap();
    assert_eq!(out.state().log, ["x", "b"]);
}

#[tokio::test]
async fn without_as_node_a_fresh_thread_takes_the_update_as_the_start_node() {
    let app = chain();
    let cfg = RunConfig::thread("fresh");
    app.update_state(&cfg, StepsUpdate::default().status("set".into()), None)
        .await
        .unwrap();
    let st = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(st.values.status, "set");
    assert_eq!(st.next, ["a"]);
    assert_eq!((st.source, st.step), (Source::Update, 0));
    let out = app.resume(&cfg).await.unwrap();
    assert_eq!(out.state().log, ["a", "b"]);
}

#[tokio::test]
async fn an_update_as_the_input_is_a_new_input_that_the_start_node_takes_next() {
    let app = chain();
    let cfg = RunConfig::thread("input");
    app.update_state(&cfg, StepsUpdate::default().status("in".into()), Some(AS_INPUT))
        .await
        .unwrap();
    let st = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!((st.source, st.step), (Source::Input, -1));
    assert_eq!(st.next, ["__start__"]);
    // The input is not in the fields until the start node passes it on.
    assert_eq!(st.values, Steps::default());
    let out = app.resume(&cfg).await.unwrap();
    assert_eq!(
        *out.state(),
        Steps {
            log: vec!["a".into(), "b".into()],
            status: "in".into()
        }
    );
    // On a thread with checkpoints, the input is the step after the last.
    app.update_state(&cfg, StepsUpdate::default().status("again".into()), Some(AS_INPUT))
        .await
        .unwrap();
    let st = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(
        (st.source, st.step, st.next.as_slice()),
        (Source::Input, 3, &["__start__".to_owned()][..])
    );
}

#[tokio::test]
async fn replaying_a_runs_history_with_bulk_update_state_writes_the_same_values_and_steps() {
    let app = chain();
    let run = RunConfig::thread("run");
    let input = StepsUpdate::default().status("go".into());
    app.invoke(input.clone(), &run).await.unwrap();
    let replay = RunConfig::thread("replay");
    let supersteps = vec![
        vec![StateEdit::new(input.clone(), Some(AS_INPUT))],
        vec![StateEdit::new(input, Some("__start__"))],
        vec![StateEdit::new(log("a"), Some("a"))],
        vec![StateEdit::new(log("b"), Some("b"))],
    ];
    let id = app.bulk_update_state(&replay, supersteps).await.unwrap();
    let ran = app.get_state_history(&run, None).await.unwrap();
    let replayed = app.get_state_history(&replay, None).await.unwrap();
    assert_eq!(replayed[0].checkpoint_id, id);
    let shape = |h: &[StateSnapshot<Steps>]| -> Vec<(i64, Steps, Vec<String>)> {
        h.iter().map(|s| (s.step, s.values.clone(), s.next.clone())).collect()
    };
    assert_eq!(shape(&replayed), shape(&ran));
    let sources: Vec<Source> = replayed.iter().map(|s| s.source).collect();
    assert_eq!(sources, [Source::Update, Source::Update, Source::Update, Source::Input]);
    // Each checkpoint follows the one before it.
    for pair in replayed.windows(2) {
        assert_eq!(pair[0].parent_id.as_deref(), Some(pair[1].checkpoint_id.as_str()));
    }
}

#[tokio::test]
async fn several_updates_in_one_superstep_are_one_step_applied_in_the_order_given() {
    let app = join();
    let cfg = RunConfig::thread("both");
    app.invoke(Steps::default(), &cfg).await.unwrap();
    let before = app.get_state(&cfg).await.unwrap().unwrap();
    let step = vec![vec![
        StateEdit::new(log("as y"), Some("y")),
        StateEdit::new(log("as x"), Some("x")),
    ]];
    app.bulk_update_state(&cfg, step).await.unwrap();
    let st = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(st.values.log, ["x", "y", "z", "as y", "as x"]);
    assert_eq!((st.source, st.step), (Source::Update, before.step + 1));
    assert_eq!(st.parent_id.as_deref(), Some(before.checkpoint_id.as_str()));
    assert_eq!(st.writes, ["y", "x"]);
    // Both halves of the join were written: `z` runs next, once.
    assert_eq!(st.next, ["z"]);
    let out = app.resume(&cfg).await.unwrap();
    assert_eq!(out.state().log, ["x", "y", "z", "as y", "as x", "z"]);
    // One of the two alone does not fill the join.
    app.update_state(&cfg, log("x alone"), Some("x")).await.unwrap();
    assert!(app.get_state(&cfg).await.unwrap().unwrap().next.is_empty());
}

#[tokio::test]
async fn two_updates_of_a_last_value_field_in_one_superstep_are_refused_naming_both_nodes() {
    let app = join();
    let cfg = RunConfig::thread("clash");
    let status = |s: &str| StepsUpdate::default().status(s.into());
    let step = vec![vec![
        StateEdit::new(status("one"), Some("x")),
        StateEdit::new(status("two"), Some("y")),
    ]];
    let err = app.bulk_update_state(&cfg, step).await.unwrap_err();
    assert_eq!(err.field(), Some("status"));
    assert!(err.to_string().contains("written by nodes `x` and `y`"), "{err}");
    assert!(app.get_state(&cfg).await.unwrap().is_none());
}

#[tokio::test]
async fn bad_edits_are_refused_with_what_is_wrong() {
    let app = join();
    let cfg = RunConfig::thread("bad");
    let message = |r: Result<String, weir::Error>| r.unwrap_err().to_string();
    assert_eq!(
        message(app.update_state(&cfg, log("?"), Some("nope")).await),
        "`update_state` names unknown node `nope`"
    );
    assert_eq!(
        message(app.bulk_update_state(&cfg, Vec::new()).await),
        "`bulk_update_state` needs at least one superstep"
    );
    assert_eq!(
        message(
            app.bulk_update_state(&cfg, vec![vec![StateEdit::new(log("x"), Some("x"))], vec![]])
                .await
        ),
        "superstep 1 of `bulk_update_state` has no update"
    );
    let unnamed = vec![vec![
        StateEdit::new(log("x"), Some("x")),
        StateEdit::new(log("y"), None),
    ]];
    assert_eq!(
        message(app.bulk_update_state(&cfg, unnamed).await),
        "each of several updates in one superstep needs its `as_node`"
    );
    let with_input = vec![vec![
        StateEdit::new(log("x"), Some("x")),
        StateEdit::new(log("i"), Some(AS_INPUT)),
    ]];
    assert_eq!(
        message(app.bulk_update_state(&cfg, with_input).await),
        "an update as `__input__` cannot share its superstep with other updates"
    );
    // Nothing was written.
    assert!(app.get_state(&cfg).await.unwrap().is_none());
}

#[tokio::test]
async fn without_as_node_a_pregel_graph_on_a_fresh_thread_asks_for_it() {
    let mut g = GraphBuilder::<Steps>::pregel();
    let x = g.add_node("x", |_: &Steps| log("x"));
    let y = g.add_node("y", |_: &Steps| log("y"));
    g.subscribe(&x, Steps::__WEIR_FIELD_status)
        .subscribe(&y, Steps::__WEIR_FIELD_status);
    g.add_edge("x", END).add_edge("y", END);
    let app = g.with_checkpointer(MemorySaver::new()).compile().unwrap();
    let cfg = RunConfig::thread("pregel");
    let err = app.update_state(&cfg, log("?"), None).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "`update_state` cannot tell which node the update comes from: name it with `as_node`"
    );
    // Named, it works; as the input, the subscribed nodes run next.
    app.update_state(&cfg, StepsUpdate::default().status("s".into()), Some(AS_INPUT))
        .await
        .unwrap();
    let st = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(
        (st.source, st.step, st.values.status.as_str()),
        (Source::Input, -1, "s")
    );
    assert_eq!(st.next, ["x", "y"]);
}

#[tokio::test]
async fn in_a_superstep_of_several_updates_each_nodes_router_reads_its_own_update() {
    // `r` routes to `w` when the status is `go`; `y` writes the log. Written together, `r`'s
    // router sees `r`'s update.
    let mut g = GraphBuilder::<Steps>::new();
    g.add_node("r", |_: &Steps| StepsUpdate::default());
    g.add_node("y", |_: &Steps| log("y"));
    let w = g.add_node("w", |_: &Steps| log("w"));
    let to_w = w.id();
    g.add_edge(START, "r")
        .add_edge(START, "y")
        .add_edge("y", END)
        .add_edge("w", END);
    g.add_router(
        "r",
        move |s: &Steps| (s.status == "go").then_some(to_w),
        [NodeRef::from(&w), END],
    );
    let app = g.with_checkpointer(MemorySaver::new()).compile().unwrap();
    for (status, next) in [("go", vec!["w"]), ("stop", vec![])] {
        let cfg = RunConfig::thread(status);
        let step = vec![vec![
            StateEdit::new(StepsUpdate::default().status(status.into()), Some("r")),
            StateEdit::new(log("y"), Some("y")),
        ]];
        app.bulk_update_state(&cfg, step).await.unwrap();
        assert_eq!(app.get_state(&cfg).await.unwrap().unwrap().next, next, "{status}");
    }
}

#[tokio::test]
async fn without_as_node_after_only_the_start_node_ran_the_update_is_the_start_nodes() {
    // Paused before `a`: only the start node ran, so LangGraph takes the update as `__start__`.
    let mut g = GraphBuilder::<Steps>::new();
    g.add_node("a", |_: &Steps| log("a"));
    g.add_edge(START, "a").add_edge("a", END);
    g.interrupt_before("a");
    let app = g.with_checkpointer(MemorySaver::new()).compile().unwrap();
    let cfg = RunConfig::thread("t");
    assert!(app.run(Steps::default(), &cfg).await.unwrap().is_paused());
    app.update_state(&cfg, log("edited"), None).await.unwrap();
    let st = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(st.writes, ["__start__"]);
    assert_eq!(st.next, ["a"]);
    assert_eq!(st.values.log, ["edited"]);
}

/// `START -> a -> b -> END`, paused before `b`.
fn paused_chain() -> CompiledGraph<Steps> {
    let mut g = GraphBuilder::<Steps>::new();
    g.add_node("a", |_: &Steps| log("a"));
    g.add_node("b", |_: &Steps| log("b"));
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END);
    g.interrupt_before("b");
    g.with_checkpointer(MemorySaver::new()).compile().unwrap()
}

#[tokio::test]
async fn a_copy_of_the_head_is_a_fork_sibling_with_the_same_values_and_next() {
    let app = paused_chain();
    let cfg = RunConfig::thread("copy");
    assert!(app.run(Steps::default(), &cfg).await.unwrap().is_paused());
    let head = app.get_state(&cfg).await.unwrap().unwrap();
    let id = app
        .bulk_update_state(&cfg, vec![vec![StateEdit::copy()]])
        .await
        .unwrap();
    let copy = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(copy.checkpoint_id, id);
    assert_ne!(copy.checkpoint_id, head.checkpoint_id);
    assert_eq!((copy.source, copy.step), (Source::Fork, head.step + 1));
    // A sibling of the copied checkpoint: same parent.
    assert_eq!(copy.parent_id, head.parent_id);
    assert_eq!(
        (copy.values.clone(), copy.next.clone()),
        (head.values.clone(), vec!["b".to_owned()])
    );
    // The copy resumes as the original would; the original stays in the history.
    let out = app.resume(&cfg).await.unwrap();
    assert_eq!(out.state().log, ["a", "b"]);
    let history = app.get_state_history(&cfg, None).await.unwrap();
    assert!(history.iter().any(|s| s.checkpoint_id == head.checkpoint_id));
}

#[tokio::test]
async fn a_copy_of_a_past_checkpoint_takes_its_values_and_next_then_later_supersteps_edit_the_copy() {
    let app = paused_chain();
    let cfg = RunConfig::thread("past");
    assert!(app.run(Steps::default(), &cfg).await.unwrap().is_paused());
    let history = app.get_state_history(&cfg, None).await.unwrap();
    let before_a = history.iter().find(|s| s.next == ["a"]).unwrap().clone();
    let at = cfg.clone().checkpoint_id(before_a.checkpoint_id.clone());
    let supersteps = vec![vec![StateEdit::copy()], vec![StateEdit::new(log("as a"), Some("a"))]];
    let id = app.bulk_update_state(&at, supersteps).await.unwrap();
    let edited = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(edited.checkpoint_id, id);
    assert_eq!(
        (edited.source, edited.values.log.clone()),
        (Source::Update, vec!["as a".to_owned()])
    );
    let copy = app
        .get_state(&cfg.clone().checkpoint_id(edited.parent_id.clone().unwrap()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((copy.source, copy.step), (Source::Fork, before_a.step + 1));
    assert_eq!(copy.parent_id, before_a.parent_id);
    assert_eq!((copy.values, copy.next), (before_a.values, vec!["a".to_owned()]));
}

#[tokio::test]
async fn a_copy_is_refused_on_a_thread_without_a_checkpoint_or_beside_other_updates() {
    let app = paused_chain();
    let cfg = RunConfig::thread("none");
    let err = app
        .bulk_update_state(&cfg, vec![vec![StateEdit::copy()]])
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "an update as `__copy__` needs a checkpoint to copy: thread `none` has none"
    );
    app.run(Steps::default(), &cfg).await.unwrap();
    let both = vec![vec![StateEdit::copy(), StateEdit::new(log("x"), Some("a"))]];
    let err = app.bulk_update_state(&cfg, both).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "an update as `__copy__` cannot share its superstep with other updates"
    );
}

#[tokio::test]
async fn a_copied_thread_has_the_same_state_and_history_and_resumes_apart_from_the_original() {
    let app = paused_chain();
    let (from, to) = (RunConfig::thread("from"), RunConfig::thread("to"));
    assert!(app
        .run(StepsUpdate::default().status("go".into()), &from)
        .await
        .unwrap()
        .is_paused());
    app.copy_thread("from", "to").await.unwrap();
    let original = app.get_state(&from).await.unwrap().unwrap();
    let copy = app.get_state(&to).await.unwrap().unwrap();
    assert_eq!(
        (&copy.checkpoint_id, &copy.values, &copy.next, copy.step),
        (&original.checkpoint_id, &original.values, &original.next, original.step)
    );
    let ids = |h: Vec<StateSnapshot<Steps>>| -> Vec<(String, Steps)> {
        h.into_iter().map(|s| (s.checkpoint_id, s.values)).collect()
    };
    let history = ids(app.get_state_history(&from, None).await.unwrap());
    assert_eq!(ids(app.get_state_history(&to, None).await.unwrap()), history);
    // Resuming the copy runs `b` there only.
    let out = app.resume(&to).await.unwrap();
    assert_eq!(out.state().log, ["a", "b"]);
    let still = app.get_state(&from).await.unwrap().unwrap();
    assert_eq!(
        (still.checkpoint_id, still.next),
        (original.checkpoint_id, vec!["b".to_owned()])
    );
    assert_eq!(ids(app.get_state_history(&from, None).await.unwrap()), history);
    // A second copy onto the same thread is refused, naming it.
    let err = app.copy_thread("from", "to").await.unwrap_err();
    assert!(err.to_string().contains("thread `to`"), "{err}");
    assert!(err.to_string().contains("already has checkpoints"), "{err}");
}

/// `START -> {x, y}`, `x -> z`, `y -> w`: `y` asks a question, so a run pauses in the first
/// step with `x`'s writes saved.
fn paused_mid_step() -> CompiledGraph<Steps> {
    let mut g = GraphBuilder::<Steps>::new();
    g.add_node("x", |_: &Steps| log("x"));
    g.add_node("y", |_: &Steps, ctx: &Context| -> Result<StepsUpdate, weir::BoxError> {
        let answer: String = ctx.interrupt("go on?")?;
        Ok(log(&format!("y:{answer}")))
    });
    g.add_node("z", |_: &Steps| log("z"));
    g.add_node("w", |_: &Steps| log("w"));
    g.add_edge(START, "x").add_edge(START, "y");
    g.add_edge("x", "z").add_edge("y", "w");
    g.add_edge("z", END).add_edge("w", END);
    g.with_checkpointer(MemorySaver::new()).compile().unwrap()
}

#[tokio::test]
async fn an_end_edit_applies_the_finished_tasks_writes_and_cancels_the_rest_of_the_step() {
    let app = paused_mid_step();
    let cfg = RunConfig::thread("end");
    assert!(app.run(Steps::default(), &cfg).await.unwrap().is_paused());
    let paused = app.get_state(&cfg).await.unwrap().unwrap();
    // `x` finished (its writes saved and shown), `y` asked.
    assert_eq!(
        (paused.next.as_slice(), paused.values.log.as_slice()),
        (&["y".to_owned()][..], &["x".to_owned()][..])
    );
    let id = app
        .update_state(&cfg, StepsUpdate::default(), Some(AS_END))
        .await
        .unwrap();
    let st = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(st.checkpoint_id, id);
    assert_eq!((st.source, st.step), (Source::Update, paused.step + 1));
    assert_eq!(st.parent_id.as_deref(), Some(paused.checkpoint_id.as_str()));
    // `x`'s saved write is in, its edge fired; `y` was cancelled: neither it nor `w` runs.
    assert_eq!(st.values.log, ["x"]);
    assert_eq!(st.writes, ["x"]);
    assert_eq!(st.next, ["z"]);
    assert!(st.tasks.iter().all(|t| t.pause.is_none()), "{:?}", st.tasks);
    let out = app.resume(&cfg).await.unwrap();
    assert!(!out.is_paused());
    assert_eq!(out.state().log, ["x", "z"]);
}

#[tokio::test]
async fn an_end_edit_of_a_step_paused_before_it_ran_cancels_every_task_and_ends_the_thread() {
    let app = paused_chain();
    let cfg = RunConfig::thread("before");
    assert!(app.run(Steps::default(), &cfg).await.unwrap().is_paused());
    app.bulk_update_state(&cfg, vec![vec![StateEdit::end()]]).await.unwrap();
    let st = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(st.values.log, ["a"]);
    assert!(st.next.is_empty(), "{:?}", st.next);
    let both = vec![vec![StateEdit::end(), StateEdit::new(log("x"), Some("a"))]];
    let err = app.bulk_update_state(&cfg, both).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "an update as `__end__` cannot share its superstep with other updates"
    );
}
