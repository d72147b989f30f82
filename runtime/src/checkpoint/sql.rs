//! What the SQL savers share: the row format of a checkpoint and the rebuilding of value chains.
//!
//! A checkpoint row keeps `writes` and `metadata` as JSON text (so a later `list` filter can use
//! the database's JSON functions) and `channels` as a compact JSON array of
//! `[channel, version, blob]` triples; `body` and blob bytes are stored as they are.

use super::{check, ChannelRef, CheckpointRecord, SaverError, Source};
use std::collections::BTreeMap;

/// The text columns of a checkpoint row.
pub(crate) struct Encoded {
    pub(crate) writes: String,
    pub(crate) metadata: String,
    pub(crate) channels: String,
}

pub(crate) fn encode(record: &CheckpointRecord) -> Encoded {
    let channels: Vec<(&str, u64, Option<&str>)> = record
        .channels
        .iter()
        .map(|c| (c.channel.as_str(), c.version, c.blob.as_deref()))
        .collect();
    Encoded {
        writes: to_json(&record.writes),
        metadata: to_json(&record.metadata),
        channels: to_json(&channels),
    }
}

fn to_json(value: &impl serde::Serialize) -> String {
    // Strings, integers, vectors and string-keyed maps always serialize.
    serde_json::to_string(value).expect("plain data serializes to JSON")
}

/// A checkpoint row as read back.
pub(crate) struct Row {
    pub(crate) thread_id: String,
    pub(crate) ns: String,
    pub(crate) id: String,
    pub(crate) parent_id: Option<String>,
    pub(crate) step: i64,
    pub(crate) source: String,
    pub(crate) writes: String,
    pub(crate) metadata: String,
    pub(crate) created_at: String,
    pub(crate) channels: String,
    pub(crate) body: Vec<u8>,
}

/// The columns of a row, in the order [`Row`] is read from.
pub(crate) const COLUMNS: &str =
    "thread_id, ns, id, parent_id, step, source, writes, metadata, created_at, channels, body";

pub(crate) fn decode(row: Row) -> Result<CheckpointRecord, SaverError> {
    let corrupt = |what: &str, e: &dyn std::fmt::Display| {
        SaverError::corrupt(&row.thread_id, &row.id, format!("cannot decode its {what}: {e}"))
    };
    let source = Source::from_name(&row.source).ok_or_else(|| corrupt("source", &format!("`{}`", row.source)))?;
    let writes: Vec<String> = serde_json::from_str(&row.writes).map_err(|e| corrupt("writes", &e))?;
    let metadata: BTreeMap<String, String> =
        serde_json::from_str(&row.metadata).map_err(|e| corrupt("metadata", &e))?;
    let channels: Vec<(String, u64, Option<String>)> =
        serde_json::from_str(&row.channels).map_err(|e| corrupt("channels", &e))?;
    Ok(CheckpointRecord {
        thread_id: row.thread_id,
        ns: row.ns,
        id: row.id,
        parent_id: row.parent_id,
        step: row.step,
        source,
        writes,
        metadata,
        created_at: row.created_at,
        channels: channels
            .into_iter()
            .map(|(channel, version, blob)| ChannelRef { channel, version, blob })
            .collect(),
        body: row.body,
        blobs: Vec::new(),
    })
}

/// A stored blob: what it extends, and its bytes.
pub(crate) type Link = (Option<String>, Vec<u8>);

/// Value chains per channel, as in [`Loaded::values`](super::Loaded).
pub(crate) type Values = Vec<(String, Vec<Vec<u8>>)>;

/// Rebuilds the value chains of `record`'s channels, fetching each blob by
/// `(checkpoint id, channel)`; a missing link is corruption.
pub(crate) fn assemble(
    record: &CheckpointRecord,
    mut fetch: impl FnMut(&str, &str) -> Result<Option<Link>, SaverError>,
) -> Result<Values, SaverError> {
    let mut values = Vec::new();
    for c in &record.channels {
        let Some(mut at) = c.blob.clone() else {
            continue;
        };
        let mut chain = Vec::new();
        loop {
            let Some((delta_of, bytes)) = fetch(&at, &c.channel)? else {
                return Err(check::broken_chain(&record.thread_id, &record.id, &c.channel, &at));
            };
            chain.push(bytes);
            match delta_of {
                Some(base) => at = base,
                None => break,
            }
        }
        chain.reverse();
        values.push((c.channel.clone(), chain));
    }
    Ok(values)
}
