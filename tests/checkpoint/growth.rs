//! Storage growth: a run that appends one item per step stores, per step, about the same bytes
//! at 10,000 items as at 1,000 — the append field's new items, not the whole list.

use crate::support::{thread, TempDir};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Instant;
use weir::checkpoint::{Checkpointer, SqliteSaver};
use weir::prelude::*;
use weir::NodeRef;

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Grow {
    #[reducer(append)]
    items: Vec<u64>,
    /// Where the loop stops.
    target: u64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_bytes_per_step_stay_flat_while_an_append_field_grows_to_10000_items() {
    let dir = TempDir::new("growth");
    let saver: Arc<dyn Checkpointer> = Arc::new(SqliteSaver::open(dir.path().join("growth.db")).unwrap());
    let mut g = GraphBuilder::<Grow>::new();
    let add = g.add_node("add", |s: &Grow| {
        GrowUpdate::default().items(vec![s.items.len() as u64])
    });
    let again = add.id();
    g.add_edge(START, &add);
    g.add_router(
        &add,
        move |s: &Grow| {
            if (s.items.len() as u64) < s.target {
                Goto::from(again)
            } else {
                Goto::End
            }
        },
        [NodeRef::from(again), NodeRef::End],
    );
    g.set_checkpointer(saver.clone());
    let app = g.compile().unwrap();
    let id = thread("growth");
    let cfg = RunConfig::thread(id.clone()).recursion_limit(10_000);

    // Three runs of the thread: to 1,000 items, to 9,000, to 10,000.
    let mut bytes = Vec::new();
    let started = Instant::now();
    for target in [1_000u64, 9_000, 10_000] {
        let out = app.invoke(GrowUpdate::default().target(target), &cfg).await.unwrap();
        assert_eq!(out.items.len() as u64, target);
        bytes.push(saver.usage(&id).await.unwrap().blob_bytes);
    }
    let elapsed = started.elapsed();
    let first = bytes[0];
    let last = bytes[2] - bytes[1];
    let usage = saver.usage(&id).await.unwrap();
    println!(
        "append field to 10,000 items on SQLite in {elapsed:.1?}: {} checkpoints, {} blobs, {} blob bytes; \
         first 1,000 steps stored {first} bytes ({:.1} per step), last 1,000 steps {last} bytes ({:.1} per step)",
        usage.checkpoints,
        usage.blobs,
        usage.blob_bytes,
        first as f64 / 1000.0,
        last as f64 / 1000.0,
    );
    // Linear, not quadratic: storing the whole list each step would make the last 1,000 steps
    // cost about 19 times the first 1,000 (mean length 9,500 against 500).
    assert!(
        last <= first * 2,
        "first 1,000 steps: {first} bytes, last 1,000: {last} bytes"
    );
    // And the state still loads whole.
    let st = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(st.values.items, (0..10_000).collect::<Vec<u64>>());
}
