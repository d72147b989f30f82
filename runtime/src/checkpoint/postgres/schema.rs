//! The PostgreSQL saver's schema: the migrations from each version to the next, applied under
//! an advisory lock so two processes starting together migrate once.

use super::pool::Inner;
use crate::checkpoint::SaverError;
use tokio_postgres::Client;

/// The steps from schema version `i` to `i + 1`; the current version is `MIGRATIONS.len()`.
/// A later release appends to this list and never edits an entry. Keys are `COLLATE "C"` so ids
/// order by bytes, as in the other savers.
const MIGRATIONS: &[&str] = &[
    // 1: checkpoints, the blobs stored under them, pending writes, heads.
    r#"CREATE TABLE checkpoints (
        thread_id TEXT COLLATE "C" NOT NULL,
        ns TEXT COLLATE "C" NOT NULL,
        id TEXT COLLATE "C" NOT NULL,
        parent_id TEXT,
        step BIGINT NOT NULL,
        source TEXT NOT NULL,
        writes TEXT NOT NULL,
        metadata TEXT NOT NULL,
        created_at TEXT NOT NULL,
        channels TEXT NOT NULL,
        body BYTEA NOT NULL,
        PRIMARY KEY (thread_id, ns, id)
    );
    CREATE TABLE blobs (
        thread_id TEXT COLLATE "C" NOT NULL,
        ns TEXT COLLATE "C" NOT NULL,
        checkpoint_id TEXT COLLATE "C" NOT NULL,
        channel TEXT COLLATE "C" NOT NULL,
        delta_of TEXT,
        bytes BYTEA NOT NULL,
        PRIMARY KEY (thread_id, ns, checkpoint_id, channel)
    );
    CREATE TABLE writes (
        thread_id TEXT COLLATE "C" NOT NULL,
        ns TEXT COLLATE "C" NOT NULL,
        checkpoint_id TEXT COLLATE "C" NOT NULL,
        task_id TEXT COLLATE "C" NOT NULL,
        idx BIGINT NOT NULL,
        task_path TEXT COLLATE "C" NOT NULL,
        channel TEXT NOT NULL,
        bytes BYTEA NOT NULL,
        PRIMARY KEY (thread_id, ns, checkpoint_id, task_id, idx)
    );
    CREATE TABLE heads (
        thread_id TEXT COLLATE "C" NOT NULL,
        ns TEXT COLLATE "C" NOT NULL,
        head TEXT COLLATE "C" NOT NULL,
        PRIMARY KEY (thread_id, ns)
    );"#,
    // 2: retention: the id each pruned thread was pruned through.
    r#"CREATE TABLE pruned (
        thread_id TEXT COLLATE "C" NOT NULL PRIMARY KEY,
        through TEXT COLLATE "C" NOT NULL
    );"#,
];

/// The schema version this weir writes.
const VERSION: i64 = MIGRATIONS.len() as i64;

/// A failure while migrating: the schema is too new, or PostgreSQL failed.
pub(super) enum OpenError {
    TooNew(i64),
    Postgres(tokio_postgres::Error),
}

impl From<tokio_postgres::Error> for OpenError {
    fn from(e: tokio_postgres::Error) -> Self {
        OpenError::Postgres(e)
    }
}

impl OpenError {
    pub(super) fn into_saver_error(self, inner: &Inner) -> SaverError {
        match self {
            OpenError::TooNew(found) => SaverError::schema_too_new(
                format!(
                    "PostgreSQL schema `{}` at {}",
                    inner.schema,
                    crate::postgres::without_password(inner.pool.url())
                ),
                found,
                VERSION,
            ),
            OpenError::Postgres(e) => inner.fail(e),
        }
    }
}

pub(super) async fn migrate(client: &mut Client, schema: &str) -> Result<(), OpenError> {
    let tx = client.transaction().await?;
    // One migrator at a time per schema, across processes; released at commit or rollback.
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtext($1)::bigint)",
        &[&format!("weir:{schema}")],
    )
    .await?;
    let exists = tx
        .query_opt("SELECT 1 FROM pg_namespace WHERE nspname = $1", &[&schema])
        .await?
        .is_some();
    let version: i64 = if exists {
        let table = tx
            .query_opt("SELECT to_regclass($1)::text", &[&format!("\"{schema}\".weir_schema")])
            .await?;
        match table.and_then(|r| r.get::<_, Option<String>>(0)) {
            Some(_) => tx
                .query_one(
                    &format!("SELECT COALESCE(MAX(version), 0) FROM \"{schema}\".weir_schema"),
                    &[],
                )
                .await?
                .get(0),
            None => 0,
        }
    } else {
        0
    };
    if version > VERSION {
        // Dropping `tx` rolls back: nothing was written.
        return Err(OpenError::TooNew(version));
    }
    if version == VERSION {
        return Ok(());
    }
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS \"{schema}\"; SET LOCAL search_path TO \"{schema}\";
         CREATE TABLE IF NOT EXISTS weir_schema (version BIGINT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now());"
    ))
    .await?;
    for (from, step) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        tx.batch_execute(step).await?;
        tx.execute("INSERT INTO weir_schema (version) VALUES ($1)", &[&(from as i64 + 1)])
            .await?;
    }
    tx.commit().await?;
    Ok(())
}
