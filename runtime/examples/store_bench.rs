//! The store benchmark's weir side (`bench/store.sh` runs it beside LangGraph's): puts, gets,
//! filtered searches and namespace listings over the same 100,000 items as
//! `bench/store_langgraph.py`, on one backend per process, printing one JSON line per operation
//! and the process's peak RSS.
//!
//! `cargo run --release -p weir-runtime --features postgres --example store_bench -- BACKEND [N]`
//! with BACKEND `memory`, `sqlite` or `postgres` (`WEIR_POSTGRES_URL`, a schema of its own,
//! dropped after).

use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Instant;
use weir_runtime::store::{InMemoryStore, ListNamespacesOp, MatchCondition, Op, PutOp, SearchOp, Store, StoreConfig};

const NAMESPACES: usize = 100;
const BATCH: usize = 1_000;
const GETS: usize = 2_000;
const SEARCHES_IN_NAMESPACE: usize = 200;
const SEARCHES_OVER_ALL: usize = 20;
const LISTINGS: usize = 100;
const KINDS: [&str; 4] = ["a", "b", "c", "d"];

fn value(i: usize) -> Value {
    json!({"i": i, "kind": KINDS[i % 4], "score": i % 1000, "text": format!("item {i} of kind {}", KINDS[i % 4])})
}

fn namespace(i: usize) -> Vec<String> {
    vec!["bench".to_owned(), format!("u{}", i % NAMESPACES)]
}

fn report(backend: &str, op: &str, count: usize, started: Instant, found: usize) {
    let seconds = started.elapsed().as_secs_f64();
    let line =
        json!({"impl": "weir", "backend": backend, "op": op, "count": count, "seconds": seconds, "found": found});
    println!("{line}");
}

/// The process's peak resident set, in KiB (Linux's `VmHWM`).
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

async fn run(backend: &str, store: Arc<dyn Store>, n: usize) {
    let started = Instant::now();
    for chunk in (0..n).collect::<Vec<_>>().chunks(BATCH) {
        let ops = chunk
            .iter()
            .map(|&i| {
                Op::Put(PutOp {
                    namespace: namespace(i),
                    key: format!("k{i}"),
                    value: match value(i) {
                        Value::Object(map) => Some(map),
                        _ => unreachable!("value() makes objects"),
                    },
                    index: Default::default(),
                    ttl: None,
                })
            })
            .collect();
        store.batch(ops).await.expect("put");
    }
    report(backend, "put", n, started, n);

    let started = Instant::now();
    let mut found = 0;
    for j in 0..GETS {
        let i = (j * 7_919) % n;
        let ns = namespace(i);
        let item = store.get(&[&ns[0], &ns[1]], &format!("k{i}")).await.expect("get");
        found += usize::from(item.is_some());
    }
    report(backend, "get", GETS, started, found);

    let filter = json!({"kind": "b", "score": {"$gte": 500}});
    let started = Instant::now();
    let mut found = 0;
    for j in 0..SEARCHES_IN_NAMESPACE {
        let ns = namespace(j);
        let op = SearchOp::new(&[&ns[0], &ns[1]]).filter(filter.clone()).limit(10);
        found += store.search(op).await.expect("search").len();
    }
    report(backend, "search_namespace", SEARCHES_IN_NAMESPACE, started, found);

    let started = Instant::now();
    let mut found = 0;
    for j in 0..SEARCHES_OVER_ALL {
        let op = SearchOp::new(&["bench"])
            .filter(json!({"kind": "b", "score": {"$gte": 990 - j}}))
            .limit(10);
        found += store.search(op).await.expect("search").len();
    }
    report(backend, "search_all", SEARCHES_OVER_ALL, started, found);

    let started = Instant::now();
    let mut found = 0;
    for _ in 0..LISTINGS {
        let op = ListNamespacesOp {
            match_conditions: vec![MatchCondition::Prefix(vec!["bench".to_owned()])],
            limit: 100,
            ..ListNamespacesOp::default()
        };
        found += store.list_namespaces(op).await.expect("list").len();
    }
    report(backend, "list_namespaces", LISTINGS, started, found);
    let line = json!({"impl": "weir", "backend": backend, "op": "peak_rss_kib", "count": 1, "value": peak_rss_kib()});
    println!("{line}");
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let backend = args.get(1).map_or("memory", String::as_str).to_owned();
    let n: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    match backend.as_str() {
        "memory" => run(&backend, Arc::new(InMemoryStore::new()), n).await,
        "sqlite" => {
            let dir = std::env::temp_dir().join(format!("weir-store-bench-{}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("temp dir");
            let store =
                weir_runtime::store::SqliteStore::open(dir.join("store.db"), StoreConfig::default()).expect("sqlite");
            run(&backend, Arc::new(store), n).await;
            let _ = std::fs::remove_dir_all(&dir);
        }
        #[cfg(feature = "postgres")]
        "postgres" => {
            let url = std::env::var("WEIR_POSTGRES_URL").expect("WEIR_POSTGRES_URL");
            let schema = format!("bench_weir_{}", std::process::id());
            let store = weir_runtime::store::PostgresStore::connect_with_schema(&url, &schema, StoreConfig::default())
                .await
                .expect("postgres");
            run(&backend, Arc::new(store), n).await;
            let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .expect("connect");
            tokio::spawn(conn);
            client
                .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
                .await
                .expect("drop the schema");
        }
        other => panic!("unknown backend {other:?}: use memory, sqlite or postgres"),
    }
}
