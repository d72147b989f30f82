//! The suite: whole threads: deletion, two writers racing for one head, many threads at once,
//! and copies.

use crate::records::*;
use std::sync::Arc;
use weir_runtime::checkpoint::{new_checkpoint_id, Checkpointer, Loaded, Usage};

pub(crate) async fn delete_thread_removes_every_namespace_and_nothing_else(saver: Arc<dyn Checkpointer>) {
    let s = &*saver;
    for thread in ["doomed", "kept"] {
        for ns in ["", "inner:1"] {
            s.put(
                record(
                    thread,
                    ns,
                    "cp-1",
                    None,
                    -1,
                    &[("a", 1, Some("cp-1"))],
                    vec![full("a", "abc")],
                ),
                None,
            )
            .await
            .unwrap();
            s.put_writes(thread, ns, "cp-1", "task", vec![write("task", "", 0, "a", "w")])
                .await
                .unwrap();
        }
    }
    assert_eq!(s.threads().await.unwrap(), ["doomed", "kept"]);
    s.delete_thread("doomed").await.unwrap();

    for ns in ["", "inner:1"] {
        assert_eq!(s.get("doomed", ns, None).await.unwrap(), None);
        assert_eq!(s.get("doomed", ns, Some("cp-1")).await.unwrap(), None);
        assert_eq!(s.head("doomed", ns).await.unwrap(), None);
        assert_eq!(s.list("doomed", ns, None, None).await.unwrap(), []);
        assert_eq!(s.get("kept", ns, None).await.unwrap().unwrap().pending_writes.len(), 1);
    }
    assert_eq!(s.usage("doomed").await.unwrap(), Usage::default());
    assert_eq!(
        s.usage("kept").await.unwrap(),
        Usage {
            checkpoints: 2,
            blobs: 2,
            blob_bytes: 6,
            pending_writes: 2
        }
    );
    assert_eq!(s.threads().await.unwrap(), ["kept"]);
    // The thread starts afresh.
    s.put(record("doomed", "", "cp-1", None, -1, &[], vec![]), None)
        .await
        .unwrap();
    s.delete_thread("never-existed").await.unwrap();
}

/// A put checks the head it expects against the thread's head now, even when the saver's own
/// last put left that head and the thread was deleted since.
pub(crate) async fn a_put_after_its_thread_was_deleted_finds_no_head(saver: Arc<dyn Checkpointer>) {
    let s = &*saver;
    s.put(record("t", "", "cp-1", None, -1, &[], vec![]), None)
        .await
        .unwrap();
    s.delete_thread("t").await.unwrap();
    let err = s
        .put(record("t", "", "cp-2", Some("cp-1"), 0, &[], vec![]), Some("cp-1"))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "checkpoint conflict on thread `t`: expected head `cp-1`, found none; another writer is running this thread"
    );
    s.put(record("t", "", "cp-3", None, -1, &[], vec![]), None)
        .await
        .unwrap();
    assert_eq!(s.head("t", "").await.unwrap().as_deref(), Some("cp-3"));
}

pub(crate) async fn two_writers_with_one_expected_head_exactly_one_wins(saver: Arc<dyn Checkpointer>) {
    let s = &*saver;
    s.put(record("t-1", "", "cp-1", None, -1, &[], vec![]), None)
        .await
        .unwrap();
    let a = record(
        "t-1",
        "",
        "cp-2a",
        Some("cp-1"),
        0,
        &[("v", 2, Some("cp-2a"))],
        vec![full("v", "aaaa")],
    );
    let b = record(
        "t-1",
        "",
        "cp-2b",
        Some("cp-1"),
        0,
        &[("v", 2, Some("cp-2b"))],
        vec![full("v", "bbbbbbbb")],
    );
    let (ra, rb) = tokio::join!(s.put(a, Some("cp-1")), s.put(b, Some("cp-1")));
    let (winner, loser, err) = match (ra, rb) {
        (Ok(()), Err(e)) => ("cp-2a", "cp-2b", e),
        (Err(e), Ok(())) => ("cp-2b", "cp-2a", e),
        other => panic!("exactly one writer must win, got {other:?}"),
    };
    assert!(err.is_conflict(), "{err}");
    assert_eq!(err.thread_id(), Some("t-1"));
    assert_eq!(
        err.to_string(),
        format!(
            "checkpoint conflict on thread `t-1`: expected head `cp-1`, found `{winner}`; another writer is running this thread"
        )
    );
    assert_eq!(s.head("t-1", "").await.unwrap().as_deref(), Some(winner));
    assert_eq!(s.get("t-1", "", Some(loser)).await.unwrap(), None);
    assert_eq!(ids(&s.list("t-1", "", None, None).await.unwrap()), [winner, "cp-1"]);
    assert_eq!(s.usage("t-1").await.unwrap().blobs, 1);

    // A writer that believes the thread is new, and one that reuses an id, conflict too.
    let err = s
        .put(record("t-1", "", "cp-3", None, -1, &[], vec![]), None)
        .await
        .unwrap_err();
    assert!(err.is_conflict());
    assert_eq!(
        err.to_string(),
        format!("checkpoint conflict on thread `t-1`: expected head none, found `{winner}`; another writer is running this thread")
    );
    let err = s
        .put(record("t-1", "", "cp-1", Some(winner), 1, &[], vec![]), Some(winner))
        .await
        .unwrap_err();
    assert!(err.is_invalid());
    assert_eq!(
        err.to_string(),
        format!(
            "invalid checkpoint data for thread `t-1`: checkpoint `cp-1` is not newer than `{winner}`, the checkpoint it \
             follows (ids of a thread increase)"
        )
    );
    let err = s
        .put(record("t-1", "sub", "cp-9", None, 0, &[], vec![]), Some("cp-1"))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "checkpoint conflict on thread `t-1` (namespace `sub`): expected head `cp-1`, found none; another writer is \
         running this thread"
    );
    assert_eq!(s.head("t-1", "").await.unwrap().as_deref(), Some(winner));
    assert_eq!(s.head("t-1", "sub").await.unwrap(), None);
    assert_eq!(s.threads().await.unwrap(), ["t-1"]);
}

pub(crate) async fn many_threads_put_concurrently_keep_complete_ordered_histories(saver: Arc<dyn Checkpointer>) {
    const THREADS: usize = 200;
    const STEPS: i64 = 20;
    let tasks: Vec<_> = (0..THREADS)
        .map(|t| {
            let saver = saver.clone();
            tokio::spawn(async move {
                let thread = format!("thread-{t:03}");
                let mut parent: Option<String> = None;
                let mut ids = Vec::new();
                for step in 0..STEPS {
                    let id = new_checkpoint_id();
                    let blob = match &parent {
                        None => full("log", &format!("{t}:{step}")),
                        Some(p) => delta("log", p, &format!(",{step}")),
                    };
                    let r = record(
                        &thread,
                        "",
                        &id,
                        parent.as_deref(),
                        step,
                        &[("log", step as u64 + 1, Some(&id))],
                        vec![blob],
                    );
                    saver.put(r, parent.as_deref()).await.unwrap();
                    ids.push(id.clone());
                    parent = Some(id);
                }
                ids
            })
        })
        .collect();
    let mut histories = Vec::new();
    for task in tasks {
        histories.push(task.await.unwrap());
    }

    let mut expected_threads: Vec<String> = (0..THREADS).map(|t| format!("thread-{t:03}")).collect();
    expected_threads.sort();
    assert_eq!(saver.threads().await.unwrap(), expected_threads);
    for (t, put_ids) in histories.iter().enumerate() {
        let thread = format!("thread-{t:03}");
        let listed = saver.list(&thread, "", None, None).await.unwrap();
        let newest_first: Vec<&str> = put_ids.iter().rev().map(String::as_str).collect();
        assert_eq!(ids(&listed), newest_first, "history of {thread}");
        let steps: Vec<i64> = listed.iter().map(|r| r.step).collect();
        assert_eq!(steps, (0..STEPS).rev().collect::<Vec<_>>());
        for pair in listed.windows(2) {
            assert_eq!(pair[0].parent_id.as_deref(), Some(&*pair[1].id));
        }
        let latest = saver.get(&thread, "", None).await.unwrap().unwrap();
        assert_eq!(&*latest.record.id, put_ids[STEPS as usize - 1]);
        let mut log = vec![format!("{t}:0")];
        log.extend((1..STEPS).map(|s| format!(",{s}")));
        assert_eq!(chains(&latest), [("log".to_owned(), log)]);
    }
}

/// Thread `t`: in the root namespace a delta chain and a fork (`cp-4` appends onto `cp-1`'s
/// value again), pending writes on `cp-2`; in namespace `sub:1` one checkpoint with a write.
async fn a_thread_to_copy(s: &dyn Checkpointer) {
    let puts = [
        record(
            "t",
            "",
            "cp-1",
            None,
            -1,
            &[("log", 1, Some("cp-1"))],
            vec![full("log", "a")],
        ),
        record(
            "t",
            "",
            "cp-2",
            Some("cp-1"),
            0,
            &[("log", 2, Some("cp-2"))],
            vec![delta("log", "cp-1", ",b")],
        ),
        record(
            "t",
            "",
            "cp-3",
            Some("cp-2"),
            1,
            &[("log", 2, Some("cp-2")), ("q", 1, Some("cp-3"))],
            vec![full("q", "why")],
        ),
        record(
            "t",
            "",
            "cp-4",
            Some("cp-1"),
            0,
            &[("log", 2, Some("cp-4"))],
            vec![delta("log", "cp-1", ",c")],
        ),
    ];
    let mut head: Option<String> = None;
    for r in puts {
        let id = r.id.to_string();
        s.put(r, head.as_deref()).await.unwrap();
        head = Some(id);
    }
    s.put_writes(
        "t",
        "",
        "cp-2",
        "task-b",
        vec![write("task-b", "b", 0, "log", "w1"), write("task-b", "b", 1, "q", "w2")],
    )
    .await
    .unwrap();
    s.put_writes("t", "", "cp-2", "task-a", vec![write("task-a", "a", 0, "log", "w0")])
        .await
        .unwrap();
    s.put(
        record(
            "t",
            "sub:1",
            "cp-1",
            None,
            -1,
            &[("a", 1, Some("cp-1"))],
            vec![full("a", "x")],
        ),
        None,
    )
    .await
    .unwrap();
    s.put_writes("t", "sub:1", "cp-1", "task", vec![write("task", "", 0, "a", "w")])
        .await
        .unwrap();
}

/// The thread's history in each namespace, each record's thread renamed `thread`.
async fn histories_as(s: &dyn Checkpointer, of: &str, thread: &str) -> Vec<Vec<Loaded>> {
    let mut out = Vec::new();
    for ns in ["", "sub:1"] {
        let mut history = s.history(of, ns, None, None).await.unwrap();
        for l in &mut history {
            l.record.thread_id = thread.into();
        }
        out.push(history);
    }
    out
}

pub(crate) async fn copy_thread_copies_every_namespace_with_its_writes_and_the_copy_lives_apart(
    saver: Arc<dyn Checkpointer>,
) {
    let s = &*saver;
    a_thread_to_copy(s).await;
    s.copy_thread("t", "c").await.unwrap();
    assert_eq!(s.namespaces("c").await.unwrap(), ["", "sub:1"]);
    assert_eq!(s.threads().await.unwrap(), ["c", "t"]);
    let original = histories_as(s, "t", "c").await;
    assert_eq!(original[0].len(), 4);
    assert_eq!(original[0][2].pending_writes.len(), 3, "cp-2's writes");
    assert_eq!(histories_as(s, "c", "c").await, original);
    assert_eq!(s.usage("c").await.unwrap(), s.usage("t").await.unwrap());
    assert_eq!(s.head("c", "").await.unwrap().as_deref(), Some("cp-4"));
    // Each thread moves on alone: a put onto the copy, then the original deleted.
    s.put(
        record(
            "c",
            "",
            "cp-5",
            Some("cp-4"),
            1,
            &[("log", 3, Some("cp-5"))],
            vec![delta("log", "cp-4", ",d")],
        ),
        Some("cp-4"),
    )
    .await
    .unwrap();
    assert_eq!(s.head("t", "").await.unwrap().as_deref(), Some("cp-4"));
    s.delete_thread("t").await.unwrap();
    let copy = s.get("c", "", None).await.unwrap().unwrap();
    assert_eq!(
        chains(&copy),
        [("log".to_owned(), ["a", ",c", ",d"].map(String::from).to_vec())]
    );
    let sub = s.get("c", "sub:1", None).await.unwrap().unwrap();
    assert_eq!((chains(&sub).len(), sub.pending_writes.len()), (1, 1));
}

pub(crate) async fn copy_thread_refuses_a_taken_target_a_missing_source_and_itself(saver: Arc<dyn Checkpointer>) {
    let s = &*saver;
    a_thread_to_copy(s).await;
    s.put(record("taken", "sub:1", "cp-1", None, -1, &[], vec![]), None)
        .await
        .unwrap();
    let err = s.copy_thread("t", "taken").await.unwrap_err();
    assert!(err.is_invalid(), "{err}");
    assert_eq!(err.thread_id(), Some("taken"));
    assert_eq!(
        err.to_string(),
        "invalid checkpoint data for thread `taken`: cannot copy thread `t` into it: it already has checkpoints"
    );
    let err = s.copy_thread("nobody", "new").await.unwrap_err();
    assert_eq!(
        (err.is_invalid(), err.thread_id(), err.to_string().as_str()),
        (
            true,
            Some("nobody"),
            "invalid checkpoint data for thread `nobody`: cannot copy it: it has no checkpoints"
        )
    );
    let err = s.copy_thread("t", "t").await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid checkpoint data for thread `t`: cannot copy a thread onto itself"
    );
    // Nothing was written.
    assert_eq!(s.threads().await.unwrap(), ["t", "taken"]);
    assert_eq!(s.namespaces("taken").await.unwrap(), ["sub:1"]);
}
