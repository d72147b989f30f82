//! The crons' operations on PostgreSQL. Taking the due crons locks the rows it takes
//! (`FOR UPDATE SKIP LOCKED`) and moves their next run in the same transaction: schedulers on
//! any number of workers take each firing once.

use super::catalog::bind;
use super::pool::{Conn, Fail};
use crate::db::query::{self, Dialect};
use crate::db::rows::{self, CronRow};
use crate::db::{CronQuery, DbError};
use crate::model::Cron;
use tokio_postgres::types::ToSql;
use tokio_postgres::GenericClient;

const PUT_CRON: &str = "INSERT INTO server_crons
        (cron_id, assistant_id, thread_id, enabled, due_ms, end_ms, created_at, updated_at, metadata, doc)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::text::jsonb, $10::text::jsonb)
    ON CONFLICT (cron_id) DO UPDATE SET assistant_id = excluded.assistant_id,
        thread_id = excluded.thread_id, enabled = excluded.enabled, due_ms = excluded.due_ms,
        end_ms = excluded.end_ms, created_at = excluded.created_at, updated_at = excluded.updated_at,
        metadata = excluded.metadata, doc = excluded.doc";

async fn write_cron(client: &impl GenericClient, cron: &Cron) -> Result<(), Fail> {
    let row = CronRow::new(cron);
    let params: [&(dyn ToSql + Sync); 10] = [
        &cron.cron_id,
        &cron.assistant_id,
        &cron.thread_id,
        &row.enabled,
        &row.due_ms,
        &row.end_ms,
        &cron.created_at,
        &cron.updated_at,
        &row.metadata,
        &row.doc,
    ];
    client.execute(PUT_CRON, &params).await?;
    Ok(())
}

pub(super) async fn put_cron(conn: &mut Conn, cron: &Cron) -> Result<(), Fail> {
    write_cron(&conn.client, cron).await
}

pub(super) async fn get_cron(conn: &mut Conn, id: &str) -> Result<Option<Cron>, Fail> {
    let row = conn
        .client
        .query_opt("SELECT doc::text FROM server_crons WHERE cron_id = $1", &[&id])
        .await?;
    Ok(row.map(|r| rows::cron(id, r.get(0))).transpose()?)
}

pub(super) async fn delete_cron(conn: &mut Conn, id: &str) -> Result<bool, Fail> {
    Ok(conn
        .client
        .execute("DELETE FROM server_crons WHERE cron_id = $1", &[&id])
        .await?
        > 0)
}

pub(super) async fn search_crons(conn: &mut Conn, q: &CronQuery) -> Result<Vec<Cron>, Fail> {
    q.check().map_err(DbError::Backend)?;
    let filter = query::cron_filter(Dialect::Postgres, q);
    let sql = format!(
        "SELECT cron_id, doc::text FROM server_crons{}{}",
        filter.sql,
        query::cron_order(Dialect::Postgres, q)
    );
    let found = conn.client.query(&sql, &bind(&filter.args)).await?;
    Ok(found
        .iter()
        .map(|r| rows::cron(r.get(0), r.get(1)))
        .collect::<Result<_, _>>()?)
}

pub(super) async fn count_crons(conn: &mut Conn, q: &CronQuery) -> Result<u64, Fail> {
    super::catalog::count(conn, "server_crons", &query::cron_filter(Dialect::Postgres, q)).await
}

pub(super) async fn take_due_crons(conn: &mut Conn, now: jiff::Timestamp, limit: usize) -> Result<Vec<Cron>, Fail> {
    let tx = conn.client.transaction().await?;
    let due = tx
        .query(
            "SELECT cron_id, doc::text FROM server_crons
             WHERE enabled AND due_ms > 0 AND due_ms <= $1 AND (end_ms = 0 OR end_ms >= $1)
             ORDER BY due_ms, cron_id LIMIT $2 FOR UPDATE SKIP LOCKED",
            &[&now.as_millisecond(), &query::sql_count(limit)],
        )
        .await?;
    let mut taken = Vec::with_capacity(due.len());
    for row in due {
        let cron = rows::cron(row.get(0), row.get(1))?;
        write_cron(
            &tx,
            &Cron {
                next_run_date: cron.following(now),
                ..cron.clone()
            },
        )
        .await?;
        taken.push(cron);
    }
    tx.commit().await?;
    Ok(taken)
}
