//! The suite: what a saver reads back: the head and a checkpoint by id, listings, long histories,
//! unchanged channels and delta chains, `get_holding` and `history`.

use crate::records::*;
use std::sync::Arc;
use weir_runtime::checkpoint::{Checkpointer, Held, Loaded, Source, Usage};

pub(crate) async fn put_then_get_latest_and_by_id(saver: Arc<dyn Checkpointer>) {
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

pub(crate) async fn list_is_newest_first_with_limit_and_before(saver: Arc<dyn Checkpointer>) {
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
pub(crate) async fn get_holding_returns_the_links_after_the_blob_held(saver: Arc<dyn Checkpointer>) {
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
pub(crate) async fn a_long_history_is_found_by_id_and_listed_from_anywhere(saver: Arc<dyn Checkpointer>) {
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

pub(crate) async fn unchanged_channel_points_at_an_older_blob_and_is_not_rewritten(saver: Arc<dyn Checkpointer>) {
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

pub(crate) async fn delta_chains_rebuild_in_order_and_forks_do_not_mix(saver: Arc<dyn Checkpointer>) {
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

/// `history` hands back what `list` selects, each checkpoint as `get` reads it: value chains
/// through deltas and unchanged channels pointing at older rows, and each checkpoint's own
/// pending writes; with `before` and `limit` too, and nothing for an unknown thread.
pub(crate) async fn history_is_each_listed_checkpoint_as_get_reads_it(saver: Arc<dyn Checkpointer>) {
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
