//! Copying a thread (the server's `POST /threads/{id}/copy`): the default of
//! [`Checkpointer::copy_thread`], built on the trait's reads and writes, and the checks every
//! saver's copy makes first.

use super::{Blob, CheckpointRecord, Checkpointer, Loaded, PendingWrite, SaverError};
use std::collections::HashMap;
use std::sync::Arc;

/// The error of a copy into `to`, which already has checkpoints.
pub(crate) fn target_taken(from: &str, to: &str) -> SaverError {
    SaverError::invalid(
        to,
        format!("cannot copy thread `{from}` into it: it already has checkpoints"),
    )
}

/// The error of a copy of `from`, which has no checkpoint.
pub(crate) fn source_missing(from: &str) -> SaverError {
    SaverError::invalid(from, "cannot copy it: it has no checkpoints")
}

/// The error of a copy of a thread onto itself.
pub(crate) fn same_thread(thread: &str) -> SaverError {
    SaverError::invalid(thread, "cannot copy a thread onto itself")
}

/// [`Checkpointer::copy_thread`]'s default: each namespace of `from` read with
/// [`history`](Checkpointer::history), its records stored again under `to` oldest first with
/// [`put_many`](Checkpointer::put_many), then its pending writes with
/// [`put_writes`](Checkpointer::put_writes), task by task.
pub(crate) async fn copy_thread<C: Checkpointer + ?Sized>(saver: &C, from: &str, to: &str) -> Result<(), SaverError> {
    if from == to {
        return Err(same_thread(from));
    }
    if !saver.namespaces(to).await?.is_empty() {
        return Err(target_taken(from, to));
    }
    let namespaces = saver.namespaces(from).await?;
    if namespaces.is_empty() {
        return Err(source_missing(from));
    }
    let to_thread: Arc<str> = to.into();
    for ns in namespaces {
        let mut history = saver.history(from, &ns, None, None).await?;
        history.reverse();
        let mut refs = Refs::new();
        let mut records = Vec::with_capacity(history.len());
        let mut writes = Vec::new();
        for loaded in history {
            let (record, own) = rebuild(loaded, &to_thread, &mut refs)?;
            records.push(record);
            writes.push(own);
        }
        saver.put_many(records, None).await?;
        for (checkpoint, pending) in writes {
            for (task, rows) in by_task(pending) {
                saver.put_writes(to, &ns, &checkpoint, &task, rows).await?;
            }
        }
    }
    Ok(())
}

/// Each channel's blob reference and the length of its chain, by checkpoint id.
type Refs = HashMap<Arc<str>, HashMap<Arc<str>, (Option<Arc<str>>, usize)>>;

/// The record `loaded` reads back, for thread `to`, with the blobs stored under it again: a
/// chain of one is a whole value, a longer one ends with a delta onto the blob its parent holds
/// for the channel (as a run writes it). Returns it with its id and pending writes.
#[allow(clippy::type_complexity)]
fn rebuild(
    loaded: Loaded,
    to: &Arc<str>,
    refs: &mut Refs,
) -> Result<(CheckpointRecord, (Arc<str>, Vec<PendingWrite>)), SaverError> {
    let mut record = loaded.record;
    let parent = record.parent_id.as_ref().and_then(|p| refs.get(p));
    let mut chains = loaded.values.into_iter();
    let mut mine = HashMap::new();
    let mut blobs = Vec::new();
    for r in &record.channels {
        let Some(at) = &r.blob else {
            mine.insert(r.channel.clone(), (None, 0));
            continue;
        };
        let (_, chain) = chains.next().ok_or_else(|| {
            SaverError::corrupt(
                &record.thread_id,
                &record.id,
                format!("no value read for channel `{}`", r.channel),
            )
        })?;
        mine.insert(r.channel.clone(), (Some(at.clone()), chain.len()));
        if at != &record.id {
            continue;
        }
        let delta_of = if chain.len() > 1 {
            match parent.and_then(|p| p.get(&r.channel)) {
                Some((Some(base), len)) if *len + 1 == chain.len() => Some(base.clone()),
                _ => {
                    let detail = format!(
                        "its delta for channel `{}` does not append to its parent's blob, which a copy needs",
                        r.channel
                    );
                    return Err(SaverError::corrupt(&record.thread_id, &record.id, detail));
                }
            }
        } else {
            None
        };
        let bytes = chain.into_iter().last().unwrap_or_default();
        blobs.push(Blob {
            channel: r.channel.clone(),
            delta_of,
            bytes,
        });
    }
    refs.insert(record.id.clone(), mine);
    record.thread_id = to.clone();
    record.blobs = blobs;
    let id = record.id.clone();
    Ok((record, (id, loaded.pending_writes)))
}

/// `writes` grouped by task, each task's in the order read.
fn by_task(writes: Vec<PendingWrite>) -> Vec<(String, Vec<PendingWrite>)> {
    let mut tasks: Vec<(String, Vec<PendingWrite>)> = Vec::new();
    for w in writes {
        match tasks.iter_mut().find(|(t, _)| *t == w.task_id) {
            Some((_, rows)) => rows.push(w),
            None => tasks.push((w.task_id.clone(), vec![w])),
        }
    }
    tasks
}
