//! The checks every saver makes before storing anything, so all of them refuse the same input,
//! and the rebuilding of value chains every saver's `get` shares.

use super::{CheckpointRecord, Held, MadeByRun, PendingWrite, SaverError};
use std::collections::HashSet;
use std::sync::Arc;

/// A stored blob a record of a batch builds on: the base of one of its deltas or the blob of one
/// of its unchanged channels. The saver checks, in its transaction, that each is stored, so a
/// stored checkpoint can always be rebuilt.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Base<'r> {
    /// The record's index in the batch.
    pub(crate) record: usize,
    /// The channel.
    pub(crate) channel: &'r str,
    /// The checkpoint the blob is stored under.
    pub(crate) at: &'r str,
}

/// Checks that `record` holds together on its own: its ids, its channels' blob references, its
/// blobs and deltas.
fn holds_together(record: &CheckpointRecord) -> Result<(), SaverError> {
    let thread = &*record.thread_id;
    if record.id.is_empty() {
        return Err(SaverError::invalid(thread, "the checkpoint id is empty"));
    }
    if record.parent_id.as_deref() == Some(&*record.id) {
        return Err(SaverError::invalid(
            thread,
            format!("checkpoint `{}` is its own parent", record.id),
        ));
    }
    if let Some(twice) = repeated(record.channels.iter().map(|c| &*c.channel)) {
        return Err(SaverError::invalid(
            thread,
            format!("channel `{twice}` appears twice in checkpoint `{}`", record.id),
        ));
    }
    for c in &record.channels {
        let here = c.blob.as_ref().is_some_and(|at| same(at, &record.id));
        if here && !record.blobs.iter().any(|b| same(&b.channel, &c.channel)) {
            return Err(SaverError::invalid(
                thread,
                format!(
                    "channel `{}` points at a blob of checkpoint `{}`, which has none for it",
                    c.channel, record.id
                ),
            ));
        }
    }
    if let Some(twice) = repeated(record.blobs.iter().map(|b| &*b.channel)) {
        return Err(SaverError::invalid(
            thread,
            format!("two blobs for channel `{twice}` in checkpoint `{}`", record.id),
        ));
    }
    for b in &record.blobs {
        let referenced = record
            .channels
            .iter()
            .any(|c| same(&c.channel, &b.channel) && c.blob.as_ref().is_some_and(|at| same(at, &record.id)));
        if !referenced {
            return Err(SaverError::invalid(
                thread,
                format!(
                    "the blob for channel `{}` of checkpoint `{}` is not the channel's value there",
                    b.channel, record.id
                ),
            ));
        }
        if let Some(base) = &b.delta_of {
            if same(base, &record.id) {
                return Err(SaverError::invalid(
                    thread,
                    format!(
                        "the delta for channel `{}` of checkpoint `{}` extends itself",
                        b.channel, record.id
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Hands `need` the stored blobs `record` builds on, as `(channel, checkpoint id)`: the bases of
/// its deltas, then the blobs of its unchanged channels.
fn bases<'r>(record: &'r CheckpointRecord, mut need: impl FnMut(&'r str, &'r str)) {
    for b in &record.blobs {
        if let Some(base) = &b.delta_of {
            need(&b.channel, base);
        }
    }
    for c in &record.channels {
        match &c.blob {
            Some(at) if !same(at, &record.id) => need(&c.channel, at),
            _ => {}
        }
    }
}

/// The checks of a put of `records`: [`batch`], or [`made`] when a run made them.
pub(crate) fn put<'r>(
    records: &'r [CheckpointRecord],
    expected: Option<&str>,
    made: Option<MadeByRun>,
) -> Result<Vec<Base<'r>>, SaverError> {
    match made {
        Some(proof) => self::made(records, proof, expected),
        None => batch(records, expected),
    }
}

/// Checks a batch for [`Checkpointer::put_many`](super::Checkpointer::put_many) that is to follow
/// `expected` (the head the caller saw): every record holds together ([`holds_together`]), all
/// are of the first one's thread and namespace, no id comes twice (a conflict, as for an id
/// already stored) and each id is greater than the one it follows (`expected`, then the record
/// before it). Returns the blobs the records build on that the batch does not store itself, in
/// record order: those must be stored already.
///
/// A saver that then finds its head at `expected` knows every stored id is less than the
/// batch's: none is taken, and the head stays the greatest id.
fn batch<'r>(records: &'r [CheckpointRecord], expected: Option<&str>) -> Result<Vec<Base<'r>>, SaverError> {
    let Some(first) = records.first() else {
        return Ok(Vec::new());
    };
    if let Some(twice) = repeated(records.iter().map(|r| &*r.id)) {
        let detail = format!("checkpoint `{twice}` already exists");
        return Err(SaverError::conflict(&first.thread_id, &first.ns, detail));
    }
    follows(records, expected)?;
    for r in records {
        if !same(&r.thread_id, &first.thread_id) || !same(&r.ns, &first.ns) {
            return Err(SaverError::invalid(
                &first.thread_id,
                format!(
                    "checkpoint `{}` of thread `{}` (namespace `{}`) was handed in with checkpoints of thread `{}` (namespace `{}`)",
                    r.id, r.thread_id, r.ns, first.thread_id, first.ns
                ),
            ));
        }
        holds_together(r)?;
    }
    Ok(needed(records))
}

/// [`batch`] for records a run made ([`MadeByRun`]): they hold together and share a thread and
/// namespace by construction, so only their places after `expected` are checked (a debug build
/// checks the rest too, and fails loudly), and the stored blobs they build on returned.
fn made<'r>(
    records: &'r [CheckpointRecord],
    _: MadeByRun,
    expected: Option<&str>,
) -> Result<Vec<Base<'r>>, SaverError> {
    follows(records, expected)?;
    debug_assert!(
        batch(records, expected).is_ok(),
        "a run made records that do not hold together: {:?}",
        batch(records, expected)
    );
    Ok(needed(records))
}

/// The stored blobs `records` build on that they do not store themselves, in record order.
fn needed(records: &[CheckpointRecord]) -> Vec<Base<'_>> {
    let mut needed = Vec::new();
    for (i, r) in records.iter().enumerate() {
        bases(r, |channel, at| {
            if !stored_earlier(&records[..i], channel, at) {
                needed.push(Base { record: i, channel, at });
            }
        });
    }
    needed
}

/// Checks that each id of `records` is greater than the one it follows: `expected`, then the
/// record before it.
fn follows(records: &[CheckpointRecord], expected: Option<&str>) -> Result<(), SaverError> {
    let before = expected.into_iter().chain(records.iter().map(|r| &*r.id));
    let after = records.iter().skip(usize::from(expected.is_none()));
    match before.zip(after).find(|(before, r)| &*r.id <= *before) {
        Some((before, r)) => Err(SaverError::invalid(
            &r.thread_id,
            format!(
                "checkpoint `{}` is not newer than `{before}`, the checkpoint it follows (ids of a thread increase)",
                r.id
            ),
        )),
        None => Ok(()),
    }
}

/// Whether `base`'s blob for `channel` is one of the blobs of `earlier`, the records stored
/// before in the same batch.
fn stored_earlier(earlier: &[CheckpointRecord], channel: &str, base: &str) -> bool {
    earlier
        .iter()
        .rev()
        .find(|r| &*r.id == base)
        .is_some_and(|r| r.blobs.iter().any(|b| &*b.channel == channel))
}

/// Whether two names or ids are the same: at once when they share their allocation (a runtime's
/// record shares its id and channel names), else by their text.
fn same(a: &Arc<str>, b: &Arc<str>) -> bool {
    Arc::ptr_eq(a, b) || a == b
}

/// A name that comes twice, if any: pairwise for a few names (no allocation), sorted for more.
fn repeated<'a>(names: impl ExactSizeIterator<Item = &'a str> + Clone) -> Option<&'a str> {
    if names.len() <= 16 {
        return names
            .clone()
            .enumerate()
            .find(|(i, a)| names.clone().skip(i + 1).any(|b| b == *a))
            .map(|(_, a)| a);
    }
    let mut names: Vec<&str> = names.collect();
    names.sort_unstable();
    names.windows(2).find(|w| w[0] == w[1]).map(|w| w[0])
}

/// The error for a record that builds on a blob that is not stored: `(channel, at)` came from
/// [`bases`].
pub(crate) fn missing_base(record: &CheckpointRecord, channel: &str, at: &str) -> SaverError {
    let is_delta = record
        .blobs
        .iter()
        .any(|b| &*b.channel == channel && b.delta_of.as_deref() == Some(at));
    let what = if is_delta { "the delta for" } else { "the value of" };
    let verb = if is_delta { "extends" } else { "is stored under" };
    SaverError::invalid(
        &record.thread_id,
        format!(
            "{what} channel `{channel}` of checkpoint `{}` {verb} checkpoint `{at}`, which stores no value for it",
            record.id
        ),
    )
}

/// Checks a batch of one task's pending writes.
pub(crate) fn writes(thread: &str, checkpoint: &str, task_id: &str, writes: &[PendingWrite]) -> Result<(), SaverError> {
    let mut seen = HashSet::new();
    for w in writes {
        if w.task_id != task_id {
            return Err(SaverError::invalid(
                thread,
                format!(
                    "a write of task `{}` was handed in as a write of task `{task_id}`",
                    w.task_id
                ),
            ));
        }
        if !seen.insert(w.idx) {
            return Err(SaverError::invalid(
                thread,
                format!(
                    "task `{task_id}` has two writes with index {} on checkpoint `{checkpoint}`",
                    w.idx
                ),
            ));
        }
    }
    Ok(())
}

/// The error for writes against a checkpoint that is not stored.
pub(crate) fn unknown_checkpoint(thread: &str, ns: &str, checkpoint: &str) -> SaverError {
    let ns = if ns.is_empty() {
        String::new()
    } else {
        format!(" (namespace `{ns}`)")
    };
    SaverError::invalid(
        thread,
        format!("no checkpoint `{checkpoint}`{ns} to keep pending writes against"),
    )
}

/// Sorts pending writes in the order [`Loaded::pending_writes`](super::Loaded) promises.
pub(crate) fn sort_writes(writes: &mut [PendingWrite]) {
    writes.sort_by(|a, b| (&a.task_path, &a.task_id, a.idx).cmp(&(&b.task_path, &b.task_id, b.idx)));
}

/// A stored blob: what it extends, and its bytes.
pub(crate) type Link = (Option<String>, Vec<u8>);

/// Value chains per channel, as in [`Loaded::values`](super::Loaded).
pub(crate) type Values = Vec<(String, Vec<Vec<u8>>)>;

/// Rebuilds the value chains of `record`'s channels, as [`Loaded::values`](super::Loaded) holds
/// them, fetching each blob by `(checkpoint id, channel)`; a missing link is corruption. For a
/// reader holding the values in `held`, a chain that reaches the blob the reader holds stops
/// there, and its channel is named among the continued ones (the second item), as
/// [`Loaded::continued`](super::Loaded) says. Every saver's `get` and `get_holding` go through it.
pub(crate) fn assemble(
    record: &CheckpointRecord,
    held: &[Held],
    mut fetch: impl FnMut(&str, &str) -> Result<Option<Link>, SaverError>,
) -> Result<(Values, Vec<String>), SaverError> {
    let mut values = Vec::new();
    let mut continued = Vec::new();
    for c in &record.channels {
        let Some(mut at) = c.blob.as_deref().map(str::to_owned) else {
            continue;
        };
        let holds = held.iter().find(|h| h.channel == c.channel).map(|h| &*h.blob);
        let mut chain = Vec::new();
        // A chain a run wrote has at most `MAX_CHAIN` deltas; past that, the links are checked
        // for a loop, which only damaged rows make (and which would never end).
        let mut visited: Option<HashSet<String>> = None;
        let mut reached = holds == Some(at.as_str());
        while !reached {
            let Some((delta_of, bytes)) = fetch(&at, &c.channel)? else {
                return Err(broken_chain(&record.thread_id, &record.id, &c.channel, &at));
            };
            chain.push(bytes);
            let Some(base) = delta_of else { break };
            if chain.len() > crate::pregel::MAX_CHAIN {
                let visited = visited.get_or_insert_with(HashSet::new);
                if !visited.insert(at) {
                    return Err(SaverError::corrupt(
                        &record.thread_id,
                        &record.id,
                        format!(
                            "the value of channel `{}` is a chain of deltas that loops back to checkpoint `{base}`",
                            c.channel
                        ),
                    ));
                }
            }
            reached = holds == Some(base.as_str());
            at = base;
        }
        chain.reverse();
        if reached {
            continued.push(c.channel.to_string());
        }
        values.push((c.channel.to_string(), chain));
    }
    Ok((values, continued))
}

/// The error for a channel whose blob chain is broken.
fn broken_chain(thread: &str, checkpoint: &str, channel: &str, missing: &str) -> SaverError {
    SaverError::corrupt(
        thread,
        checkpoint,
        format!(
            "the value of channel `{channel}` needs the blob stored under checkpoint `{missing}`, which is missing"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::{assemble, repeated};
    use crate::checkpoint::{ChannelRef, CheckpointRecord, Source, Timestamp};

    /// Found by the `sqlite_rows` fuzz target: a damaged row whose delta names itself as its
    /// base made `get` build an endless chain until the process ran out of memory.
    #[test]
    fn a_chain_of_deltas_that_loops_is_corruption_not_an_endless_read() {
        let record = CheckpointRecord {
            thread_id: "t".into(),
            ns: "".into(),
            id: "c2".into(),
            parent_id: None,
            step: 0,
            source: Source::Loop,
            writes: Vec::new().into(),
            metadata: Default::default(),
            created_at: Timestamp::now(),
            channels: vec![ChannelRef {
                channel: "notes".into(),
                version: 1,
                blob: Some("c2".into()),
            }],
            body: Vec::new(),
            blobs: Vec::new(),
        };
        // c2's delta extends c1's, whose delta extends c2's.
        let err = assemble(&record, &[], |at, _| {
            let base = if at == "c2" { "c1" } else { "c2" };
            Ok(Some((Some(base.to_owned()), b"[1]".to_vec())))
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains("chain of deltas that loops back"), "{err}");
        // A chain longer than a run writes, which ends, is still read whole.
        let n = crate::pregel::MAX_CHAIN + 10;
        let mut long = record.clone();
        long.channels[0].blob = Some(format!("c{n}").into());
        let values = assemble(&long, &[], |at, _| {
            let k: usize = at.trim_start_matches('c').parse().unwrap();
            Ok(Some(((k > 0).then(|| format!("c{}", k - 1)), b"[1]".to_vec())))
        })
        .unwrap();
        assert_eq!(values.0[0].1.len(), n + 1);
    }

    #[test]
    fn repeated_finds_a_twice_named_channel_among_few_and_many() {
        assert_eq!(repeated(["a", "b", "c"].into_iter()), None);
        assert_eq!(repeated(["a", "b", "a"].into_iter()), Some("a"));
        let many: Vec<String> = (0..40).map(|i| format!("f{i}")).collect();
        assert_eq!(repeated(many.iter().map(String::as_str)), None);
        let mut twice = many.clone();
        twice.push("f7".to_owned());
        assert_eq!(repeated(twice.iter().map(String::as_str)), Some("f7"));
    }
}
