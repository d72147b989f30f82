//! The saver and its options: connecting, and the `Checkpointer` methods.

use super::pool::{Failure, Inner};
use super::read::{read_row, select_checkpoint, select_list, SELECT_HEAD};
use super::schema::migrate;
use crate::checkpoint::sql;
use crate::checkpoint::{
    CheckpointRecord, Checkpointer, Held, Loaded, MadeByRun, PendingWrite, Pruned, Retention, SaverError, TaskWrites,
    Usage,
};
use crate::postgres::Idempotent;
use crate::postgres::{Pool, PoolOptions};
use futures::future::{BoxFuture, FutureExt};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

const THREADS: &str = "SELECT DISTINCT thread_id FROM heads ORDER BY thread_id";
const NAMESPACES: &str = "SELECT DISTINCT ns FROM checkpoints WHERE thread_id = $1 ORDER BY ns";
const USAGE: &str = "SELECT (SELECT COUNT(*) FROM checkpoints WHERE thread_id = $1), \
     (SELECT COUNT(*) FROM blobs WHERE thread_id = $1), \
     (SELECT COALESCE(SUM(octet_length(bytes)), 0)::bigint FROM blobs WHERE thread_id = $1), \
     (SELECT COUNT(*) FROM writes WHERE thread_id = $1)";

/// How a [`PostgresSaver`] connects: made by [`PostgresSaver::options`].
#[derive(Clone, Debug)]
pub struct PostgresOptions {
    schema: String,
    pool: PoolOptions,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            schema: "weir".to_owned(),
            pool: PoolOptions::new().size(4),
        }
    }
}

impl PostgresOptions {
    /// The PostgreSQL schema that holds the tables (default `weir`): lower-case ASCII letters,
    /// digits and `_`, not starting with a digit, at most 63 bytes.
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }
    /// How many connections calls share (default 4, at least 1).
    pub fn connections(mut self, connections: usize) -> Self {
        self.pool = self.pool.size(connections);
        self
    }
    /// How long a call waits for a connection while all are in use before it fails (default:
    /// no limit).
    pub fn acquire_timeout(mut self, timeout: Duration) -> Self {
        self.pool = self.pool.acquire_timeout(timeout);
        self
    }
    /// The pool's options at once (its size and acquire timeout; the schema is
    /// [`schema`](Self::schema)'s).
    pub fn pool(mut self, pool: PoolOptions) -> Self {
        self.pool = pool;
        self
    }
    /// Connects to the database at `url` (e.g. `postgres://postgres@127.0.0.1:5432/test`),
    /// creating the schema and its tables on first use and migrating an older version.
    ///
    /// # Errors
    ///
    /// [`SaverError::is_schema_too_new`] when the schema was written by a newer weir (it is not
    /// modified); [`SaverError::is_invalid`] for a bad schema name; a database error when the
    /// server cannot be reached.
    pub async fn connect(self, url: &str) -> Result<PostgresSaver, SaverError> {
        crate::postgres::check_schema(&self.schema).map_err(SaverError::config)?;
        let inner = Inner {
            pool: Pool::new(url, self.pool.schema(self.schema.clone())),
            schema: self.schema,
            select_checkpoint: select_checkpoint(),
            select_list: select_list(),
        };
        let mut first = inner.pool.open().await.map_err(|e| inner.fail(e))?;
        migrate(&mut first.client, &inner.schema)
            .await
            .map_err(|e| e.into_saver_error(&inner))?;
        inner.pool.keep(first).await.map_err(|e| inner.fail(e))?;
        Ok(PostgresSaver { inner: Arc::new(inner) })
    }
}

/// The PostgreSQL checkpoint saver: for several machines sharing threads.
///
/// Clones share the connections. See the [`checkpoint`](crate::checkpoint) module docs for the model.
///
/// # Examples
///
/// ```no_run
/// use weir_runtime::checkpoint::{Checkpointer, PostgresSaver};
///
/// # async fn run() -> Result<(), weir_runtime::checkpoint::SaverError> {
/// let saver = PostgresSaver::connect("postgres://postgres@127.0.0.1:5432/test").await?;
/// println!("{:?}", saver.threads().await?);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct PostgresSaver {
    pub(super) inner: Arc<Inner>,
}

impl fmt::Debug for PostgresSaver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresSaver")
            .field("url", &crate::postgres::without_password(self.inner.pool.url()))
            .field("schema", &self.inner.schema)
            .finish_non_exhaustive()
    }
}

impl PostgresSaver {
    /// Connects to the database at `url`, keeping the tables in the schema `weir`. See
    /// [`PostgresOptions::connect`].
    pub async fn connect(url: &str) -> Result<Self, SaverError> {
        PostgresOptions::default().connect(url).await
    }

    /// Connects to the database at `url`, keeping the tables in `schema` (created on first use),
    /// apart from every other schema's. See [`PostgresOptions::connect`].
    pub async fn connect_with_schema(url: &str, schema: &str) -> Result<Self, SaverError> {
        PostgresOptions::default().schema(schema).connect(url).await
    }

    /// Options for connecting, to change the defaults of [`connect`](Self::connect).
    pub fn options() -> PostgresOptions {
        PostgresOptions::default()
    }

    /// The PostgreSQL schema that holds the tables.
    pub fn schema(&self) -> &str {
        &self.inner.schema
    }
}

impl Checkpointer for PostgresSaver {
    fn put_many<'a>(
        &'a self,
        records: Vec<CheckpointRecord>,
        expected_head: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        self.put_batch(records, expected_head, None, Vec::new()).boxed()
    }

    fn put_made<'a>(
        &'a self,
        records: Vec<CheckpointRecord>,
        expected_head: Option<&'a str>,
        made: MadeByRun,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        self.put_batch(records, expected_head, Some(made), Vec::new()).boxed()
    }

    /// One transaction: the checkpoints, then the tasks' writes.
    fn put_made_with_writes<'a>(
        &'a self,
        thread_id: &'a str,
        records: Vec<CheckpointRecord>,
        writes: Vec<TaskWrites>,
        expected_head: Option<&'a str>,
        made: MadeByRun,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        if records.is_empty() {
            return self.put_writes_made(thread_id, writes, made);
        }
        self.put_batch(records, expected_head, Some(made), writes).boxed()
    }

    fn get<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<Loaded>, SaverError>> {
        self.get_now(thread_id, ns, id, &[]).boxed()
    }

    fn get_holding<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        id: Option<&'a str>,
        held: &'a [Held],
    ) -> BoxFuture<'a, Result<Option<Loaded>, SaverError>> {
        self.get_now(thread_id, ns, id, held).boxed()
    }

    fn head<'a>(&'a self, thread_id: &'a str, ns: &'a str) -> BoxFuture<'a, Result<Option<String>, SaverError>> {
        async move {
            let result = self
                .inner
                .pool
                .with_retry(
                    || format!("reading the head of thread `{thread_id}`"),
                    Idempotent::Yes,
                    |mut pooled| async move {
                        let conn = &mut *pooled;
                        let result: Result<_, Failure> = async {
                            let select_head = conn.prepare(SELECT_HEAD).await?;
                            Ok(conn
                                .client
                                .query_opt(&select_head, &[&thread_id, &ns])
                                .await?
                                .map(|r| r.get(0)))
                        }
                        .await;
                        result
                    },
                )
                .await;
            self.finish(result)
        }
        .boxed()
    }

    fn list<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        before: Option<&'a str>,
        limit: Option<usize>,
    ) -> BoxFuture<'a, Result<Vec<CheckpointRecord>, SaverError>> {
        let limit = limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX));
        async move {
            let result = self
                .inner
                .pool
                .with_retry(
                    || format!("listing the checkpoints of thread `{thread_id}`"),
                    Idempotent::Yes,
                    |mut pooled| async move {
                        let conn = &mut *pooled;
                        let result: Result<_, Failure> = async {
                            let select = conn.prepare(&self.inner.select_list).await?;
                            let rows = conn.client.query(&select, &[&thread_id, &ns, &before, &limit]).await?;
                            Ok(rows
                                .iter()
                                .map(|r| sql::decode(read_row(r)))
                                .collect::<Result<_, _>>()?)
                        }
                        .await;
                        result
                    },
                )
                .await;
            self.finish(result)
        }
        .boxed()
    }

    fn history<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        before: Option<&'a str>,
        limit: Option<usize>,
    ) -> BoxFuture<'a, Result<Vec<Loaded>, SaverError>> {
        self.history_now(thread_id, ns, before, limit).boxed()
    }

    fn put_writes<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        checkpoint_id: &'a str,
        task_id: &'a str,
        writes: Vec<PendingWrite>,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        self.put_writes_now(thread_id, ns, checkpoint_id, task_id, writes)
            .boxed()
    }

    fn delete_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<(), SaverError>> {
        async move {
            let result = self
                .inner
                .pool
                .with_retry(
                    || format!("deleting thread `{thread_id}`"),
                    Idempotent::Yes,
                    |mut pooled| async move {
                        let conn = &mut *pooled;
                        let result: Result<_, Failure> = async {
                            let tx = conn.client.transaction().await?;
                            for table in ["writes", "blobs", "checkpoints", "heads", "pruned"] {
                                tx.execute(&format!("DELETE FROM {table} WHERE thread_id = $1"), &[&thread_id])
                                    .await?;
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
        .boxed()
    }

    /// In one transaction: the rows after `checkpoint_id`, then each namespace's head moved back
    /// to its greatest remaining id (or dropped with its last checkpoint).
    fn delete_after<'a>(
        &'a self,
        thread_id: &'a str,
        checkpoint_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        let Some(after) = checkpoint_id else {
            return self.delete_thread(thread_id);
        };
        async move {
            let result = self
                .inner
                .pool
                .with_retry(
                    || format!("deleting the checkpoints of thread `{thread_id}` after `{after}`"),
                    Idempotent::Yes,
                    |mut pooled| async move {
                        let conn = &mut *pooled;
                        let result: Result<_, Failure> = async {
                            let tx = conn.client.transaction().await?;
                            for (table, id) in [
                                ("writes", "checkpoint_id"),
                                ("blobs", "checkpoint_id"),
                                ("checkpoints", "id"),
                            ] {
                                let sql = format!("DELETE FROM {table} WHERE thread_id = $1 AND {id} > $2");
                                tx.execute(&sql, &[&thread_id, &after]).await?;
                            }
                            tx.execute(
                                "UPDATE heads h SET head = (SELECT max(c.id) FROM checkpoints c \
                     WHERE c.thread_id = h.thread_id AND c.ns = h.ns) WHERE h.thread_id = $1 AND h.head > $2 \
                     AND EXISTS (SELECT 1 FROM checkpoints c WHERE c.thread_id = h.thread_id AND c.ns = h.ns)",
                                &[&thread_id, &after],
                            )
                            .await?;
                            tx.execute(
                                "DELETE FROM heads WHERE thread_id = $1 AND head > $2",
                                &[&thread_id, &after],
                            )
                            .await?;
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
        .boxed()
    }

    fn namespaces<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Vec<String>, SaverError>> {
        async move {
            let result = self
                .inner
                .pool
                .with_retry(
                    || format!("listing the namespaces of thread `{thread_id}`"),
                    Idempotent::Yes,
                    |mut pooled| async move {
                        let conn = &mut *pooled;
                        let result: Result<_, Failure> = async {
                            let select = conn.prepare(NAMESPACES).await?;
                            let rows = conn.client.query(&select, &[&thread_id]).await?;
                            Ok(rows.iter().map(|r| r.get(0)).collect())
                        }
                        .await;
                        result
                    },
                )
                .await;
            self.finish(result)
        }
        .boxed()
    }

    /// Copies the thread in one transaction of `INSERT … SELECT`s.
    fn copy_thread<'a>(&'a self, from: &'a str, to: &'a str) -> BoxFuture<'a, Result<(), SaverError>> {
        self.copy_thread_now(from, to).boxed()
    }

    fn prune<'a>(&'a self, thread_id: &'a str, policy: &'a Retention) -> BoxFuture<'a, Result<Pruned, SaverError>> {
        self.prune_now(thread_id, policy).boxed()
    }

    fn threads(&self) -> BoxFuture<'_, Result<Vec<String>, SaverError>> {
        async move {
            let result = self
                .inner
                .pool
                .with_retry(
                    || "listing the threads".to_owned(),
                    Idempotent::Yes,
                    |mut pooled| async move {
                        let conn = &mut *pooled;
                        let result: Result<_, Failure> = async {
                            let threads = conn.prepare(THREADS).await?;
                            Ok(conn
                                .client
                                .query(&threads, &[])
                                .await?
                                .iter()
                                .map(|r| r.get(0))
                                .collect())
                        }
                        .await;
                        result
                    },
                )
                .await;
            self.finish(result)
        }
        .boxed()
    }

    fn usage<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Usage, SaverError>> {
        async move {
            let result = self
                .inner
                .pool
                .with_retry(
                    || format!("measuring the storage of thread `{thread_id}`"),
                    Idempotent::Yes,
                    |mut pooled| async move {
                        let conn = &mut *pooled;
                        let result: Result<_, Failure> = async {
                            let usage = conn.prepare(USAGE).await?;
                            let row = conn.client.query_one(&usage, &[&thread_id]).await?;
                            let n = |i: usize| row.get::<_, i64>(i) as u64;
                            Ok(Usage {
                                checkpoints: n(0),
                                blobs: n(1),
                                blob_bytes: n(2),
                                pending_writes: n(3),
                            })
                        }
                        .await;
                        result
                    },
                )
                .await;
            self.finish(result)
        }
        .boxed()
    }
}
