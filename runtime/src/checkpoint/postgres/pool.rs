//! The saver's side of the shared [`Pool`](crate::postgres::Pool): what its clones share, the
//! connection a call takes, and its errors named with the schema.

use super::saver::PostgresSaver;
use crate::checkpoint::SaverError;
use crate::postgres::{Pool, PoolError, Pooled};

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

/// An error inside a call: a saver error, or PostgreSQL's (named with the schema afterwards).
pub(super) enum Failure {
    Saver(SaverError),
    Postgres(tokio_postgres::Error),
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
    /// A connection from the pool, opened when none is idle.
    pub(super) async fn conn(&self) -> Result<Pooled<'_>, SaverError> {
        self.inner.pool.get().await.map_err(|e| match e {
            PoolError::Postgres(e) => self.inner.fail(e),
            timeout => self.inner.fail(timeout),
        })
    }

    /// Names the schema in PostgreSQL's errors.
    pub(super) fn finish<T>(&self, result: Result<T, Failure>) -> Result<T, SaverError> {
        match result {
            Ok(value) => Ok(value),
            Err(Failure::Saver(e)) => Err(e),
            Err(Failure::Postgres(e)) => Err(self.inner.fail(e)),
        }
    }
}
