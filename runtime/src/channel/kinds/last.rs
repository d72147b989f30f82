//! The last-value family (`channels/last_value.py`, `channels/any_value.py`): one value, the
//! last write of a step wins, with or without a guard against several writes.

use crate::channel::{Channel, UpdateError};

/// Takes the last of `writes`; with `guard`, more than one write is an error.
pub(super) fn last_write<W>(writes: impl IntoIterator<Item = W>, guard: bool) -> Result<Option<W>, UpdateError> {
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
