//! A checkpoint row's columns as SQLite stores them: the insert of a batch of rows, and the
//! blob columns (`blob_index`, `blob_bytes`) that hold the values stored under a checkpoint.

use crate::checkpoint::check;
use crate::checkpoint::sql::{self, Row};
use crate::checkpoint::{Blob, CheckpointRecord, SaverError};
use rusqlite::Statement;
use std::borrow::Cow;

/// How many rows of a batch one insert statement writes. Running a statement costs about 3k
/// instructions besides its rows (step, cursors, halt, reset): a multi-row insert pays that
/// once for all its rows.
pub(super) const CHUNK: usize = 16;

/// The parameters of a checkpoint row besides the thread and namespace.
const CHECKPOINT_PARAMS: usize = 11;

/// The insert statement of `rows` checkpoint rows; the rows share `?1` (the thread) and `?2`
/// (the namespace).
pub(super) fn insert_sql(rows: usize) -> String {
    let rows: Vec<String> = (0..rows)
        .map(|row| {
            let own: Vec<String> = (0..CHECKPOINT_PARAMS)
                .map(|p| format!("?{}", 3 + row * CHECKPOINT_PARAMS + p))
                .collect();
            format!("(?1, ?2, {})", own.join(", "))
        })
        .collect();
    format!(
        "INSERT INTO checkpoints (thread_id, ns, id, parent_id, step, source, writes, metadata, created_at, \
         channels, body, blob_index, blob_bytes) VALUES {}",
        rows.join(", ")
    )
}

/// Inserts the checkpoint rows of `records` (one thread and namespace) with `insert`, the
/// statement of `per` rows ([`insert_sql`]); `records` holds a multiple of `per`.
pub(super) fn insert(insert: &mut Statement<'_>, per: usize, records: &[CheckpointRecord]) -> rusqlite::Result<()> {
    let Some(first) = records.first() else { return Ok(()) };
    for rows in records.chunks(per) {
        insert.raw_bind_parameter(1, &*first.thread_id)?;
        insert.raw_bind_parameter(2, &*first.ns)?;
        for (row, record) in rows.iter().enumerate() {
            bind_row(insert, row, record)?;
        }
        insert.raw_execute()?;
    }
    Ok(())
}

/// Binds `record`'s columns besides the thread and namespace as row `row` of a checkpoint
/// insert. SQLite copies what is bound, so each row's encoded columns go once bound.
fn bind_row(insert: &mut Statement<'_>, row: usize, record: &CheckpointRecord) -> rusqlite::Result<()> {
    let at = 3 + row * CHECKPOINT_PARAMS;
    let text = sql::encode(record);
    insert.raw_bind_parameter(at, &*record.id)?;
    insert.raw_bind_parameter(at + 1, record.parent_id.as_deref())?;
    insert.raw_bind_parameter(at + 2, record.step)?;
    insert.raw_bind_parameter(at + 3, record.source.as_str())?;
    insert.raw_bind_parameter(at + 4, text.writes())?;
    insert.raw_bind_parameter(at + 5, text.metadata())?;
    insert.raw_bind_parameter(at + 6, text.created_at())?;
    insert.raw_bind_parameter(at + 7, text.channels())?;
    insert.raw_bind_parameter(at + 8, &record.body[..])?;
    insert.raw_bind_parameter(at + 9, &pack_index(&record.blobs)[..])?;
    insert.raw_bind_parameter(at + 10, &*pack_bytes(&record.blobs))
}

/// The `blob_index` column of a checkpoint row with `blobs`: for each blob, the channel (its
/// length as a little-endian `u32`, then its UTF-8), what it extends (the same, with the length
/// `u32::MAX` for a whole value) and the length of its bytes (a `u32`). The bytes themselves go,
/// one after another in the same order, to `blob_bytes` ([`pack_bytes`]), the row's last column:
/// a put reads only the short index of the checkpoints its record builds on, never their values.
pub(super) fn pack_index(blobs: &[Blob]) -> Vec<u8> {
    let len = blobs
        .iter()
        .map(|b| 12 + b.channel.len() + b.delta_of.as_ref().map_or(0, |d| d.len()));
    let mut out = Vec::with_capacity(len.sum());
    for b in blobs {
        push_len(&mut out, b.channel.len());
        out.extend_from_slice(b.channel.as_bytes());
        match &b.delta_of {
            Some(base) => {
                push_len(&mut out, base.len());
                out.extend_from_slice(base.as_bytes());
            }
            None => out.extend_from_slice(&u32::MAX.to_le_bytes()),
        }
        push_len(&mut out, b.bytes.len());
    }
    out
}

/// Appends a length as a little-endian `u32` (SQLite's values are shorter than 2^31 bytes).
fn push_len(out: &mut Vec<u8>, len: usize) {
    out.extend_from_slice(&u32::try_from(len).unwrap_or(u32::MAX - 1).to_le_bytes());
}

/// The `blob_bytes` column of a checkpoint row with `blobs` (see [`pack_index`]): a lone blob's
/// bytes as they are, no copy.
pub(super) fn pack_bytes(blobs: &[Blob]) -> Cow<'_, [u8]> {
    match blobs {
        [] => Cow::Borrowed(&[]),
        [one] => Cow::Borrowed(&one.bytes),
        many => {
            let mut out = Vec::with_capacity(many.iter().map(|b| b.bytes.len()).sum());
            for b in many {
                out.extend_from_slice(&b.bytes);
            }
            Cow::Owned(out)
        }
    }
}

/// One blob of a checkpoint row, as its `blob_index` lists it.
pub(super) struct Entry<'a> {
    pub(super) channel: &'a str,
    pub(super) delta_of: Option<&'a str>,
    /// Where its bytes are in the row's `blob_bytes`.
    pub(super) bytes: std::ops::Range<usize>,
}

/// The entries of a `blob_index` column; the error says what is wrong with it.
pub(super) fn read_index(mut index: &[u8]) -> Result<Vec<Entry<'_>>, String> {
    fn len(index: &mut &[u8]) -> Result<u32, String> {
        let (n, rest) = index.split_first_chunk::<4>().ok_or("it ends inside a length")?;
        *index = rest;
        Ok(u32::from_le_bytes(*n))
    }
    fn text<'a>(index: &mut &'a [u8], n: u32) -> Result<&'a str, String> {
        let n = n as usize;
        if index.len() < n {
            return Err(format!("a name of {n} bytes runs past its end"));
        }
        let (name, rest) = index.split_at(n);
        *index = rest;
        std::str::from_utf8(name).map_err(|e| format!("a name is not UTF-8: {e}"))
    }
    let mut entries = Vec::new();
    let mut at = 0usize;
    while !index.is_empty() {
        let n = len(&mut index)?;
        let channel = text(&mut index, n)?;
        let delta_of = match len(&mut index)? {
            u32::MAX => None,
            n => Some(text(&mut index, n)?),
        };
        let end = at
            .checked_add(len(&mut index)? as usize)
            .ok_or("its lengths add up past the address space")?;
        entries.push(Entry {
            channel,
            delta_of,
            bytes: at..end,
        });
        at = end;
    }
    Ok(entries)
}

/// The error for a row whose blob columns cannot be read: `at`'s, met while reading `checkpoint`.
pub(super) fn unreadable_blobs(thread: &str, checkpoint: &str, at: &str, e: &str) -> SaverError {
    SaverError::corrupt(
        thread,
        checkpoint,
        format!("the blobs stored under checkpoint `{at}` cannot be read: {e}"),
    )
}

/// The blob columns of a checkpoint row: `blob_index`, `blob_bytes`.
pub(super) type BlobColumns = (Vec<u8>, Vec<u8>);

/// The entries of a row's `blob_index`, checked against the length of its `blob_bytes`: `at`'s
/// row, met while reading `checkpoint`.
pub(super) fn row_index<'i>(
    thread: &str,
    checkpoint: &str,
    at: &str,
    index: &'i [u8],
    bytes: usize,
) -> Result<Vec<Entry<'i>>, SaverError> {
    let entries = read_index(index).map_err(|e| unreadable_blobs(thread, checkpoint, at, &e))?;
    let listed = entries.last().map_or(0, |e| e.bytes.end);
    if listed != bytes {
        let e = format!("its index lists {listed} bytes of values, it holds {bytes}");
        return Err(unreadable_blobs(thread, checkpoint, at, &e));
    }
    Ok(entries)
}

/// `channel`'s blob among a row's blob columns, as `(what it extends, bytes)`.
pub(super) fn find_blob(
    thread: &str,
    checkpoint: &str,
    at: &str,
    (index, bytes): &BlobColumns,
    channel: &str,
) -> Result<Option<check::Link>, SaverError> {
    let entries = row_index(thread, checkpoint, at, index, bytes.len())?;
    Ok(entries
        .into_iter()
        .find(|e| e.channel == channel)
        .map(|e| (e.delta_of.map(str::to_owned), bytes[e.bytes].to_vec())))
}

/// Reads a checkpoint row's [`sql::COLUMNS`], the first eleven columns of `r`.
pub(super) fn read_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok(Row {
        thread_id: r.get(0)?,
        ns: r.get(1)?,
        id: r.get(2)?,
        parent_id: r.get(3)?,
        step: r.get(4)?,
        source: r.get(5)?,
        writes: r.get(6)?,
        metadata: r.get(7)?,
        created_at: r.get(8)?,
        channels: r.get(9)?,
        body: r.get(10)?,
    })
}
