//! A checkpoint's body: the loop's state besides the channel values (versions seen, internal
//! channels, pending `Send`s, the input, the versions interrupts have seen), as JSON written by
//! hand from names quoted once per graph, and read back with serde.

use super::control::Control;
use crate::graph::compile::GraphInner;
use crate::state::State;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The loop's state besides the channel values, as read back from [`CheckpointRecord::body`]
/// ([`BodyRef`] writes it).
#[derive(Debug, Deserialize)]
pub(crate) struct Body {
    /// Per node: the version of each trigger it last saw.
    pub(crate) seen: BTreeMap<String, BTreeMap<String, u64>>,
    /// Internal channels' bookkeeping (branch flags, barrier names), as JSON.
    pub(crate) controls: BTreeMap<String, serde_json::Value>,
    /// `Send`s for the next step.
    pub(crate) sends: Vec<SavedSend>,
    /// The run's input while the start node has not run yet.
    pub(crate) input: Option<serde_json::Value>,
    /// Channel versions at the last resume: static interrupts do not fire again for them.
    pub(crate) interrupt_seen: BTreeMap<String, u64>,
    /// The version of the state that saved it ([`State::version`]); absent: version 1.
    #[serde(default = "first_version")]
    pub(crate) version: u32,
}

fn first_version() -> u32 {
    1
}

/// The version of the state that saved `body`, read alone; `None` when it is not a body
/// (restoring it says why).
pub(crate) fn saved_version(body: &[u8]) -> Option<u32> {
    #[derive(Deserialize)]
    struct Version {
        #[serde(default = "first_version")]
        version: u32,
    }
    serde_json::from_slice::<Version>(body).ok().map(|v| v.version)
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct SavedSend {
    pub(crate) node: String,
    pub(crate) payload: serde_json::Value,
}

/// A [`Body`] as the loop writes it: the same JSON, written by hand from names quoted once per
/// graph, with no map built per step.
pub(crate) struct BodyRef<'a, S: State> {
    pub(crate) g: &'a GraphInner<S>,
    pub(crate) seen: &'a [Vec<u64>],
    /// The entries of `seen` as the last body wrote them, per node.
    pub(crate) seen_entries: &'a mut Vec<SeenEntry>,
    /// The internal channels, saved as they are written (channel `n_fields + i` is the `i`th).
    pub(crate) controls: &'a [Control],
    pub(crate) sends: Vec<SavedSend>,
    pub(crate) input: Option<serde_json::Value>,
    pub(crate) interrupt_seen: &'a [u64],
}

/// A node's entry of a body's `seen` object (`"node":{…}`) as last written, and the versions it
/// was written from. A step changes the entries of the nodes that ran; the others are copied.
#[derive(Debug, Default)]
pub(crate) struct SeenEntry {
    versions: Vec<u64>,
    text: Vec<u8>,
}

impl<S: State> BodyRef<'_, S> {
    pub(crate) fn write(&mut self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        let g = self.g;
        let mut number = itoa::Buffer::new();
        out.extend_from_slice(b"{\"seen\":{");
        let mut nodes = 0;
        self.seen_entries.resize_with(self.seen.len(), SeenEntry::default);
        for (n, seen) in self.seen.iter().enumerate().filter(|(_, s)| s.iter().any(|v| *v > 0)) {
            comma(out, &mut nodes);
            let entry = &mut self.seen_entries[n];
            // Element by element: a node has a few triggers, fewer than a call to `memcmp` costs.
            if !entry.versions.iter().eq(seen) {
                entry.versions.clone_from(seen);
                let text = &mut entry.text;
                text.clear();
                text.extend_from_slice(g.quoted_node(n).as_bytes());
                text.extend_from_slice(b":{");
                let mut triggers = 0;
                for (t, v) in g.nodes[n].triggers.iter().zip(seen).filter(|(_, v)| **v > 0) {
                    comma(text, &mut triggers);
                    text.extend_from_slice(g.channel_key(*t as usize).as_bytes());
                    text.extend_from_slice(number.format(*v).as_bytes());
                }
                text.push(b'}');
            }
            out.extend_from_slice(&entry.text);
        }
        out.extend_from_slice(b"},\"controls\":{");
        let mut controls = 0;
        for (c, control) in self.controls.iter().enumerate() {
            let Some(saved) = control.saved() else { continue };
            comma(out, &mut controls);
            out.extend_from_slice(g.channel_key(g.n_fields() + c).as_bytes());
            saved.write(g, out);
        }
        // Most steps have no `Send`s and no input to keep: one piece of text for all three.
        if self.sends.is_empty() && self.input.is_none() {
            out.extend_from_slice(b"},\"sends\":[],\"input\":null,\"interrupt_seen\":{");
        } else {
            out.extend_from_slice(b"},\"sends\":");
            serde_json::to_writer(&mut *out, &self.sends)?;
            out.extend_from_slice(b",\"input\":");
            serde_json::to_writer(&mut *out, &self.input)?;
            out.extend_from_slice(b",\"interrupt_seen\":{");
        }
        let mut seen = 0;
        for (c, v) in self.interrupt_seen.iter().enumerate().filter(|(_, v)| **v > 0) {
            comma(out, &mut seen);
            out.extend_from_slice(g.channel_key(c).as_bytes());
            out.extend_from_slice(number.format(*v).as_bytes());
        }
        out.push(b'}');
        // Version 1 is not written: the bodies of a state that never changed stay as they were.
        let version = g.prototype.0.version();
        if version != 1 {
            out.extend_from_slice(b",\"version\":");
            out.extend_from_slice(number.format(version).as_bytes());
        }
        out.push(b'}');
        Ok(())
    }
}

/// A comma before every entry of a JSON object but the first.
#[inline]
fn comma(out: &mut Vec<u8>, entries: &mut usize) {
    if *entries > 0 {
        out.push(b',');
    }
    *entries += 1;
}

/// What a checkpoint keeps of an internal channel ([`Control::saved`]).
pub(crate) enum SavedControl {
    /// A branch's or deferred node's flag.
    Flag(bool),
    /// The nodes a join has seen, and a deferred join's flag.
    Seen(Vec<u32>, Option<bool>),
}

impl SavedControl {
    /// Writes it as JSON, nodes by name, as [`Control::restore`] reads it: `true`, `["a","b"]`
    /// or `[["a","b"],true]`.
    fn write<S: State>(&self, g: &GraphInner<S>, out: &mut Vec<u8>) {
        let flag = |out: &mut Vec<u8>, on: bool| out.extend_from_slice(if on { b"true" } else { b"false" });
        match self {
            Self::Flag(on) => flag(out, *on),
            Self::Seen(seen, finished) => {
                if finished.is_some() {
                    out.push(b'[');
                }
                out.push(b'[');
                let mut entries = 0;
                for &n in seen {
                    comma(out, &mut entries);
                    out.extend_from_slice(g.quoted_node(n as usize).as_bytes());
                }
                out.push(b']');
                if let Some(finished) = finished {
                    out.push(b',');
                    flag(out, *finished);
                    out.push(b']');
                }
            }
        }
    }
}
