//! The reads, each in one read transaction of a pooled read connection (on tokio's blocking
//! pool, never a tokio worker): a checkpoint with its value chains and pending writes, a listing,
//! a whole history at once, what a thread uses.

use super::batch::HEAD;
use super::rows::{find_blob, read_row, row_index, BlobColumns};
use super::{backend, Failure};
use crate::checkpoint::sql::{self, Row};
use crate::checkpoint::{check, CheckpointRecord, Held, Loaded, PendingWrite, Usage};
use rusqlite::{params, Connection, OptionalExtension, Transaction};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// The head of a thread and namespace: its greatest checkpoint id.
pub(super) fn head(conn: &Connection, thread_id: &str, ns: &str) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached(HEAD)?
        .query_row(params![thread_id, ns], |r| r.get(0))
        .optional()
}

/// The blob columns of the rows a read has met, by checkpoint id (`None`: no such row): the
/// unchanged channels of a thread's checkpoints often point at one older row.
type Met = HashMap<Arc<str>, Option<BlobColumns>>;

/// The value chains of `record` for a reader holding `held`, and the channels continued (as
/// [`check::assemble`]), from the rows in `met`, reading (and keeping) any other row.
fn values_of(
    tx: &Transaction<'_>,
    path: &Path,
    record: &CheckpointRecord,
    held: &[Held],
    met: &mut Met,
) -> Result<(check::Values, Vec<String>), Failure> {
    let (thread_id, ns) = (&*record.thread_id, &*record.ns);
    let mut blobs_of = tx.prepare_cached(
        "SELECT blob_index, blob_bytes FROM checkpoints WHERE thread_id = ?1 AND ns = ?2 AND id = ?3",
    )?;
    Ok(check::assemble(record, held, |at, channel| {
        if !met.contains_key(at) {
            let columns = blobs_of
                .query_row(params![thread_id, ns, at], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
                .map_err(|e| backend(path, e))?;
            met.insert(at.into(), columns);
        }
        match &met[at] {
            Some(columns) => find_blob(thread_id, &record.id, at, columns, channel),
            None => Ok(super::prune::retained_blob(tx, thread_id, ns, at, channel).map_err(|e| backend(path, e))?),
        }
    })?)
}

/// A checkpoint row with its blob columns.
fn read_full_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(Row, BlobColumns)> {
    Ok((read_row(r)?, (r.get(11)?, r.get(12)?)))
}

/// The checkpoint `id`, or the head, with its values (for a reader holding `held`) and pending
/// writes: one transaction.
pub(super) fn get(
    conn: &mut Connection,
    path: &Path,
    thread_id: &str,
    ns: &str,
    id: Option<&str>,
    held: &[Held],
) -> Result<Option<Loaded>, Failure> {
    let tx = conn.transaction()?;
    let row = match id {
        Some(id) => tx
            .prepare_cached(&format!(
                "SELECT {}, blob_index, blob_bytes FROM checkpoints WHERE thread_id = ?1 AND ns = ?2 AND id = ?3",
                sql::COLUMNS
            ))?
            .query_row(params![thread_id, ns, id], read_full_row)
            .optional()?,
        // The head's row straight from the key index: no lookup of its id first.
        None => tx
            .prepare_cached(&format!(
                "SELECT {}, blob_index, blob_bytes FROM checkpoints WHERE thread_id = ?1 AND ns = ?2 \
                 ORDER BY id DESC LIMIT 1",
                sql::COLUMNS
            ))?
            .query_row(params![thread_id, ns], read_full_row)
            .optional()?,
    };
    let Some((row, own)) = row else {
        return match id {
            Some(id) => super::prune::not_found(&tx, thread_id, ns, id),
            None => Ok(None),
        };
    };
    let record = sql::decode(row)?;
    let mut met = Met::from([(record.id.clone(), Some(own))]);
    let (values, continued) = values_of(&tx, path, &record, held, &mut met)?;
    let mut writes = pending_writes(&tx, thread_id, ns, &record.id, &record.id)?;
    tx.commit()?;
    let pending_writes = writes.remove(&*record.id).unwrap_or_default();
    Ok(Some(Loaded {
        record,
        values,
        pending_writes,
        continued,
    }))
}

/// The pending writes against the checkpoints of ids from `low` to `high`, by checkpoint, each
/// checkpoint's ordered by `(task_path, task_id, idx)`.
fn pending_writes(
    tx: &Transaction<'_>,
    thread_id: &str,
    ns: &str,
    low: &str,
    high: &str,
) -> rusqlite::Result<HashMap<String, Vec<PendingWrite>>> {
    let mut by_checkpoint: HashMap<String, Vec<PendingWrite>> = HashMap::new();
    let mut select = tx.prepare_cached(
        "SELECT checkpoint_id, task_id, task_path, idx, channel, bytes FROM writes \
         WHERE thread_id = ?1 AND ns = ?2 AND checkpoint_id BETWEEN ?3 AND ?4 \
         ORDER BY checkpoint_id, task_path, task_id, idx",
    )?;
    let mut rows = select.query(params![thread_id, ns, low, high])?;
    while let Some(r) = rows.next()? {
        let write = PendingWrite {
            task_id: r.get(1)?,
            task_path: r.get(2)?,
            idx: r.get(3)?,
            channel: r.get(4)?,
            bytes: r.get(5)?,
        };
        let checkpoint = r.get_ref(0)?.as_str()?;
        match by_checkpoint.get_mut(checkpoint) {
            Some(writes) => writes.push(write),
            None => {
                by_checkpoint.insert(checkpoint.to_owned(), vec![write]);
            }
        }
    }
    Ok(by_checkpoint)
}

/// The checkpoints of a thread and namespace, newest first, as `list` selects them.
pub(super) fn list(
    conn: &mut Connection,
    thread_id: &str,
    ns: &str,
    before: Option<&str>,
    limit: Option<usize>,
) -> Result<Vec<CheckpointRecord>, Failure> {
    let limit = limit.map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX));
    let rows = conn
        .prepare_cached(&format!(
            "SELECT {} FROM checkpoints WHERE thread_id = ?1 AND ns = ?2 AND (?3 IS NULL OR id < ?3) \
             ORDER BY id DESC LIMIT ?4",
            sql::COLUMNS
        ))?
        .query_map(params![thread_id, ns, before, limit], read_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows.into_iter().map(sql::decode).collect::<Result<_, _>>()?)
}

/// The checkpoints `list` selects, each as `get` reads it, in one transaction: one listing of
/// the rows with their blob columns, one query of their pending writes, and a read of each
/// older row their unchanged channels point at.
pub(super) fn history(
    conn: &mut Connection,
    path: &Path,
    thread_id: &str,
    ns: &str,
    before: Option<&str>,
    limit: Option<usize>,
) -> Result<Vec<Loaded>, Failure> {
    let limit = limit.map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX));
    let tx = conn.transaction()?;
    let rows = tx
        .prepare_cached(&format!(
            "SELECT {}, blob_index, blob_bytes FROM checkpoints \
             WHERE thread_id = ?1 AND ns = ?2 AND (?3 IS NULL OR id < ?3) ORDER BY id DESC LIMIT ?4",
            sql::COLUMNS
        ))?
        .query_map(params![thread_id, ns, before, limit], read_full_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut met = Met::with_capacity(rows.len());
    let mut records = Vec::with_capacity(rows.len());
    for (row, columns) in rows {
        let record = sql::decode(row)?;
        met.insert(record.id.clone(), Some(columns));
        records.push(record);
    }
    let (Some(newest), Some(oldest)) = (records.first(), records.last()) else {
        return Ok(Vec::new());
    };
    let mut writes = pending_writes(&tx, thread_id, ns, &oldest.id, &newest.id)?;
    let mut out = Vec::with_capacity(records.len());
    for record in records {
        let (values, continued) = values_of(&tx, path, &record, &[], &mut met)?;
        let pending_writes = writes.remove(&*record.id).unwrap_or_default();
        out.push(Loaded {
            record,
            values,
            pending_writes,
            continued,
        });
    }
    tx.commit()?;
    Ok(out)
}

/// The ids of the threads with a checkpoint, sorted.
pub(super) fn threads(conn: &mut Connection) -> Result<Vec<String>, Failure> {
    Ok(conn
        .prepare_cached("SELECT DISTINCT thread_id FROM checkpoints ORDER BY thread_id")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<String>>>()?)
}

/// The namespaces of a thread with a checkpoint, sorted.
pub(super) fn namespaces(conn: &mut Connection, thread_id: &str) -> Result<Vec<String>, Failure> {
    Ok(conn
        .prepare_cached("SELECT DISTINCT ns FROM checkpoints WHERE thread_id = ?1 ORDER BY ns")?
        .query_map([thread_id], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<String>>>()?)
}

/// What is stored for a thread, all namespaces together: one transaction.
pub(super) fn usage(conn: &mut Connection, thread_id: &str) -> Result<Usage, Failure> {
    let tx = conn.transaction()?;
    let count = |table: &str| -> rusqlite::Result<u64> {
        tx.prepare_cached(&format!("SELECT COUNT(*) FROM {table} WHERE thread_id = ?1"))?
            .query_row([thread_id], |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
    };
    let mut usage = Usage {
        checkpoints: count("checkpoints")?,
        pending_writes: count("writes")?,
        ..Usage::default()
    };
    let mut indexes =
        tx.prepare_cached("SELECT id, blob_index, LENGTH(blob_bytes) FROM checkpoints WHERE thread_id = ?1")?;
    let mut rows = indexes.query([thread_id])?;
    while let Some(row) = rows.next()? {
        let (id, index, bytes) = (
            row.get_ref(0)?.as_str()?,
            row.get_ref(1)?.as_blob()?,
            row.get::<_, i64>(2)? as usize,
        );
        usage.blobs += row_index(thread_id, id, id, index, bytes)?.len() as u64;
        usage.blob_bytes += bytes as u64;
    }
    drop(rows);
    drop(indexes);
    let (blobs, bytes): (i64, i64) = tx
        .prepare_cached("SELECT COUNT(*), COALESCE(SUM(LENGTH(bytes)), 0) FROM retained_blobs WHERE thread_id = ?1")?
        .query_row([thread_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    usage.blobs += blobs as u64;
    usage.blob_bytes += bytes as u64;
    tx.commit()?;
    Ok(usage)
}
