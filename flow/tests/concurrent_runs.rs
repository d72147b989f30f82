//! Two runs of one loaded flow at once: each streams its own events, to the end.

use serde_json::{json, Value};
use std::sync::Arc;
use tokio::sync::Notify;
use weir_flow::{Event, Flow, NodeImpl, Registry};

/// `gate` writes `seen: who`; the run whose `who` is `slow` first waits for `release`.
fn registry(release: Arc<Notify>) -> Registry {
    let mut r = Registry::new();
    r.register("gate", move |_: Value| {
        let release = release.clone();
        Ok(NodeImpl::future(move |state| {
            let release = release.clone();
            async move {
                let who = state["who"].clone();
                if who == "slow" {
                    release.notified().await;
                }
                Ok([("seen".to_owned(), who)].into_iter().collect())
            }
        })
        .writes(["seen"]))
    });
    r
}

const FLOW: &str = r#"{
  "nodes": [
    {"id": "start", "type": "start"},
    {"id": "gate", "type": "gate"},
    {"id": "after", "type": "set", "data": {"assign": {"done": "{{ who }}"}}},
    {"id": "end", "type": "end"}
  ],
  "edges": [
    {"id": "e1", "source": "start", "target": "gate"},
    {"id": "e2", "source": "gate", "target": "after"},
    {"id": "e3", "source": "after", "target": "end"}
  ],
  "state": {"who": {"type": "string"}, "seen": {"type": "string"}, "done": {"type": "string"}}
}"#;

/// The events of a run, as `(node, step, writes)`.
fn trace(events: &[Event]) -> Vec<(String, i64, Value)> {
    events
        .iter()
        .map(|e| match e {
            Event::Node { node, step, writes } => (node.clone(), *step, Value::Object(writes.clone())),
            other => panic!("unexpected event {other:?}"),
        })
        .collect()
}

fn expected(who: &str) -> Vec<(String, i64, Value)> {
    vec![
        ("start".to_owned(), 1, json!({})),
        ("gate".to_owned(), 2, json!({"seen": who})),
        ("after".to_owned(), 3, json!({"done": who})),
        ("end".to_owned(), 4, json!({})),
    ]
}

#[tokio::test]
async fn concurrent_runs_of_one_flow_each_see_only_their_own_events_to_the_end() {
    let release = Arc::new(Notify::new());
    let flow = Flow::from_json(FLOW, &registry(release.clone())).unwrap();
    let (mut slow_events, mut fast_events) = (Vec::new(), Vec::new());
    // The slow run waits in `gate` until the fast run has finished: its last events come after
    // the other run is over.
    let slow = flow.run(json!({"who": "slow"}), None, |e| slow_events.push(e));
    let fast = async {
        let out = flow.run(json!({"who": "fast"}), None, |e| fast_events.push(e)).await;
        release.notify_one();
        out
    };
    let (slow, fast) = tokio::join!(slow, fast);
    assert_eq!(slow.unwrap().state().get("done"), Some(&json!("slow")));
    assert_eq!(fast.unwrap().state().get("done"), Some(&json!("fast")));
    assert_eq!(trace(&fast_events), expected("fast"));
    assert_eq!(trace(&slow_events), expected("slow"));
}
