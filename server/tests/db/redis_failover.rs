//! A Redis Cluster that fails under the bus, on a cluster of each test's own
//! (`crate::redis_ha`), so that what it breaks is nobody else's: nodes that drop every client
//! cost a retry, and a watcher hears of the gap; the one node a bus was given, killed under its
//! subscriptions, moves them to another node of the cluster; a primary killed while events are
//! published on a run's stream is waited out: every event, before, during and after its replica
//! takes over, is read once and in order, by a subscriber that was following all along and by
//! one that joins after, and wakes, heartbeats and cancellations go on. Ignored unless asked for
//! (`-- --include-ignored`); then `redis-server` and `redis-cli` must be installed.

use crate::redis::{next_notice, publish_first};
use futures::StreamExt;
use serde_json::json;
use std::time::{Duration, Instant};
use tokio::time::timeout;
use weir_server::bus::redis::RedisBus;
use weir_server::bus::{Bus, CancelAction, Publisher, StreamItem, ThreadNotice};

fn event(n: i64) -> StreamItem {
    StreamItem::Event {
        id: format!("{n}-0"),
        event: "values".to_owned(),
        data: json!({"n": n}).to_string().into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server (server/tests/redis_cluster/setup.sh installs it), run with --include-ignored"]
async fn a_run_s_stream_rides_through_its_primary_failing_over() {
    let mut cluster = crate::redis_ha::HaCluster::start();
    let prefix = format!("weir-test-{}", uuid::Uuid::new_v4().simple());
    let bus = RedisBus::options()
        .prefix(&prefix)
        .connect(&cluster.url())
        .await
        .unwrap();
    let following = bus.subscribe("run", Some("-1")).await.unwrap();
    let following = tokio::spawn(following.collect::<Vec<_>>());
    for n in 0..20 {
        publish_first(&bus, "run", event(n)).await;
    }
    // Redis replicates asynchronously: what the primary had not yet sent its replica when it died
    // is lost (to this stream's replay; the run's state is in PostgreSQL).
    cluster.wait_replicated();
    cluster.kill_primary_of(&format!("{prefix}:stream:{{run}}"));
    let killed = Instant::now();
    for n in 20..40 {
        let published = timeout(
            Duration::from_secs(60),
            bus.publish("run", Publisher::Attempt(1), event(n)),
        )
        .await
        .expect("a publish waits out the failover, not forever");
        assert!(published.unwrap(), "event {n} is published on the promoted replica");
    }
    println!("the publishes waited {:?} for the failover", killed.elapsed());
    assert!(bus
        .publish("run", Publisher::Attempt(1), StreamItem::Done)
        .await
        .unwrap());
    let all: Vec<StreamItem> = (0..40).map(event).chain([StreamItem::Done]).collect();
    let read = timeout(Duration::from_secs(30), following).await.unwrap().unwrap();
    assert_eq!(
        read, all,
        "the subscriber following all along read every event once, in order"
    );
    let joined = bus.subscribe("run", Some("-1")).await.unwrap();
    let read = timeout(Duration::from_secs(30), joined.collect::<Vec<_>>())
        .await
        .unwrap();
    assert_eq!(read, all, "one that joins after the failover replays them all");

    // The rest of the bus goes on, whichever primary its keys were on.
    let waiting = tokio::spawn({
        let bus = bus.clone();
        async move { bus.wait_wake(Duration::from_secs(30)).await }
    });
    bus.wake().await.unwrap();
    timeout(Duration::from_secs(10), waiting)
        .await
        .expect("the wake ends the wait")
        .unwrap();
    bus.beat("w1", Duration::from_secs(30)).await.unwrap();
    assert!(bus.is_alive("w1").await.unwrap());
    bus.cancel("r1", CancelAction::Interrupt).await.unwrap();
    assert_eq!(bus.cancelled("r1").await.unwrap(), Some(CancelAction::Interrupt));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server (server/tests/redis_cluster/setup.sh installs it), run with --include-ignored"]
async fn connections_a_cluster_drops_cost_a_retry_and_a_watcher_hears_of_the_gap() {
    let cluster = crate::redis_ha::HaCluster::start();
    let bus = RedisBus::options().connect(&cluster.url()).await.unwrap();
    let mut watching = bus.watch_thread("t1").await.unwrap();
    publish_first(&bus, "run", event(0)).await;
    // Each call finds the connections it would use gone, and answers on new ones.
    cluster.drop_clients("normal");
    publish_first(&bus, "run", event(1)).await;
    cluster.drop_clients("normal");
    bus.wake().await.unwrap();
    cluster.drop_clients("normal");
    bus.cancel("r1", CancelAction::Interrupt).await.unwrap();
    cluster.drop_clients("normal");
    assert_eq!(bus.cancelled("r1").await.unwrap(), Some(CancelAction::Interrupt));
    cluster.drop_clients("normal");
    bus.beat("w1", Duration::from_secs(30)).await.unwrap();
    cluster.drop_clients("normal");
    publish_first(&bus, "run", StreamItem::Done).await;
    let read = timeout(
        Duration::from_secs(30),
        bus.subscribe("run", Some("-1")).await.unwrap().collect::<Vec<_>>(),
    );
    assert_eq!(read.await.unwrap(), [event(0), event(1), StreamItem::Done]);
    // The threads' subscription is made again, on some node: its watchers hear of the gap,
    // then of what is told after it.
    cluster.drop_clients("pubsub");
    assert_eq!(next_notice(&mut watching).await, ThreadNotice::Gap);
    let other = RedisBus::options().connect(&cluster.url()).await.unwrap();
    other.notify_thread("t1", ThreadNotice::Run("r2".into())).await.unwrap();
    assert_eq!(next_notice(&mut watching).await, ThreadNotice::Run("r2".into()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server (server/tests/redis_cluster/setup.sh installs it), run with --include-ignored"]
async fn subscriptions_on_a_cluster_named_by_one_node_move_to_another_when_it_dies() {
    let mut cluster = crate::redis_ha::HaCluster::start();
    let bus = RedisBus::options().connect(&cluster.node_url(0)).await.unwrap();
    let mut watching = bus.watch_thread("t1").await.unwrap();
    let mut cancels = bus.cancellations().await.unwrap();
    cluster.wait_replicated();
    // The only node the bus was given, where both subscriptions stand.
    cluster.kill_node(0);
    assert_eq!(next_notice(&mut watching).await, ThreadNotice::Gap);
    let other = RedisBus::options().connect(&cluster.url()).await.unwrap();
    other.notify_thread("t1", ThreadNotice::Run("r1".into())).await.unwrap();
    assert_eq!(next_notice(&mut watching).await, ThreadNotice::Run("r1".into()));
    // The cancellations' subscription moved too (a cancel also leaves its key: ask until heard).
    let heard = timeout(Duration::from_secs(30), async {
        loop {
            other.cancel("r2", CancelAction::Interrupt).await.unwrap();
            if let Ok(heard) = timeout(Duration::from_millis(500), cancels.next()).await {
                return heard;
            }
        }
    });
    assert_eq!(heard.await.unwrap(), Some(("r2".to_owned(), CancelAction::Interrupt)));
}
