//! The saver's side of the shared [`Pool`](crate::postgres::Pool): what its clones share, the
//! connection a call takes, and its errors named with the schema.

use super::saver::PostgresSaver;
use crate::checkpoint::SaverError;
use crate::postgres::{OpError, Pool, PoolError};

/// What the clones of a saver share: the pool (pointed at the schema) and the statements' text.
pub(super) struct Inner {
    pub(super) pool: Pool,
    pub(super) schema: String,
    pub(super) select_checkpoint: String,
    pub(super) select_list: String,
}

impl Inner {
    pub(super) fn fail(&self, e: impl Into<crate::BoxError>) -> SaverError {
        SaverError::backend(
            format!("postgres checkpoint store (schema `{}`) failed", self.schema),
            e,
        )
    }
}

/// An error inside a call: a saver error, PostgreSQL's or the pool's (named with the schema
/// afterwards).
pub(super) enum Failure {
    Saver(SaverError),
    Postgres(tokio_postgres::Error),
    Pool(PoolError),
}

impl From<PoolError> for Failure {
    fn from(e: PoolError) -> Self {
        match e {
            PoolError::Postgres(e) => Failure::Postgres(e),
            other => Failure::Pool(other),
        }
    }
}

impl OpError for Failure {
    fn into_postgres(self) -> Result<tokio_postgres::Error, Self> {
        match self {
            Failure::Postgres(e) => Ok(e),
            other => Err(other),
        }
    }
}

impl From<tokio_postgres::Error> for Failure {
    fn from(e: tokio_postgres::Error) -> Self {
        Failure::Postgres(e)
    }
}

impl From<SaverError> for Failure {
    fn from(e: SaverError) -> Self {
        Failure::Saver(e)
    }
}

impl PostgresSaver {
    /// Names the schema in PostgreSQL's errors.
    pub(super) fn finish<T>(&self, result: Result<T, Failure>) -> Result<T, SaverError> {
        match result {
            Ok(value) => Ok(value),
            Err(Failure::Saver(e)) => Err(e),
            Err(Failure::Postgres(e)) => Err(self.inner.fail(e)),
            // The pool's own errors (a lost connection, a timeout) say what happened.
            Err(Failure::Pool(e)) => Err(SaverError::backend(
                format!("postgres checkpoint store (schema `{}`): {e}", self.inner.schema),
                e,
            )),
        }
    }
}
