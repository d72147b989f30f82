//! What a checkpoint is made of: the record a run saves, the channels' references and blobs, the
//! pending writes, and what a saver hands back.

use super::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// What made a checkpoint (LangGraph's `metadata.source`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// The input of a run was written (step −1, or the step after the last on a later run).
    Input,
    /// A superstep of the loop.
    Loop,
    /// A manual `update_state`.
    Update,
    /// A copy of an earlier checkpoint, the start of a new branch.
    Fork,
}

impl Source {
    /// The lower-case name, as stored: `input`, `loop`, `update` or `fork`.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Input => "input",
            Source::Loop => "loop",
            Source::Update => "update",
            Source::Fork => "fork",
        }
    }

    /// The source named `name` (as written by [`Source::as_str`]).
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "input" => Source::Input,
            "loop" => Source::Loop,
            "update" => Source::Update,
            "fork" => Source::Fork,
            _ => return None,
        })
    }
}

/// One channel of a checkpoint: its version and where its value is stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelRef {
    /// The channel's name.
    pub channel: Arc<str>,
    /// The channel's version at this checkpoint.
    pub version: u64,
    /// Id of the checkpoint under which the channel's current value blob is stored (this
    /// checkpoint, or an earlier one of the same thread and namespace when unchanged); `None` =
    /// no stored value ("missing").
    pub blob: Option<Arc<str>>,
}

/// A value stored under a checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blob {
    /// The channel the value belongs to.
    pub channel: Arc<str>,
    /// `None`: `bytes` is the whole value. `Some(id)`: `bytes` are items appended to the value
    /// stored for the same channel under checkpoint `id` (a delta).
    pub delta_of: Option<Arc<str>>,
    /// The encoded value or items; opaque to the saver.
    pub bytes: Vec<u8>,
}

/// A checkpoint as stored: what [`Checkpointer::put`] takes and [`Checkpointer::list`] returns.
///
/// Names and ids are `Arc<str>`: a run makes a record every step, and the thread, the channel
/// names and the id of the checkpoint holding a value are the same from one record to the next,
/// so they are shared instead of copied (`"t".into()` makes one from a `&str` or a `String`).
///
/// [`Checkpointer::put`]: super::Checkpointer::put
/// [`Checkpointer::list`]: super::Checkpointer::list
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointRecord {
    /// The thread.
    pub thread_id: Arc<str>,
    /// The namespace: `""` for the root graph.
    pub ns: Arc<str>,
    /// This checkpoint's id, from [`new_checkpoint_id`].
    ///
    /// [`new_checkpoint_id`]: super::new_checkpoint_id
    pub id: Arc<str>,
    /// The checkpoint this one follows, `None` for the first of a thread.
    pub parent_id: Option<Arc<str>>,
    /// The superstep: −1 for the first input, 0 for the first loop step.
    pub step: i64,
    /// What made this checkpoint.
    pub source: Source,
    /// Names of the nodes whose writes this checkpoint applied (`vec![…].into()` makes one;
    /// the runtime shares one list among the checkpoints of steps of the same lone node).
    pub writes: Arc<[Arc<str>]>,
    /// Extra user metadata.
    pub metadata: BTreeMap<String, String>,
    /// When the checkpoint was made.
    pub created_at: Timestamp,
    /// Every channel with a version, and where its value is.
    pub channels: Vec<ChannelRef>,
    /// Opaque runtime state (versions seen per node, pending sends, …).
    pub body: Vec<u8>,
    /// New blobs, stored under this record's id. Empty in records read back.
    pub blobs: Vec<Blob>,
}

/// A write of a task that finished, kept against the checkpoint the task started from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingWrite {
    /// The task that wrote.
    pub task_id: String,
    /// The task's path, which orders writes deterministically.
    pub task_path: String,
    /// The write's index within the task's writes (negative for special channels, as LangGraph).
    pub idx: i64,
    /// The channel written.
    pub channel: String,
    /// The encoded value; opaque to the saver.
    pub bytes: Vec<u8>,
}

/// A checkpoint read back by [`Checkpointer::get`], with what it takes to rebuild its channels.
///
/// [`Checkpointer::get`]: super::Checkpointer::get
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loaded {
    /// The record, with `blobs` empty.
    pub record: CheckpointRecord,
    /// For each channel of `record.channels` with a blob, in that order: the chain that rebuilds
    /// its value, oldest first — a whole value, then the deltas appended onto it.
    pub values: Vec<(String, Vec<Vec<u8>>)>,
    /// The pending writes against this checkpoint, ordered by `(task_path, task_id, idx)`.
    pub pending_writes: Vec<PendingWrite>,
    /// The channels of `values` whose chain holds only the links stored after the blob the
    /// reader said it held ([`Checkpointer::get_holding`]), oldest first: they extend the value
    /// it holds, and none means the value did not change. Empty from every other read.
    ///
    /// [`Checkpointer::get_holding`]: super::Checkpointer::get_holding
    pub continued: Vec<String>,
}

/// A channel value a reader already holds, and the blob it was last read through: the newest
/// link of its chain (see [`Checkpointer::get_holding`]).
///
/// [`Checkpointer::get_holding`]: super::Checkpointer::get_holding
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    /// The channel.
    pub channel: Arc<str>,
    /// Id of the checkpoint under which the newest blob of the value's chain is stored: the
    /// [`ChannelRef::blob`] of the checkpoint it was read from.
    pub blob: Arc<str>,
}

/// What a saver holds for one thread, all namespaces together (see [`Checkpointer::usage`]).
///
/// [`Checkpointer::usage`]: super::Checkpointer::usage
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Stored checkpoints.
    pub checkpoints: u64,
    /// Stored blobs (whole values and deltas).
    pub blobs: u64,
    /// Total length of the stored blobs' bytes.
    pub blob_bytes: u64,
    /// Stored pending writes.
    pub pending_writes: u64,
}
