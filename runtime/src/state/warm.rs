//! The values a graph last read back from a checkpoint, kept with the blob chains they were
//! decoded from ([`Warm`]): the next read decodes only what differs. A field whose chain is the
//! same is taken as it is, a list whose chain only gained links decodes the new links alone,
//! any other field is decoded whole. It is a memo of the decoding and nothing else: the values
//! are what decoding those bytes gave, never a run's live state, so a read through it gives
//! exactly what a read without it would.

use super::{CodecError, State};

/// Decoded fields, with the chain each was decoded from (`None`: the checkpoint did not have the
/// field, which then kept its empty value).
pub(crate) struct Warm<S: State> {
    state: S,
    channels: S::Channels,
    chains: Vec<Option<Vec<Vec<u8>>>>,
}

impl<S: State> Warm<S> {
    /// Nothing decoded yet: the empty state.
    pub(crate) fn new(empty: (S, S::Channels), n_fields: usize) -> Self {
        Self {
            state: empty.0,
            channels: empty.1,
            chains: vec![None; n_fields],
        }
    }

    /// Whether these values can be brought to `chains`: a field the checkpoint does not have
    /// must still have its empty value, which a field decoded since may not.
    pub(crate) fn fits(&self, chains: &[Option<Vec<Vec<u8>>>]) -> bool {
        self.chains.len() == chains.len()
            && self
                .chains
                .iter()
                .zip(chains)
                .all(|(had, has)| had.is_none() || has.is_some())
    }

    /// Decodes field `index` from `chain`, or only the links it gained since it was last decoded.
    ///
    /// # Errors
    /// When a link does not decode; the values are then partly brought, and must be dropped.
    pub(crate) fn bring(&mut self, index: usize, chain: Vec<Vec<u8>>) -> Result<(), CodecError> {
        let had = self.chains[index].as_deref();
        if had == Some(&chain[..]) {
            return Ok(());
        }
        let grew = match had {
            Some(had) if !had.is_empty() && chain.len() > had.len() && chain[..had.len()] == *had => {
                self.state.append_mark(&self.channels, index).map(|_| had.len())
            }
            _ => None,
        };
        match grew {
            Some(from) => self.state.extend_field(index, &chain[from..])?,
            None => self.state.load_field(&mut self.channels, index, &chain)?,
        }
        self.chains[index] = Some(chain);
        Ok(())
    }

    /// The decoded values and their channels.
    pub(crate) fn values(&self) -> (&S, &S::Channels) {
        (&self.state, &self.channels)
    }
}
