//! The transactions that store: a batch of checkpoints as successive heads, a task's pending
//! writes, and a copy of a thread.

use super::pool::Failure;
use super::read::SELECT_HEAD;
use super::saver::PostgresSaver;
use crate::checkpoint::sql;
use crate::checkpoint::{check, copy, CheckpointRecord, MadeByRun, PendingWrite, SaverError, TaskWrites};
use crate::postgres::Idempotent;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Statement, Transaction};

const INSERT_HEAD: &str = "INSERT INTO heads (thread_id, ns, head) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING";
const MOVE_HEAD: &str = "UPDATE heads SET head = $3 WHERE thread_id = $1 AND ns = $2 AND head = $4";
/// A batch's checkpoints (of thread `$1`, namespace `$2`), one row per element of the arrays;
/// answers the ids it stored (an id already stored is left, and missing from the answer).
const INSERT_CHECKPOINTS: &str = "INSERT INTO checkpoints (thread_id, ns, id, parent_id, step, source, writes, \
     metadata, created_at, channels, body) \
     SELECT $1, $2, t.id, t.parent_id, t.step, t.source, t.writes, t.metadata, t.created_at, t.channels, t.body \
     FROM unnest($3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[], $8::text[], $9::text[], \
     $10::text[], $11::bytea[]) AS t(id, parent_id, step, source, writes, metadata, created_at, channels, body) \
     ON CONFLICT DO NOTHING RETURNING id";
/// The first of the blobs a batch builds on (`(channel, checkpoint)` pairs, in order) that is not
/// stored, with its place in the arrays (from 1).
const MISSING_BASES: &str = "SELECT d.channel, d.base, d.n FROM unnest($3::text[], $4::text[]) \
     WITH ORDINALITY AS d(channel, base, n) \
     WHERE NOT EXISTS (SELECT 1 FROM blobs b WHERE b.thread_id = $1 AND b.ns = $2 \
     AND b.checkpoint_id = d.base AND b.channel = d.channel) ORDER BY d.n LIMIT 1";
/// A batch's blobs (of thread `$1`, namespace `$2`), each with its checkpoint's id.
const INSERT_BLOBS: &str = "INSERT INTO blobs (thread_id, ns, checkpoint_id, channel, delta_of, bytes) \
     SELECT $1, $2, t.checkpoint_id, t.channel, t.delta_of, t.bytes \
     FROM unnest($3::text[], $4::text[], $5::text[], $6::bytea[]) AS t(checkpoint_id, channel, delta_of, bytes)";
const CHECKPOINT_EXISTS: &str = "SELECT 1 FROM checkpoints WHERE thread_id = $1 AND ns = $2 AND id = $3";
/// The writes of several tasks of a thread (`$1`): their `(ns, checkpoint, task)` triples.
const DELETE_TASKS_WRITES: &str = "DELETE FROM writes w \
     USING unnest($2::text[], $3::text[], $4::text[]) AS t(ns, checkpoint_id, task_id) \
     WHERE w.thread_id = $1 AND w.ns = t.ns AND w.checkpoint_id = t.checkpoint_id AND w.task_id = t.task_id";
const INSERT_TASKS_WRITES: &str = "INSERT INTO writes (thread_id, ns, checkpoint_id, task_id, idx, task_path, \
     channel, bytes) SELECT $1, t.ns, t.checkpoint_id, t.task_id, t.idx, t.task_path, t.channel, t.bytes \
     FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[], $8::bytea[]) \
     AS t(ns, checkpoint_id, task_id, idx, task_path, channel, bytes)";
const HAS_CHECKPOINT: &str = "SELECT 1 FROM checkpoints WHERE thread_id = $1 LIMIT 1";
/// The copy of a thread (`$1`) to another (`$2`): heads first, whose rows make a put into the
/// new thread wait for the copy, then checkpoints, blobs, writes and what it was pruned through.
const COPY_THREAD: [&str; 5] = [
    "INSERT INTO heads (thread_id, ns, head) SELECT $2, ns, head FROM heads WHERE thread_id = $1",
    "INSERT INTO checkpoints (thread_id, ns, id, parent_id, step, source, writes, metadata, created_at, channels, \
     body) SELECT $2, ns, id, parent_id, step, source, writes, metadata, created_at, channels, body \
     FROM checkpoints WHERE thread_id = $1",
    "INSERT INTO blobs (thread_id, ns, checkpoint_id, channel, delta_of, bytes) \
     SELECT $2, ns, checkpoint_id, channel, delta_of, bytes FROM blobs WHERE thread_id = $1",
    "INSERT INTO writes (thread_id, ns, checkpoint_id, task_id, idx, task_path, channel, bytes) \
     SELECT $2, ns, checkpoint_id, task_id, idx, task_path, channel, bytes FROM writes WHERE thread_id = $1",
    "INSERT INTO pruned (thread_id, through) SELECT $2, through FROM pruned WHERE thread_id = $1",
];

impl PostgresSaver {
    /// Copies thread `from` to `to`, which has no checkpoint, in one transaction.
    pub(super) async fn copy_thread_now(&self, from: &str, to: &str) -> Result<(), SaverError> {
        if from == to {
            return Err(copy::same_thread(from));
        }
        let result = self
            .inner
            .pool
            .with_retry(
                || format!("copying thread `{from}` to `{to}`"),
                Idempotent::No,
                |mut pooled| async move {
                    let conn = &mut *pooled;
                    let result: Result<_, Failure> = async {
                        let has = conn.prepare(HAS_CHECKPOINT).await?;
                        let tx = conn.client.transaction().await?;
                        if tx.query_opt(&has, &[&to]).await?.is_some() {
                            return Err(copy::target_taken(from, to).into());
                        }
                        if tx.query_opt(&has, &[&from]).await?.is_none() {
                            return Err(copy::source_missing(from).into());
                        }
                        for statement in COPY_THREAD {
                            tx.execute(statement, &[&from, &to]).await?;
                        }
                        tx.commit().await?;
                        Ok(())
                    }
                    .await;
                    result
                },
            )
            .await;
        self.finish(result)
    }

    /// Stores `records` in one transaction, as successive heads: all of them or none.
    pub(super) async fn put_batch(
        &self,
        records: Vec<CheckpointRecord>,
        expected: Option<&str>,
        made: Option<MadeByRun>,
        writes: Vec<TaskWrites>,
    ) -> Result<(), SaverError> {
        let needed = check::put(&records, expected, made)?;
        let writes = &writes;
        let Some(last) = records.last() else { return Ok(()) };
        let (thread, ns, last_id) = (&*last.thread_id, &*last.ns, &*last.id);
        let (records, needed) = (&records, &needed);
        let mut runs = 0;
        let result = self
            .inner
            .pool
            .with_retry(
                || format!("put checkpoint `{last_id}` of thread `{thread}`"),
                Idempotent::Yes,
                |mut pooled| {
                    let again = runs > 0;
                    runs += 1;
                    async move {
                        let conn = &mut *pooled;
                        let result: Result<_, Failure> = async {
                            let head_sql = if expected.is_some() { MOVE_HEAD } else { INSERT_HEAD };
                            let move_head = conn.prepare(head_sql).await?;
                            let select_head = conn.prepare(SELECT_HEAD).await?;
                            let insert_all = conn.prepare(INSERT_CHECKPOINTS).await?;
                            let missing_bases = conn.prepare(MISSING_BASES).await?;
                            let insert_blobs = conn.prepare(INSERT_BLOBS).await?;
                            let replace_writes = match writes.is_empty() {
                                true => None,
                                false => Some(WriteStatements::prepare(conn).await?),
                            };
                            let tx = conn.client.transaction().await?;
                            // Move the head first: its row lock makes a second writer wait, then miss.
                            let moved = match expected {
                                Some(expected) => tx.execute(&move_head, &[&thread, &ns, &last_id, &expected]).await?,
                                None => tx.execute(&move_head, &[&thread, &ns, &last_id]).await?,
                            };
                            if moved == 0 {
                                let found: Option<String> =
                                    tx.query_opt(&select_head, &[&thread, &ns]).await?.map(|row| row.get(0));
                                // A run again after a lost connection finds the head at its own last id when
                                // the first run committed (its reply was lost): the batch is stored.
                                if again && found.as_deref() == Some(last_id) {
                                    return Ok(());
                                }
                                return Err(SaverError::head_moved(thread, ns, expected, found.as_deref()).into());
                            }
                            // Three statements whatever the batch's length (PostgreSQL's CPU goes by
                            // the statement): the checkpoints, the blobs they build on (all stored
                            // before the batch, `check::put` says: the head is at `expected`, so
                            // every stored id is less than the batch's), and their blobs.
                            let inserted = insert_checkpoints(&tx, &insert_all, thread, ns, records).await?;
                            if inserted.len() < records.len() {
                                // Only a store written before ids had to increase can hold a greater id.
                                let taken = records.iter().find(|r| !inserted.iter().any(|id| *id == *r.id));
                                let detail = format!("checkpoint `{}` already exists", taken.map_or("", |r| &*r.id));
                                return Err(SaverError::conflict(thread, ns, detail).into());
                            }
                            if !needed.is_empty() {
                                let (channels, bases): (Vec<&str>, Vec<&str>) =
                                    needed.iter().map(|b| (b.channel, b.at)).unzip();
                                let missing = tx.query_opt(&missing_bases, &[&thread, &ns, &channels, &bases]).await?;
                                if let Some(row) = missing {
                                    let (channel, base, n): (String, String, i64) =
                                        (row.get(0), row.get(1), row.get(2));
                                    let record = usize::try_from(n - 1)
                                        .ok()
                                        .and_then(|i| needed.get(i))
                                        .map(|b| b.record);
                                    return Err(
                                        check::missing_base(&records[record.unwrap_or(0)], &channel, &base).into()
                                    );
                                }
                            }
                            let blobs = || records.iter().flat_map(|r| r.blobs.iter().map(move |b| (r, b)));
                            if blobs().next().is_some() {
                                let ids: Vec<&str> = blobs().map(|(r, _)| &*r.id).collect();
                                let channels: Vec<&str> = blobs().map(|(_, b)| &*b.channel).collect();
                                let delta_of: Vec<Option<&str>> = blobs().map(|(_, b)| b.delta_of.as_deref()).collect();
                                let bytes: Vec<&[u8]> = blobs().map(|(_, b)| b.bytes.as_slice()).collect();
                                tx.execute(&insert_blobs, &[&thread, &ns, &ids, &channels, &delta_of, &bytes])
                                    .await?;
                            }
                            if let Some(statements) = &replace_writes {
                                // The checkpoints of this batch and the head it moved from exist.
                                let known = |w: &TaskWrites| {
                                    (w.ns == last.ns && expected == Some(&*w.checkpoint))
                                        || records.iter().any(|r| r.id == w.checkpoint && r.ns == w.ns)
                                };
                                statements.replace(&tx, thread, writes, known).await?;
                            }
                            tx.commit().await?;
                            Ok(())
                        }
                        .await;
                        result
                    }
                },
            )
            .await;
        self.finish(result)
    }

    /// Stores the writes of a task against a stored checkpoint, replacing its earlier ones.
    pub(super) async fn put_writes_now(
        &self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: &str,
        task_id: &str,
        writes: Vec<PendingWrite>,
    ) -> Result<(), SaverError> {
        check::writes(thread_id, checkpoint_id, task_id, &writes)?;
        let writes = &[TaskWrites {
            ns: ns.into(),
            checkpoint: checkpoint_id.into(),
            task_id: task_id.to_owned(),
            rows: writes,
        }];
        let result = self.inner.pool.with_retry(|| format!("put the pending writes of task `{task_id}` on checkpoint `{checkpoint_id}` of thread `{thread_id}`"), Idempotent::Yes, |mut pooled| async move {
        let conn = &mut *pooled;
        let result: Result<_, Failure> = async {
            let statements = WriteStatements::prepare(conn).await?;
            let tx = conn.client.transaction().await?;
            statements.replace(&tx, thread_id, writes, |_| false).await?;
            tx.commit().await?;
            Ok(())
        }
        .await;
        result
        }).await;
        self.finish(result)
    }
}

/// The statements that replace tasks' pending writes.
struct WriteStatements {
    exists: Statement,
    delete: Statement,
    insert: Statement,
}

impl WriteStatements {
    async fn prepare(conn: &mut crate::postgres::Conn) -> Result<Self, tokio_postgres::Error> {
        Ok(Self {
            exists: conn.prepare(CHECKPOINT_EXISTS).await?,
            delete: conn.prepare(DELETE_TASKS_WRITES).await?,
            insert: conn.prepare(INSERT_TASKS_WRITES).await?,
        })
    }

    /// Replaces the writes of each task of `tasks` (of `thread`) on its checkpoint, in `tx`, in
    /// two statements whatever their number, sent together (one round trip: the server runs
    /// them in order); first checks that each checkpoint not `known` exists.
    async fn replace(
        &self,
        tx: &Transaction<'_>,
        thread: &str,
        tasks: &[TaskWrites],
        known: impl Fn(&TaskWrites) -> bool,
    ) -> Result<(), Failure> {
        let mut looked: Vec<(&str, &str)> = Vec::new();
        for t in tasks.iter().filter(|t| !known(t)) {
            let at = (&*t.ns, &*t.checkpoint);
            if !looked.contains(&at) {
                if tx.query_opt(&self.exists, &[&thread, &at.0, &at.1]).await?.is_none() {
                    return Err(check::unknown_checkpoint(thread, at.0, at.1).into());
                }
                looked.push(at);
            }
        }
        // The tasks, then their rows, as columns.
        let tns: Vec<&str> = tasks.iter().map(|t| &*t.ns).collect();
        let tat: Vec<&str> = tasks.iter().map(|t| &*t.checkpoint).collect();
        let ttask: Vec<&str> = tasks.iter().map(|t| t.task_id.as_str()).collect();
        let rows = || tasks.iter().flat_map(|t| t.rows.iter().map(move |w| (t, w)));
        let ns: Vec<&str> = rows().map(|(t, _)| &*t.ns).collect();
        let at: Vec<&str> = rows().map(|(t, _)| &*t.checkpoint).collect();
        let task: Vec<&str> = rows().map(|(t, _)| t.task_id.as_str()).collect();
        let idx: Vec<i64> = rows().map(|(_, w)| w.idx).collect();
        let paths: Vec<&str> = rows().map(|(_, w)| w.task_path.as_str()).collect();
        let channels: Vec<&str> = rows().map(|(_, w)| &*w.channel).collect();
        let bytes: Vec<&[u8]> = rows().map(|(_, w)| w.bytes.as_slice()).collect();
        let of: [&(dyn ToSql + Sync); 4] = [&thread, &tns, &tat, &ttask];
        let delete = tx.execute(&self.delete, &of);
        let insert = async {
            if idx.is_empty() {
                return Ok(0);
            }
            let params: [&(dyn ToSql + Sync); 8] = [&thread, &ns, &at, &task, &idx, &paths, &channels, &bytes];
            tx.execute(&self.insert, &params).await
        };
        // The delete is polled, so sent, first.
        futures::try_join!(delete, insert)?;
        Ok(())
    }
}

/// Inserts `records` (of `thread` and `ns`) with [`INSERT_CHECKPOINTS`]; the ids it stored.
async fn insert_checkpoints(
    tx: &Transaction<'_>,
    statement: &Statement,
    thread: &str,
    ns: &str,
    records: &[CheckpointRecord],
) -> Result<Vec<String>, tokio_postgres::Error> {
    let texts: Vec<_> = records.iter().map(sql::encode).collect();
    let ids: Vec<&str> = records.iter().map(|r| &*r.id).collect();
    let parents: Vec<Option<&str>> = records.iter().map(|r| r.parent_id.as_deref()).collect();
    let steps: Vec<i64> = records.iter().map(|r| r.step).collect();
    let sources: Vec<&str> = records.iter().map(|r| r.source.as_str()).collect();
    let writes: Vec<&str> = texts.iter().map(|t| t.writes()).collect();
    let metadata: Vec<&str> = texts.iter().map(|t| t.metadata()).collect();
    let created_at: Vec<&str> = texts.iter().map(|t| t.created_at()).collect();
    let channels: Vec<&str> = texts.iter().map(|t| t.channels()).collect();
    let bodies: Vec<&[u8]> = records.iter().map(|r| r.body.as_slice()).collect();
    let params: [&(dyn ToSql + Sync); 11] = [
        &thread,
        &ns,
        &ids,
        &parents,
        &steps,
        &sources,
        &writes,
        &metadata,
        &created_at,
        &channels,
        &bodies,
    ];
    let rows = tx.query(statement, &params).await?;
    Ok(rows.iter().map(|row| row.get(0)).collect())
}
