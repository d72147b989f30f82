//! The SQLite saver's own behaviours: its file, schema versions, several processes.

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
