//! The jobs of the file's other tables (the server's, [`WriteJob`]) in a batch of the writer:
//! each runs inside the batch's transaction under a savepoint of its own, or alone when that
//! transaction could not begin; their answers wait for the commit.

use super::{WriteAnswer, WriteJob};
use rusqlite::Connection;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The jobs of a batch: those queued, then their answers, and why their transaction did not
/// commit (`None`: it did, or each job ran in its own).
#[derive(Default)]
pub(super) struct Jobs {
    pub(super) queued: Vec<WriteJob>,
    pub(super) answers: Vec<WriteAnswer>,
    pub(super) failed: Option<String>,
}

impl Jobs {
    /// Runs the queued jobs on `conn`, in order: inside the batch's transaction (`in_batch`),
    /// each under a savepoint of its own, else each alone, as on a connection of its own. Keeps
    /// the answers of those that did not panic (what a panicking one wrote in the batch is
    /// undone, and its caller hears that it did not answer); how many ran.
    pub(super) fn run(&mut self, conn: &mut Connection, in_batch: bool) -> usize {
        let ran = self.queued.len();
        for job in self.queued.drain(..) {
            let answer = if in_batch {
                in_savepoint(conn, job)
            } else {
                alone(conn, job)
            };
            self.answers.extend(answer);
        }
        ran
    }

    /// Tells each job run how its transaction ended.
    pub(super) fn answer(&mut self) {
        let failed = self.failed.take();
        for answer in self.answers.drain(..) {
            answer(failed.as_deref());
        }
    }
}

/// Runs `job` under a savepoint of its own, rolled back if it panics.
fn in_savepoint(conn: &mut Connection, job: WriteJob) -> Option<WriteAnswer> {
    let savepoint = conn.prepare_cached("SAVEPOINT job").and_then(|mut s| s.execute([]));
    let answer = alone(conn, job);
    if savepoint.is_ok() {
        if answer.is_none() {
            let _ = conn.prepare_cached("ROLLBACK TO job").and_then(|mut s| s.execute([]));
        }
        let _ = conn.prepare_cached("RELEASE job").and_then(|mut s| s.execute([]));
    }
    answer
}

/// Runs `job`; its answer, or `None` when it panicked.
fn alone(conn: &mut Connection, job: WriteJob) -> Option<WriteAnswer> {
    let answer = catch_unwind(AssertUnwindSafe(|| job(conn))).ok();
    if answer.is_none() {
        tracing::error!("a job of the tables beside the checkpoints panicked on the sqlite writer");
    }
    answer
}
