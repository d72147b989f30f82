//! Retention, one suite run against every saver (`MemorySaver`, `SqliteSaver`, and
//! `PostgresSaver` when asked for with `--include-ignored` and `WEIR_POSTGRES_URL`): a pruned
//! thread's kept checkpoints load exactly as before, with O(delta) chains whose bases were
//! pruned; pending writes, subgraph namespaces and unneeded blobs go with the pruned
//! checkpoints; a read of a pruned checkpoint is an error naming it; the thread TTL; dry runs.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use weir_runtime::checkpoint::{
    new_checkpoint_id, Blob, ChannelRef, CheckpointRecord, Checkpointer, Loaded, MemorySaver, PendingWrite, Pruned,
    Retention, Source, Sweeper, Timestamp,
};

/// The chat-like thread's root checkpoints: `cp-001` … `cp-010`.
const STEPS: u64 = 10;

fn root_id(step: u64) -> String {
    format!("cp-{step:03}")
}

/// A subgraph checkpoint made during root step `step` (its id sorts between the root's).
fn sub_id(step: u64, k: u64) -> String {
    format!("cp-{step:03}-s{k}")
}

/// A record of `thread`, made `age` seconds before now.
fn record(
    thread: &str,
    ns: &str,
    id: &str,
    parent: Option<&str>,
    channels: Vec<ChannelRef>,
    blobs: Vec<Blob>,
    age: u64,
) -> CheckpointRecord {
    let now = Timestamp::now().unix_micros();
    CheckpointRecord {
        thread_id: thread.into(),
        ns: ns.into(),
        id: id.into(),
        parent_id: parent.map(Into::into),
        step: 0,
        source: Source::Loop,
        writes: [Arc::from("node")].into(),
        metadata: BTreeMap::from([("id".to_owned(), id.to_owned())]),
        created_at: Timestamp::from_unix_micros(now - age * 1_000_000),
        channels,
        body: format!("body of {id}").into_bytes(),
        blobs,
    }
}

fn at(channel: &str, version: u64, blob: &str) -> ChannelRef {
    ChannelRef {
        channel: channel.into(),
        version,
        blob: Some(blob.into()),
    }
}

fn blob(channel: &str, delta_of: Option<&str>, bytes: String) -> Blob {
    Blob {
        channel: channel.into(),
        delta_of: delta_of.map(Into::into),
        bytes: bytes.into_bytes(),
    }
}

fn write(task: &str, idx: i64, bytes: &str) -> PendingWrite {
    PendingWrite {
        task_id: task.to_owned(),
        task_path: format!("path-{task}"),
        idx,
        channel: "msgs".to_owned(),
        bytes: bytes.as_bytes().to_vec(),
    }
}

/// Where the chat thread's channels are stored as it is built: `msgs` grows by a delta a step
/// and is stored whole every fourth step; `cfg` is stored once, under the first checkpoint,
/// and never changes; `count` is stored whole every step.
struct Chat {
    thread: String,
    msgs_at: String,
    head: Option<String>,
    step: u64,
}

impl Chat {
    fn new(thread: &str) -> Self {
        Chat {
            thread: thread.to_owned(),
            msgs_at: String::new(),
            head: None,
            step: 0,
        }
    }

    /// The next root checkpoint, made `age` seconds ago.
    fn next(&mut self, age: u64) -> CheckpointRecord {
        self.step += 1;
        let id = root_id(self.step);
        let msgs = if self.step % 4 == 1 {
            blob("msgs", None, format!("m1..m{}", self.step))
        } else {
            blob("msgs", Some(&self.msgs_at), format!("+m{}", self.step))
        };
        self.msgs_at = id.clone();
        let mut blobs = vec![msgs, blob("count", None, self.step.to_string())];
        if self.step == 1 {
            blobs.push(blob("cfg", None, "model=fake".to_owned()));
        }
        let channels = vec![
            at("cfg", 1, &root_id(1)),
            at("count", self.step, &id),
            at("msgs", self.step, &id),
        ];
        let r = record(&self.thread, "", &id, self.head.as_deref(), channels, blobs, age);
        self.head = Some(id);
        r
    }

    /// Stores the next checkpoint.
    async fn put(&mut self, s: &dyn Checkpointer, age: u64) {
        let head = self.head.clone();
        let r = self.next(age);
        s.put(r, head.as_deref()).await.unwrap();
    }
}

/// A subgraph namespace run during root step `step`: three checkpoints whose value is a chain.
async fn subgraph(s: &dyn Checkpointer, thread: &str, step: u64) {
    let ns = format!("sub:{step}");
    let mut parent: Option<String> = None;
    for k in 1..=3 {
        let id = sub_id(step, k);
        let b = match &parent {
            None => blob("notes", None, "n1".to_owned()),
            Some(p) => blob("notes", Some(p), format!("+n{k}")),
        };
        let r = record(
            thread,
            &ns,
            &id,
            parent.as_deref(),
            vec![at("notes", k, &id)],
            vec![b],
            0,
        );
        s.put(r, parent.as_deref()).await.unwrap();
        parent = Some(id);
    }
    s.put_writes(
        thread,
        &ns,
        &sub_id(step, 3),
        "sub-task",
        vec![write("sub-task", 0, "w")],
    )
    .await
    .unwrap();
}

/// The chat thread: [`STEPS`] root checkpoints (with subgraphs run in steps 3 and 8), pending
/// writes on every third root checkpoint.
async fn chat_thread(s: &dyn Checkpointer, thread: &str) -> Chat {
    let mut chat = Chat::new(thread);
    for step in 1..=STEPS {
        if step == 3 || step == 8 {
            subgraph(s, thread, step).await;
        }
        chat.put(s, 0).await;
        if step % 3 == 0 {
            let task = format!("task-{step}");
            let writes = vec![write(&task, 0, "a"), write(&task, 1, "b")];
            s.put_writes(thread, "", &root_id(step), &task, writes).await.unwrap();
        }
    }
    chat
}

/// Every namespace's whole history, newest first.
async fn everything(s: &dyn Checkpointer, thread: &str) -> BTreeMap<String, Vec<Loaded>> {
    let mut out = BTreeMap::new();
    for ns in s.namespaces(thread).await.unwrap() {
        let history = s.history(thread, &ns, None, None).await.unwrap();
        out.insert(ns, history);
    }
    out
}

/// `before` with only the checkpoints whose ids are greater than `through`, and no namespace
/// left empty.
fn kept_part(mut before: BTreeMap<String, Vec<Loaded>>, through: &str) -> BTreeMap<String, Vec<Loaded>> {
    for history in before.values_mut() {
        history.retain(|l| &*l.record.id > through);
    }
    before.retain(|_, h| !h.is_empty());
    before
}

async fn kept_checkpoints_load_exactly_as_before(saver: Arc<dyn Checkpointer>) {
    let s = &*saver;
    let mut chat = chat_thread(s, "t").await;
    chat_thread(s, "other").await;
    let before = everything(s, "t").await;
    let other = everything(s, "other").await;
    let usage = s.usage("t").await.unwrap();

    // Keep the last 4 of 10: cp-001 … cp-006 go, and the subgraph run in step 3 with them.
    let policy = Retention::new().keep_last(4);
    let dry = s.prune("t", &policy.clone().dry_run(true)).await.unwrap();
    assert_eq!(everything(s, "t").await, before, "a dry run removes nothing");
    let pruned = s.prune("t", &policy).await.unwrap();
    assert_eq!(pruned, dry, "a dry run counts what the prune removes");
    let expected = Pruned {
        threads_deleted: 0,
        threads_pruned: 1,
        checkpoints: 6 + 3,
        pending_writes: 2 * 2 + 1,
    };
    assert_eq!(pruned, expected);
    let after = everything(s, "t").await;
    assert_eq!(after, kept_part(before.clone(), &root_id(6)));
    assert_eq!(after.keys().collect::<Vec<_>>(), ["", "sub:8"]);
    assert_eq!(everything(s, "other").await, other, "another thread is untouched");
    let now = s.usage("t").await.unwrap();
    assert_eq!(now.checkpoints, usage.checkpoints - 9);
    assert_eq!(now.pending_writes, usage.pending_writes - 5);
    assert!(now.blob_bytes < usage.blob_bytes, "{now:?} vs {usage:?}");
    // Of 27 blobs, 14 stay: `msgs` and `count` of cp-007 … cp-010, the subgraph of step 8's
    // three, and of the pruned ones only what the kept need: `cfg` of cp-001 and the `msgs`
    // chain of cp-005 (whole) and cp-006 (a delta) that cp-007's delta extends.
    assert_eq!((usage.blobs, now.blobs), (27, 14));

    // A pruned checkpoint is an error naming it; one that never was is not found.
    for ns in ["", "sub:3"] {
        let e = s.get("t", ns, Some(&root_id(3))).await.unwrap_err();
        assert!(e.is_pruned(), "{e}");
        assert_eq!(e.thread_id(), Some("t"));
        let text = e.to_string();
        assert!(
            text.contains("`cp-003`") && text.contains("`t`") && text.contains("pruned"),
            "{text}"
        );
    }
    assert_eq!(s.get("t", "", Some("cp-999")).await.unwrap(), None);
    assert_eq!(s.get("never", "", Some("cp-001")).await.unwrap(), None);

    // The run goes on: its next checkpoints build on blobs of pruned checkpoints (`cfg` under
    // cp-001, the `msgs` chain from cp-005).
    chat.put(s, 0).await;
    chat.put(s, 0).await;
    let head = s.get("t", "", None).await.unwrap().unwrap();
    let values: BTreeMap<String, Vec<String>> = head
        .values
        .iter()
        .map(|(c, chain)| {
            (
                c.clone(),
                chain.iter().map(|b| String::from_utf8(b.clone()).unwrap()).collect(),
            )
        })
        .collect();
    assert_eq!(values["cfg"], ["model=fake"]);
    assert_eq!(values["msgs"], ["m1..m9", "+m10", "+m11", "+m12"]);

    // And a second prune keeps what the first left, less what it drops.
    let before = everything(s, "t").await;
    let pruned = s.prune("t", &Retention::new().keep_last(2)).await.unwrap();
    assert_eq!(pruned.checkpoints, 4 + 3);
    assert_eq!(everything(s, "t").await, kept_part(before, &root_id(10)));
    let e = s.get("t", "", Some(&root_id(9))).await.unwrap_err();
    assert!(e.is_pruned(), "{e}");
    assert_eq!(
        s.prune("t", &Retention::new().keep_last(2)).await.unwrap(),
        Pruned::default()
    );
}

async fn a_policy_keeps_the_newest_and_the_young(saver: Arc<dyn Checkpointer>) {
    let s = &*saver;
    let mut chat = Chat::new("aged");
    for step in 1..=6u64 {
        // Made 60, 50, … 10 minutes ago.
        chat.put(s, (70 - 10 * step) * 60).await;
    }
    let before = everything(s, "aged").await;
    let half_hour = Retention::new().max_age(Duration::from_secs(35 * 60));
    assert_eq!(s.prune("aged", &half_hour).await.unwrap().checkpoints, 3);
    assert_eq!(everything(s, "aged").await, kept_part(before.clone(), &root_id(3)));
    // Everything is older than a minute, but the newest stays.
    let minute = Retention::new().max_age(Duration::from_secs(60));
    assert_eq!(s.prune("aged", &minute).await.unwrap().checkpoints, 2);
    assert_eq!(everything(s, "aged").await, kept_part(before, &root_id(5)));
    assert_eq!(s.list("aged", "", None, None).await.unwrap().len(), 1);
    assert_eq!(s.prune("aged", &Retention::new()).await.unwrap(), Pruned::default());
}

async fn thread_ttl_deletes_idle_threads_and_prune_all_covers_every_thread(saver: Arc<dyn Checkpointer>) {
    let s = &*saver;
    let mut idle = Chat::new("idle");
    let mut busy = Chat::new("busy");
    for _ in 0..3 {
        idle.put(s, 3 * 86_400).await;
        busy.put(s, 0).await;
    }
    s.put_writes("idle", "", &root_id(3), "task", vec![write("task", 0, "x")])
        .await
        .unwrap();
    let policy = Retention::new().thread_ttl(Duration::from_secs(86_400)).keep_last(2);
    let dry = s.prune_all(&policy.clone().dry_run(true)).await.unwrap();
    assert_eq!(s.threads().await.unwrap(), ["busy", "idle"]);
    let pruned = s.prune_all(&policy).await.unwrap();
    assert_eq!(pruned, dry);
    assert_eq!(
        pruned,
        Pruned {
            threads_deleted: 1,
            threads_pruned: 1,
            checkpoints: 3 + 1,
            pending_writes: 1,
        }
    );
    assert_eq!(s.threads().await.unwrap(), ["busy"]);
    assert_eq!(
        s.get("idle", "", Some(&root_id(3))).await.unwrap(),
        None,
        "a deleted thread is unknown"
    );
    assert_eq!(s.list("busy", "", None, None).await.unwrap().len(), 2);
    // The deleted thread starts afresh.
    let mut again = Chat::new("idle");
    again.put(s, 0).await;
    assert_eq!(s.list("idle", "", None, None).await.unwrap().len(), 1);
}

async fn a_copy_of_a_pruned_thread_loads_and_knows_what_was_pruned(saver: Arc<dyn Checkpointer>) {
    let s = &*saver;
    chat_thread(s, "t").await;
    s.prune("t", &Retention::new().keep_last(3)).await.unwrap();
    s.copy_thread("t", "copy").await.unwrap();
    let mut original = everything(s, "t").await;
    let copied = everything(s, "copy").await;
    for history in original.values_mut() {
        for l in history {
            l.record.thread_id = "copy".into();
        }
    }
    assert_eq!(copied, original);
    assert!(s.get("copy", "", Some(&root_id(2))).await.unwrap_err().is_pruned());
    s.delete_thread("t").await.unwrap();
    assert_eq!(everything(s, "copy").await, copied, "the copy keeps the blobs it needs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweeper_prunes_every_thread_at_its_interval_until_stopped() {
    let saver = Arc::new(MemorySaver::new());
    for thread in ["a", "b"] {
        let mut chat = Chat::new(thread);
        for _ in 0..5 {
            chat.put(&*saver, 0).await;
        }
    }
    let policy = Retention::new().keep_last(2);
    let sweeper = Sweeper::start(saver.clone(), policy, Duration::from_millis(5)).unwrap();
    sweeper.swept(1).await;
    for thread in ["a", "b"] {
        assert_eq!(saver.list(thread, "", None, None).await.unwrap().len(), 2, "{thread}");
    }
    let mut chat = Chat::new("c");
    for _ in 0..4 {
        chat.put(&*saver, 0).await;
    }
    // The sweep after the one under way when "c" was written has seen it.
    let seen = sweeper.sweeps() + 2;
    sweeper.swept(seen).await;
    assert_eq!(saver.list("c", "", None, None).await.unwrap().len(), 2);
    assert_eq!(sweeper.total().checkpoints, 3 + 3 + 2);
    sweeper.stop().await;
    assert_eq!(Arc::strong_count(&saver), 1, "the stopped sweeper let go of the saver");
}

#[test]
fn a_sweeper_without_a_runtime_or_with_no_interval_is_refused() {
    let saver = Arc::new(MemorySaver::new());
    let e = Sweeper::start(saver.clone(), Retention::new(), Duration::from_secs(1)).unwrap_err();
    assert!(e.is_invalid() && e.to_string().contains("tokio runtime"), "{e}");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _guard = rt.enter();
    let e = Sweeper::start(saver, Retention::new(), Duration::ZERO).unwrap_err();
    assert!(e.to_string().contains("interval"), "{e}");
}

macro_rules! suite {
    ($saver:ident: $harness:path $(, ignore = $why:literal)?) => {
        mod $saver {
            suite!(@tests $harness, [$($why)?];
                kept_checkpoints_load_exactly_as_before
                a_policy_keeps_the_newest_and_the_young
                thread_ttl_deletes_idle_threads_and_prune_all_covers_every_thread
                a_copy_of_a_pruned_thread_loads_and_knows_what_was_pruned
            );
        }
    };
    (@tests $harness:path, $why:tt; $($test:ident)*) => {
        $(
            suite!(@test $harness, $why, $test);
        )*
    };
    (@test $harness:path, [], $test:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $test() {
            let harness = $harness().await;
            super::$test(harness.0.clone()).await;
        }
    };
    (@test $harness:path, [$why:literal], $test:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        #[ignore = $why]
        async fn $test() {
            let harness = $harness().await;
            super::$test(harness.0.clone()).await;
        }
    };
}

/// A saver under test, and what must live as long as it.
struct Harness(Arc<dyn Checkpointer>, #[allow(dead_code)] Option<Box<dyn Send>>);

async fn memory_harness() -> Harness {
    Harness(Arc::new(MemorySaver::new()), None)
}

suite!(memory: super::memory_harness);

/// A directory of its own under the system's temp directory, removed on drop.
#[cfg(feature = "sqlite")]
struct TempDir(std::path::PathBuf);

#[cfg(feature = "sqlite")]
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(feature = "sqlite")]
async fn sqlite_harness() -> Harness {
    let dir = std::env::temp_dir().join(format!("weir-retention-{}-{}", std::process::id(), new_checkpoint_id()));
    std::fs::create_dir_all(&dir).unwrap();
    let saver = weir_runtime::checkpoint::SqliteSaver::open(dir.join("weir.db")).unwrap();
    Harness(Arc::new(saver), Some(Box::new(TempDir(dir))))
}

#[cfg(feature = "sqlite")]
suite!(sqlite: super::sqlite_harness);

#[cfg(feature = "postgres")]
async fn postgres_harness() -> Harness {
    let schema = weir_test_support::Schema::fresh("weir_retention");
    let saver = weir_runtime::checkpoint::PostgresSaver::connect_with_schema(&schema.url, &schema.name)
        .await
        .unwrap();
    Harness(Arc::new(saver), Some(Box::new(schema)))
}

#[cfg(feature = "postgres")]
suite!(postgres: super::postgres_harness, ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored");
