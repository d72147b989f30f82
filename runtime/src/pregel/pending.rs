//! The pending writes of a wide step's tasks, saved as each task ends (LangGraph's `put_writes`
//! from a task's done callback): a run killed in the middle of a step re-runs, on resume, only
//! the tasks that had not finished.
//!
//! A task of a step with several tasks saves its writes against the checkpoint the step started
//! from as soon as its node returns: under `Durability::Sync` it puts them itself, and the step
//! waits for that put; under `Durability::Async` it queues them behind the checkpoints the
//! background writer has not stored yet, which gathers them for a few milliseconds and stores
//! them together, and before the step's checkpoint (`writer.rs`, `LINGER`). A step of one task
//! saves nothing as it ends: its checkpoint follows at once. Under `Durability::Exit` nothing is
//! saved before the run ends. Once the step's checkpoint follows, the writes stay where they
//! are: a thread's history shows them as each task's result.
//!
//! Where weir differs from LangGraph, deliberately: LangGraph puts every task's writes as it
//! ends, a lone task's too, and a failed task's error, always in the background. weir skips a
//! lone task (the step's checkpoint follows it at once: a crash in between loses the same work
//! either way), unless the run keeps task results (`RunConfig::task_results`, as `weir serve`'s
//! runs do), which stores them with the step's checkpoint, in the same call
//! (`Loop::keep_completed`; never for the first step of a run that started from a stored
//! checkpoint: they would outlive a rollback of the run); saves a failure's error when the run
//! settles (the run ends at that step anyway); and under sync durability a task's put is
//! awaited before the step counts it finished.

use super::persist::{pending_rows, save_command, Persist, WRITES};
use super::writer::{QueuedWrites, WriterQueue};
use crate::error::Error;
use crate::graph::compile::GraphInner;
use crate::graph::task_key::task_id;
use crate::graph::Command;
use crate::graph::Durability;
use crate::graph::RunInfo;
use crate::state::State;
use std::sync::Arc;

/// What the tasks of one wide step share to save their writes as they end: one per step, lent
/// to its tasks by their groups.
pub(crate) struct StepSaver<S: State> {
    g: Arc<GraphInner<S>>,
    info: Arc<RunInfo>,
    /// The checkpoint the step started from: its pending writes are the step's.
    checkpoint: Arc<str>,
    /// The background writer, under async durability once it runs.
    queue: Option<WriterQueue>,
}

impl<S: State> StepSaver<S> {
    /// The saver of a step of the run `p`, when its durability saves writes as tasks end and
    /// the step starts from a checkpoint.
    pub(crate) fn of(g: &Arc<GraphInner<S>>, p: &Persist) -> Option<Self> {
        if p.info.durability == Durability::Exit {
            return None;
        }
        Some(Self {
            g: g.clone(),
            info: p.info.clone(),
            checkpoint: p.current.clone()?,
            queue: p.queue(),
        })
    }

    /// Saves the command of a finished task (of `node`, push index `push`) as its pending
    /// writes. Ok(true) once stored (sync) or queued (async); Ok(false) when not saved: a
    /// command the loop will fail (a command to the parent graph, an undeclared write) or a
    /// background writer that stopped.
    ///
    /// # Errors
    /// The checkpointer's failure to store them, or a `Send` that cannot be saved.
    pub(crate) async fn put(&self, node: u32, push: Option<usize>, command: &Command<S>) -> Result<bool, Error> {
        let Self {
            g,
            info,
            checkpoint,
            queue,
        } = self;
        if command.parent.is_some() || g.undeclared_write(node, &command.update).is_some() {
            return Ok(false);
        }
        // Saved before the task's routers run: a resume runs them.
        let bytes = save_command(g, &info.thread, command, false)?;
        let task_id = task_id(&g.names[node as usize], push);
        let rows = pending_rows(&task_id, vec![(WRITES, bytes)]);
        match queue {
            Some(queue) => Ok(queue
                .put_writes(QueuedWrites {
                    ns: info.ns.clone(),
                    checkpoint: checkpoint.clone(),
                    task_id,
                    rows,
                })
                .await),
            None => info
                .checkpointer
                .put_writes(&info.thread, &info.ns, checkpoint, &task_id, rows)
                .await
                .map(|()| true)
                .map_err(|e| super::persist::checkpointer_error(&info.thread, e)),
        }
    }
}
