//! The [`State`] trait: a fixed set of typed fields, each with its channel, addressed by index.
//!
//! `#[derive(State)]` implements it; it can also be written by hand (see the tests).

use crate::channel::{Channel, UpdateError};
use std::fmt;

/// What kind of channel a field is, for display and for the graph checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChannelKind {
    /// [`LastValue`](crate::channel::LastValue): one writer per step.
    LastValue,
    /// [`AnyValue`](crate::channel::AnyValue).
    AnyValue,
    /// [`EphemeralValue`](crate::channel::EphemeralValue).
    Ephemeral,
    /// [`Topic`](crate::channel::Topic), per step or accumulating.
    Topic {
        /// Whether values accumulate across steps.
        accumulate: bool,
    },
    /// [`BinaryOperatorAggregate`](crate::channel::BinaryOperatorAggregate): a reducer.
    Reducer,
    /// [`UntrackedValue`](crate::channel::UntrackedValue).
    Untracked,
    /// [`LastValueAfterFinish`](crate::channel::LastValueAfterFinish).
    LastValueAfterFinish,
}

impl ChannelKind {
    /// Whether two writes in one step are an error for this kind.
    pub const fn takes_one_write(self) -> bool {
        matches!(self, Self::LastValue | Self::Ephemeral | Self::Untracked)
    }
}

/// Static description of one field of a state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldInfo {
    /// The field's name.
    pub name: &'static str,
    /// Its channel kind.
    pub kind: ChannelKind,
}

/// The writes one task makes to one field: none, one or several (in the order made).
#[derive(Clone, PartialEq, Eq)]
pub enum Writes<W> {
    /// No write.
    None,
    /// One write.
    One(W),
    /// Several writes, in order.
    Many(Vec<W>),
}

impl<W> Default for Writes<W> {
    fn default() -> Self {
        Self::None
    }
}

impl<W: fmt::Debug> fmt::Debug for Writes<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::None => f.write_str("None"),
            Self::One(w) => f.debug_tuple("One").field(w).finish(),
            Self::Many(ws) => f.debug_tuple("Many").field(ws).finish(),
        }
    }
}

impl<W> Writes<W> {
    /// Whether there is at least one write.
    pub fn is_some(&self) -> bool {
        !matches!(self, Self::None)
    }
    /// How many writes there are.
    pub fn len(&self) -> usize {
        match self {
            Self::None => 0,
            Self::One(_) => 1,
            Self::Many(ws) => ws.len(),
        }
    }
    /// Whether there is no write.
    pub fn is_empty(&self) -> bool {
        !self.is_some()
    }
    /// Adds a write after the existing ones.
    pub fn push(&mut self, w: W) {
        *self = match std::mem::take(self) {
            Self::None => Self::One(w),
            Self::One(a) => Self::Many(vec![a, w]),
            Self::Many(mut ws) => {
                ws.push(w);
                Self::Many(ws)
            }
        };
    }
    /// Adds `later`'s writes after these.
    pub fn extend(&mut self, later: Self) {
        for w in later {
            self.push(w);
        }
    }
    /// Takes the writes out, leaving none.
    pub fn take(&mut self) -> Self {
        std::mem::take(self)
    }
    /// The writes, in order.
    pub fn iter(&self) -> impl Iterator<Item = &W> {
        let (one, many) = match self {
            Self::None => (None, &[][..]),
            Self::One(w) => (Some(w), &[][..]),
            Self::Many(ws) => (None, &ws[..]),
        };
        one.into_iter().chain(many)
    }
}

/// Iterator over [`Writes`].
#[derive(Debug)]
pub struct WritesIter<W>(Option<W>, std::vec::IntoIter<W>);

impl<W> Iterator for WritesIter<W> {
    type Item = W;
    fn next(&mut self) -> Option<W> {
        self.0.take().or_else(|| self.1.next())
    }
}

impl<W> IntoIterator for Writes<W> {
    type Item = W;
    type IntoIter = WritesIter<W>;
    fn into_iter(self) -> WritesIter<W> {
        match self {
            Self::None => WritesIter(None, Vec::new().into_iter()),
            Self::One(w) => WritesIter(Some(w), Vec::new().into_iter()),
            Self::Many(ws) => WritesIter(None, ws.into_iter()),
        }
    }
}

/// A partial update of a state: the writes one task makes, one [`Writes`] slot per field.
pub trait Update: Default + Clone + fmt::Debug + Send + Sync + 'static {
    /// The state this updates.
    type State: State<Update = Self>;
    /// Whether the update writes the field at `index` (in [`State::FIELDS`] order).
    fn is_written(&self, index: usize) -> bool;
    /// Appends `later`'s writes after this update's, field by field (two updates of one node).
    fn merge(&mut self, later: Self);
}

/// A field could not take a step's writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The field's index in [`State::FIELDS`].
    pub field: usize,
    /// Indices (in the slice given to [`State::apply`]) of the updates whose writes were refused.
    pub writers: Vec<usize>,
    /// Why.
    pub error: UpdateError,
}

/// A graph's state: a struct whose fields are typed channels.
///
/// The loop never looks a field up by name: fields are addressed by their index in
/// [`FIELDS`](State::FIELDS), and [`apply`](State::apply) applies a whole step's updates in one
/// pass over the fields. The values live in the struct itself (nodes read it by reference), the
/// channels' bookkeeping in [`Channels`](State::Channels).
pub trait State: Clone + fmt::Debug + Send + Sync + Sized + 'static {
    /// The partial update nodes return.
    type Update: Update<State = Self>;
    /// The channels' bookkeeping, one channel per field.
    type Channels: Clone + fmt::Debug + Send + Sync + 'static;
    /// The fields, in declaration order.
    const FIELDS: &'static [FieldInfo];

    /// The empty state: every field at its default and every channel never written.
    fn empty() -> (Self, Self::Channels);

    /// The update that writes every field of `self` (the run's input given as a whole state).
    fn into_update(self) -> Self::Update;

    /// Whether the field at `index` can be read.
    fn is_available(&self, channels: &Self::Channels, index: usize) -> bool;

    /// Applies the writes of `updates` (in task order) to every field, then, when `bump` is set,
    /// gives each available field that did not change an empty update (clearing ephemeral
    /// values). Sets `changed[i]` for each field that changed. Takes the writes out of `updates`.
    ///
    /// # Errors
    /// The first field whose channel refused its writes.
    fn apply(
        &mut self,
        channels: &mut Self::Channels,
        updates: &mut [Self::Update],
        bump: bool,
        changed: &mut [bool],
    ) -> Result<(), FieldError>;

    /// [`Channel::consume`] on the field at `index`.
    fn consume(&mut self, channels: &mut Self::Channels, index: usize) -> bool;

    /// [`Channel::finish`] on every field; sets `changed[i]` for each that changed.
    fn finish(&mut self, channels: &mut Self::Channels, changed: &mut [bool]);
}

/// Applies one field's step: its writes (taken from each update by `take`), then the empty update
/// of a step bump. What [`State::apply`] does for each field; generated code calls it.
#[doc(hidden)]
pub fn apply_field<T, C, U, W>(
    index: usize,
    value: &mut T,
    channel: &mut C,
    updates: &mut [U],
    take: impl Fn(&mut U) -> Writes<W>,
    bump: bool,
) -> Result<bool, FieldError>
where
    C: Channel<T, Write = W>,
{
    let mut writers = [usize::MAX; 2];
    let mut seen = 0usize;
    let writes = updates
        .iter_mut()
        .enumerate()
        .flat_map(|(i, u)| take(u).into_iter().map(move |w| (i, w)));
    let writes = writes.map(|(i, w)| {
        if seen < 2 {
            writers[seen] = i;
        }
        seen += 1;
        w
    });
    let result = channel.update(value, writes);
    let changed = result.map_err(|error| FieldError {
        field: index,
        writers: writers
            .iter()
            .copied()
            .filter(|w| *w != usize::MAX)
            .collect(),
        error,
    })?;
    if bump && !(changed && channel.is_available(value)) && channel.is_available(value) {
        // An available channel that did not change this step gets `update([])`.
        let cleared = channel
            .update(value, std::iter::empty())
            .map_err(|error| FieldError {
                field: index,
                writers: Vec::new(),
                error,
            })?;
        return Ok(changed || cleared);
    }
    Ok(changed)
}
