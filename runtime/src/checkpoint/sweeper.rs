//! The background sweeper: a tokio task that applies a [`Retention`] policy to every thread of
//! a saver at an interval ([`Checkpointer::prune_all`]), stopped when dropped.

use super::{Checkpointer, Pruned, Retention, SaverError};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A task pruning a saver's threads by a policy every interval, the first time at once. A failed
/// sweep is logged (`tracing` warning) and the next one runs as planned. Dropping the sweeper
/// stops it.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use weir_runtime::checkpoint::{MemorySaver, Retention, Sweeper};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let saver = Arc::new(MemorySaver::new());
/// let sweeper = Sweeper::start(saver.clone(), Retention::new().keep_last(100), Duration::from_secs(3600)).unwrap();
/// sweeper.swept(1).await;
/// sweeper.stop().await;
/// # }
/// ```
#[derive(Debug)]
pub struct Sweeper {
    task: Option<JoinHandle<()>>,
    done: watch::Receiver<u64>,
    total: Arc<Mutex<Pruned>>,
}

impl Sweeper {
    /// Starts sweeping `saver` with `policy` every `interval`, on the tokio runtime of the
    /// caller.
    ///
    /// # Errors
    /// [`SaverError::is_invalid`] without a tokio runtime, or with a zero interval.
    pub fn start(saver: Arc<dyn Checkpointer>, policy: Retention, interval: Duration) -> Result<Self, SaverError> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| SaverError::config("a retention sweeper needs a tokio runtime to run on"))?;
        if interval.is_zero() {
            return Err(SaverError::config("a retention sweeper's interval must not be zero"));
        }
        let (tx, done) = watch::channel(0u64);
        let total = Arc::new(Mutex::new(Pruned::default()));
        let sum = total.clone();
        let task = runtime.spawn(async move {
            let mut ticks = tokio::time::interval(interval);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                match saver.prune_all(&policy).await {
                    Ok(pruned) => *sum.lock().unwrap_or_else(|p| p.into_inner()) += pruned,
                    Err(e) => tracing::warn!(error = %e, "retention sweep failed"),
                }
                tx.send_modify(|n| *n += 1);
            }
        });
        Ok(Sweeper {
            task: Some(task),
            done,
            total,
        })
    }

    /// Waits until `n` sweeps have ended (counting from the start, failed ones too).
    pub async fn swept(&self, n: u64) {
        let mut done = self.done.clone();
        // The task only ends when stopped, which takes `self`.
        let _ = done.wait_for(|&k| k >= n).await;
    }

    /// How many sweeps have ended so far.
    pub fn sweeps(&self) -> u64 {
        *self.done.borrow()
    }

    /// What the sweeps so far removed, in all.
    pub fn total(&self) -> Pruned {
        *self.total.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stops the task and waits until it has ended (it holds the saver until then).
    pub async fn stop(mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
    }
}

impl Drop for Sweeper {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}
