//! The in-memory saver.

use super::{
    check, Blob, CheckpointRecord, Checkpointer, Held, Loaded, MadeByRun, PendingWrite, Pruned, Retention, SaverError,
    Usage,
};
use futures::future::{BoxFuture, FutureExt};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

/// A saver that keeps checkpoints in this process's memory: for tests, examples and programs
/// that need no resume after they exit. Clones share one store.
///
/// # Examples
///
/// ```
/// use weir_runtime::checkpoint::{Checkpointer, MemorySaver};
///
/// # futures::executor::block_on(async {
/// let saver = MemorySaver::new();
/// assert_eq!(saver.get("t-1", "", None).await.unwrap(), None);
/// # });
/// ```
#[derive(Clone, Debug, Default)]
pub struct MemorySaver {
    store: Arc<Mutex<BTreeMap<String, BTreeMap<String, Namespace>>>>,
}

/// One `(thread, ns)`.
#[derive(Clone, Debug, Default)]
struct Namespace {
    /// The records, each with the blobs stored under it, in id order: ids increase (every put
    /// follows the head with greater ids), so a put appends and the head is the last.
    checkpoints: Records,
    /// checkpoint id → `(task_id, idx)` → write.
    writes: HashMap<String, BTreeMap<(String, i64), PendingWrite>>,
    /// Blobs of pruned checkpoints that kept ones still need, by `(checkpoint id, channel)`.
    retained: BTreeMap<(String, String), Blob>,
    /// In the root namespace: the id the thread was pruned through, if it was.
    pruned_through: Option<String>,
}

/// Records in blocks of [`BLOCK`], every block full but the last: a put appends to the last
/// block and never moves the records stored before it (a vector that doubles copies them all
/// each time it grows; a record is some 200 bytes).
#[derive(Clone, Debug, Default)]
struct Records {
    blocks: Vec<Vec<CheckpointRecord>>,
}

/// Records per block of [`Records`].
const BLOCK: usize = 256;

impl Records {
    fn len(&self) -> usize {
        self.blocks
            .last()
            .map_or(0, |last| (self.blocks.len() - 1) * BLOCK + last.len())
    }

    /// The `k`th record, for `k < self.len()`.
    fn at(&self, k: usize) -> &CheckpointRecord {
        &self.blocks[k / BLOCK][k % BLOCK]
    }

    fn last(&self) -> Option<&CheckpointRecord> {
        self.blocks.last()?.last()
    }

    fn push(&mut self, record: CheckpointRecord) {
        match self.blocks.last_mut() {
            Some(last) if last.len() < BLOCK => last.push(record),
            _ => {
                let mut block = Vec::with_capacity(BLOCK);
                block.push(record);
                self.blocks.push(block);
            }
        }
    }

    /// How many records have ids less than `id` (records are in id order): the blocks whose
    /// last id is less, then the records of the next block that are.
    fn count_before(&self, id: &str) -> usize {
        let less = |r: &CheckpointRecord| &*r.id < id;
        let full = self.blocks.partition_point(|block| block.last().is_some_and(less));
        match self.blocks.get(full) {
            Some(block) => full * BLOCK + block.partition_point(less),
            None => self.len(),
        }
    }

    /// Drops the first `n` records (the oldest).
    fn drop_first(&mut self, n: usize) {
        let old = std::mem::take(&mut self.blocks);
        for record in old.into_iter().flatten().skip(n) {
            self.push(record);
        }
    }

    /// Drops the records whose ids are greater than `id`.
    fn truncate_after(&mut self, id: &str) {
        let mut keep = self.count_before(id);
        if keep < self.len() && &*self.at(keep).id == id {
            keep += 1;
        }
        self.blocks.truncate(keep.div_ceil(BLOCK));
        if let Some(last) = self.blocks.last_mut() {
            last.truncate(keep - (keep.div_ceil(BLOCK) - 1) * BLOCK);
        }
    }

    fn iter(&self) -> impl Iterator<Item = &CheckpointRecord> + Clone {
        self.blocks.iter().flatten()
    }
}

impl Namespace {
    fn head(&self) -> Option<&str> {
        self.checkpoints.last().map(|r| &*r.id)
    }

    fn checkpoint(&self, id: &str) -> Option<&CheckpointRecord> {
        let k = self.checkpoints.count_before(id);
        (k < self.checkpoints.len())
            .then(|| self.checkpoints.at(k))
            .filter(|r| &*r.id == id)
    }

    /// The blob of `channel` stored under checkpoint `at`, or retained from it once it was
    /// pruned.
    fn blob(&self, at: &str, channel: &str) -> Option<&Blob> {
        match self.checkpoint(at) {
            Some(record) => record.blobs.iter().find(|b| &*b.channel == channel),
            None if self.retained.is_empty() => None,
            None => self.retained.get(&(at.to_owned(), channel.to_owned())),
        }
    }
}

impl Namespace {
    /// `record`, stored here, as `get_holding` hands it back to a reader holding `held`: its
    /// value chains and pending writes.
    fn loaded(&self, record: &CheckpointRecord, held: &[Held]) -> Result<Loaded, SaverError> {
        let (values, continued) = check::assemble(record, held, |at, channel| {
            Ok(self
                .blob(at, channel)
                .map(|b| (b.delta_of.as_deref().map(str::to_owned), b.bytes.clone())))
        })?;
        let mut pending_writes: Vec<PendingWrite> = self
            .writes
            .get(&*record.id)
            .map(|w| w.values().cloned().collect())
            .unwrap_or_default();
        check::sort_writes(&mut pending_writes);
        Ok(Loaded {
            record: bare(record),
            values,
            pending_writes,
            continued,
        })
    }
}

/// A stored record as handed back: without its blobs.
fn bare(record: &CheckpointRecord) -> CheckpointRecord {
    CheckpointRecord {
        thread_id: record.thread_id.clone(),
        ns: record.ns.clone(),
        id: record.id.clone(),
        parent_id: record.parent_id.clone(),
        step: record.step,
        source: record.source,
        writes: record.writes.clone(),
        metadata: record.metadata.clone(),
        created_at: record.created_at,
        channels: record.channels.clone(),
        body: record.body.clone(),
        blobs: Vec::new(),
    }
}

impl MemorySaver {
    /// An empty saver.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, BTreeMap<String, Namespace>>> {
        // A panic while holding the lock cannot leave a half-applied put (each put checks first,
        // then only inserts), so a poisoned store is still consistent.
        self.store.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Stores `records` as successive heads: all of them or none. A lone record comes as an
    /// array, with no vector allocated for it.
    fn put_batch<R>(&self, records: R, expected_head: Option<&str>, made: Option<MadeByRun>) -> Result<(), SaverError>
    where
        R: AsRef<[CheckpointRecord]> + IntoIterator<Item = CheckpointRecord>,
    {
        let needed = check::put(records.as_ref(), expected_head, made)?;
        let Some(first) = records.as_ref().first() else {
            return Ok(());
        };
        let (thread, ns) = (&first.thread_id, &first.ns);
        let mut store = self.lock();
        let space = store.get_mut(&**thread).and_then(|t| t.get_mut(&**ns));
        let head = space.as_deref().and_then(Namespace::head);
        if head != expected_head {
            return Err(SaverError::head_moved(thread, ns, expected_head, head));
        }
        // The head is where the batch expects it, so every stored id is less than the batch's.
        for base in &needed {
            if space.as_deref().and_then(|s| s.blob(base.at, base.channel)).is_none() {
                return Err(check::missing_base(
                    &records.as_ref()[base.record],
                    base.channel,
                    base.at,
                ));
            }
        }
        drop(needed);
        let space = match space {
            Some(space) => space,
            None => store
                .entry(thread.to_string())
                .or_default()
                .entry(ns.to_string())
                .or_default(),
        };
        for record in records {
            space.checkpoints.push(record);
        }
        Ok(())
    }

    fn get_now(
        &self,
        thread_id: &str,
        ns: &str,
        id: Option<&str>,
        held: &[Held],
    ) -> Result<Option<Loaded>, SaverError> {
        let store = self.lock();
        let thread = store.get(thread_id);
        let space = thread.and_then(|t| t.get(ns));
        let record = match id {
            Some(id) => space.and_then(|s| s.checkpoint(id)),
            None => space.and_then(|s| s.checkpoints.last()),
        };
        match (space, record, id) {
            (Some(space), Some(record), _) => space.loaded(record, held).map(Some),
            (_, _, Some(id)) => prune::not_found(thread_id, ns, id, thread),
            _ => Ok(None),
        }
    }

    /// What `list` selects, newest first, each as `get` reads it: under one lock.
    fn history_now(
        &self,
        thread_id: &str,
        ns: &str,
        before: Option<&str>,
        limit: Option<usize>,
    ) -> Result<Vec<Loaded>, SaverError> {
        let store = self.lock();
        let Some(space) = store.get(thread_id).and_then(|t| t.get(ns)) else {
            return Ok(Vec::new());
        };
        let records = &space.checkpoints;
        let end = before.map_or(records.len(), |before| records.count_before(before));
        (0..end)
            .rev()
            .take(limit.unwrap_or(usize::MAX))
            .map(|k| space.loaded(records.at(k), &[]))
            .collect()
    }

    fn put_writes_now(
        &self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: &str,
        task_id: &str,
        writes: Vec<PendingWrite>,
    ) -> Result<(), SaverError> {
        check::writes(thread_id, checkpoint_id, task_id, &writes)?;
        let mut store = self.lock();
        let space = store
            .get_mut(thread_id)
            .and_then(|t| t.get_mut(ns))
            .filter(|space| space.checkpoint(checkpoint_id).is_some())
            .ok_or_else(|| check::unknown_checkpoint(thread_id, ns, checkpoint_id))?;
        let on_checkpoint = space.writes.entry(checkpoint_id.to_owned()).or_default();
        on_checkpoint.retain(|(task, _), _| task != task_id);
        for w in writes {
            on_checkpoint.insert((w.task_id.clone(), w.idx), w);
        }
        Ok(())
    }
}

impl Checkpointer for MemorySaver {
    fn put<'a>(
        &'a self,
        record: CheckpointRecord,
        expected_head: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        async move { self.put_batch([record], expected_head, None) }.boxed()
    }

    fn put_many<'a>(
        &'a self,
        records: Vec<CheckpointRecord>,
        expected_head: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        async move { self.put_batch(records, expected_head, None) }.boxed()
    }

    fn try_put_in_place(
        &self,
        record: CheckpointRecord,
        expected_head: Option<&str>,
        made: MadeByRun,
    ) -> Result<Result<(), SaverError>, CheckpointRecord> {
        Ok(self.put_batch([record], expected_head, Some(made)))
    }

    fn get<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<Loaded>, SaverError>> {
        async move { self.get_now(thread_id, ns, id, &[]) }.boxed()
    }

    fn get_holding<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        id: Option<&'a str>,
        held: &'a [Held],
    ) -> BoxFuture<'a, Result<Option<Loaded>, SaverError>> {
        async move { self.get_now(thread_id, ns, id, held) }.boxed()
    }

    fn head<'a>(&'a self, thread_id: &'a str, ns: &'a str) -> BoxFuture<'a, Result<Option<String>, SaverError>> {
        async move {
            let store = self.lock();
            Ok(store
                .get(thread_id)
                .and_then(|t| t.get(ns))
                .and_then(|space| space.head().map(str::to_owned)))
        }
        .boxed()
    }

    fn list<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        before: Option<&'a str>,
        limit: Option<usize>,
    ) -> BoxFuture<'a, Result<Vec<CheckpointRecord>, SaverError>> {
        async move {
            let store = self.lock();
            let records = match store.get(thread_id).and_then(|t| t.get(ns)) {
                None => Vec::new(),
                Some(space) => {
                    let records = &space.checkpoints;
                    let end = before.map_or(records.len(), |before| records.count_before(before));
                    (0..end)
                        .rev()
                        .take(limit.unwrap_or(usize::MAX))
                        .map(|k| bare(records.at(k)))
                        .collect()
                }
            };
            Ok(records)
        }
        .boxed()
    }

    fn history<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        before: Option<&'a str>,
        limit: Option<usize>,
    ) -> BoxFuture<'a, Result<Vec<Loaded>, SaverError>> {
        async move { self.history_now(thread_id, ns, before, limit) }.boxed()
    }

    fn put_writes<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        checkpoint_id: &'a str,
        task_id: &'a str,
        writes: Vec<PendingWrite>,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        async move { self.put_writes_now(thread_id, ns, checkpoint_id, task_id, writes) }.boxed()
    }

    fn delete_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<(), SaverError>> {
        async move {
            self.lock().remove(thread_id);
            Ok(())
        }
        .boxed()
    }

    /// Under the store's lock: each namespace's records after `checkpoint_id` and their writes.
    fn delete_after<'a>(
        &'a self,
        thread_id: &'a str,
        checkpoint_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        let Some(after) = checkpoint_id else {
            return self.delete_thread(thread_id);
        };
        let mut store = self.lock();
        if let Some(thread) = store.get_mut(thread_id) {
            for space in thread.values_mut() {
                space.checkpoints.truncate_after(after);
                space.writes.retain(|id, _| id.as_str() <= after);
            }
            thread.retain(|_, space| space.checkpoints.len() > 0);
            if thread.is_empty() {
                store.remove(thread_id);
            }
        }
        futures::future::ready(Ok(())).boxed()
    }

    fn prune<'a>(&'a self, thread_id: &'a str, policy: &'a Retention) -> BoxFuture<'a, Result<Pruned, SaverError>> {
        futures::future::ready(prune::prune(&mut self.lock(), thread_id, policy)).boxed()
    }

    fn threads(&self) -> BoxFuture<'_, Result<Vec<String>, SaverError>> {
        async move { Ok(self.lock().keys().cloned().collect()) }.boxed()
    }

    fn namespaces<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Vec<String>, SaverError>> {
        let store = self.lock();
        let spaces = store.get(thread_id).into_iter().flat_map(|t| t.iter());
        let found = spaces
            .filter(|(_, space)| space.checkpoints.len() > 0)
            .map(|(ns, _)| ns.clone());
        futures::future::ready(Ok(found.collect())).boxed()
    }

    /// Copies the thread under the store's lock: a clone of its namespaces, every record's
    /// thread renamed.
    fn copy_thread<'a>(&'a self, from: &'a str, to: &'a str) -> BoxFuture<'a, Result<(), SaverError>> {
        let mut store = self.lock();
        let stored = |t: &&BTreeMap<String, Namespace>| t.values().any(|s| s.checkpoints.len() > 0);
        let copied = if from == to {
            Err(super::copy::same_thread(from))
        } else if store.get(to).filter(stored).is_some() {
            Err(super::copy::target_taken(from, to))
        } else if let Some(mut thread) = store.get(from).filter(stored).cloned() {
            let name: Arc<str> = to.into();
            let records = thread
                .values_mut()
                .flat_map(|s| s.checkpoints.blocks.iter_mut().flatten());
            records.for_each(|r| r.thread_id = name.clone());
            store.insert(to.to_owned(), thread);
            Ok(())
        } else {
            Err(super::copy::source_missing(from))
        };
        futures::future::ready(copied).boxed()
    }

    fn usage<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Usage, SaverError>> {
        async move {
            let store = self.lock();
            let mut usage = Usage::default();
            for space in store.get(thread_id).into_iter().flat_map(|t| t.values()) {
                usage.checkpoints += space.checkpoints.len() as u64;
                let blobs = space.checkpoints.iter().flat_map(|r| &r.blobs);
                usage.blobs += blobs.clone().count() as u64;
                usage.blob_bytes += blobs.map(|b| b.bytes.len() as u64).sum::<u64>();
                usage.pending_writes += space.writes.values().map(|w| w.len() as u64).sum::<u64>();
                usage.blobs += space.retained.len() as u64;
                usage.blob_bytes += space.retained.values().map(|b| b.bytes.len() as u64).sum::<u64>();
            }
            Ok(usage)
        }
        .boxed()
    }
}

mod prune;
#[cfg(test)]
mod tests;
