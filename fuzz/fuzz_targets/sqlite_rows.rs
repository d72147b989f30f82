//! Feeds damaged SQLite checkpoint files to the `SqliteSaver`, whose reads must never panic:
//! whatever a row holds, `get`, `list`, `head`, `usage` and `threads` return data or an error.
//!
//! A template file is made once with the saver itself: one thread whose checkpoints cover whole
//! values, append deltas (a chain over three checkpoints), channels left pointing at older
//! checkpoints, a channel without a value, a subgraph namespace and pending writes. One copy of
//! it is opened once; each input overwrites a few columns of chosen rows with the fuzzer's bytes
//! (as a blob, as text, as an integer or as NULL), the blob columns most often, through SQLite
//! (so the file stays a database and the damage is in weir's own row format), reads everything
//! back, and puts the rows back as the template has them.
//!
//! Run: `RUSTC_BOOTSTRAP=1 cargo fuzz run sqlite_rows -- -max_total_time=180`.

#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use weir::checkpoint::{Blob, ChannelRef, CheckpointRecord, Checkpointer, PendingWrite, Source, SqliteSaver, Timestamp};

/// The checkpoint row's columns, the blob ones first: they are what weir parses itself.
const COLUMNS: &[&str] = &[
    "blob_index",
    "blob_bytes",
    "channels",
    "writes",
    "metadata",
    "source",
    "body",
    "parent_id",
    "step",
    "created_at",
    "id",
    "ns",
    "thread_id",
];

/// The pending write row's columns.
const WRITE_COLUMNS: &[&str] = &["task_id", "task_path", "idx", "channel", "bytes", "checkpoint_id"];

#[derive(Arbitrary, Debug)]
enum Value {
    Blob(Vec<u8>),
    Text(String),
    Int(i64),
    Null,
    /// Keeps the column's own bytes but cuts them at this length.
    Cut(u16),
    /// Keeps the column's own bytes with one byte changed.
    Flip(u16, u8),
}

#[derive(Arbitrary, Debug)]
struct Damage {
    /// A checkpoint row (by `rowid`, modulo the rows) or, when `writes` is set, a pending write.
    row: u8,
    writes: bool,
    column: u8,
    value: Value,
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    })
}

fn dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = if Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let dir = base.join(format!("weir-fuzz-sqlite-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        dir
    })
}

fn blob(channel: &str, delta_of: Option<&str>, bytes: &[u8]) -> Blob {
    Blob {
        channel: channel.into(),
        delta_of: delta_of.map(Into::into),
        bytes: bytes.to_vec(),
    }
}

fn record(ns: &str, id: &str, parent: Option<&str>, step: i64, channels: &[(&str, u64, Option<&str>)], blobs: Vec<Blob>) -> CheckpointRecord {
    CheckpointRecord {
        thread_id: "t".into(),
        ns: ns.into(),
        id: id.into(),
        parent_id: parent.map(Into::into),
        step,
        source: if step < 0 { Source::Input } else { Source::Loop },
        writes: [std::sync::Arc::from(format!("node-{step}"))].into(),
        metadata: [("user".to_owned(), "ada".to_owned())].into(),
        created_at: Timestamp::from_unix_micros(1_796_032_800_000_000),
        channels: channels
            .iter()
            .map(|(c, v, b)| ChannelRef {
                channel: (*c).into(),
                version: *v,
                blob: b.map(Into::into),
            })
            .collect(),
        body: br#"{"seen":{},"controls":{},"sends":[],"input":null,"interrupt_seen":{}}"#.to_vec(),
        blobs,
    }
}

/// The bytes of the template file (after its write-ahead log was folded in).
fn template() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let path = dir().join("template.db");
        let saver = SqliteSaver::open(&path).expect("the template opens");
        runtime().block_on(async {
            let first = record(
                "",
                "cp-1",
                None,
                -1,
                &[("notes", 1, Some("cp-1")), ("name", 1, Some("cp-1")), ("empty", 1, None)],
                vec![blob("notes", None, b"[\"a\"]"), blob("name", None, b"\"ada\"")],
            );
            let second = record(
                "",
                "cp-2",
                Some("cp-1"),
                0,
                &[("notes", 2, Some("cp-2")), ("name", 1, Some("cp-1"))],
                vec![blob("notes", Some("cp-1"), b"[\"b\"]")],
            );
            let third = record(
                "",
                "cp-3",
                Some("cp-2"),
                1,
                &[("notes", 3, Some("cp-3")), ("name", 2, Some("cp-3")), ("n", 1, Some("cp-3"))],
                vec![
                    blob("notes", Some("cp-2"), b"[\"c\"]"),
                    blob("name", None, &[b'x'; 300]),
                    blob("n", None, b"3"),
                ],
            );
            saver.put_many(vec![first, second, third], None).await.expect("the template's puts");
            let sub = record("inner:1", "cp-0", None, -1, &[("q", 1, Some("cp-0"))], vec![blob("q", None, b"1")]);
            saver.put(sub, None).await.expect("the subgraph's put");
            let writes = (0..2)
                .map(|idx| PendingWrite {
                    task_id: "task-b".into(),
                    task_path: "path-b".into(),
                    idx,
                    channel: "notes".into(),
                    bytes: b"[\"w\"]".to_vec(),
                })
                .collect();
            saver.put_writes("t", "", "cp-3", "task-b", writes).await.expect("the writes");
        });
        drop(saver);
        let conn = rusqlite::Connection::open(&path).expect("the template reopens");
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .expect("the log is folded in");
        drop(conn);
        let bytes = std::fs::read(&path).expect("the template reads");
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
        bytes
    })
}

/// Applies one damage through SQLite; a statement SQLite refuses (a constraint) is skipped.
fn damage(conn: &rusqlite::Connection, d: &Damage) {
    let (table, columns) = if d.writes {
        ("writes", WRITE_COLUMNS)
    } else {
        ("checkpoints", COLUMNS)
    };
    let rows: i64 = conn
        .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
        .unwrap_or(0);
    if rows == 0 {
        return;
    }
    // The blob columns most often: half the picks of a checkpoint column are one of them.
    let column = match d.column as usize {
        c if !d.writes && c % 2 == 0 => columns[(c / 2) % 2],
        c => columns[c % columns.len()],
    };
    let rowid: i64 = conn
        .query_row(
            &format!("SELECT rowid FROM {table} ORDER BY rowid LIMIT 1 OFFSET ?1"),
            [i64::from(d.row) % rows],
            |r| r.get(0),
        )
        .unwrap_or(1);
    let current = || -> Vec<u8> {
        conn.query_row(
            &format!("SELECT CAST({column} AS BLOB) FROM {table} WHERE rowid = ?1"),
            [rowid],
            |r| r.get::<_, Option<Vec<u8>>>(0),
        )
        .ok()
        .flatten()
        .unwrap_or_default()
    };
    let value = match &d.value {
        Value::Blob(b) => rusqlite::types::Value::Blob(b.clone()),
        Value::Text(t) => rusqlite::types::Value::Text(t.clone()),
        Value::Int(i) => rusqlite::types::Value::Integer(*i),
        Value::Null => rusqlite::types::Value::Null,
        Value::Cut(at) => {
            let mut b = current();
            b.truncate(usize::from(*at) % (b.len() + 1));
            rusqlite::types::Value::Blob(b)
        }
        Value::Flip(at, x) => {
            let mut b = current();
            if !b.is_empty() {
                let i = usize::from(*at) % b.len();
                b[i] ^= x | 1;
            }
            rusqlite::types::Value::Blob(b)
        }
    };
    let _ = conn.execute(&format!("UPDATE {table} SET {column} = ?1 WHERE rowid = ?2"), rusqlite::params![value, rowid]);
}

async fn read_everything(saver: &SqliteSaver) {
    let _ = saver.threads().await;
    let _ = saver.usage("t").await;
    for ns in ["", "inner:1"] {
        let _ = saver.head("t", ns).await;
        let _ = saver.get("t", ns, None).await;
        if let Ok(listed) = saver.list("t", ns, None, None).await {
            for r in listed {
                let _ = saver.get("t", ns, Some(&r.id)).await;
            }
        }
        for id in ["cp-0", "cp-1", "cp-2", "cp-3"] {
            let _ = saver.get("t", ns, Some(id)).await;
        }
    }
}

/// The saver every input is read with and a connection that damages and restores its rows:
/// one file made from the template, opened once (opening a saver per input was most of an
/// input's time). Only the damaged tables change, and reads write nothing, so putting back
/// their rows from the template (attached as `pristine`) restores the whole file.
struct Case {
    saver: SqliteSaver,
    conn: rusqlite::Connection,
}

fn case() -> &'static std::sync::Mutex<Case> {
    static CASE: OnceLock<std::sync::Mutex<Case>> = OnceLock::new();
    CASE.get_or_init(|| {
        let pristine = dir().join("pristine.db");
        std::fs::write(&pristine, template()).expect("the pristine copy is written");
        let path = dir().join("case.db");
        std::fs::write(&path, template()).expect("the case is written");
        let saver = SqliteSaver::open(&path).expect("the case opens");
        let conn = rusqlite::Connection::open(&path).expect("the case opens for damage");
        conn.busy_timeout(std::time::Duration::from_secs(5)).expect("a busy timeout");
        conn.execute("ATTACH DATABASE ?1 AS pristine", [pristine.to_string_lossy()])
            .expect("the pristine copy attaches");
        std::sync::Mutex::new(Case { saver, conn })
    })
}

/// Puts the damaged tables' rows back as the template has them.
fn restore(conn: &rusqlite::Connection) {
    conn.execute_batch(
        "BEGIN;
         DELETE FROM main.checkpoints;
         INSERT INTO main.checkpoints SELECT * FROM pristine.checkpoints ORDER BY rowid;
         DELETE FROM main.writes;
         INSERT INTO main.writes SELECT * FROM pristine.writes ORDER BY rowid;
         COMMIT;",
    )
    .expect("the rows are restored");
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(damages) = Vec::<Damage>::arbitrary(&mut u) else { return };
    if damages.is_empty() || damages.len() > 4 {
        return;
    }
    let case = case().lock().unwrap_or_else(|p| p.into_inner());
    for d in &damages {
        damage(&case.conn, d);
    }
    runtime().block_on(read_everything(&case.saver));
    restore(&case.conn);
});
