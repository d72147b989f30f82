//! The in-memory saver.

use super::{check, Blob, CheckpointRecord, Checkpointer, Loaded, MadeByRun, PendingWrite, SaverError, Usage};
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

    /// The blob of `channel` stored under checkpoint `at`.
    fn blob(&self, at: &str, channel: &str) -> Option<&Blob> {
        self.checkpoint(at)?.blobs.iter().find(|b| &*b.channel == channel)
    }
}

impl Namespace {
    /// `record`, stored here, as `get` hands it back: its value chains and pending writes.
    fn loaded(&self, record: &CheckpointRecord) -> Result<Loaded, SaverError> {
        let values = check::assemble(record, |at, channel| {
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

    fn get_now(&self, thread_id: &str, ns: &str, id: Option<&str>) -> Result<Option<Loaded>, SaverError> {
        let store = self.lock();
        let Some(space) = store.get(thread_id).and_then(|t| t.get(ns)) else {
            return Ok(None);
        };
        let Some(id) = id.or(space.head()) else {
            return Ok(None);
        };
        match space.checkpoint(id) {
            Some(record) => space.loaded(record).map(Some),
            None => Ok(None),
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
            .map(|k| space.loaded(records.at(k)))
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
        async move { self.get_now(thread_id, ns, id) }.boxed()
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
            }
            Ok(usage)
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::{ChannelRef, Source, Timestamp};
    use futures::executor::block_on;

    /// Checkpoint `id` of thread `t` after `parent`, with channel `a` at `version`: its blob
    /// stored here (`bytes`), or under the earlier checkpoint `at`.
    fn record(id: &str, parent: Option<&str>, version: u64, value: Result<&str, &str>) -> CheckpointRecord {
        let (at, blobs) = match value {
            Ok(bytes) => (
                id,
                vec![Blob {
                    channel: "a".into(),
                    delta_of: None,
                    bytes: bytes.into(),
                }],
            ),
            Err(at) => (at, vec![]),
        };
        CheckpointRecord {
            thread_id: "t".into(),
            ns: "".into(),
            id: id.into(),
            parent_id: parent.map(Into::into),
            step: version as i64 - 2,
            source: Source::Loop,
            writes: Arc::default(),
            metadata: BTreeMap::new(),
            created_at: Timestamp::from_unix_micros(version),
            channels: vec![ChannelRef {
                channel: "a".into(),
                version,
                blob: Some(at.into()),
            }],
            body: b"{}".to_vec(),
            blobs,
        }
    }

    fn put_in_place(saver: &MemorySaver, record: CheckpointRecord, expected: Option<&str>) -> Result<(), SaverError> {
        match saver.try_put_in_place(record, expected, MadeByRun::new()) {
            Ok(stored) => stored,
            Err(back) => panic!("the memory saver handed {} back", back.id),
        }
    }

    /// A run's records are stored in place, as `put` stores them; what depends on the store is
    /// still checked (the head, the order of ids, the blobs a record builds on), and a refused
    /// record leaves the store as it was.
    #[test]
    fn a_record_a_run_made_is_stored_in_place_and_checked_against_the_store() {
        let saver = MemorySaver::new();
        put_in_place(&saver, record("cp-1", None, 1, Ok("1")), None).unwrap();
        let unchanged = record("cp-2", Some("cp-1"), 1, Err("cp-1"));
        put_in_place(&saver, unchanged.clone(), Some("cp-1")).unwrap();
        let loaded = block_on(saver.get("t", "", None)).unwrap().unwrap();
        assert_eq!(
            loaded.record,
            CheckpointRecord {
                blobs: vec![],
                ..unchanged
            }
        );
        assert_eq!(loaded.values, [("a".to_owned(), vec![b"1".to_vec()])]);

        let moved = put_in_place(&saver, record("cp-3", Some("cp-1"), 2, Ok("2")), Some("cp-1")).unwrap_err();
        assert!(moved.is_conflict(), "{moved}");
        let older = put_in_place(&saver, record("cp-0", Some("cp-2"), 2, Ok("2")), Some("cp-2")).unwrap_err();
        assert!(
            older.is_invalid() && older.to_string().contains("`cp-0` is not newer than `cp-2`"),
            "{older}"
        );
        let unstored = put_in_place(&saver, record("cp-3", Some("cp-2"), 1, Err("cp-2")), Some("cp-2")).unwrap_err();
        assert!(
            unstored.is_invalid() && unstored.to_string().contains("which stores no value"),
            "{unstored}"
        );
        assert_eq!(block_on(saver.head("t", "")).unwrap().as_deref(), Some("cp-2"));
        assert_eq!(block_on(saver.usage("t")).unwrap().checkpoints, 2);
    }

    /// What a run vouches for is not checked again in a release build, but a debug build (the
    /// tests') still checks it: a run that made a record that does not hold together fails there.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "a run made records that do not hold together")]
    fn a_run_made_record_that_does_not_hold_together_fails_a_debug_build() {
        let blobless = record("cp-1", None, 1, Err("cp-1"));
        let _ = put_in_place(&MemorySaver::new(), blobless, None);
    }
}
