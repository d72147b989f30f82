//! The server's tables in PostgreSQL: their migrations, versioned in `server_schema` beside the
//! checkpointer's `weir_schema`, applied at connect under an advisory lock so two processes
//! starting together migrate once.

use super::pool::Fail;
use crate::db::DbError;
use tokio_postgres::{Client, Transaction};

/// The steps from version `i` to `i + 1`; the current version is `MIGRATIONS.len()`. A later
/// release appends and never edits an entry. Ids and timestamps are `COLLATE "C"`, so they sort
/// by bytes as on SQLite (the timestamps are fixed-width RFC 3339 text).
const MIGRATIONS: &[&str] = &[
    // 1: assistants, threads, runs (the queue: `seq` is the order of arrival).
    r#"CREATE TABLE server_assistants (
        assistant_id TEXT COLLATE "C" PRIMARY KEY,
        graph_id TEXT COLLATE "C" NOT NULL,
        name TEXT COLLATE "C" NOT NULL,
        created_at TEXT COLLATE "C" NOT NULL,
        updated_at TEXT COLLATE "C" NOT NULL,
        metadata JSONB NOT NULL,
        doc JSONB NOT NULL
    );
    CREATE TABLE server_threads (
        thread_id TEXT COLLATE "C" PRIMARY KEY,
        status TEXT COLLATE "C" NOT NULL,
        created_at TEXT COLLATE "C" NOT NULL,
        updated_at TEXT COLLATE "C" NOT NULL,
        state_updated_at TEXT COLLATE "C" NOT NULL,
        metadata JSONB NOT NULL,
        "values" JSONB NOT NULL,
        doc JSONB NOT NULL
    );
    CREATE INDEX server_threads_metadata ON server_threads USING GIN (metadata jsonb_path_ops);
    CREATE TABLE server_runs (
        seq BIGSERIAL PRIMARY KEY,
        run_id TEXT COLLATE "C" NOT NULL UNIQUE,
        thread_id TEXT COLLATE "C" NOT NULL,
        status TEXT COLLATE "C" NOT NULL,
        worker TEXT COLLATE "C",
        created_at TEXT COLLATE "C" NOT NULL,
        updated_at TEXT COLLATE "C" NOT NULL,
        doc JSONB NOT NULL
    );
    CREATE INDEX server_runs_by_thread ON server_runs (thread_id, seq);
    CREATE INDEX server_runs_pending ON server_runs (seq) WHERE status = 'pending';
    CREATE UNIQUE INDEX server_runs_one_running ON server_runs (thread_id) WHERE status = 'running';"#,
    // 2: every version of an assistant (`PATCH` makes one, `/latest` picks one); the existing
    // assistants' current versions are the first rows.
    r#"CREATE TABLE server_assistant_versions (
        assistant_id TEXT COLLATE "C" NOT NULL,
        version BIGINT NOT NULL,
        created_at TEXT COLLATE "C" NOT NULL,
        metadata JSONB NOT NULL,
        doc JSONB NOT NULL,
        PRIMARY KEY (assistant_id, version)
    );
    INSERT INTO server_assistant_versions (assistant_id, version, created_at, metadata, doc)
        SELECT assistant_id, (doc->>'version')::bigint, updated_at, metadata, doc FROM server_assistants;"#,
    // 3: a run's not-before time (`after_seconds`), and its attempt: the token of the latest
    // claim, which fences off a worker that lost the run to the sweeper.
    r#"ALTER TABLE server_runs ADD COLUMN not_before TEXT COLLATE "C";
    ALTER TABLE server_runs ADD COLUMN attempt BIGINT NOT NULL DEFAULT 0;"#,
    // 4: threads' time-to-live (`ttl` on create and patch, or the config's default): what the
    // TTL sweeper reads.
    r#"CREATE TABLE server_thread_ttl (
        thread_id TEXT COLLATE "C" PRIMARY KEY,
        strategy TEXT COLLATE "C" NOT NULL,
        minutes DOUBLE PRECISION NOT NULL
    );"#,
    // 5: crons. Their times are Unix milliseconds (0 for none), which the scheduler compares.
    r#"CREATE TABLE server_crons (
        cron_id TEXT COLLATE "C" PRIMARY KEY,
        assistant_id TEXT COLLATE "C" NOT NULL,
        thread_id TEXT COLLATE "C",
        enabled BOOLEAN NOT NULL,
        due_ms BIGINT NOT NULL,
        end_ms BIGINT NOT NULL,
        created_at TEXT COLLATE "C" NOT NULL,
        updated_at TEXT COLLATE "C" NOT NULL,
        metadata JSONB NOT NULL,
        doc JSONB NOT NULL
    );
    CREATE INDEX server_crons_due ON server_crons (due_ms) WHERE enabled AND due_ms > 0;
    CREATE INDEX server_crons_by_thread ON server_crons (thread_id);"#,
];

/// The version this weir writes.
const VERSION: i64 = MIGRATIONS.len() as i64;

/// A transaction holding the lock of the server's tables in `schema`: processes starting
/// together migrate, and fence, once.
async fn locked<'c>(client: &'c mut Client, schema: &str) -> Result<Transaction<'c>, Fail> {
    let tx = client.transaction().await?;
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtext($1)::bigint)",
        &[&format!("weir-server:{schema}")],
    )
    .await?;
    Ok(tx)
}

/// Creates the schema and tables, or migrates older ones; refuses a schema whose server tables
/// a newer weir wrote (nothing is changed then).
pub(super) async fn migrate(client: &mut Client, schema: &str) -> Result<(), Fail> {
    let tx = locked(client, schema).await?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS \"{schema}\"; SET LOCAL search_path TO \"{schema}\";
         CREATE TABLE IF NOT EXISTS server_schema (version BIGINT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now());"
    ))
    .await?;
    let version: i64 = tx
        .query_one("SELECT COALESCE(MAX(version), 0) FROM server_schema", &[])
        .await?
        .get(0);
    if version > VERSION {
        return Err(Fail::Db(DbError::Backend(format!(
            "the server tables in PostgreSQL schema `{schema}` are at version {version}, newer than this \
             weir's {VERSION}: upgrade weir (nothing was changed)"
        ))));
    }
    for (from, step) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        tx.batch_execute(step).await?;
        tx.execute("INSERT INTO server_schema (version) VALUES ($1)", &[&(from as i64 + 1)])
            .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// The fence's trigger function and trigger on the checkpointer's `checkpoints` table in
/// `{schema}`; `_v1` names this version of them, so that a later one is made beside it.
///
/// A checkpoint whose metadata names a run of this thread (`run_id`, which a server run records
/// with its attempt as `run_attempt`) is refused unless that run is running under that attempt:
/// once the sweeper put the run back in the queue, or another claim made a newer attempt, the
/// worker of the old attempt can no longer move the thread's head. Reading the run takes a
/// share lock on its row, which the sweeper's requeue waits for: either the checkpoint commits
/// first (and the next attempt, claimed after the requeue, runs on from it) or it is refused.
/// A copied thread's checkpoints name runs of the thread they came from, and pass; so do the
/// checkpoints of anything but a run (`update_state`'s), which name none.
const FENCE: &str = r#"
CREATE OR REPLACE FUNCTION "{schema}".server_fence_v1() RETURNS trigger LANGUAGE plpgsql AS $fence$
DECLARE
    meta jsonb := NEW.metadata::jsonb;
    claim record;
    wrote_as bigint;
BEGIN
    IF meta->>'run_id' IS NULL THEN
        RETURN NEW;
    END IF;
    SELECT r.status, r.attempt INTO claim FROM "{schema}".server_runs r
        WHERE r.run_id = meta->>'run_id' AND r.thread_id = NEW.thread_id FOR SHARE;
    IF NOT FOUND THEN
        RETURN NEW;
    END IF;
    -- A run of the server: its non-text metadata, `run_attempt` among it, is the server's JSON.
    wrote_as := ((meta->>'__json_metadata__')::jsonb->>'run_attempt')::bigint;
    IF wrote_as IS NOT NULL AND (claim.status = 'pending' OR claim.attempt <> wrote_as) THEN
        RAISE EXCEPTION 'checkpoint `%` of thread `%` is refused: attempt % of run `%` no longer holds the run (its worker was taken for dead and the run put back in the queue; it is now %, attempt %)',
            NEW.id, NEW.thread_id, wrote_as, meta->>'run_id', claim.status, claim.attempt
            USING ERRCODE = 'WF001';
    END IF;
    RETURN NEW;
END
$fence$;
CREATE TRIGGER server_fence_v1 BEFORE INSERT ON "{schema}".checkpoints
    FOR EACH ROW EXECUTE FUNCTION "{schema}".server_fence_v1();"#;

/// Makes the fence (see [`FENCE`]) on the checkpointer's tables in `schema`, unless it is
/// there; under the migrations' lock, so that processes starting together make it once.
pub(super) async fn fence(client: &mut Client, schema: &str) -> Result<(), Fail> {
    let tx = locked(client, schema).await?;
    let table = format!("\"{schema}\".checkpoints");
    let found = tx
        .query_one(
            "SELECT to_regclass($1) IS NOT NULL, EXISTS (SELECT 1 FROM pg_trigger \
             WHERE tgname = 'server_fence_v1' AND tgrelid = to_regclass($1))",
            &[&table],
        )
        .await?;
    let (has_table, fenced): (bool, bool) = (found.get(0), found.get(1));
    if !has_table {
        return Err(Fail::Db(DbError::Backend(format!(
            "PostgreSQL schema `{schema}` has no checkpoints table to fence: connect the checkpointer \
             (PostgresSaver) to this schema first"
        ))));
    }
    if !fenced {
        tx.batch_execute(&FENCE.replace("{schema}", schema)).await?;
    }
    tx.commit().await?;
    Ok(())
}
