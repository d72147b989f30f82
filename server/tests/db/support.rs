//! The backends under test, the temporary files and schemas they live in, and the objects the
//! tests store.

use serde_json::{json, Map, Value};
use std::sync::Arc;
use weir_runtime::postgres::PoolOptions;
use weir_server::db::postgres::PostgresDb;
use weir_server::db::sqlite::SqliteDb;
use weir_server::db::{Catalog, RunQueue};
use weir_server::model::{Assistant, MultitaskStrategy, Run, RunKwargs, RunStatus, Thread, ThreadStatus};

/// A backend, as both traits, and what to clean up after it.
pub struct Db {
    pub catalog: Arc<dyn Catalog>,
    pub queue: Arc<dyn RunQueue>,
    /// The `application_name` of a PostgreSQL backend's connections (its schema's name).
    pub app: String,
    _cleanup: Box<dyn Send + Sync>,
}

pub async fn sqlite() -> Db {
    let dir = tempfile::tempdir().unwrap();
    let db = SqliteDb::open(dir.path().join("weir.db")).await.unwrap();
    Db {
        catalog: Arc::new(db.clone()),
        queue: Arc::new(db),
        app: String::new(),
        _cleanup: Box::new(dir),
    }
}

/// A variable a test that needs a server reads: when the ignored tests are asked for without
/// it, they fail rather than pass having tested nothing.
pub fn env_url(name: &str, example: &str) -> String {
    match std::env::var(name) {
        Ok(url) if !url.is_empty() => url,
        _ => panic!("{name} is not set: these tests need a server, e.g. {example}"),
    }
}

pub async fn postgres() -> Db {
    let schema = weir_test_support::Schema::fresh("weir_server_test");
    let options = PoolOptions::new()
        .schema(&schema.name)
        .size(4)
        .application_name(&schema.name);
    let db = PostgresDb::connect_with(&schema.url, options).await.unwrap();
    Db {
        catalog: Arc::new(db.clone()),
        queue: Arc::new(db),
        app: schema.name.clone(),
        _cleanup: Box::new(schema),
    }
}

pub fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// A timestamp `n` seconds into a fixed day, so tests order rows as they mean to.
pub fn at(n: u32) -> String {
    format!("2026-12-01T10:{:02}:{:02}.000000+00:00", n / 60, n % 60)
}

pub fn assistant(id: &str, graph_id: &str, name: &str, created: u32, metadata: Value) -> Assistant {
    Assistant {
        assistant_id: id.to_owned(),
        graph_id: graph_id.to_owned(),
        config: object(json!({"configurable": {"k": 1}})),
        context: Map::new(),
        metadata: object(metadata),
        name: name.to_owned(),
        created_at: at(created),
        updated_at: at(created),
        version: 1,
        description: None,
    }
}

pub fn thread(id: &str, created: u32, status: ThreadStatus, metadata: Value, values: Value) -> Thread {
    Thread {
        thread_id: id.to_owned(),
        created_at: at(created),
        updated_at: at(created),
        state_updated_at: at(created),
        metadata: object(metadata),
        status,
        config: Map::new(),
        values,
        interrupts: Map::new(),
        error: Value::Null,
    }
}

pub fn run(thread_id: &str, strategy: MultitaskStrategy) -> Run {
    let now = at(0);
    Run {
        run_id: uuid::Uuid::now_v7().to_string(),
        thread_id: thread_id.to_owned(),
        assistant_id: "a1".to_owned(),
        metadata: object(json!({"user": "u1"})),
        status: RunStatus::Pending,
        kwargs: RunKwargs {
            input: json!({"topic": "x"}),
            stream_mode: vec!["values".to_owned()],
            durability: "async".to_owned(),
            ..RunKwargs::default()
        },
        multitask_strategy: strategy,
        created_at: now.clone(),
        updated_at: now,
        langsmith_session_name: None,
        not_before: None,
        attempt: 0,
    }
}

/// A fresh id.
pub fn id() -> String {
    uuid::Uuid::new_v4().to_string()
}
