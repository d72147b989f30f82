//! PostgreSQL in production (feature `postgres`; ignored unless asked for with
//! `--include-ignored`, and then `WEIR_POSTGRES_URL` must name a database).
//!
//! TLS, for real: PostgreSQL here has no TLS, so `weir_test_support::TlsProxy` terminates it in
//! process, with a certificate a CA of its own signed. A saver through it with `sslmode=require`
//! and that CA (given to the pool, or named by the URL's `sslrootcert`) saves and reads; a wrong
//! CA fails naming TLS and the certificate; `sslmode=disable` never asks for TLS; libpq's
//! `key=value` settings are read with their spacing, quotes and escapes.
//!
//! Reconnect and retry, for real: the pools' connections carry the test's own
//! `application_name`, and `pg_terminate_backend` ends them in the middle of a 200-step run, of
//! store puts and gets, and of statements blocked on a lock the test holds (which makes the kill
//! land inside the statement, every time). An idempotent statement runs again on a fresh
//! connection; a copy of a thread, which is not, fails saying the connection was lost and what
//! it was doing.

#![cfg(feature = "postgres")]

use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use weir::checkpoint::{new_checkpoint_id, Checkpointer, MemorySaver, PostgresSaver};
use weir::prelude::*;
use weir::{NodeId, NodeRef};
use weir_runtime::postgres::{Pool, PoolOptions, TlsRoots};
use weir_runtime::store::{PostgresStore, Store, StoreConfig};
use weir_test_support::{ca_pem, postgres_url as url, Schema, TlsProxy};

/// A fresh name: for a schema, a thread, an `application_name`.
fn unique(prefix: &str) -> String {
    format!("{prefix}_{}", &new_checkpoint_id()[8..]).to_lowercase()
}

/// A plain connection of the test's own (its `application_name` is not the pools').
async fn admin() -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(&url(), tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

/// Ends every backend whose `application_name` is `app`; how many.
async fn terminate(admin: &tokio_postgres::Client, app: &str) -> usize {
    admin
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
            &[&app],
        )
        .await
        .unwrap()
        .len()
}

/// The backend of `app` waiting on a lock, other than `not`, once there is one (failing if `op`
/// ends first).
async fn waiting_on_a_lock<T>(
    admin: &tokio_postgres::Client,
    app: &str,
    not: Option<i32>,
    op: &tokio::task::JoinHandle<T>,
) -> i32 {
    loop {
        let row = admin
            .query_opt(
                "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock' \
                 AND pid IS DISTINCT FROM $2",
                &[&app, &not],
            )
            .await
            .unwrap();
        if let Some(row) = row {
            return row.get(0);
        }
        assert!(!op.is_finished(), "the operation ended instead of waiting on the lock");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[derive(State, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Count {
    n: u64,
    target: u64,
}

/// `tick` adds one to `n` until it reaches `target`, one step each; `progress` counts its runs.
fn counter(saver: Arc<dyn Checkpointer>, progress: Arc<AtomicUsize>) -> CompiledGraph<Count> {
    let mut g = GraphBuilder::<Count>::new();
    let tick = g.add_node("tick", move |s: &Count| {
        progress.fetch_add(1, Ordering::SeqCst);
        CountUpdate::default().n(s.n + 1)
    });
    let tick: NodeId = tick.id();
    g.add_edge(START, tick);
    g.add_router(
        tick,
        move |s: &Count| if s.n < s.target { Goto::from(tick) } else { Goto::End },
        [NodeRef::from(tick), NodeRef::End],
    );
    g.set_checkpointer(saver);
    g.compile().unwrap()
}

fn run_config(thread: &str) -> RunConfig {
    RunConfig::thread(thread)
        .durability(Durability::Sync)
        .recursion_limit(1_000)
}

/// The steps of the checkpoints runs of [`counter`] to each of `targets`, one after the other on
/// one thread, leave on a `MemorySaver`.
async fn expected_steps(targets: &[u64]) -> Vec<i64> {
    let memory: Arc<dyn Checkpointer> = Arc::new(MemorySaver::new());
    let graph = counter(memory.clone(), Arc::new(AtomicUsize::new(0)));
    for &target in targets {
        graph
            .invoke(CountUpdate::default().target(target), &run_config("reference"))
            .await
            .unwrap();
    }
    steps(&*memory, "reference").await
}

/// The step of every checkpoint of `thread`, oldest first.
async fn steps(saver: &dyn Checkpointer, thread: &str) -> Vec<i64> {
    let mut records = saver.list(thread, "", None, None).await.unwrap();
    records.reverse();
    records.iter().map(|r| r.step).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
async fn a_200_step_run_goes_on_while_its_connections_are_killed_five_times() {
    let schema = Schema::fresh("weir_prod");
    let app = unique("weir_kill_run");
    let saver = PostgresSaver::options()
        .schema(&schema.name)
        .pool(PoolOptions::new().size(2).application_name(&app))
        .connect(&url())
        .await
        .unwrap();
    let saver: Arc<dyn Checkpointer> = Arc::new(saver);
    let progress = Arc::new(AtomicUsize::new(0));
    let graph = counter(saver.clone(), progress.clone());

    // Every 30 steps, end every connection of the saver's pool.
    let killer = tokio::spawn({
        let (app, progress) = (app.clone(), progress.clone());
        async move {
            let admin = admin().await;
            let mut killed = Vec::new();
            for round in 1..=5 {
                while progress.load(Ordering::SeqCst) < round * 30 {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                killed.push(terminate(&admin, &app).await);
            }
            killed
        }
    });
    let thread = unique("run");
    let started = std::time::Instant::now();
    let out = graph
        .invoke(CountUpdate::default().target(200), &run_config(&thread))
        .await
        .expect("the run goes on across the kills");
    let with_kills = started.elapsed();
    let killed = killer.await.unwrap();
    assert_eq!(out.n, 200);
    assert!(
        killed.iter().all(|&k| k >= 1),
        "each round ended a connection: {killed:?}"
    );

    // Every step's checkpoint is there, once: as the same run on a MemorySaver leaves them.
    let expected = expected_steps(&[200]).await;
    assert_eq!(expected.len(), 202, "the input checkpoint and one per step");
    assert_eq!(steps(&*saver, &thread).await, expected);
    let state = graph.get_state(&run_config(&thread)).await.unwrap().unwrap();
    assert_eq!(state.values, Count { n: 200, target: 200 });

    // A figure, not an assertion: the same run without kills.
    let started = std::time::Instant::now();
    graph
        .invoke(CountUpdate::default().target(200), &run_config(&unique("calm")))
        .await
        .unwrap();
    println!(
        "200 steps, sync durability: {with_kills:.1?} with {killed:?} connections killed in 5 rounds, {:.1?} without",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
async fn a_put_killed_while_it_waits_on_a_lock_runs_again_on_a_fresh_connection() {
    let schema = Schema::fresh("weir_prod");
    let app = unique("weir_kill_put");
    let saver = PostgresSaver::options()
        .schema(&schema.name)
        .pool(PoolOptions::new().size(2).application_name(&app))
        .connect(&url())
        .await
        .unwrap();
    let saver: Arc<dyn Checkpointer> = Arc::new(saver);
    let graph = Arc::new(counter(saver.clone(), Arc::new(AtomicUsize::new(0))));
    let thread = unique("locked");
    graph
        .invoke(CountUpdate::default().target(2), &run_config(&thread))
        .await
        .unwrap();

    // Hold the thread's head: the next put waits for it inside its first statement.
    let mut admin = admin().await;
    let tx = admin.transaction().await.unwrap();
    tx.execute(
        &format!(
            "SELECT 1 FROM \"{}\".heads WHERE thread_id = $1 FOR UPDATE",
            schema.name
        ),
        &[&thread],
    )
    .await
    .unwrap();
    let run = tokio::spawn({
        let (graph, thread) = (graph.clone(), thread.clone());
        async move {
            graph
                .invoke(CountUpdate::default().target(4), &run_config(&thread))
                .await
        }
    });
    let killer = self::admin().await;
    let first = waiting_on_a_lock(&killer, &app, None, &run).await;
    killer
        .execute("SELECT pg_terminate_backend($1)", &[&first])
        .await
        .unwrap();
    // The put runs again, on another backend, and waits again.
    let second = waiting_on_a_lock(&killer, &app, Some(first), &run).await;
    assert_ne!(first, second);
    tx.rollback().await.unwrap();

    let out = run.await.unwrap().expect("the put ran again and the run went on");
    assert_eq!(out.n, 4);
    // Once each: no step is missing, none is stored twice.
    assert_eq!(steps(&*saver, &thread).await, expected_steps(&[2, 4]).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
async fn a_copy_killed_mid_statement_is_not_repeated_and_says_the_connection_was_lost() {
    let schema = Schema::fresh("weir_prod");
    let app = unique("weir_kill_copy");
    let saver = PostgresSaver::options()
        .schema(&schema.name)
        .pool(PoolOptions::new().size(2).application_name(&app))
        .connect(&url())
        .await
        .unwrap();
    let saver: Arc<dyn Checkpointer> = Arc::new(saver);
    let from = unique("from");
    let to = unique("to");
    counter(saver.clone(), Arc::new(AtomicUsize::new(0)))
        .invoke(CountUpdate::default().target(1), &run_config(&from))
        .await
        .unwrap();

    // An uncommitted head of `to`: the copy's insert of that head waits for it.
    let mut admin = admin().await;
    let tx = admin.transaction().await.unwrap();
    tx.execute(
        &format!(
            "INSERT INTO \"{}\".heads (thread_id, ns, head) VALUES ($1, '', 'x')",
            schema.name
        ),
        &[&to],
    )
    .await
    .unwrap();
    let copy = tokio::spawn({
        let (saver, from, to) = (saver.clone(), from.clone(), to.clone());
        async move { saver.copy_thread(&from, &to).await }
    });
    let killer = self::admin().await;
    let pid = waiting_on_a_lock(&killer, &app, None, &copy).await;
    killer
        .execute("SELECT pg_terminate_backend($1)", &[&pid])
        .await
        .unwrap();
    let e = copy.await.unwrap().expect_err("a copy is not repeated");
    tx.rollback().await.unwrap();

    let message = e.to_string();
    assert!(
        message.contains(&format!(
            "the connection to PostgreSQL was lost during copying thread `{from}` to `{to}`; it was not run again"
        )),
        "{message}"
    );
    assert!(message.contains(&format!("schema `{}`", schema.name)), "{message}");
    // The copy's transaction was rolled back with its backend: nothing of it is there.
    assert!(saver.list(&to, "", None, None).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
async fn store_puts_and_gets_go_on_while_the_connections_are_killed() {
    let schema = Schema::fresh("weir_prod");
    let app = unique("weir_kill_store");
    let pool = Pool::new(
        &url(),
        PoolOptions::new()
            .size(2)
            .schema(&schema.name)
            .then_public()
            .application_name(&app),
    );
    let store = PostgresStore::with_pool(pool, StoreConfig::default()).await.unwrap();
    let admin = admin().await;
    let mut killed = 0;
    for i in 0..40u32 {
        store
            .put(&["kills"], &format!("k{i}"), json!({ "i": i }))
            .await
            .unwrap_or_else(|e| panic!("put {i}: {e}"));
        if i % 8 == 7 {
            killed += terminate(&admin, &app).await;
        }
        let got = store
            .get(&["kills"], &format!("k{i}"))
            .await
            .unwrap_or_else(|e| panic!("get {i}: {e}"));
        assert_eq!(got.map(|item| item.value), Some(json!({ "i": i })));
    }
    assert!(killed >= 5, "the kills ended connections: {killed}");
    for i in 0..40u32 {
        let got = store.get(&["kills"], &format!("k{i}")).await.unwrap();
        assert_eq!(got.map(|item| item.value), Some(json!({ "i": i })), "item {i}");
    }
}

/// Saves two checkpoints through `saver` and reads them back.
async fn saves_and_reads(saver: PostgresSaver) {
    let saver: Arc<dyn Checkpointer> = Arc::new(saver);
    let graph = counter(saver.clone(), Arc::new(AtomicUsize::new(0)));
    let thread = unique("tls");
    let out = graph
        .invoke(CountUpdate::default().target(2), &run_config(&thread))
        .await
        .unwrap();
    assert_eq!(out.n, 2);
    assert_eq!(steps(&*saver, &thread).await, expected_steps(&[2]).await);
    let state = graph.get_state(&run_config(&thread)).await.unwrap().unwrap();
    assert_eq!(state.values, Count { n: 2, target: 2 });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
async fn a_saver_through_tls_with_the_servers_ca_saves_and_reads_under_require_and_verify_full() {
    let proxy = TlsProxy::start().await;
    for sslmode in ["require", "verify-ca", "verify-full"] {
        let schema = Schema::fresh("weir_prod");
        let saver = PostgresSaver::options()
            .schema(&schema.name)
            .pool(PoolOptions::new().tls_roots(TlsRoots::pem(proxy.ca.clone())))
            .connect(&proxy.url(sslmode))
            .await
            .unwrap_or_else(|e| panic!("{sslmode}: {e}: {:?}", std::error::Error::source(&e)));
        saves_and_reads(saver).await;
    }
    assert!(proxy.ssl_requests() >= 3);
    assert_eq!(proxy.plaintext(), 0, "every connection was TLS");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
async fn the_urls_sslrootcert_names_the_ca_file_when_the_pool_names_none() {
    // libpq's way, which a managed database's instructions give: the URL names the CA file.
    let proxy = TlsProxy::start().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("server ca.pem");
    std::fs::write(&file, &proxy.ca).unwrap();
    let escaped = file.display().to_string().replace(' ', "%20");
    let schema = Schema::fresh("weir_prod");
    let saver = PostgresSaver::options()
        .schema(&schema.name)
        .connect(&format!("{}&sslrootcert={escaped}", proxy.url("verify-full")))
        .await
        .unwrap_or_else(|e| panic!("{}", chain(&e)));
    saves_and_reads(saver).await;
    assert_eq!(proxy.plaintext(), 0, "every connection was TLS");
    // A file that is not there is named.
    let missing = dir.path().join("gone.pem");
    let e = PostgresSaver::options()
        .schema(&schema.name)
        .connect(&format!("{}&sslrootcert={}", proxy.url("require"), missing.display()))
        .await
        .expect_err("no CA file");
    assert!(
        chain(&e).contains(&format!("the CA file `{}` cannot be read", missing.display())),
        "{}",
        chain(&e)
    );
}

/// `proxy`'s address, user and database as libpq `key=value` settings, followed by `tls`.
fn settings(proxy: &TlsProxy, tls: &str) -> String {
    let config: tokio_postgres::Config = proxy.url("disable").parse().unwrap();
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user().unwrap_or("postgres");
    let db = config.get_dbname().unwrap_or("postgres");
    format!("host=127.0.0.1 port={port} user={user} dbname={db} {tls}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
async fn key_value_settings_are_read_as_libpq_reads_them() {
    // libpq allows whitespace around `=`, quoted values, and `\` escapes; the TLS settings are
    // found in each form, and a quoted file name with a space names the CA.
    let proxy = TlsProxy::start().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("o'brien ca.pem");
    std::fs::write(&file, &proxy.ca).unwrap();
    let quoted = file.display().to_string().replace('\\', "\\\\").replace('\'', "\\'");
    let schema = Schema::fresh("weir_prod");
    let saver = PostgresSaver::options()
        .schema(&schema.name)
        .connect(&settings(
            &proxy,
            &format!("sslmode = 'verify-full' sslrootcert='{quoted}'"),
        ))
        .await
        .unwrap_or_else(|e| panic!("{}", chain(&e)));
    saves_and_reads(saver).await;
    assert_eq!(proxy.plaintext(), 0, "every connection was TLS");
    // `sslmode = require`, spaced, checks the chain as `sslmode=require` does: webpki's roots
    // do not know the test CA (read as no `sslmode`, it connected unchecked).
    let e = PostgresSaver::options()
        .schema(&schema.name)
        .connect(&settings(&proxy, "sslmode = require"))
        .await
        .expect_err("the chain is checked");
    assert!(
        chain(&e).contains("invalid peer certificate: UnknownIssuer"),
        "{}",
        chain(&e)
    );
}

/// An error and its sources, joined.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
async fn a_wrong_ca_fails_naming_tls_and_the_certificate() {
    let proxy = TlsProxy::start().await;
    let other = ca_pem("some other CA");
    let schema = Schema::fresh("weir_prod");
    let e = PostgresSaver::options()
        .schema(&schema.name)
        .pool(PoolOptions::new().tls_roots(TlsRoots::pem(other)))
        .connect(&proxy.url("require"))
        .await
        .expect_err("the server's certificate is not signed by that CA");
    let text = chain(&e);
    assert!(
        text.contains("TLS handshake") && text.contains("invalid peer certificate: UnknownIssuer"),
        "{text}"
    );
    // The default roots (webpki's) do not know the test CA either.
    let e = PostgresSaver::options()
        .schema(&schema.name)
        .connect(&proxy.url("verify-full"))
        .await
        .expect_err("webpki's roots do not hold the test CA");
    assert!(
        chain(&e).contains("invalid peer certificate: UnknownIssuer"),
        "{}",
        chain(&e)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
async fn sslmode_disable_never_asks_for_tls_and_prefer_takes_what_the_server_offers() {
    let proxy = TlsProxy::start().await;
    let schema = Schema::fresh("weir_prod");
    let saver = PostgresSaver::options()
        .schema(&schema.name)
        .connect(&proxy.url("disable"))
        .await
        .unwrap();
    saves_and_reads(saver).await;
    assert_eq!(proxy.ssl_requests(), 0, "no SSLRequest under disable");
    assert!(proxy.plaintext() >= 1);

    // `prefer` (as libpq's) encrypts when the server offers TLS, checking no chain unless
    // roots were given.
    let schema = Schema::fresh("weir_prod");
    let saver = PostgresSaver::options()
        .schema(&schema.name)
        .connect(&proxy.url("prefer"))
        .await
        .unwrap();
    saves_and_reads(saver).await;
    assert!(proxy.ssl_requests() >= 1);
}
