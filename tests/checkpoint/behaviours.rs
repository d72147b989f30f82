//! Behaviours of checkpointed runs beyond the conformance scenarios: bad resumes, time travel,
//! two runs of one thread at once, many threads at once, a head written by a process whose clock
//! runs ahead, and checkpoints of another state type.

use crate::support::thread;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;
use weir::checkpoint::{Checkpointer, Source};
use weir::prelude::*;
use weir::NodeRef;

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Steps {
    #[reducer(append)]
    steps: Vec<String>,
    count: u64,
}

/// START -> a -> b -> c -> END, each node appending its name.
fn chain(saver: &Arc<dyn Checkpointer>, pause: Duration) -> CompiledGraph<Steps> {
    let mut g = GraphBuilder::<Steps>::new();
    for n in ["a", "b", "c"] {
        g.add_node(n, move |_: &Steps, ctx: &Context| {
            let name = ctx.node().to_owned();
            async move {
                tokio::time::sleep(pause).await;
                StepsUpdate::default().steps(vec![name])
            }
        });
    }
    g.add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", "c")
        .add_edge("c", END);
    g.set_checkpointer(saver.clone());
    g.compile().unwrap()
}

pub async fn resume_with_nothing_to_resume_is_a_bad_resume(saver: Arc<dyn Checkpointer>) {
    let app = chain(&saver, Duration::ZERO);
    // A thread that never ran.
    let cfg = RunConfig::thread(thread("never"));
    let err = app.resume(&cfg).await.unwrap_err();
    assert!(err.is_bad_resume(), "{err}");
    assert_eq!(err.thread(), cfg.thread_id.as_deref());
    let err = app.resume_with(true, &cfg).await.unwrap_err();
    assert!(err.is_bad_resume(), "{err}");
    // A thread that is done: nothing is paused.
    let cfg = RunConfig::thread(thread("done"));
    app.invoke(StepsUpdate::default(), &cfg).await.unwrap();
    let err = app.resume_with(true, &cfg).await.unwrap_err();
    assert!(err.is_bad_resume(), "{err}");
    let message = err.to_string();
    assert!(message.contains(cfg.thread_id.as_deref().unwrap()), "{message}");
    assert!(message.contains("no paused node"), "{message}");
    let err = app.resume_task("pull:a", true, &cfg).await.unwrap_err();
    assert!(err.is_bad_resume(), "{err}");
    assert!(err.to_string().contains("pull:a"), "{err}");
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Approval {
    approved_by: String,
    level: u32,
}

pub async fn an_answer_of_the_wrong_type_fails_the_node_naming_it_and_the_type(saver: Arc<dyn Checkpointer>) {
    let mut g = GraphBuilder::<Approval>::new();
    g.add_node(
        "ask_level",
        |_: &Approval, ctx: &Context| -> Result<ApprovalUpdate, BoxError> {
            let level: u32 = ctx.interrupt("which level?")?;
            Ok(ApprovalUpdate::default().level(level))
        },
    );
    g.add_edge(START, "ask_level").add_edge("ask_level", END);
    g.set_checkpointer(saver.clone());
    let app = g.compile().unwrap();
    let cfg = RunConfig::thread(thread("wrong-type"));
    let out = app.run(ApprovalUpdate::default(), &cfg).await.unwrap();
    assert!(out.is_paused());
    let err = app.resume_with("three", &cfg).await.unwrap_err();
    assert!(err.is_bad_resume(), "{err}");
    assert_eq!(err.node_name(), Some("ask_level"));
    let message = err.to_string();
    assert!(message.contains("`ask_level`"), "{message}");
    assert!(message.contains("`u32`"), "{message}");
    // The question is still open: the right answer finishes the run.
    let out = app.resume_with(3u32, &cfg).await.unwrap();
    assert!(!out.is_paused());
    assert_eq!(out.state().level, 3);
}

pub async fn time_travel_from_a_past_checkpoint_forks_there(saver: Arc<dyn Checkpointer>) {
    let app = chain(&saver, Duration::ZERO);
    let cfg = RunConfig::thread(thread("travel"));
    app.invoke(StepsUpdate::default(), &cfg).await.unwrap();
    let history = app.get_state_history(&cfg, None).await.unwrap();
    assert_eq!(history.len(), 5);
    // The checkpoint after `a` ran: `b` is next.
    let past = history.iter().find(|s| s.next == ["b"]).unwrap().clone();
    assert_eq!(past.values.steps, ["a"]);
    let out = app
        .resume(&cfg.clone().checkpoint_id(past.checkpoint_id.clone()))
        .await
        .unwrap();
    assert_eq!(out.state().steps, ["a", "b", "c"]);
    let history = app.get_state_history(&cfg, None).await.unwrap();
    // Newest first: c, b (of the fork), the fork itself, then the first run's five.
    assert_eq!(history.len(), 8);
    let fork = &history[2];
    assert_eq!(fork.source, Source::Fork);
    assert_eq!(fork.parent_id.as_deref(), Some(past.checkpoint_id.as_str()));
    assert_eq!(fork.values.steps, ["a"]);
    assert_eq!(fork.next, ["b"]);
    assert_eq!(history[1].parent_id.as_deref(), Some(fork.checkpoint_id.as_str()));
    // The thread's head is now the fork's end.
    let head = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(head.checkpoint_id, history[0].checkpoint_id);
    assert_eq!(head.values.steps, ["a", "b", "c"]);
}

/// Another process, whose clock runs an hour ahead of this one's, wrote the thread's head: the
/// next run's checkpoints still get greater ids (savers refuse a record not newer than the head
/// it follows), so the run goes on from that head.
pub async fn a_head_written_by_a_process_with_a_clock_ahead_is_followed(saver: Arc<dyn Checkpointer>) {
    let app = chain(&saver, Duration::ZERO);
    let cfg = RunConfig::thread(thread("ahead"));
    app.invoke(StepsUpdate::default(), &cfg).await.unwrap();
    let thread_id = cfg.thread_id.clone().unwrap();
    let head = saver.get(&thread_id, "", None).await.unwrap().unwrap().record;
    let hour_ahead = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
        + 3_600_000_000;
    let mut theirs = head.clone();
    theirs.id = format!("{hour_ahead:016x}{:016x}", 7).into();
    theirs.parent_id = Some(head.id.clone());
    theirs.source = Source::Update;
    saver.put(theirs.clone(), Some(&head.id)).await.unwrap();

    let out = app.invoke(StepsUpdate::default(), &cfg).await.unwrap();
    assert_eq!(out.steps, ["a", "b", "c", "a", "b", "c"]);
    let history = app.get_state_history(&cfg, None).await.unwrap();
    let after: Vec<_> = history.iter().take_while(|s| *s.checkpoint_id != *theirs.id).collect();
    assert_eq!(
        after.len(),
        5,
        "the second run's checkpoints come after the head it followed"
    );
    assert!(after.iter().all(|s| *s.checkpoint_id > *theirs.id));
}

pub async fn two_runs_of_one_thread_at_once_one_proceeds_the_other_conflicts(saver: Arc<dyn Checkpointer>) {
    let app = chain(&saver, Duration::from_millis(30));
    let id = thread("contended");
    let cfg = RunConfig::thread(id.clone());
    app.invoke(StepsUpdate::default(), &cfg).await.unwrap();
    // Each run writes a new input on the same head, then its nodes take a while: whichever way
    // they interleave, one finds the head moved by the other.
    let runs = (0..2).map(|_| {
        let (app, cfg) = (app.clone(), cfg.clone());
        tokio::spawn(async move { app.invoke(StepsUpdate::default(), &cfg).await })
    });
    let results: Vec<_> = futures::future::join_all(runs)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let (ok, failed): (Vec<_>, Vec<_>) = results.into_iter().partition(Result::is_ok);
    assert_eq!((ok.len(), failed.len()), (1, 1), "{failed:?}");
    let err = failed.into_iter().next().unwrap().unwrap_err();
    assert!(err.is_conflict(), "{err}");
    assert_eq!(err.thread(), Some(id.as_str()));
    assert!(err.to_string().contains(&id), "{err}");
    assert_eq!(ok[0].as_ref().unwrap().steps, ["a", "b", "c", "a", "b", "c"]);
    // The history is one chain: every checkpoint's parent is the one before it.
    let records = saver.list(&id, "", None, None).await.unwrap();
    for pair in records.windows(2) {
        assert_eq!(pair[0].parent_id.as_deref(), Some(&*pair[1].id));
    }
    let head = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(head.values.steps, ["a", "b", "c", "a", "b", "c"]);
}

pub async fn many_threads_run_concurrently_on_one_saver(saver: Arc<dyn Checkpointer>) {
    let app = chain(&saver, Duration::from_millis(1));
    let ids: Vec<String> = (0..40).map(|i| thread(&format!("many-{i}"))).collect();
    let runs = ids.iter().map(|id| {
        let (app, cfg) = (app.clone(), RunConfig::thread(id.clone()));
        tokio::spawn(async move { app.invoke(StepsUpdate::default(), &cfg).await })
    });
    for r in futures::future::join_all(runs).await {
        assert_eq!(r.unwrap().unwrap().steps, ["a", "b", "c"]);
    }
    for id in &ids {
        let records = saver.list(id, "", None, None).await.unwrap();
        let steps: Vec<i64> = records.iter().map(|r| r.step).collect();
        assert_eq!(steps, [3, 2, 1, 0, -1], "{id}");
        for pair in records.windows(2) {
            assert_eq!(pair[0].parent_id.as_deref(), Some(&*pair[1].id));
        }
    }
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Words {
    count: String,
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Numbers {
    count: u64,
}

pub async fn a_checkpoint_of_an_incompatible_state_fails_naming_the_field(saver: Arc<dyn Checkpointer>) {
    let id = thread("incompatible");
    let cfg = RunConfig::thread(id.clone());
    let mut g = GraphBuilder::<Words>::new();
    g.add_node("w", |_: &Words| WordsUpdate::default().count("many".into()));
    g.add_edge(START, "w").add_edge("w", END);
    g.set_checkpointer(saver.clone());
    g.compile().unwrap().invoke(WordsUpdate::default(), &cfg).await.unwrap();

    let mut g = GraphBuilder::<Numbers>::new();
    g.add_node("n", |s: &Numbers| NumbersUpdate::default().count(s.count + 1));
    g.add_edge(START, "n").add_edge("n", END);
    g.set_checkpointer(saver.clone());
    let app = g.compile().unwrap();
    for err in [
        app.get_state(&cfg).await.unwrap_err(),
        app.invoke(NumbersUpdate::default(), &cfg).await.unwrap_err(),
        app.resume(&cfg).await.unwrap_err(),
    ] {
        assert!(err.is_checkpoint(), "{err}");
        assert_eq!(err.thread(), Some(id.as_str()));
        assert!(err.to_string().contains("field `count`"), "{err}");
    }
    let loaded = saver.get(&id, "", None).await.unwrap().unwrap();
    let err = app.decode_checkpoint(loaded).unwrap_err();
    assert!(err.to_string().contains("field `count`"), "{err}");
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Tally {
    #[reducer(add)]
    n: i64,
}

pub async fn each_checkpoint_names_the_nodes_that_wrote_it_once(saver: Arc<dyn Checkpointer>) {
    let mut g = GraphBuilder::<Tally>::new();
    g.add_node("a", |_: &Tally| TallyUpdate::default().n(1));
    g.add_node("b", |_: &Tally| TallyUpdate::default().n(10));
    let worker = g.add_send_node("w", |k: &i64| TallyUpdate::default().n(*k * 100));
    g.add_edge(START, "a")
        .add_edge(START, "b")
        .add_edge("a", END)
        .add_edge("w", END);
    let w = worker.clone();
    g.add_router(
        "b",
        move |_: &Tally| (1..=3).map(|k| w.send(k)).collect::<Vec<_>>(),
        [&worker],
    );
    g.set_checkpointer(saver.clone());
    let app = g.compile().unwrap();
    let id = thread("writers");
    let cfg = RunConfig::thread(id.clone());
    assert_eq!(app.invoke(TallyUpdate::default(), &cfg).await.unwrap().n, 611);
    let mut records = saver.list(&id, "", None, None).await.unwrap();
    records.reverse();
    let writes: Vec<Vec<&str>> = records
        .iter()
        .map(|r| r.writes.iter().map(|w| &**w).collect())
        .collect();
    // The input, START, two nodes side by side, three tasks of one node.
    assert_eq!(writes, [vec![], vec!["__start__"], vec!["a", "b"], vec!["w"]]);
    let last = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(last.writes, ["w"]);
}

/// Each checkpoint's body records, per node, the version of each trigger the node last consumed:
/// for the node that ran in the step, the trigger's version in the checkpoint the step started
/// from; for the others, what the checkpoint before said. `a` and `b` take turns eight times, so
/// each node's entry changes again and again (the runtime rewrites only the entries that
/// changed since its last checkpoint).
pub async fn each_checkpoint_says_what_each_node_has_seen(saver: Arc<dyn Checkpointer>) {
    let mut g = GraphBuilder::<Tally>::new();
    let a = g.add_node("a", |_: &Tally| TallyUpdate::default().n(1));
    let b = g.add_node("b", |_: &Tally| TallyUpdate::default().n(1));
    g.add_edge(START, &a);
    g.add_router(&a, |_: &Tally| Goto::from("b"), [NodeRef::from(&b)]);
    g.add_router(
        &b,
        |s: &Tally| if s.n < 16 { Goto::from("a") } else { Goto::End },
        [NodeRef::from(&a), NodeRef::End],
    );
    g.set_checkpointer(saver.clone());
    let app = g.compile().unwrap();
    let id = thread("seen");
    let cfg = RunConfig::thread(id.clone());
    assert_eq!(app.invoke(TallyUpdate::default(), &cfg).await.unwrap().n, 16);
    let mut records = saver.list(&id, "", None, None).await.unwrap();
    records.reverse();
    assert_eq!(records.len(), 2 + 16, "the input, START, then a and b eight times each");
    let seen = |body: &[u8]| serde_json::from_slice::<serde_json::Value>(body).unwrap()["seen"].clone();
    for pair in records.windows(2) {
        let (parent, r) = (&pair[0], &pair[1]);
        let mut want = seen(&parent.body);
        for node in r.writes.iter() {
            let trigger = if &**node == "__start__" {
                "__start__".to_owned()
            } else {
                format!("branch:to:{node}")
            };
            let version = parent
                .channels
                .iter()
                .find(|c| *c.channel == *trigger)
                .map(|c| c.version);
            want[&**node] = serde_json::json!({ trigger: version.expect("the trigger has a version") });
        }
        assert_eq!(seen(&r.body), want, "checkpoint of step {}", r.step);
    }
}

// Found by the fuzz target: a body naming a field among its internal channels, and a step at
// the end of the range, made decoding panic (a subtraction and an addition that overflowed).
#[tokio::test]
async fn a_body_naming_a_field_as_an_internal_channel_or_a_step_out_of_range_is_an_error() {
    let saver: Arc<dyn Checkpointer> = Arc::new(weir::checkpoint::MemorySaver::new());
    let app = chain(&saver, Duration::ZERO);
    let id = thread("fuzzed");
    app.invoke(StepsUpdate::default(), &RunConfig::thread(id.clone()))
        .await
        .unwrap();
    let loaded = saver.get(&id, "", None).await.unwrap().unwrap();

    let mut bad = loaded.clone();
    let mut body: serde_json::Value = serde_json::from_slice(&bad.record.body).unwrap();
    body["controls"]["steps"] = serde_json::Value::Bool(true);
    bad.record.body = serde_json::to_vec(&body).unwrap();
    let err = app.decode_checkpoint(bad).unwrap_err();
    assert!(err.to_string().contains("field `steps`"), "{err}");

    let mut bad = loaded;
    bad.record.step = i64::MAX;
    let err = app.decode_checkpoint(bad).unwrap_err();
    assert!(err.to_string().contains("out of range"), "{err}");
}

/// A join that has seen one of its two branches when the run pauses keeps, in the checkpoint,
/// the branch it saw, by name (a deferred join also whether the run was finishing); resuming
/// runs the joined node once, after the other branch. `START -> a`, `START -> b -> c`,
/// `join(a, c) -> j`, paused after `b`.
pub async fn a_half_seen_join_is_saved_by_name_and_resumed(saver: Arc<dyn Checkpointer>) {
    for deferred in [false, true] {
        let mut g = GraphBuilder::<Steps>::new();
        let mut j = None;
        for n in ["a", "b", "c", "j"] {
            let node = g.add_node(n, move |_: &Steps| StepsUpdate::default().steps(vec![n.to_owned()]));
            j = Some(node);
        }
        let j = j.expect("four nodes");
        g.add_edge(START, "a")
            .add_edge(START, "b")
            .add_edge("b", "c")
            .add_join(["a", "c"], &j)
            .add_edge(&j, END);
        if deferred {
            g.defer(&j);
        }
        g.interrupt_after("b");
        g.set_checkpointer(saver.clone());
        let app = g.compile().unwrap();
        let id = thread(if deferred { "half-join-deferred" } else { "half-join" });
        let cfg = RunConfig::thread(id.clone());
        let out = app.run(StepsUpdate::default(), &cfg).await.unwrap();
        assert!(out.is_paused());
        assert_eq!(out.state().steps, ["a", "b"]);

        let loaded = saver.get(&id, "", None).await.unwrap().unwrap();
        let body: serde_json::Value = serde_json::from_slice(&loaded.record.body).unwrap();
        let want = if deferred {
            serde_json::json!([["a"], false])
        } else {
            serde_json::json!(["a"])
        };
        assert_eq!(body["controls"]["join:a+c:j"], want, "{body}");

        let out = app.resume(&cfg).await.unwrap();
        assert!(!out.is_paused());
        assert_eq!(out.state().steps, ["a", "b", "c", "j"]);
    }
}

/// A saver that counts the reads asked of the saver it wraps.
#[derive(Debug)]
struct Counting {
    inner: Arc<dyn Checkpointer>,
    /// `get`, `head`, `list`, `history`.
    reads: [std::sync::atomic::AtomicUsize; 4],
}

impl Counting {
    fn count(&self, read: usize) {
        self.reads[read].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    /// The reads since the last call, as `[get, head, list, history]`.
    fn take(&self) -> [usize; 4] {
        self.reads
            .each_ref()
            .map(|n| n.swap(0, std::sync::atomic::Ordering::Relaxed))
    }
}

impl Checkpointer for Counting {
    fn put_many<'a>(
        &'a self,
        records: Vec<weir::checkpoint::CheckpointRecord>,
        expected: Option<&'a str>,
    ) -> futures::future::BoxFuture<'a, Result<(), weir::checkpoint::SaverError>> {
        self.inner.put_many(records, expected)
    }
    fn get<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        id: Option<&'a str>,
    ) -> futures::future::BoxFuture<'a, Result<Option<weir::checkpoint::Loaded>, weir::checkpoint::SaverError>> {
        self.count(0);
        self.inner.get(thread_id, ns, id)
    }
    fn head<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<Option<String>, weir::checkpoint::SaverError>> {
        self.count(1);
        self.inner.head(thread_id, ns)
    }
    fn list<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        before: Option<&'a str>,
        limit: Option<usize>,
    ) -> futures::future::BoxFuture<'a, Result<Vec<weir::checkpoint::CheckpointRecord>, weir::checkpoint::SaverError>>
    {
        self.count(2);
        self.inner.list(thread_id, ns, before, limit)
    }
    fn history<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        before: Option<&'a str>,
        limit: Option<usize>,
    ) -> futures::future::BoxFuture<'a, Result<Vec<weir::checkpoint::Loaded>, weir::checkpoint::SaverError>> {
        self.count(3);
        self.inner.history(thread_id, ns, before, limit)
    }
    fn put_writes<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        checkpoint_id: &'a str,
        task_id: &'a str,
        writes: Vec<weir::checkpoint::PendingWrite>,
    ) -> futures::future::BoxFuture<'a, Result<(), weir::checkpoint::SaverError>> {
        self.inner.put_writes(thread_id, ns, checkpoint_id, task_id, writes)
    }
    fn delete_thread<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<(), weir::checkpoint::SaverError>> {
        self.inner.delete_thread(thread_id)
    }
    fn namespaces<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<Vec<String>, weir::checkpoint::SaverError>> {
        self.inner.namespaces(thread_id)
    }
    fn threads(&self) -> futures::future::BoxFuture<'_, Result<Vec<String>, weir::checkpoint::SaverError>> {
        self.inner.threads()
    }
    fn usage<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<weir::checkpoint::Usage, weir::checkpoint::SaverError>> {
        self.inner.usage(thread_id)
    }
}

/// A thread's history is one read of the saver (`history`), not a listing and then a read of
/// each checkpoint; the state, and a run going on from the head, one `get` with no separate
/// look-up of the head. Each history entry is what `get_state` shows at its checkpoint. A page
/// of it (`get_state_history_before`) is one read as well.
pub async fn history_is_one_read_and_loading_the_head_is_one_read(saver: Arc<dyn Checkpointer>) {
    let counting = Arc::new(Counting {
        inner: saver,
        reads: Default::default(),
    });
    let app = chain(&(counting.clone() as Arc<dyn Checkpointer>), Duration::ZERO);
    let cfg = RunConfig::thread(thread("reads"));
    app.invoke(StepsUpdate::default(), &cfg).await.unwrap();
    counting.take();

    let history = app.get_state_history(&cfg, None).await.unwrap();
    assert_eq!(counting.take(), [0, 0, 0, 1], "[get, head, list, history]");
    let steps: Vec<i64> = history.iter().map(|s| s.step).collect();
    assert_eq!(steps, [3, 2, 1, 0, -1]);
    let limited = app.get_state_history(&cfg, Some(2)).await.unwrap();
    assert_eq!(limited.len(), 2);
    assert_eq!(counting.take(), [0, 0, 0, 1]);
    // A page older than a checkpoint is one read too, of that page only.
    let page = app
        .get_state_history_before(&cfg, Some(&history[1].checkpoint_id), Some(2))
        .await
        .unwrap();
    let page: Vec<i64> = page.iter().map(|s| s.step).collect();
    assert_eq!(page, [1, 0]);
    assert_eq!(counting.take(), [0, 0, 0, 1]);

    let latest = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(counting.take(), [1, 0, 0, 0], "[get, head, list, history]");
    assert_eq!(latest.checkpoint_id, history[0].checkpoint_id);
    for entry in &history {
        let at = RunConfig {
            checkpoint_id: Some(entry.checkpoint_id.clone()),
            ..cfg.clone()
        };
        let alone = app.get_state(&at).await.unwrap().unwrap();
        assert_eq!(alone.values.steps, entry.values.steps);
        assert_eq!((&alone.next, &alone.parent_id), (&entry.next, &entry.parent_id));
        // Updates have no `PartialEq`: the tasks compare as printed, results included.
        assert_eq!(format!("{:?}", alone.tasks), format!("{:?}", entry.tasks));
    }
    counting.take();
    // A new input goes on from the head: one read.
    let out = app.invoke(StepsUpdate::default(), &cfg).await.unwrap();
    assert_eq!(out.steps, ["a", "b", "c", "a", "b", "c"]);
    assert_eq!(counting.take(), [1, 0, 0, 0], "[get, head, list, history]");
}
