//! The proof behind the savers' fast paths, in a module of its own so that it cannot be named
//! outside this crate: a saver of another crate neither calls nor overrides the methods that
//! take it ([`Checkpointer::put_made`], [`Checkpointer::try_put_in_place`]), and gets their
//! defaults.
//!
//! [`Checkpointer::put_made`]: super::Checkpointer::put_made
//! [`Checkpointer::try_put_in_place`]: super::Checkpointer::try_put_in_place

/// Proof that a run built a record: a record a run builds holds together by construction
/// (its ids, each channel's blob reference, its blobs and deltas), which a saver then need
/// not check again, as it must for a record from anywhere else. Only the runtime makes one.
#[derive(Debug, Clone, Copy)]
pub struct MadeByRun(());

impl MadeByRun {
    /// For a record the run has just built.
    pub(crate) fn new() -> Self {
        Self(())
    }
}

/// One task's pending writes, as a run hands them to
/// [`Checkpointer::put_writes_made`](super::Checkpointer::put_writes_made): the namespace, the
/// checkpoint they belong to, the task, and the writes (each of that task). Nameable only in
/// this crate, like [`MadeByRun`].
#[derive(Debug)]
pub struct TaskWrites {
    pub(crate) ns: std::sync::Arc<str>,
    pub(crate) checkpoint: std::sync::Arc<str>,
    pub(crate) task_id: String,
    pub(crate) rows: Vec<super::PendingWrite>,
}
