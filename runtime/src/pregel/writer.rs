//! The background checkpoint writer of a run with asynchronous durability: checkpoints are put
//! in order while the run goes on, in batches when the checkpointer is slower than the loop;
//! tasks' pending writes are gathered for up to [`LINGER`] and stored together.

use super::persist::{checkpointer_error, Persist};
pub(crate) use crate::checkpoint::TaskWrites as QueuedWrites;
use crate::checkpoint::{CheckpointRecord, Checkpointer, MadeByRun};
use crate::error::Error;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Semaphore, SemaphorePermit};
use tokio::time::Instant;

impl Persist {
    /// Waits until every checkpoint handed to the background writer is stored.
    ///
    /// # Errors
    /// The first put that failed.
    pub(crate) async fn flush(&mut self) -> Result<(), Error> {
        let Some(w) = &self.writer else { return Ok(()) };
        let (done, acked) = tokio::sync::oneshot::channel();
        // A writer that stopped has recorded why.
        if w.jobs.send(Job::Flush(done)).await.is_ok() {
            w.nudge.notify.notify_one();
            let _ = acked.await;
        }
        let failed = w.failed.lock().unwrap_or_else(|p| p.into_inner()).take();
        match failed {
            Some(e) => {
                self.writer = None;
                Err(e)
            }
            None => Ok(()),
        }
    }

    /// Hands a checkpoint, with the writes of its step's tasks to store with it, to the
    /// background writer (async durability), starting it if need be: puts land in order while
    /// the run goes on.
    pub(crate) async fn put_later(
        &mut self,
        record: CheckpointRecord,
        writes: Vec<QueuedWrites>,
        expected: Option<Arc<str>>,
    ) -> Result<(), Error> {
        let writer = self
            .writer
            .get_or_insert_with(|| Writer::start(self.info.checkpointer.clone(), self.info.thread.clone()));
        // Waits while the queue holds its share of bytes; the writer gives them back as it stores
        // (and closes the semaphore when it stops, which sends this put to `flush` for the error).
        let bytes = queued_bytes(&record, &writes);
        let taken = writer
            .room
            .acquire_many(bytes)
            .await
            .map(SemaphorePermit::forget)
            .is_ok();
        if !taken {
            return self.flush().await;
        }
        if writer
            .jobs
            .send(Job::Put(Box::new((record, writes)), expected, bytes))
            .await
            .is_err()
        {
            return self.flush().await;
        }
        writer.nudge.notify.notify_one();
        Ok(())
    }

    /// Where the tasks of a wide step queue their pending writes as they end, when the
    /// background writer runs: behind the checkpoints queued before them.
    pub(crate) fn queue(&self) -> Option<WriterQueue> {
        self.writer
            .as_ref()
            .map(|w| WriterQueue(w.jobs.clone(), w.nudge.clone()))
    }
}

/// A handle on a run's background writer, for a task to queue its pending writes.
#[derive(Clone)]
pub(crate) struct WriterQueue(tokio::sync::mpsc::Sender<Job>, Arc<Nudge>);

impl WriterQueue {
    /// Queues one task's pending writes. False when the writer has stopped (its failure is the
    /// run's at the next flush): the loop saves them itself if the step does not complete.
    ///
    /// While the writer holds writes it does not wait on the queue, so this wakes nobody: a
    /// write a task makes costs no hand-over to another thread. Only [`NUDGE`] writes queued
    /// and not yet taken, or a write that fills the queue, wake the writer, to take them.
    pub(crate) async fn put_writes(&self, writes: QueuedWrites) -> bool {
        // Counted before it is sent, so the writer never takes more than were counted.
        let unread = self.1.unread.fetch_add(1, Ordering::AcqRel) + 1;
        if self.0.send(Job::Writes(Box::new(writes))).await.is_err() {
            return false;
        }
        // The count has passed the nudge long ago when thousands of tasks end at once (it
        // counts the tasks waiting for room too): the write that fills the queue wakes the
        // writer, which otherwise slept out its linger on every full queue, 10 ms a group.
        if unread == NUDGE || self.0.capacity() == 0 {
            self.1.notify.notify_one();
        }
        true
    }
}

/// How the writer is woken while it holds writes (and waits only for them to fall due): a
/// checkpoint or a flush queued, [`NUDGE`] writes queued that it has not taken, or a write that
/// filled the queue.
#[derive(Default)]
struct Nudge {
    notify: tokio::sync::Notify,
    /// The writes queued and not yet taken by the writer.
    unread: AtomicUsize,
}

/// How many writes queued and not taken wake a writer that holds writes: half the queue, so a
/// task does not wait for room while the writer sleeps.
const NUDGE: usize = QUEUE / 2;

/// A hash of the namespace, checkpoint and task the writes are of.
fn key(w: &QueuedWrites) -> u64 {
    use std::hash::{BuildHasher, RandomState};
    static HASHER: std::sync::LazyLock<RandomState> = std::sync::LazyLock::new(RandomState::new);
    HASHER.hash_one((&*w.ns, &*w.checkpoint, &w.task_id))
}

/// What a queued checkpoint counts against [`QUEUE_BYTES`]: its body and blobs, the writes of
/// its step's tasks, and a kilobyte for the rest of the record; at most the whole budget.
fn queued_bytes(record: &CheckpointRecord, writes: &[QueuedWrites]) -> u32 {
    let blobs: usize = record.blobs.iter().map(|b| b.bytes.len()).sum();
    let written: usize = writes.iter().flat_map(|w| &w.rows).map(|r| r.bytes.len()).sum();
    (record.body.len() + blobs + written + 1024).min(QUEUE_BYTES as usize) as u32
}

/// What the background writer is asked.
pub(crate) enum Job {
    /// A checkpoint with the writes of its step's tasks to store with it, the head it
    /// follows, and its bytes' share of the queue.
    Put(Box<(CheckpointRecord, Vec<QueuedWrites>)>, Option<Arc<str>>, u32),
    /// A task's pending writes: stored after the checkpoints queued before them.
    Writes(Box<QueuedWrites>),
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// A run's background checkpoint writer: one task, fed in order through a channel bounded in
/// checkpoints ([`QUEUE`]) and in bytes ([`QUEUE_BYTES`]), so a slow checkpointer slows the run instead
/// of queueing without bound. The checkpoints queued while a put was under way go to the checkpointer
/// together ([`Checkpointer::put_many`]): one transaction for many steps when the checkpointer is slower
/// than the loop.
pub(crate) struct Writer {
    jobs: tokio::sync::mpsc::Sender<Job>,
    /// Permits for the bytes of queued checkpoints: a put takes its share before it is queued and
    /// gives it back once stored.
    room: Arc<Semaphore>,
    failed: Arc<std::sync::Mutex<Option<Error>>>,
    nudge: Arc<Nudge>,
}

/// How many jobs the writer's queue holds, and takes at once. A batch amortizes what a put costs
/// besides its rows (a transaction, a commit that may wait for the disk, the checkpointer's hand-over to
/// a blocking thread): with 64, `weir_bench checkpoint_sqlite 1000` took 9.4 ms at
/// `synchronous=FULL` and 4.3 ms at OFF; with 1,024, 4.8 and 3.4 ms.
const QUEUE: usize = 1024;

/// How many bytes of checkpoints (bodies and blobs, see [`queued_bytes`]) the writer's queue
/// holds at most: a run whose steps each write a large value waits for the checkpointer after a few of
/// them, however many [`QUEUE`] allows.
const QUEUE_BYTES: u32 = 32 << 20;

/// How long the writer holds a task's pending writes, at most, before storing them: the writes
/// of the tasks that end meanwhile join them, and all go to the checkpointer in one call (one
/// SQLite transaction, one `fsync` at `synchronous = FULL`). A checkpoint or a flush stores
/// them at once, and so does a group of [`GROUP`] tasks or [`GROUP_BYTES`]: under async
/// durability a crash loses at most the results of the last few milliseconds, whose tasks run
/// again on resume. A thousand calls of a functional run, one after another, took ~30 commits
/// when each group was only what piled up during the previous commit; with this, three or four.
const LINGER: Duration = Duration::from_millis(10);

/// How many tasks' writes a group holds at most: the writer stores it when full.
const GROUP: usize = 1024;

/// How many bytes of writes a group holds at most: the writer stores it when past them.
const GROUP_BYTES: usize = 8 << 20;

impl Writer {
    fn start(checkpointer: Arc<dyn Checkpointer>, thread: Arc<str>) -> Self {
        let (jobs, mut rx) = tokio::sync::mpsc::channel::<Job>(QUEUE);
        let failed = Arc::new(std::sync::Mutex::new(None));
        let failure = failed.clone();
        let room = Arc::new(Semaphore::new(QUEUE_BYTES as usize));
        let gives_back = Closing(room.clone());
        let nudge = Arc::new(Nudge::default());
        let nudged = nudge.clone();
        tokio::spawn(async move {
            // Grown as batches come, not made for the largest: most runs are short.
            let mut queued = Vec::new();
            let mut batch = Batch::default();
            let mut writes = Group::default();
            loop {
                // With no writes held, waits for a job. Holding writes, waits only until they
                // are due or a nudge comes (a checkpoint, a flush, a full queue), then takes
                // what is queued: a task's write wakes nobody.
                let closed = match writes.due {
                    None => rx.recv_many(&mut queued, QUEUE).await == 0,
                    Some(due) => {
                        tokio::select! {
                            () = nudged.notify.notified() => {}
                            () = tokio::time::sleep_until(due) => {}
                        }
                        take_queued(&mut rx, &mut queued)
                    }
                };
                let taken = queued.iter().filter(|j| matches!(j, Job::Writes(_))).count();
                nudged.unread.fetch_sub(taken, Ordering::AcqRel);
                for job in queued.drain(..) {
                    match job {
                        Job::Put(put, head, bytes) => {
                            // The writes held, then the step's own, go in the batch's call.
                            let (record, step_writes) = *put;
                            batch.writes.extend(writes.take());
                            batch.writes.extend(step_writes);
                            batch.push(record, head, bytes);
                        }
                        Job::Writes(w) => {
                            if !batch.store(&*checkpointer, &gives_back.0, &thread, &failure).await {
                                return;
                            }
                            // A task's writes replace its earlier ones: the two are stored in turn.
                            if writes.holds(&w) && !writes.store(&*checkpointer, &thread, &failure).await {
                                return;
                            }
                            writes.push(*w);
                            if writes.full() && !writes.store(&*checkpointer, &thread, &failure).await {
                                return;
                            }
                        }
                        Job::Flush(done) => {
                            if !writes.store(&*checkpointer, &thread, &failure).await
                                || !batch.store(&*checkpointer, &gives_back.0, &thread, &failure).await
                            {
                                return;
                            }
                            let _ = done.send(());
                        }
                    }
                }
                // Writes and checkpoints are never both held: a task's writes store the
                // checkpoints held before they are taken, a checkpoint takes the writes held
                // into its batch. Checkpoints go at once, writes when due (or full, or needed).
                if !batch.store(&*checkpointer, &gives_back.0, &thread, &failure).await {
                    return;
                }
                if (closed || writes.due.is_some_and(|due| Instant::now() >= due))
                    && !writes.store(&*checkpointer, &thread, &failure).await
                {
                    return;
                }
                if closed {
                    return;
                }
            }
        });
        Self {
            jobs,
            room,
            failed,
            nudge,
        }
    }
}

/// Takes the jobs queued, up to [`QUEUE`], without waiting; true when the queue is closed
/// (the run is gone) and empty.
fn take_queued(rx: &mut tokio::sync::mpsc::Receiver<Job>, queued: &mut Vec<Job>) -> bool {
    while queued.len() < QUEUE {
        match rx.try_recv() {
            Ok(job) => queued.push(job),
            Err(tokio::sync::mpsc::error::TryRecvError::Empty) => return false,
            Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => return true,
        }
    }
    false
}

/// The pending writes of several tasks, queued one after another, to store at once: for up to
/// [`LINGER`] after the first, unless a checkpoint, a flush or its bounds store it sooner. A
/// checkpointer stores them in one call ([`Checkpointer::put_writes_made`]: one SQLite
/// transaction). It holds one task's writes at most once.
#[derive(Default)]
struct Group {
    writes: Vec<QueuedWrites>,
    /// The tasks held, by a hash of (namespace, checkpoint, task): a collision only stores
    /// the group a little early.
    tasks: std::collections::HashSet<u64>,
    /// The bytes of the writes held.
    bytes: usize,
    /// When the writes held are due: [`LINGER`] after the first came.
    due: Option<Instant>,
}

impl Group {
    /// Whether the group holds writes of the same task as `w`'s.
    fn holds(&self, w: &QueuedWrites) -> bool {
        self.tasks.contains(&key(w))
    }

    fn push(&mut self, w: QueuedWrites) {
        if self.writes.is_empty() {
            self.due = Some(Instant::now() + LINGER);
        }
        self.tasks.insert(key(&w));
        self.bytes += w.rows.iter().map(|r| r.bytes.len()).sum::<usize>();
        self.writes.push(w);
    }

    /// Whether the group is at one of its bounds.
    fn full(&self) -> bool {
        self.writes.len() >= GROUP || self.bytes >= GROUP_BYTES
    }

    /// The writes held, no longer held: for a batch of checkpoints to store with its records.
    fn take(&mut self) -> Vec<QueuedWrites> {
        self.tasks.clear();
        self.bytes = 0;
        self.due = None;
        std::mem::take(&mut self.writes)
    }

    /// Stores the writes held, all at once; on failure records why and returns false.
    async fn store(
        &mut self,
        checkpointer: &dyn Checkpointer,
        thread: &str,
        failure: &std::sync::Mutex<Option<Error>>,
    ) -> bool {
        if self.writes.is_empty() {
            return true;
        }
        let writes = self.take();
        match checkpointer.put_writes_made(thread, writes, MadeByRun::new()).await {
            Ok(()) => true,
            Err(e) => {
                *failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(checkpointer_error(thread, e));
                false
            }
        }
    }
}

/// The writer's byte semaphore, closed when the writer stops (a failed put, or a panic), so that
/// no put waits for bytes that will not come back.
struct Closing(Arc<Semaphore>);

impl Drop for Closing {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// The checkpoints the writer stores together: with the tasks' writes held when they came and
/// those of their steps, stored after them in the same call (one transaction where the
/// checkpointer can), the head the first follows, and their bytes' share of the queue, given
/// back once they are stored.
#[derive(Default)]
struct Batch {
    writes: Vec<QueuedWrites>,
    records: Vec<CheckpointRecord>,
    expected: Option<Arc<str>>,
    bytes: usize,
}

impl Batch {
    fn push(&mut self, record: CheckpointRecord, head: Option<Arc<str>>, bytes: u32) {
        if self.records.is_empty() {
            self.expected = head;
        }
        self.records.push(record);
        self.bytes += bytes as usize;
    }

    /// Puts the batch, if any, and gives its bytes back to `room`; on failure records why and
    /// returns false: later checkpoints would not chain onto these.
    async fn store(
        &mut self,
        checkpointer: &dyn Checkpointer,
        room: &Semaphore,
        thread: &str,
        failure: &std::sync::Mutex<Option<Error>>,
    ) -> bool {
        if self.records.is_empty() && self.writes.is_empty() {
            return true;
        }
        let (writes, records) = (std::mem::take(&mut self.writes), std::mem::take(&mut self.records));
        // Every record of the batch, and every write, is one this run made.
        let expected = self.expected.take();
        match checkpointer
            .put_made_with_writes(thread, records, writes, expected.as_deref(), MadeByRun::new())
            .await
        {
            Ok(()) => {
                room.add_permits(std::mem::take(&mut self.bytes));
                true
            }
            Err(e) => {
                *failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(checkpointer_error(thread, e));
                false
            }
        }
    }
}

#[cfg(test)]
mod tests;
