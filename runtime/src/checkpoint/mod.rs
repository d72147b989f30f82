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
//! Retention ([`Retention`], [`Checkpointer::prune`]) removes a thread's oldest checkpoints and
//! keeps the blobs the others still need; a read of a pruned checkpoint is an error saying so.
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

mod check;
mod checkpointer;
mod copy;
mod error;
mod id;
mod made;
mod memory;
#[cfg(feature = "postgres")]
mod postgres;
mod record;
mod retention;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;
#[cfg(feature = "sqlite")]
mod sqlite;
mod sweeper;
mod time;

pub use checkpointer::Checkpointer;
pub use error::SaverError;
pub(crate) use id::checkpoint_id_after;
pub use id::{new_checkpoint_id, new_checkpoint_id_after};
pub(crate) use made::{MadeByRun, TaskWrites};
pub use memory::MemorySaver;
#[cfg(feature = "postgres")]
pub use postgres::{PostgresOptions, PostgresSaver};
pub use record::{Blob, ChannelRef, CheckpointRecord, Held, Loaded, PendingWrite, Source, Usage};
pub use retention::{Pruned, Retention};
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteOptions, SqliteSaver, Synchronous, WriteAnswer, WriteJob};
pub use sweeper::Sweeper;
pub use time::Timestamp;
