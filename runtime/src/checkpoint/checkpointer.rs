//! The `Checkpointer` trait: what every saver implements.

use super::{
    CheckpointRecord, Held, Loaded, MadeByRun, PendingWrite, Pruned, Retention, SaverError, TaskWrites, Usage,
};
use futures::future::BoxFuture;
use std::fmt::Debug;

/// A store of checkpoints. Object safe: a graph holds an `Arc<dyn Checkpointer>`.
///
/// A saver implements the batched write ([`put_many`](Self::put_many)), the reads, the writes
/// of tasks and the deletion; [`put`](Self::put) and [`history`](Self::history) have defaults
/// built on those, which a saver may replace with something faster.
///
/// Every saver validates what it is given (a blob for each channel pointing at the new record, a
/// delta only onto a stored blob) and refuses an invalid record with
/// [`SaverError::is_invalid`], storing nothing.
pub trait Checkpointer: Send + Sync + Debug + 'static {
    /// Stores `records`, in order, as successive heads of one thread and namespace: the first
    /// expects `expected_head` (as in [`put`](Self::put)), each next one the record before it.
    /// All of them or none: a refused record stores nothing of the batch.
    ///
    /// A run with asynchronous durability hands its background writer's queue over in one call,
    /// so that a saver can store the checkpoints that piled up while it was busy in one
    /// transaction.
    fn put_many<'a>(
        &'a self,
        records: Vec<CheckpointRecord>,
        expected_head: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), SaverError>>;

    /// Stores `record` as the new head of `(record.thread_id, record.ns)`.
    ///
    /// `expected_head` is the id the caller believes is the latest checkpoint of the thread and
    /// namespace (`None` for a new one). If another writer moved the head meanwhile, fails with a
    /// conflict naming the thread and stores nothing. Ids of a thread and namespace increase: a
    /// record whose id is not greater than `expected_head` is invalid
    /// ([`new_checkpoint_id_after`] makes such ids), so the head is always the greatest id.
    /// Atomic: the record, its blobs and the head move together or not at all.
    ///
    /// The default is a [`put_many`](Self::put_many) of one record.
    ///
    /// [`new_checkpoint_id_after`]: super::new_checkpoint_id_after
    fn put<'a>(
        &'a self,
        record: CheckpointRecord,
        expected_head: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        self.put_many(vec![record], expected_head)
    }

    /// Stores `records`, which a run made, as [`put_many`](Self::put_many) would: `made`
    /// vouches that they hold together, and a saver need check only what depends on its store.
    /// The runtime's own fast path; only this crate can call or override it. The default is
    /// `put_many`, which checks everything.
    #[doc(hidden)]
    fn put_made<'a>(
        &'a self,
        records: Vec<CheckpointRecord>,
        expected_head: Option<&'a str>,
        made: MadeByRun,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        let _ = made;
        self.put_many(records, expected_head)
    }

    /// Stores `record`, which a run made, as [`put`](Self::put) would, at once, when this saver
    /// can do so without waiting on anything (no I/O, no other process); otherwise hands the
    /// record back (`Err(record)`) untouched, for `put_made`. A checkpoint stored in place needs
    /// no future, and with asynchronous durability no hand-over to a background writer, which
    /// would cost more than the put itself. The runtime's own fast path; only this crate can
    /// call or override it. The default hands every record back; [`MemorySaver`] stores in
    /// place.
    // The record comes back by move when the saver declines; a box would cost an allocation a
    // checkpoint, which storing in place is there to save.
    #[doc(hidden)]
    #[allow(clippy::result_large_err)]
    fn try_put_in_place(
        &self,
        record: CheckpointRecord,
        expected_head: Option<&str>,
        made: MadeByRun,
    ) -> Result<Result<(), SaverError>, CheckpointRecord> {
        let _ = (expected_head, made);
        Err(record)
    }

    /// The checkpoint `id` of the thread and namespace, or its head when `id` is `None`; `None`
    /// when there is no such checkpoint.
    fn get<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<Loaded>, SaverError>>;

    /// [`get`](Self::get) for a reader that already holds some channels' values: for a
    /// channel named in `held` whose chain here passes through the blob it names, a saver may
    /// return only the links stored after that blob (none when the value is the same) and name
    /// the channel in [`Loaded::continued`]; every other chain is whole. A run reading its
    /// thread's head again after its last step holds nearly all of it: a long list then costs
    /// the links it gained, not all of them.
    ///
    /// The default is `get`, whose chains are all whole; the savers of this crate stop early.
    fn get_holding<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        id: Option<&'a str>,
        held: &'a [Held],
    ) -> BoxFuture<'a, Result<Option<Loaded>, SaverError>> {
        let _ = held;
        self.get(thread_id, ns, id)
    }

    /// The id of the head (latest checkpoint) of the thread and namespace, if any.
    fn head<'a>(&'a self, thread_id: &'a str, ns: &'a str) -> BoxFuture<'a, Result<Option<String>, SaverError>>;

    /// The checkpoints of the thread and namespace, newest (greatest id) first, with `blobs`
    /// empty: only those with an id less than `before` when given, at most `limit` when given.
    fn list<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        before: Option<&'a str>,
        limit: Option<usize>,
    ) -> BoxFuture<'a, Result<Vec<CheckpointRecord>, SaverError>>;

    /// The checkpoints [`list`](Self::list) selects, each as [`get`](Self::get) reads it:
    /// what a thread's history shows, newest first.
    ///
    /// The default lists, then gets each checkpoint (a read for each); the savers of this crate
    /// read them all in one go, in one transaction.
    fn history<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        before: Option<&'a str>,
        limit: Option<usize>,
    ) -> BoxFuture<'a, Result<Vec<Loaded>, SaverError>> {
        Box::pin(async move {
            let records = self.list(thread_id, ns, before, limit).await?;
            let mut out = Vec::with_capacity(records.len());
            for r in records {
                // A checkpoint deleted between the two reads is left out.
                out.extend(self.get(thread_id, ns, Some(&r.id)).await?);
            }
            Ok(out)
        })
    }

    /// Stores the writes of task `task_id` against checkpoint `checkpoint_id`, replacing that
    /// task's earlier writes on that checkpoint. Every write's `task_id` must be `task_id`, and
    /// the checkpoint must exist.
    fn put_writes<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        checkpoint_id: &'a str,
        task_id: &'a str,
        writes: Vec<PendingWrite>,
    ) -> BoxFuture<'a, Result<(), SaverError>>;

    /// Stores the pending writes of several tasks of the thread, which a run made, as a
    /// [`put_writes`](Self::put_writes) of each would, in order: what a run's background writer
    /// has gathered (async durability). A saver may store them in one transaction. The
    /// runtime's own fast path; only this crate can call or override it. The default puts each
    /// task's writes, all at once, and fails with the first error.
    #[doc(hidden)]
    fn put_writes_made<'a>(
        &'a self,
        thread_id: &'a str,
        writes: Vec<TaskWrites>,
        made: MadeByRun,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        let _ = made;
        Box::pin(async move {
            let puts = writes.into_iter().map(|w| async move {
                self.put_writes(thread_id, &w.ns, &w.checkpoint, &w.task_id, w.rows)
                    .await
            });
            futures::future::join_all(puts)
                .await
                .into_iter()
                .find_map(Result::err)
                .map_or(Ok(()), Err)
        })
    }

    /// Stores `records`, which a run made, then `writes` (pending writes of tasks of
    /// `thread_id`, against those records or checkpoints already stored), as
    /// [`put_made`](Self::put_made) then [`put_writes_made`](Self::put_writes_made) would: a
    /// run's checkpoints with the writes of the steps that started from them. A saver may store
    /// both in one transaction. The runtime's own fast path; only this crate can call or
    /// override it. The default makes the two calls in turn.
    #[doc(hidden)]
    fn put_made_with_writes<'a>(
        &'a self,
        thread_id: &'a str,
        records: Vec<CheckpointRecord>,
        writes: Vec<TaskWrites>,
        expected_head: Option<&'a str>,
        made: MadeByRun,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        Box::pin(async move {
            if !records.is_empty() {
                self.put_made(records, expected_head, made).await?;
            }
            if writes.is_empty() {
                return Ok(());
            }
            self.put_writes_made(thread_id, writes, made).await
        })
    }

    /// Deletes everything of the thread: every namespace's checkpoints, blobs, writes and head.
    fn delete_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<(), SaverError>>;

    /// Deletes the thread's checkpoints written after checkpoint `checkpoint_id`, in every
    /// namespace (a subgraph's too: ids compare in creation order across namespaces), with the
    /// pending writes stored against them; `None` deletes the whole thread, as
    /// [`delete_thread`](Self::delete_thread). What a rolled-back run wrote goes; the thread's
    /// head is then `checkpoint_id` again. The writes stored against `checkpoint_id` itself stay.
    ///
    /// The default refuses with [`SaverError::is_invalid`] unless `checkpoint_id` is `None`; the
    /// savers of this crate implement it, each in one transaction (or under one lock).
    fn delete_after<'a>(
        &'a self,
        thread_id: &'a str,
        checkpoint_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        match checkpoint_id {
            None => self.delete_thread(thread_id),
            Some(_) => Box::pin(std::future::ready(Err(SaverError::invalid(
                thread_id,
                "this saver cannot delete the checkpoints after a given one",
            )))),
        }
    }

    /// The ids of the threads with at least one checkpoint, sorted.
    fn threads(&self) -> BoxFuture<'_, Result<Vec<String>, SaverError>>;

    /// What is stored for the thread, all namespaces together.
    fn usage<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Usage, SaverError>>;

    /// The namespaces of the thread with at least one checkpoint (`""` for the root graph's),
    /// sorted; empty for a thread without checkpoints.
    fn namespaces<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Vec<String>, SaverError>>;

    /// Copies everything of thread `from` to the new thread `to` (the server's
    /// `POST /threads/{id}/copy`): every namespace's checkpoints, with the same ids, parents,
    /// values and metadata, and their pending writes. The copy is a thread of its own: writing
    /// to one thread afterwards changes nothing of the other.
    ///
    /// The default reads each namespace's [`history`](Self::history) and stores it again with
    /// [`put_many`](Self::put_many) and [`put_writes`](Self::put_writes): not atomic (a failure
    /// part way leaves part of the copy), and it needs each delta to append onto the blob its
    /// checkpoint's parent holds, as a run writes them. The savers of this crate copy in one
    /// step: under one lock ([`MemorySaver`](super::MemorySaver)), one transaction of the SQLite
    /// writer, one PostgreSQL transaction of `INSERT … SELECT`s.
    ///
    /// # Errors
    /// [`SaverError::is_invalid`], naming the thread at fault, when `to` already has
    /// checkpoints, `from` has none, or they are the same thread; else as the saver's writes.
    fn copy_thread<'a>(&'a self, from: &'a str, to: &'a str) -> BoxFuture<'a, Result<(), SaverError>> {
        Box::pin(super::copy::copy_thread(self, from, to))
    }

    /// Applies `policy` to the thread (see [`Retention`]): removes its oldest checkpoints in
    /// every namespace, with their pending writes and the blobs no kept checkpoint needs, or
    /// deletes it whole past its TTL. Every kept checkpoint loads as before; a later
    /// [`get`](Self::get) of a removed one fails with [`SaverError::is_pruned`]. Atomic: all of
    /// it or nothing. A dry run (`policy.dry_run`) counts and removes nothing.
    ///
    /// The default refuses with [`SaverError::is_invalid`]; the savers of this crate implement
    /// it, each in one transaction (or under one lock).
    fn prune<'a>(&'a self, thread_id: &'a str, policy: &'a Retention) -> BoxFuture<'a, Result<Pruned, SaverError>> {
        let _ = policy;
        Box::pin(std::future::ready(Err(SaverError::invalid(
            thread_id,
            "this saver cannot prune checkpoints",
        ))))
    }

    /// [`prune`](Self::prune) of every thread, one after another (each atomic on its own);
    /// returns what was removed in all.
    fn prune_all<'a>(&'a self, policy: &'a Retention) -> BoxFuture<'a, Result<Pruned, SaverError>> {
        Box::pin(async move {
            let mut total = Pruned::default();
            for thread in self.threads().await? {
                total += self.prune(&thread, policy).await?;
            }
            Ok(total)
        })
    }
}
