//! A loaded checkpoint saved by an older version of the state, brought to the current version
//! before the loop decodes it: its fields and every saved update handed to the state's
//! migration steps ([`State::migrate`]), then put back where the loop reads them, with the
//! bookkeeping keyed by field name (versions seen, interrupts' versions) renamed alike.

use super::body::Body;
use super::persist::WRITES;
use crate::checkpoint::{ChannelRef, Loaded};
use crate::error::Error;
use crate::state::migrate::SavedField;
use crate::state::{Migration, State};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Whether a checkpoint channel is one of the loop's own (a branch or a join), not a field.
pub(super) fn is_internal(channel: &str) -> bool {
    channel.starts_with("branch:to:") || channel.starts_with("join:")
}

/// Brings `loaded` and its `body` from the version that saved them to `state`'s. Returns the
/// names of the fields a step changed: the next checkpoint saves them whole.
///
/// # Errors
/// A checkpoint of a newer version than `state`'s, a version no step leads from, or a step
/// that fails; each names the thread, the checkpoint and both versions.
pub(super) fn migrate<S: State>(
    state: &S,
    loaded: &mut Loaded,
    body: &mut Body,
    thread: &str,
) -> Result<BTreeSet<String>, Error> {
    let (saved, current) = (body.version, state.version());
    if saved == current {
        return Ok(BTreeSet::new());
    }
    let checkpoint = loaded.record.id.clone();
    let kind = short_type_name::<S>();
    if saved > current || saved == 0 {
        return Err(Error::checkpoint(
            thread,
            format!(
                "checkpoint `{checkpoint}` was saved by version {saved} of the state `{kind}`, but this \
                 program's `{kind}` is version {current}: it cannot read a newer version (run the program \
                 that saved it, or go on from an earlier checkpoint)"
            ),
        ));
    }
    let mut updates = Updates::take(state, loaded, body, thread, &checkpoint)?;
    let fields = loaded
        .record
        .channels
        .iter()
        .filter(|r| !is_internal(&r.channel))
        .map(|r| SavedField {
            name: r.channel.to_string(),
            chain: None,
            version: Some(r.version),
            blob: r.blob.clone(),
        })
        .collect::<Vec<_>>();
    let mut m = Migration::new(fields, std::mem::take(&mut updates.objects));
    let mut values: BTreeMap<String, Vec<Vec<u8>>> = std::mem::take(&mut loaded.values).into_iter().collect();
    for f in &mut m.fields {
        f.chain = values.remove(&f.name);
    }
    for from in saved..current {
        state.migrate(from, &mut m).map_err(|e| {
            Error::checkpoint(
                thread,
                format!(
                    "checkpoint `{checkpoint}` was saved by version {saved} of the state `{kind}`, this \
                     program's is version {current}; migrating it from version {from} to {}: {e}",
                    from + 1
                ),
            )
        })?;
    }
    // The fields, as the loop reads them: internal channels as they were, then each field.
    let internal = loaded.record.channels.drain(..).filter(|r| is_internal(&r.channel));
    let mut channels: Vec<ChannelRef> = internal.collect();
    for f in &m.fields {
        channels.push(ChannelRef {
            channel: Arc::from(f.name.as_str()),
            // A field added with a value counts as written once; it, and every field a step
            // changed, is saved whole by the next checkpoint, whatever its blob here.
            version: f.version.unwrap_or(1),
            blob: f.blob.clone(),
        });
        if let Some(chain) = &f.chain {
            loaded.values.push((f.name.clone(), chain.clone()));
        }
    }
    loaded.record.channels = channels;
    for (from, to) in &m.renames {
        for seen in body.seen.values_mut() {
            if let Some(v) = seen.remove(from) {
                seen.insert(to.clone(), v);
            }
        }
        if let Some(v) = body.interrupt_seen.remove(from) {
            body.interrupt_seen.insert(to.clone(), v);
        }
    }
    updates.objects = std::mem::take(&mut m.updates);
    updates.put_back(state, loaded, body, thread)?;
    body.version = current;
    Ok(m.touched)
}

/// Where a saved update came from, to put it back there.
enum From {
    /// The `update` of the pending write at this index of [`Loaded::pending_writes`].
    Pending(usize, Map<String, Value>),
    /// The body's kept input.
    Input,
}

/// Every saved update of a checkpoint, as JSON objects a migration edits.
struct Updates {
    objects: Vec<Map<String, Value>>,
    from: Vec<From>,
}

impl Updates {
    /// Takes the updates out of the pending writes (a task's saved writes, the null task's
    /// commands) and the body's input.
    fn take<S: State>(
        state: &S,
        loaded: &Loaded,
        body: &mut Body,
        thread: &str,
        checkpoint: &str,
    ) -> Result<Self, Error> {
        let mut out = Updates {
            objects: Vec::new(),
            from: Vec::new(),
        };
        for (i, w) in loaded
            .pending_writes
            .iter()
            .enumerate()
            .filter(|(_, w)| w.channel == WRITES)
        {
            let bad = |m: &str| {
                Error::checkpoint(
                    thread,
                    format!(
                        "checkpoint `{checkpoint}`: the saved writes of task `{}` {m}",
                        w.task_id
                    ),
                )
            };
            let Value::Object(mut task) =
                serde_json::from_slice(&w.bytes).map_err(|e| bad(&format!("do not decode: {e}")))?
            else {
                return Err(bad("are not an object"));
            };
            let Some(update) = task.remove("update") else {
                return Err(bad("have no update"));
            };
            let update = state
                .update_fields(body.version, update)
                .map_err(|e| bad(&e.to_string()))?;
            out.objects.push(update);
            out.from.push(From::Pending(i, task));
        }
        if let Some(input) = body.input.take().filter(|i| !i.is_null()) {
            let input = state
                .update_fields(body.version, input)
                .map_err(|e| Error::checkpoint(thread, format!("checkpoint `{checkpoint}`: the saved input: {e}")))?;
            out.objects.push(input);
            out.from.push(From::Input);
        }
        Ok(out)
    }

    /// Puts the migrated updates back where [`take`](Self::take) found them.
    fn put_back<S: State>(self, state: &S, loaded: &mut Loaded, body: &mut Body, thread: &str) -> Result<(), Error> {
        for (update, from) in self.objects.into_iter().zip(self.from) {
            let update = state.update_from_fields(update);
            match from {
                From::Pending(i, mut task) => {
                    task.insert("update".to_owned(), update);
                    loaded.pending_writes[i].bytes =
                        serde_json::to_vec(&task).map_err(|e| Error::checkpoint(thread, e.to_string()))?;
                }
                From::Input => body.input = Some(update),
            }
        }
        Ok(())
    }
}

/// `S`'s name without its module path (`Chat`, not `app::model::Chat`).
fn short_type_name<S>() -> &'static str {
    let full = std::any::type_name::<S>();
    let end = full.find('<').unwrap_or(full.len());
    full[..end].rsplit("::").next().unwrap_or(full)
}
