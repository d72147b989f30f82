//! `weir prune` on a SQLite file: a dry run removes nothing, a prune keeps the last N of each
//! thread (or of the one named), and bad usage exits 2 naming what is wrong.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use weir_runtime::checkpoint::{
    new_checkpoint_id, Blob, ChannelRef, CheckpointRecord, Checkpointer, Source, SqliteSaver, Timestamp,
};

fn weir(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_weir")).args(args).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// `n` checkpoints of `thread`, each storing a counter whole and appending to `log`.
async fn thread(saver: &SqliteSaver, thread: &str, n: u64) {
    let mut head: Option<String> = None;
    for step in 1..=n {
        let id = format!("cp-{step:03}");
        let log = Blob {
            channel: "log".into(),
            delta_of: head.as_deref().map(Into::into),
            bytes: format!("+{step}").into_bytes(),
        };
        let count = Blob {
            channel: "count".into(),
            delta_of: None,
            bytes: step.to_string().into_bytes(),
        };
        let channels = ["count", "log"].map(|c| ChannelRef {
            channel: c.into(),
            version: step,
            blob: Some(id.as_str().into()),
        });
        let record = CheckpointRecord {
            thread_id: thread.into(),
            ns: "".into(),
            id: id.as_str().into(),
            parent_id: head.as_deref().map(Into::into),
            step: step as i64,
            source: Source::Loop,
            writes: [Arc::from("node")].into(),
            metadata: BTreeMap::new(),
            created_at: Timestamp::now(),
            channels: channels.into(),
            body: Vec::new(),
            blobs: vec![count, log],
        };
        saver.put(record, head.as_deref()).await.unwrap();
        head = Some(id);
    }
}

async fn counts(path: &Path) -> Vec<(String, usize, Vec<Vec<u8>>)> {
    let saver = SqliteSaver::open(path).unwrap();
    let mut out = Vec::new();
    for t in saver.threads().await.unwrap() {
        let n = saver.list(&t, "", None, None).await.unwrap().len();
        let head = saver.get(&t, "", None).await.unwrap().unwrap();
        let log = head.values.into_iter().find(|(c, _)| c == "log").unwrap().1;
        out.push((t, n, log));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_keeps_the_last_n_of_each_thread_or_of_one_and_a_dry_run_nothing() {
    let dir = std::env::temp_dir().join(format!("weir-prune-cli-{}", new_checkpoint_id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("weir.db");
    {
        let saver = SqliteSaver::open(&path).unwrap();
        thread(&saver, "a", 10).await;
        thread(&saver, "b", 6).await;
    }
    let file = path.to_str().unwrap();
    let logs = |n: u64| (1..=n).map(|i| format!("+{i}").into_bytes()).collect::<Vec<_>>();
    let before = counts(&path).await;
    assert_eq!(before, [("a".into(), 10, logs(10)), ("b".into(), 6, logs(6))]);

    let (code, out, err) = weir(&["prune", "--sqlite", file, "--keep-last", "3", "--dry-run"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("would remove 10 checkpoint(s) and 0 pending write(s) of 2 thread(s)"),
        "{out}"
    );
    assert_eq!(counts(&path).await, before);

    let (code, out, err) = weir(&["prune", "--sqlite", file, "--keep-last", "3", "--thread", "b"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("removed 3 checkpoint(s) and 0 pending write(s) of 1 thread(s)"),
        "{out}"
    );
    assert_eq!(
        counts(&path).await,
        [("a".into(), 10, logs(10)), ("b".into(), 3, logs(6))]
    );

    let (code, out, err) = weir(&["prune", "--sqlite", file, "--keep-last", "2", "--older-than", "30d"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("removed 9 checkpoint(s)"), "{out}");
    // The kept checkpoints' values still rebuild from the pruned part of their chains.
    assert_eq!(
        counts(&path).await,
        [("a".into(), 2, logs(10)), ("b".into(), 2, logs(6))]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_usage_exits_2_naming_what_is_wrong() {
    let (code, _, err) = weir(&["prune", "--sqlite", "/nonexistent/weir.db", "--keep-last", "3"]);
    assert_eq!(code, 2);
    assert!(err.contains("no SQLite file `/nonexistent/weir.db`"), "{err}");
    let (code, _, err) = weir(&["prune", "--sqlite", "x.db"]);
    assert_eq!(code, 2);
    assert!(err.contains("give --keep-last, --older-than or --thread-ttl"), "{err}");
    let (code, _, err) = weir(&["prune", "--sqlite", "x.db", "--older-than", "3x"]);
    assert_eq!(code, 2);
    assert!(err.contains("`3x` is not an age"), "{err}");
    let (code, _, _) = weir(&["prune", "--keep-last", "3"]);
    assert_eq!(code, 2, "--sqlite or --postgres is required");
}
