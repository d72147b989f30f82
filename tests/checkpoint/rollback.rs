//! `Checkpointer::delete_after`, the rollback of a run: the checkpoints written after a given
//! one go, in every namespace, with their pending writes, and the thread is as it was.

use crate::support::thread;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use weir::checkpoint::Checkpointer;
use weir::prelude::*;

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Log {
    #[reducer(append)]
    log: Vec<String>,
}

/// START -> inner (a subgraph: START -> a) -> ask (an interrupt) -> END.
fn graph(saver: &Arc<dyn Checkpointer>) -> CompiledGraph<Log> {
    let mut inner = GraphBuilder::<Log>::new();
    inner.add_node("a", |_: &Log| LogUpdate::default().log(vec!["a".into()]));
    inner.add_edge(START, "a").add_edge("a", END);
    let mut g = GraphBuilder::<Log>::new();
    g.add_subgraph(
        "inner",
        inner.compile().unwrap(),
        |_: &Log| LogUpdate::default(),
        |t: &Log| LogUpdate::default().log(t.log.clone()),
    );
    g.add_node("ask", |_: &Log, ctx: &Context| -> Result<LogUpdate, BoxError> {
        let answer: String = ctx.interrupt("go on?")?;
        Ok(LogUpdate::default().log(vec![answer]))
    });
    g.add_edge(START, "inner").add_edge("inner", "ask").add_edge("ask", END);
    g.set_checkpointer(saver.clone());
    g.compile().unwrap()
}

pub async fn delete_after_takes_a_thread_back_to_a_checkpoint(saver: Arc<dyn Checkpointer>) {
    let app = graph(&saver);
    let t = thread("rollback");
    // Task results kept: the resumed step's writes must not land on the checkpoint rolled back to.
    let config = RunConfig::thread(&t).task_results(true);
    assert!(app.run(Log::default(), &config).await.unwrap().is_paused());
    let paused_head = saver.head(&t, "").await.unwrap().unwrap();
    let usage = saver.usage(&t).await.unwrap();
    let namespaces = saver.namespaces(&t).await.unwrap();
    assert_eq!(namespaces.len(), 2, "the root's and the subgraph's: {namespaces:?}");

    // A second run: the answer, and a whole new input with its own subgraph run.
    app.resume_with("yes", &config).await.unwrap();
    assert!(app.run(Log::default(), &config).await.unwrap().is_paused());
    assert!(saver.usage(&t).await.unwrap().checkpoints > usage.checkpoints);

    saver.delete_after(&t, Some(&paused_head)).await.unwrap();
    assert_eq!(
        saver.usage(&t).await.unwrap(),
        usage,
        "every later checkpoint and write is gone"
    );
    assert_eq!(saver.head(&t, "").await.unwrap().as_deref(), Some(paused_head.as_str()));
    assert_eq!(saver.namespaces(&t).await.unwrap(), namespaces);
    // The pause's writes on the kept head stay: the thread answers as it would have.
    let Outcome::Done(out) = app.resume_with("again", &config).await.unwrap() else {
        panic!("the run ends")
    };
    assert_eq!(out.log, ["a", "again"]);

    saver.delete_after(&t, None).await.unwrap();
    assert_eq!(saver.head(&t, "").await.unwrap(), None);
    assert_eq!(saver.usage(&t).await.unwrap(), Default::default());
}
