//! The `add_messages` reducer (LangGraph's `langgraph.graph.message.add_messages`): append,
//! replace by id, remove by id, remove all; and [`Messages`], the write it takes. The reducer says
//! whether a write only appended ([`Folded`]), so that a checkpoint stores a conversation's new
//! messages alone while nothing earlier changed.

use super::Message;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::fmt;
use weir::channel::Folded;

/// The id of a [`RemoveMessage`] that removes every message before it (LangGraph's
/// `REMOVE_ALL_MESSAGES`).
pub const REMOVE_ALL_MESSAGES: &str = "__remove_all__";

/// Removes the message with this id (LangChain's `RemoveMessage`, `"type": "remove"`); with id
/// [`REMOVE_ALL_MESSAGES`], removes them all.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename = "remove")]
pub struct RemoveMessage {
    /// The id of the message to remove.
    pub id: String,
}

/// Read only from a dict whose `type` is `"remove"`: serde's derive for a tagged struct does not
/// check the tag, so a [`MessageUpdate`] read any message with an id (`{"type": "human", "id":
/// …}`, as every LangGraph client sends them) as the removal of that id.
impl<'de> Deserialize<'de> for RemoveMessage {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Dict {
            #[serde(rename = "type")]
            kind: String,
            id: String,
        }
        let dict = Dict::deserialize(deserializer)?;
        if dict.kind != "remove" {
            let kind = serde::de::Unexpected::Str(&dict.kind);
            return Err(serde::de::Error::invalid_value(kind, &"\"remove\""));
        }
        Ok(Self::new(dict.id))
    }
}

impl RemoveMessage {
    /// Removes the message `id`.
    pub fn new(id: impl Into<String>) -> Self {
        Self { id: id.into() }
    }

    /// Removes every message (the write's later messages then start the list afresh).
    pub fn all() -> Self {
        Self::new(REMOVE_ALL_MESSAGES)
    }
}

/// One item of a [`Messages`] write: a message to append or put in place of the one with its
/// id, or a removal.
/// Read by hand (`de.rs`): a message in any form LangChain takes, or a `remove` dict.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
// A message is written once per update and moved into the list as it is: boxing it would add an
// allocation a write for no gain (the size difference grows with serde_json's `preserve_order`).
#[allow(clippy::large_enum_variant)]
pub enum MessageUpdate {
    /// Removes a message by id.
    Remove(RemoveMessage),
    /// Appends the message, or replaces the message with its id.
    Put(Message),
}

/// A write to a field merged by [`add_messages`]: messages and removals, in order. Its JSON is
/// a list of LangChain message dicts (removals are `{"type": "remove", "id": ..}`).
///
/// ```
/// use weir_agent::message::{Message, Messages, RemoveMessage};
/// let w: Messages = vec![Message::human("hi")].into();
/// let w = w.remove("old-id").put(Message::ai("hello"));
/// assert_eq!(w.len(), 3);
/// ```
///
/// Read as LangGraph's `add_messages` takes its right side: a list, or one message alone (a
/// dict, a string).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Messages(pub Vec<MessageUpdate>);

impl Messages {
    /// No messages.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same write with `message` appended (or replacing the message with its id).
    pub fn put(mut self, message: impl Into<Message>) -> Self {
        self.0.push(MessageUpdate::Put(message.into()));
        self
    }

    /// The same write with a removal of message `id`.
    pub fn remove(mut self, id: impl Into<String>) -> Self {
        self.0.push(MessageUpdate::Remove(RemoveMessage::new(id)));
        self
    }

    /// How many items.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is nothing to write.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<Message> for Messages {
    fn from(m: Message) -> Self {
        Self(vec![MessageUpdate::Put(m)])
    }
}

impl From<Vec<Message>> for Messages {
    fn from(ms: Vec<Message>) -> Self {
        Self(ms.into_iter().map(MessageUpdate::Put).collect())
    }
}

impl From<RemoveMessage> for Messages {
    fn from(r: RemoveMessage) -> Self {
        Self(vec![MessageUpdate::Remove(r)])
    }
}

impl FromIterator<MessageUpdate> for Messages {
    fn from_iter<I: IntoIterator<Item = MessageUpdate>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}

/// A [`Messages`] write that cannot be merged: it removes a message that is not there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessagesError {
    id: String,
}

impl MessagesError {
    /// The id the removal named.
    pub fn id(&self) -> &str {
        &self.id
    }
}

impl fmt::Display for MessagesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot remove message `{}`: no message has that id", self.id)
    }
}

impl std::error::Error for MessagesError {}

/// Merges `right` into `messages` with LangGraph's `add_messages` semantics; on an error,
/// `messages` is left as it was.
///
/// Every message without an id gets a fresh UUID (v4). A message whose id is already in the list
/// replaces that message in place; others are appended in order. A removal takes the message
/// with its id out; a removal with id [`REMOVE_ALL_MESSAGES`] drops everything before it, and
/// the list becomes the messages after the last such removal.
///
/// Returns [`Folded::Appended`] when the messages already in the list were left as they were
/// (the write only added messages at the end), [`Folded::Rewrote`] when one of them was replaced
/// or removed, or got an id it did not have.
///
/// # Errors
/// A removal of an id that is neither in the list nor put earlier in `right`.
///
/// ```
/// use weir::channel::Folded;
/// use weir_agent::message::{try_add_messages, Message, Messages};
/// let mut list = vec![Message::human("hi").with_id("1")];
/// let folded = try_add_messages(&mut list, Messages::new().put(Message::ai("hey").with_id("2"))).unwrap();
/// assert_eq!(folded, Folded::Appended);
/// let folded = try_add_messages(&mut list, Messages::new().put(Message::human("hello").with_id("1"))).unwrap();
/// assert_eq!((folded, list[0].text()), (Folded::Rewrote, "hello".into()));
/// let err = try_add_messages(&mut list, Messages::new().remove("9")).unwrap_err();
/// assert_eq!(err.to_string(), "cannot remove message `9`: no message has that id");
/// ```
pub fn try_add_messages(messages: &mut Vec<Message>, right: Messages) -> Result<Folded, MessagesError> {
    let mut right = right.0;
    for u in right.iter_mut() {
        if let MessageUpdate::Put(m) = u {
            assign_id(m);
        }
    }
    let last_remove_all = right
        .iter()
        .rposition(|u| matches!(u, MessageUpdate::Remove(r) if r.id == REMOVE_ALL_MESSAGES));
    if let Some(at) = last_remove_all {
        let rest = right.split_off(at + 1);
        check_removals(&[], &rest)?;
        let mut fresh = Vec::new();
        merge(&mut fresh, rest);
        *messages = fresh;
        return Ok(Folded::Rewrote);
    }
    check_removals(messages, &right)?;
    let mut named = false;
    for m in messages.iter_mut() {
        named |= assign_id(m);
    }
    let folded = merge(messages, right);
    Ok(if named { Folded::Rewrote } else { folded })
}

/// Checks, before anything changes, that every removal names a message of `left` or one put
/// earlier in `right`.
fn check_removals(left: &[Message], right: &[MessageUpdate]) -> Result<(), MessagesError> {
    if !right.iter().any(|u| matches!(u, MessageUpdate::Remove(_))) {
        return Ok(());
    }
    let mut known: HashSet<&str> = left.iter().filter_map(Message::id).collect();
    for u in right {
        match u {
            MessageUpdate::Put(m) => {
                known.insert(m.id().unwrap_or_default());
            }
            MessageUpdate::Remove(r) if !known.contains(r.id.as_str()) => {
                return Err(MessagesError { id: r.id.clone() });
            }
            MessageUpdate::Remove(_) => {}
        }
    }
    Ok(())
}

/// Up to this many items, a write finds the messages it replaces by scanning the list from its
/// end (no allocation: the common write is one or two new messages); above, through an index.
const SCAN_LIMIT: usize = 8;

/// LangGraph's merge loop, in place, over a list whose messages all have ids and a write whose
/// removals were checked; whether the messages that were there before are left as they were.
fn merge(merged: &mut Vec<Message>, right: Vec<MessageUpdate>) -> Folded {
    let before = merged.len();
    let mut folded = Folded::Appended;
    let mut index: Option<HashMap<String, usize>> = (right.len() > SCAN_LIMIT).then(|| {
        merged
            .iter()
            .enumerate()
            .filter_map(|(i, m)| Some((m.id()?.to_owned(), i)))
            .collect()
    });
    let mut removed: HashSet<String> = HashSet::new();
    for u in right {
        match u {
            MessageUpdate::Put(m) => {
                let id = m.id().unwrap_or_default();
                let at = match &index {
                    Some(ix) => ix.get(id).copied(),
                    None => merged.iter().rposition(|old| old.id() == Some(id)),
                };
                if let Some(i) = at {
                    removed.remove(id);
                    if i < before {
                        folded = Folded::Rewrote;
                    }
                    merged[i] = m;
                } else {
                    if let Some(ix) = &mut index {
                        ix.insert(id.to_owned(), merged.len());
                    }
                    merged.push(m);
                }
            }
            MessageUpdate::Remove(r) => {
                removed.insert(r.id);
            }
        }
    }
    if !removed.is_empty() {
        folded = Folded::Rewrote;
        merged.retain(|m| !m.id().is_some_and(|id| removed.contains(id)));
    }
    folded
}

/// Gives `m` a fresh id when it has none; whether it had none.
fn assign_id(m: &mut Message) -> bool {
    let slot = m.id_mut();
    let missing = slot.is_none();
    if missing {
        *slot = Some(uuid::Uuid::new_v4().to_string());
    }
    missing
}

/// The reducer for `#[reducer(with = add_messages, update = Messages)]`: [`try_add_messages`].
///
/// A reducer cannot return an error, so a removal of a missing id panics with the
/// [`MessagesError`]'s message, before anything changes; the runtime turns a reducer's panic into
/// an error of the run naming the field. What it returns tells the runtime whether the write only
/// appended: a checkpoint then stores the new messages alone, the whole list after a replacement
/// or a removal.
///
/// ```
/// use weir::channel::Folded;
/// use weir_agent::message::{add_messages, Message, Messages, RemoveMessage};
/// let mut list = vec![Message::human("hi").with_id("1"), Message::ai("hello").with_id("2")];
/// assert_eq!(add_messages(&mut list, RemoveMessage::new("1").into()), Folded::Rewrote);
/// assert_eq!(list.len(), 1);
/// assert_eq!(list[0].id(), Some("2"));
/// ```
pub fn add_messages(messages: &mut Vec<Message>, right: Messages) -> Folded {
    match try_add_messages(messages, right) {
        Ok(folded) => folded,
        Err(e) => panic!("{e}"),
    }
}
