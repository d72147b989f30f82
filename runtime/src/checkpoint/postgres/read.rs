//! The PostgreSQL saver's reads of whole checkpoints: one, or a history of them, each in one
//! repeatable-read snapshot.

use super::pool::Failure;
use super::saver::PostgresSaver;
use crate::checkpoint::check::{self, Link};
use crate::checkpoint::sql;
use crate::checkpoint::sql::Row;
use crate::checkpoint::{CheckpointRecord, Held, Loaded, PendingWrite, SaverError};
use crate::postgres::Idempotent;
use std::collections::HashMap;
use tokio_postgres::IsolationLevel;

/// The query of a thread and namespace's head.
pub(super) const SELECT_HEAD: &str = "SELECT head FROM heads WHERE thread_id = $1 AND ns = $2";

/// The query of one checkpoint's row.
pub(super) fn select_checkpoint() -> String {
    format!(
        "SELECT {} FROM checkpoints WHERE thread_id = $1 AND ns = $2 AND id = $3",
        sql::COLUMNS
    )
}

/// The query of a thread's rows, newest first, before a checkpoint and up to a limit.
pub(super) fn select_list() -> String {
    format!(
        "SELECT {} FROM checkpoints WHERE thread_id = $1 AND ns = $2 AND ($3::text IS NULL OR id < $3) \
         ORDER BY id DESC LIMIT $4",
        sql::COLUMNS
    )
}

/// A checkpoint row as PostgreSQL returns it, in [`sql::COLUMNS`] order.
pub(super) fn read_row(r: &tokio_postgres::Row) -> Row {
    Row {
        thread_id: r.get(0),
        ns: r.get(1),
        id: r.get(2),
        parent_id: r.get(3),
        step: r.get(4),
        source: r.get(5),
        writes: r.get(6),
        metadata: r.get(7),
        created_at: r.get(8),
        channels: r.get(9),
        body: r.get(10),
    }
}

/// The value chains of one checkpoint: for each channel (`$3`), from the blob under `$4` back to
/// its whole value, or up to the blob the reader holds (`$5`, `NULL` for none), which is left out.
const SELECT_CHAINS: &str = "WITH RECURSIVE chain (channel, checkpoint_id, delta_of, bytes, held) AS ( \
       SELECT b.channel, b.checkpoint_id, b.delta_of, b.bytes, s.held \
       FROM unnest($3::text[], $4::text[], $5::text[]) AS s(channel, checkpoint_id, held) \
       JOIN blobs b ON b.thread_id = $1 AND b.ns = $2 AND b.channel = s.channel \
         AND b.checkpoint_id = s.checkpoint_id \
       WHERE s.checkpoint_id IS DISTINCT FROM s.held \
     UNION ALL \
       SELECT b.channel, b.checkpoint_id, b.delta_of, b.bytes, c.held FROM chain c \
       JOIN blobs b ON b.thread_id = $1 AND b.ns = $2 AND b.channel = c.channel AND b.checkpoint_id = c.delta_of \
       WHERE c.delta_of IS DISTINCT FROM c.held \
     ) SELECT channel, checkpoint_id, delta_of, bytes FROM chain";
const SELECT_WRITES: &str = "SELECT task_id, task_path, idx, channel, bytes FROM writes \
     WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $3 ORDER BY task_path, task_id, idx";
/// [`SELECT_CHAINS`] for chains that share their older links (a history's): `UNION` visits each
/// link once, and the bytes are joined at the end.
const SELECT_SHARED_CHAINS: &str = "WITH RECURSIVE chain (channel, checkpoint_id, delta_of) AS ( \
       SELECT b.channel, b.checkpoint_id, b.delta_of \
       FROM unnest($3::text[], $4::text[]) AS s(channel, checkpoint_id) \
       JOIN blobs b ON b.thread_id = $1 AND b.ns = $2 AND b.channel = s.channel \
         AND b.checkpoint_id = s.checkpoint_id \
     UNION \
       SELECT b.channel, b.checkpoint_id, b.delta_of FROM chain c \
       JOIN blobs b ON b.thread_id = $1 AND b.ns = $2 AND b.channel = c.channel AND b.checkpoint_id = c.delta_of \
     ) SELECT c.channel, c.checkpoint_id, c.delta_of, b.bytes FROM chain c \
     JOIN blobs b ON b.thread_id = $1 AND b.ns = $2 AND b.channel = c.channel AND b.checkpoint_id = c.checkpoint_id";
const SELECT_RANGE_WRITES: &str = "SELECT checkpoint_id, task_id, task_path, idx, channel, bytes FROM writes \
     WHERE thread_id = $1 AND ns = $2 AND checkpoint_id BETWEEN $3 AND $4 \
     ORDER BY checkpoint_id, task_path, task_id, idx";
impl PostgresSaver {
    pub(super) async fn get_now(
        &self,
        thread_id: &str,
        ns: &str,
        id: Option<&str>,
        held: &[Held],
    ) -> Result<Option<Loaded>, SaverError> {
        let result = self
            .inner
            .pool
            .with_retry(
                || format!("reading a checkpoint of thread `{thread_id}`"),
                Idempotent::Yes,
                |mut pooled| async move {
                    let conn = &mut *pooled;
                    let result: Result<_, Failure> = async {
                        let select_head = conn.prepare(SELECT_HEAD).await?;
                        let select_checkpoint = conn.prepare(&self.inner.select_checkpoint).await?;
                        let select_chains = conn.prepare(SELECT_CHAINS).await?;
                        let select_writes = conn.prepare(SELECT_WRITES).await?;
                        // One snapshot: the head, the record and its blobs agree.
                        let tx = conn
                            .client
                            .build_transaction()
                            .isolation_level(IsolationLevel::RepeatableRead)
                            .read_only(true)
                            .start()
                            .await?;
                        let asked = id;
                        let id = match id {
                            Some(id) => id.to_owned(),
                            None => match tx.query_opt(&select_head, &[&thread_id, &ns]).await? {
                                Some(row) => row.get(0),
                                None => return Ok(None),
                            },
                        };
                        let Some(row) = tx.query_opt(&select_checkpoint, &[&thread_id, &ns, &id]).await? else {
                            return match asked {
                                Some(id) => super::prune::not_found(&tx, thread_id, ns, id).await,
                                None => Ok(None),
                            };
                        };
                        let record = sql::decode(read_row(&row))?;
                        let mut starts = (Vec::new(), Vec::new(), Vec::new());
                        for c in &record.channels {
                            if let Some(at) = c.blob.as_deref() {
                                starts.0.push(&*c.channel);
                                starts.1.push(at);
                                starts
                                    .2
                                    .push(held.iter().find(|h| h.channel == c.channel).map(|h| &*h.blob));
                            }
                        }
                        let (channels, at, holds) = starts;
                        let mut links: HashMap<(String, String), Link> = HashMap::new();
                        for row in tx
                            .query(&select_chains, &[&thread_id, &ns, &channels, &at, &holds])
                            .await?
                        {
                            let (channel, checkpoint): (String, String) = (row.get(0), row.get(1));
                            links.insert((checkpoint, channel), (row.get(2), row.get(3)));
                        }
                        let (values, continued) = check::assemble(&record, held, |at, channel| {
                            Ok(links.remove(&(at.to_owned(), channel.to_owned())))
                        })?;
                        let pending_writes = tx
                            .query(&select_writes, &[&thread_id, &ns, &id])
                            .await?
                            .iter()
                            .map(|r| PendingWrite {
                                task_id: r.get(0),
                                task_path: r.get(1),
                                idx: r.get(2),
                                channel: r.get(3),
                                bytes: r.get(4),
                            })
                            .collect();
                        tx.commit().await?;
                        Ok(Some(Loaded {
                            record,
                            values,
                            pending_writes,
                            continued,
                        }))
                    }
                    .await;
                    result
                },
            )
            .await;
        self.finish(result)
    }

    /// What `list` selects, each as `get` reads it, in one snapshot and three queries: the
    /// listing, every value chain its checkpoints point at, and their pending writes.
    pub(super) async fn history_now(
        &self,
        thread_id: &str,
        ns: &str,
        before: Option<&str>,
        limit: Option<usize>,
    ) -> Result<Vec<Loaded>, SaverError> {
        let limit = limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX));
        let result = self
            .inner
            .pool
            .with_retry(
                || format!("reading the history of thread `{thread_id}`"),
                Idempotent::Yes,
                |mut pooled| async move {
                    let conn = &mut *pooled;
                    let result: Result<_, Failure> = async {
                        let select_list = conn.prepare(&self.inner.select_list).await?;
                        let select_chains = conn.prepare(SELECT_SHARED_CHAINS).await?;
                        let select_writes = conn.prepare(SELECT_RANGE_WRITES).await?;
                        let tx = conn
                            .client
                            .build_transaction()
                            .isolation_level(IsolationLevel::RepeatableRead)
                            .read_only(true)
                            .start()
                            .await?;
                        let records: Vec<CheckpointRecord> = tx
                            .query(&select_list, &[&thread_id, &ns, &before, &limit])
                            .await?
                            .iter()
                            .map(|r| sql::decode(read_row(r)))
                            .collect::<Result<_, _>>()?;
                        let (Some(newest), Some(oldest)) = (records.first(), records.last()) else {
                            return Ok(Vec::new());
                        };
                        let mut starts: Vec<(&str, &str)> = records
                            .iter()
                            .flat_map(|r| r.channels.iter())
                            .filter_map(|c| c.blob.as_deref().map(|b| (&*c.channel, b)))
                            .collect();
                        starts.sort_unstable();
                        starts.dedup();
                        let (channels, at): (Vec<&str>, Vec<&str>) = starts.into_iter().unzip();
                        let mut links: HashMap<(String, String), Link> = HashMap::new();
                        for row in tx.query(&select_chains, &[&thread_id, &ns, &channels, &at]).await? {
                            let (channel, checkpoint): (String, String) = (row.get(0), row.get(1));
                            links.insert((checkpoint, channel), (row.get(2), row.get(3)));
                        }
                        let mut writes: HashMap<String, Vec<PendingWrite>> = HashMap::new();
                        for r in tx
                            .query(&select_writes, &[&thread_id, &ns, &&*oldest.id, &&*newest.id])
                            .await?
                        {
                            writes.entry(r.get(0)).or_default().push(PendingWrite {
                                task_id: r.get(1),
                                task_path: r.get(2),
                                idx: r.get(3),
                                channel: r.get(4),
                                bytes: r.get(5),
                            });
                        }
                        tx.commit().await?;
                        let mut out = Vec::with_capacity(records.len());
                        for record in records {
                            let (values, _) = check::assemble(&record, &[], |at, channel| {
                                Ok(links.get(&(at.to_owned(), channel.to_owned())).cloned())
                            })?;
                            let pending_writes = writes.remove(&*record.id).unwrap_or_default();
                            out.push(Loaded {
                                record,
                                values,
                                pending_writes,
                                continued: Vec::new(),
                            });
                        }
                        Ok(out)
                    }
                    .await;
                    result
                },
            )
            .await;
        self.finish(result)
    }
}
