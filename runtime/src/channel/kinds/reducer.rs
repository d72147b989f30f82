//! The reducer channel (`channels/binop.py`): writes folded into the value.

use crate::channel::{Channel, UpdateError};
use serde::{Deserialize, Serialize};
use std::fmt;

/// One write to a reducer channel: a value folded in by the reducer, or an overwrite that
/// replaces the value and makes the step ignore the writes after it (LangGraph's `Overwrite`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ReducerWrite<U, T> {
    /// Folded into the value by the reducer.
    Reduce(U),
    /// Replaces the value, bypassing the reducer.
    Overwrite(T),
}

/// Folds writes into the value with a reducer `fn(&mut T, U)`, starting from `T::default()`.
///
/// Always available. Within one step an [`ReducerWrite::Overwrite`] replaces the value and the
/// step's later writes are ignored; a second overwrite in the same step is an error.
pub struct BinaryOperatorAggregate<T, U = T> {
    reducer: fn(&mut T, U),
    overwrites: u64,
}

impl<T, U> BinaryOperatorAggregate<T, U> {
    /// A channel folding with `reducer`.
    pub const fn new(reducer: fn(&mut T, U)) -> Self {
        Self { reducer, overwrites: 0 }
    }

    /// How many overwrites the channel has taken since it was created or restored: while it stays
    /// the same, an append-only value only grew, so a checkpoint may store just the new items.
    pub const fn overwrites(&self) -> u64 {
        self.overwrites
    }
}

impl<T, U> Clone for BinaryOperatorAggregate<T, U> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, U> Copy for BinaryOperatorAggregate<T, U> {}

impl<T, U> fmt::Debug for BinaryOperatorAggregate<T, U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BinaryOperatorAggregate").finish_non_exhaustive()
    }
}

impl<T, U> Channel<T> for BinaryOperatorAggregate<T, U>
where
    T: Default + Send + Sync + 'static,
    U: Send + 'static,
{
    type Write = ReducerWrite<U, T>;
    type Meta = ();

    fn update<I: IntoIterator<Item = Self::Write>>(&mut self, value: &mut T, writes: I) -> Result<bool, UpdateError> {
        let mut changed = false;
        let mut overwritten = false;
        for w in writes {
            changed = true;
            match w {
                ReducerWrite::Overwrite(v) => {
                    if overwritten {
                        return Err(UpdateError::TwoOverwrites);
                    }
                    overwritten = true;
                    self.overwrites += 1;
                    *value = v;
                }
                ReducerWrite::Reduce(u) if !overwritten => (self.reducer)(value, u),
                ReducerWrite::Reduce(_) => {}
            }
        }
        Ok(changed)
    }
    fn is_available(&self, _: &T) -> bool {
        true
    }
    fn checkpoint(&self, _: &T) -> Option<()> {
        Some(())
    }
    fn from_checkpoint(&self, _: Option<()>) -> Self {
        Self::new(self.reducer)
    }
    fn reset(&mut self, value: &mut T) {
        self.overwrites += 1;
        *value = T::default();
    }
}
