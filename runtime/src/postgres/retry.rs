//! Reconnect and retry: the one place that decides whether an operation whose connection was
//! lost runs again.
//!
//! A connection is lost when the server ends its backend (`pg_terminate_backend`, a restart, a
//! fail-over: SQLSTATE class 57, "operator intervention") or the socket closes. The operation's
//! caller says whether it is [`Idempotent`]: running it twice leaves what running it once does
//! (a read; an upsert; a transaction that replaces what it writes; a transaction that, run again
//! after a commit whose reply was lost, sees its own effect and says done). Such an operation
//! runs once more on a freshly opened connection (an idle one may have been ended with the
//! lost one); a second loss, or a loss during an operation that is not idempotent, fails with
//! [`PoolError::Lost`], which names the operation.

use super::{Pool, PoolError, Pooled};
use std::future::Future;

/// Whether an operation may run again after its connection was lost. See the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Idempotent {
    /// Running it twice leaves what running it once does: it runs once more on a fresh
    /// connection.
    Yes,
    /// It may have taken effect before the connection was lost, and a second run would take
    /// effect again: it fails with [`PoolError::Lost`].
    No,
}

/// The error type of an operation run by [`Pool::with_retry`]: it holds PostgreSQL's errors
/// and the pool's, and may have errors of its own.
pub trait OpError: From<PoolError> {
    /// PostgreSQL's error inside, when this is one; `self` back otherwise.
    fn into_postgres(self) -> Result<tokio_postgres::Error, Self>;
}

impl OpError for PoolError {
    fn into_postgres(self) -> Result<tokio_postgres::Error, Self> {
        match self {
            PoolError::Postgres(e) => Ok(e),
            other => Err(other),
        }
    }
}

/// Whether `e` says the connection is gone: closed, or its backend ended by the server
/// (SQLSTATE class 57 but 57014, a cancelled statement, whose connection lives on).
pub(super) fn is_lost(e: &tokio_postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    if let Some(code) = e.code() {
        return code.code().starts_with("57") && code.code() != "57014";
    }
    // An I/O error (a reset socket) with no SQLSTATE.
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if s.is::<std::io::Error>() {
            return true;
        }
        source = s.source();
    }
    false
}

impl Pool {
    /// Runs `op` on a connection of the pool. When the connection was lost (see the module
    /// docs) and `idempotent` is [`Idempotent::Yes`], runs it once more on a freshly opened
    /// connection; otherwise, or when that is lost too, fails with [`PoolError::Lost`] naming
    /// `what()` (e.g. ``put checkpoint `…` of thread `t` ``). Other errors are returned as
    /// they are.
    ///
    /// # Errors
    /// `op`'s; [`PoolError::Lost`]; the pool's when no connection can be had.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use weir_runtime::postgres::{Idempotent, Pool, PoolError, PoolOptions};
    ///
    /// # async fn run() -> Result<(), PoolError> {
    /// let pool = Pool::new("postgres://postgres@127.0.0.1:5432/test", PoolOptions::new());
    /// let n: i32 = pool
    ///     .with_retry(|| "reading one".to_owned(), Idempotent::Yes, |conn| async move {
    ///         Ok::<_, PoolError>(conn.client.query_one("SELECT 1", &[]).await?.get(0))
    ///     })
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub async fn with_retry<'p, T, E, F, Fut>(
        &'p self,
        what: impl FnOnce() -> String,
        idempotent: Idempotent,
        mut op: F,
    ) -> Result<T, E>
    where
        E: OpError,
        F: FnMut(Pooled<'p>) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let mut retried = false;
        loop {
            // A retry opens a connection: the idle ones may have been ended with the lost one.
            let conn = self.take(!retried).await?;
            let e = match op(conn).await {
                Ok(value) => return Ok(value),
                Err(e) => match e.into_postgres() {
                    Err(other) => return Err(other),
                    Ok(e) if !is_lost(&e) => return Err(PoolError::Postgres(e).into()),
                    Ok(e) => e,
                },
            };
            if idempotent == Idempotent::Yes && !retried {
                tracing::warn!(error = %PoolError::Postgres(e), "a PostgreSQL connection was lost; running the operation again on a fresh one");
                retried = true;
                continue;
            }
            return Err(PoolError::Lost {
                what: what(),
                retried,
                source: e,
            }
            .into());
        }
    }
}
