//! The values a graph last read back from a thread's checkpoint, kept with the blob each field's
//! chain ended at ([`Warm`]). The next run on the same thread names those blobs to the saver
//! (`Checkpointer::get_holding`), which returns for a list that only grew the links stored
//! since, and for an unchanged field none: a run on a long thread reads and decodes what the
//! last steps added, not the whole history. It is a memo of the decoding and nothing else: the
//! values are what decoding the checkpoint's bytes gave, never a run's live state, so a read
//! through it gives exactly what a read without it would.

use super::{CodecError, State};
use crate::checkpoint::Held;
use std::sync::Arc;

/// Decoded fields of one thread and namespace, with where each was decoded from (`None`: the
/// checkpoint did not have the field, which then kept its empty value).
pub(crate) struct Warm<S: State> {
    thread: Arc<str>,
    ns: Arc<str>,
    state: S,
    channels: S::Channels,
    fields: Vec<Option<Decoded>>,
}

/// Where a field's value was decoded from: the newest blob of its chain (`None`: a value the
/// reader cannot name to the saver, such as one a migration made), and the chain's size.
struct Decoded {
    held: Option<Held>,
    sizes: ChainSizes,
}

/// The size of a field's chain of blobs: its whole value's bytes, its deltas' bytes, and how
/// many deltas it has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ChainSizes {
    pub(crate) base_bytes: usize,
    pub(crate) delta_bytes: usize,
    pub(crate) links: usize,
}

impl ChainSizes {
    /// The sizes of a whole chain, oldest link first.
    fn of(chain: &[Vec<u8>]) -> Self {
        Self {
            base_bytes: chain.first().map_or(0, Vec::len),
            delta_bytes: chain.iter().skip(1).map(Vec::len).sum(),
            links: chain.len().saturating_sub(1),
        }
    }
}

impl<S: State> Warm<S> {
    /// Nothing decoded yet of `thread` and `ns`: the empty state.
    pub(crate) fn new(thread: Arc<str>, ns: Arc<str>, empty: (S, S::Channels), n_fields: usize) -> Self {
        Self {
            thread,
            ns,
            state: empty.0,
            channels: empty.1,
            fields: (0..n_fields).map(|_| None).collect(),
        }
    }

    /// Whether these are values of `thread` and `ns`.
    pub(crate) fn is_of(&self, thread: &str, ns: &str) -> bool {
        &*self.thread == thread && &*self.ns == ns
    }

    /// The values held, for the saver (`Checkpointer::get_holding`).
    pub(crate) fn held(&self) -> Vec<Held> {
        self.fields.iter().flatten().filter_map(|d| d.held.clone()).collect()
    }

    /// Brings field `index` to the checkpoint's value of `channel`, whose newest blob is under
    /// checkpoint `tip` (`None`: not to be named to the saver): `chain` is its whole chain, or
    /// when `continued` the links stored after the blob held ([`held`](Self::held)), which are
    /// decoded and appended alone. Returns the size of the field's whole chain.
    ///
    /// # Errors
    /// When a link does not decode, or a continued chain is not one of a list held; the values
    /// are then partly brought, and must be dropped.
    pub(crate) fn bring(
        &mut self,
        index: usize,
        channel: &Arc<str>,
        tip: Option<&Arc<str>>,
        chain: &[Vec<u8>],
        continued: bool,
    ) -> Result<ChainSizes, CodecError> {
        let sizes = if continued {
            let Some(had) = self.fields[index].as_ref().filter(|d| d.held.is_some()) else {
                return Err(CodecError::new(
                    &**channel,
                    "the saver continued a chain this reader does not hold",
                ));
            };
            let mut sizes = had.sizes;
            if !chain.is_empty() {
                if self.state.append_mark(&self.channels, index).is_none() {
                    return Err(CodecError::new(
                        &**channel,
                        "the saver continued a chain of a field that is not a list",
                    ));
                }
                self.state.extend_field(index, chain)?;
                sizes.delta_bytes += chain.iter().map(Vec::len).sum::<usize>();
                sizes.links += chain.len();
            }
            sizes
        } else {
            self.state.load_field(&mut self.channels, index, chain)?;
            ChainSizes::of(chain)
        };
        self.fields[index] = Some(Decoded {
            held: tip.map(|tip| Held {
                channel: channel.clone(),
                blob: tip.clone(),
            }),
            sizes,
        });
        Ok(sizes)
    }

    /// Keeps field `index`'s value but no longer names its blob to the saver: the value is not
    /// what the blob holds (a migration made it).
    pub(crate) fn unname(&mut self, index: usize) {
        if let Some(d) = &mut self.fields[index] {
            d.held = None;
        }
    }

    /// Empties field `index`, which the checkpoint read does not have.
    ///
    /// # Errors
    /// Never for a well-formed state (an empty chain empties a field).
    pub(crate) fn clear(&mut self, index: usize) -> Result<(), CodecError> {
        if self.fields[index].take().is_some() {
            self.state.load_field(&mut self.channels, index, &[])?;
        }
        Ok(())
    }

    /// The decoded values and their channels.
    pub(crate) fn values(&self) -> (&S, &S::Channels) {
        (&self.state, &self.channels)
    }
}
