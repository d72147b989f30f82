//! The one PostgreSQL connection pool of weir (feature `postgres`): the checkpoint saver, the
//! store's PostgreSQL backend and the server's tables each keep a [`Pool`] of a few
//! connections, each with the statements it has prepared and its `search_path` pointed at one
//! schema, handed to one caller at a time. [`PoolOptions`] is the one place for the pool's size,
//! how long a caller may wait for a connection, the connect and statement timeouts, the
//! connections' `application_name` and the TLS roots; the URL's `sslmode` says whether TLS is
//! used, and its `sslrootcert` may name the roots (`tls`; `conninfo` reads both as libpq does).
//! [`Pool::with_retry`] runs an operation and, when its connection was lost and the operation is
//! safe to repeat, runs it once more on a fresh connection (`retry`). Also here: the checks of a
//! schema's name ([`check_schema`]) and of how a URL is shown in messages ([`without_password`]).
//!
//! # Examples
//!
//! ```no_run
//! use std::time::Duration;
//! use weir_runtime::postgres::{Pool, PoolOptions};
//!
//! # async fn run() -> Result<(), weir_runtime::postgres::PoolError> {
//! let options = PoolOptions::new().size(4).acquire_timeout(Duration::from_secs(5)).schema("weir");
//! let pool = Pool::new("postgres://postgres@127.0.0.1:5432/test?sslmode=disable", options);
//! let mut conn = pool.get().await?;
//! let statement = conn.prepare("SELECT 1").await?;
//! conn.client.query(&statement, &[]).await?;
//! # Ok(()) }
//! ```

mod conninfo;
mod retry;
mod tls;

pub use retry::{Idempotent, OpError};
pub use tls::TlsRoots;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Semaphore, SemaphorePermit};
use tokio_postgres::{Client, Statement};

/// `url` as messages and logs show it: its password, if any, replaced by `***` (a URL from a
/// command line or a config often carries one). Any `scheme://user:password@host…` URL: a
/// PostgreSQL one, a Redis one; other strings (`key=value` settings) are returned whole.
///
/// ```
/// use weir_runtime::postgres::without_password;
/// assert_eq!(without_password("postgres://app:s3cret@db/prod"), "postgres://app:***@db/prod");
/// assert_eq!(without_password("rediss://:s3cret@redis:6380/0"), "rediss://:***@redis:6380/0");
/// assert_eq!(without_password("postgres://app@db/prod?application_name=a@b"), "postgres://app@db/prod?application_name=a@b");
/// ```
pub fn without_password(url: &str) -> String {
    let Some(scheme) = url.find("://").map(|i| i + 3) else {
        return url.to_owned();
    };
    let authority = url[scheme..].find(['/', '?', '#']).map_or(url.len(), |i| scheme + i);
    let Some(at) = url[scheme..authority].rfind('@').map(|i| scheme + i) else {
        return url.to_owned();
    };
    match url[scheme..at].find(':').map(|i| scheme + i) {
        Some(colon) => format!("{}:***{}", &url[..colon], &url[at..]),
        None => url.to_owned(),
    }
}

/// Checks that `name` can name a schema as weir writes it into SQL (quoted, unescaped): lower-case
/// ASCII letters, digits and `_`, not starting with a digit, at most 63 bytes.
///
/// # Errors
///
/// A message naming `name` and what a schema name may hold.
///
/// ```
/// assert!(weir_runtime::postgres::check_schema("tenant_7").is_ok());
/// assert!(weir_runtime::postgres::check_schema("Robert'); DROP").is_err());
/// ```
pub fn check_schema(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= 63
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "`{name}` cannot name a PostgreSQL schema; use lower-case ASCII letters, digits and `_`"
        ))
    }
}

/// How a [`Pool`] connects: its size, how long [`Pool::get`] waits, the connect and statement
/// timeouts, the connections' `application_name`, the TLS roots, and the schema.
#[derive(Debug, Clone)]
pub struct PoolOptions {
    size: usize,
    acquire_timeout: Option<Duration>,
    connect_timeout: Option<Duration>,
    statement_timeout: Option<Duration>,
    application_name: Option<String>,
    roots: TlsRoots,
    schema: Option<String>,
    public: bool,
}

impl Default for PoolOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl PoolOptions {
    /// Four connections, a caller waiting as long as it takes, connecting for as long as the
    /// operating system tries, no statement timeout, `application_name` `weir` (unless the URL
    /// names one), the webpki roots, the server's default schema.
    pub fn new() -> Self {
        PoolOptions {
            size: 4,
            acquire_timeout: None,
            connect_timeout: None,
            statement_timeout: None,
            application_name: None,
            roots: TlsRoots::Webpki,
            schema: None,
            public: false,
        }
    }

    /// How many connections are open at most (at least 1).
    pub fn size(mut self, size: usize) -> Self {
        self.size = size.max(1);
        self
    }

    /// How long [`Pool::get`] waits while every connection is in use before it fails with
    /// [`PoolError::Timeout`] (default: no limit).
    pub fn acquire_timeout(mut self, timeout: Duration) -> Self {
        self.acquire_timeout = Some(timeout);
        self
    }

    /// How long opening a connection (TCP, TLS and startup) may take before it fails (default:
    /// as long as the operating system tries).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }

    /// The server's `statement_timeout` on each connection: a statement running longer is
    /// cancelled by the server (SQLSTATE 57014), and the operation fails (default: the server's).
    pub fn statement_timeout(mut self, timeout: Duration) -> Self {
        self.statement_timeout = Some(timeout);
        self
    }

    /// The `application_name` each connection reports (`pg_stat_activity` shows it), over the
    /// URL's; `weir` when neither sets one.
    pub fn application_name(mut self, name: impl Into<String>) -> Self {
        self.application_name = Some(name.into());
        self
    }

    /// The certificates a server's is checked against when the URL's `sslmode` asks for TLS
    /// (default [`TlsRoots::Webpki`]); a managed database's private CA is
    /// [`TlsRoots::pem_file`] or [`TlsRoots::Pem`]. Without them, the URL's libpq
    /// `sslrootcert=FILE` names the file (`postgres://…?sslmode=verify-full&sslrootcert=ca.pem`).
    pub fn tls_roots(mut self, roots: TlsRoots) -> Self {
        self.roots = roots;
        self
    }

    /// The schema each connection's `search_path` points at (the pool does not create it).
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = Some(schema.into());
        self
    }

    /// Also searches the schema `public` after [`schema`](Self::schema)'s (where extensions
    /// such as pgvector usually live).
    pub fn then_public(mut self) -> Self {
        self.public = true;
        self
    }

    /// How many connections are open at most.
    pub fn pool_size(&self) -> usize {
        self.size
    }

    /// The schema set by [`schema`](Self::schema), if any.
    pub fn schema_name(&self) -> Option<&str> {
        self.schema.as_deref()
    }

    /// The URL's settings, with this pool's timeouts and `application_name` over them, the
    /// certificate checks its `sslmode` asks for, and the roots to check against: this pool's,
    /// else the URL's `sslrootcert` file, else webpki's.
    fn config(&self, url: &str) -> Result<(tokio_postgres::Config, tls::Checks, TlsRoots), PoolError> {
        let tls = conninfo::tls_settings(url);
        let roots = match (&self.roots, tls.root_file) {
            (TlsRoots::Webpki, Some(file)) => TlsRoots::PemFile(file),
            (roots, _) => roots.clone(),
        };
        let mut config: tokio_postgres::Config = tls.conninfo.parse()?;
        if let Some(name) = &self.application_name {
            config.application_name(name);
        } else if config.get_application_name().is_none() {
            config.application_name("weir");
        }
        if let Some(timeout) = self.connect_timeout {
            config.connect_timeout(timeout);
        }
        if let Some(timeout) = self.statement_timeout {
            let options = config.get_options().unwrap_or("").to_owned();
            config.options(format!("{options} -c statement_timeout={}", timeout.as_millis()).trim_start());
        }
        Ok((config, tls.checks, roots))
    }
}

/// Why a connection could not be had.
#[derive(Debug)]
pub enum PoolError {
    /// Every connection stayed in use for the whole acquire timeout.
    Timeout {
        /// How long the caller waited.
        waited: Duration,
        /// The pool's size.
        size: usize,
    },
    /// PostgreSQL failed (connecting, TLS, or pointing the connection at the schema).
    Postgres(tokio_postgres::Error),
    /// The TLS roots could not be read (a missing file, PEM without a certificate).
    Tls(String),
    /// The connection was lost during an operation (the server ended the backend, or the socket
    /// closed), and the operation was not run again: it is not safe to repeat, or its second
    /// run lost its connection too. Made by [`Pool::with_retry`].
    Lost {
        /// The operation, e.g. ``put checkpoint `…` of thread `t` ``.
        what: String,
        /// Whether it had already been run again on a fresh connection.
        retried: bool,
        /// PostgreSQL's error.
        source: tokio_postgres::Error,
    },
}

impl fmt::Display for PoolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PoolError::Timeout { waited, size } => write!(
                f,
                "no PostgreSQL connection was free within {waited:?}: all {size} of the pool's connections \
                 are in use (raise its size or acquire timeout)"
            ),
            PoolError::Postgres(e) => match e.as_db_error() {
                Some(db) => write!(f, "{} ({})", db.message(), db.code().code()),
                None => match std::error::Error::source(e) {
                    Some(source) => write!(f, "{e}: {source}"),
                    None => write!(f, "{e}"),
                },
            },
            PoolError::Tls(detail) => write!(f, "the TLS roots cannot be used: {detail}"),
            PoolError::Lost { what, retried, .. } => {
                write!(f, "the connection to PostgreSQL was lost during {what}")?;
                if *retried {
                    write!(f, ", and again when it was run once more on a fresh connection")
                } else {
                    write!(
                        f,
                        "; it was not run again, since it is not safe to repeat (it may have taken effect)"
                    )
                }
            }
        }
    }
}

impl std::error::Error for PoolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PoolError::Timeout { .. } | PoolError::Tls(_) => None,
            PoolError::Postgres(e) | PoolError::Lost { source: e, .. } => Some(e),
        }
    }
}

impl From<tokio_postgres::Error> for PoolError {
    fn from(e: tokio_postgres::Error) -> Self {
        PoolError::Postgres(e)
    }
}

/// A connection with the statements it has prepared.
pub struct Conn {
    /// The connection itself.
    pub client: Client,
    statements: HashMap<String, Statement>,
}

impl fmt::Debug for Conn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Conn")
            .field("prepared", &self.statements.len())
            .finish_non_exhaustive()
    }
}

impl Conn {
    /// The statement of `sql`, prepared once per connection.
    ///
    /// # Errors
    /// PostgreSQL's, when the statement does not prepare.
    pub async fn prepare(&mut self, sql: &str) -> Result<Statement, tokio_postgres::Error> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql).await?;
        self.statements.insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }
}

struct Shared {
    url: String,
    options: PoolOptions,
    idle: Mutex<Vec<Conn>>,
    permits: Semaphore,
}

/// A few PostgreSQL connections handed to one caller at a time. Clones share them.
#[derive(Clone)]
pub struct Pool(Arc<Shared>);

impl fmt::Debug for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The URL may hold a password: not shown.
        f.debug_struct("Pool")
            .field("schema", &self.0.options.schema)
            .field("size", &self.0.options.size)
            .finish_non_exhaustive()
    }
}

impl Pool {
    /// A pool for the database at `url`; connections open when first needed.
    pub fn new(url: &str, options: PoolOptions) -> Self {
        Pool(Arc::new(Shared {
            url: url.to_owned(),
            permits: Semaphore::new(options.size),
            options,
            idle: Mutex::new(Vec::new()),
        }))
    }

    /// The database's URL (it may hold a password).
    pub fn url(&self) -> &str {
        &self.0.url
    }

    /// The schema the connections point at, if one was set.
    pub fn schema(&self) -> Option<&str> {
        self.0.options.schema.as_deref()
    }

    /// A new connection outside the pool's count, not yet pointed at the schema (to create or
    /// migrate it); [`keep`](Self::keep) adds it to the pool.
    ///
    /// # Errors
    /// When the server cannot be reached.
    pub async fn open(&self) -> Result<Conn, PoolError> {
        let (config, checks, roots) = self.0.options.config(&self.0.url)?;
        let tls = tls::Connector::new(&roots, checks)?;
        let (client, connection) = config.connect(tls).await?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "a pooled postgres connection closed");
            }
        });
        Ok(Conn {
            client,
            statements: HashMap::new(),
        })
    }

    /// Points `conn` at the schema and keeps it idle in the pool.
    ///
    /// # Errors
    /// When the `search_path` cannot be set.
    pub async fn keep(&self, conn: Conn) -> Result<(), PoolError> {
        self.point(&conn).await?;
        self.0.idle.lock().unwrap_or_else(|p| p.into_inner()).push(conn);
        Ok(())
    }

    async fn point(&self, conn: &Conn) -> Result<(), PoolError> {
        if let Some(schema) = &self.0.options.schema {
            let schema = schema.replace('"', "\"\"");
            let public = if self.0.options.public { ", public" } else { "" };
            conn.client
                .batch_execute(&format!("SET search_path TO \"{schema}\"{public}"))
                .await?;
        }
        Ok(())
    }

    /// A connection, opened when none is idle; waits while all are in use, up to the acquire
    /// timeout. It goes back to the pool when dropped, unless it broke.
    ///
    /// # Errors
    /// [`PoolError::Timeout`] after the acquire timeout; PostgreSQL's when a new connection fails.
    pub async fn get(&self) -> Result<Pooled<'_>, PoolError> {
        self.take(true).await
    }

    /// A connection, from the idle ones when `idle`, else newly opened.
    async fn take(&self, idle: bool) -> Result<Pooled<'_>, PoolError> {
        let acquire = self.0.permits.acquire();
        let permit = match self.0.options.acquire_timeout {
            None => acquire.await,
            Some(waited) => tokio::time::timeout(waited, acquire)
                .await
                .map_err(|_| PoolError::Timeout {
                    waited,
                    size: self.0.options.size,
                })?,
        }
        .expect("the semaphore is never closed");
        let idle = match idle {
            true => self.0.idle.lock().unwrap_or_else(|p| p.into_inner()).pop(),
            false => None,
        };
        let conn = match idle.filter(|c| !c.client.is_closed()) {
            Some(conn) => conn,
            None => {
                let conn = self.open().await?;
                self.point(&conn).await?;
                conn
            }
        };
        Ok(Pooled {
            conn: Some(conn),
            pool: self,
            _permit: permit,
        })
    }
}

/// A connection taken from a [`Pool`]; goes back when dropped, unless it broke.
pub struct Pooled<'a> {
    conn: Option<Conn>,
    pool: &'a Pool,
    _permit: SemaphorePermit<'a>,
}

impl fmt::Debug for Pooled<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pooled").field("conn", &self.conn).finish()
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take().filter(|c| !c.client.is_closed()) {
            self.pool.0.idle.lock().unwrap_or_else(|p| p.into_inner()).push(conn);
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
