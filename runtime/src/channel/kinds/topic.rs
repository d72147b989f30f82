//! The list channel (`channels/topic.py`).

use crate::channel::{Channel, UpdateError};

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
