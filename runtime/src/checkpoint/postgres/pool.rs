//! The saver's connections: a few kept open, each with the statements it has prepared, handed
//! to one call at a time.

use super::saver::PostgresSaver;
use crate::checkpoint::SaverError;
use std::collections::HashMap;
use std::sync::Mutex;
use tokio::sync::{Semaphore, SemaphorePermit};
use tokio_postgres::{Client, NoTls, Statement};

/// What the clones of a saver share: where to connect, and the idle connections.
pub(super) struct Inner {
    pub(super) url: String,
    pub(super) schema: String,
    /// Idle connections; at most `permits` are out at once.
    pub(super) idle: Mutex<Vec<Conn>>,
    pub(super) permits: Semaphore,
    pub(super) select_checkpoint: String,
    pub(super) select_list: String,
}

/// A connection with its prepared statements.
pub(super) struct Conn {
    pub(super) client: Client,
    statements: HashMap<String, Statement>,
}

impl Conn {
    pub(super) async fn prepare(&mut self, query: &str) -> Result<Statement, tokio_postgres::Error> {
        if let Some(statement) = self.statements.get(query) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(query).await?;
        self.statements.insert(query.to_owned(), statement.clone());
        Ok(statement)
    }
}

impl Inner {
    pub(super) fn fail(&self, e: tokio_postgres::Error) -> SaverError {
        SaverError::backend(
            format!("postgres checkpoint store (schema `{}`) failed", self.schema),
            e,
        )
    }

    pub(super) async fn open_unprepared(&self) -> Result<Conn, SaverError> {
        let (client, connection) = tokio_postgres::connect(&self.url, NoTls)
            .await
            .map_err(|e| self.fail(e))?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "postgres checkpoint connection closed");
            }
        });
        Ok(Conn {
            client,
            statements: HashMap::new(),
        })
    }

    async fn open(&self) -> Result<Conn, SaverError> {
        let conn = self.open_unprepared().await?;
        conn.client
            .batch_execute(&format!("SET search_path TO \"{}\"", self.schema))
            .await
            .map_err(|e| self.fail(e))?;
        Ok(conn)
    }
}

/// A connection taken from the pool; goes back when dropped, unless it broke.
pub(super) struct Pooled<'a> {
    conn: Option<Conn>,
    inner: &'a Inner,
    _permit: SemaphorePermit<'a>,
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take().filter(|c| !c.client.is_closed()) {
            self.inner.idle.lock().unwrap_or_else(|p| p.into_inner()).push(conn);
        }
    }
}

impl std::ops::Deref for Pooled<'_> {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        self.conn.as_ref().expect("present until dropped")
    }
}

impl std::ops::DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut Conn {
        self.conn.as_mut().expect("present until dropped")
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
        let permit = self
            .inner
            .permits
            .acquire()
            .await
            .expect("the semaphore is never closed");
        let idle = self.inner.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let conn = match idle.filter(|c| !c.client.is_closed()) {
            Some(conn) => conn,
            None => self.inner.open().await?,
        };
        Ok(Pooled {
            conn: Some(conn),
            inner: &self.inner,
            _permit: permit,
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
