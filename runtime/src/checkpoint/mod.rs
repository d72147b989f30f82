//! Checkpoint storage: the records a run saves after every superstep, and the savers that keep them.
//!
//! # The model
//!
//! A *thread* (`thread_id`) is one conversation or job; inside it, each graph level has a
//! *namespace* (`ns`, `""` for the root graph, a path for a subgraph). A `(thread, ns)` pair holds
//! a tree of [`CheckpointRecord`]s linked by `parent_id`, and a *head*: the latest checkpoint,
//! the one a new run continues from. Checkpoint ids come from [`new_checkpoint_id`] and compare
//! as strings in creation order, so "newest first" is "greatest id first".
//!
//! A saver stores opaque bytes and never decodes a channel value. A record carries:
//! - [`ChannelRef`]s, one per channel that has a version: the version, and where its value is
//!   stored (the id of the checkpoint that holds the value's last blob), or `None` when the
//!   channel holds no value ("missing", distinct from a stored null);
//! - new [`Blob`]s, stored under this record's id: either a whole value or a *delta*, the items
//!   appended to the value stored under an earlier checkpoint (`delta_of`);
//! - `body`: the rest of the runtime's state (versions seen per node, pending sends, …), opaque.
//!
//! Storage grows with what changed, never with what stayed: a channel left unchanged by a step
//! is a `ChannelRef` pointing at the blob of an earlier checkpoint, and an append channel stores
//! only the items of the step. [`Checkpointer::get`] hands back, per channel, the chain that
//! rebuilds its value: the whole value first, then each delta in the order it was appended.
//! Because a delta names the blob it extends, two branches forked from one checkpoint share the
//! history before the fork and never mix the deltas made after it.
//!
//! Pending writes ([`PendingWrite`]) are the writes of tasks that finished in a step whose
//! checkpoint was not yet taken (a sibling failed or the run was interrupted); a resume re-applies
//! them instead of running those tasks again.
//!
//! # Concurrency
//!
//! [`Checkpointer::put`] takes the head the caller last saw. When another writer moved the head
//! meanwhile, the put fails with a conflict ([`SaverError::is_conflict`]) and stores nothing: two
//! processes running one thread never interleave their checkpoints.
//!
//! # Savers
//!
//! - [`MemorySaver`]: in this process only, for tests and short-lived programs.
//! - `SqliteSaver` (feature `sqlite`, on by default): one file, shared by the processes of one
//!   machine.
//! - `PostgresSaver` (feature `postgres`): for several machines sharing threads.

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

mod check;
mod copy;
mod error;
mod memory;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;
#[cfg(feature = "sqlite")]
mod sqlite;
mod time;

pub use error::SaverError;
pub use memory::MemorySaver;
#[cfg(feature = "postgres")]
pub use postgres::{PostgresOptions, PostgresSaver};
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteOptions, SqliteSaver, Synchronous};
pub use time::Timestamp;

/// A new checkpoint id: 32 lower-case hex digits that compare, as strings, in creation order.
///
/// The first 16 digits are the microseconds since the Unix epoch, kept strictly increasing within
/// the process (`max(last + 1, now)`); the last 16 are random, so ids made at the same microsecond
/// by two processes differ. Ids of different processes are ordered by their clocks.
///
/// # Examples
///
/// ```
/// use weir_runtime::checkpoint::new_checkpoint_id;
///
/// let a = new_checkpoint_id();
/// let b = new_checkpoint_id();
/// assert_eq!(a.len(), 32);
/// assert!(a < b);
/// ```
pub fn new_checkpoint_id() -> String {
    new_checkpoint_id_after(None)
}

/// A new checkpoint id, as [`new_checkpoint_id`], that is also greater than `after` (the head a
/// put will follow): a head written by another process, whose clock may run ahead of this one's,
/// is still followed by a greater id, as every saver requires (see [`Checkpointer::put`]).
///
/// # Examples
///
/// ```
/// use weir_runtime::checkpoint::new_checkpoint_id_after;
///
/// let far = "ffff000000000000ffffffffffffffff";
/// assert!(new_checkpoint_id_after(Some(far)).as_str() > far);
/// ```
pub fn new_checkpoint_id_after(after: Option<&str>) -> String {
    checkpoint_id_after(after).0.to_string()
}

/// [`new_checkpoint_id_after`] as the runtime keeps it: one allocation, shared by the record, the
/// head and the channels that point at the checkpoint's blobs; with the reading of the clock it
/// was made at, which is also the checkpoint's creation time.
pub(crate) fn checkpoint_id_after(after: Option<&str>) -> (Arc<str>, Timestamp) {
    let now = Timestamp::now();
    let mut id = [0u8; 32];
    write_id(&mut id, next_micros(now.unix_micros(), 0));
    // Most heads were made by this process just before, and the id is already greater. Only
    // when it is not are the head's microseconds read (another id, say a test's, counts as none).
    if let Some(after) = after.filter(|after| after.as_bytes() >= &id[..]) {
        let floor = Some(after)
            .filter(|after| after.len() == 32)
            .and_then(|after| u64::from_str_radix(after.get(..16)?, 16).ok())
            .unwrap_or(0);
        if floor > 0 {
            write_id(&mut id, next_micros(0, floor));
        }
    }
    (Arc::from(std::str::from_utf8(&id).expect("hex digits")), now)
}

/// The microseconds of the next id: `now`, unless that is not past the last id this process made
/// or past `floor`.
fn next_micros(now: u64, floor: u64) -> u64 {
    static LAST: AtomicU64 = AtomicU64::new(0);
    let mut last = LAST.load(Ordering::Relaxed);
    loop {
        let next = now.max(last + 1).max(floor.saturating_add(1));
        match LAST.compare_exchange_weak(last, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(seen) => last = seen,
        }
    }
}

/// Writes the id of `micros`: their 16 hex digits, then 16 drawn from them and a random seed
/// drawn once per process, so ids of two processes never collide and no id costs a system call.
fn write_id(id: &mut [u8; 32], micros: u64) {
    static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let seed = *SEED.get_or_init(|| {
        getrandom::u64().unwrap_or_else(|_| {
            // No OS randomness: std's randomly keyed hasher is still distinct per process.
            use std::hash::{BuildHasher, Hasher};
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u64(std::process::id().into());
            h.finish()
        })
    });
    write_hex(&mut id[..16], micros);
    write_hex(&mut id[16..], splitmix64(seed ^ micros));
}

/// Writes `x` as 16 lower-case hex digits into `out`, a byte (two digits) at a time.
fn write_hex(out: &mut [u8], x: u64) {
    /// The two digits of every byte.
    const PAIRS: [[u8; 2]; 256] = {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut pairs = [[0; 2]; 256];
        let mut b = 0;
        while b < 256 {
            pairs[b] = [DIGITS[b >> 4], DIGITS[b & 0xf]];
            b += 1;
        }
        pairs
    };
    for (pair, byte) in out.chunks_exact_mut(2).zip(x.to_be_bytes()) {
        pair.copy_from_slice(&PAIRS[usize::from(byte)]);
    }
}

/// A 64-bit mix (splitmix64's finalizer): distinct inputs give distinct outputs.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointRecord {
    /// The thread.
    pub thread_id: Arc<str>,
    /// The namespace: `""` for the root graph.
    pub ns: Arc<str>,
    /// This checkpoint's id, from [`new_checkpoint_id`].
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

pub(crate) use made::MadeByRun;

/// The proof behind the savers' fast paths, in a module of its own so that it cannot be named
/// outside this crate: a saver of another crate neither calls nor overrides the methods that
/// take it ([`Checkpointer::put_made`], [`Checkpointer::try_put_in_place`]), and gets their
/// defaults.
mod made {
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loaded {
    /// The record, with `blobs` empty.
    pub record: CheckpointRecord,
    /// For each channel of `record.channels` with a blob, in that order: the chain that rebuilds
    /// its value, oldest first — a whole value, then the deltas appended onto it.
    pub values: Vec<(String, Vec<Vec<u8>>)>,
    /// The pending writes against this checkpoint, ordered by `(task_path, task_id, idx)`.
    pub pending_writes: Vec<PendingWrite>,
}

/// What a saver holds for one thread, all namespaces together (see [`Checkpointer::usage`]).
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

    /// Deletes everything of the thread: every namespace's checkpoints, blobs, writes and head.
    fn delete_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<(), SaverError>>;

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
    /// step: under one lock ([`MemorySaver`]), one transaction of the SQLite writer, one
    /// PostgreSQL transaction of `INSERT … SELECT`s.
    ///
    /// # Errors
    /// [`SaverError::is_invalid`], naming the thread at fault, when `to` already has
    /// checkpoints, `from` has none, or they are the same thread; else as the saver's writes.
    fn copy_thread<'a>(&'a self, from: &'a str, to: &'a str) -> BoxFuture<'a, Result<(), SaverError>> {
        Box::pin(copy::copy_thread(self, from, to))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_follows_a_head_whose_clock_runs_ahead_and_ignores_a_head_of_another_format() {
        let now = Timestamp::now();
        let ahead = format!("{:016x}{}", now.unix_micros() + 60_000_000, "f".repeat(16));
        let (id, made) = checkpoint_id_after(Some(&ahead));
        assert!(*id > *ahead, "{id} after {ahead}");
        assert_eq!(
            u64::from_str_radix(&id[..16], 16),
            u64::from_str_radix(&ahead[..16], 16).map(|m| m + 1)
        );
        assert!(made >= now, "the clock's reading, not the head's");
        let (next, _) = checkpoint_id_after(Some(&id));
        assert!(next > id);
        let (other, _) = checkpoint_id_after(Some("zzz"));
        assert!(u64::from_str_radix(&other[..16], 16).is_ok_and(|m| m > 0));
    }

    #[test]
    fn checkpoint_ids_increase_within_a_process() {
        let ids: Vec<String> = (0..1000).map(|_| new_checkpoint_id()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert!(ids
            .iter()
            .all(|id| id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())));
    }
}
