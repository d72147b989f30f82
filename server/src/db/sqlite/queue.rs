//! The run queue's operations on the SQLite connection. Each write runs in one transaction that
//! holds the file's write lock from its start ([`begin`]: its own `IMMEDIATE` one, or a savepoint
//! of its batch's), so the check of a thread's in-flight runs and the insert of `enqueue`, and
//! the pick and the update of `claim`, are atomic.

use super::catalog;
use super::conn::{begin, Fail};
use crate::db::query::{self, Dialect};
use crate::db::rows::{self, name_of};
use crate::db::{DbError, Enqueued, InFlight, QueueStats, RunFate, ThreadUpdate};
use crate::model::{MultitaskStrategy, Object, Run, RunStatus, ThreadStatus};
use rusqlite::{params, Connection, OptionalExtension};

/// The columns a run is read from.
const RUN: &str = "doc, status, updated_at, not_before, attempt";

/// A run's row as read: its document and the columns of [`rows::RunColumns`].
type RunRow = (String, String, String, Option<String>, i64);

fn read(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunRow> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
}

fn to_run((doc, status, at, not_before, attempt): &RunRow) -> Result<Run, DbError> {
    rows::run(doc, (status, at, not_before.as_deref(), *attempt))
}

fn runs(found: Vec<RunRow>) -> Result<Vec<Run>, Fail> {
    Ok(found.iter().map(to_run).collect::<Result<_, _>>()?)
}

pub(super) fn enqueue(
    conn: &mut Connection,
    run: &Run,
    busy: Option<&Object>,
    claim: Option<&str>,
    bound: Option<usize>,
) -> Result<Enqueued, Fail> {
    let tx = begin(conn)?;
    let inflight = tx
        .prepare_cached(&format!(
            "SELECT {RUN} FROM server_runs WHERE thread_id = ?1 AND status IN ('pending', 'running') ORDER BY seq"
        ))?
        .query_map([&run.thread_id], read)?
        .collect::<Result<Vec<_>, _>>()?;
    if run.multitask_strategy == MultitaskStrategy::Reject && !inflight.is_empty() {
        return Ok(Enqueued::Rejected);
    }
    if crate::db::past_bound(run, inflight.len(), bound) {
        return Ok(Enqueued::Full { ahead: inflight.len() });
    }
    if let Some(metadata) = busy {
        if !catalog::set_thread_status_in(&tx, &run.thread_id, ThreadStatus::Busy, Some(metadata))? {
            return Ok(Enqueued::NoThread);
        }
    }
    let mut pending = run.clone();
    pending.status = RunStatus::Pending;
    let claimed = crate::db::claimed_at_once(run, inflight.is_empty(), claim);
    let inserted = tx
        .prepare_cached(
            "INSERT INTO server_runs (run_id, thread_id, status, created_at, updated_at, doc, not_before, worker, attempt)
             VALUES (?1, ?2, ?7, ?3, ?4, ?5, ?6, ?8, ?9) ON CONFLICT (run_id) DO NOTHING",
        )?
        .execute(params![
            run.run_id,
            run.thread_id,
            run.created_at,
            run.updated_at,
            rows::run_doc(&pending),
            run.not_before,
            name_of(&claimed.as_ref().map_or(RunStatus::Pending, |r| r.status)),
            claimed.as_ref().and(claim),
            claimed.as_ref().map_or(0, |r| r.attempt),
        ])?;
    if inserted == 0 {
        return Err(DbError::Conflict(format!("run `{}` exists already", run.run_id)).into());
    }
    let inflight = runs(inflight)?;
    tx.commit()?;
    Ok(claimed.map_or(Enqueued::Queued { inflight }, |r| Enqueued::Claimed(Box::new(r))))
}

pub(super) fn get_run(conn: &mut Connection, thread_id: &str, run_id: &str) -> Result<Option<Run>, Fail> {
    let found = conn
        .prepare_cached(&format!(
            "SELECT {RUN} FROM server_runs WHERE run_id = ?1 AND thread_id = ?2"
        ))?
        .query_row([run_id, thread_id], read)
        .optional()?;
    Ok(found.as_ref().map(to_run).transpose()?)
}

pub(super) fn list_runs(
    conn: &mut Connection,
    thread_id: &str,
    limit: usize,
    offset: usize,
    status: Option<RunStatus>,
) -> Result<Vec<Run>, Fail> {
    let page = crate::db::query::page(crate::db::query::Dialect::Sqlite, limit, offset);
    let sql = format!(
        "SELECT {RUN} FROM server_runs WHERE thread_id = ?1 AND (?2 IS NULL OR status = ?2) ORDER BY seq DESC{page}"
    );
    let status = status.map(|s| name_of(&s));
    let found = conn
        .prepare_cached(&sql)?
        .query_map(params![thread_id, status], read)?
        .collect::<Result<Vec<_>, _>>()?;
    runs(found)
}

/// Every pending or running run, oldest first ([`InFlight::select`]).
pub(super) fn in_flight(conn: &mut Connection, status: InFlight) -> Result<Vec<(String, String)>, Fail> {
    let found = conn
        .prepare_cached(status.select())?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(found)
}

/// The `seq` of the run a claim at `?2` (now) takes: the oldest pending run whose time has come
/// and whose thread has no run running and none pending before it.
macro_rules! claimable {
    () => {
        "SELECT r.seq FROM server_runs r WHERE r.status = 'pending'
            AND (r.not_before IS NULL OR r.not_before <= ?2)
            AND NOT EXISTS (SELECT 1 FROM server_runs o WHERE o.thread_id = r.thread_id
                AND (o.status = 'running' OR (o.status = 'pending' AND o.seq < r.seq)))
            ORDER BY r.seq LIMIT 1"
    };
}

/// The claim: the run [`claimable!`] picks becomes `running` for worker `?1`; its attempt (the
/// claim's token) goes up by one. The partial unique index `server_runs_one_running` backs the
/// rule up. (A delayed run holds its thread's later runs back: a thread's runs run in order.)
const CLAIM: &str = concat!(
    "UPDATE server_runs SET status = 'running', worker = ?1, updated_at = ?2, attempt = attempt + 1
    WHERE seq = (",
    claimable!(),
    ") RETURNING doc, status, updated_at, not_before, attempt"
);

/// Whether a claim now would take a run (bound as [`CLAIM`] is, its `?1` unused).
const ANY_CLAIMABLE: &str = concat!("SELECT EXISTS (", claimable!(), ")");

/// Whether a claim now would take a run, as a read: most claims of a server find nothing (a
/// worker looks again each time it is woken), and only one that can succeed needs the writer.
pub(super) fn any_claimable(conn: &mut Connection) -> Result<bool, Fail> {
    Ok(conn
        .prepare_cached(ANY_CLAIMABLE)?
        .query_row(params![rusqlite::types::Null, rows::now()], |r| r.get(0))?)
}

pub(super) fn claim(conn: &mut Connection, worker: &str) -> Result<Option<Run>, Fail> {
    let tx = begin(conn)?;
    let found = tx
        .prepare_cached(CLAIM)?
        .query_row(params![worker, rows::now()], read)
        .optional()?;
    tx.commit()?;
    Ok(found.as_ref().map(to_run).transpose()?)
}

/// Whether the thread has a run pending or running other than `except`.
pub(super) fn has_inflight(conn: &Connection, thread_id: &str, except: Option<&str>) -> Result<bool, Fail> {
    Ok(conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM server_runs WHERE thread_id = ?1
                 AND status IN ('pending', 'running') AND run_id IS NOT ?2)",
        )?
        .query_row(params![thread_id, except], |r| r.get(0))?)
}

/// Whether `run_id` is running under the claim `attempt`.
pub(super) fn holds(conn: &mut Connection, run_id: &str, attempt: u32) -> Result<bool, Fail> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM server_runs WHERE run_id = ?1 AND status = 'running' AND attempt = ?2")?
        .query_row(params![run_id, attempt], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Sets the final status of `run` if it is still as read: its status and claim (`attempt`).
fn finish(conn: &Connection, run: &Run, status: RunStatus) -> Result<bool, Fail> {
    Ok(conn
        .prepare_cached(
            "UPDATE server_runs SET status = ?3, updated_at = ?4
             WHERE run_id = ?1 AND attempt = ?2 AND status = ?5",
        )?
        .execute(params![
            run.run_id,
            run.attempt,
            name_of(&status),
            rows::now(),
            name_of(&run.status)
        ])?
        > 0)
}

/// Deletes `run` if it is still as read: its status and claim (`attempt`).
fn delete_held(conn: &Connection, run: &Run) -> Result<bool, Fail> {
    Ok(conn
        .prepare_cached("DELETE FROM server_runs WHERE run_id = ?1 AND attempt = ?2 AND status = ?3")?
        .execute(params![run.run_id, run.attempt, name_of(&run.status)])?
        > 0)
}

/// Ends `run` and writes its thread, as [`crate::db::RunQueue::end_run`] says.
pub(super) fn end_run(conn: &mut Connection, run: &Run, end: RunFate, update: &ThreadUpdate) -> Result<bool, Fail> {
    if run.status.is_final() {
        return Ok(false);
    }
    let tx = begin(conn)?;
    // The claim first: a stale one leaves (the transaction undone on drop).
    let held = match end {
        RunFate::Status(status) => finish(&tx, run, status)?,
        RunFate::Deleted => delete_held(&tx, run)?,
    };
    if !held {
        return Ok(false);
    }
    let mut update = update.clone();
    if has_inflight(&tx, &run.thread_id, Some(&run.run_id))? {
        update.status = Some(ThreadStatus::Busy);
    }
    catalog::update_thread_in(&tx, &run.thread_id, &update)?;
    tx.commit()?;
    Ok(true)
}

/// The earliest `not_before` of the pending runs still waiting for their time.
pub(super) fn next_due(conn: &mut Connection) -> Result<Option<String>, Fail> {
    Ok(conn
        .prepare_cached("SELECT MIN(not_before) FROM server_runs WHERE status = 'pending' AND not_before > ?1")?
        .query_row([rows::now()], |r| r.get(0))?)
}

pub(super) fn set_status(conn: &mut Connection, run_id: &str, status: RunStatus) -> Result<bool, Fail> {
    let changed = conn
        .prepare_cached(
            "UPDATE server_runs SET status = ?2, updated_at = ?3,
                 worker = CASE WHEN ?2 = 'pending' THEN NULL ELSE worker END
             WHERE run_id = ?1",
        )?
        .execute(params![run_id, name_of(&status), rows::now()]);
    match changed {
        Ok(n) => Ok(n > 0),
        Err(rusqlite::Error::SqliteFailure(e, _)) if e.code == rusqlite::ErrorCode::ConstraintViolation => {
            Err(DbError::Conflict(format!("run `{run_id}` cannot run: its thread has a running run")).into())
        }
        Err(e) => Err(e.into()),
    }
}

pub(super) fn delete_run(conn: &mut Connection, run_id: &str) -> Result<bool, Fail> {
    Ok(conn
        .prepare_cached("DELETE FROM server_runs WHERE run_id = ?1")?
        .execute([run_id])?
        > 0)
}

pub(super) fn requeue(conn: &mut Connection, worker: Option<&str>) -> Result<Vec<(String, u32)>, Fail> {
    let tx = begin(conn)?;
    let mut back = tx
        .prepare_cached(
            "UPDATE server_runs SET status = 'pending', worker = NULL, updated_at = ?2
             WHERE status = 'running' AND (?1 IS NULL OR worker = ?1) RETURNING run_id, attempt",
        )?
        .query_map(params![worker, rows::now()], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<Vec<(String, u32)>, _>>()?;
    tx.commit()?;
    back.sort();
    Ok(back)
}

pub(super) fn queue_stats(conn: &mut Connection, now: &str) -> Result<QueueStats, Fail> {
    let (pending, running): (i64, i64) = conn
        .prepare_cached(query::QUEUE_COUNTS)?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let oldest: Option<String> = conn
        .prepare_cached(query::OLDEST_PENDING)?
        .query_row([], |r| r.get(0))?;
    let median: Option<String> = conn
        .prepare_cached(&query::median_pending(Dialect::Sqlite))?
        .query_row([pending / 2], |r| r.get(0))
        .optional()?;
    let unblocked: Option<String> = conn
        .prepare_cached(query::OLDEST_UNBLOCKED)?
        .query_row([], |r| r.get(0))?;
    Ok(QueueStats::new(
        pending as u64,
        running as u64,
        [oldest, median, unblocked],
        now,
    ))
}

pub(super) fn busy_workers(conn: &mut Connection) -> Result<Vec<String>, Fail> {
    Ok(conn
        .prepare_cached(
            "SELECT DISTINCT worker FROM server_runs WHERE status = 'running' AND worker IS NOT NULL ORDER BY worker",
        )?
        .query_map([], |r| r.get(0))?
        .collect::<Result<Vec<String>, _>>()?)
}
