//! Checkpoints of a run: the loop's state written as a [`CheckpointRecord`] after a step, read
//! back to resume, and the pending writes of the tasks of a step that did not complete.
//!
//! A record holds a reference to each channel's value blob. A field that did not change points at
//! the blob of an earlier checkpoint; an append-only field that only grew stores the new items as
//! a delta onto its previous blob, and its whole value again once the deltas since the last whole
//! value outweigh it (or the chain reaches [`MAX_CHAIN`] links). Rewriting the whole value only
//! after as many bytes were appended keeps the cost of the rewrites proportional to what was
//! appended: a run that appends `n` bytes stores at most about `3n`, however long the list gets.
//! A rewrite every fixed number of steps would not: its cost grows with the list, and the total
//! with the square of the run's length.

use super::compile::GraphInner;
use super::config::RunInfo;
use super::run::{Control, Loop};
use crate::checkpoint::{
    checkpoint_id_after, Blob, ChannelRef, CheckpointRecord, Checkpointer, Loaded, MadeByRun, PendingWrite, Source,
};
use crate::error::Error;
use crate::graph::{Command, Goto, NodeId};
use crate::state::{AppendMark, State};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::{Semaphore, SemaphorePermit};

/// The most deltas an append-only field chains before a checkpoint stores its whole value again,
/// whatever their size: it bounds the blobs read to load the field.
pub(crate) const MAX_CHAIN: usize = 4096;

/// Where an append-only field's stored chain stands: how far the field had grown, the size of the
/// whole value the chain starts from, and the deltas stored onto it since.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Chain {
    pub(crate) mark: AppendMark,
    pub(crate) base_bytes: usize,
    pub(crate) delta_bytes: usize,
    pub(crate) links: usize,
}

impl Chain {
    fn whole(mark: AppendMark, bytes: usize) -> Self {
        Self {
            mark,
            base_bytes: bytes,
            delta_bytes: 0,
            links: 0,
        }
    }

    /// Whether a delta of `bytes` more may extend the chain, rather than a whole value.
    fn takes(&self, bytes: usize) -> bool {
        self.links < MAX_CHAIN && self.delta_bytes + bytes <= self.base_bytes
    }
}

/// The channel of a task's successful writes.
pub(crate) const WRITES: &str = "__writes__";
/// The channel of a task's error.
pub(crate) const ERROR: &str = "__error__";
/// The channel of a task's interrupt (its question).
pub(crate) const INTERRUPT: &str = "__interrupt__";
/// The channel of the answers given to a task's interrupts.
pub(crate) const RESUME: &str = "__resume__";

/// The loop's state besides the channel values, as read back from [`CheckpointRecord::body`]
/// ([`BodyRef`] writes it).
#[derive(Debug, Deserialize)]
pub(crate) struct Body {
    /// Per node: the version of each trigger it last saw.
    seen: BTreeMap<String, BTreeMap<String, u64>>,
    /// Internal channels' bookkeeping (branch flags, barrier names), as JSON.
    controls: BTreeMap<String, serde_json::Value>,
    /// `Send`s for the next step.
    sends: Vec<SavedSend>,
    /// The run's input while the start node has not run yet.
    input: Option<serde_json::Value>,
    /// Channel versions at the last resume: static interrupts do not fire again for them.
    interrupt_seen: BTreeMap<String, u64>,
}

#[derive(Debug, Serialize, Deserialize)]
struct SavedSend {
    node: String,
    payload: serde_json::Value,
}

/// A [`Body`] as the loop writes it: the same JSON, written by hand from names quoted once per
/// graph, with no map built per step.
struct BodyRef<'a, S: State> {
    g: &'a GraphInner<S>,
    seen: &'a [Vec<u64>],
    /// The entries of `seen` as the last body wrote them, per node.
    seen_entries: &'a mut Vec<SeenEntry>,
    /// The internal channels, saved as they are written (channel `n_fields + i` is the `i`th).
    controls: &'a [Control],
    sends: Vec<SavedSend>,
    input: Option<serde_json::Value>,
    interrupt_seen: &'a [u64],
}

/// A node's entry of a body's `seen` object (`"node":{…}`) as last written, and the versions it
/// was written from. A step changes the entries of the nodes that ran; the others are copied.
#[derive(Debug, Default)]
pub(crate) struct SeenEntry {
    versions: Vec<u64>,
    text: Vec<u8>,
}

impl<S: State> BodyRef<'_, S> {
    fn write(&mut self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        let g = self.g;
        let mut number = itoa::Buffer::new();
        out.extend_from_slice(b"{\"seen\":{");
        let mut nodes = 0;
        self.seen_entries.resize_with(self.seen.len(), SeenEntry::default);
        for (n, seen) in self.seen.iter().enumerate().filter(|(_, s)| s.iter().any(|v| *v > 0)) {
            comma(out, &mut nodes);
            let entry = &mut self.seen_entries[n];
            // Element by element: a node has a few triggers, fewer than a call to `memcmp` costs.
            if !entry.versions.iter().eq(seen) {
                entry.versions.clone_from(seen);
                let text = &mut entry.text;
                text.clear();
                text.extend_from_slice(g.quoted_node(n).as_bytes());
                text.extend_from_slice(b":{");
                let mut triggers = 0;
                for (t, v) in g.nodes[n].triggers.iter().zip(seen).filter(|(_, v)| **v > 0) {
                    comma(text, &mut triggers);
                    text.extend_from_slice(g.channel_key(*t as usize).as_bytes());
                    text.extend_from_slice(number.format(*v).as_bytes());
                }
                text.push(b'}');
            }
            out.extend_from_slice(&entry.text);
        }
        out.extend_from_slice(b"},\"controls\":{");
        let mut controls = 0;
        for (c, control) in self.controls.iter().enumerate() {
            let Some(saved) = control.saved() else { continue };
            comma(out, &mut controls);
            out.extend_from_slice(g.channel_key(g.n_fields() + c).as_bytes());
            saved.write(g, out);
        }
        // Most steps have no `Send`s and no input to keep: one piece of text for all three.
        if self.sends.is_empty() && self.input.is_none() {
            out.extend_from_slice(b"},\"sends\":[],\"input\":null,\"interrupt_seen\":{");
        } else {
            out.extend_from_slice(b"},\"sends\":");
            serde_json::to_writer(&mut *out, &self.sends)?;
            out.extend_from_slice(b",\"input\":");
            serde_json::to_writer(&mut *out, &self.input)?;
            out.extend_from_slice(b",\"interrupt_seen\":{");
        }
        let mut seen = 0;
        for (c, v) in self.interrupt_seen.iter().enumerate().filter(|(_, v)| **v > 0) {
            comma(out, &mut seen);
            out.extend_from_slice(g.channel_key(c).as_bytes());
            out.extend_from_slice(number.format(*v).as_bytes());
        }
        out.extend_from_slice(b"}}");
        Ok(())
    }
}

/// A comma before every entry of a JSON object but the first.
#[inline]
fn comma(out: &mut Vec<u8>, entries: &mut usize) {
    if *entries > 0 {
        out.push(b',');
    }
    *entries += 1;
}

/// A destination, saved by name.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum SavedGoto {
    Node(String),
    End,
    Send { node: String, payload: serde_json::Value },
}

/// A task's successful writes, as saved in its pending writes.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct SavedTask<U> {
    pub(crate) update: U,
    pub(crate) goto: Vec<SavedGoto>,
}

/// What the pending writes of one task say.
#[derive(Debug, Default, Clone)]
pub(crate) struct Pending {
    pub(crate) writes: Option<Vec<u8>>,
    pub(crate) error: Option<String>,
    pub(crate) question: Option<serde_json::Value>,
    pub(crate) answers: Vec<serde_json::Value>,
}

/// One task's pending writes: its id, and `(channel, bytes)` rows.
pub(crate) type TaskRows = (String, Vec<(&'static str, Vec<u8>)>);

/// A run's link to its saver.
pub(crate) struct Persist {
    /// The saver, thread and namespace, shared with the run's tasks' contexts.
    pub(crate) info: Arc<RunInfo>,
    /// The latest checkpoint of the thread as far as this run knows (what `put` expects).
    pub(crate) head: Option<Arc<str>>,
    /// The checkpoint the loop's state is at: the parent of the next one.
    pub(crate) current: Option<Arc<str>>,
    /// Per field: the checkpoint holding its value blob, the version saved, how far an
    /// append-only field had grown and how many deltas its chain has.
    pub(crate) blobs: Vec<Option<Arc<str>>>,
    pub(crate) saved_versions: Vec<u64>,
    pub(crate) chains: Vec<Option<Chain>>,
    /// Pending writes of the current checkpoint, by task id.
    pub(crate) pending: BTreeMap<String, Pending>,
    /// Channel versions at the last resume.
    pub(crate) interrupt_seen: Vec<u64>,
    /// The checkpoint put under way in the background (async durability).
    pub(crate) writer: Option<Writer>,
    /// Pending writes of a step that did not complete, to save against the current checkpoint.
    pub(crate) rows: Vec<TaskRows>,
    /// Whether the loop's state changed since the last checkpoint (for exit durability).
    pub(crate) dirty: bool,
    /// The checkpoint loaded, without its values.
    pub(crate) record: Option<CheckpointRecord>,
    /// The source of the last checkpoint written.
    pub(crate) last_source: Source,
    /// The length of the last checkpoint's body.
    pub(crate) body_bytes: usize,
    /// The last body's entries of `seen`, per node.
    pub(crate) seen_entries: Vec<SeenEntry>,
}

impl Persist {
    pub(crate) fn new(info: RunInfo, n_fields: usize, n_channels: usize) -> Self {
        Self {
            info: Arc::new(info),
            head: None,
            current: None,
            blobs: vec![None; n_fields],
            saved_versions: vec![0; n_fields],
            chains: vec![None; n_fields],
            pending: BTreeMap::new(),
            interrupt_seen: vec![0; n_channels],
            writer: None,
            rows: Vec::new(),
            dirty: false,
            record: None,
            last_source: Source::Input,
            body_bytes: 0,
            seen_entries: Vec::new(),
        }
    }

    /// Waits until every checkpoint handed to the background writer is stored.
    ///
    /// # Errors
    /// The first put that failed.
    pub(crate) async fn flush(&mut self) -> Result<(), Error> {
        let Some(w) = &self.writer else { return Ok(()) };
        let (done, acked) = tokio::sync::oneshot::channel();
        // A writer that stopped has recorded why.
        if w.jobs.send(Job::Flush(done)).await.is_ok() {
            let _ = acked.await;
        }
        let failed = w.failed.lock().unwrap_or_else(|p| p.into_inner()).take();
        match failed {
            Some(e) => {
                self.writer = None;
                Err(e)
            }
            None => Ok(()),
        }
    }

    /// Hands a checkpoint to the background writer (async durability), starting it if need be:
    /// puts land in order while the run goes on.
    pub(crate) async fn put_later(
        &mut self,
        record: CheckpointRecord,
        expected: Option<Arc<str>>,
    ) -> Result<(), Error> {
        let writer = self
            .writer
            .get_or_insert_with(|| Writer::start(self.info.saver.clone(), self.info.thread.clone()));
        // Waits while the queue holds its share of bytes; the writer gives them back as it stores
        // (and closes the semaphore when it stops, which sends this put to `flush` for the error).
        let bytes = queued_bytes(&record);
        let taken = writer
            .room
            .acquire_many(bytes)
            .await
            .map(SemaphorePermit::forget)
            .is_ok();
        if !taken {
            return self.flush().await;
        }
        if writer
            .jobs
            .send(Job::Put(Box::new(record), expected, bytes))
            .await
            .is_err()
        {
            return self.flush().await;
        }
        Ok(())
    }
}

/// What a queued checkpoint counts against [`QUEUE_BYTES`]: its body and blobs, and a kilobyte
/// for the rest of the record; at most the whole budget.
fn queued_bytes(record: &CheckpointRecord) -> u32 {
    let blobs: usize = record.blobs.iter().map(|b| b.bytes.len()).sum();
    (record.body.len() + blobs + 1024).min(QUEUE_BYTES as usize) as u32
}

/// What the background writer is asked.
pub(crate) enum Job {
    /// A checkpoint, the head it follows, and its bytes' share of the queue.
    Put(Box<CheckpointRecord>, Option<Arc<str>>, u32),
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// A run's background checkpoint writer: one task, fed in order through a channel bounded in
/// checkpoints ([`QUEUE`]) and in bytes ([`QUEUE_BYTES`]), so a slow saver slows the run instead
/// of queueing without bound. The checkpoints queued while a put was under way go to the saver
/// together ([`Checkpointer::put_many`]): one transaction for many steps when the saver is slower
/// than the loop.
pub(crate) struct Writer {
    jobs: tokio::sync::mpsc::Sender<Job>,
    /// Permits for the bytes of queued checkpoints: a put takes its share before it is queued and
    /// gives it back once stored.
    room: Arc<Semaphore>,
    failed: Arc<std::sync::Mutex<Option<Error>>>,
}

/// How many jobs the writer's queue holds, and takes at once. A batch amortizes what a put costs
/// besides its rows (a transaction, a commit that may wait for the disk, the saver's hand-over to
/// a blocking thread): with 64, `weir_bench checkpoint_sqlite 1000` took 9.4 ms at
/// `synchronous=FULL` and 4.3 ms at OFF; with 1,024, 4.8 and 3.4 ms.
const QUEUE: usize = 1024;

/// How many bytes of checkpoints (bodies and blobs, see [`queued_bytes`]) the writer's queue
/// holds at most: a run whose steps each write a large value waits for the saver after a few of
/// them, however many [`QUEUE`] allows.
const QUEUE_BYTES: u32 = 32 << 20;

impl Writer {
    fn start(saver: Arc<dyn Checkpointer>, thread: Arc<str>) -> Self {
        let (jobs, mut rx) = tokio::sync::mpsc::channel::<Job>(QUEUE);
        let failed = Arc::new(std::sync::Mutex::new(None));
        let failure = failed.clone();
        let room = Arc::new(Semaphore::new(QUEUE_BYTES as usize));
        let gives_back = Closing(room.clone());
        tokio::spawn(async move {
            // Grown as batches come, not made for the largest: most runs are short.
            let mut queued = Vec::new();
            let mut batch = Batch::default();
            while rx.recv_many(&mut queued, QUEUE).await > 0 {
                for job in queued.drain(..) {
                    match job {
                        Job::Put(record, head, bytes) => batch.push(*record, head, bytes),
                        Job::Flush(done) => {
                            if !batch.store(&*saver, &gives_back.0, &thread, &failure).await {
                                return;
                            }
                            let _ = done.send(());
                        }
                    }
                }
                if !batch.store(&*saver, &gives_back.0, &thread, &failure).await {
                    return;
                }
            }
        });
        Self { jobs, room, failed }
    }
}

/// The writer's byte semaphore, closed when the writer stops (a failed put, or a panic), so that
/// no put waits for bytes that will not come back.
struct Closing(Arc<Semaphore>);

impl Drop for Closing {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// The checkpoints the writer stores together: the head the first follows, and their bytes'
/// share of the queue, given back once they are stored.
#[derive(Default)]
struct Batch {
    records: Vec<CheckpointRecord>,
    expected: Option<Arc<str>>,
    bytes: usize,
}

impl Batch {
    fn push(&mut self, record: CheckpointRecord, head: Option<Arc<str>>, bytes: u32) {
        if self.records.is_empty() {
            self.expected = head;
        }
        self.records.push(record);
        self.bytes += bytes as usize;
    }

    /// Puts the batch, if any, and gives its bytes back to `room`; on failure records why and
    /// returns false: later checkpoints would not chain onto these.
    async fn store(
        &mut self,
        saver: &dyn Checkpointer,
        room: &Semaphore,
        thread: &str,
        failure: &std::sync::Mutex<Option<Error>>,
    ) -> bool {
        if self.records.is_empty() {
            return true;
        }
        let records = std::mem::take(&mut self.records);
        // Every record of the batch is one this run made.
        match saver
            .put_made(records, self.expected.take().as_deref(), MadeByRun::new())
            .await
        {
            Ok(()) => {
                room.add_permits(std::mem::take(&mut self.bytes));
                true
            }
            Err(e) => {
                *failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(saver_error(thread, e));
                false
            }
        }
    }
}

/// The id of a task of node `node`: `pull:<node>` for a node its edges triggered, `push:<index>`
/// for the `Send` at that index of the step's `Send`s.
pub(crate) fn task_id(node: &str, push_index: Option<usize>) -> String {
    match push_index {
        None => format!("pull:{node}"),
        Some(i) => format!("push:{i:010}"),
    }
}

/// A saver's failure on `thread`, kept as the error's source.
pub(crate) fn saver_error(thread: &str, e: crate::checkpoint::SaverError) -> Error {
    Error::saver(thread, e.is_conflict(), Box::new(e))
}

impl<S: State> Loop<S> {
    /// The id of a task: stable across re-executions from the same checkpoint.
    pub(crate) fn task_id(&self, node: u32, push_index: Option<usize>) -> String {
        task_id(&self.g.names[node as usize], push_index)
    }

    /// The record of the loop's state as it is now (after `self.step - 1` was applied).
    pub(crate) fn record(&mut self, source: Source, writes: Arc<[Arc<str>]>) -> Result<CheckpointRecord, Error> {
        let g = self.g.clone();
        let n_fields = g.n_fields();
        let p = self.persist.as_ref().expect("a checkpointed run");
        // Greater than the head this record will follow, as savers require.
        let (id, created_at) = checkpoint_id_after(p.head.as_deref());
        let thread = p.info.thread.clone();
        // A field is saved when it has a value its last checkpoint did not store.
        let changed = |f: usize, saved: &[u64]| self.versions[f] != 0 && self.versions[f] != saved[f];
        // Both lists at their length: the record keeps them as long as it is stored.
        let mut channels = Vec::with_capacity(self.versions.iter().filter(|v| **v > 0).count());
        let mut blobs = Vec::with_capacity((0..n_fields).filter(|&f| changed(f, &p.saved_versions)).count());
        for f in 0..n_fields {
            let version = self.versions[f];
            if version == 0 {
                continue;
            }
            let p = self.persist.as_mut().expect("a checkpointed run");
            if changed(f, &p.saved_versions) {
                p.saved_versions[f] = version;
                let mark = self.state.append_mark(&self.channels, f);
                let name = &g.channel_names[f];
                let fail = |e: crate::state::CodecError| Error::checkpoint(&thread, e.to_string());
                // An append-only field that only grew: its new items, onto its previous blob.
                let mut delta = None;
                if let (Some(chain), Some(new), Some(prev)) = (p.chains[f], mark, &p.blobs[f]) {
                    if chain.mark.overwrites == new.overwrites && new.len >= chain.mark.len {
                        let bytes = self.state.save_items(f, chain.mark.len).map_err(fail)?;
                        if chain.takes(bytes.len()) {
                            p.chains[f] = Some(Chain {
                                mark: new,
                                delta_bytes: chain.delta_bytes + bytes.len(),
                                links: chain.links + 1,
                                ..chain
                            });
                            delta = Some(Blob {
                                channel: name.clone(),
                                delta_of: Some(prev.clone()),
                                bytes,
                            });
                        }
                    }
                }
                let blob = match delta {
                    Some(blob) => Some(blob),
                    None => {
                        let whole = self.state.save_field(&self.channels, f).map_err(fail)?;
                        p.chains[f] = mark.map(|m| Chain::whole(m, whole.as_ref().map_or(0, Vec::len)));
                        whole.map(|bytes| Blob {
                            channel: name.clone(),
                            delta_of: None,
                            bytes,
                        })
                    }
                };
                p.blobs[f] = blob.as_ref().map(|_| id.clone());
                blobs.extend(blob);
            }
            let p = self.persist.as_ref().expect("a checkpointed run");
            channels.push(ChannelRef {
                channel: g.channel_names[f].clone(),
                version,
                blob: p.blobs[f].clone(),
            });
        }
        for cid in n_fields..n_fields + self.controls.len() {
            if self.versions[cid] > 0 {
                channels.push(ChannelRef {
                    channel: g.channel_names[cid].clone(),
                    version: self.versions[cid],
                    blob: None,
                });
            }
        }
        let mut sends = Vec::new();
        for s in &self.sends {
            let node = g.node_name(s.node.0);
            let payload = s
                .job
                .encode()
                .ok_or_else(|| Error::unsaved_send(&node))?
                .map_err(|e| Error::checkpoint(&thread, format!("the `Send` to `{node}`: {e}")))?;
            sends.push(SavedSend { node, payload });
        }
        let input = match &self.input {
            Some(input) => Some(serde_json::to_value(input).map_err(|e| Error::checkpoint(&thread, e.to_string()))?),
            None => None,
        };
        let p = self.persist.as_mut().expect("a checkpointed run");
        // Room for a body as long as the last one: one allocation, no growing.
        let mut bytes = Vec::with_capacity(p.body_bytes);
        let mut body = BodyRef {
            g: &g,
            seen: &self.seen,
            seen_entries: &mut p.seen_entries,
            controls: &self.controls,
            sends,
            input,
            interrupt_seen: &p.interrupt_seen,
        };
        body.write(&mut bytes)
            .map_err(|e| Error::checkpoint(&thread, e.to_string()))?;
        let p = self.persist.as_mut().expect("a checkpointed run");
        p.body_bytes = bytes.len();
        Ok(CheckpointRecord {
            thread_id: thread,
            ns: p.info.ns.clone(),
            id,
            parent_id: p.current.clone(),
            step: self.step - 1,
            source,
            writes,
            metadata: BTreeMap::new(),
            created_at,
            channels,
            body: bytes,
            blobs,
        })
    }

    /// Restores the loop's state from a loaded checkpoint; keeps its pending writes.
    pub(crate) fn restore(&mut self, loaded: Loaded) -> Result<(), Error> {
        let g = self.g.clone();
        let n_fields = g.n_fields();
        let thread = self.persist.as_ref().expect("a checkpointed run").info.thread.clone();
        let bad = |m: String| Error::checkpoint(&thread, m);
        let record = loaded.record;
        let values: BTreeMap<String, Vec<Vec<u8>>> = loaded.values.into_iter().collect();
        let state = Arc::make_mut(&mut self.state);
        let p = self.persist.as_mut().expect("a checkpointed run");
        for r in &record.channels {
            let Some(&c) = g.channel_ids.get(&*r.channel) else {
                if !r.channel.starts_with("branch:to:") && !r.channel.starts_with("join:") {
                    return Err(bad(format!(
                        "checkpoint `{}` has field `{}`, which this state does not have: it was written by another state type",
                        record.id, r.channel
                    )));
                }
                continue;
            };
            let c = c as usize;
            self.versions[c] = r.version;
            if c < n_fields {
                let chain = values.get(&*r.channel).map(Vec::as_slice).unwrap_or_default();
                state
                    .load_field(&mut self.channels, c, chain)
                    .map_err(|e| bad(format!("checkpoint `{}`: {e}", record.id)))?;
                p.blobs[c] = r.blob.clone();
                p.saved_versions[c] = r.version;
                p.chains[c] = state.append_mark(&self.channels, c).map(|mark| Chain {
                    mark,
                    base_bytes: chain.first().map_or(0, Vec::len),
                    delta_bytes: chain.iter().skip(1).map(Vec::len).sum(),
                    links: chain.len().saturating_sub(1),
                });
            }
        }
        let body: Body = serde_json::from_slice(&record.body)
            .map_err(|e| bad(format!("checkpoint `{}` is not a weir checkpoint: {e}", record.id)))?;
        for (name, saved) in &body.controls {
            if let Some(&c) = g.channel_ids.get(name) {
                let Some(c) = (c as usize).checked_sub(n_fields) else {
                    return Err(bad(format!(
                        "checkpoint `{}` keeps field `{name}` among its internal channels",
                        record.id
                    )));
                };
                self.controls[c] = self.controls[c]
                    .restore(saved, &g.node_ids)
                    .map_err(|e| bad(format!("channel `{name}`: {e}")))?;
            }
        }
        for (node, seen) in &body.seen {
            let Some(&n) = g.node_ids.get(node) else { continue };
            for (k, t) in g.nodes[n as usize].triggers.iter().enumerate() {
                if let Some(v) = seen.get(&*g.channel_names[*t as usize]) {
                    self.seen[n as usize][k] = *v;
                }
            }
        }
        for s in body.sends {
            let n = *g
                .node_ids
                .get(&s.node)
                .ok_or_else(|| bad(format!("a saved `Send` to unknown node `{}`", s.node)))?;
            let decode = g.decoders[n as usize]
                .as_ref()
                .ok_or_else(|| bad(format!("a saved `Send` to `{}`, which does not take `Send`s", s.node)))?;
            self.sends
                .push(decode(s.payload).map_err(|e| bad(format!("the `Send` to `{}`: {e}", s.node)))?);
        }
        if let Some(input) = body.input {
            self.input = Some(serde_json::from_value(input).map_err(|e| bad(format!("the saved input: {e}")))?);
        }
        for (name, v) in body.interrupt_seen {
            if let Some(&c) = g.channel_ids.get(&name) {
                p.interrupt_seen[c as usize] = v;
            }
        }
        p.pending.clear();
        for w in loaded.pending_writes {
            let undecodable = |what: &str, e: serde_json::Error| {
                bad(format!(
                    "checkpoint `{}`: the saved {what} of task `{}` does not decode: {e}",
                    record.id, w.task_id
                ))
            };
            let entry = p.pending.entry(w.task_id.clone()).or_default();
            match &*w.channel {
                WRITES => entry.writes = Some(w.bytes),
                ERROR => entry.error = Some(String::from_utf8_lossy(&w.bytes).into_owned()),
                INTERRUPT => {
                    entry.question = Some(serde_json::from_slice(&w.bytes).map_err(|e| undecodable("question", e))?);
                }
                RESUME => entry.answers = serde_json::from_slice(&w.bytes).map_err(|e| undecodable("answers", e))?,
                _ => {}
            }
        }
        let step = record.step.checked_add(1).ok_or_else(|| {
            bad(format!(
                "checkpoint `{}` has step {}, out of range",
                record.id, record.step
            ))
        })?;
        p.current = Some(record.id.clone());
        self.step = step;
        self.stop = step.saturating_add(self.limit).saturating_add(1);
        p.record = Some(record);
        // Every node is a candidate on the first tick after a load.
        self.updated = (0..self.versions.len() as u32).collect();
        self.recount();
        Ok(())
    }

    /// The saved form of a task's command.
    pub(crate) fn save_task(&self, command: &Command<S>) -> Result<Vec<u8>, Error> {
        let thread = self.persist.as_ref().map_or("-", |p| &*p.info.thread);
        let mut goto = Vec::new();
        for g in &command.goto {
            goto.push(match g {
                Goto::Node(id) => SavedGoto::Node(self.g.node_name(id.0)),
                Goto::End => SavedGoto::End,
                Goto::Named(n) => SavedGoto::Node(n.clone()),
                Goto::Send(p) => {
                    let node = self.g.node_name(p.node.0);
                    let payload = p
                        .job
                        .encode()
                        .ok_or_else(|| Error::unsaved_send(&node))?
                        .map_err(|e| Error::checkpoint(thread, e))?;
                    SavedGoto::Send { node, payload }
                }
            });
        }
        serde_json::to_vec(&SavedTask {
            update: &command.update,
            goto,
        })
        .map_err(|e| Error::checkpoint(thread, e.to_string()))
    }

    /// A task's command, from its saved writes.
    pub(crate) fn load_task(&self, bytes: &[u8]) -> Result<Command<S>, Error> {
        let g = &self.g;
        let thread = self.persist.as_ref().map_or("-", |p| &*p.info.thread);
        let bad = |m: String| Error::checkpoint(thread, m);
        let saved: SavedTask<S::Update> =
            serde_json::from_slice(bytes).map_err(|e| bad(format!("a task's saved writes: {e}")))?;
        let mut goto = Vec::new();
        for s in saved.goto {
            goto.push(match s {
                SavedGoto::Node(n) => Goto::Node(NodeId::from_index(
                    *g.node_ids.get(&n).ok_or_else(|| bad(format!("unknown node `{n}`")))? as usize,
                )),
                SavedGoto::End => Goto::End,
                SavedGoto::Send { node, payload } => {
                    let n = *g
                        .node_ids
                        .get(&node)
                        .ok_or_else(|| bad(format!("unknown node `{node}`")))?;
                    let decode = g.decoders[n as usize]
                        .as_ref()
                        .ok_or_else(|| bad(format!("`{node}` takes no `Send`s")))?;
                    Goto::Send(decode(payload).map_err(|e| bad(format!("the `Send` to `{node}`: {e}")))?)
                }
            });
        }
        Ok(Command {
            update: saved.update,
            goto,
            parent: None,
        })
    }

    /// Saves the pending writes of one task against the current checkpoint.
    pub(crate) async fn put_task_writes(&self, task_id: &str, writes: Vec<(&str, Vec<u8>)>) -> Result<(), Error> {
        let p = self.persist.as_ref().expect("a checkpointed run");
        let Some(current) = &p.current else { return Ok(()) };
        let rows = writes
            .into_iter()
            .enumerate()
            .map(|(i, (channel, bytes))| PendingWrite {
                task_id: task_id.to_owned(),
                task_path: task_id.to_owned(),
                idx: i as i64,
                channel: channel.to_owned(),
                bytes,
            })
            .collect();
        let info = &p.info;
        info.saver
            .put_writes(&info.thread, &info.ns, current, task_id, rows)
            .await
            .map_err(|e| saver_error(&info.thread, e))
    }
}

/// What a checkpoint keeps of an internal channel ([`Control::saved`]).
pub(crate) enum SavedControl {
    /// A branch's or deferred node's flag.
    Flag(bool),
    /// The nodes a join has seen, and a deferred join's flag.
    Seen(Vec<u32>, Option<bool>),
}

impl SavedControl {
    /// Writes it as JSON, nodes by name, as [`Control::restore`] reads it: `true`, `["a","b"]`
    /// or `[["a","b"],true]`.
    fn write<S: State>(&self, g: &GraphInner<S>, out: &mut Vec<u8>) {
        let flag = |out: &mut Vec<u8>, on: bool| out.extend_from_slice(if on { b"true" } else { b"false" });
        match self {
            Self::Flag(on) => flag(out, *on),
            Self::Seen(seen, finished) => {
                if finished.is_some() {
                    out.push(b'[');
                }
                out.push(b'[');
                let mut entries = 0;
                for &n in seen {
                    comma(out, &mut entries);
                    out.extend_from_slice(g.quoted_node(n as usize).as_bytes());
                }
                out.push(b']');
                if let Some(finished) = finished {
                    out.push(b',');
                    flag(out, *finished);
                    out.push(b']');
                }
            }
        }
    }
}

impl Control {
    /// The bookkeeping of an internal channel, if it holds any.
    pub(crate) fn saved(&self) -> Option<SavedControl> {
        use crate::channel::Channel;
        match self {
            Self::Branch(c) => Channel::<()>::checkpoint(c, &()).map(|()| SavedControl::Flag(true)),
            Self::Deferred(c) => Channel::<()>::checkpoint(c, &()).map(SavedControl::Flag),
            Self::Join(c) => c.checkpoint(&()).map(|seen| SavedControl::Seen(seen, None)),
            Self::DeferredJoin(c) => c
                .checkpoint(&())
                .map(|(seen, finished)| SavedControl::Seen(seen, Some(finished))),
        }
    }

    pub(crate) fn restore(
        &self,
        saved: &serde_json::Value,
        node_ids: &std::collections::HashMap<String, u32>,
    ) -> Result<Self, String> {
        use crate::channel::Channel;
        let ids = |v: &serde_json::Value| -> Result<Vec<u32>, String> {
            let names: Vec<String> = serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
            Ok(names.iter().filter_map(|n| node_ids.get(n).copied()).collect())
        };
        Ok(match self {
            Self::Branch(c) => Self::Branch(Channel::<()>::from_checkpoint(c, Some(()))),
            Self::Deferred(c) => Self::Deferred(Channel::<()>::from_checkpoint(
                c,
                Some(saved.as_bool().unwrap_or(false)),
            )),
            Self::Join(c) => Self::Join(c.from_checkpoint(Some(ids(saved)?))),
            Self::DeferredJoin(c) => {
                let seen = ids(&saved[0])?;
                Self::DeferredJoin(c.from_checkpoint(Some((seen, saved[1].as_bool().unwrap_or(false)))))
            }
        })
    }
}

/// The node names of a step's tasks, for a checkpoint's metadata, a run of one node named once.
/// A step of one node (every step of a sequence or a loop) shares the graph's list for it.
pub(crate) fn writers<S: State>(g: &GraphInner<S>, nodes: impl Iterator<Item = u32> + Clone) -> Arc<[Arc<str>]> {
    let mut rest = nodes.clone();
    match rest.next() {
        None => Arc::default(),
        Some(n) if rest.all(|m| m == n) => g.lone_writers[n as usize].clone(),
        Some(_) => {
            let mut out: Vec<Arc<str>> = nodes.map(|n| g.names[n as usize].clone()).collect();
            out.dedup();
            out.into()
        }
    }
}
