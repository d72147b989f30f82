//! A field's checkpoint codec: its value saved as JSON with its channel's metadata, restored
//! from a chain of saved links (a list field's full value, then the items appended to it since),
//! and the error naming the field that would not encode or decode. What [`State::save_field`](super::State::save_field) and
//! [`State::load_field`](super::State::load_field) do for each field; generated code calls these functions.

use crate::channel::{BinaryOperatorAggregate, Channel};
use serde::{de::DeserializeOwned, Serialize};
use std::fmt;

/// How far a list field has grown: its length, and how many times it changed other than by
/// appending. Between two marks with the same `rewrites`, the list only grew: the later value is
/// the earlier one followed by the items from the earlier `len` on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendMark {
    /// The value's length.
    pub len: usize,
    /// The channel's rewrite count ([`BinaryOperatorAggregate::rewrites`]).
    pub rewrites: u64,
}

/// A field's checkpoint could not be written or read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodecError {
    field: String,
    message: String,
}

impl CodecError {
    /// An error about `field`.
    pub fn new(field: impl Into<String>, message: impl fmt::Display) -> Self {
        Self {
            field: field.into(),
            message: message.to_string(),
        }
    }
    /// The field at fault.
    pub fn field(&self) -> &str {
        &self.field
    }
}

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "field `{}`: {}", self.field, self.message)
    }
}

impl std::error::Error for CodecError {}

/// Saves a field as JSON `[value, meta]`, or `None` when its channel is missing from checkpoints.
/// What [`State::save_field`](super::State::save_field) does for each field; generated code calls it.
///
/// # Errors
/// When the value cannot be serialized.
pub fn save_field<T: Serialize, C: Channel<T>>(
    name: &str,
    value: &T,
    channel: &C,
) -> Result<Option<Vec<u8>>, CodecError> {
    match channel.checkpoint(value) {
        None => Ok(None),
        Some(meta) => serde_json::to_vec(&(value, meta))
            .map(Some)
            .map_err(|e| CodecError::new(name, e)),
    }
}

/// Restores a field saved by [`save_field`]; an empty chain empties it. Only the first link is
/// read: use [`load_append_field`] for append-only fields.
///
/// # Errors
/// When the bytes do not decode as `T` (the error names the field), or the chain has deltas.
pub fn load_field<T: DeserializeOwned + Default, C: Channel<T>>(
    name: &str,
    value: &mut T,
    channel: &mut C,
    chain: &[Vec<u8>],
) -> Result<(), CodecError> {
    match chain {
        [] => {
            *channel = channel.from_checkpoint(None);
            *value = T::default();
            Ok(())
        }
        [full] => {
            let (v, meta): (T, C::Meta) = serde_json::from_slice(full).map_err(|e| CodecError::new(name, e))?;
            *value = v;
            *channel = channel.from_checkpoint(Some(meta));
            Ok(())
        }
        _ => Err(CodecError::new(
            name,
            "appended items saved for a field that is not append-only",
        )),
    }
}

/// Restores a list field saved as a chain: the saved value, then each batch of appended items.
///
/// # Errors
/// When a link does not decode (the error names the field).
pub fn load_append_field<E: DeserializeOwned, C: Channel<Vec<E>>>(
    name: &str,
    value: &mut Vec<E>,
    channel: &mut C,
    chain: &[Vec<u8>],
) -> Result<(), CodecError> {
    let (first, deltas) = match chain.split_first() {
        Some((f, d)) => (std::slice::from_ref(f), d),
        None => (chain, &[][..]),
    };
    load_field(name, value, channel, first)?;
    extend_items(name, value, deltas)
}

/// Appends the batches of items in `links` to a list field, as [`load_append_field`] does with
/// the links after a chain's first.
///
/// # Errors
/// When a link does not decode (the error names the field).
pub fn extend_items<E: DeserializeOwned>(name: &str, value: &mut Vec<E>, links: &[Vec<u8>]) -> Result<(), CodecError> {
    for d in links {
        let items: Vec<E> = serde_json::from_slice(d).map_err(|e| CodecError::new(name, e))?;
        value.extend(items);
    }
    Ok(())
}

/// The [`AppendMark`] of a list field.
pub fn append_mark<E, U>(value: &[E], channel: &BinaryOperatorAggregate<Vec<E>, U>) -> AppendMark {
    AppendMark {
        len: value.len(),
        rewrites: channel.rewrites(),
    }
}

/// Saves the items of a list field from position `from` on.
///
/// # Errors
/// When the items cannot be serialized.
pub fn save_items<E: Serialize>(name: &str, value: &[E], from: usize) -> Result<Vec<u8>, CodecError> {
    serde_json::to_vec(&value[from.min(value.len())..]).map_err(|e| CodecError::new(name, e))
}
