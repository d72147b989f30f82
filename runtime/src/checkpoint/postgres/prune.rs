//! The PostgreSQL saver's retention: a thread pruned in one transaction. Blobs live in their
//! own table, so a pruned checkpoint's blobs that kept ones still need simply stay (found by one
//! recursive query over the kept checkpoints' channels and the delta chains), and the others
//! go; `pruned` holds the id each pruned thread was pruned through.

use super::pool::Failure;
use super::saver::PostgresSaver;
use crate::checkpoint::retention::{plan, Plan};
use crate::checkpoint::{Loaded, Pruned, Retention, SaverError, Timestamp};
use crate::postgres::Idempotent;
use tokio_postgres::GenericClient;

/// Deletes the blobs of checkpoints up to `$2` that no checkpoint after `$2` needs: those the
/// kept checkpoints' channels point at, and the links of their delta chains, stay.
const DELETE_UNNEEDED_BLOBS: &str = r#"WITH RECURSIVE chain (ns, channel, checkpoint_id) AS (
       SELECT DISTINCT c.ns, (e ->> 0) COLLATE "C", (e ->> 2) COLLATE "C"
       FROM checkpoints c CROSS JOIN LATERAL json_array_elements(c.channels::json) AS e
       WHERE c.thread_id = $1 AND c.id > $2 AND e ->> 2 IS NOT NULL
     UNION
       SELECT b.ns, b.channel, b.delta_of COLLATE "C" FROM chain ch
       JOIN blobs b ON b.thread_id = $1 AND b.ns = ch.ns AND b.channel = ch.channel
         AND b.checkpoint_id = ch.checkpoint_id
       WHERE b.delta_of IS NOT NULL
     )
     DELETE FROM blobs b WHERE b.thread_id = $1 AND b.checkpoint_id <= $2 AND NOT EXISTS (
       SELECT 1 FROM chain ch WHERE ch.ns = b.ns AND ch.channel = b.channel AND ch.checkpoint_id = b.checkpoint_id)"#;

/// The statements that remove a thread's checkpoints up to `$2`, after its blobs.
const PRUNE_THROUGH: [&str; 4] = [
    "DELETE FROM writes WHERE thread_id = $1 AND checkpoint_id <= $2",
    "DELETE FROM checkpoints WHERE thread_id = $1 AND id <= $2",
    "DELETE FROM heads h WHERE h.thread_id = $1 AND h.head <= $2 \
     AND NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.thread_id = h.thread_id AND c.ns = h.ns)",
    "INSERT INTO pruned (thread_id, through) VALUES ($1, $2) \
     ON CONFLICT (thread_id) DO UPDATE SET through = EXCLUDED.through",
];

/// The answer to a read of checkpoint `id`, which has no row: an error if the thread was pruned
/// through it, else nothing.
pub(super) async fn not_found(
    client: &impl GenericClient,
    thread: &str,
    ns: &str,
    id: &str,
) -> Result<Option<Loaded>, Failure> {
    let row = client
        .query_opt("SELECT through FROM pruned WHERE thread_id = $1", &[&thread])
        .await?;
    match row.map(|r| r.get::<_, String>(0)) {
        Some(through) if id <= through.as_str() => Err(SaverError::pruned(thread, ns, id, &through).into()),
        _ => Ok(None),
    }
}

/// The number a `SELECT COUNT(*)` of `sql` gives.
async fn count(client: &impl GenericClient, sql: &str, thread: &str, through: Option<&str>) -> Result<u64, Failure> {
    let row = match through {
        Some(through) => client.query_one(sql, &[&thread, &through]).await?,
        None => client.query_one(sql, &[&thread]).await?,
    };
    Ok(row.get::<_, i64>(0) as u64)
}

impl PostgresSaver {
    /// Applies `policy` to `thread` in one transaction, which first locks the thread's heads
    /// (a put to the thread waits for it).
    pub(super) async fn prune_now(&self, thread: &str, policy: &Retention) -> Result<Pruned, SaverError> {
        let result = self
            .inner
            .pool
            .with_retry(
                || format!("pruning thread `{thread}`"),
                Idempotent::Yes,
                |mut pooled| async move {
                    let conn = &mut *pooled;
                    let result: Result<_, Failure> = async {
                        let tx = conn.client.transaction().await?;
                        tx.query("SELECT 1 FROM heads WHERE thread_id = $1 FOR UPDATE", &[&thread])
                            .await?;
                        let mut root = Vec::new();
                        let rows = tx
                            .query(
                                "SELECT id, created_at FROM checkpoints WHERE thread_id = $1 AND ns = '' ORDER BY id",
                                &[&thread],
                            )
                            .await?;
                        for r in rows {
                            let (id, at): (String, String) = (r.get(0), r.get(1));
                            let Some(at) = Timestamp::parse(&at) else {
                                let detail = format!("cannot decode its creation time `{at}`");
                                return Err(SaverError::corrupt(thread, &id, detail).into());
                            };
                            root.push((id, at));
                        }
                        let out = match plan(&root, policy, Timestamp::now()) {
                            Plan::Keep => Pruned::default(),
                            Plan::Delete => {
                                let out = Pruned {
                                    threads_deleted: 1,
                                    checkpoints: count(
                                        &tx,
                                        "SELECT COUNT(*) FROM checkpoints WHERE thread_id = $1",
                                        thread,
                                        None,
                                    )
                                    .await?,
                                    pending_writes: count(
                                        &tx,
                                        "SELECT COUNT(*) FROM writes WHERE thread_id = $1",
                                        thread,
                                        None,
                                    )
                                    .await?,
                                    ..Pruned::default()
                                };
                                if !policy.dry_run {
                                    for table in ["writes", "blobs", "checkpoints", "heads", "pruned"] {
                                        tx.execute(&format!("DELETE FROM {table} WHERE thread_id = $1"), &[&thread])
                                            .await?;
                                    }
                                }
                                out
                            }
                            Plan::Through(through) => {
                                let through = Some(through.as_str());
                                let out = Pruned {
                                    threads_pruned: 1,
                                    checkpoints: count(
                                        &tx,
                                        "SELECT COUNT(*) FROM checkpoints WHERE thread_id = $1 AND id <= $2",
                                        thread,
                                        through,
                                    )
                                    .await?,
                                    pending_writes: count(
                                        &tx,
                                        "SELECT COUNT(*) FROM writes WHERE thread_id = $1 AND checkpoint_id <= $2",
                                        thread,
                                        through,
                                    )
                                    .await?,
                                    ..Pruned::default()
                                };
                                if !policy.dry_run {
                                    tx.execute(DELETE_UNNEEDED_BLOBS, &[&thread, &through]).await?;
                                    for sql in PRUNE_THROUGH {
                                        tx.execute(sql, &[&thread, &through]).await?;
                                    }
                                }
                                out
                            }
                        };
                        tx.commit().await?;
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
