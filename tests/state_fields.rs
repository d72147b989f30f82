//! Fields that clear themselves (ephemeral, any-value, per-step topic) are cleared by a step that
//! bumps, and by nothing else: a checkpoint read back by `get_state`, its history entry and a
//! new input on the same thread all keep what the last step left (LangGraph's `apply_writes`:
//! only a written channel is updated, and only a bumping step gives the others an empty update).

use std::sync::{Arc, Mutex};
use weir::checkpoint::{MemorySaver, Source};
use weir::prelude::*;

#[derive(State, Clone, Debug, Default, PartialEq)]
struct Kept {
    #[channel(last_value)]
    status: String,
    #[channel(ephemeral)]
    scratch: Option<String>,
    #[channel(any)]
    anything: String,
    #[channel(topic)]
    events: Vec<String>,
    #[channel(topic, accumulate)]
    history: Vec<String>,
}

/// What the last node writes, to every field that clears itself.
fn leave(s: &Kept) -> KeptUpdate {
    KeptUpdate::default()
        .scratch(Some(format!("scratch of {}", s.status)))
        .anything(format!("any of {}", s.status))
        .events(vec![format!("event of {}", s.status)])
        .history(vec![format!("history of {}", s.status)])
}

fn left(status: &str) -> Kept {
    Kept {
        status: status.into(),
        scratch: Some(format!("scratch of {status}")),
        anything: format!("any of {status}"),
        events: vec![format!("event of {status}")],
        history: vec![format!("history of {status}")],
    }
}

#[tokio::test]
async fn get_state_shows_what_the_last_step_left_in_fields_that_clear_themselves() {
    let mut g = GraphBuilder::<Kept>::new();
    g.add_node("leave", leave);
    g.add_edge(START, "leave").add_edge("leave", END);
    let app = g.with_checkpointer(MemorySaver::new()).compile().unwrap();
    let cfg = RunConfig::thread("t");
    let out = app
        .invoke(KeptUpdate::default().status("one".into()), &cfg)
        .await
        .unwrap();
    assert_eq!(out, left("one"));

    let head = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(head.values, left("one"));
    assert!(head.next.is_empty());
    let history = app.get_state_history(&cfg, None).await.unwrap();
    assert_eq!(history[0].checkpoint_id, head.checkpoint_id);
    assert_eq!(history[0].values, head.values);
}

#[tokio::test]
async fn a_new_input_keeps_what_the_last_run_left_until_a_step_bumps() {
    // A Pregel graph: the input goes straight into the fields; `look` runs when `status` changes
    // and reads what the previous run left, as LangGraph's node would.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let mut g = GraphBuilder::<Kept>::pregel();
    let look = g.add_node("look", move |s: &Kept| {
        log.lock()
            .unwrap()
            .push((s.scratch.clone(), s.anything.clone(), s.events.clone()));
        leave(s)
    });
    g.subscribe(&look, Kept::__WEIR_FIELD_status);
    g.add_edge("look", END);
    let app = g.with_checkpointer(MemorySaver::new()).compile().unwrap();
    let cfg = RunConfig::thread("t");
    app.invoke(KeptUpdate::default().status("one".into()), &cfg)
        .await
        .unwrap();
    let out = app
        .invoke(KeptUpdate::default().status("two".into()), &cfg)
        .await
        .unwrap();

    assert_eq!(
        *seen.lock().unwrap(),
        [
            (None, String::new(), vec![]),
            (
                Some("scratch of one".into()),
                "any of one".into(),
                vec!["event of one".into()]
            ),
        ]
    );
    let mut two = left("two");
    two.history.insert(0, "history of one".into());
    assert_eq!(out, two);
    // The second input's checkpoint holds the new status and what the first run left.
    let history = app.get_state_history(&cfg, None).await.unwrap();
    let input = &history[1];
    assert_eq!(input.source, Source::Input);
    assert_eq!(
        input.values,
        Kept {
            status: "two".into(),
            ..left("one")
        }
    );
}

#[tokio::test]
async fn a_step_that_writes_nothing_to_them_clears_them() {
    // `leave` fills them; `after` writes only `status`: its step clears the ephemeral, the
    // any-value and the per-step topic, and keeps the accumulating topic.
    let mut g = GraphBuilder::<Kept>::new();
    g.add_node("leave", leave);
    g.add_node("after", |_: &Kept| KeptUpdate::default().status("after".into()));
    g.add_edge(START, "leave")
        .add_edge("leave", "after")
        .add_edge("after", END);
    let app = g.with_checkpointer(MemorySaver::new()).compile().unwrap();
    let cfg = RunConfig::thread("t");
    app.invoke(KeptUpdate::default().status("one".into()), &cfg)
        .await
        .unwrap();
    let head = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(
        head.values,
        Kept {
            status: "after".into(),
            history: vec!["history of one".into()],
            ..Kept::default()
        }
    );
    let history = app.get_state_history(&cfg, None).await.unwrap();
    assert_eq!(history[1].values, left("one"));
}

#[tokio::test]
async fn a_new_input_that_cancels_a_paused_step_clears_them_as_a_bumping_step() {
    // LangGraph applies the cancelled tasks with the new input in one bumping step: the fields
    // that clear themselves are empty in the new input's checkpoint.
    let mut g = GraphBuilder::<Kept>::new();
    g.add_node("leave", leave);
    g.add_node("look", |_: &Kept| KeptUpdate::default());
    g.add_edge(START, "leave")
        .add_edge("leave", "look")
        .add_edge("look", END);
    g.interrupt_before("look");
    let app = g.with_checkpointer(MemorySaver::new()).compile().unwrap();
    let cfg = RunConfig::thread("t");
    let out = app.run(KeptUpdate::default().status("one".into()), &cfg).await.unwrap();
    assert!(out.is_paused());
    assert_eq!(app.get_state(&cfg).await.unwrap().unwrap().values, left("one"));
    app.run(KeptUpdate::default().status("two".into()), &cfg).await.unwrap();
    let history = app.get_state_history(&cfg, None).await.unwrap();
    let input = history.iter().find(|h| h.source == Source::Input).unwrap();
    assert_eq!(input.step, 2);
    assert_eq!(
        input.values,
        Kept {
            status: "one".into(),
            history: vec!["history of one".into()],
            ..Kept::default()
        }
    );
}
