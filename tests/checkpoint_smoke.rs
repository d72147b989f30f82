//! A first pass over checkpointed runs on the in-memory saver.

use serde::{Deserialize, Serialize};
use weir::checkpoint::MemorySaver;
use weir::prelude::*;

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Doc {
    #[reducer(append)]
    log: Vec<String>,
    approved: Option<bool>,
}

fn build(saver: MemorySaver) -> CompiledGraph<Doc> {
    let mut g = GraphBuilder::<Doc>::new();
    g.add_node("draft", |_: &Doc| DocUpdate::default().log(vec!["draft".into()]));
    g.add_node("ask", |_: &Doc, ctx: &Context| -> Result<DocUpdate, BoxError> {
        let ok: bool = ctx.interrupt("approve?")?;
        Ok(DocUpdate::default()
            .approved(Some(ok))
            .log(vec![format!("answer {ok}")]))
    });
    g.add_node("publish", |s: &Doc| {
        DocUpdate::default().log(vec![format!("publish {:?}", s.approved)])
    });
    g.add_edge(START, "draft")
        .add_edge("draft", "ask")
        .add_edge("ask", "publish");
    g.with_checkpointer(saver).compile().unwrap()
}

#[tokio::test]
async fn an_interrupt_pauses_and_a_resume_answers_it() {
    let app = build(MemorySaver::new());
    let cfg = RunConfig::thread("t1");
    let out = app.run(DocUpdate::default(), &cfg).await.unwrap();
    assert!(out.is_paused());
    assert_eq!(out.pauses()[0].node, "ask");
    assert_eq!(out.pauses()[0].question::<String>().unwrap(), "approve?");
    assert_eq!(out.state().log, ["draft"]);
    let snap = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snap.next, ["ask"]);
    assert_eq!(snap.pauses.len(), 1);
    let out = app.resume_with(true, &cfg).await.unwrap();
    assert!(!out.is_paused());
    assert_eq!(out.state().log, ["draft", "answer true", "publish Some(true)"]);
    let history = app.get_state_history(&cfg, None).await.unwrap();
    let steps: Vec<i64> = history.iter().map(|h| h.step).collect();
    assert_eq!(steps, [3, 2, 1, 0, -1]);
    let err = app.resume_with(false, &cfg).await.unwrap_err();
    assert!(err.is_bad_resume(), "{err}");
}
