//! The in-process bus: replay after `Last-Event-ID`, bounded buffers, expiry, wake, cancel, beats.

use super::*;
use serde_json::json;

fn event(id: &str) -> StreamItem {
    StreamItem::Event {
        id: id.to_owned(),
        event: "values".to_owned(),
        data: json!({ "id": id }).to_string().into(),
    }
}

fn ids(items: &[StreamItem]) -> Vec<String> {
    items
        .iter()
        .map(|i| match i {
            StreamItem::Event { id, .. } => id.clone(),
            StreamItem::Done => "done".to_owned(),
        })
        .collect()
}

async fn collect(bus: &LocalBus, run: &str, last: Option<&str>) -> Vec<StreamItem> {
    bus.subscribe(run, last).await.unwrap().collect().await
}

#[tokio::test]
async fn replay_starts_after_the_last_event_id_and_minus_one_replays_all() {
    let bus = LocalBus::default();
    for id in ["5-0", "5-1", "6-0"] {
        bus.publish("r", Publisher::Attempt(1), event(id)).await.unwrap();
    }
    bus.publish("r", Publisher::Attempt(1), StreamItem::Done).await.unwrap();
    assert_eq!(
        ids(&collect(&bus, "r", Some("-1")).await),
        ["5-0", "5-1", "6-0", "done"]
    );
    assert_eq!(ids(&collect(&bus, "r", Some("5-0")).await), ["5-1", "6-0", "done"]);
    assert_eq!(ids(&collect(&bus, "r", Some("6-0")).await), ["done"]);
    assert_eq!(ids(&collect(&bus, "r", None).await), ["done"]);
}

#[tokio::test]
async fn an_attempt_the_run_was_taken_back_from_publishes_nothing_more() {
    let bus = LocalBus::default();
    let sub = bus.subscribe("r", None).await.unwrap();
    assert!(bus.publish("r", Publisher::Attempt(1), event("1-0")).await.unwrap());
    bus.supersede("r", 1).await.unwrap();
    assert!(!bus.publish("r", Publisher::Attempt(1), event("2-0")).await.unwrap());
    assert!(bus.publish("r", Publisher::Attempt(2), event("3-0")).await.unwrap());
    // A late sweeper's older fence does not lower it.
    bus.supersede("r", 0).await.unwrap();
    assert!(!bus.publish("r", Publisher::Attempt(1), StreamItem::Done).await.unwrap());
    assert!(bus.publish("r", Publisher::Server, StreamItem::Done).await.unwrap());
    assert_eq!(ids(&sub.collect::<Vec<_>>().await), ["1-0", "3-0", "done"]);
    assert_eq!(ids(&collect(&bus, "r", Some("-1")).await), ["1-0", "3-0", "done"]);
    // Another run's stream is not fenced.
    assert!(bus.publish("other", Publisher::Attempt(1), event("1-0")).await.unwrap());
}

/// The sweeper's fence follows its requeue by a round trip, and may come after the next attempt
/// began publishing: that attempt's first event fences the earlier ones itself.
#[tokio::test]
async fn the_next_attempts_first_event_fences_the_earlier_ones() {
    let bus = LocalBus::default();
    let sub = bus.subscribe("r", None).await.unwrap();
    assert!(bus.publish("r", Publisher::Attempt(1), event("1-0")).await.unwrap());
    assert!(
        bus.publish("r", Publisher::Attempt(1), event("2-0")).await.unwrap(),
        "attempt 1 fences nothing"
    );
    assert!(bus.publish("r", Publisher::Attempt(2), event("3-0")).await.unwrap());
    assert!(!bus.publish("r", Publisher::Attempt(1), event("4-0")).await.unwrap());
    // The sweeper's fence, late, neither lowers it nor fences attempt 2.
    bus.supersede("r", 1).await.unwrap();
    assert!(bus.publish("r", Publisher::Attempt(2), event("5-0")).await.unwrap());
    assert!(bus.publish("r", Publisher::Attempt(3), event("6-0")).await.unwrap());
    assert!(!bus.publish("r", Publisher::Attempt(2), StreamItem::Done).await.unwrap());
    assert!(bus.publish("r", Publisher::Attempt(3), StreamItem::Done).await.unwrap());
    let kept = ["1-0", "2-0", "3-0", "5-0", "6-0", "done"];
    assert_eq!(ids(&sub.collect::<Vec<_>>().await), kept);
    assert_eq!(ids(&collect(&bus, "r", Some("-1")).await), kept);
}

#[tokio::test]
async fn a_live_subscriber_gets_the_items_published_after_it_subscribed_then_done() {
    let bus = LocalBus::default();
    bus.publish("r", Publisher::Attempt(1), event("1-0")).await.unwrap();
    let sub = bus.subscribe("r", None).await.unwrap();
    bus.publish("r", Publisher::Attempt(1), event("2-0")).await.unwrap();
    bus.publish("r", Publisher::Attempt(1), StreamItem::Done).await.unwrap();
    bus.publish("r", Publisher::Attempt(1), event("3-0")).await.unwrap(); // after Done: dropped
    assert_eq!(ids(&sub.collect::<Vec<_>>().await), ["2-0", "done"]);
}

#[tokio::test]
async fn a_live_channel_exists_only_while_a_subscriber_can_listen() {
    let bus = LocalBus::default();
    let has_live = |run: &str| lock(&bus.inner.streams).by_run[run].live.is_some();
    bus.publish("quiet", Publisher::Attempt(1), event("1-0")).await.unwrap();
    assert!(!has_live("quiet"), "nobody subscribed: no channel");
    let sub = bus.subscribe("r", None).await.unwrap();
    assert!(has_live("r"));
    bus.publish("r", Publisher::Attempt(1), event("1-0")).await.unwrap();
    bus.publish("r", Publisher::Attempt(1), StreamItem::Done).await.unwrap();
    assert!(
        !has_live("r"),
        "a finished stream keeps its items for replay, not its channel"
    );
    assert_eq!(ids(&sub.collect::<Vec<_>>().await), ["1-0", "done"]);
    assert_eq!(ids(&collect(&bus, "r", Some("-1")).await), ["1-0", "done"]);
}

#[tokio::test]
async fn a_slow_subscriber_catches_up_from_the_kept_items_and_memory_stays_bounded() {
    let bus = LocalBus::new(LocalBusConfig {
        kept: 4,
        live: 2,
        retain: Duration::from_secs(60),
        ended: 10,
    });
    let sub = bus.subscribe("r", Some("-1")).await.unwrap();
    for ms in 0..100 {
        bus.publish("r", Publisher::Attempt(1), event(&format!("{ms}-0")))
            .await
            .unwrap();
    }
    bus.publish("r", Publisher::Attempt(1), StreamItem::Done).await.unwrap();
    // The subscriber read nothing while 101 items went out: it gets what is still kept, the
    // last `kept` items; the rest it missed.
    assert_eq!(ids(&sub.collect::<Vec<_>>().await), ["97-0", "98-0", "99-0", "done"]);
    // Replay holds the last `kept` items.
    assert_eq!(
        ids(&collect(&bus, "r", Some("-1")).await),
        ["97-0", "98-0", "99-0", "done"]
    );
}

#[tokio::test]
async fn a_subscriber_behind_by_more_than_live_but_less_than_kept_misses_nothing() {
    let bus = LocalBus::new(LocalBusConfig {
        kept: 64,
        live: 2,
        retain: Duration::from_secs(60),
        ended: 10,
    });
    let all: Vec<String> = (0..40).map(|ms| format!("{ms}-0")).collect();
    bus.publish("r", Publisher::Attempt(1), event(&all[0])).await.unwrap();
    let mut sub = bus.subscribe("r", Some("-1")).await.unwrap();
    // It reads one, falls behind while the run goes on, then reads at its own pace.
    assert_eq!(ids(&[sub.next().await.unwrap()]), ["0-0"]);
    for id in &all[1..20] {
        bus.publish("r", Publisher::Attempt(1), event(id)).await.unwrap();
    }
    assert_eq!(ids(&[sub.next().await.unwrap()]), ["1-0"]);
    for id in &all[20..] {
        bus.publish("r", Publisher::Attempt(1), event(id)).await.unwrap();
    }
    bus.publish("r", Publisher::Attempt(1), StreamItem::Done).await.unwrap();
    let rest = sub.collect::<Vec<_>>().await;
    let mut expected: Vec<String> = all[2..].to_vec();
    expected.push("done".into());
    assert_eq!(ids(&rest), expected, "each item once, in order");
}

#[tokio::test]
async fn at_most_ended_finished_streams_are_kept_the_first_finished_going_first() {
    let bus = LocalBus::new(LocalBusConfig {
        ended: 3,
        ..LocalBusConfig::default()
    });
    bus.publish("open", Publisher::Attempt(1), event("1-0")).await.unwrap();
    for run in ["a", "b", "c", "d", "e"] {
        bus.publish(run, Publisher::Attempt(1), event("1-0")).await.unwrap();
        bus.publish(run, Publisher::Attempt(1), StreamItem::Done).await.unwrap();
    }
    let held = |run: &str| lock(&bus.inner.streams).by_run.contains_key(run);
    assert!(!held("a") && !held("b"), "the first two finished went");
    assert!(held("c") && held("d") && held("e") && held("open"));
    assert_eq!(bus.streams_held(), 4);
    assert_eq!(ids(&collect(&bus, "c", Some("-1")).await), ["1-0", "done"]);
}

#[tokio::test(start_paused = true)]
async fn a_finished_stream_is_kept_for_retain_then_dropped() {
    let bus = LocalBus::new(LocalBusConfig {
        retain: Duration::from_secs(10),
        ..LocalBusConfig::default()
    });
    bus.publish("r", Publisher::Attempt(1), event("1-0")).await.unwrap();
    bus.publish("r", Publisher::Attempt(1), StreamItem::Done).await.unwrap();
    tokio::time::advance(Duration::from_secs(9)).await;
    assert_eq!(bus.streams_held(), 1);
    assert_eq!(ids(&collect(&bus, "r", Some("-1")).await), ["1-0", "done"]);
    tokio::time::advance(Duration::from_secs(2)).await;
    assert_eq!(bus.streams_held(), 0);
}

#[tokio::test(start_paused = true)]
async fn publishing_sweeps_expired_streams_once_an_eighth_of_retain_has_passed() {
    let bus = LocalBus::new(LocalBusConfig {
        retain: Duration::from_secs(8),
        ..LocalBusConfig::default()
    });
    let holds = |run: &str| lock(&bus.inner.streams).by_run.contains_key(run);
    bus.publish("a", Publisher::Attempt(1), StreamItem::Done).await.unwrap();
    tokio::time::advance(Duration::from_millis(7_500)).await;
    bus.publish("x", Publisher::Attempt(1), event("1-0")).await.unwrap();
    assert!(holds("a"), "not yet expired at the sweep of 7.5 s");
    tokio::time::advance(Duration::from_millis(800)).await;
    bus.publish("x", Publisher::Attempt(1), event("2-0")).await.unwrap();
    assert!(
        holds("a"),
        "expired, but the last sweep is 0.8 s old (sweeps every 1 s)"
    );
    tokio::time::advance(Duration::from_millis(300)).await;
    bus.publish("x", Publisher::Attempt(1), event("3-0")).await.unwrap();
    assert!(!holds("a"), "swept at 8.6 s");
    assert!(holds("x"));
}

#[tokio::test(start_paused = true)]
async fn wake_ends_a_wait_and_an_unwoken_wait_times_out() {
    let bus = LocalBus::default();
    bus.wake().await.unwrap();
    let start = Instant::now();
    bus.wait_wake(Duration::from_secs(30)).await;
    assert_eq!(start.elapsed(), Duration::ZERO);
    bus.wait_wake(Duration::from_secs(30)).await;
    assert_eq!(start.elapsed(), Duration::from_secs(30));
}

#[tokio::test]
async fn cancellations_reach_every_listener_from_then_on() {
    let bus = LocalBus::default();
    bus.cancel("early", CancelAction::Interrupt).await.unwrap();
    let mut a = bus.cancellations().await.unwrap();
    let mut b = bus.cancellations().await.unwrap();
    bus.cancel("r", CancelAction::Rollback).await.unwrap();
    assert_eq!(a.next().await, Some(("r".to_owned(), CancelAction::Rollback)));
    assert_eq!(b.next().await, Some(("r".to_owned(), CancelAction::Rollback)));
}

#[tokio::test(start_paused = true)]
async fn a_worker_is_alive_until_its_beat_expires() {
    let bus = LocalBus::default();
    assert!(!bus.is_alive("w").await.unwrap());
    bus.beat("w", Duration::from_secs(5)).await.unwrap();
    assert!(bus.is_alive("w").await.unwrap());
    tokio::time::advance(Duration::from_secs(6)).await;
    assert!(!bus.is_alive("w").await.unwrap());
}
