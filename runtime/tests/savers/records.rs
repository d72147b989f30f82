//! Checkpoint records and writes built for the suite, and what the tests read back from them.

use std::collections::BTreeMap;
use std::sync::Arc;
use weir_runtime::checkpoint::{Blob, ChannelRef, CheckpointRecord, Loaded, PendingWrite, Source, Timestamp};

/// A channel's place in a record: `(channel, version, blob)`.
pub(crate) type Ch<'a> = (&'a str, u64, Option<&'a str>);

pub(crate) fn record(
    thread: &str,
    ns: &str,
    id: &str,
    parent: Option<&str>,
    step: i64,
    channels: &[Ch<'_>],
    blobs: Vec<Blob>,
) -> CheckpointRecord {
    CheckpointRecord {
        thread_id: thread.into(),
        ns: ns.into(),
        id: id.into(),
        parent_id: parent.map(Into::into),
        step,
        source: if step < 0 { Source::Input } else { Source::Loop },
        writes: [Arc::from(format!("node-{step}"))].into(),
        metadata: BTreeMap::from([
            ("step".to_owned(), step.to_string()),
            ("user".to_owned(), "ada".to_owned()),
        ]),
        created_at: Timestamp::from_unix_micros((1_793_527_201 + step) as u64 * 1_000_000),
        channels: channels
            .iter()
            .map(|&(channel, version, blob)| ChannelRef {
                channel: channel.into(),
                version,
                blob: blob.map(Into::into),
            })
            .collect(),
        body: format!("body of {id}").into_bytes(),
        blobs,
    }
}

pub(crate) fn full(channel: &str, bytes: &str) -> Blob {
    Blob {
        channel: channel.into(),
        delta_of: None,
        bytes: bytes.as_bytes().to_vec(),
    }
}

pub(crate) fn delta(channel: &str, of: &str, bytes: &str) -> Blob {
    Blob {
        channel: channel.into(),
        delta_of: Some(of.into()),
        bytes: bytes.as_bytes().to_vec(),
    }
}

pub(crate) fn write(task: &str, path: &str, idx: i64, channel: &str, bytes: &str) -> PendingWrite {
    PendingWrite {
        task_id: task.to_owned(),
        task_path: path.to_owned(),
        idx,
        channel: channel.to_owned(),
        bytes: bytes.as_bytes().to_vec(),
    }
}

pub(crate) fn without_blobs(mut r: CheckpointRecord) -> CheckpointRecord {
    r.blobs.clear();
    r
}

/// The value chains of a loaded checkpoint, as strings.
pub(crate) fn chains(loaded: &Loaded) -> Vec<(String, Vec<String>)> {
    loaded
        .values
        .iter()
        .map(|(c, chain)| {
            (
                c.clone(),
                chain.iter().map(|b| String::from_utf8(b.clone()).unwrap()).collect(),
            )
        })
        .collect()
}

pub(crate) fn ids(records: &[CheckpointRecord]) -> Vec<&str> {
    records.iter().map(|r| &*r.id).collect()
}
