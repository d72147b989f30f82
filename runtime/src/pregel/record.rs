//! The loop written as a [`CheckpointRecord`]: the checkpoint component ([`Persist`]) reads a
//! [`StepView`] of the loop, never the loop itself, and keeps its own bookkeeping (which blob
//! holds each field, how far list fields' delta chains go, the last body's text).

use super::body::{BodyRef, SavedSend};
use super::control::Control;
use super::persist::{Chain, Persist};
use super::run::Loop;
use crate::checkpoint::{checkpoint_id_after, Blob, ChannelRef, CheckpointRecord, Source};
use crate::error::Error;
use crate::graph::compile::GraphInner;
use crate::graph::Packet;
use crate::state::State;
use std::sync::Arc;

/// What a checkpoint is written from: the loop after a step, read-only.
pub(crate) struct StepView<'a, S: State> {
    pub(crate) g: &'a GraphInner<S>,
    pub(crate) state: &'a S,
    pub(crate) channels: &'a S::Channels,
    /// One version per channel id (fields, then internal channels); 0 = never written.
    pub(crate) versions: &'a [u64],
    pub(crate) seen: &'a [Vec<u64>],
    pub(crate) controls: &'a [Control],
    pub(crate) sends: &'a [Packet<S>],
    pub(crate) input: Option<&'a S::Update>,
    /// The step the checkpoint follows.
    pub(crate) step: i64,
}

impl<S: State> Loop<S> {
    /// The run's checkpoint component (when it has one) beside a view of the loop to write from.
    pub(crate) fn checkpointing(&mut self) -> (Option<&mut Persist>, StepView<'_, S>) {
        let view = StepView {
            g: &self.g,
            state: &self.state,
            channels: &self.channels,
            versions: &self.versions,
            seen: &self.seen,
            controls: &self.controls,
            sends: &self.sends,
            input: self.input.as_ref(),
            step: self.step - 1,
        };
        (self.persist.on_mut(), view)
    }
}

impl Persist {
    /// The record of the loop as `view` shows it, following this run's last checkpoint.
    pub(crate) fn record<S: State>(
        &mut self,
        view: &StepView<'_, S>,
        source: Source,
        writers: Arc<[Arc<str>]>,
    ) -> Result<CheckpointRecord, Error> {
        // Greater than the head this record will follow, as checkpointers require.
        let (id, created_at) = checkpoint_id_after(self.head.as_deref());
        let (channels, blobs) = self.channel_refs(view, &id)?;
        let body = self.body(view)?;
        Ok(CheckpointRecord {
            thread_id: self.info.thread.clone(),
            ns: self.info.ns.clone(),
            id,
            parent_id: self.current.clone(),
            step: view.step,
            source,
            writes: writers,
            metadata: self.info.metadata.clone(),
            created_at,
            channels,
            body,
            blobs,
        })
    }

    /// Every written channel's reference, and the blobs of the fields that changed since their
    /// last checkpoint (`id` is the new checkpoint's).
    fn channel_refs<S: State>(
        &mut self,
        view: &StepView<'_, S>,
        id: &Arc<str>,
    ) -> Result<(Vec<ChannelRef>, Vec<Blob>), Error> {
        let (g, versions) = (view.g, view.versions);
        let n_fields = g.n_fields();
        // A field is saved when it has a value its last checkpoint did not store.
        let changed = |f: usize, saved: &[u64]| versions[f] != 0 && versions[f] != saved[f];
        // Both lists at their length: the record keeps them as long as it is stored.
        let mut channels = Vec::with_capacity(versions.iter().filter(|v| **v > 0).count());
        let mut blobs = Vec::with_capacity((0..n_fields).filter(|&f| changed(f, &self.saved_versions)).count());
        for (f, &version) in versions[..n_fields].iter().enumerate() {
            if version == 0 {
                continue;
            }
            if changed(f, &self.saved_versions) {
                self.saved_versions[f] = version;
                let blob = self.field_blob(view, f)?;
                self.blobs[f] = blob.as_ref().map(|_| id.clone());
                blobs.extend(blob);
            }
            channels.push(ChannelRef {
                channel: g.channel_names[f].clone(),
                version,
                blob: self.blobs[f].clone(),
            });
        }
        for (cid, &version) in versions.iter().enumerate().skip(n_fields) {
            if version > 0 {
                channels.push(ChannelRef {
                    channel: g.channel_names[cid].clone(),
                    version,
                    blob: None,
                });
            }
        }
        Ok((channels, blobs))
    }

    /// The blob of field `f`, which changed: a list field that only grew since its last blob
    /// (its reducer reported only appends) stores its new items onto that blob while the chain
    /// takes them, any other its whole value (none for a field with no value to store).
    fn field_blob<S: State>(&mut self, view: &StepView<'_, S>, f: usize) -> Result<Option<Blob>, Error> {
        let mark = view.state.append_mark(view.channels, f);
        let name = &view.g.channel_names[f];
        let fail = |e: crate::state::CodecError| Error::checkpoint(&self.info.thread, e.to_string());
        if let (Some(chain), Some(new), Some(prev)) = (self.chains[f], mark, &self.blobs[f]) {
            if chain.mark.rewrites == new.rewrites && new.len >= chain.mark.len {
                let bytes = view.state.save_items(f, chain.mark.len).map_err(fail)?;
                if chain.takes(bytes.len()) {
                    let delta_of = Some(prev.clone());
                    self.chains[f] = Some(Chain {
                        mark: new,
                        delta_bytes: chain.delta_bytes + bytes.len(),
                        links: chain.links + 1,
                        ..chain
                    });
                    return Ok(Some(Blob {
                        channel: name.clone(),
                        delta_of,
                        bytes,
                    }));
                }
            }
        }
        let whole = view.state.save_field(view.channels, f).map_err(fail)?;
        self.chains[f] = mark.map(|m| Chain::whole(m, whole.as_ref().map_or(0, Vec::len)));
        Ok(whole.map(|bytes| Blob {
            channel: name.clone(),
            delta_of: None,
            bytes,
        }))
    }

    /// The record's body: the loop's bookkeeping besides the channel values.
    fn body<S: State>(&mut self, view: &StepView<'_, S>) -> Result<Vec<u8>, Error> {
        let thread = &*self.info.thread;
        // Most steps have no `Send`s: no call to make then (callgrind, checkpoint_memory).
        let sends = if view.sends.is_empty() {
            Vec::new()
        } else {
            saved_sends(view, thread)?
        };
        let input = match view.input {
            Some(input) => Some(serde_json::to_value(input).map_err(|e| Error::checkpoint(thread, e.to_string()))?),
            None => None,
        };
        // Room for a body as long as the last one: one allocation, no growing.
        let mut bytes = Vec::with_capacity(self.body_bytes);
        let mut body = BodyRef {
            g: view.g,
            seen: view.seen,
            seen_entries: &mut self.seen_entries,
            controls: view.controls,
            sends,
            input,
            interrupt_seen: &self.interrupt_seen,
        };
        body.write(&mut bytes)
            .map_err(|e| Error::checkpoint(thread, e.to_string()))?;
        self.body_bytes = bytes.len();
        Ok(bytes)
    }
}

/// The `Send`s for the next step, by node name.
fn saved_sends<S: State>(view: &StepView<'_, S>, thread: &str) -> Result<Vec<SavedSend>, Error> {
    let mut sends = Vec::with_capacity(view.sends.len());
    for s in view.sends {
        let node = view.g.node_name(s.node.0);
        let payload = s
            .job
            .encode()
            .ok_or_else(|| Error::unsaved_send(&node))?
            .map_err(|e| Error::checkpoint(thread, format!("the `Send` to `{node}`: {e}")))?;
        sends.push(SavedSend { node, payload });
    }
    Ok(sends)
}
