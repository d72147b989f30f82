//! The catalog's cases: assistants and threads, their filters, sorts, pages and counts.

use crate::support::{assistant, id, run, thread, Db};
use serde_json::json;
use weir_server::db::{AssistantQuery, DbError, Enqueued, IfExists, ThreadQuery, ThreadUpdate};
use weir_server::model::{MultitaskStrategy, Thread, ThreadStatus, ThreadTtl, TtlStrategy};

pub async fn an_assistant_is_stored_replaced_and_deleted(db: &Db) {
    let c = &db.catalog;
    let mut a = assistant("a1", "chain", "chain", 1, json!({"created_by": "system"}));
    c.put_assistant(&a).await.unwrap();
    assert_eq!(c.get_assistant("a1").await.unwrap(), Some(a.clone()));
    a.version = 2;
    a.description = Some("second".into());
    a.metadata.insert("team".into(), json!("x"));
    c.put_assistant(&a).await.unwrap();
    assert_eq!(c.get_assistant("a1").await.unwrap(), Some(a));
    assert_eq!(c.count_assistants(&AssistantQuery::default()).await.unwrap(), 1);
    assert!(c.delete_assistant("a1").await.unwrap());
    assert!(!c.delete_assistant("a1").await.unwrap());
    assert_eq!(c.get_assistant("a1").await.unwrap(), None);
}

async fn assistant_ids(db: &Db, query: AssistantQuery) -> Vec<String> {
    let found = db.catalog.search_assistants(&query).await.unwrap();
    found.into_iter().map(|a| a.assistant_id).collect()
}

pub async fn assistants_are_filtered_sorted_paged_and_counted(db: &Db) {
    for a in [
        assistant(
            "a1",
            "chain",
            "zeta",
            1,
            json!({"created_by": "system", "tags": ["x", "y"]}),
        ),
        assistant("a2", "hitl", "alpha", 2, json!({"created_by": "system"})),
        assistant("a3", "chain", "mid", 3, json!({"created_by": "user", "n": 1})),
    ] {
        db.catalog.put_assistant(&a).await.unwrap();
    }
    // Newest first by default.
    assert_eq!(assistant_ids(db, AssistantQuery::default()).await, ["a3", "a2", "a1"]);
    let by_graph = AssistantQuery {
        graph_id: Some("chain".into()),
        ..AssistantQuery::default()
    };
    assert_eq!(assistant_ids(db, by_graph.clone()).await, ["a3", "a1"]);
    assert_eq!(db.catalog.count_assistants(&by_graph).await.unwrap(), 2);
    let system = AssistantQuery {
        metadata: Some(crate::support::object(json!({"created_by": "system"}))),
        sort_by: Some("name".into()),
        sort_order: Some("asc".into()),
        ..AssistantQuery::default()
    };
    assert_eq!(assistant_ids(db, system.clone()).await, ["a2", "a1"]);
    let nested = AssistantQuery {
        metadata: Some(crate::support::object(json!({"tags": ["y"]}))),
        ..AssistantQuery::default()
    };
    assert_eq!(assistant_ids(db, nested).await, ["a1"]);
    let numeric = AssistantQuery {
        metadata: Some(crate::support::object(json!({"n": 1.0}))),
        name: Some("mid".into()),
        ..AssistantQuery::default()
    };
    assert_eq!(assistant_ids(db, numeric).await, ["a3"]);
    let page = AssistantQuery {
        limit: 1,
        offset: 1,
        ..system.clone()
    };
    assert_eq!(assistant_ids(db, page.clone()).await, ["a1"]);
    // The count ignores the page.
    assert_eq!(db.catalog.count_assistants(&page).await.unwrap(), 2);
    let none = AssistantQuery {
        metadata: Some(crate::support::object(json!({"created_by": "nobody"}))),
        ..AssistantQuery::default()
    };
    assert_eq!(assistant_ids(db, none).await, Vec::<String>::new());
}

pub async fn a_thread_is_read_without_its_values_when_asked(db: &Db) {
    let c = &db.catalog;
    let big = thread(
        "t1",
        1,
        ThreadStatus::Idle,
        json!({"graph_id": "g"}),
        json!({"doc": "x".repeat(1000)}),
    );
    c.put_thread(&big).await.unwrap();
    let light = c.get_thread_without_values("t1").await.unwrap().unwrap();
    assert_eq!(
        light,
        Thread {
            values: serde_json::Value::Null,
            ..big.clone()
        }
    );
    assert_eq!(c.get_thread_without_values("nope").await.unwrap(), None);
    let query = ThreadQuery {
        without_values: true,
        ..ThreadQuery::default()
    };
    assert_eq!(c.search_threads(&query).await.unwrap(), [light]);
    // Without the flag, the values are read as ever.
    assert_eq!(c.search_threads(&ThreadQuery::default()).await.unwrap(), [big]);
}

pub async fn a_bad_sort_is_refused_naming_the_field(db: &Db) {
    let query = ThreadQuery {
        sort_by: Some("colour".into()),
        ..ThreadQuery::default()
    };
    let err = db.catalog.search_threads(&query).await.unwrap_err();
    assert_eq!(
        err,
        DbError::Backend(
            "`sort_by`: `colour` is not one of thread_id, status, created_at, updated_at, state_updated_at".into(),
        )
    );
    let query = AssistantQuery {
        sort_order: Some("sideways".into()),
        ..AssistantQuery::default()
    };
    let err = db.catalog.search_assistants(&query).await.unwrap_err();
    assert_eq!(
        err,
        DbError::Backend("`sort_order`: `sideways` is not `asc` or `desc`".into())
    );
}

pub async fn creating_an_existing_thread_raises_or_returns_it_unchanged(db: &Db) {
    let first = thread("t1", 1, ThreadStatus::Idle, json!({"user": "u1"}), json!(null));
    assert_eq!(db.catalog.create_thread(&first, IfExists::Raise).await.unwrap(), first);
    let second = thread("t1", 2, ThreadStatus::Idle, json!({"user": "u2"}), json!(null));
    let err = db.catalog.create_thread(&second, IfExists::Raise).await.unwrap_err();
    assert_eq!(err, DbError::Conflict("Thread with ID t1 already exists".into()));
    assert_eq!(
        db.catalog.create_thread(&second, IfExists::DoNothing).await.unwrap(),
        first
    );
    assert_eq!(db.catalog.get_thread("t1").await.unwrap(), Some(first));
    assert_eq!(db.catalog.get_thread("t2").await.unwrap(), None);
}

/// A create run again after its answer was lost finds its own row (the same `created_at`) and
/// returns it; another create of the same id still raises.
pub async fn creating_a_thread_again_returns_the_row_its_first_attempt_made(db: &Db) {
    let t = thread("t1", 1, ThreadStatus::Idle, json!({"user": "u1"}), json!(null));
    assert_eq!(db.catalog.create_thread(&t, IfExists::Raise).await.unwrap(), t);
    assert_eq!(db.catalog.create_thread(&t, IfExists::Raise).await.unwrap(), t);
    let other = thread("t1", 2, ThreadStatus::Idle, json!({"user": "u1"}), json!(null));
    let err = db.catalog.create_thread(&other, IfExists::Raise).await.unwrap_err();
    assert_eq!(err, DbError::Conflict("Thread with ID t1 already exists".into()));
}

/// A state edit outside a run sets the thread's status, unless a run holds it (busy): decided
/// in the update's own transaction.
pub async fn a_status_unless_busy_leaves_a_busy_thread_busy(db: &Db) {
    let edit = ThreadUpdate {
        values: Some(json!({"topic": "z"})),
        status_unless_busy: Some(ThreadStatus::Interrupted),
        ..ThreadUpdate::default()
    };
    for (tid, before, after) in [
        ("idle", ThreadStatus::Idle, ThreadStatus::Interrupted),
        ("error", ThreadStatus::Error, ThreadStatus::Interrupted),
        ("busy", ThreadStatus::Busy, ThreadStatus::Busy),
    ] {
        let t = thread(tid, 1, before, json!({}), json!(null));
        db.catalog.create_thread(&t, IfExists::Raise).await.unwrap();
        let edited = db.catalog.update_thread(tid, &edit).await.unwrap().unwrap();
        assert_eq!(
            (edited.status, &edited.values),
            (after, &json!({"topic": "z"})),
            "{tid}"
        );
        assert_eq!(db.catalog.get_thread(tid).await.unwrap().unwrap().status, after);
    }
}

pub async fn a_thread_row_is_replaced_whole(db: &Db) {
    let mut t = thread("t1", 1, ThreadStatus::Idle, json!({"user": "u1"}), json!(null));
    db.catalog.create_thread(&t, IfExists::Raise).await.unwrap();
    t.status = ThreadStatus::Interrupted;
    t.values = json!({"topic": "z", "log": ["a:z"]});
    t.interrupts
        .insert("task-1".into(), json!([{"id": "i1", "value": {"question": "ok?"}}]));
    t.metadata.insert("graph_id".into(), json!("hitl"));
    t.updated_at = crate::support::at(9);
    t.error = json!({"error": "ValueError", "message": "boom"});
    db.catalog.put_thread(&t).await.unwrap();
    assert_eq!(db.catalog.get_thread("t1").await.unwrap(), Some(t));
}

async fn thread_ids(db: &Db, query: ThreadQuery) -> Vec<String> {
    let found = db.catalog.search_threads(&query).await.unwrap();
    found.into_iter().map(|t| t.thread_id).collect()
}

async fn three_threads(db: &Db) {
    for t in [
        thread(
            "t1",
            1,
            ThreadStatus::Idle,
            json!({"user": "u1"}),
            json!({"topic": "x", "log": ["a"]}),
        ),
        thread("t2", 2, ThreadStatus::Busy, json!({"user": "u2"}), json!(null)),
        thread(
            "t3",
            3,
            ThreadStatus::Idle,
            json!({"user": "u1", "team": {"id": 7}}),
            json!({"topic": "y"}),
        ),
    ] {
        db.catalog.create_thread(&t, IfExists::Raise).await.unwrap();
    }
}

pub async fn threads_are_filtered_by_ids_status_metadata_and_values(db: &Db) {
    three_threads(db).await;
    let q = |f: fn(&mut ThreadQuery)| {
        let mut query = ThreadQuery::default();
        f(&mut query);
        query
    };
    let cases: [(ThreadQuery, &[&str]); 6] = [
        (
            q(|q| q.ids = Some(vec!["t1".into(), "t3".into(), "nope".into()])),
            &["t3", "t1"],
        ),
        (q(|q| q.status = Some(ThreadStatus::Busy)), &["t2"]),
        (
            q(|q| q.metadata = Some(crate::support::object(json!({"user": "u1"})))),
            &["t3", "t1"],
        ),
        (
            q(|q| q.metadata = Some(crate::support::object(json!({"team": {"id": 7}})))),
            &["t3"],
        ),
        (
            q(|q| q.values = Some(crate::support::object(json!({"log": ["a"]})))),
            &["t1"],
        ),
        (
            q(|q| {
                q.metadata = Some(crate::support::object(json!({"user": "u1"})));
                q.status = Some(ThreadStatus::Idle);
                q.values = Some(crate::support::object(json!({"topic": "y"})));
            }),
            &["t3"],
        ),
    ];
    for (query, want) in cases {
        assert_eq!(thread_ids(db, query.clone()).await, want, "{query:?}");
        assert_eq!(db.catalog.count_threads(&query).await.unwrap(), want.len() as u64);
    }
}

pub async fn threads_are_sorted_paged_and_counted(db: &Db) {
    three_threads(db).await;
    let mut t1 = db.catalog.get_thread("t1").await.unwrap().unwrap();
    t1.updated_at = crate::support::at(10);
    db.catalog.put_thread(&t1).await.unwrap();
    let mut t2 = db.catalog.get_thread("t2").await.unwrap().unwrap();
    t2.state_updated_at = crate::support::at(11);
    db.catalog.put_thread(&t2).await.unwrap();
    let sorted = |by: &str, order: &str| ThreadQuery {
        sort_by: Some(by.into()),
        sort_order: Some(order.into()),
        ..ThreadQuery::default()
    };
    assert_eq!(thread_ids(db, sorted("updated_at", "desc")).await, ["t1", "t3", "t2"]);
    assert_eq!(
        thread_ids(db, sorted("state_updated_at", "desc")).await,
        ["t2", "t3", "t1"]
    );
    assert_eq!(thread_ids(db, sorted("thread_id", "asc")).await, ["t1", "t2", "t3"]);
    // Ties (two idle) are broken by id, in the same direction.
    assert_eq!(thread_ids(db, sorted("status", "asc")).await, ["t2", "t1", "t3"]);
    let page = ThreadQuery {
        limit: 2,
        offset: 1,
        ..sorted("created_at", "asc")
    };
    assert_eq!(thread_ids(db, page.clone()).await, ["t2", "t3"]);
    assert_eq!(db.catalog.count_threads(&page).await.unwrap(), 3);
    // A limit or an offset past what SQL counts in (a client's `u64::MAX`) means the same.
    let all = ThreadQuery {
        limit: usize::MAX,
        ..sorted("created_at", "asc")
    };
    assert_eq!(thread_ids(db, all).await, ["t1", "t2", "t3"]);
    let none = ThreadQuery {
        offset: usize::MAX,
        ..sorted("created_at", "asc")
    };
    assert!(thread_ids(db, none).await.is_empty());
}

pub async fn deleting_a_thread_deletes_its_runs(db: &Db) {
    let (t1, t2) = (id(), id());
    for t in [&t1, &t2] {
        let row = thread(t, 1, ThreadStatus::Idle, json!({}), json!(null));
        db.catalog.create_thread(&row, IfExists::Raise).await.unwrap();
    }
    let (r1, r2) = (
        run(&t1, MultitaskStrategy::Enqueue),
        run(&t2, MultitaskStrategy::Enqueue),
    );
    for r in [&r1, &r2] {
        assert!(matches!(
            db.queue.enqueue(r, None, None, None).await.unwrap(),
            Enqueued::Queued { .. }
        ));
    }
    assert!(db.catalog.delete_thread(&t1).await.unwrap());
    assert!(!db.catalog.delete_thread(&t1).await.unwrap());
    assert_eq!(db.catalog.get_thread(&t1).await.unwrap(), None);
    assert_eq!(db.queue.get_run(&t1, &r1.run_id).await.unwrap(), None);
    assert_eq!(db.queue.get_run(&t2, &r2.run_id).await.unwrap(), Some(r2));
}

/// Threads' TTLs: each reads back as set; a thread is expired once `updated_at + ttl` has passed,
/// unless busy; oldest expiry first; without a TTL, or with it cleared, or deleted, a thread
/// never is.
pub async fn threads_expire_by_their_ttl_unless_busy(db: &Db) {
    let c = &db.catalog;
    // updated at 10:00:01, 10:00:02, …
    let rows = [
        ("ttl-a", 1, ThreadStatus::Idle),
        ("ttl-b", 2, ThreadStatus::Interrupted),
        ("ttl-c", 3, ThreadStatus::Busy),
        ("ttl-d", 4, ThreadStatus::Error),
        ("ttl-e", 5, ThreadStatus::Idle),
    ];
    for (tid, at, status) in rows {
        c.create_thread(&thread(tid, at, status, json!({}), json!(null)), IfExists::Raise)
            .await
            .unwrap();
    }
    let ttl = |minutes: f64, strategy| ThreadTtl { strategy, minutes };
    c.set_thread_ttl("ttl-a", Some(ttl(10.0, TtlStrategy::Delete)))
        .await
        .unwrap();
    c.set_thread_ttl("ttl-b", Some(ttl(1.0, TtlStrategy::KeepLatest)))
        .await
        .unwrap();
    c.set_thread_ttl("ttl-c", Some(ttl(1.0, TtlStrategy::Delete)))
        .await
        .unwrap();
    c.set_thread_ttl("ttl-d", Some(ttl(2.0, TtlStrategy::Delete)))
        .await
        .unwrap();
    // ttl-e has none; a TTL set and cleared leaves none either.
    c.set_thread_ttl("ttl-e", Some(ttl(1.0, TtlStrategy::Delete)))
        .await
        .unwrap();
    c.set_thread_ttl("ttl-e", None).await.unwrap();
    // Each reads back as set (`GET /threads/{id}?include=ttl`).
    assert_eq!(
        c.thread_ttl("ttl-b").await.unwrap(),
        Some(ttl(1.0, TtlStrategy::KeepLatest))
    );
    assert_eq!(
        c.thread_ttl("ttl-a").await.unwrap(),
        Some(ttl(10.0, TtlStrategy::Delete))
    );
    assert_eq!(c.thread_ttl("ttl-e").await.unwrap(), None);
    assert_eq!(c.thread_ttl("no-such-thread").await.unwrap(), None);

    let expired = |now: &'static str| async move { c.expired_threads(now, 10).await.unwrap() };
    assert_eq!(expired("2026-12-01T10:01:01.000000+00:00").await, []);
    assert_eq!(
        expired("2026-12-01T10:01:02.000000+00:00").await,
        [("ttl-b".to_owned(), TtlStrategy::KeepLatest)]
    );
    assert_eq!(
        expired("2026-12-01T10:20:00.000000+00:00").await,
        [
            ("ttl-b".to_owned(), TtlStrategy::KeepLatest),
            ("ttl-d".to_owned(), TtlStrategy::Delete),
            ("ttl-a".to_owned(), TtlStrategy::Delete),
        ]
    );
    assert_eq!(
        c.expired_threads("2026-12-01T10:20:00.000000+00:00", 1)
            .await
            .unwrap()
            .len(),
        1
    );
    // A new TTL replaces the old one; a deleted thread's TTL goes with it.
    c.set_thread_ttl("ttl-a", Some(ttl(60.0, TtlStrategy::Delete)))
        .await
        .unwrap();
    assert_eq!(
        c.thread_ttl("ttl-a").await.unwrap(),
        Some(ttl(60.0, TtlStrategy::Delete))
    );
    assert!(c.delete_thread("ttl-d").await.unwrap());
    assert_eq!(c.thread_ttl("ttl-d").await.unwrap(), None);
    assert_eq!(
        expired("2026-12-01T10:20:00.000000+00:00").await,
        [("ttl-b".to_owned(), TtlStrategy::KeepLatest)]
    );
    c.create_thread(
        &thread("ttl-d", 4, ThreadStatus::Idle, json!({}), json!(null)),
        IfExists::Raise,
    )
    .await
    .unwrap();
    assert_eq!(expired("2026-12-01T10:20:00.000000+00:00").await.len(), 1);
}
