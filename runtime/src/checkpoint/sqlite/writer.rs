//! Who writes: the writer thread, fed by a bounded channel and answering each request on a
//! oneshot; or, for a lone put when nothing is queued, its caller's own thread, lent by tokio.
//!
//! No SQLite call runs on a tokio worker. The writer thread takes the queued requests one batch
//! at a time, as many as are queued (up to [`BATCH`]), and stores them in one transaction
//! ([`Core::commit`]); the answers go out once the batch is committed. A run whose steps come
//! faster than the disk thus commits many of them at once.
//!
//! A lone put (one checkpoint, as a run with synchronous durability makes every step), on a
//! multi-threaded tokio runtime, with nothing queued and the connection free, is stored by its
//! caller instead, inside `tokio::task::block_in_place`: the worker hands its queue of tasks to
//! another thread first, so the runtime goes on while the put runs, and the put crosses no
//! thread. A hop to the writer thread and back costs two wake-ups of a sleeping thread (about
//! 90 µs a put on the benchmark's VM, 4–5× the put itself). On a current-thread runtime, which
//! has no worker to lend, and for `synchronous = FULL`, whose commits wait for the disk and
//! gain from batching, puts always go to the writer thread.
//!
//! SQLite's automatic WAL checkpoint is off on the write connection: a commit never turns into a
//! checkpoint and its fsyncs. The writer thread checkpoints the log itself once it has grown by
//! about [`super::SqliteOptions`]'s page budget, after answering, when nothing is queued (or,
//! under a load that never lets the queue empty, once the log is four budgets long); a caller
//! that stores its own put checkpoints the log after it, when due, on the same lent thread.

use super::backend;
use super::batch::{Core, Outcome, Stats, Work};
use super::jobs::Jobs;
use super::WriteJob;
use crate::blocking::lends_thread;
use crate::checkpoint::SaverError;
use crate::sqlite::WriteGate;
use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{mpsc, oneshot};

/// How many requests wait in the queue at most; a writer waits (asynchronously) for room.
const QUEUE: usize = 1024;

/// How many requests one transaction takes at most.
const BATCH: usize = 1024;

/// What the writer thread is asked: a write and where to answer it, or (in tests) a hold or a
/// crash.
pub(super) enum Request {
    /// A write, answered once its transaction is committed (or refused).
    Write(Work, oneshot::Sender<Outcome>),
    /// A job of the file's other tables, which answers its caller itself.
    Job(WriteJob),
    /// Says it holds on the first channel, then waits, holding the connection, until the
    /// second's sender is dropped or sends: what is queued meanwhile goes into the next batch,
    /// and no caller stores its own put.
    #[cfg(test)]
    Hold(oneshot::Sender<()>, std::sync::mpsc::Receiver<()>),
    /// Panics on the writer thread, as a bug would.
    #[cfg(test)]
    Crash,
}

/// What the writer thread and the callers share: the write connection, and the writes queued.
struct Shared {
    core: Mutex<Core>,
    path: PathBuf,
    /// Writes sent to the thread and not answered yet: a caller stores its own put only when
    /// there are none, so it never overtakes a write queued before it.
    queued: AtomicUsize,
    stats: Stats,
}

impl Shared {
    fn core(&self) -> MutexGuard<'_, Core> {
        self.core.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The callers' side. Dropping the last one closes the channel; the thread then closes the
/// file's connections and ends.
pub(super) struct Handle {
    // Declared before `requests`, so dropped first: the thread, woken by the channel closing,
    // holds the last reference and closes the write connection itself.
    shared: Arc<Shared>,
    requests: mpsc::Sender<Request>,
    /// Whether a lone put may be stored by its caller (`synchronous` is not FULL).
    direct: bool,
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle")
            .field("path", &self.shared.path)
            .finish_non_exhaustive()
    }
}

/// The error of a write the writer did not answer: it stopped.
fn stopped(path: &Path) -> SaverError {
    SaverError::backend(
        format!("sqlite checkpoint store `{}` failed", path.display()),
        "its writer thread has stopped, so nothing more can be written through this saver (open the file again)",
    )
}

impl Handle {
    /// Starts the writer on `conn`, the file's migrated write connection; `readers` is the
    /// pool of idle read connections, which the writer closes before its own when it ends (the
    /// last connection to close checkpoints the log, on this thread rather than a caller's).
    /// `direct`: whether a lone put may be stored by its caller.
    pub(super) fn start(
        conn: Connection,
        path: PathBuf,
        wal_pages: u64,
        readers: Arc<Mutex<Vec<Connection>>>,
        direct: bool,
    ) -> Result<Self, SaverError> {
        let core = Core::new(conn, wal_pages, WriteGate::for_file(&path)).map_err(|e| backend(&path, e))?;
        let shared = Arc::new(Shared {
            core: Mutex::new(core),
            path: path.clone(),
            queued: AtomicUsize::new(0),
            stats: Stats::default(),
        });
        let (requests, queue) = mpsc::channel(QUEUE);
        let on_thread = shared.clone();
        std::thread::Builder::new()
            .name("weir-sqlite-writer".into())
            .spawn(move || {
                serve(&on_thread, queue);
                // Every request is answered. The readers close first, the writer last.
                drop(std::mem::take(&mut *readers.lock().unwrap_or_else(|p| p.into_inner())));
                drop(on_thread);
            })
            .map_err(|e| SaverError::backend(format!("sqlite checkpoint store `{}` failed", path.display()), e))?;
        Ok(Handle {
            shared,
            requests,
            direct,
        })
    }

    /// Stores `work`, on this thread when it can (see the [module docs](self)), else through
    /// the writer thread, and waits for it; a panic while it ran resumes here.
    pub(super) async fn write(&self, work: Work) -> Result<(), SaverError> {
        let work = match self.write_here(work) {
            Ok(outcome) => return outcome.unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(work) => work,
        };
        let (answer, answered) = oneshot::channel();
        self.shared.queued.fetch_add(1, Ordering::AcqRel);
        if self.requests.send(Request::Write(work, answer)).await.is_err() {
            return Err(stopped(&self.shared.path));
        }
        match answered.await {
            Ok(Ok(result)) => result,
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Err(_) => Err(stopped(&self.shared.path)),
        }
    }

    /// Queues `job` for the writer thread, which runs it with the next batch; its answer
    /// tells its caller how that ended.
    pub(super) async fn queue_job(&self, job: WriteJob) -> Result<(), SaverError> {
        self.requests
            .send(Request::Job(job))
            .await
            .map_err(|_| stopped(&self.shared.path))
    }

    /// Stores a lone put on the caller's thread, lent by tokio, when the runtime can lend it,
    /// nothing is queued, the writer thread runs and the connection is free; else hands the
    /// work back, for the writer thread.
    fn write_here(&self, work: Work) -> Result<Outcome, Work> {
        let lone = matches!(&work, Work::Put(records, ..) if records.len() == 1);
        if !self.direct
            || !lone
            || self.shared.queued.load(Ordering::Acquire) != 0
            || self.requests.is_closed()
            || !lends_thread()
        {
            return Err(work);
        }
        let Ok(mut core) = self.shared.core.try_lock() else {
            return Err(work);
        };
        let shared = &*self.shared;
        let mut outcomes = Vec::with_capacity(1);
        tokio::task::block_in_place(|| {
            let mut no_jobs = Jobs::default();
            core.commit(
                &mut no_jobs,
                std::slice::from_ref(&work),
                &shared.path,
                &shared.stats,
                &mut outcomes,
            );
            core.checkpoint_wal(true, &shared.path, &shared.stats);
        });
        Ok(outcomes.pop().expect("one outcome per write"))
    }

    /// What the writes have done.
    #[cfg(test)]
    pub(super) fn stats(&self) -> &Stats {
        &self.shared.stats
    }

    /// Sends a test request.
    #[cfg(test)]
    /// Counted as queued until it is served (a crash: forever), so no caller stores its own
    /// put ahead of it.
    pub(super) async fn send(&self, request: Request) {
        self.shared.queued.fetch_add(1, Ordering::AcqRel);
        let _ = self.requests.send(request).await;
    }

    /// Whether a write holds the connection now.
    #[cfg(test)]
    pub(super) fn busy(&self) -> bool {
        self.shared.core.try_lock().is_err()
    }

    /// How many requests wait in the queue.
    #[cfg(test)]
    pub(super) fn queued(&self) -> usize {
        self.requests.max_capacity() - self.requests.capacity()
    }
}

/// The writes and jobs of a batch, their answers and outcomes, reused from batch to batch.
#[derive(Default)]
struct Pending {
    works: Vec<Work>,
    answers: Vec<oneshot::Sender<Outcome>>,
    outcomes: Vec<Outcome>,
    jobs: Jobs,
}

impl Pending {
    /// Commits the writes and jobs taken so far on `core`.
    fn commit(&mut self, core: &mut Core, shared: &Shared) {
        core.commit(
            &mut self.jobs,
            &self.works,
            &shared.path,
            &shared.stats,
            &mut self.outcomes,
        );
        self.works.clear();
    }

    /// Answers the committed writes (no longer queued, so a caller may store its next put) and
    /// jobs.
    fn answer(&mut self, shared: &Shared) {
        shared.queued.fetch_sub(self.answers.len(), Ordering::AcqRel);
        for (answer, outcome) in self.answers.drain(..).zip(self.outcomes.drain(..)) {
            let _ = answer.send(outcome);
        }
        self.jobs.answer();
    }
}

/// The writer thread's body: serves the queue until it is closed, a batch at a time.
fn serve(shared: &Shared, mut queue: mpsc::Receiver<Request>) {
    let mut batch = Vec::with_capacity(16);
    let mut pending = Pending::default();
    while let Some(first) = queue.blocking_recv() {
        batch.push(first);
        while batch.len() < BATCH {
            match queue.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        let mut core = shared.core();
        for request in batch.drain(..) {
            match request {
                Request::Write(work, answer) => {
                    pending.works.push(work);
                    pending.answers.push(answer);
                }
                Request::Job(job) => pending.jobs.queued.push(job),
                #[cfg(test)]
                Request::Hold(holding, release) => {
                    pending.commit(&mut core, shared);
                    pending.answer(shared);
                    let _ = holding.send(());
                    let _ = release.recv();
                    shared.queued.fetch_sub(1, Ordering::AcqRel);
                }
                #[cfg(test)]
                Request::Crash => panic!("the writer crashed, as a test asked"),
            }
        }
        pending.commit(&mut core, shared);
        let wal_due = core.wal_due(true);
        drop(core);
        pending.answer(shared);
        if wal_due {
            let idle = queue.is_empty();
            shared.core().checkpoint_wal(idle, &shared.path, &shared.stats);
        }
    }
}
