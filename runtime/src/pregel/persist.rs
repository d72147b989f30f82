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

use super::body::{BodyRef, SavedSend, SeenEntry};
use super::run::Loop;
use super::writer::Writer;
use crate::checkpoint::{checkpoint_id_after, Blob, ChannelRef, CheckpointRecord, PendingWrite, Source};
use crate::error::Error;
use crate::graph::compile::GraphInner;
use crate::graph::RunInfo;
use crate::graph::{Command, Goto};
use crate::state::{AppendMark, State};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

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
    /// Whether `goto` holds what the task's routers returned. A task's writes saved as it ended
    /// are saved before its routers ran: a resume runs them. Absent (saved by an older weir, or
    /// after routing) means routed.
    #[serde(default = "routed", skip_serializing_if = "is_routed")]
    pub(crate) routed: bool,
}

fn routed() -> bool {
    true
}

// serde's `skip_serializing_if` passes a reference.
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_routed(routed: &bool) -> bool {
    *routed
}

/// What the pending writes of one task say.
#[derive(Debug, Default, Clone)]
pub(crate) struct TaskRecord {
    pub(crate) writes: Option<Vec<u8>>,
    pub(crate) error: Option<String>,
    pub(crate) question: Option<serde_json::Value>,
    pub(crate) answers: Vec<serde_json::Value>,
}

/// One task's pending writes: its id, and `(channel, bytes)` rows.
pub(crate) type TaskRows = (String, Vec<(&'static str, Vec<u8>)>);

/// A run's link to its checkpointer.
pub(crate) struct Persist {
    /// The checkpointer, thread and namespace, shared with the run's tasks' contexts.
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
    pub(crate) pending: BTreeMap<String, TaskRecord>,
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
}

/// The id of a task of node `node`: `pull:<node>` for a node its edges triggered, `push:<index>`
/// for the `Send` at that index of the step's `Send`s.
pub(crate) fn task_id(node: &str, push_index: Option<usize>) -> String {
    match push_index {
        None => format!("pull:{node}"),
        Some(i) => format!("push:{i:010}"),
    }
}

/// A checkpointer's failure on `thread`, kept as the error's source.
pub(crate) fn checkpointer_error(thread: &str, e: crate::checkpoint::SaverError) -> Error {
    Error::checkpointer(thread, e.is_conflict(), Box::new(e))
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
        // Greater than the head this record will follow, as checkpointers require.
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

    /// The saved form of a task's command; `routed` says whether its routers' destinations are
    /// in it.
    pub(crate) fn save_task(&self, command: &Command<S>, routed: bool) -> Result<Vec<u8>, Error> {
        let thread = self.persist.as_ref().map_or("-", |p| &*p.info.thread);
        save_command(&self.g, thread, command, routed)
    }

    /// Saves the pending writes of one task against the current checkpoint.
    pub(crate) async fn put_task_writes(&self, task_id: &str, writes: Vec<(&str, Vec<u8>)>) -> Result<(), Error> {
        let p = self.persist.as_ref().expect("a checkpointed run");
        let Some(current) = &p.current else { return Ok(()) };
        let rows = pending_rows(task_id, writes);
        let info = &p.info;
        info.checkpointer
            .put_writes(&info.thread, &info.ns, current, task_id, rows)
            .await
            .map_err(|e| checkpointer_error(&info.thread, e))
    }
}

/// A task's pending writes as a checkpointer stores them: `(channel, bytes)` rows in order.
pub(crate) fn pending_rows(task_id: &str, writes: Vec<(&str, Vec<u8>)>) -> Vec<PendingWrite> {
    writes
        .into_iter()
        .enumerate()
        .map(|(i, (channel, bytes))| PendingWrite {
            task_id: task_id.to_owned(),
            task_path: task_id.to_owned(),
            idx: i as i64,
            channel: channel.to_owned(),
            bytes,
        })
        .collect()
}

/// The saved form of a task's command, on `thread` (for errors); `routed` says whether its
/// routers' destinations are in it.
pub(crate) fn save_command<S: State>(
    g: &GraphInner<S>,
    thread: &str,
    command: &Command<S>,
    routed: bool,
) -> Result<Vec<u8>, Error> {
    let mut goto = Vec::new();
    for to in &command.goto {
        goto.push(match to {
            Goto::Node(id) => SavedGoto::Node(g.node_name(id.0)),
            Goto::End => SavedGoto::End,
            Goto::Named(n) => SavedGoto::Node(n.clone()),
            Goto::Send(p) => {
                let node = g.node_name(p.node.0);
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
        routed,
    })
    .map_err(|e| Error::checkpoint(thread, e.to_string()))
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
