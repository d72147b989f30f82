//! Retention under a running graph: after a prune, `get_state` at every kept checkpoint shows the
//! same state as before, the thread goes on, and time travel to a pruned checkpoint (state, fork)
//! is an error naming the thread and the checkpoint; on the memory and SQLite savers.

use serde::{Deserialize, Serialize};
use std::sync::Arc;
use weir::checkpoint::{Checkpointer, MemorySaver, Retention, SqliteSaver};
use weir::prelude::*;

#[derive(State, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Chat {
    #[reducer(append)]
    messages: Vec<String>,
    turns: u64,
}

fn build(saver: Arc<dyn Checkpointer>) -> CompiledGraph<Chat> {
    let mut g = GraphBuilder::<Chat>::new();
    g.add_node("reply", |s: &Chat| {
        ChatUpdate::default()
            .messages(vec![format!("reply {}", s.turns)])
            .turns(s.turns + 1)
    });
    g.add_edge(START, "reply").add_edge("reply", END);
    g.set_checkpointer(saver);
    g.compile().unwrap()
}

async fn time_travel_after_a_prune(saver: Arc<dyn Checkpointer>) {
    let app = build(saver.clone());
    let cfg = RunConfig::thread("chat");
    for turn in 0..6 {
        app.invoke(ChatUpdate::default().messages(vec![format!("user {turn}")]), &cfg)
            .await
            .unwrap();
    }
    let before = app.get_state_history(&cfg, None).await.unwrap();
    assert_eq!(before.len(), 18, "three checkpoints a turn");
    let pruned = saver.prune("chat", &Retention::new().keep_last(5)).await.unwrap();
    assert_eq!(pruned.checkpoints, 13);
    for (i, snap) in before.iter().enumerate() {
        let at = cfg.clone().checkpoint_id(snap.checkpoint_id.clone());
        if i < 5 {
            let now = app.get_state(&at).await.unwrap().unwrap();
            assert_eq!((&now.values, &now.next), (&snap.values, &snap.next), "checkpoint {i}");
        } else {
            let e = app.get_state(&at).await.unwrap_err().to_string();
            let id = &snap.checkpoint_id;
            assert!(
                e.contains(&format!("checkpoint `{id}` of thread `chat` was pruned")),
                "{e}"
            );
        }
    }
    // A fork from a pruned checkpoint fails the same way; one from the oldest kept goes on.
    let gone = cfg.clone().checkpoint_id(before[5].checkpoint_id.clone());
    let e = app.invoke(ChatUpdate::default(), &gone).await.unwrap_err().to_string();
    assert!(e.contains("was pruned"), "{e}");
    let oldest_done = before[..5].iter().rev().find(|s| s.next.is_empty()).unwrap();
    let kept = cfg.clone().checkpoint_id(oldest_done.checkpoint_id.clone());
    let forked = app
        .invoke(ChatUpdate::default().messages(vec!["again".into()]), &kept)
        .await
        .unwrap();
    let mut expected = oldest_done.values.messages.clone();
    expected.extend(["again".to_owned(), format!("reply {}", oldest_done.values.turns)]);
    assert_eq!(forked.messages, expected);
    let head = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(head.values.messages, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_saver() {
    time_travel_after_a_prune(Arc::new(MemorySaver::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_saver() {
    let dir = std::env::temp_dir().join(format!(
        "weir-retention-graph-{}",
        weir::checkpoint::new_checkpoint_id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    time_travel_after_a_prune(Arc::new(SqliteSaver::open(dir.join("weir.db")).unwrap())).await;
    let _ = std::fs::remove_dir_all(&dir);
}
