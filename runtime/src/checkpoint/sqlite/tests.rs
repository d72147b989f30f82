//! The SQLite saver's own tests: where its SQLite calls run, how the writer batches and
//! checkpoints the log, and what a stopped writer leaves.

use super::writer::Request;
use super::*;
use crate::checkpoint::{new_checkpoint_id, Blob, ChannelRef, Source, Timestamp};
use std::sync::atomic::Ordering;

/// A directory of its own, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("weir-sqlite-unit-{}", new_checkpoint_id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    fn db(&self) -> PathBuf {
        self.0.join("weir.db")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Checkpoint `id` of `thread` after `parent`, whose channel `n` holds `bytes`, stored with it.
fn record(thread: &str, id: &str, parent: Option<&str>, bytes: &[u8]) -> CheckpointRecord {
    CheckpointRecord {
        thread_id: thread.into(),
        ns: "".into(),
        id: id.into(),
        parent_id: parent.map(Into::into),
        step: 0,
        source: Source::Loop,
        writes: Arc::default(),
        metadata: Default::default(),
        created_at: Timestamp::now(),
        channels: vec![ChannelRef {
            channel: "n".into(),
            version: 1,
            blob: Some(id.into()),
        }],
        body: b"{}".to_vec(),
        blobs: vec![Blob {
            channel: "n".into(),
            delta_of: None,
            bytes: bytes.to_vec(),
        }],
    }
}

/// Holds the writer until the returned sender is dropped, once it has taken the hold.
async fn hold(saver: &SqliteSaver) -> std::sync::mpsc::Sender<()> {
    let (release, held) = std::sync::mpsc::channel();
    let (holding, holds) = tokio::sync::oneshot::channel();
    saver.inner.writer.send(Request::Hold(holding, held)).await;
    holds.await.unwrap();
    release
}

fn transactions(saver: &SqliteSaver) -> u64 {
    saver.inner.writer.stats().transactions.load(Ordering::Relaxed)
}

/// A run's put with synchronous durability (`put_made`) runs no SQLite on the tokio thread
/// that awaits it: this test's runtime has one thread, and keeps running other tasks (a timer
/// ticks) while the put waits for a writer that is busy; every write transaction ran on the
/// writer thread.
#[tokio::test(flavor = "current_thread")]
async fn a_run_s_put_runs_on_the_writer_thread_and_the_runtime_stays_responsive() {
    let dir = TempDir::new();
    let saver = SqliteSaver::open(dir.db()).unwrap();
    let release = hold(&saver).await;
    let put = tokio::spawn({
        let saver = saver.clone();
        async move {
            let record = record("t", "cp-1", None, b"1");
            saver.put_made(vec![record], None, MadeByRun::new()).await
        }
    });
    let mut ticks = tokio::time::interval(Duration::from_millis(1));
    for _ in 0..5 {
        ticks.tick().await;
    }
    assert!(!put.is_finished(), "the put waits for the held writer");
    drop(release);
    put.await.unwrap().unwrap();
    assert_eq!(saver.head("t", "").await.unwrap().as_deref(), Some("cp-1"));
    let threads = saver.inner.writer.stats().threads.lock().unwrap().clone();
    assert_eq!(threads, ["weir-sqlite-writer"]);
    assert_ne!(std::thread::current().name(), Some("weir-sqlite-writer"));
}

/// On a multi-threaded runtime, a lone put with nothing queued is stored by the task that
/// awaits it, on its own thread, with no hop to the writer thread and back (a run with
/// synchronous durability puts every step that way). The thread is lent by tokio
/// (`block_in_place`): while the put waits for the file (another connection holds its write
/// lock), the runtime's only worker goes on running other tasks.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_lone_put_runs_on_its_caller_s_thread_and_the_runtime_goes_on_meanwhile() {
    let dir = TempDir::new();
    let saver = SqliteSaver::open(dir.db()).unwrap();
    let put = |id: &'static str, parent: Option<&'static str>| {
        let saver = saver.clone();
        tokio::spawn(async move {
            let record = record("t", id, parent, b"1");
            saver.put_made(vec![record], parent, MadeByRun::new()).await
        })
    };
    put("cp-1", None).await.unwrap().unwrap();
    // Tokio names its threads `tokio-rt-worker` (`tokio-runtime-worker` in older versions).
    let by_tokio = |n: usize| {
        let threads = saver.inner.writer.stats().threads.lock().unwrap().clone();
        assert_eq!(threads.len(), n, "{threads:?}");
        assert!(threads.iter().all(|t| t.starts_with("tokio-")), "{threads:?}");
    };
    by_tokio(1);

    let other = Connection::open(dir.db()).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let waiting = put("cp-2", Some("cp-1"));
    // The put holds the connection, waiting in SQLite for the other connection's lock.
    while !saver.inner.writer.busy() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let other_task = tokio::spawn(async { "ran" });
    let ran = tokio::time::timeout(Duration::from_secs(3), other_task).await;
    assert_eq!(ran.expect("another task runs while the put waits").unwrap(), "ran");
    assert!(!waiting.is_finished(), "the put still waits for the lock");
    other.execute_batch("ROLLBACK").unwrap();
    waiting.await.unwrap().unwrap();
    assert_eq!(saver.head("t", "").await.unwrap().as_deref(), Some("cp-2"));
    by_tokio(2);
}

/// A point read (a head, one checkpoint) runs on its caller's thread when a read connection is
/// idle, with no hop to another thread; the first, which opens the connection, and one that
/// finds every connection taken, take the usual way (here, a current-thread runtime: tokio's
/// blocking pool) and wait for a permit without holding one.
#[tokio::test(flavor = "current_thread")]
async fn a_point_read_runs_on_its_caller_s_thread_when_a_reader_is_idle() {
    let dir = TempDir::new();
    let saver = SqliteSaver::options().readers(1).open(dir.db()).unwrap();
    let here = std::thread::current().id();
    let read_on = || saver.read_briefly(|_| Ok(std::thread::current().id()));
    assert_ne!(read_on().await.unwrap(), here, "no idle reader yet: the pool opens one");
    assert_eq!(read_on().await.unwrap(), here, "an idle reader: read right here");
    // Every permit taken: the read waits for one, elsewhere, and gets it once it is free.
    let taken = saver.inner.read_permits.clone().acquire_owned().await.unwrap();
    let waiting = tokio::spawn({
        let saver = saver.clone();
        async move { saver.read_briefly(|_| Ok(std::thread::current().id())).await }
    });
    tokio::task::yield_now().await;
    assert!(!waiting.is_finished(), "the read waits for the permit");
    drop(taken);
    assert_ne!(waiting.await.unwrap().unwrap(), here);
    saver
        .put_made(vec![record("t", "cp-1", None, b"1")], None, MadeByRun::new())
        .await
        .unwrap();
    assert_eq!(saver.head("t", "").await.unwrap().as_deref(), Some("cp-1"));
}

/// What is queued while the writer is busy goes into one transaction: twenty puts of twenty
/// threads, and one put that conflicts, which is refused alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_writes_are_stored_in_one_transaction_and_a_refused_one_alone_is_rolled_back() {
    let dir = TempDir::new();
    let saver = SqliteSaver::open(dir.db()).unwrap();
    saver.put(record("t0", "cp-0", None, b"0"), None).await.unwrap();
    let before = transactions(&saver);
    let release = hold(&saver).await;
    let mut puts: Vec<_> = (1..=20)
        .map(|i| {
            let saver = saver.clone();
            tokio::spawn(async move { saver.put(record(&format!("t{i}"), "cp-1", None, b"1"), None).await })
        })
        .collect();
    // Thread `t0` has a head: a put expecting none conflicts.
    let conflicting = {
        let saver = saver.clone();
        tokio::spawn(async move { saver.put(record("t0", "cp-1", None, b"1"), None).await })
    };
    puts.push(conflicting);
    while saver.inner.writer.queued() < 21 {
        tokio::task::yield_now().await;
    }
    drop(release);
    let mut results = Vec::new();
    for put in puts {
        results.push(put.await.unwrap());
    }
    let refused = results.pop().unwrap().unwrap_err();
    assert!(refused.is_conflict(), "{refused}");
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert_eq!(transactions(&saver) - before, 1, "one transaction for the batch");
    let mut threads = saver.threads().await.unwrap();
    threads.sort_by_key(|t| t[1..].parse::<u32>().unwrap());
    assert_eq!(threads, (0..=20).map(|i| format!("t{i}")).collect::<Vec<_>>());
    assert_eq!(saver.head("t0", "").await.unwrap().as_deref(), Some("cp-0"));
}

/// SQLite's automatic checkpoint is off on the write connection: never checkpointed, the log
/// grows past SQLite's default of 1,000 pages. With a budget, the writer checkpoints it itself,
/// and the log stops growing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_writer_checkpoints_the_log_itself_and_commits_never_do() {
    const PUTS: usize = 600;
    let wal_after = |pages: u64| async move {
        let dir = TempDir::new();
        let saver = SqliteSaver::options().wal_pages(pages).open(dir.db()).unwrap();
        let page = vec![7u8; 4096];
        let mut head: Option<String> = None;
        for _ in 0..PUTS {
            let id = new_checkpoint_id();
            let r = record("t", &id, head.as_deref(), &page);
            saver.put(r, head.as_deref()).await.unwrap();
            head = Some(id);
        }
        let wal = std::fs::metadata(dir.0.join("weir.db-wal")).unwrap().len();
        let checkpoints = saver.inner.writer.stats().wal_checkpoints.load(Ordering::Relaxed);
        (wal, checkpoints)
    };
    // Each put writes at least two pages of 4 KB values: SQLite's default would have
    // checkpointed and restarted the log at 1,000 pages.
    let (never, none) = wal_after(0).await;
    assert_eq!(none, 0);
    assert!(never > 1000 * 4096, "the log holds {never} bytes");
    let (budgeted, some) = wal_after(100).await;
    assert!(some > 0, "the writer checkpointed");
    assert!(budgeted < 500 * 4096, "the log holds {budgeted} bytes");
}

/// A writer that stopped (here a panic on its thread, as a bug would) fails every later write
/// with an error naming the file, panics nobody, and what it stored is still read back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_writer_fails_writes_naming_the_file_and_keeps_what_it_stored() {
    let dir = TempDir::new();
    let saver = SqliteSaver::open(dir.db()).unwrap();
    saver.put(record("t", "cp-1", None, b"1"), None).await.unwrap();
    saver.inner.writer.send(Request::Crash).await;
    let e = saver
        .put(record("t", "cp-2", Some("cp-1"), b"2"), Some("cp-1"))
        .await
        .unwrap_err();
    let path = dir.db().display().to_string();
    assert_eq!(
        e.to_string(),
        format!(
            "sqlite checkpoint store `{path}` failed: its writer thread has stopped, so nothing more can be \
             written through this saver (open the file again)"
        )
    );
    let e = saver.delete_thread("t").await.unwrap_err();
    assert!(e.to_string().contains(&path), "{e}");
    let loaded = saver.get("t", "", None).await.unwrap().unwrap();
    assert_eq!(&*loaded.record.id, "cp-1");
    assert_eq!(loaded.values, [("n".to_owned(), vec![b"1".to_vec()])]);
    drop(saver);
    // Reopened, the file is whole and writable.
    let saver = SqliteSaver::open(dir.db()).unwrap();
    saver
        .put(record("t", "cp-2", Some("cp-1"), b"2"), Some("cp-1"))
        .await
        .unwrap();
    assert_eq!(saver.head("t", "").await.unwrap().as_deref(), Some("cp-2"));
}

/// A put waits on the file, so the SQLite saver stores nothing in place: it hands a run's
/// record back untouched, for `put_made`, and the thread stays without a head.
#[tokio::test]
async fn a_run_s_record_is_handed_back_untouched_and_nothing_is_stored_in_place() {
    let dir = TempDir::new();
    let saver = SqliteSaver::open(dir.db()).unwrap();
    let record = record("t", "cp-1", None, b"1");
    match saver.try_put_in_place(record.clone(), None, MadeByRun::new()) {
        Err(back) => assert_eq!(back, record),
        Ok(stored) => panic!("stored in place: {stored:?}"),
    }
    assert_eq!(saver.head("t", "").await.unwrap(), None);
}

/// The last saver of a file dropped, its writer closes every connection of the file, readers
/// first: the last to close removes the write-ahead log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_saver_closes_the_file_on_the_writer_thread() {
    let dir = TempDir::new();
    let saver = SqliteSaver::open(dir.db()).unwrap();
    saver.put(record("t", "cp-1", None, b"1"), None).await.unwrap();
    assert_eq!(saver.list("t", "", None, None).await.unwrap().len(), 1);
    assert!(dir.0.join("weir.db-wal").exists());
    drop(saver);
    let gone = async {
        while dir.0.join("weir.db-wal").exists() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), gone)
        .await
        .expect("the log is removed");
}

/// A write that cannot begin, because another connection (another process, say) holds the
/// file's write lock past the busy timeout, fails with an error naming the file; the writer
/// goes on, and the next write, once the lock is free, is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_the_file_refuses_fails_naming_the_file_and_the_writer_goes_on() {
    let dir = TempDir::new();
    let saver = SqliteSaver::options()
        .busy_timeout(Duration::from_millis(50))
        .open(dir.db())
        .unwrap();
    saver.put(record("t", "cp-1", None, b"1"), None).await.unwrap();
    let other = Connection::open(dir.db()).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let e = saver
        .put(record("t", "cp-2", Some("cp-1"), b"2"), Some("cp-1"))
        .await
        .unwrap_err();
    let path = dir.db().display().to_string();
    assert_eq!(
        e.to_string(),
        format!("sqlite checkpoint store `{path}` failed: database is locked")
    );
    let cause = std::error::Error::source(&e).map(ToString::to_string);
    assert_eq!(cause.as_deref(), Some("database is locked"));
    other.execute_batch("ROLLBACK").unwrap();
    saver
        .put(record("t", "cp-2", Some("cp-1"), b"2"), Some("cp-1"))
        .await
        .unwrap();
    let listed = saver.list("t", "", None, None).await.unwrap();
    let ids: Vec<&str> = listed.iter().map(|r| &*r.id).collect();
    assert_eq!(ids, ["cp-2", "cp-1"]);
}

/// A functional run's task results, queued while the writer is busy, are stored together: with
/// the writer held until the entrypoint has called all 50 of its tasks one after the other, the
/// run commits a handful of transactions, not one a result (as it did when the run's background
/// writer stored each task's writes in turn).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_functional_run_s_task_results_queued_together_are_stored_in_few_transactions() {
    use crate::func::{call_task, Entrypoint, TaskOptions};
    let dir = TempDir::new();
    let saver = SqliteSaver::options()
        .synchronous(Synchronous::Full)
        .open(dir.db())
        .unwrap();
    let called = Arc::new(tokio::sync::Notify::new());
    let notify = called.clone();
    let entry = Entrypoint::<u64, u64>::new("sum", move |n: u64, _: Option<u64>, _| {
        let notify = notify.clone();
        async move {
            let mut total = 0;
            for i in 0..n {
                let args = serde_json::to_value(i);
                total += call_task(TaskOptions::new("bump"), args, |v| async move {
                    Ok::<u64, crate::BoxError>(v.as_u64().unwrap_or(0) + 1)
                })
                .await?;
            }
            // Each result is queued before its call returns: all 50 are queued now.
            notify.notify_one();
            Ok::<u64, crate::BoxError>(total)
        }
    });
    let app = entry.with_checkpointer(saver.clone()).compile().unwrap();
    let release = hold(&saver).await;
    let before = transactions(&saver);
    let run = tokio::spawn(async move { app.invoke(50, &crate::RunConfig::thread("f")).await });
    called.notified().await;
    drop(release);
    assert_eq!(run.await.unwrap().unwrap(), 50 * 51 / 2);
    let made = transactions(&saver) - before;
    assert!(
        made <= 6,
        "{made} transactions for 50 task results and the run's checkpoints"
    );
}

/// Processes that open one new file at the same moment (a server and a CLI, a test and its
/// child) all get a saver: none is told the database is locked while another sets it up.
#[test]
fn many_connections_opening_one_new_file_at_once_all_open() {
    for _ in 0..100 {
        let dir = TempDir::new();
        let db = dir.db();
        let start = Arc::new(std::sync::Barrier::new(4));
        let openers: Vec<_> = (0..4)
            .map(|_| {
                let (db, start) = (db.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    SqliteSaver::open(&db).map(drop)
                })
            })
            .collect();
        for opener in openers {
            opener.join().unwrap().unwrap();
        }
    }
}

/// A put waits for the file's write gate, which the process's other writers to the file (the
/// store's, the server's tables') hold around their transactions, and goes on once it opens.
// The gate is held across awaits on purpose: what waits for it runs on another thread.
#[allow(clippy::await_holding_lock)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_put_waits_for_the_file_s_write_gate() {
    let dir = TempDir::new();
    let saver = SqliteSaver::open(dir.db()).unwrap();
    let gate = crate::sqlite::WriteGate::for_file(&dir.db());
    let held = gate.enter();
    let put = tokio::spawn({
        let saver = saver.clone();
        async move {
            saver
                .put_made(vec![record("t", "cp-1", None, b"1")], None, MadeByRun::new())
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!put.is_finished(), "the put waits for the gate");
    drop(held);
    put.await.unwrap().unwrap();
    assert_eq!(saver.head("t", "").await.unwrap().as_deref(), Some("cp-1"));
}

/// What a test job tells: its own result, and how its transaction ended.
type Told = tokio::sync::oneshot::Receiver<(Result<(), String>, Option<String>)>;

/// A job of another table of the file: inserts `k` into `notes`, then fails with `fail`
/// (undoing its insert, under a savepoint of its own) or panics with it, as `how` says. Its
/// answer goes to the returned receiver.
fn note_job(k: &'static str, how: Option<(&'static str, bool)>) -> (WriteJob, Told) {
    let (tell, told) = tokio::sync::oneshot::channel();
    let job: WriteJob = Box::new(move |conn| {
        let result = (|| {
            let sp = conn.savepoint().map_err(|e| e.to_string())?;
            sp.execute("INSERT INTO notes (k) VALUES (?1)", [k])
                .map_err(|e| e.to_string())?;
            match how {
                Some((why, true)) => panic!("{why}"),
                Some((why, false)) => return Err(why.to_owned()),
                None => {}
            }
            sp.commit().map_err(|e| e.to_string())
        })();
        Box::new(move |failed: Option<&str>| {
            let _ = tell.send((result, failed.map(str::to_owned)));
        })
    });
    (job, told)
}

fn notes(dir: &TempDir) -> Vec<String> {
    let conn = Connection::open(dir.db()).unwrap();
    let mut stmt = conn.prepare("SELECT k FROM notes ORDER BY k").unwrap();
    let rows = stmt.query_map([], |r| r.get(0)).unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

/// Jobs of the file's other tables queued with puts share their transaction: one commit for
/// all, each job whole or undone alone (one that fails undoes its own writes, one that panics
/// has them undone and is never answered), and the puts stored beside them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_queued_with_puts_share_their_transaction_and_each_is_whole_or_undone() {
    let dir = TempDir::new();
    let saver = SqliteSaver::open(dir.db()).unwrap();
    Connection::open(dir.db())
        .unwrap()
        .execute_batch("CREATE TABLE notes (k TEXT PRIMARY KEY)")
        .unwrap();
    let before = transactions(&saver);
    let release = hold(&saver).await;
    let put = {
        let saver = saver.clone();
        tokio::spawn(async move { saver.put(record("t", "cp-1", None, b"1"), None).await })
    };
    let (kept, kept_told) = note_job("a", None);
    let (refused, refused_told) = note_job("b", Some(("no room for b", false)));
    let (panics, panics_told) = note_job("c", Some(("a job's bug", true)));
    let (again, again_told) = note_job("a", None);
    let (last, last_told) = note_job("d", None);
    for job in [kept, refused, panics, again, last] {
        saver.queue_job(job).await.unwrap();
    }
    while saver.inner.writer.queued() < 6 {
        tokio::task::yield_now().await;
    }
    drop(release);
    put.await.unwrap().unwrap();
    assert_eq!(kept_told.await.unwrap(), (Ok(()), None));
    assert_eq!(refused_told.await.unwrap(), (Err("no room for b".to_owned()), None));
    assert!(panics_told.await.is_err(), "a job that panicked is not answered");
    let (conflict, committed) = again_told.await.unwrap();
    assert!(conflict.unwrap_err().contains("UNIQUE"), "the second `a` is refused");
    assert_eq!(committed, None);
    assert_eq!(last_told.await.unwrap(), (Ok(()), None));
    assert_eq!(transactions(&saver) - before, 1, "one transaction for the batch");
    assert_eq!(notes(&dir), ["a", "d"]);
    assert_eq!(saver.head("t", "").await.unwrap().as_deref(), Some("cp-1"));
}

/// When the batch's transaction cannot begin (another process holds the file's write lock past
/// the busy timeout), each job runs alone, as on a connection of its own: it meets the lock
/// itself and says so, and its answer says nothing failed beyond that. The writer goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_whose_batch_cannot_begin_runs_alone_and_meets_the_lock_itself() {
    let dir = TempDir::new();
    let saver = SqliteSaver::options()
        .busy_timeout(Duration::from_millis(50))
        .open(dir.db())
        .unwrap();
    Connection::open(dir.db())
        .unwrap()
        .execute_batch("CREATE TABLE notes (k TEXT PRIMARY KEY)")
        .unwrap();
    let other = Connection::open(dir.db()).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let (job, told) = note_job("a", None);
    saver.queue_job(job).await.unwrap();
    let (result, failed) = told.await.unwrap();
    assert_eq!(result, Err("database is locked".to_owned()));
    assert_eq!(failed, None);
    other.execute_batch("ROLLBACK").unwrap();
    let (job, told) = note_job("a", None);
    saver.queue_job(job).await.unwrap();
    assert_eq!(told.await.unwrap(), (Ok(()), None));
    assert_eq!(notes(&dir), ["a"]);
}
