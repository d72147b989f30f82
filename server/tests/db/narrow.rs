//! The catalog's versioned and narrow writes: an assistant's versions (recorded, listed newest
//! first, made current again, deleted with it), [`Catalog::update_thread`], whose concurrent
//! callers never lose each other's fields, and [`Catalog::set_thread_status`], which leaves the
//! values alone.

use crate::support::{assistant, object, thread, Db};
use serde_json::json;
use std::sync::Arc;
use weir_server::db::{Catalog, ThreadUpdate, VersionQuery};
use weir_server::model::ThreadStatus;

fn numbers(found: &[weir_server::model::Assistant]) -> Vec<i64> {
    found.iter().map(|a| a.version).collect()
}

pub async fn assistant_versions_are_recorded_listed_picked_and_deleted(db: &Db) {
    let c = &db.catalog;
    let mut a = assistant("a1", "chain", "one", 1, json!({"team": "t1"}));
    c.put_assistant(&a).await.unwrap();
    a.version = 2;
    a.name = "two".into();
    a.metadata = object(json!({"team": "t2"}));
    c.put_assistant(&a).await.unwrap();
    a.version = 3;
    a.name = "three".into();
    c.put_assistant(&a).await.unwrap();

    let all = c.assistant_versions("a1", &VersionQuery::default()).await.unwrap();
    assert_eq!(numbers(&all), [3, 2, 1]);
    assert_eq!(all[2].name, "one");
    let t2 = VersionQuery {
        metadata: Some(object(json!({"team": "t2"}))),
        limit: 1,
        offset: 1,
    };
    assert_eq!(numbers(&c.assistant_versions("a1", &t2).await.unwrap()), [2]);

    let back = c.set_latest_version("a1", 1).await.unwrap().unwrap();
    assert_eq!((back.version, back.name.as_str()), (1, "one"));
    assert_eq!(c.get_assistant("a1").await.unwrap(), Some(back));
    assert_eq!(c.set_latest_version("a1", 7).await.unwrap(), None);
    assert_eq!(c.set_latest_version("nobody", 1).await.unwrap(), None);

    assert!(c.delete_assistant("a1").await.unwrap());
    let gone = c.assistant_versions("a1", &VersionQuery::default()).await.unwrap();
    assert!(gone.is_empty(), "{gone:?}");
}

pub async fn concurrent_thread_updates_keep_each_others_fields(db: &Db) {
    let c: Arc<dyn Catalog> = db.catalog.clone();
    let t = thread("t1", 1, ThreadStatus::Idle, json!({"owner": "u"}), json!(null));
    c.create_thread(&t, Default::default()).await.unwrap();
    // Twenty API patches of the metadata race a worker writing the status and values.
    let mut tasks = Vec::new();
    for i in 0..20 {
        let c = c.clone();
        tasks.push(tokio::spawn(async move {
            let update = ThreadUpdate {
                metadata: Some(object(json!({format!("k{i}"): i}))),
                ..ThreadUpdate::default()
            };
            c.update_thread("t1", &update).await.unwrap().unwrap();
        }));
    }
    let worker = ThreadUpdate {
        status: Some(ThreadStatus::Interrupted),
        values: Some(json!({"topic": "x"})),
        ..ThreadUpdate::default()
    };
    let settled = c.update_thread("t1", &worker).await.unwrap().unwrap();
    assert!(settled.state_updated_at > t.state_updated_at, "{settled:?}");
    for task in tasks {
        task.await.unwrap();
    }

    let after = c.get_thread("t1").await.unwrap().unwrap();
    assert_eq!(after.status, ThreadStatus::Interrupted);
    assert_eq!(after.values, json!({"topic": "x"}));
    assert_eq!(after.metadata.len(), 21, "{:?}", after.metadata);
    assert_eq!(after.metadata["owner"], "u");
    assert_eq!(after.metadata["k19"], 19);
    assert_eq!(after.created_at, t.created_at);
    assert_eq!(c.update_thread("nobody", &worker).await.unwrap(), None);
}

pub async fn setting_a_threads_status_merges_metadata_and_keeps_its_values(db: &Db) {
    let c = &db.catalog;
    let values = json!({"messages": ["a", "b"], "n": 1.5});
    let t = thread(
        "t1",
        1,
        ThreadStatus::Idle,
        json!({"owner": "u", "graph_id": "old"}),
        values.clone(),
    );
    c.create_thread(&t, Default::default()).await.unwrap();
    let graph = object(json!({"graph_id": "chain", "assistant_id": "a1"}));
    assert!(c
        .set_thread_status("t1", ThreadStatus::Busy, Some(&graph))
        .await
        .unwrap());
    let busy = c.get_thread("t1").await.unwrap().unwrap();
    assert_eq!(busy.status, ThreadStatus::Busy);
    assert_eq!(busy.values, values);
    assert_eq!(busy.metadata["owner"], "u");
    assert_eq!(busy.metadata["graph_id"], "chain");
    assert_eq!(busy.metadata["assistant_id"], "a1");
    assert!(busy.updated_at > t.updated_at, "{busy:?}");
    assert_eq!(busy.state_updated_at, t.state_updated_at, "the state did not change");
    assert_eq!(busy.created_at, t.created_at);
    assert!(c.set_thread_status("t1", ThreadStatus::Idle, None).await.unwrap());
    let idle = c.get_thread("t1").await.unwrap().unwrap();
    assert_eq!(
        (idle.status, &idle.values, &idle.metadata),
        (ThreadStatus::Idle, &values, &busy.metadata)
    );
    let by_status = weir_server::db::ThreadQuery {
        status: Some(ThreadStatus::Idle),
        ..Default::default()
    };
    assert_eq!(
        c.count_threads(&by_status).await.unwrap(),
        1,
        "the status column follows"
    );
    assert!(!c.set_thread_status("nobody", ThreadStatus::Busy, None).await.unwrap());
}
