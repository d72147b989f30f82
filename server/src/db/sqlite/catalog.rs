//! The catalog's operations on the SQLite connection: assistants and threads. Each runs on the
//! connection's thread ([`super::conn`]), in one transaction ([`begin`]) where it reads before it
//! writes.

use super::conn::{begin, Fail};
use crate::db::query::{self, Arg, Dialect};
use crate::db::rows::{self, AssistantRow, ThreadRow};
use crate::db::{AssistantQuery, DbError, IfExists, ThreadQuery, ThreadUpdate, VersionQuery};
use crate::model::{Assistant, Object, Thread, ThreadStatus, ThreadTtl, TtlStrategy};
use rusqlite::types::ToSqlOutput;
use rusqlite::{params, params_from_iter, Connection, OptionalExtension, ToSql};

impl ToSql for Arg {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        match self {
            Arg::Text(text) | Arg::Json(text) => text.to_sql(),
            Arg::Texts(_) => unreachable!("the sqlite dialect passes a list as JSON"),
        }
    }
}

pub(super) fn put_assistant(conn: &mut Connection, a: &Assistant) -> Result<(), Fail> {
    let tx = begin(conn)?;
    write_assistant(&tx, a)?;
    let row = AssistantRow::new(a);
    tx.prepare_cached(
        "INSERT INTO server_assistant_versions (assistant_id, version, created_at, metadata, doc)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (assistant_id, version) DO UPDATE SET created_at = excluded.created_at,
             metadata = excluded.metadata, doc = excluded.doc",
    )?
    .execute(params![a.assistant_id, a.version, a.updated_at, row.metadata, row.doc])?;
    tx.commit()?;
    Ok(())
}

/// Writes the assistant's current row only.
fn write_assistant(conn: &Connection, a: &Assistant) -> Result<(), Fail> {
    let row = AssistantRow::new(a);
    conn.prepare_cached(
        "INSERT INTO server_assistants (assistant_id, graph_id, name, created_at, updated_at, metadata, doc)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (assistant_id) DO UPDATE SET graph_id = excluded.graph_id, name = excluded.name,
             created_at = excluded.created_at, updated_at = excluded.updated_at,
             metadata = excluded.metadata, doc = excluded.doc",
    )?
    .execute(params![
        a.assistant_id,
        a.graph_id,
        a.name,
        a.created_at,
        a.updated_at,
        row.metadata,
        row.doc
    ])?;
    Ok(())
}

pub(super) fn assistant_versions(conn: &mut Connection, id: &str, q: &VersionQuery) -> Result<Vec<Assistant>, Fail> {
    let filter = query::version_filter(Dialect::Sqlite, id, q);
    let sql = format!(
        "SELECT doc, metadata FROM server_assistant_versions{} ORDER BY version DESC{}",
        filter.sql,
        query::page(Dialect::Sqlite, q.limit, q.offset)
    );
    let mut statement = conn.prepare_cached(&sql)?;
    let found = statement
        .query_map(params_from_iter(&filter.args), |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(found
        .iter()
        .map(|(doc, metadata)| rows::assistant(id, doc, metadata))
        .collect::<Result<_, _>>()?)
}

pub(super) fn set_latest_version(conn: &mut Connection, id: &str, version: i64) -> Result<Option<Assistant>, Fail> {
    let tx = begin(conn)?;
    let row = tx
        .prepare_cached("SELECT doc, metadata FROM server_assistant_versions WHERE assistant_id = ?1 AND version = ?2")?
        .query_row(params![id, version], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })
        .optional()?;
    let Some((doc, metadata)) = row else {
        return Ok(None);
    };
    let mut a = rows::assistant(id, &doc, &metadata)?;
    a.updated_at = rows::now();
    write_assistant(&tx, &a)?;
    tx.commit()?;
    Ok(Some(a))
}

pub(super) fn get_assistant(conn: &mut Connection, id: &str) -> Result<Option<Assistant>, Fail> {
    let row = conn
        .prepare_cached("SELECT doc, metadata FROM server_assistants WHERE assistant_id = ?1")?
        .query_row([id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .optional()?;
    Ok(row
        .map(|(doc, metadata)| rows::assistant(id, &doc, &metadata))
        .transpose()?)
}

pub(super) fn search_assistants(conn: &mut Connection, q: &AssistantQuery) -> Result<Vec<Assistant>, Fail> {
    q.check().map_err(DbError::Backend)?;
    let filter = query::assistant_filter(Dialect::Sqlite, q);
    let order = query::order_and_page(
        Dialect::Sqlite,
        q.sort_by.as_deref(),
        q.sort_order.as_deref(),
        "assistant_id",
        q.limit,
        q.offset,
    );
    let sql = format!(
        "SELECT assistant_id, doc, metadata FROM server_assistants{}{order}",
        filter.sql
    );
    let mut statement = conn.prepare_cached(&sql)?;
    let found = statement
        .query_map(params_from_iter(&filter.args), |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(found
        .iter()
        .map(|(id, doc, metadata)| rows::assistant(id, doc, metadata))
        .collect::<Result<_, _>>()?)
}

/// How many rows of `table` match `filter` (a search's count).
pub(super) fn count(conn: &Connection, table: &str, filter: &query::Filter) -> Result<u64, Fail> {
    let sql = format!("SELECT COUNT(*) FROM {table}{}", filter.sql);
    let n: i64 = conn
        .prepare_cached(&sql)?
        .query_row(params_from_iter(&filter.args), |r| r.get(0))?;
    Ok(n as u64)
}

pub(super) fn count_assistants(conn: &mut Connection, q: &AssistantQuery) -> Result<u64, Fail> {
    count(conn, "server_assistants", &query::assistant_filter(Dialect::Sqlite, q))
}

pub(super) fn delete_assistant(conn: &mut Connection, id: &str) -> Result<bool, Fail> {
    let tx = begin(conn)?;
    tx.prepare_cached("DELETE FROM server_assistant_versions WHERE assistant_id = ?1")?
        .execute([id])?;
    tx.prepare_cached("DELETE FROM server_crons WHERE assistant_id = ?1")?
        .execute([id])?;
    let existed = tx
        .prepare_cached("DELETE FROM server_assistants WHERE assistant_id = ?1")?
        .execute([id])?
        > 0;
    tx.commit()?;
    Ok(existed)
}

pub(super) fn create_thread(conn: &mut Connection, t: &Thread, if_exists: IfExists) -> Result<Thread, Fail> {
    let tx = begin(conn)?;
    if let Some(existing) = get_thread(&tx, &t.thread_id)? {
        return match if_exists {
            IfExists::DoNothing => Ok(existing),
            IfExists::Raise if existing.created_at == t.created_at => Ok(existing),
            IfExists::Raise => Err(DbError::Conflict(format!("Thread with ID {} already exists", t.thread_id)).into()),
        };
    }
    put_thread(&tx, t)?;
    tx.commit()?;
    Ok(t.clone())
}

pub(super) fn get_thread(conn: &Connection, id: &str) -> Result<Option<Thread>, Fail> {
    read_thread(
        conn,
        id,
        "SELECT doc, metadata, \"values\" FROM server_threads WHERE thread_id = ?1",
    )
}

/// The thread's row with `values` null (see [`crate::db::Catalog::get_thread_without_values`]).
pub(super) fn get_thread_without_values(conn: &Connection, id: &str) -> Result<Option<Thread>, Fail> {
    read_thread(
        conn,
        id,
        "SELECT doc, metadata, 'null' FROM server_threads WHERE thread_id = ?1",
    )
}

/// The thread `select` reads: its `doc`, `metadata` and `values` columns, in that order.
fn read_thread(conn: &Connection, id: &str, select: &str) -> Result<Option<Thread>, Fail> {
    let row = conn
        .prepare_cached(select)?
        .query_row([id], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?))
        })
        .optional()?;
    Ok(row
        .map(|(doc, metadata, values)| rows::thread(id, &doc, &metadata, &values))
        .transpose()?)
}

pub(super) fn put_thread(conn: &Connection, t: &Thread) -> Result<(), Fail> {
    let row = ThreadRow::new(t);
    conn.prepare_cached(
        "INSERT INTO server_threads
             (thread_id, status, created_at, updated_at, state_updated_at, metadata, \"values\", doc)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
         ON CONFLICT (thread_id) DO UPDATE SET status = excluded.status, created_at = excluded.created_at,
             updated_at = excluded.updated_at, state_updated_at = excluded.state_updated_at,
             metadata = excluded.metadata, \"values\" = excluded.\"values\", doc = excluded.doc",
    )?
    .execute(params![
        t.thread_id,
        row.status,
        t.created_at,
        t.updated_at,
        t.state_updated_at,
        row.metadata,
        row.values,
        row.doc
    ])?;
    Ok(())
}

pub(super) fn update_thread(conn: &mut Connection, id: &str, update: &ThreadUpdate) -> Result<Option<Thread>, Fail> {
    let tx = begin(conn)?;
    let thread = update_thread_in(&tx, id, update)?;
    tx.commit()?;
    Ok(thread)
}

/// [`update_thread`] inside a transaction the caller began and ends.
pub(super) fn update_thread_in(tx: &Connection, id: &str, update: &ThreadUpdate) -> Result<Option<Thread>, Fail> {
    let Some(thread) = get_thread(tx, id)? else {
        return Ok(None);
    };
    let thread = update.apply(thread, &rows::now());
    put_thread(tx, &thread)?;
    Ok(Some(thread))
}

pub(super) fn set_thread_status(
    conn: &mut Connection,
    id: &str,
    status: ThreadStatus,
    metadata: Option<&Object>,
) -> Result<bool, Fail> {
    let tx = begin(conn)?;
    let set = set_thread_status_in(&tx, id, status, metadata)?;
    tx.commit()?;
    Ok(set)
}

/// [`set_thread_status`] inside a transaction the caller began and ends.
pub(super) fn set_thread_status_in(
    tx: &Connection,
    id: &str,
    status: ThreadStatus,
    metadata: Option<&Object>,
) -> Result<bool, Fail> {
    let row = tx
        .prepare_cached("SELECT doc, metadata FROM server_threads WHERE thread_id = ?1")?
        .query_row([id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .optional()?;
    let Some((doc, old_metadata)) = row else {
        return Ok(false);
    };
    let update = ThreadUpdate::status(status, metadata);
    // The values stay in their column, unread: the row written back leaves that column alone.
    let thread = update.apply(rows::thread(id, &doc, &old_metadata, "null")?, &rows::now());
    let written = ThreadRow::new(&thread);
    tx.prepare_cached(
        "UPDATE server_threads SET status = ?2, updated_at = ?3, metadata = ?4, doc = ?5 WHERE thread_id = ?1",
    )?
    .execute(params![
        id,
        written.status,
        thread.updated_at,
        written.metadata,
        written.doc
    ])?;
    Ok(true)
}

pub(super) fn search_threads(conn: &mut Connection, q: &ThreadQuery) -> Result<Vec<Thread>, Fail> {
    q.check().map_err(DbError::Backend)?;
    let filter = query::thread_filter(Dialect::Sqlite, q);
    let order = query::order_and_page(
        Dialect::Sqlite,
        q.sort_by.as_deref(),
        q.sort_order.as_deref(),
        "thread_id",
        q.limit,
        q.offset,
    );
    let values = if q.without_values { "'null'" } else { "\"values\"" };
    let sql = format!(
        "SELECT thread_id, doc, metadata, {values} FROM server_threads{}{order}",
        filter.sql
    );
    let mut statement = conn.prepare_cached(&sql)?;
    let found = statement
        .query_map(params_from_iter(&filter.args), |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(found
        .iter()
        .map(|(id, doc, metadata, values)| rows::thread(id, doc, metadata, values))
        .collect::<Result<_, _>>()?)
}

pub(super) fn count_threads(conn: &mut Connection, q: &ThreadQuery) -> Result<u64, Fail> {
    count(conn, "server_threads", &query::thread_filter(Dialect::Sqlite, q))
}

pub(super) fn delete_thread(conn: &mut Connection, id: &str) -> Result<bool, Fail> {
    let tx = begin(conn)?;
    tx.prepare_cached("DELETE FROM server_runs WHERE thread_id = ?1")?
        .execute([id])?;
    tx.prepare_cached("DELETE FROM server_thread_ttl WHERE thread_id = ?1")?
        .execute([id])?;
    tx.prepare_cached("DELETE FROM server_crons WHERE thread_id = ?1")?
        .execute([id])?;
    let existed = tx
        .prepare_cached("DELETE FROM server_threads WHERE thread_id = ?1")?
        .execute([id])?
        > 0;
    tx.commit()?;
    Ok(existed)
}

pub(super) fn set_thread_ttl(conn: &mut Connection, id: &str, ttl: Option<ThreadTtl>) -> Result<(), Fail> {
    match ttl {
        Some(ttl) => conn
            .prepare_cached(
                "INSERT INTO server_thread_ttl (thread_id, strategy, minutes) VALUES (?1, ?2, ?3)
                 ON CONFLICT (thread_id) DO UPDATE SET strategy = excluded.strategy, minutes = excluded.minutes",
            )?
            .execute(params![id, ttl.strategy.as_str(), ttl.minutes])?,
        None => conn
            .prepare_cached("DELETE FROM server_thread_ttl WHERE thread_id = ?1")?
            .execute([id])?,
    };
    Ok(())
}

/// A thread's time-to-live, if it has one.
pub(super) fn thread_ttl(conn: &mut Connection, id: &str) -> Result<Option<ThreadTtl>, Fail> {
    let found = conn
        .prepare_cached("SELECT strategy, minutes FROM server_thread_ttl WHERE thread_id = ?1")?
        .query_row(params![id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?)))
        .optional()?;
    let Some((strategy, minutes)) = found else {
        return Ok(None);
    };
    Ok(Some(ThreadTtl {
        strategy: rows::ttl_strategy(id, &strategy)?,
        minutes,
    }))
}

/// The threads unchanged for longer than their TTL by `now`: `updated_at` is RFC 3339, which
/// `julianday` reads (fractions of a second and the `+00:00` offset included).
pub(super) fn expired_threads(
    conn: &mut Connection,
    now: &str,
    limit: usize,
) -> Result<Vec<(String, TtlStrategy)>, Fail> {
    let mut select = conn.prepare_cached(
        "SELECT t.thread_id, x.strategy FROM server_thread_ttl x
         JOIN server_threads t ON t.thread_id = x.thread_id
         WHERE t.status != 'busy' AND julianday(t.updated_at) + x.minutes / 1440.0 <= julianday(?1)
         ORDER BY julianday(t.updated_at) + x.minutes / 1440.0, t.thread_id
         LIMIT ?2",
    )?;
    let found = select
        .query_map(params![now, query::sql_count(limit)], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    found
        .into_iter()
        .map(|(id, strategy)| {
            let strategy = rows::ttl_strategy(&id, &strategy)?;
            Ok((id, strategy))
        })
        .collect()
}
