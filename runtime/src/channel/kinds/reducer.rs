//! The reducer channel (`channels/binop.py`): writes folded into the value, and the count of the
//! times the value changed other than by appending ([`Folded`]), which lets a checkpoint store a
//! list that only grew as its new items.

use crate::channel::{Channel, UpdateError};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::panic::AssertUnwindSafe;

/// One write to a reducer channel: a value folded in by the reducer, or an overwrite that
/// replaces the value and makes the step ignore the writes after it (LangGraph's `Overwrite`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ReducerWrite<U, T> {
    /// Folded into the value by the reducer.
    Reduce(U),
    /// Replaces the value, bypassing the reducer.
    Overwrite(T),
}

/// What one write did to a list, as a reducer made with [`BinaryOperatorAggregate::reporting`]
/// tells it: whether the items already there were left as they were.
///
/// `add_messages` appends most of the time but may also replace a message by id or remove some:
/// it says which, so that a checkpoint stores only the messages appended since the last one
/// when that is all that happened, and the whole list when it was not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Folded {
    /// Items were added at the end, and every item already there was left untouched (in place,
    /// unchanged): the value is its old self followed by new items.
    Appended,
    /// An item already there was changed, moved or removed, or the reducer cannot tell.
    Rewrote,
}

/// A channel's reducer: one that says nothing of what it did, or one that reports [`Folded`].
enum Reduce<T, U> {
    Plain(fn(&mut T, U)),
    Reporting(fn(&mut T, U) -> Folded),
}

impl<T, U> Clone for Reduce<T, U> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, U> Copy for Reduce<T, U> {}

/// Folds writes into the value with a reducer `fn(&mut T, U)`, starting from `T::default()`.
///
/// Always available. Within one step an [`ReducerWrite::Overwrite`] replaces the value and the
/// step's later writes are ignored; a second overwrite in the same step is an error.
///
/// The channel counts its [`rewrites`](Self::rewrites): the overwrites, resets and folds that did
/// not only append. A reducer made with [`new`](Self::new) says nothing of what it did, so each of
/// its folds counts; one made with [`reporting`](Self::reporting) says ([`Folded`]).
pub struct BinaryOperatorAggregate<T, U = T> {
    reducer: Reduce<T, U>,
    rewrites: u64,
}

impl<T, U> BinaryOperatorAggregate<T, U> {
    /// A channel folding with `reducer`.
    pub const fn new(reducer: fn(&mut T, U)) -> Self {
        Self {
            reducer: Reduce::Plain(reducer),
            rewrites: 0,
        }
    }

    /// A channel folding with `reducer`, which tells whether each write only appended: while
    /// writes only append, a checkpoint of a list field stores just the items appended since the
    /// last one.
    ///
    /// # Examples
    ///
    /// ```
    /// use weir_runtime::channel::{BinaryOperatorAggregate, Channel, Folded, ReducerWrite};
    /// fn push_or_clear(list: &mut Vec<u32>, x: Option<u32>) -> Folded {
    ///     match x {
    ///         Some(x) => {
    ///             list.push(x);
    ///             Folded::Appended
    ///         }
    ///         None => {
    ///             list.clear();
    ///             Folded::Rewrote
    ///         }
    ///     }
    /// }
    /// let mut channel = BinaryOperatorAggregate::reporting(push_or_clear);
    /// let mut list = Vec::new();
    /// channel.update(&mut list, [ReducerWrite::Reduce(Some(1)), ReducerWrite::Reduce(Some(2))]).unwrap();
    /// assert_eq!(channel.rewrites(), 0);
    /// channel.update(&mut list, [ReducerWrite::Reduce(None)]).unwrap();
    /// assert_eq!(channel.rewrites(), 1);
    /// ```
    pub const fn reporting(reducer: fn(&mut T, U) -> Folded) -> Self {
        Self {
            reducer: Reduce::Reporting(reducer),
            rewrites: 0,
        }
    }

    /// How many times the value changed other than by appending since the channel was created
    /// or restored: overwrites, resets, and folds that were not reported as [`Folded::Appended`].
    /// While it stays the same, a list only grew, so a checkpoint may store just its new items.
    pub const fn rewrites(&self) -> u64 {
        self.rewrites
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
                    self.rewrites += 1;
                    *value = v;
                }
                ReducerWrite::Reduce(u) if !overwritten => {
                    // A reducer is user code: its panic fails the run, naming the field, instead
                    // of unwinding through the loop.
                    let reducer = self.reducer;
                    let folded = std::panic::catch_unwind(AssertUnwindSafe(|| match reducer {
                        Reduce::Plain(f) => {
                            f(value, u);
                            Folded::Rewrote
                        }
                        Reduce::Reporting(f) => f(value, u),
                    }))
                    .map_err(|p| UpdateError::ReducerPanicked {
                        message: p
                            .downcast_ref::<&str>()
                            .map(|s| (*s).to_owned())
                            .or_else(|| p.downcast_ref::<String>().cloned())
                            .unwrap_or_else(|| "a non-string panic".to_owned()),
                    })?;
                    if folded == Folded::Rewrote {
                        self.rewrites += 1;
                    }
                }
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
        Self {
            reducer: self.reducer,
            rewrites: 0,
        }
    }
    fn reset(&mut self, value: &mut T) {
        self.rewrites += 1;
        *value = T::default();
    }
}
