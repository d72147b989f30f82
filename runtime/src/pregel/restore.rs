//! Reading a checkpoint back into a loop: channel values, versions, the body's bookkeeping, and
//! the pending writes of the step that did not complete; and a task's saved writes back into its
//! command.

use super::body::Body;
use super::command::NULL_TASK;
use super::migrate::{is_internal, migrate};
use super::persist::{
    Chain, Checkpointing, Persist, SavedGoto, SavedTask, TaskRecord, ERROR, INTERRUPT, RESUME, WRITES,
};
use super::run::Loop;
use crate::checkpoint::{CheckpointRecord, Loaded, PendingWrite};
use crate::error::Error;
use crate::graph::{Command, Goto, NodeId};
use crate::state::{State, Warm};
use std::collections::BTreeMap;
use std::sync::Arc;

/// How a checkpoint's values are decoded.
enum Decode<S: State> {
    /// Each from its whole chain (a read by `get`).
    Whole,
    /// Through the values a reader held (a read by `get_holding`), or a new memo of them.
    Warm(Option<Warm<S>>),
}

impl<S: State> Loop<S> {
    /// Restores the loop's state from a loaded checkpoint; keeps its pending writes.
    ///
    /// # Errors
    /// A run without a checkpointer has nothing to restore into; a checkpoint that does not fit
    /// this graph's state is an error naming the thread and the checkpoint.
    pub(crate) fn restore(&mut self, loaded: Loaded) -> Result<(), Error> {
        self.restore_from(loaded, Decode::Whole)
    }

    /// [`restore`](Self::restore) for a run that goes on from the checkpoint, read for a reader
    /// holding `warm` (`Checkpointer::get_holding`): the values come through it, decoding only
    /// what the checkpoint added to the chains held, and it is kept with them for the next run
    /// (`None`: through a new one).
    pub(crate) fn restore_warm(&mut self, loaded: Loaded, warm: Option<Warm<S>>) -> Result<(), Error> {
        self.restore_from(loaded, Decode::Warm(warm))
    }

    fn restore_from(&mut self, loaded: Loaded, decode: Decode<S>) -> Result<(), Error> {
        // The checkpoint component is taken out while the loop is filled in, then put back.
        let Checkpointing::On(mut p) = std::mem::replace(&mut self.persist, Checkpointing::Off) else {
            return Err(Error::config("restoring a checkpoint needs a checkpointer"));
        };
        let restored = self.restore_with(&mut p, loaded, decode);
        self.persist = Checkpointing::On(p);
        restored
    }

    fn restore_with(&mut self, p: &mut Persist, mut loaded: Loaded, decode: Decode<S>) -> Result<(), Error> {
        let at = Bad {
            thread: p.info.thread.clone(),
            checkpoint: loaded.record.id.clone(),
        };
        if matches!(decode, Decode::Whole) && !loaded.continued.is_empty() {
            return Err(at.error(format!(
                "checkpoint `{}` was read for a reader holding the values of {:?}: its chains are not whole",
                at.checkpoint, loaded.continued
            )));
        }
        let mut body: Body = serde_json::from_slice(&loaded.record.body)
            .map_err(|e| at.error(format!("checkpoint `{}` is not a weir checkpoint: {e}", at.checkpoint)))?;
        let migrated = migrate(&self.g.prototype.0, &mut loaded, &mut body, &at.thread)?;
        let record = loaded.record;
        match decode {
            Decode::Warm(warm) => {
                let mut warm = self.restore_channels_warm(p, &record, loaded.values, &loaded.continued, warm, &at)?;
                // What a migration made is not what the blobs hold: never named to the saver.
                for name in &migrated {
                    if let Some(&c) = self.g.channel_ids.get(name.as_str()) {
                        warm.unname(c as usize);
                    }
                }
                *self.g.warm.lock().unwrap_or_else(|e| e.into_inner()) = Some(warm);
            }
            Decode::Whole => self.restore_channels(p, &record, loaded.values, &at)?,
        }
        // A field a migration changed is saved whole in the next checkpoint, which records the
        // current version: the blobs it was read from are the older version's.
        for name in &migrated {
            if let Some(&c) = self.g.channel_ids.get(name.as_str()) {
                let c = c as usize;
                p.saved_versions[c] = 0;
                p.blobs[c] = None;
                p.chains[c] = None;
            }
        }
        self.restore_body(p, body, &at)?;
        let (null, tasks): (Vec<PendingWrite>, Vec<PendingWrite>) =
            loaded.pending_writes.into_iter().partition(|w| w.task_id == NULL_TASK);
        p.null = null_writes(null);
        p.pending = pending_of(tasks, &at)?;
        let step = record.step.checked_add(1).ok_or_else(|| {
            at.error(format!(
                "checkpoint `{}` has step {}, out of range",
                record.id, record.step
            ))
        })?;
        p.current = Some(record.id.clone());
        self.step = step;
        self.stop = step.saturating_add(self.limit).saturating_add(1);
        p.record = Some(record);
        // Every node is a candidate on the first tick after a load.
        self.updated = (0..self.versions.len() as u32).collect();
        self.recount();
        Ok(())
    }

    /// Each channel's version, and each field's value from its chain of blobs.
    fn restore_channels(
        &mut self,
        p: &mut Persist,
        record: &CheckpointRecord,
        values: Vec<(String, Vec<Vec<u8>>)>,
        at: &Bad,
    ) -> Result<(), Error> {
        let g = self.g.clone();
        let n_fields = g.n_fields();
        let values: BTreeMap<String, Vec<Vec<u8>>> = values.into_iter().collect();
        let state = Arc::make_mut(&mut self.state);
        for r in &record.channels {
            let Some(&c) = g.channel_ids.get(&*r.channel) else {
                if !is_internal(&r.channel) {
                    return Err(at.error(format!(
                        "checkpoint `{}` has field `{}`, which this state does not have: it was written by another state type",
                        record.id, r.channel
                    )));
                }
                continue;
            };
            let c = c as usize;
            self.versions[c] = r.version;
            if c < n_fields {
                let chain = values.get(&*r.channel).map(Vec::as_slice).unwrap_or_default();
                state
                    .load_field(&mut self.channels, c, chain)
                    .map_err(|e| at.error(format!("checkpoint `{}`: {e}", record.id)))?;
                p.blobs[c] = r.blob.clone();
                p.saved_versions[c] = r.version;
                p.chains[c] = state.append_mark(&self.channels, c).map(|mark| Chain {
                    mark,
                    base_bytes: chain.first().map_or(0, Vec::len),
                    delta_bytes: chain.iter().skip(1).map(Vec::len).sum(),
                    links: chain.len().saturating_sub(1),
                });
            }
        }
        Ok(())
    }

    /// [`restore_channels`](Self::restore_channels) through `warm`: the same versions and
    /// values, decoding only the links `continued` chains gained. Returns the values, for the
    /// graph's next run.
    fn restore_channels_warm(
        &mut self,
        p: &mut Persist,
        record: &CheckpointRecord,
        values: Vec<(String, Vec<Vec<u8>>)>,
        continued: &[String],
        warm: Option<Warm<S>>,
        at: &Bad,
    ) -> Result<Warm<S>, Error> {
        let g = self.g.clone();
        let n_fields = g.n_fields();
        let mut values: BTreeMap<String, Vec<Vec<u8>>> = values.into_iter().collect();
        let mut warm =
            warm.unwrap_or_else(|| Warm::new(p.info.thread.clone(), p.info.ns.clone(), g.prototype.clone(), n_fields));
        let bad = |e| at.error(format!("checkpoint `{}`: {e}", record.id));
        let mut present = vec![false; n_fields];
        for r in &record.channels {
            let Some(&c) = g.channel_ids.get(&*r.channel) else {
                if !is_internal(&r.channel) {
                    return Err(at.error(format!(
                        "checkpoint `{}` has field `{}`, which this state does not have: it was written by another state type",
                        record.id, r.channel
                    )));
                }
                continue;
            };
            let c = c as usize;
            self.versions[c] = r.version;
            if c >= n_fields {
                continue;
            }
            p.blobs[c] = r.blob.clone();
            p.saved_versions[c] = r.version;
            // A value a migration added has no blob.
            let chain = values.remove(&*r.channel);
            if r.blob.is_none() && chain.is_none() {
                continue;
            }
            present[c] = true;
            let continues = continued.iter().any(|name| **name == *r.channel);
            let sizes = warm
                .bring(c, &r.channel, r.blob.as_ref(), &chain.unwrap_or_default(), continues)
                .map_err(bad)?;
            let (state, channels) = warm.values();
            p.chains[c] = state.append_mark(channels, c).map(|mark| Chain {
                mark,
                base_bytes: sizes.base_bytes,
                delta_bytes: sizes.delta_bytes,
                links: sizes.links,
            });
        }
        for (c, present) in present.into_iter().enumerate() {
            if !present {
                warm.clear(c).map_err(bad)?;
            }
        }
        let (state, channels) = warm.values();
        self.state = Arc::new(state.clone());
        self.channels = channels.clone();
        Ok(warm)
    }

    /// The body's bookkeeping: internal channels, versions seen, `Send`s, the input, and the
    /// versions interrupts have seen.
    fn restore_body(&mut self, p: &mut Persist, body: Body, at: &Bad) -> Result<(), Error> {
        let g = self.g.clone();
        let n_fields = g.n_fields();
        for (name, saved) in &body.controls {
            if let Some(&c) = g.channel_ids.get(name) {
                let Some(c) = (c as usize).checked_sub(n_fields) else {
                    return Err(at.error(format!(
                        "checkpoint `{}` keeps field `{name}` among its internal channels",
                        at.checkpoint
                    )));
                };
                self.controls[c] = self.controls[c]
                    .restore(saved, &g.node_ids)
                    .map_err(|e| at.error(format!("channel `{name}`: {e}")))?;
            }
        }
        for (node, seen) in &body.seen {
            let Some(&n) = g.node_ids.get(node) else { continue };
            for (k, t) in g.nodes[n as usize].triggers.iter().enumerate() {
                if let Some(v) = seen.get(&*g.channel_names[*t as usize]) {
                    self.seen[n as usize][k] = *v;
                }
            }
        }
        for s in body.sends {
            let n = *g
                .node_ids
                .get(&s.node)
                .ok_or_else(|| at.error(format!("a saved `Send` to unknown node `{}`", s.node)))?;
            let decode = g.decoders[n as usize]
                .as_ref()
                .ok_or_else(|| at.error(format!("a saved `Send` to `{}`, which does not take `Send`s", s.node)))?;
            self.sends
                .push(decode(s.payload).map_err(|e| at.error(format!("the `Send` to `{}`: {e}", s.node)))?);
        }
        if let Some(input) = body.input {
            self.input = Some(serde_json::from_value(input).map_err(|e| at.error(format!("the saved input: {e}")))?);
        }
        for (name, v) in body.interrupt_seen {
            if let Some(&c) = g.channel_ids.get(&name) {
                p.interrupt_seen[c as usize] = v;
            }
        }
        Ok(())
    }

    /// A task's command, from its saved writes, and whether its routers' destinations are in it.
    pub(crate) fn load_task(&self, bytes: &[u8]) -> Result<(Command<S>, bool), Error> {
        let g = &self.g;
        let thread = self.persist.thread();
        let bad = |m: String| Error::checkpoint(thread, m);
        let saved: SavedTask<S::Update> =
            serde_json::from_slice(bytes).map_err(|e| bad(format!("a task's saved writes: {e}")))?;
        let mut goto = Vec::new();
        for s in saved.goto {
            goto.push(match s {
                SavedGoto::Node(n) => Goto::Node(NodeId::from_index(
                    *g.node_ids.get(&n).ok_or_else(|| bad(format!("unknown node `{n}`")))? as usize,
                )),
                SavedGoto::End => Goto::End,
                SavedGoto::Send { node, payload } => {
                    let n = *g
                        .node_ids
                        .get(&node)
                        .ok_or_else(|| bad(format!("unknown node `{node}`")))?;
                    let decode = g.decoders[n as usize]
                        .as_ref()
                        .ok_or_else(|| bad(format!("`{node}` takes no `Send`s")))?;
                    Goto::Send(decode(payload).map_err(|e| bad(format!("the `Send` to `{node}`: {e}")))?)
                }
            });
        }
        let command = Command {
            update: saved.update,
            goto,
            parent: None,
        };
        Ok((command, saved.routed))
    }
}

/// Where a checkpoint being restored came from, for its errors.
struct Bad {
    thread: Arc<str>,
    checkpoint: Arc<str>,
}

impl Bad {
    fn error(&self, message: String) -> Error {
        Error::checkpoint(&self.thread, message)
    }
}

/// The null task's saved commands, in the order saved.
fn null_writes(mut rows: Vec<PendingWrite>) -> Vec<Vec<u8>> {
    rows.sort_by_key(|w| w.idx);
    rows.into_iter()
        .filter(|w| w.channel == WRITES)
        .map(|w| w.bytes)
        .collect()
}

/// The pending writes of a checkpoint, by task: saved writes, an error, a question and answers.
fn pending_of(rows: Vec<PendingWrite>, at: &Bad) -> Result<BTreeMap<String, TaskRecord>, Error> {
    let mut pending: BTreeMap<String, TaskRecord> = BTreeMap::new();
    for w in rows {
        let undecodable = |what: &str, e: serde_json::Error| {
            at.error(format!(
                "checkpoint `{}`: the saved {what} of task `{}` does not decode: {e}",
                at.checkpoint, w.task_id
            ))
        };
        let entry = pending.entry(w.task_id.clone()).or_default();
        match &*w.channel {
            WRITES => entry.writes = Some(w.bytes),
            ERROR => entry.error = Some(String::from_utf8_lossy(&w.bytes).into_owned()),
            INTERRUPT => {
                entry.question = Some(serde_json::from_slice(&w.bytes).map_err(|e| undecodable("question", e))?);
            }
            RESUME => entry.answers = serde_json::from_slice(&w.bytes).map_err(|e| undecodable("answers", e))?,
            crate::func::CALL => entry.call = Some(w.bytes),
            _ => {}
        }
    }
    Ok(pending)
}
