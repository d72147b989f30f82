//! The background checkpoint writer of a run with asynchronous durability: checkpoints are put
//! in order while the run goes on, in batches when the checkpointer is slower than the loop.

use super::persist::{checkpointer_error, Persist};
use crate::checkpoint::{CheckpointRecord, Checkpointer, MadeByRun, PendingWrite};
use crate::error::Error;
use std::sync::Arc;
use tokio::sync::{Semaphore, SemaphorePermit};

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

    /// Hands a checkpoint to the background writer (async durability), starting it if need be:
    /// puts land in order while the run goes on.
    pub(crate) async fn put_later(
        &mut self,
        record: CheckpointRecord,
        expected: Option<Arc<str>>,
    ) -> Result<(), Error> {
        let writer = self
            .writer
            .get_or_insert_with(|| Writer::start(self.info.checkpointer.clone(), self.info.thread.clone()));
        // Waits while the queue holds its share of bytes; the writer gives them back as it stores
        // (and closes the semaphore when it stops, which sends this put to `flush` for the error).
        let bytes = queued_bytes(&record);
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
            .send(Job::Put(Box::new(record), expected, bytes))
            .await
            .is_err()
        {
            return self.flush().await;
        }
        Ok(())
    }

    /// Where the tasks of a wide step queue their pending writes as they end, when the
    /// background writer runs: behind the checkpoints queued before them.
    pub(crate) fn queue(&self) -> Option<WriterQueue> {
        self.writer.as_ref().map(|w| WriterQueue(w.jobs.clone()))
    }
}

/// A handle on a run's background writer, for a task to queue its pending writes.
#[derive(Clone)]
pub(crate) struct WriterQueue(tokio::sync::mpsc::Sender<Job>);

impl WriterQueue {
    /// Queues one task's pending writes. False when the writer has stopped (its failure is the
    /// run's at the next flush): the loop saves them itself if the step does not complete.
    pub(crate) async fn put_writes(&self, writes: QueuedWrites) -> bool {
        self.0.send(Job::Writes(Box::new(writes))).await.is_ok()
    }
}

/// One task's pending writes, queued: the namespace, the checkpoint they belong to, the task.
pub(crate) struct QueuedWrites {
    pub(crate) ns: Arc<str>,
    pub(crate) checkpoint: Arc<str>,
    pub(crate) task_id: String,
    pub(crate) rows: Vec<PendingWrite>,
}

impl QueuedWrites {
    /// A hash of the namespace, checkpoint and task the writes are of.
    fn key(&self) -> u64 {
        use std::hash::{BuildHasher, RandomState};
        static HASHER: std::sync::LazyLock<RandomState> = std::sync::LazyLock::new(RandomState::new);
        HASHER.hash_one((&*self.ns, &*self.checkpoint, &self.task_id))
    }
}

/// What a queued checkpoint counts against [`QUEUE_BYTES`]: its body and blobs, and a kilobyte
/// for the rest of the record; at most the whole budget.
fn queued_bytes(record: &CheckpointRecord) -> u32 {
    let blobs: usize = record.blobs.iter().map(|b| b.bytes.len()).sum();
    (record.body.len() + blobs + 1024).min(QUEUE_BYTES as usize) as u32
}

/// What the background writer is asked.
pub(crate) enum Job {
    /// A checkpoint, the head it follows, and its bytes' share of the queue.
    Put(Box<CheckpointRecord>, Option<Arc<str>>, u32),
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

impl Writer {
    fn start(checkpointer: Arc<dyn Checkpointer>, thread: Arc<str>) -> Self {
        let (jobs, mut rx) = tokio::sync::mpsc::channel::<Job>(QUEUE);
        let failed = Arc::new(std::sync::Mutex::new(None));
        let failure = failed.clone();
        let room = Arc::new(Semaphore::new(QUEUE_BYTES as usize));
        let gives_back = Closing(room.clone());
        tokio::spawn(async move {
            // Grown as batches come, not made for the largest: most runs are short.
            let mut queued = Vec::new();
            let mut batch = Batch::default();
            let mut writes = Group::default();
            while rx.recv_many(&mut queued, QUEUE).await > 0 {
                for job in queued.drain(..) {
                    match job {
                        Job::Put(record, head, bytes) => {
                            if !writes.store(&*checkpointer, &thread, &failure).await {
                                return;
                            }
                            batch.push(*record, head, bytes);
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
                if !writes.store(&*checkpointer, &thread, &failure).await
                    || !batch.store(&*checkpointer, &gives_back.0, &thread, &failure).await
                {
                    return;
                }
            }
        });
        Self { jobs, room, failed }
    }
}

/// The pending writes of several tasks, queued one after another, to store at once: a
/// checkpointer that batches what comes together (SQLite's writer thread) commits them in one
/// transaction instead of one each (a functional run's sequential task calls each queue theirs
/// while the writer is busy). It holds one task's writes at most once.
#[derive(Default)]
struct Group {
    writes: Vec<QueuedWrites>,
    /// The tasks held, by a hash of (namespace, checkpoint, task): a collision only stores
    /// the group a little early.
    tasks: std::collections::HashSet<u64>,
}

impl Group {
    /// Whether the group holds writes of the same task as `w`'s.
    fn holds(&self, w: &QueuedWrites) -> bool {
        self.tasks.contains(&w.key())
    }

    fn push(&mut self, w: QueuedWrites) {
        self.tasks.insert(w.key());
        self.writes.push(w);
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
        self.tasks.clear();
        let puts = self.writes.drain(..).map(|w| async move {
            checkpointer
                .put_writes(thread, &w.ns, &w.checkpoint, &w.task_id, w.rows)
                .await
        });
        match futures::future::join_all(puts).await.into_iter().find_map(Result::err) {
            None => true,
            Some(e) => {
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

/// The checkpoints the writer stores together: the head the first follows, and their bytes'
/// share of the queue, given back once they are stored.
#[derive(Default)]
struct Batch {
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
        if self.records.is_empty() {
            return true;
        }
        let records = std::mem::take(&mut self.records);
        // Every record of the batch is one this run made.
        match checkpointer
            .put_made(records, self.expected.take().as_deref(), MadeByRun::new())
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
