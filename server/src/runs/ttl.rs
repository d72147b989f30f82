//! Threads' time-to-live (LangGraph's `checkpointer.ttl`, and the `ttl` of threads.create and
//! threads.update): the sweeper that every worker process runs. Each sweep asks the catalog for
//! the threads unchanged for longer than their TTL and not busy, then deletes each (`delete`:
//! its row, runs and checkpoints, as `DELETE /threads/{id}` does) or prunes it to its latest
//! checkpoint (`keep_latest`). Sweeps on several workers may meet on one thread: deleting a
//! thread twice, or pruning it twice, is harmless. `POST /threads/prune` does the same to the
//! threads it names ([`Manager::prune_thread`]).

use super::{Manager, RunError};
use crate::model::{Thread, ThreadStatus, TtlStrategy};
use std::time::Duration;

/// How many expired threads one sweep handles at most (the rest wait for the next sweep).
const SWEEP_LIMIT: usize = 1000;

/// What one sweep did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Swept {
    /// Threads deleted whole.
    pub deleted: usize,
    /// Threads pruned to their latest checkpoint.
    pub pruned: usize,
}

impl Manager {
    /// Applies the threads' TTLs once: what a worker's sweeper does every
    /// [`ManagerConfig::ttl_sweep`](super::ManagerConfig::ttl_sweep). A thread whose graph is not
    /// served here is left as it is (its checkpoints could not be reached), with a warning.
    ///
    /// # Errors
    /// When the catalog cannot list the expired threads; a failure on one thread is logged and
    /// the sweep goes on with the next.
    pub async fn sweep_thread_ttls(&self) -> Result<Swept, RunError> {
        let now = crate::model::now();
        let expired = self.inner.catalog.expired_threads(&now, SWEEP_LIMIT).await?;
        let mut swept = Swept::default();
        for (thread_id, strategy) in expired {
            match self.expire(&thread_id, strategy).await {
                Ok(true) if strategy == TtlStrategy::Delete => swept.deleted += 1,
                Ok(true) => swept.pruned += 1,
                Ok(false) => {}
                Err(e) => tracing::warn!(thread = %thread_id, error = %e, "the TTL sweeper could not expire a thread"),
            }
        }
        Ok(swept)
    }

    /// Deletes or prunes one expired thread; `false` when it was left (gone already, busy again,
    /// or its graph not served here).
    async fn expire(&self, thread_id: &str, strategy: TtlStrategy) -> Result<bool, RunError> {
        let Some(thread) = self.inner.catalog.get_thread_without_values(thread_id).await? else {
            return Ok(false);
        };
        // A run may have been created since the catalog listed the thread.
        if thread.status == ThreadStatus::Busy || self.inner.queue.has_inflight(thread_id, None).await? {
            return Ok(false);
        }
        self.prune_thread(&thread, strategy).await
    }

    /// Deletes `thread` whole (its row, runs and checkpoints, as `DELETE /threads/{id}` does) or
    /// prunes it to its latest checkpoint; `false` when it was left because its graph is not
    /// served here (its checkpoints could not be reached; a warning says so). A thread no run
    /// has touched has no checkpoints: it is deleted, or left as it is.
    pub async fn prune_thread(&self, thread: &Thread, strategy: TtlStrategy) -> Result<bool, RunError> {
        let thread_id = thread.thread_id.as_str();
        let graph = match thread.metadata.get("graph_id") {
            None => None,
            Some(graph_id) => match self.graph(graph_id.as_str().unwrap_or_default()) {
                Ok(graph) => Some(graph),
                Err(_) => {
                    tracing::warn!(thread = %thread_id, %graph_id, "left a thread whose graph is not served here");
                    return Ok(false);
                }
            },
        };
        match strategy {
            TtlStrategy::Delete => {
                if let Some(graph) = graph {
                    graph.delete_thread(thread_id).await?;
                }
                self.inner.catalog.delete_thread(thread_id).await?;
            }
            TtlStrategy::KeepLatest => {
                if let Some(graph) = graph {
                    graph.keep_latest(thread_id).await?;
                }
            }
        }
        Ok(true)
    }

    /// Sweeps every `every` until the manager stops (the first sweep after one interval).
    pub(super) async fn sweep_ttls_every(&self, every: Duration) {
        let mut timer = tokio::time::interval(every);
        timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        timer.tick().await;
        loop {
            timer.tick().await;
            match self.sweep_thread_ttls().await {
                Ok(Swept { deleted: 0, pruned: 0 }) => {}
                Ok(s) => tracing::info!(
                    deleted = s.deleted,
                    pruned = s.pruned,
                    "the TTL sweeper expired threads"
                ),
                Err(e) => tracing::warn!(error = %e, "the TTL sweeper failed; it tries again at its next interval"),
            }
        }
    }
}
