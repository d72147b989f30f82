//! The writer gathers the pending writes of a functional run's task calls into few calls of
//! the checkpointer, stores them all before the run returns, and still while it goes on.

use super::{QueuedWrites, GROUP, LINGER, QUEUE};
use crate::checkpoint::{
    CheckpointRecord, Checkpointer, Loaded, MadeByRun, MemorySaver, PendingWrite, SaverError, Usage,
};
use crate::func::{call_task, decode_args, task_args, Entrypoint, TaskOptions};
use crate::{BoxError, Context, RunConfig};
use futures::future::BoxFuture;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A saver that stores in the [`MemorySaver`] it wraps, not in place (so a run hands its
/// puts to the background writer), and notes the size of each group of writes. With
/// `hands_over`, it lets the runtime's other tasks run before it stores a group, as a saver
/// that hands its work to a thread of its own does.
#[derive(Debug, Default)]
struct Groups {
    inner: MemorySaver,
    groups: Mutex<Vec<usize>>,
    hands_over: bool,
}

impl Groups {
    fn groups(&self) -> Vec<usize> {
        self.groups.lock().unwrap().clone()
    }
}

impl Checkpointer for Groups {
    fn put_many<'a>(
        &'a self,
        records: Vec<CheckpointRecord>,
        expected: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        self.inner.put_many(records, expected)
    }
    fn put_writes_made<'a>(
        &'a self,
        thread_id: &'a str,
        writes: Vec<QueuedWrites>,
        _made: MadeByRun,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        self.groups.lock().unwrap().push(writes.len());
        Box::pin(async move {
            if self.hands_over {
                tokio::task::yield_now().await;
            }
            for w in writes {
                self.inner
                    .put_writes(thread_id, &w.ns, &w.checkpoint, &w.task_id, w.rows)
                    .await?;
            }
            Ok(())
        })
    }
    fn get<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<Loaded>, SaverError>> {
        self.inner.get(thread_id, ns, id)
    }
    fn head<'a>(&'a self, thread_id: &'a str, ns: &'a str) -> BoxFuture<'a, Result<Option<String>, SaverError>> {
        self.inner.head(thread_id, ns)
    }
    fn list<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        before: Option<&'a str>,
        limit: Option<usize>,
    ) -> BoxFuture<'a, Result<Vec<CheckpointRecord>, SaverError>> {
        self.inner.list(thread_id, ns, before, limit)
    }
    fn put_writes<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        checkpoint_id: &'a str,
        task_id: &'a str,
        writes: Vec<PendingWrite>,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        self.inner.put_writes(thread_id, ns, checkpoint_id, task_id, writes)
    }
    fn delete_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<(), SaverError>> {
        self.inner.delete_thread(thread_id)
    }
    fn threads(&self) -> BoxFuture<'_, Result<Vec<String>, SaverError>> {
        self.inner.threads()
    }
    fn usage<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Usage, SaverError>> {
        self.inner.usage(thread_id)
    }
    fn namespaces<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Vec<String>, SaverError>> {
        self.inner.namespaces(thread_id)
    }
}

/// How many task calls' results the thread's checkpoints hold.
async fn saved_calls(saver: &dyn Checkpointer, thread: &str) -> usize {
    let mut n = 0;
    for loaded in saver.history(thread, "", None, None).await.unwrap() {
        n += loaded.pending_writes.iter().filter(|w| w.channel == "__call__").count();
    }
    n
}

fn bump(i: u64) -> crate::func::TaskFuture<u64> {
    call_task(TaskOptions::new("bump"), task_args(&i), |args| async move {
        Ok(decode_args::<u64>("bump", args)? + 1)
    })
}

async fn one_after_another(n: u64, _: Option<u64>, _: Context) -> Result<u64, BoxError> {
    let mut total = 0;
    for i in 0..n {
        total += bump(i).await?;
    }
    Ok(total)
}

/// One call, then `n - 1` at once (the first call's write, held alone, puts the groups of
/// the others off the queue's bounds).
async fn one_then_all_at_once(n: u64, _: Option<u64>, _: Context) -> Result<u64, BoxError> {
    let mut total = bump(0).await?;
    let calls: Vec<_> = (1..n).map(bump).collect();
    for call in calls {
        total += call.await?;
    }
    Ok(total)
}

/// Thousands of calls ending at once wait for room in the writer's queue, and the write
/// that fills it wakes the writer: on a clock that moves only when every task waits, no
/// group of writes waits out its linger (it did, 10 ms a group, when only the count of
/// writes not taken woke the writer: that count passed its mark once, at the start).
#[tokio::test(start_paused = true)]
async fn calls_ending_at_once_wake_the_writer_as_they_fill_its_queue() {
    let saver = Arc::new(Groups {
        hands_over: true,
        ..Groups::default()
    });
    let app = Entrypoint::<u64, u64>::new("sum", one_then_all_at_once)
        .compile()
        .unwrap()
        .with_checkpointer_arc(saver.clone());
    let n = 5 * QUEUE as u64;
    let start = tokio::time::Instant::now();
    let out = app.invoke(n, &RunConfig::thread("wide")).await.unwrap();
    assert_eq!(out, n * (n + 1) / 2);
    assert!(
        start.elapsed() < LINGER,
        "the writer waited out its linger: {:?} passed",
        start.elapsed()
    );
    assert_eq!(saved_calls(&*saver, "wide").await, n as usize);
}

/// Calls of the task `flaky` that ran (not replayed).
static RAN: AtomicUsize = AtomicUsize::new(0);
/// Whether `flaky(10)` fails.
static FAIL: AtomicBool = AtomicBool::new(true);

fn flaky(i: u64) -> crate::func::TaskFuture<u64> {
    call_task(TaskOptions::new("flaky"), task_args(&i), |args| async move {
        let i: u64 = decode_args("flaky", args)?;
        RAN.fetch_add(1, Ordering::Relaxed);
        if i == 10 && FAIL.load(Ordering::Relaxed) {
            return Err(BoxError::from("flaky 10 failed"));
        }
        Ok(i + 1)
    })
}

async fn flaky_sum(n: u64, _: Option<u64>, _: Context) -> Result<u64, BoxError> {
    let mut total = 0;
    for i in 0..n {
        total += flaky(i).await?;
    }
    Ok(total)
}

/// On a clock that stands still, the writes never fall due: a run of 2,500 calls, one after
/// another, hands them over in full groups and the rest when its checkpoint follows, and
/// every result is stored when `invoke` returns.
#[tokio::test(start_paused = true)]
async fn calls_one_after_another_are_stored_in_full_groups_before_the_run_returns() {
    let saver = Arc::new(Groups::default());
    let app = Entrypoint::<u64, u64>::new("sum", one_after_another)
        .compile()
        .unwrap()
        .with_checkpointer_arc(saver.clone());
    let n = 2500;
    let out = app.invoke(n, &RunConfig::thread("groups")).await.unwrap();
    assert_eq!(out, n * (n + 1) / 2);
    assert_eq!(saver.groups(), [GROUP, GROUP, 2500 - 2 * GROUP]);
    assert_eq!(saved_calls(&*saver, "groups").await, 2500);
}

/// A result held by the writer is stored once due, while the run goes on: the second call
/// finds the first's result stored without any checkpoint having followed it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_result_is_stored_once_due_while_the_run_goes_on() {
    let saver = Arc::new(Groups::default());
    let seen = saver.clone();
    let app = Entrypoint::<u64, u64>::new("wait", move |n: u64, _: Option<u64>, _: Context| {
        let seen = seen.clone();
        async move {
            let first = bump(n).await?;
            let start = tokio::time::Instant::now();
            while saved_calls(&*seen, "due").await == 0 {
                assert!(start.elapsed() < 100 * LINGER, "the result was not stored");
                tokio::time::sleep(LINGER / 4).await;
            }
            Ok::<_, BoxError>(first)
        }
    })
    .compile()
    .unwrap()
    .with_checkpointer_arc(saver.clone());
    assert_eq!(app.invoke(1, &RunConfig::thread("due")).await.unwrap(), 2);
    assert_eq!(saver.groups(), [1]);
}

/// A run that fails part way has stored the results of the calls before the failure by the
/// time it returns: resumed, it runs only the call that failed and those after it.
#[tokio::test(start_paused = true)]
async fn a_run_failing_part_way_resumes_without_running_the_stored_calls_again() {
    let saver = Arc::new(Groups::default());
    let app = Entrypoint::<u64, u64>::new("sum", flaky_sum)
        .compile()
        .unwrap()
        .with_checkpointer_arc(saver.clone());
    let cfg = RunConfig::thread("fails");
    assert!(app.invoke(20, &cfg).await.is_err());
    assert_eq!(RAN.load(Ordering::Relaxed), 11);
    assert_eq!(saved_calls(&*saver, "fails").await, 10);
    FAIL.store(false, Ordering::Relaxed);
    let resumed = app.resume(&cfg).await.unwrap();
    assert_eq!(app.output(resumed.state()).unwrap(), 20 * 21 / 2);
    assert_eq!(RAN.load(Ordering::Relaxed), 11 + 10);
}
