//! Storage growth: a run that appends one item per step stores, per step, about the same bytes
//! at 10,000 items as at 1,000 — the append field's new items, not the whole list. And memory: a
//! run whose saver falls behind holds a bounded number of bytes of checkpoints, not every step's.

use crate::support::{thread, TempDir};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use weir::checkpoint::{
    CheckpointRecord, Checkpointer, Held, Loaded, MemorySaver, PendingWrite, SaverError, SqliteSaver, Usage,
};
use weir::prelude::*;
use weir::{NodeId, NodeRef};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Grow {
    #[reducer(append)]
    items: Vec<u64>,
    /// Where the loop stops.
    target: u64,
}

/// Makes `node` the whole graph: run from the start, then again while `more` holds.
fn repeat<S: State>(g: &mut GraphBuilder<S>, node: NodeId, more: impl Fn(&S) -> bool + Send + Sync + 'static) {
    g.add_edge(START, node);
    g.add_router(
        node,
        move |s: &S| if more(s) { Goto::from(node) } else { Goto::End },
        [NodeRef::from(node), NodeRef::End],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_bytes_per_step_stay_flat_while_an_append_field_grows_to_10000_items() {
    let dir = TempDir::new("growth");
    let saver: Arc<dyn Checkpointer> = Arc::new(SqliteSaver::open(dir.path().join("growth.db")).unwrap());
    let mut g = GraphBuilder::<Grow>::new();
    let add = g.add_node("add", |s: &Grow| {
        GrowUpdate::default().items(vec![s.items.len() as u64])
    });
    repeat(&mut g, add.id(), |s: &Grow| (s.items.len() as u64) < s.target);
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

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Pages {
    /// A large value rewritten every step.
    page: String,
    steps: u64,
}

/// A saver whose puts wait until the test opens its gate; a `MemorySaver` stores them, or, when
/// `fails`, refuses them (a head that moved). It stores nothing in place (it cannot: that
/// fast path is the runtime's own): a run hands its checkpoints to a background writer, as with SQLite.
#[derive(Debug)]
struct Gated {
    inner: MemorySaver,
    gate: tokio::sync::watch::Receiver<bool>,
    fails: bool,
}

impl Checkpointer for Gated {
    fn put_many<'a>(
        &'a self,
        records: Vec<CheckpointRecord>,
        expected: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        Box::pin(async move {
            let _ = self.gate.clone().wait_for(|open| *open).await;
            let expected = if self.fails { Some("moved-elsewhere") } else { expected };
            self.inner.put_many(records, expected).await
        })
    }
    fn get<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<Loaded>, SaverError>> {
        self.inner.get(thread_id, ns, id)
    }
    fn head<'a>(&'a self, thread_id: &'a str, ns: &'a str) -> BoxFuture<'a, Result<Option<String>, SaverError>> {
        self.inner.head(thread_id, ns)
    }
    fn list<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        before: Option<&'a str>,
        limit: Option<usize>,
    ) -> BoxFuture<'a, Result<Vec<CheckpointRecord>, SaverError>> {
        self.inner.list(thread_id, ns, before, limit)
    }
    fn put_writes<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        checkpoint_id: &'a str,
        task_id: &'a str,
        writes: Vec<PendingWrite>,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        self.inner.put_writes(thread_id, ns, checkpoint_id, task_id, writes)
    }
    fn delete_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<(), SaverError>> {
        self.inner.delete_thread(thread_id)
    }
    fn namespaces<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Vec<String>, SaverError>> {
        self.inner.namespaces(thread_id)
    }
    fn threads(&self) -> BoxFuture<'_, Result<Vec<String>, SaverError>> {
        self.inner.threads()
    }
    fn usage<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Usage, SaverError>> {
        self.inner.usage(thread_id)
    }
}

/// A run of [`PAGES_STEPS`] steps that each rewrite an 8 MB page, on a [`Gated`] saver: the
/// run's task, the gate's handle, the saver, and the count of steps run.
fn run_pages(
    fails: bool,
) -> (
    RunPages,
    tokio::sync::watch::Sender<bool>,
    Arc<Gated>,
    Arc<AtomicUsize>,
    String,
) {
    const PAGE: usize = 8 << 20;
    let (open, gate) = tokio::sync::watch::channel(false);
    let saver = Arc::new(Gated {
        inner: MemorySaver::new(),
        gate,
        fails,
    });
    let ran = Arc::new(AtomicUsize::new(0));
    let mut g = GraphBuilder::<Pages>::new();
    let counted = ran.clone();
    let write = g.add_node("write", move |s: &Pages| {
        counted.fetch_add(1, Ordering::SeqCst);
        let letter = char::from(b'a' + (s.steps % 26) as u8);
        PagesUpdate::default()
            .page(letter.to_string().repeat(PAGE))
            .steps(s.steps + 1)
    });
    repeat(&mut g, write.id(), |s: &Pages| s.steps < PAGES_STEPS);
    g.set_checkpointer(saver.clone());
    let app = g.compile().unwrap();
    let id = thread("stuck");
    let cfg = RunConfig::thread(id.clone());
    let run = tokio::spawn(async move { app.invoke(PagesUpdate::default(), &cfg).await });
    (run, open, saver, ran, id)
}

const PAGES_STEPS: u64 = 12;

type RunPages = tokio::task::JoinHandle<Result<Pages, weir::Error>>;

/// Waits until the run has stopped running steps; how many it ran.
async fn stalled(ran: &AtomicUsize) -> usize {
    let mut seen = usize::MAX;
    while ran.load(Ordering::SeqCst) != seen {
        seen = ran.load(Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_saver_is_stuck_stops_once_its_queued_checkpoints_reach_the_byte_bound() {
    const STEPS: u64 = PAGES_STEPS;
    let (run, open, saver, ran, id) = run_pages(false);
    // The writer's queue holds 32 MB of checkpoints: three of 8 MB and the put under way (the
    // input's, small), then the fourth step's waits. Counted in checkpoints alone (1,024), every
    // step would have run.
    let seen = stalled(&ran).await;
    assert!(
        (1..=5).contains(&seen),
        "{seen} steps of {STEPS} ran while the saver stored nothing"
    );
    assert!(!run.is_finished());

    open.send(true).unwrap();
    let out = run.await.unwrap().unwrap();
    assert_eq!(out.steps, STEPS);
    assert_eq!(ran.load(Ordering::SeqCst), STEPS as usize);
    // Every step's checkpoint was stored, in order: the input, the start, then one per step.
    let usage = saver.usage(&id).await.unwrap();
    assert_eq!(usage.checkpoints, STEPS + 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_waiting_for_room_in_the_queue_fails_with_the_saver_error_when_a_put_fails() {
    let (run, open, _saver, ran, id) = run_pages(true);
    let seen = stalled(&ran).await;
    assert!(
        (1..=5).contains(&seen),
        "{seen} steps ran while the saver stored nothing"
    );
    // The put under way fails: the writer stops, and the step waiting for room gets its error
    // instead of waiting for bytes that will not be given back.
    open.send(true).unwrap();
    let err = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the run ends")
        .unwrap()
        .unwrap_err();
    assert!(err.to_string().contains(&id), "{err}");
    assert!(ran.load(Ordering::SeqCst) < PAGES_STEPS as usize);
}

/// A saver that keeps what each `get_holding` of the saver it wraps asked and returned.
#[derive(Debug)]
struct Reads {
    inner: Arc<dyn Checkpointer>,
    /// Per read: the blobs held, the links returned for `items`, and whether they continue.
    seen: std::sync::Mutex<Vec<(Vec<Held>, usize, bool)>>,
}

impl Reads {
    fn last(&self) -> (Vec<Held>, usize, bool) {
        self.seen.lock().unwrap().last().cloned().expect("a read")
    }
}

impl Checkpointer for Reads {
    fn put_many<'a>(
        &'a self,
        records: Vec<CheckpointRecord>,
        expected: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        self.inner.put_many(records, expected)
    }
    fn get<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<Loaded>, SaverError>> {
        self.inner.get(thread_id, ns, id)
    }
    fn get_holding<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        id: Option<&'a str>,
        held: &'a [Held],
    ) -> BoxFuture<'a, Result<Option<Loaded>, SaverError>> {
        Box::pin(async move {
            let loaded = self.inner.get_holding(thread_id, ns, id, held).await?;
            if let Some(l) = &loaded {
                let links = l
                    .values
                    .iter()
                    .find(|(c, _)| c == "items")
                    .map_or(0, |(_, chain)| chain.len());
                let continued = l.continued.iter().any(|c| c == "items");
                self.seen.lock().unwrap().push((held.to_vec(), links, continued));
            }
            Ok(loaded)
        })
    }
    fn head<'a>(&'a self, thread_id: &'a str, ns: &'a str) -> BoxFuture<'a, Result<Option<String>, SaverError>> {
        self.inner.head(thread_id, ns)
    }
    fn list<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        before: Option<&'a str>,
        limit: Option<usize>,
    ) -> BoxFuture<'a, Result<Vec<CheckpointRecord>, SaverError>> {
        self.inner.list(thread_id, ns, before, limit)
    }
    fn put_writes<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        checkpoint_id: &'a str,
        task_id: &'a str,
        writes: Vec<PendingWrite>,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        self.inner.put_writes(thread_id, ns, checkpoint_id, task_id, writes)
    }
    fn delete_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<(), SaverError>> {
        self.inner.delete_thread(thread_id)
    }
    fn namespaces<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Vec<String>, SaverError>> {
        self.inner.namespaces(thread_id)
    }
    fn threads(&self) -> BoxFuture<'_, Result<Vec<String>, SaverError>> {
        self.inner.threads()
    }
    fn usage<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Usage, SaverError>> {
        self.inner.usage(thread_id)
    }
}

/// A run going on from its thread's head reads back only what the runs since the graph's last
/// read added: the graph holds the values it read, names their blobs to the saver
/// (`get_holding`), and decodes the one link returned, whatever the thread's length. A run on
/// another thread in between, or from an older checkpoint, reads whole chains; every read gives
/// the state a fresh graph reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_on_a_long_thread_reads_only_the_links_its_head_gained() {
    let dir = TempDir::new("holding");
    let savers: [Arc<dyn Checkpointer>; 2] = [
        Arc::new(MemorySaver::new()),
        Arc::new(SqliteSaver::open(dir.path().join("holding.db")).unwrap()),
    ];
    for inner in savers {
        let name = if format!("{inner:?}").starts_with("Memory") {
            "memory"
        } else {
            "sqlite"
        };
        let reads = Arc::new(Reads {
            inner,
            seen: Default::default(),
        });
        let graph = || {
            let mut g = GraphBuilder::<Grow>::new();
            g.add_node("add", |s: &Grow| {
                GrowUpdate::default().items(vec![s.items.len() as u64])
            });
            g.add_edge(START, "add").add_edge("add", END);
            g.set_checkpointer(reads.clone());
            g.compile().unwrap()
        };
        let app = graph();
        let (a, b) = (RunConfig::thread(thread("held-a")), RunConfig::thread(thread("held-b")));
        let mut continued_reads = 0;
        for n in 1..=300u64 {
            let out = app.invoke(GrowUpdate::default(), &a).await.unwrap();
            assert_eq!(out.items, (0..n).collect::<Vec<_>>(), "{name}");
            if n >= 3 {
                // The input checkpoint left `items` as it was; the head gained one link: a
                // delta onto the blob held, or, when the deltas came to outweigh their base,
                // the list written whole.
                let (held, links, continued) = reads.last();
                assert!(
                    held.iter().any(|h| &*h.channel == "items"),
                    "{name}: run {n} held {held:?}"
                );
                assert_eq!(links, 1, "{name}: run {n}");
                continued_reads += usize::from(continued);
            }
        }
        // The base doubles at each rewrite: a handful of the 298 reads were of a new base.
        assert!(
            continued_reads >= 285,
            "{name}: {continued_reads} of 298 reads continued"
        );
        // Another thread's run: the graph then holds that thread's values, not these.
        app.invoke(GrowUpdate::default(), &b).await.unwrap();
        let out = app.invoke(GrowUpdate::default(), &a).await.unwrap();
        assert_eq!(out.items.len(), 301, "{name}");
        let (held, links, continued) = reads.last();
        assert!(held.is_empty() && !continued && links > 1, "{name}: {held:?} {links}");
        // From a checkpoint 100 runs back: the chain there does not pass through the blob held.
        let history = app.get_state_history(&a, None).await.unwrap();
        let old = history.iter().find(|s| s.values.items.len() == 201).unwrap();
        let from_old = a.clone().checkpoint_id(old.checkpoint_id.clone());
        let out = app.invoke(GrowUpdate::default(), &from_old).await.unwrap();
        assert_eq!(out.items, (0..202).collect::<Vec<_>>(), "{name}");
        assert!(!reads.last().2, "{name}");
        // Going on from the fork's head holds the fork's values again.
        let out = app.invoke(GrowUpdate::default(), &a).await.unwrap();
        assert_eq!(out.items, (0..203).collect::<Vec<_>>(), "{name}");
        assert_eq!(reads.last().1, 1, "{name}");
        let fresh = graph().get_state(&a).await.unwrap().unwrap();
        assert_eq!(fresh.values.items, out.items, "{name}");
    }
}
