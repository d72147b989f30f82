//! The crons' operations on the SQLite connection. Taking the due crons runs on the connection's
//! thread in one transaction, which holds the file's write lock: no other scheduler (there is
//! one per process, and one process per file) can take a firing twice.

use super::conn::{begin, Fail};
use crate::db::query::{self, Dialect};
use crate::db::rows::{self, CronRow};
use crate::db::{CronQuery, DbError};
use crate::model::Cron;
use rusqlite::{params, params_from_iter, Connection, OptionalExtension};

pub(super) fn put_cron(conn: &Connection, cron: &Cron) -> Result<(), Fail> {
    let row = CronRow::new(cron);
    conn.prepare_cached(
        "INSERT INTO server_crons
            (cron_id, assistant_id, thread_id, enabled, due_ms, end_ms, created_at, updated_at, metadata, doc)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
         ON CONFLICT (cron_id) DO UPDATE SET assistant_id = excluded.assistant_id,
            thread_id = excluded.thread_id, enabled = excluded.enabled, due_ms = excluded.due_ms,
            end_ms = excluded.end_ms, created_at = excluded.created_at, updated_at = excluded.updated_at,
            metadata = excluded.metadata, doc = excluded.doc",
    )?
    .execute(params![
        cron.cron_id,
        cron.assistant_id,
        cron.thread_id,
        row.enabled,
        row.due_ms,
        row.end_ms,
        cron.created_at,
        cron.updated_at,
        row.metadata,
        row.doc
    ])?;
    Ok(())
}

pub(super) fn get_cron(conn: &mut Connection, id: &str) -> Result<Option<Cron>, Fail> {
    let doc: Option<String> = conn
        .prepare_cached("SELECT doc FROM server_crons WHERE cron_id = ?1")?
        .query_row([id], |r| r.get(0))
        .optional()?;
    Ok(doc.map(|doc| rows::cron(id, &doc)).transpose()?)
}

pub(super) fn delete_cron(conn: &mut Connection, id: &str) -> Result<bool, Fail> {
    Ok(conn
        .prepare_cached("DELETE FROM server_crons WHERE cron_id = ?1")?
        .execute([id])?
        > 0)
}

pub(super) fn search_crons(conn: &mut Connection, q: &CronQuery) -> Result<Vec<Cron>, Fail> {
    q.check().map_err(DbError::Backend)?;
    let filter = query::cron_filter(Dialect::Sqlite, q);
    let sql = format!(
        "SELECT cron_id, doc FROM server_crons{}{}",
        filter.sql,
        query::cron_order(Dialect::Sqlite, q)
    );
    let found = conn
        .prepare_cached(&sql)?
        .query_map(params_from_iter(&filter.args), |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(found
        .iter()
        .map(|(id, doc)| rows::cron(id, doc))
        .collect::<Result<_, _>>()?)
}

pub(super) fn count_crons(conn: &mut Connection, q: &CronQuery) -> Result<u64, Fail> {
    super::catalog::count(conn, "server_crons", &query::cron_filter(Dialect::Sqlite, q))
}

pub(super) fn take_due_crons(conn: &mut Connection, now: jiff::Timestamp, limit: usize) -> Result<Vec<Cron>, Fail> {
    let tx = begin(conn)?;
    let due = tx
        .prepare_cached(
            "SELECT cron_id, doc FROM server_crons
             WHERE enabled = 1 AND due_ms > 0 AND due_ms <= ?1 AND (end_ms = 0 OR end_ms >= ?1)
             ORDER BY due_ms, cron_id LIMIT ?2",
        )?
        .query_map(params![now.as_millisecond(), query::sql_count(limit)], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    let mut taken = Vec::with_capacity(due.len());
    for (id, doc) in due {
        let cron = rows::cron(&id, &doc)?;
        put_cron(
            &tx,
            &Cron {
                next_run_date: cron.following(now),
                ..cron.clone()
            },
        )?;
        taken.push(cron);
    }
    tx.commit()?;
    Ok(taken)
}
