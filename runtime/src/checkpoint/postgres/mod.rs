//! The PostgreSQL saver: for several machines sharing threads.
//!
//! All tables live in one PostgreSQL schema (`weir` unless told otherwise), so several
//! applications, or tests, can share a database without seeing each other. The schema's version
//! is the greatest row of its `weir_schema` table; [`schema`] lists the steps from each
//! version to the next, applied under an advisory lock so two processes starting together migrate
//! once. A schema with a newer version than this weir knows is refused and left untouched.
//!
//! The saver keeps a few connections and hands each call one of them, so calls for different
//! threads run side by side. A put moves the head with
//! `UPDATE heads … WHERE head = $expected` (or an insert that does nothing when a head exists),
//! first in its transaction: a second writer waits on the row lock, then finds the head moved.
//! A checkpoint, or a whole history, is read in one repeatable-read snapshot ([`read`]).

mod read;
mod schema;

use super::sql::{self, Row};
use super::{check, CheckpointRecord, Checkpointer, Loaded, MadeByRun, PendingWrite, SaverError, Usage};
use futures::future::{BoxFuture, FutureExt};
use schema::{migrate, redact};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use tokio::sync::{Semaphore, SemaphorePermit};
use tokio_postgres::{Client, NoTls, Statement};

const SELECT_HEAD: &str = "SELECT head FROM heads WHERE thread_id = $1 AND ns = $2";
const INSERT_HEAD: &str = "INSERT INTO heads (thread_id, ns, head) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING";
const MOVE_HEAD: &str = "UPDATE heads SET head = $3 WHERE thread_id = $1 AND ns = $2 AND head = $4";
const INSERT_CHECKPOINT: &str = "INSERT INTO checkpoints (thread_id, ns, id, parent_id, step, source, writes, \
     metadata, created_at, channels, body) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
     ON CONFLICT DO NOTHING";
const MISSING_BASES: &str = "SELECT d.channel, d.base FROM unnest($3::text[], $4::text[]) AS d(channel, base) \
     WHERE NOT EXISTS (SELECT 1 FROM blobs b WHERE b.thread_id = $1 AND b.ns = $2 \
     AND b.checkpoint_id = d.base AND b.channel = d.channel) LIMIT 1";
const INSERT_BLOBS: &str = "INSERT INTO blobs (thread_id, ns, checkpoint_id, channel, delta_of, bytes) \
     SELECT $1, $2, $3, t.channel, t.delta_of, t.bytes \
     FROM unnest($4::text[], $5::text[], $6::bytea[]) AS t(channel, delta_of, bytes)";
const CHECKPOINT_EXISTS: &str = "SELECT 1 FROM checkpoints WHERE thread_id = $1 AND ns = $2 AND id = $3";
const DELETE_TASK_WRITES: &str =
    "DELETE FROM writes WHERE thread_id = $1 AND ns = $2 AND checkpoint_id = $3 AND task_id = $4";
const INSERT_WRITES: &str = "INSERT INTO writes (thread_id, ns, checkpoint_id, task_id, idx, task_path, channel, \
     bytes) SELECT $1, $2, $3, $4, t.idx, t.task_path, t.channel, t.bytes \
     FROM unnest($5::bigint[], $6::text[], $7::text[], $8::bytea[]) AS t(idx, task_path, channel, bytes)";
const THREADS: &str = "SELECT DISTINCT thread_id FROM heads ORDER BY thread_id";
const USAGE: &str = "SELECT (SELECT COUNT(*) FROM checkpoints WHERE thread_id = $1), \
     (SELECT COUNT(*) FROM blobs WHERE thread_id = $1), \
     (SELECT COALESCE(SUM(octet_length(bytes)), 0)::bigint FROM blobs WHERE thread_id = $1), \
     (SELECT COUNT(*) FROM writes WHERE thread_id = $1)";

fn select_checkpoint() -> String {
    format!(
        "SELECT {} FROM checkpoints WHERE thread_id = $1 AND ns = $2 AND id = $3",
        sql::COLUMNS
    )
}

fn select_list() -> String {
    format!(
        "SELECT {} FROM checkpoints WHERE thread_id = $1 AND ns = $2 AND ($3::text IS NULL OR id < $3) \
         ORDER BY id DESC LIMIT $4",
        sql::COLUMNS
    )
}

/// How a [`PostgresSaver`] connects: made by [`PostgresSaver::options`].
#[derive(Clone, Debug)]
pub struct PostgresOptions {
    schema: String,
    connections: usize,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            schema: "weir".to_owned(),
            connections: 4,
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
        self.connections = connections.max(1);
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
        let valid = !self.schema.is_empty()
            && self.schema.len() <= 63
            && !self.schema.starts_with(|c: char| c.is_ascii_digit())
            && self
                .schema
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !valid {
            return Err(SaverError::config(format!(
                "`{}` cannot name a PostgreSQL schema; use lower-case ASCII letters, digits and `_`",
                self.schema
            )));
        }
        let inner = Inner {
            url: url.to_owned(),
            schema: self.schema.clone(),
            idle: Mutex::new(Vec::new()),
            permits: Semaphore::new(self.connections),
            select_checkpoint: select_checkpoint(),
            select_list: select_list(),
        };
        let mut first = inner.open_unprepared().await?;
        migrate(&mut first.client, &inner.schema)
            .await
            .map_err(|e| e.into_saver_error(&inner))?;
        first
            .client
            .batch_execute(&format!("SET search_path TO \"{}\"", inner.schema))
            .await
            .map_err(|e| inner.fail(e))?;
        inner.idle.lock().unwrap_or_else(|p| p.into_inner()).push(first);
        Ok(PostgresSaver { inner: Arc::new(inner) })
    }
}

/// The PostgreSQL checkpoint saver: for several machines sharing threads.
///
/// Clones share the connections. See the [module docs](super) for the model.
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
    inner: Arc<Inner>,
}

struct Inner {
    url: String,
    schema: String,
    /// Idle connections; at most `permits` are out at once.
    idle: Mutex<Vec<Conn>>,
    permits: Semaphore,
    select_checkpoint: String,
    select_list: String,
}

impl fmt::Debug for PostgresSaver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresSaver")
            .field("url", &redact(&self.inner.url))
            .field("schema", &self.inner.schema)
            .finish_non_exhaustive()
    }
}

/// A connection with its prepared statements.
struct Conn {
    client: Client,
    statements: HashMap<String, Statement>,
}

impl Conn {
    async fn prepare(&mut self, query: &str) -> Result<Statement, tokio_postgres::Error> {
        if let Some(statement) = self.statements.get(query) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(query).await?;
        self.statements.insert(query.to_owned(), statement.clone());
        Ok(statement)
    }
}

impl Inner {
    fn fail(&self, e: tokio_postgres::Error) -> SaverError {
        SaverError::backend(
            format!("postgres checkpoint store (schema `{}`) failed", self.schema),
            e,
        )
    }

    async fn open_unprepared(&self) -> Result<Conn, SaverError> {
        let (client, connection) = tokio_postgres::connect(&self.url, NoTls)
            .await
            .map_err(|e| self.fail(e))?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "postgres checkpoint connection closed");
            }
        });
        Ok(Conn {
            client,
            statements: HashMap::new(),
        })
    }

    async fn open(&self) -> Result<Conn, SaverError> {
        let conn = self.open_unprepared().await?;
        conn.client
            .batch_execute(&format!("SET search_path TO \"{}\"", self.schema))
            .await
            .map_err(|e| self.fail(e))?;
        Ok(conn)
    }
}

/// A connection taken from the pool; goes back when dropped, unless it broke.
struct Pooled<'a> {
    conn: Option<Conn>,
    inner: &'a Inner,
    _permit: SemaphorePermit<'a>,
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take().filter(|c| !c.client.is_closed()) {
            self.inner.idle.lock().unwrap_or_else(|p| p.into_inner()).push(conn);
        }
    }
}

impl std::ops::Deref for Pooled<'_> {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        self.conn.as_ref().expect("present until dropped")
    }
}

impl std::ops::DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut Conn {
        self.conn.as_mut().expect("present until dropped")
    }
}

/// An error inside a call: a saver error, or PostgreSQL's (named with the schema afterwards).
enum Failure {
    Saver(SaverError),
    Postgres(tokio_postgres::Error),
}

impl From<tokio_postgres::Error> for Failure {
    fn from(e: tokio_postgres::Error) -> Self {
        Failure::Postgres(e)
    }
}

impl From<SaverError> for Failure {
    fn from(e: SaverError) -> Self {
        Failure::Saver(e)
    }
}

fn read_row(r: &tokio_postgres::Row) -> Row {
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

    async fn conn(&self) -> Result<Pooled<'_>, SaverError> {
        let permit = self
            .inner
            .permits
            .acquire()
            .await
            .expect("the semaphore is never closed");
        let idle = self.inner.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let conn = match idle.filter(|c| !c.client.is_closed()) {
            Some(conn) => conn,
            None => self.inner.open().await?,
        };
        Ok(Pooled {
            conn: Some(conn),
            inner: &self.inner,
            _permit: permit,
        })
    }

    /// Names the schema in PostgreSQL's errors.
    fn finish<T>(&self, result: Result<T, Failure>) -> Result<T, SaverError> {
        match result {
            Ok(value) => Ok(value),
            Err(Failure::Saver(e)) => Err(e),
            Err(Failure::Postgres(e)) => Err(self.inner.fail(e)),
        }
    }

    /// Stores `records` in one transaction, as successive heads: all of them or none.
    async fn put_batch(
        &self,
        records: Vec<CheckpointRecord>,
        expected: Option<&str>,
        made: Option<MadeByRun>,
    ) -> Result<(), SaverError> {
        let needed = check::put(&records, expected, made)?;
        let Some(last) = records.last() else { return Ok(()) };
        let (thread, ns, last_id) = (&*last.thread_id, &*last.ns, &*last.id);
        let mut pooled = self.conn().await?;
        let conn = &mut *pooled;
        let result: Result<_, Failure> = async {
            let head_sql = if expected.is_some() { MOVE_HEAD } else { INSERT_HEAD };
            let move_head = conn.prepare(head_sql).await?;
            let select_head = conn.prepare(SELECT_HEAD).await?;
            let insert_checkpoint = conn.prepare(INSERT_CHECKPOINT).await?;
            let missing_bases = conn.prepare(MISSING_BASES).await?;
            let insert_blobs = conn.prepare(INSERT_BLOBS).await?;
            let tx = conn.client.transaction().await?;
            // Move the head first: its row lock makes a second writer wait, then miss.
            let moved = match expected {
                Some(expected) => tx.execute(&move_head, &[&thread, &ns, &last_id, &expected]).await?,
                None => tx.execute(&move_head, &[&thread, &ns, &last_id]).await?,
            };
            if moved == 0 {
                let found: Option<String> = tx.query_opt(&select_head, &[&thread, &ns]).await?.map(|row| row.get(0));
                return Err(SaverError::head_moved(thread, ns, expected, found.as_deref()).into());
            }
            // The bases come in record order: each record takes its own off the front.
            let mut bases_left = &needed[..];
            for (i, r) in records.iter().enumerate() {
                let own = bases_left.partition_point(|b| b.record <= i);
                let (own, later) = bases_left.split_at(own);
                bases_left = later;
                let text = sql::encode(r);
                let inserted = tx
                    .execute(
                        &insert_checkpoint,
                        &[
                            &&*r.thread_id,
                            &&*r.ns,
                            &&*r.id,
                            &r.parent_id.as_deref(),
                            &r.step,
                            &r.source.as_str(),
                            &text.writes(),
                            &text.metadata(),
                            &text.created_at(),
                            &text.channels(),
                            &r.body,
                        ],
                    )
                    .await?;
                // Only a store written before ids had to increase can hold a greater id.
                if inserted == 0 {
                    let detail = format!("checkpoint `{}` already exists", r.id);
                    return Err(SaverError::conflict(thread, ns, detail).into());
                }
                let (channels, bases): (Vec<&str>, Vec<&str>) = own.iter().map(|b| (b.channel, b.at)).unzip();
                if !channels.is_empty() {
                    let missing = tx.query_opt(&missing_bases, &[&thread, &ns, &channels, &bases]).await?;
                    if let Some(row) = missing {
                        let (channel, base): (String, String) = (row.get(0), row.get(1));
                        return Err(check::missing_base(r, &channel, &base).into());
                    }
                }
                if !r.blobs.is_empty() {
                    let channels: Vec<&str> = r.blobs.iter().map(|b| &*b.channel).collect();
                    let delta_of: Vec<Option<&str>> = r.blobs.iter().map(|b| b.delta_of.as_deref()).collect();
                    let bytes: Vec<&[u8]> = r.blobs.iter().map(|b| b.bytes.as_slice()).collect();
                    tx.execute(&insert_blobs, &[&thread, &ns, &&*r.id, &channels, &delta_of, &bytes])
                        .await?;
                }
            }
            tx.commit().await?;
            Ok(())
        }
        .await;
        self.finish(result)
    }

    async fn put_writes_now(
        &self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: &str,
        task_id: &str,
        writes: Vec<PendingWrite>,
    ) -> Result<(), SaverError> {
        check::writes(thread_id, checkpoint_id, task_id, &writes)?;
        let mut pooled = self.conn().await?;
        let conn = &mut *pooled;
        let result: Result<_, Failure> = async {
            let exists = conn.prepare(CHECKPOINT_EXISTS).await?;
            let delete = conn.prepare(DELETE_TASK_WRITES).await?;
            let insert = conn.prepare(INSERT_WRITES).await?;
            let tx = conn.client.transaction().await?;
            if tx
                .query_opt(&exists, &[&thread_id, &ns, &checkpoint_id])
                .await?
                .is_none()
            {
                return Err(check::unknown_checkpoint(thread_id, ns, checkpoint_id).into());
            }
            tx.execute(&delete, &[&thread_id, &ns, &checkpoint_id, &task_id])
                .await?;
            if !writes.is_empty() {
                let idx: Vec<i64> = writes.iter().map(|w| w.idx).collect();
                let paths: Vec<&str> = writes.iter().map(|w| w.task_path.as_str()).collect();
                let channels: Vec<&str> = writes.iter().map(|w| &*w.channel).collect();
                let bytes: Vec<&[u8]> = writes.iter().map(|w| w.bytes.as_slice()).collect();
                tx.execute(
                    &insert,
                    &[
                        &thread_id,
                        &ns,
                        &checkpoint_id,
                        &task_id,
                        &idx,
                        &paths,
                        &channels,
                        &bytes,
                    ],
                )
                .await?;
            }
            tx.commit().await?;
            Ok(())
        }
        .await;
        self.finish(result)
    }
}

impl Checkpointer for PostgresSaver {
    fn put_many<'a>(
        &'a self,
        records: Vec<CheckpointRecord>,
        expected_head: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        self.put_batch(records, expected_head, None).boxed()
    }

    fn put_made<'a>(
        &'a self,
        records: Vec<CheckpointRecord>,
        expected_head: Option<&'a str>,
        made: MadeByRun,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        self.put_batch(records, expected_head, Some(made)).boxed()
    }

    fn get<'a>(
        &'a self,
        thread_id: &'a str,
        ns: &'a str,
        id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<Loaded>, SaverError>> {
        self.get_now(thread_id, ns, id).boxed()
    }

    fn head<'a>(&'a self, thread_id: &'a str, ns: &'a str) -> BoxFuture<'a, Result<Option<String>, SaverError>> {
        async move {
            let mut pooled = self.conn().await?;
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
            let mut pooled = self.conn().await?;
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
            let mut pooled = self.conn().await?;
            let conn = &mut *pooled;
            let result: Result<_, Failure> = async {
                let tx = conn.client.transaction().await?;
                for table in ["writes", "blobs", "checkpoints", "heads"] {
                    tx.execute(&format!("DELETE FROM {table} WHERE thread_id = $1"), &[&thread_id])
                        .await?;
                }
                tx.commit().await?;
                Ok(())
            }
            .await;
            self.finish(result)
        }
        .boxed()
    }

    fn threads(&self) -> BoxFuture<'_, Result<Vec<String>, SaverError>> {
        async move {
            let mut pooled = self.conn().await?;
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
            self.finish(result)
        }
        .boxed()
    }

    fn usage<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, Result<Usage, SaverError>> {
        async move {
            let mut pooled = self.conn().await?;
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
            self.finish(result)
        }
        .boxed()
    }
}
