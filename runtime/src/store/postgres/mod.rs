//! [`PostgresStore`]: items in LangGraph PostgresStore's tables (`store`, and `store_vectors`
//! in pgvector when an index is configured), so a database LangGraph wrote can be read. A
//! search's prefix, filter (on `jsonb`), order and page run in SQL; cosine ranking runs on the
//! rows under the prefix, as on the other backends.

use super::backend::{Backend, Row, Scan, Vectors, Write};
use super::core::Core;
use super::plan::{plan, Cond, Operand};
use super::{store_over_core, StoreConfig, StoreError};
use crate::checkpoint::Timestamp;
use crate::postgres::{Idempotent, OpError, Pool, PoolError, PoolOptions};
use futures::future::BoxFuture;
use futures::FutureExt;
use std::collections::HashMap;
use tokio_postgres::Client;

mod write;

/// LangGraph PostgresStore's schema (langgraph-checkpoint-postgres 3.2.0).
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS store (
    prefix text NOT NULL,
    key text NOT NULL,
    value jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT CURRENT_TIMESTAMP,
    updated_at timestamp with time zone DEFAULT CURRENT_TIMESTAMP,
    expires_at timestamp with time zone,
    ttl_minutes integer,
    PRIMARY KEY (prefix, key)
);
CREATE INDEX IF NOT EXISTS store_prefix_idx ON store USING btree (prefix text_pattern_ops);
CREATE INDEX IF NOT EXISTS idx_store_expires_at ON store (expires_at) WHERE expires_at IS NOT NULL;";

const COLUMNS: &str = "prefix, key, value::text, (extract(epoch from created_at) * 1000000)::int8, \
     (extract(epoch from updated_at) * 1000000)::int8, (extract(epoch from expires_at) * 1000000)::int8, \
     ttl_minutes::float8";

/// Live rows under the prefix `$1` (`$2` is its `LIKE` pattern) at `$3`.
const LIVE_UNDER: &str = "($1 = '' OR prefix = $1 OR prefix LIKE $2) \
     AND (expires_at IS NULL OR expires_at > $3::text::timestamptz)";

/// The distinct live prefixes at `$1`: a skip scan over the primary key, one index probe per
/// prefix rather than a read of every row.
const PREFIXES: &str = "WITH RECURSIVE p(prefix) AS (
        SELECT (SELECT MIN(prefix) FROM store)
        UNION ALL
        SELECT (SELECT MIN(prefix) FROM store WHERE prefix > p.prefix) FROM p WHERE p.prefix IS NOT NULL)
    SELECT prefix FROM p WHERE prefix IS NOT NULL AND EXISTS (
        SELECT 1 FROM store s WHERE s.prefix = p.prefix
        AND (s.expires_at IS NULL OR s.expires_at > $1::text::timestamptz))";

/// A store in PostgreSQL, for several processes sharing long-term memory. Calls share a
/// [`Pool`] of connections.
#[derive(Debug)]
pub struct PostgresStore {
    core: Core<Pg>,
}

impl PostgresStore {
    /// Connects to `url` and makes the tables in its default schema.
    ///
    /// # Errors
    /// As [`connect_with_schema`](Self::connect_with_schema).
    pub async fn connect(url: &str, config: StoreConfig) -> Result<Self, StoreError> {
        Self::connect_with_schema(url, "public", config).await
    }

    /// Connects to `url` with a pool of four connections and makes the tables in `schema`
    /// (created if missing). With an index configured, the `vector` extension (pgvector) must
    /// be available on the server.
    ///
    /// # Errors
    /// As [`with_pool`](Self::with_pool).
    pub async fn connect_with_schema(url: &str, schema: &str, config: StoreConfig) -> Result<Self, StoreError> {
        Self::with_pool(Pool::new(url, PoolOptions::new().schema(schema).then_public()), config).await
    }

    /// A store over `pool` (its size and acquire timeout as the caller set them), with the
    /// tables in the pool's schema (created if missing; the server's default without one).
    ///
    /// # Errors
    /// When the server cannot be reached, the tables cannot be made, or an index is configured
    /// and the server has no `vector` extension (an invalid-input error naming it).
    pub async fn with_pool(pool: Pool, config: StoreConfig) -> Result<Self, StoreError> {
        let conn = pool.open().await.map_err(fail)?;
        if let Some(schema) = pool.schema() {
            let schema = schema.replace('"', "\"\"");
            conn.client
                .batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\""))
                .await
                .map_err(fail)?;
        }
        pool.keep(conn).await.map_err(fail)?;
        let conn = pool.get().await.map_err(fail)?;
        conn.client.batch_execute(SCHEMA).await.map_err(fail)?;
        let vectors = match &config.index {
            Some(index) => {
                make_vectors(&conn.client, index.dims).await?;
                true
            }
            None => false,
        };
        drop(conn);
        Ok(Self {
            core: Core {
                backend: Pg { pool, vectors },
                config,
            },
        })
    }
}

store_over_core!(PostgresStore);

/// Makes `store_vectors` in pgvector, or says the extension is missing.
async fn make_vectors(client: &Client, dims: usize) -> Result<(), StoreError> {
    let available = client
        .query("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'", &[])
        .await
        .map_err(fail)?;
    if available.is_empty() {
        return Err(StoreError::invalid(
            "PostgresStore with an index needs the PostgreSQL extension `vector` (pgvector), \
             which this server does not have: install pgvector, or configure the store without an index",
        ));
    }
    client
        .batch_execute(&format!(
            "CREATE EXTENSION IF NOT EXISTS vector;
             CREATE TABLE IF NOT EXISTS store_vectors (
                 prefix text NOT NULL, key text NOT NULL, field_name text NOT NULL,
                 embedding vector({dims}),
                 created_at timestamp with time zone DEFAULT CURRENT_TIMESTAMP,
                 updated_at timestamp with time zone DEFAULT CURRENT_TIMESTAMP,
                 PRIMARY KEY (prefix, key, field_name),
                 FOREIGN KEY (prefix, key) REFERENCES store (prefix, key) ON DELETE CASCADE);"
        ))
        .await
        .map_err(fail)
}

fn fail(e: impl Into<PoolError>) -> StoreError {
    StoreError::backend("the PostgreSQL store failed", e.into())
}

/// The pool; `vectors` whether `store_vectors` exists.
#[derive(Debug)]
struct Pg {
    pool: Pool,
    vectors: bool,
}

type Done<'a, T> = BoxFuture<'a, Result<T, StoreError>>;

fn time(m: Option<i64>) -> Option<Timestamp> {
    m.map(|m| Timestamp::from_unix_micros(u64::try_from(m).unwrap_or(0)))
}

fn row(r: &tokio_postgres::Row) -> Result<Row, StoreError> {
    let text: String = r.get(2);
    let value = serde_json::from_str(&text).map_err(|e| StoreError::backend("a stored value is not JSON", e))?;
    Ok(Row {
        prefix: r.get(0),
        key: r.get(1),
        value,
        created_at: time(r.get(3)).unwrap_or_default(),
        updated_at: time(r.get(4)).unwrap_or_default(),
        expires_at: time(r.get(5)),
        ttl_minutes: r.get(6),
    })
}

/// The `LIKE` pattern of the rows strictly under `prefix`.
fn below(prefix: &str) -> String {
    let escaped: String = prefix
        .chars()
        .flat_map(|c| match c {
            '%' | '_' | '\\' => vec!['\\', c],
            c => vec![c],
        })
        .collect();
    format!("{escaped}.%")
}

fn parse_vector(text: &str) -> Vec<f32> {
    text.trim_matches(|c| c == '[' || c == ']')
        .split(',')
        .filter_map(|x| x.trim().parse().ok())
        .collect()
}

/// Why a store operation failed: PostgreSQL, the pool, or the store's own rule (a stored value
/// that is not JSON).
enum Fail {
    Pg(tokio_postgres::Error),
    Pool(PoolError),
    Store(StoreError),
}

impl From<tokio_postgres::Error> for Fail {
    fn from(e: tokio_postgres::Error) -> Self {
        Fail::Pg(e)
    }
}

impl From<PoolError> for Fail {
    fn from(e: PoolError) -> Self {
        match e {
            PoolError::Postgres(e) => Fail::Pg(e),
            other => Fail::Pool(other),
        }
    }
}

impl From<StoreError> for Fail {
    fn from(e: StoreError) -> Self {
        Fail::Store(e)
    }
}

impl OpError for Fail {
    fn into_postgres(self) -> Result<tokio_postgres::Error, Self> {
        match self {
            Fail::Pg(e) => Ok(e),
            other => Err(other),
        }
    }
}

impl From<Fail> for StoreError {
    fn from(e: Fail) -> Self {
        match e {
            Fail::Pg(e) => fail(e),
            Fail::Pool(e @ PoolError::Lost { .. }) => StoreError::backend(format!("the PostgreSQL store: {e}"), e),
            Fail::Pool(e) => fail(e),
            Fail::Store(e) => e,
        }
    }
}

/// Every store operation is idempotent, so each runs once more after a lost connection: a read;
/// a batch of upserts and deletes whose values (and times) were fixed before it ran; a touch
/// that sets an expiry from the same `now`; a sweep of what expired by the same `now`.
const STORE_RETRY: Idempotent = Idempotent::Yes;

impl Backend for Pg {
    fn get<'a>(&'a self, prefix: &'a str, key: &'a str, now: Timestamp) -> Done<'a, Option<Row>> {
        async move {
            let sql = format!(
                "SELECT {COLUMNS} FROM store WHERE prefix = $1 AND key = $2 \
                 AND (expires_at IS NULL OR expires_at > $3::text::timestamptz)"
            );
            let (sql, now) = (&sql, &now.to_string());
            let what = || format!("reading item `{key}` under `{prefix}`");
            let found = self
                .pool
                .with_retry(what, STORE_RETRY, |mut conn| async move {
                    // The hot read: prepared once per connection, so a get is one round trip.
                    let statement = conn.prepare(sql).await?;
                    let found = conn.client.query_opt(&statement, &[&prefix, &key, now]).await?;
                    Ok::<_, Fail>(found.as_ref().map(row).transpose()?)
                })
                .await?;
            Ok(found)
        }
        .boxed()
    }

    fn write(&self, writes: Vec<Write>) -> Done<'_, ()> {
        async move {
            let batch = &write::Batch::of(&writes);
            let what = || format!("writing {} items", writes.len());
            self.pool
                .with_retry(what, STORE_RETRY, |mut conn| async move {
                    let tx = conn.client.transaction().await?;
                    batch.run(&tx, self.vectors).await?;
                    tx.commit().await?;
                    Ok::<_, Fail>(())
                })
                .await?;
            Ok(())
        }
        .boxed()
    }

    fn scan<'a>(&'a self, scan: Scan<'a>) -> Done<'a, Vec<(Row, Vectors)>> {
        async move {
            let prefix = scan.prefix;
            let pattern = below(prefix);
            let mut params: Vec<Param> = vec![
                Box::new(prefix.to_owned()),
                Box::new(pattern.clone()),
                Box::new(scan.now.to_string()),
            ];
            let conds = scan.filter.map(plan);
            let mut sql = format!("SELECT {COLUMNS} FROM store WHERE {LIVE_UNDER}");
            if let Some(Some(conds)) = &conds {
                for c in conds {
                    sql.push_str(" AND ");
                    sql.push_str(&condition(c, &mut params));
                }
            }
            // A filter SQL cannot say is applied in Rust, with the order and page.
            let in_sql = matches!(conds, None | Some(Some(_)));
            if let (Some((offset, limit)), true) = (scan.page, in_sql) {
                let limit = bind(&mut params, Box::new(i64::try_from(limit).unwrap_or(i64::MAX)));
                let offset = bind(&mut params, Box::new(i64::try_from(offset).unwrap_or(i64::MAX)));
                sql.push_str(&format!(
                    " ORDER BY updated_at DESC, prefix COLLATE \"C\", key COLLATE \"C\" LIMIT {limit} OFFSET {offset}"
                ));
            }
            let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = params
                .iter()
                .map(|p| &**p as &(dyn tokio_postgres::types::ToSql + Sync))
                .collect();
            let (sql, refs, pattern, vectors) = (&sql, &refs, &pattern, scan.vectors && self.vectors);
            let what = || format!("searching items under `{prefix}`");
            let found = self
                .pool
                .with_retry(what, STORE_RETRY, |conn| async move {
                    let client = &conn.client;
                    let rows = client.query(sql, refs).await?;
                    let mut by_item: HashMap<(String, String), Vectors> = HashMap::new();
                    if vectors {
                        let sql = "SELECT prefix, key, field_name, embedding::text FROM store_vectors \
                                   WHERE $1 = '' OR prefix = $1 OR prefix LIKE $2";
                        for r in client.query(sql, &[&prefix, pattern]).await? {
                            let text: String = r.get(3);
                            by_item
                                .entry((r.get(0), r.get(1)))
                                .or_default()
                                .push((r.get(2), parse_vector(&text)));
                        }
                    }
                    let found = rows
                        .iter()
                        .map(|r| {
                            let row = row(r)?;
                            let v = by_item
                                .remove(&(row.prefix.clone(), row.key.clone()))
                                .unwrap_or_default();
                            Ok((row, v))
                        })
                        .collect::<Result<Vec<_>, StoreError>>()?;
                    Ok::<_, Fail>(found)
                })
                .await?;
            Ok(match in_sql {
                true => found,
                false => scan.finish(found.into_iter()),
            })
        }
        .boxed()
    }

    fn touch(&self, keys: Vec<(String, String)>, now: Timestamp) -> Done<'_, ()> {
        async move {
            let (keys, now) = (&keys, &now.to_string());
            let what = || format!("refreshing the expiry of {} items", keys.len());
            self.pool
                .with_retry(what, STORE_RETRY, |conn| async move {
                    for (prefix, key) in keys {
                        conn.client
                            .execute(
                                "UPDATE store SET expires_at = $3::text::timestamptz + ttl_minutes * interval '1 minute'
                                 WHERE prefix = $1 AND key = $2 AND ttl_minutes IS NOT NULL",
                                &[prefix, key, now],
                            )
                            .await?;
                    }
                    Ok::<_, Fail>(())
                })
                .await?;
            Ok(())
        }
        .boxed()
    }

    fn prefixes(&self, now: Timestamp) -> Done<'_, Vec<String>> {
        async move {
            let now = &now.to_string();
            let what = || "listing the namespaces".to_owned();
            let rows = self
                .pool
                .with_retry(what, STORE_RETRY, |conn| async move {
                    Ok::<_, Fail>(conn.client.query(PREFIXES, &[now]).await?)
                })
                .await?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        }
        .boxed()
    }

    fn sweep(&self, now: Timestamp) -> Done<'_, usize> {
        async move {
            let now = &now.to_string();
            let what = || "sweeping expired items".to_owned();
            let n = self
                .pool
                .with_retry(what, STORE_RETRY, |conn| async move {
                    let sql = "DELETE FROM store WHERE expires_at IS NOT NULL AND expires_at <= $1::text::timestamptz";
                    Ok::<_, Fail>(conn.client.execute(sql, &[now]).await?)
                })
                .await?;
            Ok(usize::try_from(n).unwrap_or(usize::MAX))
        }
        .boxed()
    }
}

/// A statement parameter of any type.
type Param = Box<dyn tokio_postgres::types::ToSql + Sync + Send>;

/// Adds a parameter; its placeholder.
fn bind(params: &mut Vec<Param>, value: Param) -> String {
    params.push(value);
    format!("${}", params.len())
}

/// The SQL of one planned condition on `value` (never NULL: a missing field is false). A
/// number is compared as `float8`, as Rust compares `f64`s; a string by its bytes.
fn condition(c: &Cond, params: &mut Vec<Param>) -> String {
    let (path, operand) = match c {
        Cond::Never => return "false".to_owned(),
        Cond::Eq(path, o) | Cond::Ne(path, o) | Cond::Order(path, _, o) => (path, o),
    };
    let test = match (c, operand) {
        (Cond::Order(..), Operand::Bool(_) | Operand::Null) => "false".to_owned(),
        // Numbers by their float8 value (the value Rust compares; `->>` gives the number's
        // text, which float8 reads as Rust does), and only numbers.
        (_, Operand::Num(n)) => {
            let op = match c {
                Cond::Order(_, cmp, _) => cmp.sql(),
                _ => "=",
            };
            let labels = bind_labels(path, params);
            let (field, text) = (access(&labels, "->"), access(&labels, "->>"));
            let n = bind(params, Box::new(*n));
            format!("CASE WHEN jsonb_typeof({field}) = 'number' THEN ({text})::float8 {op} {n}::float8 ELSE false END")
        }
        (Cond::Order(_, cmp, _), Operand::Str(s)) => {
            let labels = bind_labels(path, params);
            let (field, text) = (access(&labels, "->"), access(&labels, "->>"));
            let s = bind(params, Box::new(s.clone()));
            format!(
                "CASE WHEN jsonb_typeof({field}) = 'string' THEN ({text}) COLLATE \"C\" {} {s}::text ELSE false END",
                cmp.sql()
            )
        }
        // Equal to a string, `true`, `false` or `null`: the value contains it at the path
        // (containment compares scalars by equality; a missing field or one of another shape,
        // an array holding the scalar among them, contains nothing), read without extracting.
        (_, Operand::Str(_) | Operand::Bool(_) | Operand::Null) => {
            let scalar = match operand {
                Operand::Str(s) => serde_json::Value::String(s.clone()),
                Operand::Bool(b) => serde_json::Value::Bool(*b),
                _ => serde_json::Value::Null,
            };
            let nested = path
                .iter()
                .rev()
                .fold(scalar, |inner, label| serde_json::json!({ label.as_str(): inner }));
            let nested = bind(params, Box::new(nested.to_string()));
            format!("value @> {nested}::text::jsonb")
        }
    };
    match c {
        Cond::Ne(..) => format!("NOT {test}"),
        _ => test,
    }
}

/// Binds each label of a path; their placeholders.
fn bind_labels(path: &[String], params: &mut Vec<Param>) -> Vec<String> {
    path.iter().map(|label| bind(params, Box::new(label.clone()))).collect()
}

/// The field at a path in `value` (its labels' placeholders): `value -> $a -> $b`, the last step
/// `last` (`->` for jsonb, `->>` for text). One step a label (`#>` with a path array costs about
/// twice as much a row).
fn access(labels: &[String], last: &str) -> String {
    let mut sql = "value".to_owned();
    for (i, label) in labels.iter().enumerate() {
        let step = if i + 1 == labels.len() { last } else { "->" };
        sql.push_str(&format!(" {step} {label}::text"));
    }
    sql
}
