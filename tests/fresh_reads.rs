//! Fresh reads (seed 002, LangGraph's `local_read(fresh=True)`): the state as one task sees it
//! with its own writes applied and nobody else's, read by `GraphBuilder::then_fresh` and by the
//! routers of a wide step through one mechanism, `State::read_fresh`, an overlay of the fields
//! the task wrote.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use weir::checkpoint::MemorySaver;
use weir::prelude::*;
use weir::NodeRef;

thread_local! {
    /// Copies of `Tracked` values made on this thread.
    static COPIES: Cell<usize> = const { Cell::new(0) };
}

/// A value that counts its copies.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Tracked(u32);

impl Clone for Tracked {
    fn clone(&self) -> Self {
        COPIES.with(|c| c.set(c.get() + 1));
        Self(self.0)
    }
}

#[derive(State, Clone, Debug, Default)]
struct Notes {
    #[reducer(append)]
    notes: Vec<String>,
    #[reducer(add)]
    count: i64,
    #[channel(ephemeral)]
    scratch: Option<String>,
    status: String,
    /// What the fresh reads saw (appended).
    #[reducer(append)]
    seen: Vec<String>,
    big: Tracked,
}

fn wrote(note: &str, count: i64) -> NotesUpdate {
    NotesUpdate::default().notes(vec![note.to_owned()]).count(count)
}

fn saw(line: String) -> NotesUpdate {
    NotesUpdate::default().seen(vec![line])
}

fn view(who: &str, s: &Notes) -> String {
    format!("{who}: {:?} {} {:?}", s.notes, s.count, s.scratch)
}

fn input() -> NotesUpdate {
    NotesUpdate::default().notes(vec!["in".into()]).count(1)
}

#[tokio::test]
async fn then_fresh_sees_its_nodes_writes_and_none_of_its_siblings() {
    let mut g = GraphBuilder::<Notes>::new();
    let a = g.add_node("a", |_: &Notes| wrote("a", 10)).id();
    let b = g.add_node("b", |_: &Notes| wrote("b", 100)).id();
    g.then_fresh(a, |s: &Notes| saw(view("a", s)));
    g.then_fresh(b, |s: &Notes| saw(view("b", s)));
    g.add_edge(START, "a")
        .add_edge(START, "b")
        .add_edge("a", END)
        .add_edge("b", END);
    let out = g
        .compile()
        .unwrap()
        .invoke(input(), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.seen, [r#"a: ["in", "a"] 11 None"#, r#"b: ["in", "b"] 101 None"#]);
    // The overlays are gone: the step applies each task's writes once, in task order.
    assert_eq!((out.notes, out.count), (vec!["in".into(), "a".into(), "b".into()], 111));
}

#[tokio::test]
async fn then_fresh_adds_its_update_after_the_nodes_and_routers_see_both() {
    let mut g = GraphBuilder::<Notes>::new();
    let a = g.add_node("a", |_: &Notes| wrote("a", 1)).id();
    let done = g
        .add_node("done", |s: &Notes| saw(format!("done after {}", s.notes.join(","))))
        .id();
    g.then_fresh(a, |s: &Notes| {
        NotesUpdate::default().notes(vec![format!("{} notes", s.notes.len())])
    });
    g.add_edge(START, "a").add_edge("done", END);
    g.add_router(
        "a",
        move |s: &Notes| {
            if s.notes.last().is_some_and(|n| n == "2 notes") {
                done
            } else {
                a
            }
        },
        [NodeRef::from(a), NodeRef::from(done)],
    );
    let out = g
        .compile()
        .unwrap()
        .invoke(input(), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.notes, ["in", "a", "2 notes"]);
    assert_eq!(out.seen, ["done after in,a,2 notes"]);
}

#[tokio::test]
async fn a_fresh_read_leaves_the_fields_the_task_did_not_write_as_the_step_began() {
    // LangGraph's local_read copies and updates only the channels the task wrote: an ephemeral
    // value set by the previous step is still there for the task's fresh read and its router,
    // although the step boundary clears it.
    let mut g = GraphBuilder::<Notes>::new();
    g.add_node("set", |_: &Notes| NotesUpdate::default().scratch(Some("tmp".into())));
    let a = g.add_node("a", |_: &Notes| wrote("a", 0)).id();
    g.add_node("b", |_: &Notes| wrote("b", 0));
    g.then_fresh(a, |s: &Notes| saw(view("a", s)));
    let end = g.add_node("end", |s: &Notes| saw(view("end", s))).id();
    g.add_router(
        "a",
        move |s: &Notes| if s.scratch.is_some() { end } else { a },
        [NodeRef::from(a), NodeRef::from(end)],
    );
    g.add_edge(START, "set").add_edge("set", "a").add_edge("set", "b");
    g.add_edge("b", END).add_edge("end", END);
    let out = g
        .compile()
        .unwrap()
        .invoke(input(), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(
        out.seen,
        [r#"a: ["in", "a"] 1 Some("tmp")"#, r#"end: ["in", "a", "b"] 1 None"#]
    );
}

#[tokio::test]
async fn routers_of_a_wide_step_read_fresh_without_copying_the_state() {
    let build = |routed: bool| {
        let mut g = GraphBuilder::<Notes>::new();
        let a = g.add_node("a", |_: &Notes| wrote("a", 1)).id();
        let b = g.add_node("b", |_: &Notes| wrote("b", 1)).id();
        g.add_node("c", |_: &Notes| wrote("c", 1));
        g.add_edge(START, "a")
            .add_edge(START, "b")
            .add_edge(START, "c")
            .add_edge("c", END);
        if routed {
            for n in [a, b] {
                g.add_router(n, |s: &Notes| (s.notes.len() == 2).then_some(Goto::End), [END]);
            }
        } else {
            g.add_edge("a", END).add_edge("b", END);
        }
        g.compile().unwrap()
    };
    let mut copies = Vec::new();
    for routed in [false, true] {
        let app = build(routed);
        COPIES.with(|c| c.set(0));
        let out = app.invoke(input(), &RunConfig::default()).await.unwrap();
        assert_eq!(out.count, 4);
        copies.push(COPIES.with(Cell::get));
    }
    // Two routed tasks in a wide step copy no field they did not write (`big`), so no state.
    assert_eq!(copies[0], copies[1], "copies of an unwritten field: {copies:?}");
}

#[tokio::test]
async fn a_failing_or_panicking_fresh_read_fails_the_task_naming_the_node() {
    let mut g = GraphBuilder::<Notes>::new();
    let a = g.add_node("a", |_: &Notes| wrote("a", 1)).id();
    g.then_fresh(a, |_: &Notes| -> Result<NotesUpdate, BoxError> {
        Err("no model".into())
    });
    g.add_edge(START, "a").add_edge("a", END);
    let err = g
        .compile()
        .unwrap()
        .invoke(input(), &RunConfig::default())
        .await
        .unwrap_err();
    assert_eq!(err.node_name(), Some("a"));
    assert!(err.to_string().contains("its fresh read failed: no model"), "{err}");

    let mut g = GraphBuilder::<Notes>::new();
    let a = g.add_node("a", |_: &Notes| wrote("a", 1)).id();
    g.then_fresh(a, |_: &Notes| -> NotesUpdate { panic!("boom") });
    g.add_edge(START, "a").add_edge("a", END);
    let err = g
        .compile()
        .unwrap()
        .invoke(input(), &RunConfig::default())
        .await
        .unwrap_err();
    assert_eq!(err.node_name(), Some("a"));
    assert!(err.to_string().contains("its fresh read panicked: boom"), "{err}");

    // A last value the node wrote takes no second write from its fresh read.
    let mut g = GraphBuilder::<Notes>::new();
    let a = g
        .add_node("a", |_: &Notes| NotesUpdate::default().status("a".into()))
        .id();
    g.then_fresh(a, |s: &Notes| NotesUpdate::default().status(format!("{}!", s.status)));
    g.add_edge(START, "a").add_edge("a", END);
    let err = g
        .compile()
        .unwrap()
        .invoke(input(), &RunConfig::default())
        .await
        .unwrap_err();
    assert_eq!(err.field(), Some("status"), "{err}");
}

#[tokio::test]
async fn a_resumed_step_keeps_the_fresh_reads_writes_and_does_not_read_again() {
    let reads = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicBool::new(false));
    let mut g = GraphBuilder::<Notes>::new();
    let a = g.add_node("a", |_: &Notes| wrote("a", 1)).id();
    let r = reads.clone();
    g.then_fresh(a, move |s: &Notes| {
        r.fetch_add(1, Ordering::SeqCst);
        saw(view("a", s))
    });
    let f = failed.clone();
    g.add_node("b", move |_: &Notes| -> Result<NotesUpdate, BoxError> {
        if f.swap(true, Ordering::SeqCst) {
            Ok(wrote("b", 1))
        } else {
            Err("flaky".into())
        }
    });
    g.add_edge(START, "a")
        .add_edge(START, "b")
        .add_edge("a", END)
        .add_edge("b", END);
    let app = g.with_checkpointer(MemorySaver::new()).compile().unwrap();
    let cfg = RunConfig::thread("t");
    assert!(app.invoke(input(), &cfg).await.is_err());
    let out = app.resume(&cfg).await.unwrap();
    assert_eq!(reads.load(Ordering::SeqCst), 1);
    assert_eq!(out.state().seen, [r#"a: ["in", "a"] 2 None"#]);
    assert_eq!(out.state().notes, ["in", "a", "b"]);
}
