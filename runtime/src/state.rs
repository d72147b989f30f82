//! The [`State`] trait: a fixed set of typed fields, each with its channel, addressed by index.
//!
//! `#[derive(State)]` implements it; it can also be written by hand (see the tests).

use crate::channel::{Channel, UpdateError};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use std::borrow::Cow;
use std::fmt;

mod codec;
pub mod migrate;
mod warm;
pub use codec::{
    append_mark, extend_items, load_append_field, load_field, save_field, save_items, AppendMark, CodecError,
};
pub use migrate::{MigrateError, Migration, WriteKind};
pub(crate) use warm::Warm;

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

/// Description of one field of a state: its name and channel kind.
///
/// A struct's fields are described once, in a constant ([`State::FIELDS`]), with names borrowed
/// from the program ([`FieldInfo::new`]); a state whose fields are read at run time (a workflow
/// loaded from JSON) owns its names ([`FieldInfo::owned`]), and they are freed with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldInfo {
    /// The field's name.
    pub name: Cow<'static, str>,
    /// Its channel kind.
    pub kind: ChannelKind,
}

impl FieldInfo {
    /// A field whose name is a constant, as `#[derive(State)]` writes it.
    ///
    /// # Examples
    ///
    /// ```
    /// use weir_runtime::{ChannelKind, FieldInfo};
    /// const NOTES: FieldInfo = FieldInfo::new("notes", ChannelKind::Reducer);
    /// assert_eq!(NOTES.name(), "notes");
    /// ```
    pub const fn new(name: &'static str, kind: ChannelKind) -> Self {
        Self {
            name: Cow::Borrowed(name),
            kind,
        }
    }

    /// A field whose name is known only at run time; the name is owned, not leaked.
    ///
    /// # Examples
    ///
    /// ```
    /// use weir_runtime::{ChannelKind, FieldInfo};
    /// let read = String::from("topic");
    /// let field = FieldInfo::owned(read, ChannelKind::LastValue);
    /// assert_eq!(field.name(), "topic");
    /// ```
    pub fn owned(name: impl Into<String>, kind: ChannelKind) -> Self {
        Self {
            name: Cow::Owned(name.into()),
            kind,
        }
    }

    /// The field's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// The writes one task makes to one field: none, one or several (in the order made).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Writes<W> {
    /// No write.
    None,
    /// One write.
    One(W),
    /// Several writes, in order.
    Many(Vec<W>),
}

// Not derived: the derive would ask `W: Default`.
#[allow(clippy::derivable_impls)]
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
pub trait Update: Default + Clone + fmt::Debug + Serialize + DeserializeOwned + Send + Sync + 'static {
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

    /// The fields of this state. For a struct, [`FIELDS`](State::FIELDS); a state whose fields
    /// are known only at run time (a workflow loaded from JSON) returns its own.
    fn fields(&self) -> &[FieldInfo] {
        Self::FIELDS
    }

    /// The version of this state's shape, recorded in each checkpoint it saves
    /// (`#[state(version = N)]`; 1 for a state that says none). A checkpoint of an older
    /// version is brought to this one by [`migrate`](State::migrate) before it is decoded; one
    /// of a newer version is an error.
    fn version(&self) -> u32 {
        1
    }

    /// Brings a checkpoint saved by version `from` of this state to version `from + 1`, by
    /// renaming, dropping, adding and retyping its fields in `saved` (`#[migrate(from = ..)]`
    /// writes it). The loop calls it for each version from the checkpoint's up to
    /// [`version`](State::version).
    ///
    /// # Errors
    /// When a saved value or write cannot be migrated, or the state has no step from `from`
    /// (the default).
    fn migrate(&self, from: u32, saved: &mut Migration) -> Result<(), MigrateError> {
        let _ = saved;
        Err(migrate::no_step(from, from.saturating_add(1)))
    }

    /// For a migration: a saved update (this state's [`Update`](State::Update) as JSON, saved
    /// by `version` of the state) as an object with one entry per field it writes, each `{"One": w}` or `{"Many": [w, …]}` (the
    /// shape `#[derive(State)]`'s updates are saved in, which this default takes as it is).
    ///
    /// # Errors
    /// When the saved update is not of this state's shape.
    fn update_fields(
        &self,
        version: u32,
        saved: serde_json::Value,
    ) -> Result<serde_json::Map<String, serde_json::Value>, MigrateError> {
        let _ = version;
        match saved {
            serde_json::Value::Object(fields) => Ok(fields),
            other => Err(MigrateError::new(
                "",
                format_args!("a saved update is not an object: {other}"),
            )),
        }
    }

    /// The inverse of [`update_fields`](State::update_fields): the migrated fields as a saved
    /// update of this state.
    fn update_from_fields(&self, fields: serde_json::Map<String, serde_json::Value>) -> serde_json::Value {
        serde_json::Value::Object(fields)
    }

    /// The empty state: every field at its default and every channel never written.
    fn empty() -> (Self, Self::Channels);

    /// The update that writes every field of `self` (the run's input given as a whole state).
    fn into_update(self) -> Self::Update;

    /// Whether the field at `index` can be read.
    fn is_available(&self, channels: &Self::Channels, index: usize) -> bool;

    /// Applies the writes of `updates` (in task order) to each field they write, then, when `bump`
    /// is set, gives each available field that did not change an empty update (clearing
    /// ephemeral, any-value and per-step topic fields). A field nobody wrote is left alone when
    /// `bump` is not set: loading a checkpoint, applying saved writes for `get_state`, or taking
    /// an input keeps such a field as it was. Sets `changed[i]` for each field that changed.
    /// Takes the writes out of `updates`.
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

    /// Runs `read` on the state as one task sees it with its own `update` applied and nobody
    /// else's (LangGraph's fresh read, `local_read(fresh=True)`): the fields `update` writes take
    /// their writes through their channels, on copies; every other field is read as it is. Then
    /// `self` is as it was. The loop reads routers' states this way, and nodes' through
    /// [`GraphBuilder::then_fresh`].
    ///
    /// `#[derive(State)]` implements it as an overlay: it copies only the fields the update
    /// writes, swaps them in for `read` and back out. This default copies the whole state (and
    /// its channels) and applies `update` to the copy: right for a state written by hand whose
    /// [`apply`](State::apply) gives an unwritten field no update when `bump` is unset.
    /// `read` must not unwind (the loop calls user code in it under `catch_unwind`).
    ///
    /// # Errors
    /// When a written field's channel refuses `update`'s writes (two writes to a last value).
    ///
    /// [`GraphBuilder::then_fresh`]: crate::GraphBuilder::then_fresh
    fn read_fresh<R>(
        &mut self,
        channels: &Self::Channels,
        update: &Self::Update,
        read: impl FnOnce(&Self) -> R,
    ) -> Result<R, FieldError> {
        let mut fresh = self.clone();
        let mut channels = channels.clone();
        let mut changed = vec![false; self.fields().len()];
        fresh.apply(
            &mut channels,
            std::slice::from_mut(&mut update.clone()),
            false,
            &mut changed,
        )?;
        Ok(read(&fresh))
    }

    /// [`Channel::consume`] on the field at `index`.
    fn consume(&mut self, channels: &mut Self::Channels, index: usize) -> bool;

    /// [`Channel::finish`] on every field; sets `changed[i]` for each that changed.
    fn finish(&mut self, channels: &mut Self::Channels, changed: &mut [bool]);

    /// The checkpoint of the field at `index` (value and channel bookkeeping, as JSON), or `None`
    /// when the channel is missing from checkpoints. See [`save_field`].
    ///
    /// # Errors
    /// When the value cannot be serialized.
    fn save_field(&self, channels: &Self::Channels, index: usize) -> Result<Option<Vec<u8>>, CodecError>;

    /// Restores the field at `index` from a checkpoint chain: the saved field, then, for a list
    /// field saved as deltas, batches of items appended since. An empty chain empties the field.
    ///
    /// # Errors
    /// When the bytes do not decode as this field's type; the error names the field.
    fn load_field(&mut self, channels: &mut Self::Channels, index: usize, chain: &[Vec<u8>]) -> Result<(), CodecError>;

    /// For a list field whose reducer reports appends (`#[reducer(append)]`, or `with` a reducer
    /// returning [`Folded`](crate::channel::Folded)): how far it has grown and how often it was
    /// rewritten, so that a checkpoint can store only the items appended since the last one.
    /// `None` for other fields.
    fn append_mark(&self, channels: &Self::Channels, index: usize) -> Option<AppendMark> {
        let _ = (channels, index);
        None
    }

    /// For a field with an [`append_mark`](State::append_mark): appends the batches of items in
    /// `links` (each saved by [`save_items`](State::save_items)), as
    /// [`load_field`](State::load_field) does with the links after a chain's first.
    ///
    /// # Errors
    /// When a batch does not decode, or the field is not a list saved as deltas.
    fn extend_field(&mut self, index: usize, links: &[Vec<u8>]) -> Result<(), CodecError> {
        let _ = links;
        let name = self.fields().get(index).map_or("?", FieldInfo::name);
        Err(CodecError::new(name, "the field is not a list saved as deltas"))
    }

    /// For a field with an [`append_mark`](State::append_mark): the items from position `from`
    /// on, serialized as one batch.
    ///
    /// # Errors
    /// When the items cannot be serialized, or the field is not a list saved as deltas.
    fn save_items(&self, index: usize, from: usize) -> Result<Vec<u8>, CodecError> {
        let _ = from;
        let name = self.fields().get(index).map_or("?", FieldInfo::name);
        Err(CodecError::new(name, "the field is not a list saved as deltas"))
    }
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
    let mut writes = writes
        .map(|(i, w)| {
            if seen < 2 {
                writers[seen] = i;
            }
            seen += 1;
            w
        })
        .peekable();
    // Only a written field is updated (LangGraph's `apply_writes` step 7): an empty update would
    // clear an ephemeral, any-value or per-step topic field, and that is for a bumping step only.
    let changed = if writes.peek().is_some() {
        channel.update(value, writes).map_err(|error| FieldError {
            field: index,
            writers: writers.iter().copied().filter(|w| *w != usize::MAX).collect(),
            error,
        })?
    } else {
        false
    };
    if bump && channel.clears_when_idle() && !(changed && channel.is_available(value)) && channel.is_available(value) {
        // An available channel that did not change this step gets `update([])` (step 8).
        let cleared = channel.update(value, std::iter::empty()).map_err(|error| FieldError {
            field: index,
            writers: Vec::new(),
            error,
        })?;
        return Ok(changed || cleared);
    }
    Ok(changed)
}
