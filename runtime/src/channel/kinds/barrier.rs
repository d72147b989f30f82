//! Join barriers (`channels/named_barrier_value.py`): available once every awaited name was
//! written.

use crate::channel::{Channel, UpdateError};
use serde::{de::DeserializeOwned, Serialize};
use std::fmt;

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
