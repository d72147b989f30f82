//! Where weir's blocking calls (SQLite's) run: on the caller's own thread, lent by tokio with
//! `block_in_place`, when the runtime is multi-threaded and what the call needs is free; on
//! tokio's blocking pool otherwise. A call as short as a point read runs on the caller's
//! thread without lending it ([`with_locked_briefly`]).
//!
//! A hop to the blocking pool and back wakes a sleeping thread twice: about 10–30 µs, several
//! times a SQLite point read (a store `get` took 12–32 µs through the pool, 5.5 µs lent). Lent,
//! the worker hands its queue of tasks to another thread before the call, so the runtime goes
//! on meanwhile; a current-thread runtime has no worker to lend (`block_in_place` panics on
//! it), so its calls always take the pool.

use std::sync::{Arc, Mutex};
use tokio::task::JoinError;

/// Whether this thread may be lent to a blocking call: it runs on a multi-threaded tokio
/// runtime.
pub(crate) fn lends_thread() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
}

/// Runs `f` on the value behind `shared`: here, on this thread lent by tokio, when it can be
/// lent and the lock is free at once; else on the blocking pool, which waits for the lock. A
/// lock poisoned by a panic is taken as it is (each caller's writes are whole or rolled back).
///
/// # Errors
/// The blocking pool's, when the call there panicked or the runtime is shutting down.
pub(crate) async fn with_locked<T, R>(
    shared: &Arc<Mutex<T>>,
    f: impl FnOnce(&mut T) -> R + Send + 'static,
) -> Result<R, JoinError>
where
    T: Send + 'static,
    R: Send + 'static,
{
    if lends_thread() {
        if let Ok(mut value) = shared.try_lock() {
            return Ok(tokio::task::block_in_place(|| f(&mut value)));
        }
    }
    let shared = shared.clone();
    tokio::task::spawn_blocking(move || f(&mut shared.lock().unwrap_or_else(|p| p.into_inner()))).await
}

/// Runs `f`, a call as short as a point read, right here when the lock is free at once: even
/// lending the thread wakes another to take over the worker's queue, which costs more than
/// the read (the store benchmark's SQLite `get`: 6.0 µs lent, 4.3 µs here). Else as [`with_locked`].
///
/// # Errors
/// As [`with_locked`].
pub(crate) async fn with_locked_briefly<T, R>(
    shared: &Arc<Mutex<T>>,
    f: impl FnOnce(&mut T) -> R + Send + 'static,
) -> Result<R, JoinError>
where
    T: Send + 'static,
    R: Send + 'static,
{
    if let Ok(mut value) = shared.try_lock() {
        return Ok(f(&mut value));
    }
    with_locked(shared, f).await
}

/// Runs `f` here, on this thread lent by tokio, when it can be lent; else on the blocking pool.
///
/// # Errors
/// As [`with_locked`].
pub(crate) async fn run<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> Result<R, JoinError> {
    if lends_thread() {
        return Ok(tokio::task::block_in_place(f));
    }
    tokio::task::spawn_blocking(f).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_free_lock_is_taken_on_the_lent_thread_and_a_held_one_on_the_pool() {
        let shared = Arc::new(Mutex::new(0));
        let here = std::thread::current().id();
        let ran = with_locked(&shared, move |n| {
            *n += 1;
            std::thread::current().id()
        })
        .await
        .unwrap();
        assert_eq!(ran, here, "a free lock: this thread");
        // Another thread holds the lock until told to let go.
        let (holding, held) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let holder = {
            let shared = shared.clone();
            std::thread::spawn(move || {
                let _guard = shared.lock().unwrap();
                holding.send(()).unwrap();
                let _ = released.recv();
            })
        };
        held.recv().unwrap();
        let waiting = {
            let shared = shared.clone();
            tokio::spawn(async move { with_locked(&shared, |n| *n + 1).await.unwrap() })
        };
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert!(
            !waiting.is_finished(),
            "the call waits for the lock, off the runtime's threads"
        );
        release.send(()).unwrap();
        holder.join().unwrap();
        assert_eq!(waiting.await.unwrap(), 2);
        assert_eq!(run(|| 7).await.unwrap(), 7);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_current_thread_runtime_sends_every_call_to_the_pool() {
        let shared = Arc::new(Mutex::new(()));
        let here = std::thread::current().id();
        let ran = with_locked(&shared, |_| std::thread::current().id()).await.unwrap();
        assert_ne!(ran, here);
        assert_ne!(run(|| std::thread::current().id()).await.unwrap(), here);
    }

    /// A brief call takes a free lock right here, on any runtime; a held one it waits for as
    /// [`with_locked`] does, off this thread.
    // The lock is held across awaits on purpose: what waits for it runs on the blocking pool.
    #[allow(clippy::await_holding_lock)]
    #[tokio::test(flavor = "current_thread")]
    async fn a_brief_call_runs_here_when_the_lock_is_free() {
        let shared = Arc::new(Mutex::new(()));
        let here = std::thread::current().id();
        let ran = with_locked_briefly(&shared, |_| std::thread::current().id())
            .await
            .unwrap();
        assert_eq!(ran, here);
        let held = shared.lock().unwrap();
        let waiting = {
            let shared = shared.clone();
            tokio::spawn(async move { with_locked_briefly(&shared, |_| std::thread::current().id()).await })
        };
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "it waits for the lock, and the runtime goes on");
        drop(held);
        assert_ne!(waiting.await.unwrap().unwrap(), here);
    }
}
