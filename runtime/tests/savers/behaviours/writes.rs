//! The suite: how a saver takes writes: invalid records refused whole, `put_many` all or none,
//! and a task's pending writes.

use crate::records::*;
use std::sync::Arc;
use weir_runtime::checkpoint::{Checkpointer, Usage};

pub(crate) async fn invalid_records_are_refused_and_store_nothing(saver: Arc<dyn Checkpointer>) {
    let s = &*saver;
    s.put(
        record(
            "t",
            "",
            "cp-1",
            None,
            -1,
            &[("a", 1, Some("cp-1"))],
            vec![full("a", "1")],
        ),
        None,
    )
    .await
    .unwrap();
    let before = s.usage("t").await.unwrap();

    let onto_nothing = record(
        "t",
        "",
        "cp-2",
        Some("cp-1"),
        0,
        &[("a", 2, Some("cp-2"))],
        vec![delta("a", "cp-0", "2")],
    );
    let err = s.put(onto_nothing, Some("cp-1")).await.unwrap_err();
    assert!(err.is_invalid(), "{err}");
    assert_eq!(
        err.to_string(),
        "invalid checkpoint data for thread `t`: the delta for channel `a` of checkpoint `cp-2` extends checkpoint \
         `cp-0`, which stores no value for it"
    );
    let other_channel = record(
        "t",
        "",
        "cp-2",
        Some("cp-1"),
        0,
        &[("b", 2, Some("cp-2"))],
        vec![delta("b", "cp-1", "2")],
    );
    assert!(s.put(other_channel, Some("cp-1")).await.unwrap_err().is_invalid());
    let no_blob = record("t", "", "cp-2", Some("cp-1"), 0, &[("a", 2, Some("cp-2"))], vec![]);
    let err = s.put(no_blob, Some("cp-1")).await.unwrap_err();
    assert!(err.is_invalid());
    assert_eq!(err.thread_id(), Some("t"));
    let dangling = record("t", "", "cp-2", Some("cp-1"), 0, &[("a", 1, Some("cp-0"))], vec![]);
    let err = s.put(dangling, Some("cp-1")).await.unwrap_err();
    assert!(err.is_invalid());
    assert_eq!(
        err.to_string(),
        "invalid checkpoint data for thread `t`: the value of channel `a` of checkpoint `cp-2` is stored under \
         checkpoint `cp-0`, which stores no value for it"
    );
    let stray_blob = record(
        "t",
        "",
        "cp-2",
        Some("cp-1"),
        0,
        &[("a", 1, Some("cp-1"))],
        vec![full("a", "2")],
    );
    assert!(s.put(stray_blob, Some("cp-1")).await.unwrap_err().is_invalid());

    assert_eq!(s.usage("t").await.unwrap(), before);
    assert_eq!(s.head("t", "").await.unwrap().as_deref(), Some("cp-1"));
    assert_eq!(ids(&s.list("t", "", None, None).await.unwrap()), ["cp-1"]);
}

pub(crate) async fn put_many_stores_a_run_of_heads_all_or_none(saver: Arc<dyn Checkpointer>) {
    let s = &*saver;
    s.put(
        record(
            "t",
            "",
            "cp-1",
            None,
            -1,
            &[("a", 1, Some("cp-1"))],
            vec![full("a", "[1]")],
        ),
        None,
    )
    .await
    .unwrap();
    // Three in one call: the second's delta builds on the first's blob, stored in the same call.
    let batch = vec![
        record(
            "t",
            "",
            "cp-2",
            Some("cp-1"),
            0,
            &[("a", 2, Some("cp-2"))],
            vec![delta("a", "cp-1", "[2]")],
        ),
        record(
            "t",
            "",
            "cp-3",
            Some("cp-2"),
            1,
            &[("a", 3, Some("cp-3"))],
            vec![delta("a", "cp-2", "[3]")],
        ),
        record("t", "", "cp-4", Some("cp-3"), 2, &[("a", 3, Some("cp-3"))], vec![]),
    ];
    s.put_many(batch, Some("cp-1")).await.unwrap();
    assert_eq!(s.head("t", "").await.unwrap().as_deref(), Some("cp-4"));
    let latest = s.get("t", "", None).await.unwrap().unwrap();
    assert!(latest.record.blobs.is_empty());
    assert_eq!(
        chains(&latest),
        [(
            "a".to_owned(),
            vec!["[1]".to_owned(), "[2]".to_owned(), "[3]".to_owned()]
        )]
    );
    assert_eq!(
        ids(&s.list("t", "", None, None).await.unwrap()),
        ["cp-4", "cp-3", "cp-2", "cp-1"]
    );
    let before = s.usage("t").await.unwrap();

    // A stale head, a record of another thread, a repeated id, a delta onto nothing: each is
    // refused naming what is wrong, and none of the batch is stored.
    let next = |id: &str, parent: &str, step: i64| {
        record(
            "t",
            "",
            id,
            Some(parent),
            step,
            &[("a", 9, Some(id))],
            vec![full("a", "[9]")],
        )
    };
    let err = s
        .put_many(vec![next("cp-5", "cp-4", 3)], Some("cp-3"))
        .await
        .unwrap_err();
    assert!(err.is_conflict(), "{err}");
    let mut other = next("cp-6", "cp-5", 4);
    other.thread_id = "u".into();
    let err = s
        .put_many(vec![next("cp-5", "cp-4", 3), other], Some("cp-4"))
        .await
        .unwrap_err();
    assert!(err.is_invalid(), "{err}");
    assert!(err.to_string().contains("checkpoint `cp-6` of thread `u`"), "{err}");
    let err = s
        .put_many(vec![next("cp-5", "cp-4", 3), next("cp-5", "cp-4", 3)], Some("cp-4"))
        .await
        .unwrap_err();
    assert!(err.is_conflict(), "{err}");
    assert!(err.to_string().contains("checkpoint `cp-5` already exists"), "{err}");
    let onto_nothing = record(
        "t",
        "",
        "cp-6",
        Some("cp-5"),
        4,
        &[("a", 9, Some("cp-6"))],
        vec![delta("a", "cp-0", "[9]")],
    );
    let err = s
        .put_many(vec![next("cp-5", "cp-4", 3), onto_nothing], Some("cp-4"))
        .await
        .unwrap_err();
    assert!(err.is_invalid(), "{err}");
    assert_eq!(
        err.to_string(),
        "invalid checkpoint data for thread `t`: the delta for channel `a` of checkpoint `cp-6` extends checkpoint \
         `cp-0`, which stores no value for it",
        "the record whose base is missing is named, not the batch's first"
    );
    // A delta onto a record of the same batch that stores no value for that channel.
    let onto_another_channel = record(
        "t",
        "",
        "cp-6",
        Some("cp-5"),
        4,
        &[("a", 9, Some("cp-5")), ("b", 1, Some("cp-6"))],
        vec![delta("b", "cp-5", "[9]")],
    );
    let err = s
        .put_many(vec![next("cp-5", "cp-4", 3), onto_another_channel], Some("cp-4"))
        .await
        .unwrap_err();
    assert!(err.is_invalid(), "{err}");
    assert_eq!(
        err.to_string(),
        "invalid checkpoint data for thread `t`: the delta for channel `b` of checkpoint `cp-6` extends checkpoint \
         `cp-5`, which stores no value for it"
    );
    // An id that is not newer than the head (here one already stored) is refused.
    let err = s
        .put_many(vec![next("cp-3", "cp-4", 3)], Some("cp-4"))
        .await
        .unwrap_err();
    assert!(err.is_invalid(), "{err}");
    assert!(
        err.to_string().contains("checkpoint `cp-3` is not newer than `cp-4`"),
        "{err}"
    );

    assert_eq!(s.usage("t").await.unwrap(), before);
    assert_eq!(s.head("t", "").await.unwrap().as_deref(), Some("cp-4"));
    assert_eq!(s.usage("u").await.unwrap(), Usage::default());
    s.put_many(Vec::new(), Some("cp-1")).await.unwrap();
    assert_eq!(s.head("t", "").await.unwrap().as_deref(), Some("cp-4"));
}

/// A long batch (longer than a saver may write in one statement): every record, blob and
/// chain lands, and a repeated id anywhere in it, within the batch or against the store, is
/// named and stores nothing.
pub(crate) async fn put_many_of_a_long_run_stores_each_record_and_names_a_repeated_id(saver: Arc<dyn Checkpointer>) {
    let s = &*saver;
    let id = |i: usize| format!("cp-{i:03}");
    // Step i: `count` rewritten, `items` extended by a delta (a whole value every 10 steps,
    // long every 20), `fixed` left pointing at step 0.
    let whole = |i: usize| match i % 20 {
        0 => "w".repeat(1000 + i),
        _ => format!("w{i}"),
    };
    let step = |i: usize| {
        let mut blobs = vec![full("count", &i.to_string())];
        let items = match i % 10 {
            0 => full("items", &whole(i)),
            _ => delta("items", &id(i - 1), &format!("+{i}")),
        };
        blobs.push(items);
        if i == 0 {
            blobs.push(full("fixed", "f"));
        }
        let parent = i.checked_sub(1).map(id);
        record(
            "t",
            "",
            &id(i),
            parent.as_deref(),
            i as i64 - 1,
            &[
                ("count", i as u64 + 1, Some(&id(i))),
                ("fixed", 1, Some("cp-000")),
                ("items", i as u64 + 1, Some(&id(i))),
            ],
            blobs,
        )
    };
    let expected_items = |i: usize| {
        let base = i / 10 * 10;
        std::iter::once(whole(base))
            .chain((base + 1..=i).map(|k| format!("+{k}")))
            .collect::<Vec<_>>()
    };
    s.put_many((0..37).map(step).collect(), None).await.unwrap();
    assert_eq!(s.head("t", "").await.unwrap(), Some(id(36)));
    for i in [0, 15, 16, 17, 31, 32, 36] {
        let loaded = s.get("t", "", Some(&id(i))).await.unwrap().unwrap();
        assert_eq!(loaded.record, without_blobs(step(i)), "{i}");
        assert_eq!(
            chains(&loaded),
            [
                ("count".to_owned(), vec![i.to_string()]),
                ("fixed".to_owned(), vec!["f".to_owned()]),
                ("items".to_owned(), expected_items(i)),
            ],
            "{i}"
        );
    }
    assert_eq!(s.list("t", "", None, None).await.unwrap().len(), 37);
    let before = s.usage("t").await.unwrap();
    assert_eq!((before.checkpoints, before.blobs), (37, 2 * 37 + 1));

    // A repeated id at each place of a run of 40: against the store, or within the run.
    let run = |ids: &[String]| {
        let mut parent = id(36);
        let mut records = Vec::new();
        for (k, own) in ids.iter().enumerate() {
            records.push(record("t", "", own, Some(&parent), 36 + k as i64, &[], vec![]));
            parent = own.clone();
        }
        records
    };
    for at in [0, 1, 14, 15, 16, 17, 37] {
        let mut ids: Vec<String> = (37..77).map(id).collect();
        ids[at] = id(20);
        let err = s.put_many(run(&ids), Some(&id(36))).await.unwrap_err();
        assert!(err.is_invalid(), "{at}: {err}");
        assert_eq!(err.thread_id(), Some("t"));
        assert!(
            err.to_string().contains("checkpoint `cp-020` is not newer than"),
            "{at}: {err}"
        );
        let mut ids: Vec<String> = (37..77).map(id).collect();
        ids[at + 2] = id(100);
        ids[at] = id(100);
        let err = s.put_many(run(&ids), Some(&id(36))).await.unwrap_err();
        assert!(err.is_conflict(), "{at}: {err}");
        assert!(
            err.to_string().contains("checkpoint `cp-100` already exists"),
            "{at}: {err}"
        );
    }
    assert_eq!(s.usage("t").await.unwrap(), before);
    assert_eq!(s.head("t", "").await.unwrap(), Some(id(36)));
}

pub(crate) async fn put_writes_replaces_a_tasks_writes_and_orders_by_path_task_idx(saver: Arc<dyn Checkpointer>) {
    let s = &*saver;
    s.put(record("t", "", "cp-1", None, -1, &[], vec![]), None)
        .await
        .unwrap();
    s.put_writes(
        "t",
        "",
        "cp-1",
        "task-b",
        vec![
            write("task-b", "~a, y", 1, "n", "b1"),
            write("task-b", "~a, y", 0, "n", "b0"),
        ],
    )
    .await
    .unwrap();
    s.put_writes("t", "", "cp-1", "task-c", vec![write("task-c", "~a, x", 0, "n", "c0")])
        .await
        .unwrap();
    s.put_writes(
        "t",
        "",
        "cp-1",
        "task-a",
        vec![
            write("task-a", "~a, y", 0, "n", "a0"),
            write("task-a", "~a, y", -1, "__error__", "boom"),
        ],
    )
    .await
    .unwrap();
    let loaded = s.get("t", "", None).await.unwrap().unwrap();
    assert_eq!(
        loaded.pending_writes,
        [
            write("task-c", "~a, x", 0, "n", "c0"),
            write("task-a", "~a, y", -1, "__error__", "boom"),
            write("task-a", "~a, y", 0, "n", "a0"),
            write("task-b", "~a, y", 0, "n", "b0"),
            write("task-b", "~a, y", 1, "n", "b1"),
        ]
    );

    // A task's writes replace its earlier ones, and only its own.
    s.put_writes(
        "t",
        "",
        "cp-1",
        "task-a",
        vec![write("task-a", "~a, y", 0, "n", "a0 again")],
    )
    .await
    .unwrap();
    s.put_writes("t", "", "cp-1", "task-b", vec![]).await.unwrap();
    let loaded = s.get("t", "", Some("cp-1")).await.unwrap().unwrap();
    assert_eq!(
        loaded.pending_writes,
        [
            write("task-c", "~a, x", 0, "n", "c0"),
            write("task-a", "~a, y", 0, "n", "a0 again")
        ]
    );
    assert_eq!(s.usage("t").await.unwrap().pending_writes, 2);

    // Writes belong to their checkpoint.
    s.put(record("t", "", "cp-2", Some("cp-1"), 0, &[], vec![]), Some("cp-1"))
        .await
        .unwrap();
    assert_eq!(s.get("t", "", None).await.unwrap().unwrap().pending_writes, []);
    assert_eq!(
        s.get("t", "", Some("cp-1"))
            .await
            .unwrap()
            .unwrap()
            .pending_writes
            .len(),
        2
    );

    let err = s
        .put_writes("t", "", "cp-9", "task-a", vec![write("task-a", "", 0, "n", "x")])
        .await
        .unwrap_err();
    assert!(err.is_invalid());
    assert_eq!(
        err.to_string(),
        "invalid checkpoint data for thread `t`: no checkpoint `cp-9` to keep pending writes against"
    );
    let err = s
        .put_writes("t", "", "cp-1", "task-a", vec![write("task-z", "", 0, "n", "x")])
        .await
        .unwrap_err();
    assert!(err.is_invalid());
    let err = s
        .put_writes(
            "t",
            "",
            "cp-1",
            "task-a",
            vec![write("task-a", "", 0, "n", "x"), write("task-a", "", 0, "n", "y")],
        )
        .await
        .unwrap_err();
    assert!(err.is_invalid());
    assert_eq!(
        s.get("t", "", Some("cp-1"))
            .await
            .unwrap()
            .unwrap()
            .pending_writes
            .len(),
        2
    );
}
