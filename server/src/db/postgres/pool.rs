//! The backend's side of the runtime's shared [`weir_runtime::postgres::Pool`]: the
//! errors of PostgreSQL named with the operation and the schema.

use crate::db::DbError;
use weir_runtime::postgres::{OpError, Pool, PoolError};

pub(super) use weir_runtime::postgres::Conn;

/// Why an operation failed: PostgreSQL, the pool, or the tables' own rule.
pub(super) enum Fail {
    Pg(tokio_postgres::Error),
    Pool(PoolError),
    Db(DbError),
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

impl OpError for Fail {
    fn into_postgres(self) -> Result<tokio_postgres::Error, Self> {
        match self {
            Fail::Pg(e) => Ok(e),
            other => Err(other),
        }
    }
}

impl From<DbError> for Fail {
    fn from(e: DbError) -> Self {
        Fail::Db(e)
    }
}

/// The error of `what` in `pool`'s schema.
pub(super) fn fail(pool: &Pool, what: &str, e: Fail) -> DbError {
    let schema = pool.schema().unwrap_or("public");
    match e {
        Fail::Db(e) => e,
        Fail::Pg(e) => DbError::Backend(format!(
            "{what} in PostgreSQL schema `{schema}` failed: {}",
            PoolError::Postgres(e)
        )),
        Fail::Pool(e) => DbError::Backend(format!("{what} in PostgreSQL schema `{schema}` failed: {e}")),
    }
}
