use super::{Channel, EmptyChannel, UpdateError};
use serde::{Deserialize, Serialize};

/// A channel together with its value: a channel used on its own, outside a state struct.
///
/// ```
/// use weir_runtime::channel::{ChannelCell, LastValue};
///
/// let mut c = ChannelCell::<i32, _>::new(LastValue::new());
/// assert!(c.get().is_err());
/// assert!(c.update([3]).unwrap());
/// assert_eq!(c.get(), Ok(&3));
/// assert!(c.update([5, 6]).is_err());
/// ```
#[derive(Debug, Clone)]
pub struct ChannelCell<T, C> {
    value: T,
    channel: C,
}

/// The serialized form of a [`ChannelCell`]: its value and the channel's bookkeeping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint<T, M> {
    /// The stored value.
    pub value: T,
    /// The channel's bookkeeping ([`Channel::Meta`]).
    pub meta: M,
}

impl<T: Default, C: Channel<T>> ChannelCell<T, C> {
    /// An empty channel of the given kind.
    pub fn new(channel: C) -> Self {
        Self {
            value: T::default(),
            channel,
        }
    }

    /// The value, or [`EmptyChannel`] when the channel cannot be read.
    ///
    /// # Errors
    /// When the channel was never written, or was cleared.
    pub fn get(&self) -> Result<&T, EmptyChannel> {
        if self.channel.is_available(&self.value) {
            Ok(&self.value)
        } else {
            Err(EmptyChannel)
        }
    }

    /// Whether [`get`](Self::get) would succeed.
    pub fn is_available(&self) -> bool {
        self.channel.is_available(&self.value)
    }

    /// Applies one step's writes; see [`Channel::update`].
    ///
    /// # Errors
    /// When the writes break the kind's rule.
    pub fn update<I: IntoIterator<Item = C::Write>>(&mut self, writes: I) -> Result<bool, UpdateError> {
        self.channel.update(&mut self.value, writes)
    }

    /// See [`Channel::consume`].
    pub fn consume(&mut self) -> bool {
        self.channel.consume(&mut self.value)
    }

    /// See [`Channel::finish`].
    pub fn finish(&mut self) -> bool {
        self.channel.finish(&mut self.value)
    }

    /// The checkpoint, or `None` when the channel is missing from checkpoints.
    pub fn checkpoint(&self) -> Option<Checkpoint<T, C::Meta>>
    where
        T: Clone,
    {
        let meta = self.channel.checkpoint(&self.value)?;
        Some(Checkpoint {
            value: self.value.clone(),
            meta,
        })
    }

    /// A channel of the same kind restored from `checkpoint`.
    pub fn from_checkpoint(&self, checkpoint: Option<Checkpoint<T, C::Meta>>) -> Self {
        match checkpoint {
            Some(cp) => Self {
                value: cp.value,
                channel: self.channel.from_checkpoint(Some(cp.meta)),
            },
            None => Self {
                value: T::default(),
                channel: self.channel.from_checkpoint(None),
            },
        }
    }
}
