//! The run queue's operations on PostgreSQL. `enqueue` holds a transaction-scoped advisory lock
//! on its thread while it checks the thread's in-flight runs and inserts, so two `reject` runs
//! of one thread cannot both get in. `claim` is one `UPDATE … WHERE seq = (SELECT … FOR UPDATE
//! SKIP LOCKED)`: concurrent claimers skip each other's rows instead of waiting, and a thread's
//! runs go in order because only the first pending run of a thread with no running run is a
//! candidate. The partial unique index on the running run of a thread backs that up: a claim
//! that would break it fails with a unique violation, taken as "someone else claimed there".

use super::catalog;
use super::pool::{Conn, Fail};
use crate::db::query::{self, Dialect};
use crate::db::rows::{self, name_of};
use crate::db::{DbError, Enqueued, InFlight, QueueStats, RunFate, ThreadUpdate};
use crate::model::{MultitaskStrategy, Object, Run, RunStatus, ThreadStatus};
use tokio_postgres::error::SqlState;
use tokio_postgres::Row;

/// How many times `claim` tries again after losing a race on the one-running-run index.
const CLAIM_TRIES: usize = 5;

/// The columns a run is read from.
macro_rules! run_columns {
    () => {
        "doc::text, status, updated_at, not_before, attempt"
    };
}

fn to_run(r: &Row) -> Result<Run, DbError> {
    rows::run(r.get(0), (r.get(1), r.get(2), r.get(3), r.get(4)))
}

fn runs(found: &[Row]) -> Result<Vec<Run>, Fail> {
    Ok(found.iter().map(to_run).collect::<Result<_, _>>()?)
}

const LOCK_THREAD: &str = "SELECT pg_advisory_xact_lock(hashtext('weir-server-thread:' || $1)::bigint)";
const INFLIGHT: &str = concat!(
    "SELECT ",
    run_columns!(),
    " FROM server_runs WHERE thread_id = $1 AND status IN ('pending', 'running') ORDER BY seq"
);
const INSERT_RUN: &str = "INSERT INTO server_runs
    (run_id, thread_id, status, created_at, updated_at, doc, not_before, worker, attempt)
    VALUES ($1, $2, $7, $3, $4, $5::text::jsonb, $6, $8, $9) ON CONFLICT (run_id) DO NOTHING";
const WORKER_OF: &str = "SELECT worker FROM server_runs WHERE run_id = $1";

/// Queues `run`, and with `busy` marks its thread busy, as [`crate::db::RunQueue::enqueue`]
/// says. `again`: a second run after a lost connection, which finds the run queued (and its
/// thread marked) when the first committed, and says what the first did: claimed (the run is
/// running under `claim`), or queued.
pub(super) async fn enqueue(
    conn: &mut Conn,
    run: &Run,
    busy: Option<&Object>,
    claim: Option<&str>,
    bound: Option<usize>,
    again: bool,
) -> Result<Enqueued, Fail> {
    let (lock, inflight, insert, worker_of) = (
        conn.prepare(LOCK_THREAD).await?,
        conn.prepare(INFLIGHT).await?,
        conn.prepare(INSERT_RUN).await?,
        conn.prepare(WORKER_OF).await?,
    );
    let status = catalog::ThreadStatusStatements::prepare(conn).await?;
    let tx = conn.client.transaction().await?;
    tx.execute(&lock, &[&run.thread_id]).await?;
    let mut ahead = tx.query(&inflight, &[&run.thread_id]).await?;
    // A first run that committed put this run among them.
    let own = ahead
        .iter()
        .position(|r| to_run(r).is_ok_and(|r| r.run_id == run.run_id));
    if let (Some(at), true) = (own, again) {
        let stored = to_run(&ahead.remove(at))?;
        if stored.status == RunStatus::Running && stored.attempt == 1 {
            let worker: Option<String> = tx.query_one(&worker_of, &[&run.run_id]).await?.get(0);
            if worker.is_some() && worker.as_deref() == claim {
                return Ok(Enqueued::Claimed(Box::new(stored)));
            }
        }
        return Ok(Enqueued::Queued {
            inflight: runs(&ahead)?,
        });
    }
    if run.multitask_strategy == MultitaskStrategy::Reject && !ahead.is_empty() {
        return Ok(Enqueued::Rejected);
    }
    if crate::db::past_bound(run, ahead.len(), bound) {
        return Ok(Enqueued::Full { ahead: ahead.len() });
    }
    if let Some(metadata) = busy {
        let marked = catalog::set_thread_status_in(&tx, &status, &run.thread_id, ThreadStatus::Busy, Some(metadata));
        if !marked.await? {
            return Ok(Enqueued::NoThread);
        }
    }
    let mut pending = run.clone();
    pending.status = RunStatus::Pending;
    let doc = rows::run_doc(&pending);
    let claimed = crate::db::claimed_at_once(run, ahead.is_empty(), claim);
    let (status, attempt) = claimed
        .as_ref()
        .map_or((RunStatus::Pending, 0), |r| (r.status, r.attempt));
    let inserted = tx
        .execute(
            &insert,
            &[
                &run.run_id,
                &run.thread_id,
                &run.created_at,
                &run.updated_at,
                &doc,
                &run.not_before,
                &name_of(&status),
                &claimed.as_ref().and(claim),
                &i64::from(attempt),
            ],
        )
        .await?;
    if inserted == 0 {
        return Err(DbError::Conflict(format!("run `{}` exists already", run.run_id)).into());
    }
    let inflight = runs(&ahead)?;
    tx.commit().await?;
    Ok(claimed.map_or(Enqueued::Queued { inflight }, |r| Enqueued::Claimed(Box::new(r))))
}

const GET_RUN: &str = concat!(
    "SELECT ",
    run_columns!(),
    " FROM server_runs WHERE run_id = $1 AND thread_id = $2"
);

pub(super) async fn get_run(conn: &mut Conn, thread_id: &str, run_id: &str) -> Result<Option<Run>, Fail> {
    let statement = conn.prepare(GET_RUN).await?;
    let row = conn.client.query_opt(&statement, &[&run_id, &thread_id]).await?;
    Ok(row.as_ref().map(to_run).transpose()?)
}

const LIST_RUNS: &str = concat!(
    "SELECT ",
    run_columns!(),
    " FROM server_runs WHERE thread_id = $1 AND ($2::text IS NULL OR status = $2) ORDER BY seq DESC LIMIT $3 OFFSET $4"
);

pub(super) async fn list_runs(
    conn: &mut Conn,
    thread_id: &str,
    limit: usize,
    offset: usize,
    status: Option<RunStatus>,
) -> Result<Vec<Run>, Fail> {
    let statement = conn.prepare(LIST_RUNS).await?;
    let status = status.map(|s| name_of(&s));
    // LIMIT NULL is no limit.
    let limit = (limit > 0).then_some(crate::db::query::sql_count(limit));
    let offset = crate::db::query::sql_count(offset);
    let found = conn
        .client
        .query(&statement, &[&thread_id, &status, &limit, &offset])
        .await?;
    runs(&found)
}

/// Every pending or running run, oldest first ([`InFlight::select`]).
pub(super) async fn in_flight(conn: &mut Conn, status: InFlight) -> Result<Vec<(String, String)>, Fail> {
    let statement = conn.prepare(status.select()).await?;
    let found = conn.client.query(&statement, &[]).await?;
    Ok(found.iter().map(|r| (r.get(0), r.get(1))).collect())
}

/// As on SQLite: runs whose `not_before` has not come are skipped, and the claim's attempt is
/// one higher than the last.
const CLAIM: &str = concat!(
    "UPDATE server_runs SET status = 'running', worker = $1, updated_at = $2, attempt = attempt + 1
    WHERE seq = (SELECT r.seq FROM server_runs r WHERE r.status = 'pending'
        AND (r.not_before IS NULL OR r.not_before <= $2)
        AND NOT EXISTS (SELECT 1 FROM server_runs o WHERE o.thread_id = r.thread_id
            AND (o.status = 'running' OR (o.status = 'pending' AND o.seq < r.seq)))
        ORDER BY r.seq LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING ",
    run_columns!()
);

/// The run `worker` claimed at `$2`, if it did.
const CLAIMED_AT: &str = concat!(
    "SELECT ",
    run_columns!(),
    " FROM server_runs WHERE worker = $1 AND status = 'running' AND updated_at = $2"
);

/// Claims the first run that may start, at `at`. `again`: a second run after a lost connection,
/// which returns the run the first claimed when it committed.
pub(super) async fn claim(conn: &mut Conn, worker: &str, at: &str, again: bool) -> Result<Option<Run>, Fail> {
    if again {
        let claimed = conn.prepare(CLAIMED_AT).await?;
        if let Some(row) = conn.client.query_opt(&claimed, &[&worker, &at]).await? {
            return Ok(Some(to_run(&row)?));
        }
    }
    let statement = conn.prepare(CLAIM).await?;
    for _ in 0..CLAIM_TRIES {
        match conn.client.query_opt(&statement, &[&worker, &at]).await {
            Ok(row) => return Ok(row.as_ref().map(to_run).transpose()?),
            // Another claimer started a run of that thread first, or the two deadlocked:
            // nothing was claimed; look again.
            Err(e) if lost_race(&e) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(None)
}

/// Whether `e` is a lost race between claimers (nothing changed).
fn lost_race(e: &tokio_postgres::Error) -> bool {
    matches!(e.code(), Some(code) if *code == SqlState::UNIQUE_VIOLATION || *code == SqlState::T_R_DEADLOCK_DETECTED)
}

const HAS_INFLIGHT: &str = "SELECT EXISTS (SELECT 1 FROM server_runs WHERE thread_id = $1
    AND status IN ('pending', 'running') AND run_id IS DISTINCT FROM $2)";

/// Whether the thread has a run pending or running other than `except`.
pub(super) async fn has_inflight(conn: &mut Conn, thread_id: &str, except: Option<&str>) -> Result<bool, Fail> {
    let statement = conn.prepare(HAS_INFLIGHT).await?;
    Ok(conn.client.query_one(&statement, &[&thread_id, &except]).await?.get(0))
}

const HOLDS: &str = "SELECT 1 FROM server_runs WHERE run_id = $1 AND status = 'running' AND attempt = $2";

pub(super) async fn holds(conn: &mut Conn, run_id: &str, attempt: u32) -> Result<bool, Fail> {
    let statement = conn.prepare(HOLDS).await?;
    let found = conn
        .client
        .query_opt(&statement, &[&run_id, &i64::from(attempt)])
        .await?;
    Ok(found.is_some())
}

const FINISH: &str = "UPDATE server_runs SET status = $3, updated_at = $4
    WHERE run_id = $1 AND attempt = $2 AND status = $5";

const FINISHED: &str = "SELECT 1 FROM server_runs WHERE run_id = $1 AND attempt = $2 AND status = $3";

const DELETE_HELD: &str = "DELETE FROM server_runs WHERE run_id = $1 AND attempt = $2 AND status = $3";

const EXISTS: &str = "SELECT 1 FROM server_runs WHERE run_id = $1";

/// Ends `run` and writes its thread, as [`crate::db::RunQueue::end_run`] says. `again`: a
/// second run after a lost connection, which finds the run ended (or gone) when the first
/// committed.
pub(super) async fn end_run(
    conn: &mut Conn,
    run: &Run,
    end: RunFate,
    update: &ThreadUpdate,
    again: bool,
) -> Result<bool, Fail> {
    if run.status.is_final() {
        return Ok(false);
    }
    let finish = conn.prepare(FINISH).await?;
    let finished = conn.prepare(FINISHED).await?;
    let delete = conn.prepare(DELETE_HELD).await?;
    let exists = conn.prepare(EXISTS).await?;
    let inflight = conn.prepare(HAS_INFLIGHT).await?;
    let thread = catalog::ThreadUpdateStatements::prepare(conn).await?;
    let tx = conn.client.transaction().await?;
    let (attempt, from) = (i64::from(run.attempt), name_of(&run.status));
    // The claim first (the run's row, then the thread's, as a thread's delete takes them): a
    // stale one leaves, the transaction undone on drop.
    let held = match end {
        RunFate::Status(status) => {
            let status = name_of(&status);
            let ended = tx
                .execute(&finish, &[&run.run_id, &attempt, &status, &rows::now(), &from])
                .await?;
            if ended == 0 && again {
                let before = tx.query_opt(&finished, &[&run.run_id, &attempt, &status]).await?;
                return Ok(before.is_some());
            }
            ended > 0
        }
        RunFate::Deleted => {
            let deleted = tx.execute(&delete, &[&run.run_id, &attempt, &from]).await?;
            if deleted == 0 && again {
                return Ok(tx.query_opt(&exists, &[&run.run_id]).await?.is_none());
            }
            deleted > 0
        }
    };
    if !held {
        return Ok(false);
    }
    let mut update = update.clone();
    let busy: bool = tx
        .query_one(&inflight, &[&run.thread_id, &Some(run.run_id.as_str())])
        .await?
        .get(0);
    if busy {
        update.status = Some(ThreadStatus::Busy);
    }
    catalog::update_thread_in(&tx, &thread, &run.thread_id, &update).await?;
    tx.commit().await?;
    Ok(true)
}

const NEXT_DUE: &str = "SELECT MIN(not_before) FROM server_runs WHERE status = 'pending' AND not_before > $1";

pub(super) async fn next_due(conn: &mut Conn) -> Result<Option<String>, Fail> {
    let statement = conn.prepare(NEXT_DUE).await?;
    Ok(conn.client.query_one(&statement, &[&rows::now()]).await?.get(0))
}

const SET_STATUS: &str = "UPDATE server_runs SET status = $2, updated_at = $3,
        worker = CASE WHEN $2 = 'pending' THEN NULL ELSE worker END
    WHERE run_id = $1";

pub(super) async fn set_status(conn: &mut Conn, run_id: &str, status: RunStatus) -> Result<bool, Fail> {
    let statement = conn.prepare(SET_STATUS).await?;
    match conn
        .client
        .execute(&statement, &[&run_id, &name_of(&status), &rows::now()])
        .await
    {
        Ok(n) => Ok(n > 0),
        Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
            Err(DbError::Conflict(format!("run `{run_id}` cannot run: its thread has a running run")).into())
        }
        Err(e) => Err(e.into()),
    }
}

pub(super) async fn delete_run(conn: &mut Conn, run_id: &str) -> Result<bool, Fail> {
    let statement = conn.prepare("DELETE FROM server_runs WHERE run_id = $1").await?;
    Ok(conn.client.execute(&statement, &[&run_id]).await? > 0)
}

const REQUEUE: &str = "UPDATE server_runs SET status = 'pending', worker = NULL, updated_at = $2
    WHERE status = 'running' AND ($1::text IS NULL OR worker = $1) RETURNING run_id, attempt";

pub(super) async fn requeue(conn: &mut Conn, worker: Option<&str>) -> Result<Vec<(String, u32)>, Fail> {
    let statement = conn.prepare(REQUEUE).await?;
    let found = conn.client.query(&statement, &[&worker, &rows::now()]).await?;
    let mut back: Vec<(String, u32)> = found
        .iter()
        .map(|r| (r.get(0), u32::try_from(r.get::<_, i64>(1)).unwrap_or(u32::MAX)))
        .collect();
    back.sort();
    Ok(back)
}

const BUSY: &str =
    "SELECT DISTINCT worker FROM server_runs WHERE status = 'running' AND worker IS NOT NULL ORDER BY worker";

pub(super) async fn queue_stats(conn: &mut Conn, now: &str) -> Result<QueueStats, Fail> {
    let counts = conn.client.query_one(query::QUEUE_COUNTS, &[]).await?;
    let (pending, running): (i64, i64) = (counts.get(0), counts.get(1));
    let oldest: Option<String> = conn.client.query_one(query::OLDEST_PENDING, &[]).await?.get(0);
    let median: Option<String> = conn
        .client
        .query_opt(&query::median_pending(Dialect::Postgres), &[&(pending / 2)])
        .await?
        .map(|r| r.get(0));
    let unblocked: Option<String> = conn.client.query_one(query::OLDEST_UNBLOCKED, &[]).await?.get(0);
    Ok(QueueStats::new(
        pending as u64,
        running as u64,
        [oldest, median, unblocked],
        now,
    ))
}

pub(super) async fn busy_workers(conn: &mut Conn) -> Result<Vec<String>, Fail> {
    let statement = conn.prepare(BUSY).await?;
    let found = conn.client.query(&statement, &[]).await?;
    Ok(found.iter().map(|r| r.get(0)).collect())
}
