//! What a failed run reports: the same error, with its kind, whether the run was streamed or
//! not; the node's error first when settling the run fails too; a cache outage that keeps the
//! writes of the tasks that succeeded; stored answers that do not decode; runs outside tokio and
//! unbounded recursion limits.

use futures::future::BoxFuture;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use weir::cache::NodeCache;
use weir::checkpoint::{CheckpointRecord, Checkpointer, Loaded, MemorySaver, PendingWrite, SaverError, Usage};
use weir::prelude::*;
use weir::{CachePolicy, StreamMode};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct S {
    #[reducer(append)]
    log: Vec<String>,
    #[reducer(add)]
    n: i64,
}

fn failing_node(g: &mut GraphBuilder<S>, name: &str) {
    g.add_node(name, |_: &S| -> Result<SUpdate, std::io::Error> {
        Err(std::io::Error::other("nope"))
    });
}

#[tokio::test]
async fn a_streamed_run_ends_with_the_nodes_own_error_and_its_predicates() {
    let mut g = GraphBuilder::<S>::new();
    failing_node(&mut g, "bad");
    g.add_edge(START, "bad");
    let app = g.compile().unwrap();
    let stream = app.stream(S::default(), &RunConfig::default(), StreamMode::VALUES);
    let items: Vec<_> = stream.collect().await;
    let last = items.last().unwrap().as_ref().unwrap_err();
    assert_eq!(last.node_name(), Some("bad"));
    assert_eq!(last.step(), Some(1));
    assert!(last.is_node_error(), "{last}");
    assert_eq!(
        std::error::Error::source(last).map(|s| s.to_string()),
        Some("nope".to_owned()),
        "the node's error is still the source"
    );
}

#[tokio::test]
async fn a_streamed_run_out_of_steps_ends_with_a_recursion_limit_error() {
    let mut g = GraphBuilder::<S>::new();
    let tick = g.add_node("tick", |_: &S| SUpdate::default().n(1)).id();
    g.add_edge(START, tick);
    g.add_router(tick, move |_: &S| Goto::Node(tick), [tick.into(), END]);
    let app = g.compile().unwrap();
    let cfg = RunConfig::default().recursion_limit(3);
    let mut stream = app.stream(S::default(), &cfg, StreamMode::VALUES);
    let mut last = None;
    while let Some(item) = stream.next().await {
        last = Some(item);
    }
    let err = last.unwrap().unwrap_err();
    assert!(err.is_recursion_limit(), "{err}");
    let outcome = app.stream(S::default(), &cfg, StreamMode::VALUES).outcome().await;
    assert!(
        outcome.unwrap_err().is_recursion_limit(),
        "the outcome is the same error"
    );
}

/// A saver that stores everything but a step's pending writes.
#[derive(Debug, Clone, Default)]
struct NoPendingWrites(MemorySaver);

impl Checkpointer for NoPendingWrites {
    fn put_many<'a>(
        &'a self,
        records: Vec<CheckpointRecord>,
        expected: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        self.0.put_many(records, expected)
    }
    fn get<'a>(
        &'a self,
        thread: &'a str,
        ns: &'a str,
        id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<Loaded>, SaverError>> {
        self.0.get(thread, ns, id)
    }
    fn head<'a>(&'a self, thread: &'a str, ns: &'a str) -> BoxFuture<'a, Result<Option<String>, SaverError>> {
        self.0.head(thread, ns)
    }
    fn list<'a>(
        &'a self,
        thread: &'a str,
        ns: &'a str,
        before: Option<&'a str>,
        limit: Option<usize>,
    ) -> BoxFuture<'a, Result<Vec<CheckpointRecord>, SaverError>> {
        self.0.list(thread, ns, before, limit)
    }
    fn put_writes<'a>(
        &'a self,
        thread: &'a str,
        ns: &'a str,
        _checkpoint: &'a str,
        task: &'a str,
        writes: Vec<PendingWrite>,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        // The saver's own refusal: no such checkpoint.
        self.0.put_writes(thread, ns, "no-such-checkpoint", task, writes)
    }
    fn delete_thread<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<(), SaverError>> {
        self.0.delete_thread(thread)
    }
    fn namespaces<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Vec<String>, SaverError>> {
        self.0.namespaces(thread_id)
    }
    fn threads(&self) -> BoxFuture<'_, Result<Vec<String>, SaverError>> {
        self.0.threads()
    }
    fn usage<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<Usage, SaverError>> {
        self.0.usage(thread)
    }
}

#[tokio::test]
async fn a_saver_failing_while_the_run_settles_is_attached_to_the_nodes_error() {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("ok", |_: &S| SUpdate::default().n(1));
    failing_node(&mut g, "bad");
    g.add_edge(START, "ok").add_edge(START, "bad");
    let app = g.with_checkpointer(NoPendingWrites::default()).compile().unwrap();
    let err = app.invoke(S::default(), &RunConfig::thread("t")).await.unwrap_err();
    assert_eq!(err.node_name(), Some("bad"), "{err}");
    assert!(err.is_node_error(), "{err}");
    let later = err.secondary().expect("the settling failure is attached");
    assert!(later.is_checkpoint(), "{later}");
    assert_eq!(later.thread(), Some("t"));
    assert!(
        err.to_string()
            .starts_with("node `bad` failed at step 1: nope; then, settling the run: checkpoint of thread `t`"),
        "{err}"
    );
}

/// A cache that finds nothing and cannot store.
#[derive(Debug)]
struct DownCache;

impl NodeCache for DownCache {
    fn get<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, weir::BoxError>> {
        Box::pin(async { Ok(None) })
    }
    fn put<'a>(
        &'a self,
        _: &'a str,
        _: Vec<u8>,
        _: Option<std::time::Duration>,
    ) -> BoxFuture<'a, Result<(), weir::BoxError>> {
        Box::pin(async { Err("cache down".into()) })
    }
}

#[tokio::test]
async fn a_cache_outage_fails_the_step_and_a_resume_does_not_run_its_siblings_again() {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut g = GraphBuilder::<S>::new();
    let cached = g
        .add_node("cached", |_: &S| SUpdate::default().log(vec!["cached".into()]))
        .id();
    let counted = runs.clone();
    g.add_node("sibling", move |_: &S| {
        counted.fetch_add(1, Ordering::SeqCst);
        SUpdate::default().log(vec!["sibling".into()])
    });
    g.add_edge(START, cached).add_edge(START, "sibling");
    g.cache(cached, CachePolicy::new(|_: &S| "key".to_owned()));
    let app = g
        .with_cache(DownCache)
        .with_checkpointer(MemorySaver::new())
        .compile()
        .unwrap();
    let cfg = RunConfig::thread("cache");
    let err = app.invoke(S::default(), &cfg).await.unwrap_err();
    assert!(err.is_cache(), "{err}");
    assert_eq!(err.node_name(), Some("cached"));
    assert_eq!(err.to_string(), "node cache of node `cached` at step 1: cache down");
    let out = app.resume(&cfg).await.unwrap();
    assert_eq!(out.state().log, ["cached", "sibling"]);
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the sibling's saved writes were taken, not run again"
    );
}

#[tokio::test]
async fn a_stored_question_that_does_not_decode_is_an_error_naming_the_thread_and_the_task() {
    let saver = MemorySaver::new();
    let mut g = GraphBuilder::<S>::new();
    g.add_node("ask", |_: &S, ctx: &Context| -> Result<SUpdate, weir::BoxError> {
        let answer: String = ctx.interrupt("name?")?;
        Ok(SUpdate::default().log(vec![answer]))
    });
    g.add_edge(START, "ask");
    let app = g.with_checkpointer(saver.clone()).compile().unwrap();
    let cfg = RunConfig::thread("q");
    let out = app.run(S::default(), &cfg).await.unwrap();
    assert!(out.is_paused());
    let at = app.get_state(&cfg).await.unwrap().unwrap().checkpoint_id;
    let garbled = PendingWrite {
        task_id: "pull:ask".into(),
        task_path: "pull:ask".into(),
        idx: 0,
        channel: "__interrupt__".into(),
        bytes: b"{not json".to_vec(),
    };
    saver.put_writes("q", "", &at, "pull:ask", vec![garbled]).await.unwrap();
    let err = app.get_state(&cfg).await.unwrap_err();
    assert!(err.is_checkpoint(), "{err}");
    assert_eq!(err.thread(), Some("q"));
    assert!(
        err.to_string()
            .contains("the saved question of task `pull:ask` does not decode"),
        "{err}"
    );
}

#[test]
fn a_run_outside_a_tokio_runtime_is_an_error_saying_so() {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("a", |_: &S| SUpdate::default().n(1));
    g.add_edge(START, "a");
    let app = g.compile().unwrap();
    let err = futures::executor::block_on(app.invoke(S::default(), &RunConfig::default())).unwrap_err();
    assert!(err.is_runtime(), "{err}");
    assert!(err.to_string().contains("tokio runtime"), "{err}");
}

#[tokio::test]
async fn a_recursion_limit_of_usize_max_is_no_limit_rather_than_a_wrapped_one() {
    let mut g = GraphBuilder::<S>::new();
    let tick = g.add_node("tick", |_: &S| SUpdate::default().n(1)).id();
    g.add_edge(START, tick);
    g.add_router(
        tick,
        move |s: &S| if s.n < 5 { Goto::Node(tick) } else { Goto::End },
        [tick.into(), END],
    );
    let app = g.compile().unwrap();
    let out = app
        .invoke(S::default(), &RunConfig::default().recursion_limit(usize::MAX))
        .await
        .unwrap();
    assert_eq!(out.n, 5);
    let saver = MemorySaver::new();
    let app = app.with_checkpointer(saver);
    let cfg = RunConfig::thread("t").recursion_limit(usize::MAX);
    assert_eq!(app.invoke(S::default(), &cfg).await.unwrap().n, 5);
    assert_eq!(
        app.invoke(SUpdate::default(), &cfg).await.unwrap().n,
        6,
        "one step more after a restore: the limit still holds no bound"
    );
}
