//! The crons' cases: stored, read, searched, sorted, counted, deleted with their thread, and
//! taken when due, each firing by one scheduler only.

use crate::support::{id, object, thread, Db};
use serde_json::json;
use std::collections::BTreeSet;
use weir_server::db::{CronQuery, IfExists};
use weir_server::model::{Cron, OnCompletion, ThreadStatus};

/// A cron of `assistant` on `thread` (stateless when `None`), made `created` seconds into the
/// test's day, next due at `next` (RFC 3339) on an every-minute schedule.
fn cron(assistant: &str, thread: Option<&str>, created: u32, next: Option<&str>, metadata: serde_json::Value) -> Cron {
    let at = format!("2026-12-05T10:00:{created:02}.000000+00:00");
    Cron {
        cron_id: id(),
        assistant_id: assistant.to_owned(),
        thread_id: thread.map(str::to_owned),
        user_id: String::new(),
        end_time: None,
        schedule: "* * * * *".to_owned(),
        timezone: None,
        payload: object(json!({"assistant_id": assistant, "input": {"topic": "t"}})),
        next_run_date: next.map(str::to_owned),
        metadata: object(metadata),
        on_run_completed: thread.is_none().then_some(OnCompletion::Delete),
        enabled: true,
        created_at: at.clone(),
        updated_at: at,
    }
}

async fn cron_ids(db: &Db, query: CronQuery) -> Vec<String> {
    let found = db.catalog.search_crons(&query).await.unwrap();
    found.into_iter().map(|c| c.cron_id).collect()
}

pub async fn a_cron_is_stored_read_searched_counted_and_deleted(db: &Db) {
    let c = &db.catalog;
    let t = id();
    c.create_thread(
        &thread(&t, 1, ThreadStatus::Idle, json!({}), json!(null)),
        IfExists::Raise,
    )
    .await
    .unwrap();
    let a = cron(
        "asst-1",
        Some(&t),
        1,
        Some("2026-12-05T10:05:00+00:00"),
        json!({"team": "x"}),
    );
    let b = cron(
        "asst-1",
        None,
        2,
        Some("2026-12-05T10:01:00+00:00"),
        json!({"team": "y"}),
    );
    let mut off = cron("asst-2", None, 3, None, json!({"team": "x"}));
    off.enabled = false;
    off.end_time = Some("2026-12-06T00:00:00+00:00".to_owned());
    for cron in [&a, &b, &off] {
        c.put_cron(cron).await.unwrap();
    }
    assert_eq!(c.get_cron(&a.cron_id).await.unwrap(), Some(a.clone()));
    assert_eq!(c.get_cron(&id()).await.unwrap(), None);

    // Newest first by default.
    let all = CronQuery::default();
    assert_eq!(
        cron_ids(db, all.clone()).await,
        [off.cron_id.as_str(), b.cron_id.as_str(), a.cron_id.as_str()]
    );
    assert_eq!(
        cron_ids(
            db,
            CronQuery {
                assistant_id: Some("asst-1".into()),
                ..all.clone()
            }
        )
        .await,
        [b.cron_id.as_str(), a.cron_id.as_str()]
    );
    assert_eq!(
        cron_ids(
            db,
            CronQuery {
                thread_id: Some(t.clone()),
                ..all.clone()
            }
        )
        .await,
        [a.cron_id.as_str()]
    );
    assert_eq!(
        cron_ids(
            db,
            CronQuery {
                enabled: Some(false),
                ..all.clone()
            }
        )
        .await,
        [off.cron_id.as_str()]
    );
    let team_x = CronQuery {
        metadata: Some(object(json!({"team": "x"}))),
        ..all.clone()
    };
    assert_eq!(
        cron_ids(db, team_x.clone()).await,
        [off.cron_id.as_str(), a.cron_id.as_str()]
    );
    assert_eq!(c.count_crons(&team_x).await.unwrap(), 2);
    // By next run, soonest first; a cron that never runs again sorts before any time.
    let soonest = CronQuery {
        sort_by: Some("next_run_date".into()),
        sort_order: Some("asc".into()),
        ..all.clone()
    };
    assert_eq!(
        cron_ids(db, soonest.clone()).await,
        [off.cron_id.as_str(), b.cron_id.as_str(), a.cron_id.as_str()]
    );
    let page = CronQuery {
        limit: 1,
        offset: 1,
        ..soonest
    };
    assert_eq!(cron_ids(db, page.clone()).await, [b.cron_id.as_str()]);
    assert_eq!(c.count_crons(&page).await.unwrap(), 3);
    let by_end = CronQuery {
        sort_by: Some("end_time".into()),
        ..all.clone()
    };
    assert_eq!(cron_ids(db, by_end).await[0], off.cron_id);
    let bad = CronQuery {
        sort_by: Some("schedule".into()),
        ..all.clone()
    };
    let err = c.search_crons(&bad).await.unwrap_err().to_string();
    assert!(err.contains("`sort_by`: `schedule` is not one of cron_id"), "{err}");

    // Replaced whole by id; deleted once; a thread's deletion takes its crons.
    let mut changed = b.clone();
    changed.enabled = false;
    changed.metadata = object(json!({"team": "z"}));
    c.put_cron(&changed).await.unwrap();
    assert_eq!(c.get_cron(&b.cron_id).await.unwrap(), Some(changed));
    assert!(c.delete_cron(&b.cron_id).await.unwrap());
    assert!(!c.delete_cron(&b.cron_id).await.unwrap());
    assert!(c.delete_thread(&t).await.unwrap());
    assert_eq!(c.get_cron(&a.cron_id).await.unwrap(), None);
    assert_eq!(cron_ids(db, all.clone()).await, [off.cron_id.as_str()]);
    // And an assistant's deletion takes its crons.
    c.put_assistant(&crate::support::assistant("asst-2", "chain", "n", 1, json!({})))
        .await
        .unwrap();
    assert!(c.delete_assistant("asst-2").await.unwrap());
    assert!(cron_ids(db, all).await.is_empty());
}

pub async fn due_crons_are_taken_once_and_move_to_their_next_time(db: &Db) {
    let c = &db.catalog;
    let now: jiff::Timestamp = "2026-12-05T10:30:20Z".parse().unwrap();
    let due = cron("asst", None, 1, Some("2026-12-05T10:30:00+00:00"), json!({}));
    let later_due = cron("asst", None, 2, Some("2026-12-05T10:30:20+00:00"), json!({}));
    let future = cron("asst", None, 3, Some("2026-12-05T10:31:00+00:00"), json!({}));
    let mut off = cron("asst", None, 4, Some("2026-12-05T10:29:00+00:00"), json!({}));
    off.enabled = false;
    let mut ended = cron("asst", None, 5, Some("2026-12-05T10:29:00+00:00"), json!({}));
    ended.end_time = Some("2026-12-05T10:30:00+00:00".to_owned());
    let never = cron("asst", None, 6, None, json!({}));
    for cron in [&due, &later_due, &future, &off, &ended, &never] {
        c.put_cron(cron).await.unwrap();
    }
    // Earliest first, as they were; the limit leaves the rest for the next tick.
    let taken = c.take_due_crons(now, 1).await.unwrap();
    assert_eq!(taken, std::slice::from_ref(&due));
    let taken = c.take_due_crons(now, 10).await.unwrap();
    assert_eq!(taken, std::slice::from_ref(&later_due));
    assert!(c.take_due_crons(now, 10).await.unwrap().is_empty());
    for taken in [&due, &later_due] {
        let stored = c.get_cron(&taken.cron_id).await.unwrap().unwrap();
        assert_eq!(stored.next_run_date.as_deref(), Some("2026-12-05T10:31:00+00:00"));
        assert_eq!(
            Cron {
                next_run_date: taken.next_run_date.clone(),
                ..stored
            },
            *taken
        );
    }
    for left in [&future, &off, &ended, &never] {
        assert_eq!(c.get_cron(&left.cron_id).await.unwrap().as_ref(), Some(left));
    }
    // A minute on, the moved ones and the future one are due.
    let next: jiff::Timestamp = "2026-12-05T10:31:00Z".parse().unwrap();
    let taken: BTreeSet<String> = c
        .take_due_crons(next, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.cron_id)
        .collect();
    assert_eq!(taken, BTreeSet::from([due.cron_id, later_due.cron_id, future.cron_id]));
}

pub async fn concurrent_schedulers_take_each_firing_once(db: &Db) {
    let now: jiff::Timestamp = "2026-12-05T10:30:20Z".parse().unwrap();
    let mut made = BTreeSet::new();
    for n in 0..40 {
        let cron = cron("asst", None, n % 60, Some("2026-12-05T10:30:00+00:00"), json!({}));
        db.catalog.put_cron(&cron).await.unwrap();
        made.insert(cron.cron_id);
    }
    let take = || {
        let catalog = db.catalog.clone();
        tokio::spawn(async move {
            let mut mine = Vec::new();
            loop {
                let taken = catalog.take_due_crons(now, 3).await.unwrap();
                if taken.is_empty() {
                    return mine;
                }
                mine.extend(taken.into_iter().map(|c| c.cron_id));
            }
        })
    };
    let (a, b, c) = tokio::join!(take(), take(), take());
    let all: Vec<String> = [a.unwrap(), b.unwrap(), c.unwrap()].concat();
    assert_eq!(all.len(), made.len(), "a firing was taken twice or lost");
    assert_eq!(all.into_iter().collect::<BTreeSet<_>>(), made);
}
