//! The catalog's operations on PostgreSQL: assistants and threads. JSON columns are `jsonb`,
//! sent and read as text; the searches' containment filters are `@>`.

use super::pool::{Conn, Fail};
use crate::db::query::{self, Arg, Dialect};
use crate::db::rows::{self, AssistantRow, ThreadRow};
use crate::db::{AssistantQuery, DbError, IfExists, ThreadQuery, ThreadUpdate, VersionQuery};
use crate::model::{Assistant, Object, Thread, ThreadStatus, ThreadTtl, TtlStrategy};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Statement, Transaction};

/// The arguments of a search, as PostgreSQL binds them.
pub(super) fn bind(args: &[Arg]) -> Vec<&(dyn ToSql + Sync)> {
    args.iter()
        .map(|arg| match arg {
            Arg::Text(text) | Arg::Json(text) => text as &(dyn ToSql + Sync),
            Arg::Texts(texts) => texts as &(dyn ToSql + Sync),
        })
        .collect()
}

const PUT_ASSISTANT: &str = "INSERT INTO server_assistants
        (assistant_id, graph_id, name, created_at, updated_at, metadata, doc)
    VALUES ($1, $2, $3, $4, $5, $6::text::jsonb, $7::text::jsonb)
    ON CONFLICT (assistant_id) DO UPDATE SET graph_id = excluded.graph_id, name = excluded.name,
        created_at = excluded.created_at, updated_at = excluded.updated_at,
        metadata = excluded.metadata, doc = excluded.doc";

const PUT_VERSION: &str = "INSERT INTO server_assistant_versions (assistant_id, version, created_at, metadata, doc)
    VALUES ($1, $2, $3, $4::text::jsonb, $5::text::jsonb)
    ON CONFLICT (assistant_id, version) DO UPDATE SET created_at = excluded.created_at,
        metadata = excluded.metadata, doc = excluded.doc";

/// Writes the assistant's current row only, in `tx`.
async fn write_assistant(tx: &Transaction<'_>, a: &Assistant, row: &AssistantRow) -> Result<(), Fail> {
    let params: [&(dyn ToSql + Sync); 7] = [
        &a.assistant_id,
        &a.graph_id,
        &a.name,
        &a.created_at,
        &a.updated_at,
        &row.metadata,
        &row.doc,
    ];
    tx.execute(PUT_ASSISTANT, &params).await?;
    Ok(())
}

pub(super) async fn put_assistant(conn: &mut Conn, a: &Assistant) -> Result<(), Fail> {
    let row = AssistantRow::new(a);
    let tx = conn.client.transaction().await?;
    write_assistant(&tx, a, &row).await?;
    tx.execute(
        PUT_VERSION,
        &[&a.assistant_id, &a.version, &a.updated_at, &row.metadata, &row.doc],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

pub(super) async fn assistant_versions(conn: &mut Conn, id: &str, q: &VersionQuery) -> Result<Vec<Assistant>, Fail> {
    let filter = query::version_filter(Dialect::Postgres, id, q);
    let sql = format!(
        "SELECT doc::text, metadata::text FROM server_assistant_versions{} ORDER BY version DESC{}",
        filter.sql,
        query::page(Dialect::Postgres, q.limit, q.offset)
    );
    let found = conn.client.query(&sql, &bind(&filter.args)).await?;
    Ok(found
        .iter()
        .map(|r| rows::assistant(id, r.get(0), r.get(1)))
        .collect::<Result<_, _>>()?)
}

pub(super) async fn set_latest_version(conn: &mut Conn, id: &str, version: i64) -> Result<Option<Assistant>, Fail> {
    let tx = conn.client.transaction().await?;
    let row = tx
        .query_opt(
            "SELECT doc::text, metadata::text FROM server_assistant_versions
             WHERE assistant_id = $1 AND version = $2",
            &[&id, &version],
        )
        .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let mut a = rows::assistant(id, row.get(0), row.get(1))?;
    a.updated_at = rows::now();
    write_assistant(&tx, &a, &AssistantRow::new(&a)).await?;
    tx.commit().await?;
    Ok(Some(a))
}

const GET_ASSISTANT: &str = "SELECT doc::text, metadata::text FROM server_assistants WHERE assistant_id = $1";

pub(super) async fn get_assistant(conn: &mut Conn, id: &str) -> Result<Option<Assistant>, Fail> {
    let statement = conn.prepare(GET_ASSISTANT).await?;
    let row = conn.client.query_opt(&statement, &[&id]).await?;
    Ok(row.map(|r| rows::assistant(id, r.get(0), r.get(1))).transpose()?)
}

pub(super) async fn search_assistants(conn: &mut Conn, q: &AssistantQuery) -> Result<Vec<Assistant>, Fail> {
    q.check().map_err(DbError::Backend)?;
    let filter = query::assistant_filter(Dialect::Postgres, q);
    let order = query::order_and_page(
        Dialect::Postgres,
        q.sort_by.as_deref(),
        q.sort_order.as_deref(),
        "assistant_id",
        q.limit,
        q.offset,
    );
    let sql = format!(
        "SELECT assistant_id, doc::text, metadata::text FROM server_assistants{}{order}",
        filter.sql
    );
    let found = conn.client.query(&sql, &bind(&filter.args)).await?;
    Ok(found
        .iter()
        .map(|r| rows::assistant(r.get(0), r.get(1), r.get(2)))
        .collect::<Result<_, _>>()?)
}

/// How many rows of `table` match `filter` (a search's count).
pub(super) async fn count(conn: &mut Conn, table: &str, filter: &query::Filter) -> Result<u64, Fail> {
    let sql = format!("SELECT COUNT(*) FROM {table}{}", filter.sql);
    let n: i64 = conn.client.query_one(&sql, &bind(&filter.args)).await?.get(0);
    Ok(n as u64)
}

pub(super) async fn count_assistants(conn: &mut Conn, q: &AssistantQuery) -> Result<u64, Fail> {
    count(
        conn,
        "server_assistants",
        &query::assistant_filter(Dialect::Postgres, q),
    )
    .await
}

pub(super) async fn delete_assistant(conn: &mut Conn, id: &str) -> Result<bool, Fail> {
    let tx = conn.client.transaction().await?;
    tx.execute("DELETE FROM server_assistant_versions WHERE assistant_id = $1", &[&id])
        .await?;
    tx.execute("DELETE FROM server_crons WHERE assistant_id = $1", &[&id])
        .await?;
    let existed = tx
        .execute("DELETE FROM server_assistants WHERE assistant_id = $1", &[&id])
        .await?
        > 0;
    tx.commit().await?;
    Ok(existed)
}

const PUT_THREAD: &str = "INSERT INTO server_threads
        (thread_id, status, created_at, updated_at, state_updated_at, metadata, \"values\", doc)
    VALUES ($1, $2, $3, $4, $5, $6::text::jsonb, $7::text::jsonb, $8::text::jsonb)
    ON CONFLICT (thread_id) DO UPDATE SET status = excluded.status, created_at = excluded.created_at,
        updated_at = excluded.updated_at, state_updated_at = excluded.state_updated_at, metadata = excluded.metadata, \"values\" = excluded.\"values\",
        doc = excluded.doc";

const CREATE_THREAD: &str = "INSERT INTO server_threads
        (thread_id, status, created_at, updated_at, state_updated_at, metadata, \"values\", doc)
    VALUES ($1, $2, $3, $4, $5, $6::text::jsonb, $7::text::jsonb, $8::text::jsonb)
    ON CONFLICT (thread_id) DO NOTHING";

async fn write_thread(conn: &mut Conn, sql: &'static str, t: &Thread) -> Result<u64, Fail> {
    let row = ThreadRow::new(t);
    let statement = conn.prepare(sql).await?;
    Ok(conn
        .client
        .execute(
            &statement,
            &[
                &t.thread_id,
                &row.status,
                &t.created_at,
                &t.updated_at,
                &t.state_updated_at,
                &row.metadata,
                &row.values,
                &row.doc,
            ],
        )
        .await?)
}

pub(super) async fn create_thread(conn: &mut Conn, t: &Thread, if_exists: IfExists) -> Result<Thread, Fail> {
    if write_thread(conn, CREATE_THREAD, t).await? == 1 {
        return Ok(t.clone());
    }
    match (if_exists, get_thread(conn, &t.thread_id).await?) {
        (IfExists::DoNothing, Some(existing)) => Ok(existing),
        // Deleted in between: it does not exist any more, so make it.
        (IfExists::DoNothing, None) => {
            write_thread(conn, PUT_THREAD, t).await?;
            Ok(t.clone())
        }
        // This call's own row, from a first run whose answer a lost connection cut.
        (IfExists::Raise, Some(existing)) if existing.created_at == t.created_at => Ok(existing),
        (IfExists::Raise, _) => Err(DbError::Conflict(format!("Thread with ID {} already exists", t.thread_id)).into()),
    }
}

const GET_THREAD: &str = "SELECT doc::text, metadata::text, \"values\"::text FROM server_threads WHERE thread_id = $1";

/// [`GET_THREAD`] with `null` for the values, whatever their size.
const GET_THREAD_WITHOUT_VALUES: &str =
    "SELECT doc::text, metadata::text, 'null' FROM server_threads WHERE thread_id = $1";

pub(super) async fn get_thread(conn: &mut Conn, id: &str) -> Result<Option<Thread>, Fail> {
    read_thread(conn, id, GET_THREAD).await
}

/// The thread without its values, as a point read on a prepared statement (the catalog's
/// default, a search by id, is planned again at each call).
pub(super) async fn get_thread_without_values(conn: &mut Conn, id: &str) -> Result<Option<Thread>, Fail> {
    read_thread(conn, id, GET_THREAD_WITHOUT_VALUES).await
}

/// The thread `select` reads: its `doc`, `metadata` and `values` columns, in that order.
async fn read_thread(conn: &mut Conn, id: &str, select: &'static str) -> Result<Option<Thread>, Fail> {
    let statement = conn.prepare(select).await?;
    let row = conn.client.query_opt(&statement, &[&id]).await?;
    Ok(row
        .map(|r| rows::thread(id, r.get(0), r.get(1), r.get(2)))
        .transpose()?)
}

pub(super) async fn put_thread(conn: &mut Conn, t: &Thread) -> Result<(), Fail> {
    write_thread(conn, PUT_THREAD, t).await?;
    Ok(())
}

const THREAD_FOR_UPDATE: &str =
    "SELECT doc::text, metadata::text, \"values\"::text FROM server_threads WHERE thread_id = $1 FOR UPDATE";

pub(super) async fn update_thread(conn: &mut Conn, id: &str, update: &ThreadUpdate) -> Result<Option<Thread>, Fail> {
    let statements = ThreadUpdateStatements::prepare(conn).await?;
    let tx = conn.client.transaction().await?;
    let thread = update_thread_in(&tx, &statements, id, update).await?;
    tx.commit().await?;
    Ok(thread)
}

/// The statements of [`update_thread_in`], prepared on the connection before its transaction
/// begins (a statement given as text is prepared again at each call, a round trip more).
pub(super) struct ThreadUpdateStatements {
    select: Statement,
    put: Statement,
}

impl ThreadUpdateStatements {
    pub(super) async fn prepare(conn: &mut Conn) -> Result<Self, Fail> {
        Ok(Self {
            select: conn.prepare(THREAD_FOR_UPDATE).await?,
            put: conn.prepare(PUT_THREAD).await?,
        })
    }
}

/// [`update_thread`] inside the transaction `tx`, which it leaves open.
pub(super) async fn update_thread_in(
    tx: &Transaction<'_>,
    statements: &ThreadUpdateStatements,
    id: &str,
    update: &ThreadUpdate,
) -> Result<Option<Thread>, Fail> {
    let row = tx.query_opt(&statements.select, &[&id]).await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let thread = update.apply(rows::thread(id, row.get(0), row.get(1), row.get(2))?, &rows::now());
    let written = ThreadRow::new(&thread);
    let params: [&(dyn ToSql + Sync); 8] = [
        &thread.thread_id,
        &written.status,
        &thread.created_at,
        &thread.updated_at,
        &thread.state_updated_at,
        &written.metadata,
        &written.values,
        &written.doc,
    ];
    tx.execute(&statements.put, &params).await?;
    Ok(Some(thread))
}

pub(super) async fn set_thread_status(
    conn: &mut Conn,
    id: &str,
    status: ThreadStatus,
    metadata: Option<&Object>,
) -> Result<bool, Fail> {
    let statements = ThreadStatusStatements::prepare(conn).await?;
    let tx = conn.client.transaction().await?;
    let set = set_thread_status_in(&tx, &statements, id, status, metadata).await?;
    tx.commit().await?;
    Ok(set)
}

/// The statements of [`set_thread_status_in`], prepared on the connection before its
/// transaction begins (as text, each would be prepared again at each call).
pub(super) struct ThreadStatusStatements {
    select: Statement,
    set: Statement,
}

impl ThreadStatusStatements {
    pub(super) async fn prepare(conn: &mut Conn) -> Result<Self, Fail> {
        Ok(Self {
            select: conn
                .prepare("SELECT doc::text, metadata::text FROM server_threads WHERE thread_id = $1 FOR UPDATE")
                .await?,
            set: conn
                .prepare(
                    "UPDATE server_threads SET status = $2, updated_at = $3, metadata = $4::text::jsonb, \
                     doc = $5::text::jsonb WHERE thread_id = $1",
                )
                .await?,
        })
    }
}

/// [`set_thread_status`] inside the transaction `tx`, which it leaves open.
pub(super) async fn set_thread_status_in(
    tx: &Transaction<'_>,
    statements: &ThreadStatusStatements,
    id: &str,
    status: ThreadStatus,
    metadata: Option<&Object>,
) -> Result<bool, Fail> {
    let Some(row) = tx.query_opt(&statements.select, &[&id]).await? else {
        return Ok(false);
    };
    let update = ThreadUpdate::status(status, metadata);
    // The values stay in their column, unread: the row written back leaves that column alone.
    let thread = update.apply(rows::thread(id, row.get(0), row.get(1), "null")?, &rows::now());
    let written = ThreadRow::new(&thread);
    let params: [&(dyn ToSql + Sync); 5] = [
        &id,
        &written.status,
        &thread.updated_at,
        &written.metadata,
        &written.doc,
    ];
    tx.execute(&statements.set, &params).await?;
    Ok(true)
}

pub(super) async fn search_threads(conn: &mut Conn, q: &ThreadQuery) -> Result<Vec<Thread>, Fail> {
    q.check().map_err(DbError::Backend)?;
    let filter = query::thread_filter(Dialect::Postgres, q);
    let order = query::order_and_page(
        Dialect::Postgres,
        q.sort_by.as_deref(),
        q.sort_order.as_deref(),
        "thread_id",
        q.limit,
        q.offset,
    );
    let values = if q.without_values { "'null'" } else { "\"values\"::text" };
    let sql = format!(
        "SELECT thread_id, doc::text, metadata::text, {values} FROM server_threads{}{order}",
        filter.sql
    );
    let found = conn.client.query(&sql, &bind(&filter.args)).await?;
    Ok(found
        .iter()
        .map(|r| rows::thread(r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect::<Result<_, _>>()?)
}

pub(super) async fn count_threads(conn: &mut Conn, q: &ThreadQuery) -> Result<u64, Fail> {
    count(conn, "server_threads", &query::thread_filter(Dialect::Postgres, q)).await
}

pub(super) async fn delete_thread(conn: &mut Conn, id: &str) -> Result<bool, Fail> {
    let tx = conn.client.transaction().await?;
    tx.execute("DELETE FROM server_runs WHERE thread_id = $1", &[&id])
        .await?;
    tx.execute("DELETE FROM server_thread_ttl WHERE thread_id = $1", &[&id])
        .await?;
    tx.execute("DELETE FROM server_crons WHERE thread_id = $1", &[&id])
        .await?;
    let existed = tx
        .execute("DELETE FROM server_threads WHERE thread_id = $1", &[&id])
        .await?
        > 0;
    tx.commit().await?;
    Ok(existed)
}

pub(super) async fn set_thread_ttl(conn: &mut Conn, id: &str, ttl: Option<ThreadTtl>) -> Result<(), Fail> {
    match ttl {
        Some(ttl) => {
            conn.client
                .execute(
                    "INSERT INTO server_thread_ttl (thread_id, strategy, minutes) VALUES ($1, $2, $3)
                     ON CONFLICT (thread_id) DO UPDATE SET strategy = excluded.strategy, minutes = excluded.minutes",
                    &[&id, &ttl.strategy.as_str(), &ttl.minutes],
                )
                .await?
        }
        None => {
            conn.client
                .execute("DELETE FROM server_thread_ttl WHERE thread_id = $1", &[&id])
                .await?
        }
    };
    Ok(())
}

/// A thread's time-to-live, if it has one.
pub(super) async fn thread_ttl(conn: &mut Conn, id: &str) -> Result<Option<ThreadTtl>, Fail> {
    let row = conn
        .client
        .query_opt(
            "SELECT strategy, minutes FROM server_thread_ttl WHERE thread_id = $1",
            &[&id],
        )
        .await?;
    let Some(row) = row else { return Ok(None) };
    Ok(Some(ThreadTtl {
        strategy: rows::ttl_strategy(id, row.get(0))?,
        minutes: row.get(1),
    }))
}

/// The threads unchanged for longer than their TTL by `now` (`updated_at` is RFC 3339 text).
pub(super) async fn expired_threads(
    conn: &mut Conn,
    now: &str,
    limit: usize,
) -> Result<Vec<(String, TtlStrategy)>, Fail> {
    let rows = conn
        .client
        .query(
            "SELECT t.thread_id, x.strategy FROM server_thread_ttl x
             JOIN server_threads t ON t.thread_id = x.thread_id
             WHERE t.status <> 'busy'
               AND t.updated_at::timestamptz + x.minutes * interval '1 minute' <= $1::text::timestamptz
             ORDER BY t.updated_at::timestamptz + x.minutes * interval '1 minute', t.thread_id
             LIMIT $2",
            &[&now, &query::sql_count(limit)],
        )
        .await?;
    rows.iter()
        .map(|r| {
            let id: String = r.get(0);
            let strategy = rows::ttl_strategy(&id, r.get(1))?;
            Ok((id, strategy))
        })
        .collect()
}
