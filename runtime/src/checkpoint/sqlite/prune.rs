//! The SQLite saver's retention: a thread pruned in the writer's transaction, the blobs of
//! pruned checkpoints that kept ones still need (`retained_blobs`), and the id each pruned
//! thread was pruned through (`pruned`), which tells a read of a pruned checkpoint from one of
//! a checkpoint that never was.

use super::retained::{OfThread, Retained};
use super::rows::{find_blob, read_row, row_index, BlobColumns};
use super::{backend, Failure};
use crate::checkpoint::check::Link;
use crate::checkpoint::retention::{needed, needed_until, plan, Plan};
use crate::checkpoint::sql::{self, COLUMNS};
use crate::checkpoint::{Loaded, Pruned, Retention, SaverError, Timestamp};
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// The blob retained from pruned checkpoint `at` for `channel`, if any.
pub(super) fn retained_blob(
    conn: &Connection,
    thread: &str,
    ns: &str,
    at: &str,
    channel: &str,
) -> rusqlite::Result<Option<Link>> {
    conn.prepare_cached(
        "SELECT delta_of, bytes FROM retained_blobs WHERE thread_id = ?1 AND ns = ?2 AND checkpoint_id = ?3 \
         AND channel = ?4",
    )?
    .query_row(params![thread, ns, at, channel], |r| Ok((r.get(0)?, r.get(1)?)))
    .optional()
}

/// The answer to a read of checkpoint `id`, which has no row: an error if the thread was pruned
/// through it, else nothing.
pub(super) fn not_found(conn: &Connection, thread: &str, ns: &str, id: &str) -> Result<Option<Loaded>, Failure> {
    let through: Option<String> = conn
        .prepare_cached("SELECT through FROM pruned WHERE thread_id = ?1")?
        .query_row([thread], |r| r.get(0))
        .optional()?;
    match through {
        Some(through) if id <= through.as_str() => Err(SaverError::pruned(thread, ns, id, &through).into()),
        _ => Ok(None),
    }
}

/// Deletes what retention keeps of a thread, as the thread is deleted.
pub(super) fn forget(conn: &Connection, thread: &str) -> rusqlite::Result<()> {
    for table in ["retained_blobs", "pruned"] {
        conn.prepare_cached(&format!("DELETE FROM {table} WHERE thread_id = ?1"))?
            .execute([thread])?;
    }
    Ok(())
}

/// Copies what retention keeps of thread `from` to `to`, as the thread is copied.
pub(super) fn copy(conn: &Connection, from: &str, to: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO retained_blobs (thread_id, ns, checkpoint_id, channel, delta_of, bytes) \
         SELECT ?2, ns, checkpoint_id, channel, delta_of, bytes FROM retained_blobs WHERE thread_id = ?1",
    )?
    .execute([from, to])?;
    conn.prepare_cached("INSERT INTO pruned (thread_id, through) SELECT ?2, through FROM pruned WHERE thread_id = ?1")?
        .execute([from, to])?;
    Ok(())
}

/// A channel's blob in a row's index: the channel and the checkpoint its delta extends, if any.
type ChannelBlob = (String, Option<String>);

/// The blob index of checkpoint `at`'s row and the length of its values, if it has a row.
fn blob_index(conn: &Connection, thread: &str, ns: &str, at: &str) -> rusqlite::Result<Option<(Vec<u8>, usize)>> {
    conn.prepare_cached(
        "SELECT blob_index, LENGTH(blob_bytes) FROM checkpoints WHERE thread_id = ?1 AND ns = ?2 AND id = ?3",
    )?
    .query_row(params![thread, ns, at], |r| {
        Ok((r.get(0)?, r.get::<_, i64>(1)? as usize))
    })
    .optional()
}

/// The number a `SELECT COUNT(*)` of `sql` with `args` gives.
fn count(conn: &Connection, sql: &str, args: impl rusqlite::Params) -> rusqlite::Result<u64> {
    conn.prepare_cached(sql)?
        .query_row(args, |r| r.get::<_, i64>(0))
        .map(|n| n as u64)
}

/// Applies `policy` to `thread`, in the transaction under way; `known` is what the connection
/// remembers of the blobs the thread retains. Returns what the prune did and, when known, the
/// blobs the thread retains after it.
pub(super) fn prune(
    conn: &Connection,
    path: &Path,
    thread: &str,
    policy: &Retention,
    mut known: OfThread,
    links_read: &AtomicU64,
) -> Result<(Pruned, Option<OfThread>), Failure> {
    let root = conn
        .prepare_cached("SELECT id, created_at FROM checkpoints WHERE thread_id = ?1 AND ns = '' ORDER BY id")?
        .query_map([thread], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let root = root
        .into_iter()
        .map(|(id, at)| match Timestamp::parse(&at) {
            Some(at) => Ok((id, at)),
            None => Err(SaverError::corrupt(
                thread,
                &id,
                format!("cannot decode its creation time `{at}`"),
            )),
        })
        .collect::<Result<Vec<_>, _>>()?;
    match plan(&root, policy, Timestamp::now()) {
        Plan::Keep => Ok((Pruned::default(), Some(known))),
        Plan::Delete => {
            let out = Pruned {
                threads_deleted: 1,
                checkpoints: count(conn, "SELECT COUNT(*) FROM checkpoints WHERE thread_id = ?1", [thread])?,
                pending_writes: count(conn, "SELECT COUNT(*) FROM writes WHERE thread_id = ?1", [thread])?,
                ..Pruned::default()
            };
            if policy.dry_run {
                return Ok((out, Some(known)));
            }
            for table in ["writes", "checkpoints"] {
                conn.prepare_cached(&format!("DELETE FROM {table} WHERE thread_id = ?1"))?
                    .execute([thread])?;
            }
            forget(conn, thread)?;
            Ok((out, None))
        }
        Plan::Through(through) => {
            let args = params![thread, through];
            let out = Pruned {
                threads_pruned: 1,
                checkpoints: count(
                    conn,
                    "SELECT COUNT(*) FROM checkpoints WHERE thread_id = ?1 AND id <= ?2",
                    args,
                )?,
                pending_writes: count(
                    conn,
                    "SELECT COUNT(*) FROM writes WHERE thread_id = ?1 AND checkpoint_id <= ?2",
                    args,
                )?,
                ..Pruned::default()
            };
            if policy.dry_run {
                return Ok((out, Some(known)));
            }
            let spaces = conn
                .prepare_cached(
                    "SELECT ns FROM checkpoints WHERE thread_id = ?1 UNION SELECT ns FROM retained_blobs WHERE thread_id = ?1",
                )?
                .query_map([thread], |r| r.get::<_, String>(0))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let mut retained = OfThread::new();
            for ns in spaces {
                let kept = keep_needed(conn, path, thread, &ns, &through, known.remove(&ns), links_read)?;
                retained.insert(ns, kept);
            }
            for sql in [
                "DELETE FROM writes WHERE thread_id = ?1 AND checkpoint_id <= ?2",
                "DELETE FROM checkpoints WHERE thread_id = ?1 AND id <= ?2",
                "INSERT OR REPLACE INTO pruned (thread_id, through) VALUES (?1, ?2)",
            ] {
                conn.prepare_cached(sql)?.execute(args)?;
            }
            Ok((out, Some(retained)))
        }
    }
}

/// In namespace `ns` of `thread`, about to lose its checkpoints up to `through`: copies the
/// blobs the kept checkpoints need from the rows that go to `retained_blobs`, and deletes the
/// retained blobs they no longer need. `known` is what the namespace retained at its last prune,
/// if remembered: when the kept chains still reach each of its tips, the walks stop where they
/// meet it and all of it stays. Returns what the namespace retains now; counts the links it
/// read from rows in `links_read`.
fn keep_needed(
    conn: &Connection,
    path: &Path,
    thread: &str,
    ns: &str,
    through: &str,
    known: Option<Retained>,
    links_read: &AtomicU64,
) -> Result<Retained, Failure> {
    let kept = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM checkpoints WHERE thread_id = ?1 AND ns = ?2 AND id > ?3 ORDER BY id"
        ))?
        .query_map(params![thread, ns, through], read_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let kept = kept.into_iter().map(sql::decode).collect::<Result<Vec<_>, _>>()?;
    // The walk reads each row's blob index only (what each blob extends), never its values;
    // what it learns of each blob stays in `walked`.
    let mut indexes: HashMap<String, Option<Vec<ChannelBlob>>> = HashMap::new();
    let mut walked: HashMap<(String, String), Option<String>> = HashMap::new();
    let mut delta_of = |at: &str, channel: &str| -> Result<Option<Option<String>>, SaverError> {
        let found = match known.as_ref().and_then(|k| k.delta_of(at, channel)) {
            Some(delta_of) => Some(delta_of.clone()),
            None => {
                links_read.fetch_add(1, Ordering::Relaxed);
                row_delta_of(conn, path, thread, ns, &mut indexes, at, channel)?
            }
        };
        if let Some(delta_of) = &found {
            walked.insert((at.to_owned(), channel.to_owned()), delta_of.clone());
        }
        Ok(found)
    };
    let reached_all = match &known {
        Some(k) => {
            let walk = needed_until(&kept, through, |at, channel| k.holds(at, channel), &mut delta_of)?;
            k.tips_in(&walk.reached).then_some(walk.needed)
        }
        None => None,
    };
    if let Some(new) = reached_all {
        // All the blobs retained are still needed, and the new ones extend them.
        for (at, channel) in &new {
            copy_blob(conn, thread, ns, at, channel)?;
        }
        walked.retain(|blob, _| new.contains(blob));
        let mut known = known.unwrap_or_default();
        known.add(walked);
        return Ok(known);
    }
    let keep: BTreeSet<(String, String)> = needed(&kept, through, &mut delta_of)?;
    let retained = match &known {
        Some(known) => known.blobs().collect(),
        None => conn
            .prepare_cached("SELECT checkpoint_id, channel FROM retained_blobs WHERE thread_id = ?1 AND ns = ?2")?
            .query_map(params![thread, ns], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })?
            .collect::<rusqlite::Result<BTreeSet<_>>>()?,
    };
    for (at, channel) in retained.difference(&keep) {
        conn.prepare_cached(
            "DELETE FROM retained_blobs WHERE thread_id = ?1 AND ns = ?2 AND checkpoint_id = ?3 AND channel = ?4",
        )?
        .execute(params![thread, ns, at, channel])?;
    }
    for (at, channel) in keep.difference(&retained) {
        copy_blob(conn, thread, ns, at, channel)?;
    }
    // Every blob kept was walked: what it extends is known.
    walked.retain(|blob, _| keep.contains(blob));
    Ok(Retained::of(walked))
}

/// What the blob stored under `at` for `channel` extends (`Some(None)`: a whole value; `None`:
/// no such blob), from `at`'s row (its index read once into `indexes`) or, once the row is
/// pruned, from `retained_blobs`.
fn row_delta_of(
    conn: &Connection,
    path: &Path,
    thread: &str,
    ns: &str,
    indexes: &mut HashMap<String, Option<Vec<ChannelBlob>>>,
    at: &str,
    channel: &str,
) -> Result<Option<Option<String>>, SaverError> {
    if !indexes.contains_key(at) {
        let index = blob_index(conn, thread, ns, at).map_err(|e| backend(path, e))?;
        let entries = match index {
            Some((index, bytes)) => Some(
                row_index(thread, at, at, &index, bytes)?
                    .into_iter()
                    .map(|e| (e.channel.to_owned(), e.delta_of.map(str::to_owned)))
                    .collect(),
            ),
            None => None,
        };
        indexes.insert(at.to_owned(), entries);
    }
    match &indexes[at] {
        Some(entries) => Ok(entries.iter().find(|(c, _)| c == channel).map(|(_, d)| d.clone())),
        None => Ok(retained_blob(conn, thread, ns, at, channel)
            .map_err(|e| backend(path, e))?
            .map(|(delta_of, _)| delta_of)),
    }
}

/// Copies the blob of checkpoint `at`'s row for `channel` to `retained_blobs`, if the row has it.
fn copy_blob(conn: &Connection, thread: &str, ns: &str, at: &str, channel: &str) -> Result<(), Failure> {
    let columns: Option<BlobColumns> = conn
        .prepare_cached("SELECT blob_index, blob_bytes FROM checkpoints WHERE thread_id = ?1 AND ns = ?2 AND id = ?3")?
        .query_row(params![thread, ns, at], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let Some((delta_of, bytes)) = columns
        .map(|columns| find_blob(thread, at, at, &columns, channel))
        .transpose()?
        .flatten()
    else {
        return Ok(());
    };
    conn.prepare_cached(
        "INSERT INTO retained_blobs (thread_id, ns, checkpoint_id, channel, delta_of, bytes) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![thread, ns, at, channel, delta_of, bytes])?;
    Ok(())
}
