//! The channel kinds of LangGraph 1.2.9 (`langgraph/channels/*.py`), one state machine each.

use super::{Channel, UpdateError};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use std::fmt;

/// Takes the last of `writes`; with `guard`, more than one write is an error.
fn last_write<W>(writes: impl IntoIterator<Item = W>, guard: bool) -> Result<Option<W>, UpdateError> {
    let mut count = 0;
    let mut last = None;
    for w in writes {
        count += 1;
        last = Some(w);
    }
    if guard && count > 1 {
        return Err(UpdateError::TooManyWrites { count });
    }
    Ok(last)
}

/// Stores the last value written; two writes in one step are an error.
///
/// The default channel of a field without attributes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LastValue {
    set: bool,
}

impl LastValue {
    /// An empty channel.
    pub const fn new() -> Self {
        Self { set: false }
    }
}

impl<T: Send + Sync + 'static> Channel<T> for LastValue {
    type Write = T;
    type Meta = ();

    fn update<I: IntoIterator<Item = T>>(&mut self, value: &mut T, writes: I) -> Result<bool, UpdateError> {
        match last_write(writes, true)? {
            Some(w) => {
                *value = w;
                self.set = true;
                Ok(true)
            }
            None => Ok(false),
        }
    }
    fn is_available(&self, _: &T) -> bool {
        self.set
    }
    fn checkpoint(&self, _: &T) -> Option<()> {
        self.set.then_some(())
    }
    fn from_checkpoint(&self, meta: Option<()>) -> Self {
        Self { set: meta.is_some() }
    }
    fn reset(&mut self, _: &mut T) {
        self.set = false;
    }
}

/// Stores the last value written, several writes allowed; cleared by a step that does not write it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AnyValue {
    set: bool,
}

impl AnyValue {
    /// An empty channel.
    pub const fn new() -> Self {
        Self { set: false }
    }
}

impl<T: Default + Send + Sync + 'static> Channel<T> for AnyValue {
    type Write = T;
    type Meta = ();

    fn update<I: IntoIterator<Item = T>>(&mut self, value: &mut T, writes: I) -> Result<bool, UpdateError> {
        match last_write(writes, false)? {
            Some(w) => {
                *value = w;
                self.set = true;
                Ok(true)
            }
            None if self.set => {
                Channel::<T>::reset(self, value);
                Ok(true)
            }
            None => Ok(false),
        }
    }
    fn is_available(&self, _: &T) -> bool {
        self.set
    }
    fn checkpoint(&self, _: &T) -> Option<()> {
        self.set.then_some(())
    }
    fn from_checkpoint(&self, meta: Option<()>) -> Self {
        Self { set: meta.is_some() }
    }
    fn reset(&mut self, value: &mut T) {
        self.set = false;
        *value = T::default();
    }
    fn clears_when_idle(&self) -> bool {
        true
    }
}

/// A value visible for one step: the step after it was written clears it.
///
/// Guarded (the default) it takes one write per step; unguarded, the last of several wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EphemeralValue {
    set: bool,
    guard: bool,
}

impl Default for EphemeralValue {
    fn default() -> Self {
        Self::new()
    }
}

impl EphemeralValue {
    /// An empty guarded channel: two writes in one step are an error.
    pub const fn new() -> Self {
        Self {
            set: false,
            guard: true,
        }
    }
    /// An empty unguarded channel: the last of several writes wins.
    pub const fn unguarded() -> Self {
        Self {
            set: false,
            guard: false,
        }
    }
}

impl<T: Default + Send + Sync + 'static> Channel<T> for EphemeralValue {
    type Write = T;
    type Meta = ();

    fn update<I: IntoIterator<Item = T>>(&mut self, value: &mut T, writes: I) -> Result<bool, UpdateError> {
        match last_write(writes, self.guard)? {
            Some(w) => {
                *value = w;
                self.set = true;
                Ok(true)
            }
            None if self.set => {
                Channel::<T>::reset(self, value);
                Ok(true)
            }
            None => Ok(false),
        }
    }
    fn is_available(&self, _: &T) -> bool {
        self.set
    }
    fn checkpoint(&self, _: &T) -> Option<()> {
        self.set.then_some(())
    }
    fn from_checkpoint(&self, meta: Option<()>) -> Self {
        Self {
            set: meta.is_some(),
            guard: self.guard,
        }
    }
    fn reset(&mut self, value: &mut T) {
        self.set = false;
        *value = T::default();
    }
    fn clears_when_idle(&self) -> bool {
        true
    }
}

/// A value kept across steps but never checkpointed: a reload finds it empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UntrackedValue {
    set: bool,
    guard: bool,
}

impl Default for UntrackedValue {
    fn default() -> Self {
        Self::new()
    }
}

impl UntrackedValue {
    /// An empty guarded channel: two writes in one step are an error.
    pub const fn new() -> Self {
        Self {
            set: false,
            guard: true,
        }
    }
    /// An empty unguarded channel: the last of several writes wins.
    pub const fn unguarded() -> Self {
        Self {
            set: false,
            guard: false,
        }
    }
}

impl<T: Default + Send + Sync + 'static> Channel<T> for UntrackedValue {
    type Write = T;
    type Meta = ();

    fn update<I: IntoIterator<Item = T>>(&mut self, value: &mut T, writes: I) -> Result<bool, UpdateError> {
        match last_write(writes, self.guard)? {
            Some(w) => {
                *value = w;
                self.set = true;
                Ok(true)
            }
            None => Ok(false),
        }
    }
    fn is_available(&self, _: &T) -> bool {
        self.set
    }
    fn checkpoint(&self, _: &T) -> Option<()> {
        None
    }
    fn from_checkpoint(&self, _: Option<()>) -> Self {
        Self {
            set: false,
            guard: self.guard,
        }
    }
    fn reset(&mut self, value: &mut T) {
        self.set = false;
        *value = T::default();
    }
}

/// A list of values: per step (each step's writes replace the last step's, and a step without
/// writes clears it) or accumulating (writes are appended forever).
///
/// Each write is a batch (`Vec<E>`), flattened one level into the list, as LangGraph's `Topic`
/// flattens lists. Available while the list is not empty; always present in a checkpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Topic {
    accumulate: bool,
}

impl Topic {
    /// A per-step topic.
    pub const fn new() -> Self {
        Self { accumulate: false }
    }
    /// An accumulating topic.
    pub const fn accumulate() -> Self {
        Self { accumulate: true }
    }
}

impl<E: Send + Sync + 'static> Channel<Vec<E>> for Topic {
    type Write = Vec<E>;
    type Meta = ();

    fn update<I: IntoIterator<Item = Vec<E>>>(&mut self, value: &mut Vec<E>, writes: I) -> Result<bool, UpdateError> {
        let mut updated = false;
        if !self.accumulate {
            updated = !value.is_empty();
            value.clear();
        }
        for batch in writes {
            updated |= !batch.is_empty();
            value.extend(batch);
        }
        Ok(updated)
    }
    fn is_available(&self, value: &Vec<E>) -> bool {
        !value.is_empty()
    }
    fn checkpoint(&self, _: &Vec<E>) -> Option<()> {
        Some(())
    }
    fn from_checkpoint(&self, _: Option<()>) -> Self {
        *self
    }
    fn reset(&mut self, value: &mut Vec<E>) {
        value.clear();
    }
    fn clears_when_idle(&self) -> bool {
        !self.accumulate
    }
}

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

/// A join barrier: available once every one of its names was written, in this step or earlier;
/// consuming it (the joined node ran) starts over. Its value is `()`.
///
/// The names are kept sorted, and how many were seen is counted: a write and the availability
/// check cost no more for a join of a thousand branches than for one of two.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedBarrierValue<N> {
    names: Vec<N>,
    seen: Vec<bool>,
    count: usize,
}

impl<N: Ord> NamedBarrierValue<N> {
    /// A barrier waiting for `names` (each once, however often it is given).
    pub fn new(names: impl IntoIterator<Item = N>) -> Self {
        let mut names: Vec<N> = names.into_iter().collect();
        names.sort_unstable();
        names.dedup();
        let seen = vec![false; names.len()];
        Self { names, seen, count: 0 }
    }
}

impl<N> NamedBarrierValue<N> {
    fn complete(&self) -> bool {
        self.count == self.names.len()
    }

    fn clear(&mut self) {
        self.seen.fill(false);
        self.count = 0;
    }

    /// Marks each written name seen; an unknown name is an error.
    fn mark(&mut self, writes: impl IntoIterator<Item = N>) -> Result<bool, UpdateError>
    where
        N: Ord + fmt::Debug,
    {
        let mut changed = false;
        for w in writes {
            let Ok(i) = self.names.binary_search(&w) else {
                return Err(UpdateError::UnknownName { name: format!("{w:?}") });
            };
            if !self.seen[i] {
                self.seen[i] = true;
                self.count += 1;
                changed = true;
            }
        }
        Ok(changed)
    }

    fn seen_names(&self) -> Vec<N>
    where
        N: Clone,
    {
        self.names
            .iter()
            .zip(&self.seen)
            .filter(|(_, s)| **s)
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// The same barrier with the names of a checkpoint seen (names it does not wait for are
    /// ignored).
    fn restored(&self, saved: &[N]) -> Self
    where
        N: Ord + Clone,
    {
        let mut restored = Self {
            names: self.names.clone(),
            seen: vec![false; self.names.len()],
            count: 0,
        };
        for name in saved {
            if let Ok(i) = restored.names.binary_search(name) {
                restored.count += usize::from(!restored.seen[i]);
                restored.seen[i] = true;
            }
        }
        restored
    }
}

impl<N> Channel<()> for NamedBarrierValue<N>
where
    N: Ord + Clone + fmt::Debug + Serialize + DeserializeOwned + Send + Sync + 'static,
{
    type Write = N;
    type Meta = Vec<N>;

    fn update<I: IntoIterator<Item = N>>(&mut self, _: &mut (), writes: I) -> Result<bool, UpdateError> {
        self.mark(writes)
    }
    fn is_available(&self, _: &()) -> bool {
        self.complete()
    }
    fn consume(&mut self, _: &mut ()) -> bool {
        if self.complete() {
            self.clear();
            return true;
        }
        false
    }
    fn checkpoint(&self, _: &()) -> Option<Vec<N>> {
        Some(self.seen_names())
    }
    fn from_checkpoint(&self, meta: Option<Vec<N>>) -> Self {
        self.restored(meta.as_deref().unwrap_or_default())
    }
    fn reset(&mut self, _: &mut ()) {
        self.clear();
    }
}

/// A join barrier for a deferred node: available only once complete *and* the run is finishing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedBarrierValueAfterFinish<N> {
    barrier: NamedBarrierValue<N>,
    finished: bool,
}

impl<N: Ord> NamedBarrierValueAfterFinish<N> {
    /// A barrier waiting for `names`.
    pub fn new(names: impl IntoIterator<Item = N>) -> Self {
        Self {
            barrier: NamedBarrierValue::new(names),
            finished: false,
        }
    }
}

impl<N> Channel<()> for NamedBarrierValueAfterFinish<N>
where
    N: Ord + Clone + fmt::Debug + Serialize + DeserializeOwned + Send + Sync + 'static,
{
    type Write = N;
    type Meta = (Vec<N>, bool);

    fn update<I: IntoIterator<Item = N>>(&mut self, _: &mut (), writes: I) -> Result<bool, UpdateError> {
        self.barrier.mark(writes)
    }
    fn is_available(&self, _: &()) -> bool {
        self.barrier.complete() && self.finished
    }
    fn consume(&mut self, _: &mut ()) -> bool {
        if self.finished && self.barrier.complete() {
            self.finished = false;
            self.barrier.clear();
            return true;
        }
        false
    }
    fn finish(&mut self, _: &mut ()) -> bool {
        if !self.finished && self.barrier.complete() {
            self.finished = true;
            return true;
        }
        false
    }
    fn checkpoint(&self, _: &()) -> Option<(Vec<N>, bool)> {
        Some((self.barrier.seen_names(), self.finished))
    }
    fn from_checkpoint(&self, meta: Option<(Vec<N>, bool)>) -> Self {
        let (saved, finished) = meta.unwrap_or_default();
        Self {
            barrier: self.barrier.restored(&saved),
            finished,
        }
    }
    fn reset(&mut self, _: &mut ()) {
        self.barrier.clear();
        self.finished = false;
    }
}

/// A last value that becomes readable only when the run is finishing (deferred nodes), and is
/// cleared once consumed. Several writes in one step are allowed; the last wins.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LastValueAfterFinish {
    set: bool,
    finished: bool,
}

impl LastValueAfterFinish {
    /// An empty channel.
    pub const fn new() -> Self {
        Self {
            set: false,
            finished: false,
        }
    }
}

impl<T: Default + Send + Sync + 'static> Channel<T> for LastValueAfterFinish {
    type Write = T;
    type Meta = bool;

    fn update<I: IntoIterator<Item = T>>(&mut self, value: &mut T, writes: I) -> Result<bool, UpdateError> {
        match last_write(writes, false)? {
            Some(w) => {
                *value = w;
                self.set = true;
                self.finished = false;
                Ok(true)
            }
            None => Ok(false),
        }
    }
    fn is_available(&self, _: &T) -> bool {
        self.set && self.finished
    }
    fn consume(&mut self, value: &mut T) -> bool {
        if self.finished {
            Channel::<T>::reset(self, value);
            return true;
        }
        false
    }
    fn finish(&mut self, _: &mut T) -> bool {
        if self.set && !self.finished {
            self.finished = true;
            return true;
        }
        false
    }
    fn checkpoint(&self, _: &T) -> Option<bool> {
        self.set.then_some(self.finished)
    }
    fn from_checkpoint(&self, meta: Option<bool>) -> Self {
        Self {
            set: meta.is_some(),
            finished: meta.unwrap_or(false),
        }
    }
    fn reset(&mut self, value: &mut T) {
        self.set = false;
        self.finished = false;
        *value = T::default();
    }
}
