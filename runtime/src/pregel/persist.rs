//! A run's checkpoint component ([`Checkpointing`], [`Persist`]): what it keeps between
//! checkpoints to write the loop's state as a [`CheckpointRecord`] after a step (`record.rs`),
//! read it back (`restore.rs`), and the saved forms of the pending writes of a step's tasks.
//!
//! A record holds a reference to each channel's value blob. A field that did not change points at
//! the blob of an earlier checkpoint; a list field that only grew (its reducer reported nothing but
//! appends since its last blob, [`Folded`](crate::channel::Folded)) stores the new items as
//! a delta onto its previous blob, and its whole value again once the deltas since the last whole
//! value outweigh it (or the chain reaches [`MAX_CHAIN`] links). Rewriting the whole value only
//! after as many bytes were appended keeps the cost of the rewrites proportional to what was
//! appended: a run that appends `n` bytes stores at most about `3n`, however long the list gets.
//! A rewrite every fixed number of steps would not: its cost grows with the list, and the total
//! with the square of the run's length.

use super::body::SeenEntry;
use super::run::Loop;
use super::writer::Writer;
use crate::checkpoint::{CheckpointRecord, PendingWrite, Source, TaskWrites};
use crate::error::Error;
use crate::graph::compile::GraphInner;
use crate::graph::task_key::{idempotency_key, task_id};
use crate::graph::RunInfo;
use crate::graph::{Command, Goto};
use crate::state::{AppendMark, State};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The most deltas a list field chains before a checkpoint stores its whole value again,
/// whatever their size: it bounds the blobs read to load the field.
pub(crate) const MAX_CHAIN: usize = 4096;

/// Where a list field's stored chain stands: how far the field had grown, the size of the
/// whole value the chain starts from, and the deltas stored onto it since.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Chain {
    pub(crate) mark: AppendMark,
    pub(crate) base_bytes: usize,
    pub(crate) delta_bytes: usize,
    pub(crate) links: usize,
}

impl Chain {
    pub(super) fn whole(mark: AppendMark, bytes: usize) -> Self {
        Self {
            mark,
            base_bytes: bytes,
            delta_bytes: 0,
            links: 0,
        }
    }

    /// Whether a delta of `bytes` more may extend the chain, rather than a whole value.
    pub(super) fn takes(&self, bytes: usize) -> bool {
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
    /// A task call's saved result, for a call of an entrypoint's task (`crate::func`).
    pub(crate) call: Option<Vec<u8>>,
}

/// One task's pending writes: its id, and `(channel, bytes)` rows.
pub(crate) type TaskRows = (String, Vec<(&'static str, Vec<u8>)>);

/// A run's checkpointing, decided once as the run is made: a run of a graph without a
/// checkpointer is `Off` and every checkpoint phase skips it; a run with one is `On`, and what
/// needs the checkpointer is a method of [`Persist`], reached by one `match` per phase.
pub(crate) enum Checkpointing {
    /// The graph has no checkpointer.
    Off,
    /// The run's link to its checkpointer (boxed: a run without one carries a pointer, not it).
    On(Box<Persist>),
}

impl Checkpointing {
    /// The checkpointer's side of the run, when there is one.
    pub(crate) fn on(&self) -> Option<&Persist> {
        match self {
            Self::Off => None,
            Self::On(p) => Some(p),
        }
    }

    /// The checkpointer's side of the run, mutable, when there is one.
    pub(crate) fn on_mut(&mut self) -> Option<&mut Persist> {
        match self {
            Self::Off => None,
            Self::On(p) => Some(p),
        }
    }

    /// Whether the run has a checkpointer.
    pub(crate) fn is_on(&self) -> bool {
        matches!(self, Self::On(_))
    }

    /// The run's thread, for errors ("-" when the run has no checkpointer).
    pub(crate) fn thread(&self) -> &str {
        self.on().map_or("-", |p| &p.info.thread)
    }
}

/// A run's link to its checkpointer: the checkpoint component of a checkpointed run.
pub(crate) struct Persist {
    /// The checkpointer, thread and namespace, shared with the run's tasks' contexts.
    pub(crate) info: Arc<RunInfo>,
    /// The latest checkpoint of the thread as far as this run knows (what `put` expects).
    pub(crate) head: Option<Arc<str>>,
    /// The checkpoint the loop's state is at: the parent of the next one.
    pub(crate) current: Option<Arc<str>>,
    /// Per field: the checkpoint holding its value blob, the version saved, how far an
    /// list field saved as deltas had grown and how many deltas its chain has.
    pub(crate) blobs: Vec<Option<Arc<str>>>,
    pub(crate) saved_versions: Vec<u64>,
    pub(crate) chains: Vec<Option<Chain>>,
    /// Pending writes of the current checkpoint, by task id.
    pub(crate) pending: BTreeMap<String, TaskRecord>,
    /// The null task's pending writes on the current checkpoint, in the order saved: each a
    /// command's update and goto in a task's saved form, not applied yet.
    pub(crate) null: Vec<Vec<u8>>,
    /// Channel versions at the last resume.
    pub(crate) interrupt_seen: Vec<u64>,
    /// The checkpoint put under way in the background (async durability).
    pub(crate) writer: Option<Writer>,
    /// Pending writes of a step that did not complete, to save against the current checkpoint.
    pub(crate) rows: Vec<TaskRows>,
    /// Pending writes of a step that completed (see `Loop::keep_completed`), to store with its
    /// checkpoint.
    pub(crate) step_writes: Vec<TaskWrites>,
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
    /// Whether this run wrote the current checkpoint (it is not the one the run loaded): what
    /// a rollback to the checkpoint the run started from deletes, with its pending writes.
    pub(crate) fn wrote_current(&self) -> bool {
        let loaded = self.record.as_ref().map(|r| &*r.id);
        self.current.is_some() && self.current.as_deref() != loaded
    }

    pub(crate) fn new(info: RunInfo, n_fields: usize, n_channels: usize) -> Self {
        Self {
            info: Arc::new(info),
            head: None,
            current: None,
            blobs: vec![None; n_fields],
            saved_versions: vec![0; n_fields],
            chains: vec![None; n_fields],
            pending: BTreeMap::new(),
            null: Vec::new(),
            interrupt_seen: vec![0; n_channels],
            writer: None,
            rows: Vec::new(),
            step_writes: Vec::new(),
            dirty: false,
            record: None,
            last_source: Source::Input,
            body_bytes: 0,
            seen_entries: Vec::new(),
        }
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

    /// The key of the task of the current step whose id is `id` (see [`task_id`]; an error
    /// handler's is `<task id>:error_handler`): LangGraph's task id, UUID-shaped, which the
    /// stream's task and checkpoint events and the state's tasks show. In a checkpointed run it
    /// is the task's [idempotency key](crate::Context::idempotency_key): the same for its
    /// retries and for the run that resumes it, different for another task, step, namespace,
    /// thread or base checkpoint. Without a checkpointer it is the same hash over the thread
    /// (if any) and no base checkpoint.
    pub(crate) fn task_key(&self, id: &str) -> String {
        match self.persist.on() {
            Some(p) => idempotency_key(&p.info.thread, &p.info.ns, p.current.as_deref(), self.step(), id),
            None => {
                let thread = self.sink.as_ref().and_then(|s| s.thread()).unwrap_or("");
                idempotency_key(thread, "", None, self.step(), id)
            }
        }
    }

    /// The saved form of a task's command; `routed` says whether its routers' destinations are
    /// in it.
    pub(crate) fn save_task(&self, command: &Command<S>, routed: bool) -> Result<Vec<u8>, Error> {
        save_command(&self.g, self.persist.thread(), command, routed)
    }
}

impl Persist {
    /// Saves the pending writes of one task against the current checkpoint.
    pub(crate) async fn put_task_writes(&self, task_id: &str, writes: Vec<(&str, Vec<u8>)>) -> Result<(), Error> {
        let Some(current) = &self.current else { return Ok(()) };
        let rows = pending_rows(task_id, writes);
        let info = &self.info;
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
