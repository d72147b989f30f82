//! Each status `tick` reports, on the smallest graph that reaches it.

use super::{Loop, Status, StepEnd};
use crate::checkpoint::MemorySaver;
use crate::graph::{GraphBuilder, END, START};
use crate::pregel::{DrainHandle, RunConfig};

crate::__doc_state!();

/// START -> n -> END, and n -> n as well (forever) when `looping`.
fn graph(looping: bool, saver: bool) -> crate::CompiledGraph<Doc> {
    let mut g = GraphBuilder::<Doc>::new();
    g.add_node("n", |_: &Doc| DocUpdate::default().text("n".into()));
    g.add_edge(START, "n");
    g.add_edge("n", END);
    if looping {
        g.add_edge("n", "n");
    }
    if saver {
        g = g.with_checkpointer(MemorySaver::new());
    }
    g.compile().unwrap()
}

/// A loop over `g` with its input applied (no checkpoint is written: the loop alone).
fn started(g: &crate::CompiledGraph<Doc>, config: &RunConfig) -> Loop<Doc> {
    let mut run = Loop::new(g.inner.clone(), g.checkpointer.as_ref(), config).unwrap();
    run.input(DocUpdate::default()).unwrap();
    run
}

/// Runs the planned step and applies it.
async fn step(run: &mut Loop<Doc>) {
    let Ok(StepEnd::Ran(done)) = run.execute().await else {
        panic!("the step runs")
    };
    run.after_tick(done).unwrap();
}

#[tokio::test]
async fn tick_reports_pending_while_tasks_are_planned_then_done() {
    let g = graph(false, false);
    let mut run = started(&g, &RunConfig::default());
    assert_eq!(run.tick().unwrap(), Status::Pending, "the start step");
    step(&mut run).await;
    assert_eq!(run.tick().unwrap(), Status::Pending, "n");
    step(&mut run).await;
    assert_eq!(run.tick().unwrap(), Status::Done);
}

#[tokio::test]
async fn tick_reports_draining_once_a_drain_is_requested() {
    let g = graph(false, false);
    let drain = DrainHandle::new();
    let mut run = started(&g, &RunConfig::default().drain(drain.clone()));
    assert_eq!(run.tick().unwrap(), Status::Pending);
    drain.request();
    assert_eq!(run.tick().unwrap(), Status::Draining);
}

#[tokio::test]
async fn tick_reports_an_interrupt_before_a_node_to_pause_before() {
    let g = graph(false, true);
    let mut run = started(&g, &RunConfig::thread("t").interrupt_before("n"));
    assert_eq!(run.tick().unwrap(), Status::Pending, "the start step");
    step(&mut run).await;
    assert_eq!(run.tick().unwrap(), Status::InterruptBefore);
}

#[tokio::test]
async fn tick_reports_out_of_steps_past_the_recursion_limit() {
    let g = graph(true, false);
    let mut run = started(&g, &RunConfig::default().recursion_limit(2));
    for _ in 0..3 {
        assert_eq!(run.tick().unwrap(), Status::Pending);
        step(&mut run).await;
    }
    assert_eq!(run.tick().unwrap(), Status::OutOfSteps);
}
