//! Values that do not outlive their step or their process (`channels/ephemeral_value.py`,
//! `channels/untracked_value.py`).

use super::last::last_write;
use crate::channel::{Channel, UpdateError};

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
