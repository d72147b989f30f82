//! One suite of checkpoint-saver behaviours, run against every saver: `MemorySaver`,
//! `SqliteSaver` (feature `sqlite`) and `PostgresSaver` (feature `postgres`). The PostgreSQL
//! tests are ignored unless asked for (`-- --include-ignored`, as `.ci/run` does), and then need
//! `WEIR_POSTGRES_URL` to name a database, e.g. `postgres://postgres@127.0.0.1:5432/test`:
//! asked for without one, they fail.
//! Then the behaviours particular to one saver: files, schema versions, several processes.

use std::collections::BTreeMap;
use std::sync::Arc;
use weir_runtime::checkpoint::{
    new_checkpoint_id, Blob, ChannelRef, CheckpointRecord, Checkpointer, Held, Loaded, MemorySaver, PendingWrite,
    Source, Timestamp, Usage,
};

// ---------------------------------------------------------------------------------------------
// Building records

/// A channel's place in a record: `(channel, version, blob)`.
type Ch<'a> = (&'a str, u64, Option<&'a str>);

fn record(
    thread: &str,
    ns: &str,
    id: &str,
    parent: Option<&str>,
    step: i64,
    channels: &[Ch<'_>],
    blobs: Vec<Blob>,
) -> CheckpointRecord {
    CheckpointRecord {
        thread_id: thread.into(),
        ns: ns.into(),
        id: id.into(),
        parent_id: parent.map(Into::into),
        step,
        source: if step < 0 { Source::Input } else { Source::Loop },
        writes: [Arc::from(format!("node-{step}"))].into(),
        metadata: BTreeMap::from([
            ("step".to_owned(), step.to_string()),
            ("user".to_owned(), "ada".to_owned()),
        ]),
        created_at: Timestamp::from_unix_micros((1_793_527_201 + step) as u64 * 1_000_000),
        channels: channels
            .iter()
            .map(|&(channel, version, blob)| ChannelRef {
                channel: channel.into(),
                version,
                blob: blob.map(Into::into),
            })
            .collect(),
        body: format!("body of {id}").into_bytes(),
        blobs,
    }
}

fn full(channel: &str, bytes: &str) -> Blob {
    Blob {
        channel: channel.into(),
        delta_of: None,
        bytes: bytes.as_bytes().to_vec(),
    }
}

fn delta(channel: &str, of: &str, bytes: &str) -> Blob {
    Blob {
        channel: channel.into(),
        delta_of: Some(of.into()),
        bytes: bytes.as_bytes().to_vec(),
    }
}

fn write(task: &str, path: &str, idx: i64, channel: &str, bytes: &str) -> PendingWrite {
    PendingWrite {
        task_id: task.to_owned(),
        task_path: path.to_owned(),
        idx,
        channel: channel.to_owned(),
        bytes: bytes.as_bytes().to_vec(),
    }
}

fn without_blobs(mut r: CheckpointRecord) -> CheckpointRecord {
    r.blobs.clear();
    r
}

/// The value chains of a loaded checkpoint, as strings.
fn chains(loaded: &Loaded) -> Vec<(String, Vec<String>)> {
    loaded
        .values
        .iter()
        .map(|(c, chain)| {
            (
                c.clone(),
                chain.iter().map(|b| String::from_utf8(b.clone()).unwrap()).collect(),
            )
        })
        .collect()
}

fn ids(records: &[CheckpointRecord]) -> Vec<&str> {
    records.iter().map(|r| &*r.id).collect()
}

// ---------------------------------------------------------------------------------------------
// The generic suite

async fn put_then_get_latest_and_by_id(saver: Arc<dyn Checkpointer>) {
    let s = &*saver;
    assert_eq!(s.get("t", "", None).await.unwrap(), None);
    assert_eq!(s.head("t", "").await.unwrap(), None);
    let r1 = record(
        "t",
        "",
        "cp-1",
        None,
        -1,
        &[("a", 1, Some("cp-1"))],
        vec![full("a", "one")],
    );
    let r2 = record(
        "t",
        "",
        "cp-2",
        Some("cp-1"),
        0,
        &[("a", 2, Some("cp-2")), ("b", 2, None)],
        vec![full("a", "two")],
    );
    s.put(r1.clone(), None).await.unwrap();
    s.put(r2.clone(), Some("cp-1")).await.unwrap();

    let latest = s.get("t", "", None).await.unwrap().unwrap();
    assert_eq!(
        latest,
        Loaded {
            record: without_blobs(r2.clone()),
            values: vec![("a".to_owned(), vec![b"two".to_vec()])],
            pending_writes: vec![],
            continued: vec![],
        }
    );
    let first = s.get("t", "", Some("cp-1")).await.unwrap().unwrap();
    assert_eq!(first.record, without_blobs(r1));
    assert_eq!(chains(&first), [("a".to_owned(), vec!["one".to_owned()])]);
    assert_eq!(s.head("t", "").await.unwrap().as_deref(), Some("cp-2"));
    assert_eq!(s.get("t", "", Some("cp-9")).await.unwrap(), None);
    assert_eq!(s.get("t", "sub", None).await.unwrap(), None);
    assert_eq!(s.get("other", "", None).await.unwrap(), None);
    assert_eq!(s.threads().await.unwrap(), ["t"]);
}

async fn list_is_newest_first_with_limit_and_before(saver: Arc<dyn Checkpointer>) {
    let s = &*saver;
    let mut parent: Option<String> = None;
    let mut puts = Vec::new();
    for i in 1..=5 {
        let id = format!("cp-{i}");
        let r = record(
            "t",
            "",
            &id,
            parent.as_deref(),
            i - 2,
            &[("a", i as u64, Some(&id))],
            vec![full("a", &id)],
        );
        s.put(r.clone(), parent.as_deref()).await.unwrap();
        puts.push(without_blobs(r));
        parent = Some(id);
    }
    // A subgraph's namespace is a history of its own.
    let sub = record("t", "inner:1", "cp-0", None, -1, &[], vec![]);
    s.put(sub.clone(), None).await.unwrap();

    let all = s.list("t", "", None, None).await.unwrap();
    assert_eq!(ids(&all), ["cp-5", "cp-4", "cp-3", "cp-2", "cp-1"]);
    assert_eq!(all, puts.iter().rev().cloned().collect::<Vec<_>>());
    assert_eq!(ids(&s.list("t", "", None, Some(2)).await.unwrap()), ["cp-5", "cp-4"]);
    assert_eq!(
        ids(&s.list("t", "", Some("cp-4"), Some(2)).await.unwrap()),
        ["cp-3", "cp-2"]
    );
    assert_eq!(ids(&s.list("t", "", Some("cp-2"), None).await.unwrap()), ["cp-1"]);
    assert_eq!(
        ids(&s.list("t", "", Some("cp-1"), None).await.unwrap()),
        Vec::<&str>::new()
    );
    assert_eq!(ids(&s.list("t", "", None, Some(0)).await.unwrap()), Vec::<&str>::new());
    assert_eq!(s.list("t", "inner:1", None, None).await.unwrap(), [sub]);
    assert_eq!(
        ids(&s.list("nobody", "", None, None).await.unwrap()),
        Vec::<&str>::new()
    );
}

/// A reader holding a value gets the links stored after the blob it holds, and the whole chain
/// of any value it cannot extend: rewritten, on another branch, of a blob it does not name.
async fn get_holding_returns_the_links_after_the_blob_held(saver: Arc<dyn Checkpointer>) {
    let s = &*saver;
    put_delta_thread(s).await;
    let held = |pairs: &[(&str, &str)]| -> Vec<Held> {
        pairs
            .iter()
            .map(|(channel, blob)| Held {
                channel: (*channel).into(),
                blob: (*blob).into(),
            })
            .collect()
    };
    // The trait's default `get_holding` is `get`: every chain whole, none continued.
    let stops_early = !format!("{s:?}").starts_with("Defaults");
    let read = |id: &'static str, pairs: Vec<Held>| async move {
        let loaded = s.get_holding("t", "", Some(id), &pairs).await.unwrap().unwrap();
        let whole = s.get("t", "", Some(id)).await.unwrap().unwrap();
        assert_eq!(loaded.record, whole.record, "{id}");
        assert_eq!(loaded.pending_writes, whole.pending_writes, "{id}");
        (chains(&loaded), loaded.continued)
    };
    let both = |notes: &[&str], q: &[&str]| {
        vec![
            (
                "notes".to_owned(),
                notes.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            ),
            ("q".to_owned(), q.iter().map(|s| s.to_string()).collect::<Vec<_>>()),
        ]
    };
    /// A checkpoint read, the blobs held, the chains of `notes` and `q`, the channels continued.
    type Case<'a> = (
        &'a str,
        &'a [(&'a str, &'a str)],
        (&'a [&'a str], &'a [&'a str]),
        &'a [&'a str],
    );
    let cases: [Case<'_>; 7] = [
        // Grew by one link, and by two on the fork's branch.
        ("cp-3", &[("notes", "cp-2")], (&[",c"], &["why"]), &["notes"]),
        ("cp-5", &[("notes", "cp-2")], (&[",x", ",y"], &["why"]), &["notes"]),
        // The same value: nothing to read.
        ("cp-3", &[("notes", "cp-3"), ("q", "cp-1")], (&[], &[]), &["notes", "q"]),
        // cp-5's chain does not pass through cp-3's blob (the other branch): whole.
        ("cp-5", &[("notes", "cp-3")], (&["[a", ",b", ",x", ",y"], &["why"]), &[]),
        // Rewritten whole at cp-6: whole.
        ("cp-7", &[("notes", "cp-5")], (&["[z", ",w"], &["why"]), &[]),
        // A blob that is not stored, or held for another channel: whole.
        (
            "cp-3",
            &[("notes", "cp-9"), ("other", "cp-2")],
            (&["[a", ",b", ",c"], &["why"]),
            &[],
        ),
        // An older checkpoint than the blob held: whole.
        ("cp-2", &[("notes", "cp-3")], (&["[a", ",b"], &["why"]), &[]),
    ];
    for (id, pairs, (notes, q), continued) in cases {
        let got = read(id, held(pairs)).await;
        if stops_early {
            assert_eq!(
                got,
                (both(notes, q), continued.iter().map(|c| c.to_string()).collect()),
                "{id} holding {pairs:?}"
            );
        } else {
            assert_eq!(
                got,
                (chains(&s.get("t", "", Some(id)).await.unwrap().unwrap()), vec![]),
                "{id}"
            );
        }
    }
    // The head, read for a reader holding it, is the head.
    let head = s
        .get_holding("t", "", None, &held(&[("notes", "cp-6")]))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&*head.record.id, "cp-7");
}

/// A history of 1,000 checkpoints (the memory saver keeps them in blocks of 256): each is found
/// by id, `list` pages through it from any point, ids between and past the stored ones find
/// nothing.
async fn a_long_history_is_found_by_id_and_listed_from_anywhere(saver: Arc<dyn Checkpointer>) {
    let s = &*saver;
    let id = |i: usize| format!("cp-{i:04}");
    let step = |i: usize| {
        let parent = i.checked_sub(1).map(id);
        record("t", "", &id(i), parent.as_deref(), i as i64 - 1, &[], vec![])
    };
    for run in (0..1000).collect::<Vec<usize>>().chunks(100) {
        let expected = run[0].checked_sub(1).map(id);
        s.put_many(run.iter().map(|&i| step(i)).collect(), expected.as_deref())
            .await
            .unwrap();
    }
    assert_eq!(s.head("t", "").await.unwrap(), Some(id(999)));
    for i in [0, 1, 254, 255, 256, 257, 511, 512, 767, 768, 998, 999] {
        let loaded = s.get("t", "", Some(&id(i))).await.unwrap().unwrap();
        assert_eq!(loaded.record, step(i), "{i}");
        let page = s.list("t", "", Some(&id(i)), Some(3)).await.unwrap();
        let want: Vec<String> = (i.saturating_sub(3)..i).rev().map(id).collect();
        assert_eq!(ids(&page), want, "{i}");
        // An id just after this one's, stored or not, lists from this one.
        let after = format!("{}~", id(i));
        assert_eq!(s.get("t", "", Some(&after)).await.unwrap(), None, "{i}");
        assert_eq!(ids(&s.list("t", "", Some(&after), Some(1)).await.unwrap()), [id(i)]);
    }
    assert_eq!(s.get("t", "", Some("cp-")).await.unwrap(), None);
    let all = s.list("t", "", None, None).await.unwrap();
    assert_eq!(ids(&all), (0..1000).rev().map(id).collect::<Vec<_>>());
    assert_eq!(s.usage("t").await.unwrap().checkpoints, 1000);
}

async fn unchanged_channel_points_at_an_older_blob_and_is_not_rewritten(saver: Arc<dyn Checkpointer>) {
    let s = &*saver;
    let big = "x".repeat(1000);
    s.put(
        record(
            "t",
            "",
            "cp-01",
            None,
            -1,
            &[("doc", 1, Some("cp-01")), ("n", 1, Some("cp-01"))],
            vec![full("doc", &big), full("n", "1")],
        ),
        None,
    )
    .await
    .unwrap();
    let mut parent = "cp-01".to_owned();
    for i in 2..=10u64 {
        let id = format!("cp-{i:02}");
        let n = i.to_string();
        let r = record(
            "t",
            "",
            &id,
            Some(&parent),
            i as i64,
            &[("doc", 1, Some("cp-01")), ("n", i, Some(&id)), ("gone", i, None)],
            vec![full("n", &n)],
        );
        s.put(r, Some(&parent)).await.unwrap();
        parent = id;
    }
    // The 1000-byte document was stored once; each step stored only its counter.
    assert_eq!(
        s.usage("t").await.unwrap(),
        Usage {
            checkpoints: 10,
            blobs: 11,
            blob_bytes: 1000 + 1 + 8 + 2,
            pending_writes: 0
        }
    );
    let latest = s.get("t", "", None).await.unwrap().unwrap();
    assert_eq!(&*latest.record.id, "cp-10");
    assert_eq!(
        chains(&latest),
        [
            ("doc".to_owned(), vec![big.clone()]),
            ("n".to_owned(), vec!["10".to_owned()])
        ]
    );
    let earlier = s.get("t", "", Some("cp-05")).await.unwrap().unwrap();
    assert_eq!(
        chains(&earlier),
        [("doc".to_owned(), vec![big]), ("n".to_owned(), vec!["5".to_owned()])]
    );
}

/// Thread `t`: `notes` grows by deltas over cp-1 to cp-3; cp-4 forks from cp-2 and cp-5 grows
/// that branch; cp-6 rewrites `notes` whole and cp-7 appends to it. `q` stays at cp-1's blob.
async fn put_delta_thread(s: &dyn Checkpointer) {
    fn notes(id: &str) -> [Ch<'_>; 2] {
        [("notes", 1, Some(id)), ("q", 1, Some("cp-1"))]
    }
    s.put(
        record(
            "t",
            "",
            "cp-1",
            None,
            -1,
            &notes("cp-1"),
            vec![full("notes", "[a"), full("q", "why")],
        ),
        None,
    )
    .await
    .unwrap();
    s.put(
        record(
            "t",
            "",
            "cp-2",
            Some("cp-1"),
            0,
            &notes("cp-2"),
            vec![delta("notes", "cp-1", ",b")],
        ),
        Some("cp-1"),
    )
    .await
    .unwrap();
    s.put(
        record(
            "t",
            "",
            "cp-3",
            Some("cp-2"),
            1,
            &notes("cp-3"),
            vec![delta("notes", "cp-2", ",c")],
        ),
        Some("cp-2"),
    )
    .await
    .unwrap();
    // A fork from cp-2: a second branch appends its own items onto cp-2's value.
    let mut fork = record(
        "t",
        "",
        "cp-4",
        Some("cp-2"),
        1,
        &notes("cp-4"),
        vec![delta("notes", "cp-2", ",x")],
    );
    fork.source = Source::Fork;
    s.put(fork, Some("cp-3")).await.unwrap();
    s.put(
        record(
            "t",
            "",
            "cp-5",
            Some("cp-4"),
            2,
            &notes("cp-5"),
            vec![delta("notes", "cp-4", ",y")],
        ),
        Some("cp-4"),
    )
    .await
    .unwrap();
    // A whole value restarts the chain.
    s.put(
        record(
            "t",
            "",
            "cp-6",
            Some("cp-5"),
            3,
            &notes("cp-6"),
            vec![full("notes", "[z")],
        ),
        Some("cp-5"),
    )
    .await
    .unwrap();
    s.put(
        record(
            "t",
            "",
            "cp-7",
            Some("cp-6"),
            4,
            &notes("cp-7"),
            vec![delta("notes", "cp-6", ",w")],
        ),
        Some("cp-6"),
    )
    .await
    .unwrap();
}

async fn delta_chains_rebuild_in_order_and_forks_do_not_mix(saver: Arc<dyn Checkpointer>) {
    let s = &*saver;
    put_delta_thread(s).await;
    async fn chain(s: &dyn Checkpointer, id: &str) -> Vec<(String, Vec<String>)> {
        chains(&s.get("t", "", Some(id)).await.unwrap().unwrap())
    }
    let notes_then_q = |items: &[&str]| {
        vec![
            (
                "notes".to_owned(),
                items.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            ),
            ("q".to_owned(), vec!["why".to_owned()]),
        ]
    };
    assert_eq!(chain(s, "cp-1").await, notes_then_q(&["[a"]));
    assert_eq!(chain(s, "cp-2").await, notes_then_q(&["[a", ",b"]));
    assert_eq!(chain(s, "cp-3").await, notes_then_q(&["[a", ",b", ",c"]));
    assert_eq!(chain(s, "cp-4").await, notes_then_q(&["[a", ",b", ",x"]));
    assert_eq!(chain(s, "cp-5").await, notes_then_q(&["[a", ",b", ",x", ",y"]));
    assert_eq!(chain(s, "cp-7").await, notes_then_q(&["[z", ",w"]));
    assert_eq!(s.head("t", "").await.unwrap().as_deref(), Some("cp-7"));
    assert_eq!(
        s.usage("t").await.unwrap(),
        Usage {
            checkpoints: 7,
            blobs: 8,
            blob_bytes: 2 + 3 + 2 * 6,
            pending_writes: 0
        }
    );
}

async fn invalid_records_are_refused_and_store_nothing(saver: Arc<dyn Checkpointer>) {
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

async fn put_many_stores_a_run_of_heads_all_or_none(saver: Arc<dyn Checkpointer>) {
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
    assert!(err.to_string().contains("extends checkpoint `cp-0`"), "{err}");
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
async fn put_many_of_a_long_run_stores_each_record_and_names_a_repeated_id(saver: Arc<dyn Checkpointer>) {
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

async fn put_writes_replaces_a_tasks_writes_and_orders_by_path_task_idx(saver: Arc<dyn Checkpointer>) {
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

async fn delete_thread_removes_every_namespace_and_nothing_else(saver: Arc<dyn Checkpointer>) {
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
async fn a_put_after_its_thread_was_deleted_finds_no_head(saver: Arc<dyn Checkpointer>) {
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

async fn two_writers_with_one_expected_head_exactly_one_wins(saver: Arc<dyn Checkpointer>) {
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

async fn many_threads_put_concurrently_keep_complete_ordered_histories(saver: Arc<dyn Checkpointer>) {
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

/// `history` hands back what `list` selects, each checkpoint as `get` reads it: value chains
/// through deltas and unchanged channels pointing at older rows, and each checkpoint's own
/// pending writes; with `before` and `limit` too, and nothing for an unknown thread.
async fn history_is_each_listed_checkpoint_as_get_reads_it(saver: Arc<dyn Checkpointer>) {
    let s = &*saver;
    let mut head: Option<String> = None;
    for step in -1..6i64 {
        let id = format!("cp-{}", step + 2);
        let (channels, blobs) = match &head {
            None => (
                vec![("log", 1, Some(id.as_str())), ("q", 1, Some(id.as_str()))],
                vec![full("log", "0"), full("q", "why")],
            ),
            Some(parent) => (
                vec![("log", step as u64 + 2, Some(id.as_str())), ("q", 1, Some("cp-1"))],
                vec![delta("log", parent, &format!(",{}", step + 1))],
            ),
        };
        s.put(
            record("t", "", &id, head.as_deref(), step, &channels, blobs),
            head.as_deref(),
        )
        .await
        .unwrap();
        if step % 2 == 0 {
            let writes = vec![write("task-b", "b", 0, "log", "w1"), write("task-b", "b", 1, "q", "w2")];
            s.put_writes("t", "", &id, "task-b", writes).await.unwrap();
            s.put_writes("t", "", &id, "task-a", vec![write("task-a", "a", 0, "log", "w0")])
                .await
                .unwrap();
        }
        head = Some(id);
    }
    // Another namespace and thread, which no history of `t` shows.
    s.put(record("t", "sub", "cp-9", None, -1, &[], vec![]), None)
        .await
        .unwrap();
    s.put(record("u", "", "cp-9", None, -1, &[], vec![]), None)
        .await
        .unwrap();
    for (before, limit) in [
        (None, None),
        (None, Some(3)),
        (Some("cp-5"), None),
        (Some("cp-5"), Some(2)),
    ] {
        let listed = s.list("t", "", before, limit).await.unwrap();
        let mut each = Vec::new();
        for r in &listed {
            each.push(s.get("t", "", Some(&r.id)).await.unwrap().unwrap());
        }
        let history = s.history("t", "", before, limit).await.unwrap();
        assert_eq!(history, each, "before {before:?}, limit {limit:?}");
    }
    let history = s.history("t", "", None, None).await.unwrap();
    assert_eq!(history.len(), 7);
    assert_eq!(
        chains(&history[0]),
        [
            (
                "log".to_owned(),
                ["0", ",1", ",2", ",3", ",4", ",5", ",6"].map(String::from).to_vec()
            ),
            ("q".to_owned(), vec!["why".to_owned()])
        ]
    );
    let tasks: Vec<&str> = history[1].pending_writes.iter().map(|w| &*w.task_id).collect();
    assert_eq!(
        tasks,
        ["task-a", "task-b", "task-b"],
        "checkpoint cp-6's writes, in path order"
    );
    assert!(history[0].pending_writes.is_empty());
    assert_eq!(s.history("nobody", "", None, None).await.unwrap(), []);
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

async fn copy_thread_copies_every_namespace_with_its_writes_and_the_copy_lives_apart(saver: Arc<dyn Checkpointer>) {
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

async fn copy_thread_refuses_a_taken_target_a_missing_source_and_itself(saver: Arc<dyn Checkpointer>) {
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

/// Generates one test per behaviour for a saver, given an async constructor of a [`Harness`].
/// `ignore = "why"` marks every test of the saver ignored, for a saver that needs a server:
/// `cargo test` lists them as ignored, and `-- --include-ignored` runs them.
macro_rules! suite {
    ($saver:ident: $harness:path $(, ignore = $why:literal)?) => {
        mod $saver {
            suite!(@tests $harness $(, $why)?;
                put_then_get_latest_and_by_id
                list_is_newest_first_with_limit_and_before
                a_long_history_is_found_by_id_and_listed_from_anywhere
                unchanged_channel_points_at_an_older_blob_and_is_not_rewritten
                delta_chains_rebuild_in_order_and_forks_do_not_mix
                get_holding_returns_the_links_after_the_blob_held
                invalid_records_are_refused_and_store_nothing
                put_many_stores_a_run_of_heads_all_or_none
                put_many_of_a_long_run_stores_each_record_and_names_a_repeated_id
                put_writes_replaces_a_tasks_writes_and_orders_by_path_task_idx
                delete_thread_removes_every_namespace_and_nothing_else
                a_put_after_its_thread_was_deleted_finds_no_head
                two_writers_with_one_expected_head_exactly_one_wins
                many_threads_put_concurrently_keep_complete_ordered_histories
                history_is_each_listed_checkpoint_as_get_reads_it
                copy_thread_copies_every_namespace_with_its_writes_and_the_copy_lives_apart
                copy_thread_refuses_a_taken_target_a_missing_source_and_itself
            );
        }
    };
    (@tests $harness:path; $($test:ident)*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() {
                let harness = $harness().await;
                super::$test(harness.saver.clone()).await;
            }
        )*
    };
    (@tests $harness:path, $why:literal; $($test:ident)*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            #[ignore = $why]
            async fn $test() {
                let harness = $harness().await;
                super::$test(harness.saver.clone()).await;
            }
        )*
    };
}

/// A saver under test, and whatever must live as long (and be cleaned up after) it.
struct Harness {
    saver: Arc<dyn Checkpointer>,
    _cleanup: Option<Box<dyn Send>>,
}

async fn memory_harness() -> Harness {
    Harness {
        saver: Arc::new(MemorySaver::new()),
        _cleanup: None,
    }
}

suite!(memory: super::memory_harness);

/// A [`MemorySaver`] behind the trait's defaults (`put`, `history`, `copy_thread`,
/// `get_holding`): what a saver of another crate gets, which the whole suite runs against too.
#[derive(Debug)]
struct Defaults(MemorySaver);

type Saved<'a, T> = futures::future::BoxFuture<'a, Result<T, weir_runtime::checkpoint::SaverError>>;

impl Checkpointer for Defaults {
    fn put_many<'a>(&'a self, records: Vec<CheckpointRecord>, expected: Option<&'a str>) -> Saved<'a, ()> {
        self.0.put_many(records, expected)
    }
    fn get<'a>(&'a self, thread: &'a str, ns: &'a str, id: Option<&'a str>) -> Saved<'a, Option<Loaded>> {
        self.0.get(thread, ns, id)
    }
    fn head<'a>(&'a self, thread: &'a str, ns: &'a str) -> Saved<'a, Option<String>> {
        self.0.head(thread, ns)
    }
    fn list<'a>(
        &'a self,
        thread: &'a str,
        ns: &'a str,
        before: Option<&'a str>,
        limit: Option<usize>,
    ) -> Saved<'a, Vec<CheckpointRecord>> {
        self.0.list(thread, ns, before, limit)
    }
    fn put_writes<'a>(
        &'a self,
        thread: &'a str,
        ns: &'a str,
        checkpoint: &'a str,
        task: &'a str,
        writes: Vec<PendingWrite>,
    ) -> Saved<'a, ()> {
        self.0.put_writes(thread, ns, checkpoint, task, writes)
    }
    fn delete_thread<'a>(&'a self, thread: &'a str) -> Saved<'a, ()> {
        self.0.delete_thread(thread)
    }
    fn threads(&self) -> Saved<'_, Vec<String>> {
        self.0.threads()
    }
    fn usage<'a>(&'a self, thread: &'a str) -> Saved<'a, Usage> {
        self.0.usage(thread)
    }
    fn namespaces<'a>(&'a self, thread: &'a str) -> Saved<'a, Vec<String>> {
        self.0.namespaces(thread)
    }
}

async fn defaults_harness() -> Harness {
    Harness {
        saver: Arc::new(Defaults(MemorySaver::new())),
        _cleanup: None,
    }
}

suite!(defaults: super::defaults_harness);

// ---------------------------------------------------------------------------------------------
// SQLite

#[cfg(feature = "sqlite")]
mod sqlite_support {
    use std::path::{Path, PathBuf};
    use weir_runtime::checkpoint::new_checkpoint_id;

    /// A directory of its own under the system's temp directory, removed on drop.
    pub(crate) struct TempDir(PathBuf);

    impl TempDir {
        pub(crate) fn new() -> Self {
            let dir = std::env::temp_dir().join(format!("weir-savers-{}-{}", std::process::id(), new_checkpoint_id()));
            std::fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }
        pub(crate) fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

#[cfg(feature = "sqlite")]
async fn sqlite_harness() -> Harness {
    let dir = sqlite_support::TempDir::new();
    let saver = weir_runtime::checkpoint::SqliteSaver::open(dir.path().join("weir.db")).unwrap();
    Harness {
        saver: Arc::new(saver),
        _cleanup: Some(Box::new(dir)),
    }
}

#[cfg(feature = "sqlite")]
suite!(sqlite: super::sqlite_harness);

#[cfg(feature = "sqlite")]
mod sqlite_file {
    use super::sqlite_support::TempDir;
    use super::*;
    use weir_runtime::checkpoint::{SqliteSaver, Synchronous};

    /// Thread `t`'s first checkpoint, `cp-1`: channel `a` with the value `v`.
    fn first_of_t() -> CheckpointRecord {
        record(
            "t",
            "",
            "cp-1",
            None,
            -1,
            &[("a", 1, Some("cp-1"))],
            vec![full("a", "v")],
        )
    }

    /// A put tries in place first, without waiting for the file's lock: when another process
    /// holds it, the put waits for it (up to the busy timeout) instead of failing, and the busy
    /// timeout of later puts is the configured one again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_put_waits_for_another_writers_lock_and_then_lands() {
        let dir = TempDir::new();
        let path = dir.path().join("locked.db");
        let saver = SqliteSaver::options()
            .synchronous(Synchronous::Off)
            .busy_timeout(std::time::Duration::from_secs(10))
            .open(&path)
            .unwrap();
        let first = record(
            "t",
            "",
            "cp-1",
            None,
            -1,
            &[("a", 1, Some("cp-1"))],
            vec![full("a", "1")],
        );
        saver.put(first, None).await.unwrap();
        for (i, id) in ["cp-2", "cp-3"].into_iter().enumerate() {
            let other = rusqlite::Connection::open(&path).unwrap();
            other.execute_batch("BEGIN IMMEDIATE").unwrap();
            let release = std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(300));
                other.execute_batch("COMMIT").unwrap();
            });
            let parent = if i == 0 { "cp-1" } else { "cp-2" };
            let started = std::time::Instant::now();
            let next = record(
                "t",
                "",
                id,
                Some(parent),
                i as i64,
                &[("a", 2 + i as u64, Some(id))],
                vec![full("a", "2")],
            );
            saver.put(next, Some(parent)).await.unwrap();
            assert!(
                started.elapsed() >= std::time::Duration::from_millis(250),
                "the put did not wait for the lock"
            );
            release.join().unwrap();
        }
        assert_eq!(saver.head("t", "").await.unwrap().as_deref(), Some("cp-3"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn file_is_created_on_first_use_in_wal_mode_and_reopening_sees_the_data() {
        let dir = TempDir::new();
        let path = dir.path().join("nested-name.db");
        assert!(!path.exists());
        let saver = SqliteSaver::options()
            .synchronous(Synchronous::Full)
            .open(&path)
            .unwrap();
        assert!(path.exists());
        assert_eq!(saver.path(), path);
        let r = record(
            "t",
            "",
            "cp-1",
            None,
            -1,
            &[("a", 1, Some("cp-1"))],
            vec![full("a", "kept")],
        );
        saver.put(r.clone(), None).await.unwrap();
        drop(saver);

        let conn = rusqlite::Connection::open(&path).unwrap();
        let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
        assert_eq!(mode, "wal");
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
        assert_eq!(version, 4);
        drop(conn);

        let reopened = SqliteSaver::open(&path).unwrap();
        let loaded = reopened.get("t", "", None).await.unwrap().unwrap();
        assert_eq!(loaded.record, without_blobs(r));
        assert_eq!(chains(&loaded), [("a".to_owned(), vec!["kept".to_owned()])]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_file_with_a_newer_schema_is_refused_and_left_untouched() {
        let dir = TempDir::new();
        let path = dir.path().join("future.db");
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute_batch("CREATE TABLE from_the_future (x INTEGER); PRAGMA user_version = 99;")
                .unwrap();
        }
        let before = std::fs::read(&path).unwrap();
        let listing = |dir: &std::path::Path| {
            let mut names: Vec<String> = std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            names.sort();
            names
        };
        assert_eq!(listing(dir.path()), ["future.db"]);

        let err = SqliteSaver::open(&path).unwrap_err();
        assert!(err.is_schema_too_new(), "{err}");
        assert_eq!(
            err.to_string(),
            format!(
                "`{}` has checkpoint schema version 99, newer than version 4 that this weir supports; it was left \
                 untouched, open it with a newer weir",
                path.display()
            )
        );
        assert_eq!(std::fs::read(&path).unwrap(), before);
        assert_eq!(listing(dir.path()), ["future.db"]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_file_that_is_not_a_database_is_an_error_naming_it() {
        let dir = TempDir::new();
        let path = dir.path().join("notes.txt");
        std::fs::write(
            &path,
            "this is not a database, just some text that is long enough to have a header",
        )
        .unwrap();
        let err = SqliteSaver::open(&path).unwrap_err();
        let source = std::error::Error::source(&err).expect("SQLite's error").to_string();
        assert_eq!(
            err.to_string(),
            format!("sqlite checkpoint store `{}` failed: {source}", path.display())
        );
        assert!(source.contains("not a database"), "{source}");
        assert!(!err.is_schema_too_new() && !err.is_conflict());
    }

    /// A put SQLite refuses (here a trigger another connection added) fails naming the file,
    /// with SQLite's own words as its source; nothing of it is stored, what was stored before
    /// stays, and the saver goes on once the cause is gone.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_put_sqlite_refuses_fails_naming_the_file_and_keeps_what_was_stored() {
        let dir = TempDir::new();
        let path = dir.path().join("weir.db");
        let saver = SqliteSaver::open(&path).unwrap();
        let first = first_of_t();
        saver.put(first.clone(), None).await.unwrap();
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TRIGGER refuse BEFORE INSERT ON checkpoints BEGIN SELECT RAISE(ABORT, 'no more checkpoints here'); END;",
        )
        .unwrap();
        // `n` records after cp-1, each after the one before: one insert, or 16-row ones too.
        let run = |n: usize| -> Vec<CheckpointRecord> {
            let ids: Vec<String> = (0..n).map(|k| format!("cp-2-{k:02}")).collect();
            (0..n)
                .map(|k| {
                    let parent = if k == 0 { "cp-1" } else { &ids[k - 1] };
                    let id = &ids[k];
                    record(
                        "t",
                        "",
                        id,
                        Some(parent),
                        k as i64,
                        &[("a", k as u64 + 2, Some(id))],
                        vec![full("a", "w")],
                    )
                })
                .collect()
        };
        for batch in [run(1), run(17)] {
            let err = saver.put_many(batch, Some("cp-1")).await.unwrap_err();
            let source = std::error::Error::source(&err).expect("SQLite's error").to_string();
            assert_eq!(
                err.to_string(),
                format!("sqlite checkpoint store `{}` failed: {source}", path.display())
            );
            assert!(source.contains("no more checkpoints here"), "{source}");
            assert_eq!(saver.head("t", "").await.unwrap().as_deref(), Some("cp-1"));
        }
        conn.execute_batch("DROP TRIGGER refuse").unwrap();
        saver.put_many(run(17), Some("cp-1")).await.unwrap();
        let listed = saver.list("t", "", None, None).await.unwrap();
        assert_eq!(listed.len(), 18);
        assert_eq!(&*listed[0].id, "cp-2-16");
        assert_eq!(&*listed[17].id, "cp-1");
        assert_eq!(
            saver.get("t", "", Some("cp-1")).await.unwrap().unwrap().record.body,
            first.body
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_checkpoint_whose_blob_was_removed_behind_its_back_is_corrupt() {
        let dir = TempDir::new();
        let path = dir.path().join("weir.db");
        let saver = SqliteSaver::open(&path).unwrap();
        let r = first_of_t();
        saver.put(r, None).await.unwrap();
        let conn = rusqlite::Connection::open(&path).unwrap();
        let update = "UPDATE checkpoints SET blob_index = ?1, blob_bytes = ?2";
        assert_eq!(conn.execute(update, rusqlite::params![b"", b""]).unwrap(), 1);
        let err = saver.get("t", "", None).await.unwrap_err();
        assert!(err.is_corrupt(), "{err}");
        assert_eq!(
            err.to_string(),
            "corrupt checkpoint `cp-1` of thread `t`: the value of channel `a` needs the blob stored under checkpoint \
             `cp-1`, which is missing"
        );
        // An index cut short, and one that lists more bytes than the row holds.
        for (index, bytes, says) in [
            (&b"\x01\x00\x00\x00a\xff\xff"[..], &b"v"[..], "it ends inside a length"),
            (
                &b"\x01\x00\x00\x00a\xff\xff\xff\xff\x02\x00\x00\x00"[..],
                &b"v"[..],
                "its index lists 2 bytes of values, it holds 1",
            ),
            (
                &b"\x09\x00\x00\x00a"[..],
                &b""[..],
                "a name of 9 bytes runs past its end",
            ),
        ] {
            conn.execute(update, rusqlite::params![index, bytes]).unwrap();
            let err = saver.get("t", "", None).await.unwrap_err();
            assert!(err.is_corrupt(), "{err}");
            assert_eq!(
                err.to_string(),
                format!("corrupt checkpoint `cp-1` of thread `t`: the blobs stored under checkpoint `cp-1` cannot be read: {says}")
            );
            let err = saver.usage("t").await.unwrap_err();
            assert!(err.is_corrupt(), "{err}");
            // A put that builds on the damaged row is refused, naming it, and stores nothing.
            let next = record(
                "t",
                "",
                "cp-2",
                Some("cp-1"),
                0,
                &[("a", 2, Some("cp-2"))],
                vec![delta("a", "cp-1", "+")],
            );
            let err = saver.put(next, Some("cp-1")).await.unwrap_err();
            assert!(err.is_corrupt(), "{err}");
            assert_eq!(
                err.to_string(),
                format!("corrupt checkpoint `cp-2` of thread `t`: the blobs stored under checkpoint `cp-1` cannot be read: {says}")
            );
            assert_eq!(saver.head("t", "").await.unwrap().as_deref(), Some("cp-1"));
        }
    }

    /// Schema version 1 as weir wrote it (`MIGRATIONS[0]`), frozen here: the tables of a file
    /// from an older weir.
    const SCHEMA_V1: &str = "CREATE TABLE checkpoints (
        thread_id TEXT NOT NULL,
        ns TEXT NOT NULL,
        id TEXT NOT NULL,
        parent_id TEXT,
        step INTEGER NOT NULL,
        source TEXT NOT NULL,
        writes TEXT NOT NULL,
        metadata TEXT NOT NULL,
        created_at TEXT NOT NULL,
        channels TEXT NOT NULL,
        body BLOB NOT NULL,
        PRIMARY KEY (thread_id, ns, id)
    );
    CREATE TABLE blobs (
        thread_id TEXT NOT NULL,
        ns TEXT NOT NULL,
        checkpoint_id TEXT NOT NULL,
        channel TEXT NOT NULL,
        delta_of TEXT,
        bytes BLOB NOT NULL,
        PRIMARY KEY (thread_id, ns, checkpoint_id, channel)
    );
    CREATE TABLE writes (
        thread_id TEXT NOT NULL,
        ns TEXT NOT NULL,
        checkpoint_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        idx INTEGER NOT NULL,
        task_path TEXT NOT NULL,
        channel TEXT NOT NULL,
        bytes BLOB NOT NULL,
        PRIMARY KEY (thread_id, ns, checkpoint_id, task_id, idx)
    );
    CREATE TABLE heads (
        thread_id TEXT NOT NULL,
        ns TEXT NOT NULL,
        head TEXT NOT NULL,
        PRIMARY KEY (thread_id, ns)
    ) WITHOUT ROWID;";

    /// A whole value longer than a blob row keeps inline.
    fn long(tag: char) -> String {
        std::iter::repeat_n(tag, 5000).collect()
    }

    /// Writes a file of schema version 1 at `path` (by hand, as weir wrote it then): two
    /// checkpoints of thread `t` with long values `a` and `notes`, a delta, an unchanged channel
    /// and two pending writes.
    fn write_v1_file(path: &std::path::Path, a: &str, notes: &str) {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(())).unwrap();
        conn.execute_batch(SCHEMA_V1).unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
        let checkpoint = |id: &str, parent: Option<&str>, step: i64, channels: &str| {
            conn.execute(
                "INSERT INTO checkpoints VALUES ('t', '', ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                rusqlite::params![
                    id,
                    parent,
                    step,
                    if step < 0 { "input" } else { "loop" },
                    format!("[\"node-{step}\"]"),
                    format!("{{\"step\":\"{step}\",\"user\":\"ada\"}}"),
                    format!("2026-11-01T10:00:{:02}.000000Z", step + 1),
                    channels,
                    format!("body of {id}").into_bytes(),
                ],
            )
            .unwrap();
        };
        let blob = |id: &str, channel: &str, delta_of: Option<&str>, bytes: &str| {
            conn.execute(
                "INSERT INTO blobs VALUES ('t', '', ?1, ?2, ?3, ?4)",
                rusqlite::params![id, channel, delta_of, bytes.as_bytes()],
            )
            .unwrap();
        };
        checkpoint(
            "cp-1",
            None,
            -1,
            r#"[["a",1,"cp-1"],["count",1,"cp-1"],["notes",1,"cp-1"]]"#,
        );
        blob("cp-1", "a", None, a);
        blob("cp-1", "count", None, "1");
        blob("cp-1", "notes", None, notes);
        checkpoint(
            "cp-2",
            Some("cp-1"),
            0,
            r#"[["a",1,"cp-1"],["count",2,"cp-2"],["notes",2,"cp-2"],["branch:to:b",2,null]]"#,
        );
        blob("cp-2", "count", None, "2");
        blob("cp-2", "notes", Some("cp-1"), "+n2");
        conn.execute("INSERT INTO heads VALUES ('t', '', 'cp-2')", []).unwrap();
        for (task, idx, channel, bytes) in [("task-b", 0, "count", "3"), ("task-b", 1, "notes", "+n3")] {
            conn.execute(
                "INSERT INTO writes VALUES ('t', '', 'cp-2', ?1, ?2, 'path-b', ?3, ?4)",
                rusqlite::params![task, idx, channel, bytes.as_bytes()],
            )
            .unwrap();
        }
    }

    /// A file written by schema version 1 (by hand, as weir wrote it then) is migrated on open:
    /// every checkpoint reads back as before, with its value chains (short and long values,
    /// deltas, an unchanged channel) and pending writes, and new checkpoints build on its blobs.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_version_1_file_is_migrated_and_reads_back_the_same() {
        let dir = TempDir::new();
        let path = dir.path().join("v1.db");
        let (a, notes) = (long('a'), long('n'));
        write_v1_file(&path, &a, &notes);
        let saver = SqliteSaver::open(&path).unwrap();
        let conn = rusqlite::Connection::open(&path).unwrap();
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
        assert_eq!(version, 4);

        let first = record(
            "t",
            "",
            "cp-1",
            None,
            -1,
            &[
                ("a", 1, Some("cp-1")),
                ("count", 1, Some("cp-1")),
                ("notes", 1, Some("cp-1")),
            ],
            vec![],
        );
        let second = record(
            "t",
            "",
            "cp-2",
            Some("cp-1"),
            0,
            &[
                ("a", 1, Some("cp-1")),
                ("count", 2, Some("cp-2")),
                ("notes", 2, Some("cp-2")),
                ("branch:to:b", 2, None),
            ],
            vec![],
        );
        let head = saver.get("t", "", None).await.unwrap().unwrap();
        assert_eq!(head.record, second);
        assert_eq!(
            chains(&head),
            [
                ("a".to_owned(), vec![a.clone()]),
                ("count".to_owned(), vec!["2".to_owned()]),
                ("notes".to_owned(), vec![notes.clone(), "+n2".to_owned()]),
            ]
        );
        assert_eq!(
            head.pending_writes,
            [
                write("task-b", "path-b", 0, "count", "3"),
                write("task-b", "path-b", 1, "notes", "+n3")
            ]
        );
        let older = saver.get("t", "", Some("cp-1")).await.unwrap().unwrap();
        assert_eq!(older.record, first);
        assert_eq!(
            chains(&older),
            [
                ("a".to_owned(), vec![a.clone()]),
                ("count".to_owned(), vec!["1".to_owned()]),
                ("notes".to_owned(), vec![notes.clone()]),
            ]
        );
        assert!(older.pending_writes.is_empty());
        assert_eq!(ids(&saver.list("t", "", None, None).await.unwrap()), ["cp-2", "cp-1"]);
        assert_eq!(
            saver.usage("t").await.unwrap(),
            Usage {
                checkpoints: 2,
                blobs: 5,
                blob_bytes: 2 * 5000 + 1 + 1 + 3,
                pending_writes: 2,
            }
        );

        // The blobs moved into their checkpoints' rows, the tables of version 2 are gone (those
        // of version 4, retention's, are there); new checkpoints build on migrated blobs.
        let tables: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(tables, ["checkpoints", "pruned", "retained_blobs", "writes"]);
        let third = record(
            "t",
            "",
            "cp-3",
            Some("cp-2"),
            1,
            &[
                ("a", 1, Some("cp-1")),
                ("count", 3, Some("cp-3")),
                ("notes", 3, Some("cp-3")),
            ],
            vec![full("count", "3"), delta("notes", "cp-2", "+n3")],
        );
        saver.put(third.clone(), Some("cp-2")).await.unwrap();
        let loaded = saver.get("t", "", None).await.unwrap().unwrap();
        assert_eq!(loaded.record, without_blobs(third));
        assert_eq!(
            chains(&loaded),
            [
                ("a".to_owned(), vec![a]),
                ("count".to_owned(), vec!["3".to_owned()]),
                ("notes".to_owned(), vec![notes, "+n2".to_owned(), "+n3".to_owned()]),
            ]
        );
    }

    /// Long values live in their checkpoint's row like short ones: they read back whole, extend
    /// by deltas, count in the usage, and go with their thread.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn long_values_are_stored_in_their_rows_and_go_with_their_thread() {
        let dir = TempDir::new();
        let path = dir.path().join("long.db");
        let saver = SqliteSaver::open(&path).unwrap();
        let big: String = (0..100_000).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
        let edge = "e".repeat(192);
        let over = "o".repeat(193);
        for thread in ["t", "u"] {
            let first = record(
                thread,
                "",
                "cp-1",
                None,
                -1,
                &[
                    ("big", 1, Some("cp-1")),
                    ("edge", 1, Some("cp-1")),
                    ("over", 1, Some("cp-1")),
                ],
                vec![full("big", &big), full("edge", &edge), full("over", &over)],
            );
            let second = record(
                thread,
                "",
                "cp-2",
                Some("cp-1"),
                0,
                &[
                    ("big", 2, Some("cp-2")),
                    ("edge", 1, Some("cp-1")),
                    ("over", 1, Some("cp-1")),
                ],
                vec![delta("big", "cp-1", "+1")],
            );
            saver.put_many(vec![first, second], None).await.unwrap();
        }
        let loaded = saver.get("t", "", None).await.unwrap().unwrap();
        assert_eq!(
            chains(&loaded),
            [
                ("big".to_owned(), vec![big.clone(), "+1".to_owned()]),
                ("edge".to_owned(), vec![edge.clone()]),
                ("over".to_owned(), vec![over.clone()]),
            ]
        );
        assert_eq!(
            saver.usage("t").await.unwrap(),
            Usage {
                checkpoints: 2,
                blobs: 4,
                blob_bytes: 100_000 + 192 + 193 + 2,
                pending_writes: 0,
            }
        );
        let conn = rusqlite::Connection::open(&path).unwrap();
        let stored = |conn: &rusqlite::Connection| -> Vec<(String, i64)> {
            conn.prepare("SELECT thread_id, LENGTH(blob_bytes) FROM checkpoints ORDER BY thread_id, id")
                .unwrap()
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        let rows = |thread: &str| [(thread.to_owned(), 100_000 + 192 + 193), (thread.to_owned(), 2)];
        assert_eq!(stored(&conn), [rows("t"), rows("u")].concat());

        saver.delete_thread("t").await.unwrap();
        assert_eq!(stored(&conn), rows("u"));
        let other = saver.get("u", "", None).await.unwrap().unwrap();
        assert_eq!(chains(&other), chains(&loaded));
    }

    /// A file whose blobs cannot all be carried into the new schema (here a blob of a checkpoint
    /// that has no row) is refused, naming the checkpoint, and left as it was.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_file_that_cannot_be_migrated_is_refused_and_left_untouched() {
        let dir = TempDir::new();
        let path = dir.path().join("v1.db");
        write_v1_file(&path, "[a]", "[n]");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute("INSERT INTO blobs VALUES ('t', '', 'cp-9', 'a', NULL, x'00')", [])
            .unwrap();
        let before: Vec<u8> = std::fs::read(&path).unwrap();
        let err = SqliteSaver::open(&path).unwrap_err();
        assert!(err.is_corrupt(), "{err}");
        assert_eq!(
            err.to_string(),
            format!(
                "corrupt checkpoint `cp-9` of thread `t`: its blob for channel `a` is stored but its row is missing, so \
                 `{}` cannot be migrated to schema version 4 (the file is left as it was)",
                path.display()
            )
        );
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
        assert_eq!(version, 1);
        let blobs: i64 = conn.query_row("SELECT COUNT(*) FROM blobs", [], |r| r.get(0)).unwrap();
        assert_eq!(blobs, 6);
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_savers_on_one_file_see_each_other_and_conflict() {
        let dir = TempDir::new();
        let path = dir.path().join("shared.db");
        // Two savers, each with its own connections: two processes sharing the file.
        let (one, two) = (SqliteSaver::open(&path).unwrap(), SqliteSaver::open(&path).unwrap());
        one.put(record("t", "", "cp-0", None, -1, &[], vec![]), None)
            .await
            .unwrap();
        assert_eq!(two.head("t", "").await.unwrap().as_deref(), Some("cp-0"));

        for round in 0..20 {
            let head = one.head("t", "").await.unwrap().unwrap();
            let a = record("t", "", &format!("cp-{round:02}-a"), Some(&head), round, &[], vec![]);
            let b = record("t", "", &format!("cp-{round:02}-b"), Some(&head), round, &[], vec![]);
            let (ra, rb) = tokio::join!(one.put(a, Some(&head)), two.put(b, Some(&head)));
            let (winner, err) = match (ra, rb) {
                (Ok(()), Err(e)) => (format!("cp-{round:02}-a"), e),
                (Err(e), Ok(())) => (format!("cp-{round:02}-b"), e),
                other => panic!("round {round}: exactly one writer must win, got {other:?}"),
            };
            assert!(err.is_conflict(), "{err}");
            assert_eq!(err.thread_id(), Some("t"));
            assert_eq!(one.head("t", "").await.unwrap(), Some(winner.clone()));
            assert_eq!(two.head("t", "").await.unwrap(), Some(winner));
        }
        assert_eq!(two.list("t", "", None, None).await.unwrap().len(), 21);
    }

    /// A saver whose last put left a thread's head does not take it for the head still once
    /// another process has moved it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_head_another_saver_moved_since_this_savers_last_put_is_seen() {
        let dir = TempDir::new();
        let path = dir.path().join("shared.db");
        let (one, two) = (SqliteSaver::open(&path).unwrap(), SqliteSaver::open(&path).unwrap());
        async fn put(
            saver: &SqliteSaver,
            id: &str,
            parent: Option<&str>,
        ) -> Result<(), weir_runtime::checkpoint::SaverError> {
            let step = id[3..].parse::<i64>().unwrap();
            saver.put(record("t", "", id, parent, step, &[], vec![]), parent).await
        }
        put(&one, "cp-1", None).await.unwrap();
        put(&two, "cp-2", Some("cp-1")).await.unwrap();
        let err = put(&one, "cp-3", Some("cp-1")).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "checkpoint conflict on thread `t`: expected head `cp-1`, found `cp-2`; another writer is running this thread"
        );
        put(&one, "cp-3", Some("cp-2")).await.unwrap();
        let err = put(&two, "cp-4", Some("cp-2")).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "checkpoint conflict on thread `t`: expected head `cp-2`, found `cp-3`; another writer is running this thread"
        );
        put(&two, "cp-4", Some("cp-3")).await.unwrap();
        put(&two, "cp-5", Some("cp-4")).await.unwrap();
        assert_eq!(
            ids(&one.list("t", "", None, None).await.unwrap()),
            ["cp-5", "cp-4", "cp-3", "cp-2", "cp-1"]
        );
    }
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL

#[cfg(feature = "postgres")]
mod postgres_support {
    use weir_runtime::checkpoint::new_checkpoint_id;

    /// The database to test against. These tests are ignored unless asked for: asked for
    /// without a database, they fail rather than pass having tested nothing.
    pub(crate) fn url() -> String {
        match std::env::var("WEIR_POSTGRES_URL") {
            Ok(url) if !url.is_empty() => url,
            _ => panic!(
                "WEIR_POSTGRES_URL is not set: the PostgreSQL tests need a database, \
                 e.g. postgres://postgres@127.0.0.1:5432/test"
            ),
        }
    }

    /// A fresh schema name, dropped (with everything in it) when this is dropped.
    pub(crate) struct Schema {
        pub(crate) url: String,
        pub(crate) name: String,
    }

    impl Schema {
        pub(crate) fn new(url: String) -> Self {
            Schema {
                url,
                name: format!("weir_test_{}", &new_checkpoint_id()[8..]),
            }
        }
    }

    impl Drop for Schema {
        fn drop(&mut self) {
            // Drop also runs while a test panics: clean up on a runtime of our own.
            let (url, name) = (self.url.clone(), self.name.clone());
            let _ = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(async {
                    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
                    tokio::spawn(connection);
                    client
                        .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{name}\" CASCADE"))
                        .await
                        .unwrap();
                });
            })
            .join();
        }
    }
}

#[cfg(feature = "postgres")]
async fn postgres_harness() -> Harness {
    let schema = postgres_support::Schema::new(postgres_support::url());
    let saver = weir_runtime::checkpoint::PostgresSaver::options()
        .schema(schema.name.clone())
        .connections(8)
        .connect(&schema.url)
        .await
        .unwrap();
    Harness {
        saver: Arc::new(saver),
        _cleanup: Some(Box::new(schema)),
    }
}

#[cfg(feature = "postgres")]
suite!(postgres: super::postgres_harness, ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored");

#[cfg(feature = "postgres")]
mod postgres_schema {
    use super::postgres_support::{url, Schema};
    use super::*;
    use weir_runtime::checkpoint::PostgresSaver;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
    async fn schema_is_created_on_first_use_and_reconnecting_sees_the_data() {
        let url = url();
        let schema = Schema::new(url);
        let saver = PostgresSaver::connect_with_schema(&schema.url, &schema.name)
            .await
            .unwrap();
        assert_eq!(saver.schema(), schema.name);
        saver
            .put(
                record(
                    "t",
                    "",
                    "cp-1",
                    None,
                    -1,
                    &[("a", 1, Some("cp-1"))],
                    vec![full("a", "kept")],
                ),
                None,
            )
            .await
            .unwrap();
        drop(saver);
        let again = PostgresSaver::connect_with_schema(&schema.url, &schema.name)
            .await
            .unwrap();
        let loaded = again.get("t", "", None).await.unwrap().unwrap();
        assert_eq!(chains(&loaded), [("a".to_owned(), vec!["kept".to_owned()])]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
    async fn a_schema_with_a_newer_version_is_refused_and_left_untouched() {
        let url = url();
        let schema = Schema::new(url);
        let (client, connection) = tokio_postgres::connect(&schema.url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        let name = &schema.name;
        client
            .batch_execute(&format!(
                "CREATE SCHEMA \"{name}\"; CREATE TABLE \"{name}\".weir_schema (version BIGINT PRIMARY KEY); \
                 INSERT INTO \"{name}\".weir_schema VALUES (99);"
            ))
            .await
            .unwrap();
        let err = PostgresSaver::connect_with_schema(&schema.url, name).await.unwrap_err();
        assert!(err.is_schema_too_new(), "{err}");
        let message = err.to_string();
        assert!(
            message.starts_with(&format!("PostgreSQL schema `{name}` at ")),
            "{message}"
        );
        assert!(
            message.ends_with(
                "has checkpoint schema version 99, newer than version 2 that this weir supports; it was left \
                 untouched, open it with a newer weir"
            ),
            "{message}"
        );
        let tables: Vec<String> = client
            .query(
                "SELECT table_name::text FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1",
                &[name],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(tables, ["weir_schema"]);
        let versions: Vec<i64> = client
            .query(&format!("SELECT version FROM \"{name}\".weir_schema"), &[])
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(versions, [99]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
    async fn a_bad_schema_name_is_refused() {
        let url = url();
        let err = PostgresSaver::connect_with_schema(&url, "Robert'); DROP")
            .await
            .unwrap_err();
        assert!(err.is_invalid());
        assert_eq!(
            err.to_string(),
            "invalid saver configuration: `Robert'); DROP` cannot name a PostgreSQL schema; use lower-case ASCII \
             letters, digits and `_`"
        );
    }
}
