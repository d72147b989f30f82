//! What weir's test suites share, as a dev-dependency of each package: the PostgreSQL server
//! the tests that need one are given (`WEIR_POSTGRES_URL`, which `.ci/run` sets), and a schema
//! of a test's own on it (or a database, for what a schema cannot keep apart), dropped with
//! everything in it when the test lets go of it, also when the test panics (the drop blocks its
//! thread: on a current-thread runtime, a connection of the test's left in a transaction cannot
//! end it, and is ended after a few seconds); and a TLS-terminating proxy in front of that server
//! ([`TlsProxy`]), and a plain one a test cuts off ([`Relay`]). Not published.
//!
//! ```no_run
//! let schema = weir_test_support::Schema::fresh("weir_example");
//! // … connect to `schema.url` with everything in `schema.name` …
//! drop(schema); // DROP SCHEMA … CASCADE
//! ```

mod relay;
mod tls;

pub use relay::{host_port, Relay};
pub use tls::{ca_pem, TlsProxy};

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The PostgreSQL server of `WEIR_POSTGRES_URL`. A test that needs one without it set fails,
/// naming the variable, rather than pass having tested nothing.
pub fn postgres_url() -> String {
    match std::env::var("WEIR_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => panic!(
            "WEIR_POSTGRES_URL is not set: the PostgreSQL tests need a database, \
             e.g. postgres://postgres@127.0.0.1:5432/test"
        ),
    }
}

/// A schema of a test's own on a PostgreSQL server; dropped, with everything in it, on drop.
#[derive(Debug)]
pub struct Schema {
    /// The server's URL.
    pub url: String,
    /// The schema's name: the prefix it was made with, then `_` and a part of its own.
    pub name: String,
}

impl Schema {
    /// A fresh schema named after `prefix` (lower-case letters, digits and `_`) on the server
    /// of [`postgres_url`]: unique across the processes and tests that share the server.
    pub fn fresh(prefix: &str) -> Self {
        Self {
            url: postgres_url(),
            name: unique(prefix),
        }
    }
}

/// `prefix`, then `_` and a part unique across the processes and tests that share the server.
fn unique(prefix: &str) -> String {
    static MADE: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let made = MADE.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}_{:x}_{nanos:x}_{made}", std::process::id())
}

/// How long the drop waits for the locks of a test's connections in its schema.
const LOCK_TIMEOUT: &str = "SET lock_timeout = '3s'";

/// Ends the backends that hold locks on the tables of schema `$1`.
const END_HOLDERS: &str = "SELECT pg_terminate_backend(l.pid) FROM pg_locks l \
     JOIN pg_class c ON c.oid = l.relation JOIN pg_namespace n ON n.oid = c.relnamespace \
     WHERE n.nspname = $1 AND l.granted AND l.pid <> pg_backend_pid()";

impl Drop for Schema {
    fn drop(&mut self) {
        let name = self.name.clone();
        let _ = on_server(&self.url, |client| async move {
            let drop = format!("DROP SCHEMA IF EXISTS \"{name}\" CASCADE");
            client.batch_execute(LOCK_TIMEOUT).await.expect("a lock timeout is set");
            if client.batch_execute(&drop).await.is_err() {
                // The test's own connections still hold locks in the schema: a transaction
                // whose end waits on the runtime this drop blocks (a current-thread one).
                client
                    .execute(END_HOLDERS, &[&name])
                    .await
                    .expect("the schema's lock holders are ended");
                client.batch_execute(&drop).await.expect("the schema is dropped");
            }
        });
    }
}

/// A database of a test's own on the PostgreSQL server of [`postgres_url`], for what a schema
/// cannot isolate (the `public` schema, the default `weir` one); dropped on drop, its
/// connections ended.
#[derive(Debug)]
pub struct Database {
    /// The URL of the new database.
    pub url: String,
    /// Its name: the prefix it was made with, then `_` and a part of its own.
    pub name: String,
    server: String,
}

impl Database {
    /// A fresh, empty database named after `prefix` (lower-case letters, digits and `_`).
    pub fn fresh(prefix: &str) -> Self {
        let (server, name) = (postgres_url(), unique(prefix));
        let (base, query) = server.split_once('?').map_or((server.as_str(), ""), |(b, q)| (b, q));
        let at = base
            .rfind('/')
            .filter(|&i| i > "postgres://".len())
            .unwrap_or(base.len());
        let url = match query {
            "" => format!("{}/{name}", &base[..at]),
            query => format!("{}/{name}?{query}", &base[..at]),
        };
        let create = format!("CREATE DATABASE \"{name}\"");
        on_server(&server, |client| async move {
            client.batch_execute(&create).await.expect("the test database is made");
        })
        .expect("the test database is made");
        Self { url, name, server }
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        let drop = format!("DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)", self.name);
        let _ = on_server(&self.server, |client| async move {
            client.batch_execute(&drop).await.expect("the test database is dropped");
        });
    }
}

/// Runs `work` with a connection to `url`, on a thread and runtime of its own: this also runs
/// while a test panics, or as its runtime ends. `Err` when `work` panicked.
fn on_server<F, W>(url: &str, work: W) -> std::thread::Result<()>
where
    W: FnOnce(tokio_postgres::Client) -> F + Send + 'static,
    F: std::future::Future<Output = ()>,
{
    let url = url.to_owned();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime to reach PostgreSQL on");
        rt.block_on(async {
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .expect("PostgreSQL accepts");
            tokio::spawn(connection);
            work(client).await;
        });
    })
    .join()
}
