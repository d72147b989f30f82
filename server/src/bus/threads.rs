//! [`ThreadWatchers`]: the watchers of threads in this process, and the fan-out of a thread's
//! [`ThreadNotice`]s to them. The in-process bus sends each notice here as it is told it; the
//! Redis bus feeds it from the one pub/sub subscription a process holds for every thread. A
//! thread that nobody in the process watches costs nothing: its notices are dropped, and a
//! thread's entry goes with its last watcher.

use super::ThreadNotice;
use futures::stream::{BoxStream, StreamExt};
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use tokio::sync::broadcast;
use tokio_stream::wrappers::BroadcastStream;

/// How many notices a watcher may fall behind before it gets a [`ThreadNotice::Gap`] in their
/// place.
const BEHIND: usize = 64;

/// The threads watched in this process, each with its watchers' channel.
#[derive(Debug, Default)]
pub(super) struct ThreadWatchers {
    by_thread: Mutex<HashMap<String, broadcast::Sender<ThreadNotice>>>,
}

impl ThreadWatchers {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, broadcast::Sender<ThreadNotice>>> {
        self.by_thread.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Sends `notice` to the watchers of `thread_id`, if it has any.
    pub(super) fn send(&self, thread_id: &str, notice: ThreadNotice) {
        let mut threads = self.lock();
        if let Some(watchers) = threads.get(thread_id) {
            if watchers.send(notice).is_err() {
                threads.remove(thread_id); // its last watcher is gone
            }
        }
    }

    /// Sends `notice` to every watcher of every thread.
    pub(super) fn send_all(&self, notice: &ThreadNotice) {
        self.lock().retain(|_, watchers| watchers.send(notice.clone()).is_ok());
    }

    /// The notices of `thread_id` from now on. A watcher that falls [`BEHIND`] notices behind
    /// gets a [`ThreadNotice::Gap`] for those it missed.
    pub(super) fn watch(&self, thread_id: &str) -> BoxStream<'static, ThreadNotice> {
        let mut threads = self.lock();
        // The threads whose watchers all left since, and that were told nothing, go here.
        threads.retain(|_, watchers| watchers.receiver_count() > 0);
        let watchers = threads
            .entry(thread_id.to_owned())
            .or_insert_with(|| broadcast::channel(BEHIND).0);
        BroadcastStream::new(watchers.subscribe())
            // The only error: `Lagged`, notices missed.
            .map(|notice| notice.unwrap_or(ThreadNotice::Gap))
            .boxed()
    }

    /// How many threads are watched.
    #[cfg(test)]
    pub(super) fn watched(&self) -> usize {
        self.lock().values().filter(|w| w.receiver_count() > 0).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    #[tokio::test]
    async fn a_notice_reaches_the_watchers_of_its_thread_only() {
        let watchers = ThreadWatchers::default();
        let mut a = watchers.watch("a");
        let mut b = watchers.watch("b");
        watchers.send("a", ThreadNotice::Run("r1".into()));
        watchers.send("c", ThreadNotice::Run("r2".into())); // nobody watches c
        assert_eq!(a.next().await, Some(ThreadNotice::Run("r1".into())));
        assert_eq!(b.next().now_or_never(), None);
        watchers.send_all(&ThreadNotice::Gap);
        assert_eq!(a.next().await, Some(ThreadNotice::Gap));
        assert_eq!(b.next().await, Some(ThreadNotice::Gap));
    }

    #[tokio::test]
    async fn a_thread_is_forgotten_with_its_last_watcher() {
        let watchers = ThreadWatchers::default();
        let a = watchers.watch("a");
        let a2 = watchers.watch("a");
        assert_eq!(watchers.watched(), 1);
        drop(a);
        assert_eq!(watchers.watched(), 1);
        drop(a2);
        watchers.send("a", ThreadNotice::Run("r1".into()));
        assert!(watchers.lock().is_empty());
        drop(watchers.watch("b"));
        let _c = watchers.watch("c"); // sweeps b, whose watcher left without a notice sent
        assert_eq!(watchers.lock().len(), 1);
    }

    #[tokio::test]
    async fn a_watcher_that_falls_behind_gets_a_gap_then_the_latest_notices() {
        let watchers = ThreadWatchers::default();
        let mut a = watchers.watch("a");
        for i in 0..BEHIND + 5 {
            watchers.send("a", ThreadNotice::Run(format!("r{i}")));
        }
        assert_eq!(a.next().await, Some(ThreadNotice::Gap));
        assert_eq!(a.next().await, Some(ThreadNotice::Run("r5".into())));
    }
}
