//! Channels: the unit of state.
//!
//! A channel stores one field of the state, merges the writes of one superstep, says whether it
//! can be read and checkpoints itself. The contract every kind honours (LangGraph 1.2.9,
//! `channels/base.py`):
//!
//! - [`Channel::update`] is called once per step boundary, with all of that step's writes in task
//!   order; it returns whether the channel changed. A `false` return does not bump the channel's
//!   version and so triggers nothing: this is what makes the loop converge.
//! - A channel that was not written in a step still gets `update` of an empty list when the step
//!   is bumped. Most kinds return `false`; ephemeral, any-value and per-step topic channels clear
//!   themselves and return `true`.
//! - Reading a channel never written is an [`EmptyChannel`] error, distinct from a stored `None`;
//!   the checkpoint of an empty channel is missing (`None`), not null.
//! - [`Channel::consume`] runs after a task triggered by the channel ran (a join barrier resets),
//!   [`Channel::finish`] when a run is about to end (deferred nodes wake up on it).
//!
//! In weir the *value* of a channel lives in a field of the user's state struct, so that nodes read
//! the state without a copy; a channel type holds the rest (whether it was written, the reducer,
//! barrier bookkeeping) and is handed the value slot by `&mut`. [`ChannelCell`] pairs the two for
//! use on their own.

mod cell;
mod error;
mod kinds;

pub use cell::{ChannelCell, Checkpoint};
pub use error::{EmptyChannel, UpdateError};
pub use kinds::{
    AnyValue, BinaryOperatorAggregate, EphemeralValue, Folded, LastValue, LastValueAfterFinish, NamedBarrierValue,
    NamedBarrierValueAfterFinish, ReducerWrite, Topic, UntrackedValue,
};

use serde::{de::DeserializeOwned, Serialize};
use std::fmt;

/// The contract of a channel over a value slot of type `T`.
///
/// Implementations are small state machines: the value itself is passed in by the caller
/// (normally a field of the state struct), so that copying a channel ([`Clone`]) is cheap.
pub trait Channel<T>: Clone + fmt::Debug + Send + Sync + 'static {
    /// What one task writes to the channel.
    type Write: Send + 'static;
    /// What a checkpoint keeps beside the value (flags, barrier sets); `()` for most kinds.
    type Meta: Serialize + DeserializeOwned + Clone + fmt::Debug + Send + Sync + 'static;

    /// Applies all of one step's writes, in task order. Returns whether the channel changed.
    ///
    /// # Errors
    /// When the writes break the kind's rule (two writes to a last value, two overwrites, a name
    /// a barrier does not wait for).
    fn update<I>(&mut self, value: &mut T, writes: I) -> Result<bool, UpdateError>
    where
        I: IntoIterator<Item = Self::Write>;

    /// Whether a read would succeed.
    fn is_available(&self, value: &T) -> bool;

    /// Called after a task triggered by this channel ran. Returns whether the channel changed.
    fn consume(&mut self, value: &mut T) -> bool {
        let _ = value;
        false
    }

    /// Called when the run is about to finish. Returns whether the channel changed.
    fn finish(&mut self, value: &mut T) -> bool {
        let _ = value;
        false
    }

    /// The checkpoint of the channel's bookkeeping, or `None` when the channel is missing from a
    /// checkpoint (never written, or a kind that is never saved). The value is saved beside it.
    fn checkpoint(&self, value: &T) -> Option<Self::Meta>;

    /// A channel of the same specification (reducer, barrier names) restored from a checkpoint.
    /// `None` gives an empty channel; the caller restores the value slot.
    // The specification lives in the channel, so restoring takes `&self` (LangGraph's name kept).
    #[allow(clippy::wrong_self_convention)]
    fn from_checkpoint(&self, meta: Option<Self::Meta>) -> Self;

    /// Empties the channel: the state it has before any write.
    fn reset(&mut self, value: &mut T);

    /// Whether `update` of an empty list can change the channel (it clears itself a step after it
    /// was written). For the other kinds the loop skips that call; `false` by default.
    fn clears_when_idle(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests;
