//! The Redis bus: wakes, cancellations, stream fan-out with replay and trimming, heartbeats,
//! threads' notices; on one server, on a Redis Cluster and on a cluster over TLS (the same
//! cases, in `server::`, `cluster::` and `tls_cluster::`), plus what is a server's own (TLS
//! through a proxy, a lost connection, a Redis not up yet) and a cluster's (seed nodes, its
//! CA; its failures are `redis_failover`'s, on a cluster of its own).
//! Ignored unless asked for; then `WEIR_REDIS_URL` must name a server, and
//! `WEIR_REDIS_CLUSTER_URL` and `WEIR_REDIS_TLS_CLUSTER_URL` a cluster's nodes
//! (`server/tests/redis_cluster/setup.sh [--tls]` starts them). Each test has a key prefix of its own, whose keys are deleted afterwards.

use crate::support::env_url;
use futures::StreamExt;
use serde_json::json;
use std::time::Duration;
use tokio::time::timeout;
use weir_server::bus::redis::{RedisBus, RedisOptions};
use weir_server::bus::{Bus, CancelAction, Publisher, StreamItem, ThreadNotice};
use weir_test_support::{host_port, Relay};

/// A bus with a prefix of its own, whose keys go when this is dropped.
struct TestBus {
    bus: RedisBus,
    url: String,
    prefix: String,
}

impl TestBus {
    /// Publishes `item` on `run`'s stream as the run's first attempt.
    async fn publish(&self, run: &str, item: StreamItem) {
        publish_first(&self.bus, run, item).await;
    }
}

/// Publishes `item` on `run`'s stream of `bus` as the run's first attempt, which nothing fences.
pub(crate) async fn publish_first(bus: &RedisBus, run: &str, item: StreamItem) {
    let published = bus.publish(run, Publisher::Attempt(1), item).await.unwrap();
    assert!(published, "nothing fences the first attempt");
}

impl Drop for TestBus {
    fn drop(&mut self) {
        // Each node of a cluster lists its own keys.
        for node in self.url.split(',') {
            let Ok(client) = redis::Client::open(node) else {
                continue;
            };
            let Ok(mut conn) = client.get_connection() else {
                continue;
            };
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg(format!("{}:*", self.prefix))
                .query(&mut conn)
                .unwrap_or_default();
            for key in keys {
                let _: redis::RedisResult<()> = redis::cmd("DEL").arg(key).query(&mut conn);
            }
        }
    }
}

/// Which Redis a case runs on.
#[derive(Clone, Copy)]
enum On {
    /// The server of `WEIR_REDIS_URL`.
    Server,
    /// The cluster whose nodes `WEIR_REDIS_CLUSTER_URL` names.
    Cluster,
    /// The cluster that speaks TLS only whose nodes `WEIR_REDIS_TLS_CLUSTER_URL` names, with
    /// the CA of its certificates.
    TlsCluster,
}

impl On {
    fn url(self) -> String {
        match self {
            On::Server => env_url("WEIR_REDIS_URL", "redis://127.0.0.1:6379"),
            On::Cluster => env_url(
                "WEIR_REDIS_CLUSTER_URL",
                "redis://127.0.0.1:7101,redis://127.0.0.1:7102,redis://127.0.0.1:7103 (server/tests/redis_cluster/setup.sh starts one and prints it)",
            ),
            On::TlsCluster => env_url(
                "WEIR_REDIS_TLS_CLUSTER_URL",
                "rediss://127.0.0.1:7111/?ssl_ca_certs=CA.pem,… (server/tests/redis_cluster/setup.sh --tls starts one and prints it)",
            ),
        }
    }
}

/// One test of each case on a server, one on a cluster and one on a cluster over TLS.
macro_rules! on_server_and_cluster {
    ($($case:ident)*) => {
        mod server {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[ignore = "needs Redis: set WEIR_REDIS_URL, run with --include-ignored"]
                async fn $case() {
                    super::$case(super::On::Server).await;
                }
            )*
        }
        mod cluster {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[ignore = "needs a Redis Cluster: set WEIR_REDIS_CLUSTER_URL, run with --include-ignored"]
                async fn $case() {
                    super::$case(super::On::Cluster).await;
                }
            )*
        }
        mod tls_cluster {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[ignore = "needs a Redis Cluster over TLS: set WEIR_REDIS_TLS_CLUSTER_URL, run with --include-ignored"]
                async fn $case() {
                    super::$case(super::On::TlsCluster).await;
                }
            )*
        }
    };
}

on_server_and_cluster!(
    a_wake_ends_a_wait_and_a_wait_without_one_times_out
    a_cancel_reaches_the_watchers_and_is_remembered_for_a_later_claim
    a_subscriber_replays_after_its_last_id_then_follows_live_until_done
    a_subscriber_that_falls_behind_misses_trimmed_events_not_the_end
    a_heartbeat_keeps_a_worker_alive_for_its_ttl
    two_processes_on_one_prefix_share_wakes_cancels_streams_and_beats
    an_event_published_twice_is_read_once
    an_attempt_the_run_was_taken_back_from_publishes_nothing_more
    the_next_attempts_first_event_fences_the_earlier_ones
    a_threads_notices_reach_its_watchers_in_every_process_and_nobody_else
);

/// A bus on the server of `WEIR_REDIS_URL`.
async fn bus(options: impl FnOnce(RedisOptions) -> RedisOptions) -> TestBus {
    bus_on(On::Server, options).await
}

async fn bus_on(on: On, options: impl FnOnce(RedisOptions) -> RedisOptions) -> TestBus {
    let url = on.url();
    let prefix = format!("weir-test-{}", uuid::Uuid::new_v4().simple());
    let bus = options(RedisBus::options().prefix(&prefix))
        .connect(&url)
        .await
        .unwrap();
    TestBus { bus, url, prefix }
}

fn event(id: &str, n: i64) -> StreamItem {
    StreamItem::Event {
        id: id.to_owned(),
        event: "values".to_owned(),
        data: json!({"n": n}).to_string().into(),
    }
}

async fn a_wake_ends_a_wait_and_a_wait_without_one_times_out(on: On) {
    let t = bus_on(on, |o| o).await;
    let waiting = tokio::spawn({
        let bus = t.bus.clone();
        async move { bus.wait_wake(Duration::from_secs(30)).await }
    });
    t.bus.wake().await.unwrap();
    timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the wake ends the wait")
        .unwrap();
    // Nothing queued: the wait ends by its timeout.
    timeout(Duration::from_secs(5), t.bus.wait_wake(Duration::from_millis(20)))
        .await
        .unwrap();
}

async fn a_cancel_reaches_the_watchers_and_is_remembered_for_a_later_claim(on: On) {
    let t = bus_on(on, |o| o).await;
    let mut watching = t.bus.cancellations().await.unwrap();
    t.bus.cancel("r1", CancelAction::Rollback).await.unwrap();
    let got = timeout(Duration::from_secs(5), watching.next()).await.unwrap();
    assert_eq!(got, Some(("r1".to_owned(), CancelAction::Rollback)));
    assert_eq!(t.bus.cancelled("r1").await.unwrap(), Some(CancelAction::Rollback));
    assert_eq!(t.bus.cancelled("r2").await.unwrap(), None);
    t.bus.cancel("r2", CancelAction::Interrupt).await.unwrap();
    assert_eq!(t.bus.cancelled("r2").await.unwrap(), Some(CancelAction::Interrupt));
}

async fn collect(stream: futures::stream::BoxStream<'static, StreamItem>) -> Vec<StreamItem> {
    timeout(Duration::from_secs(10), stream.collect()).await.unwrap()
}

async fn a_subscriber_replays_after_its_last_id_then_follows_live_until_done(on: On) {
    let t = bus_on(on, |o| o).await;
    for (i, id) in ["100-0", "100-1", "101-0"].iter().enumerate() {
        t.publish("run", event(id, i as i64)).await;
    }
    let all = t.bus.subscribe("run", Some("-1")).await.unwrap();
    let after = t.bus.subscribe("run", Some("100-1")).await.unwrap();
    let live = t.bus.subscribe("run", None).await.unwrap();
    t.publish("run", event("102-0", 3)).await;
    t.publish("run", StreamItem::Done).await;
    assert_eq!(
        collect(all).await,
        [
            event("100-0", 0),
            event("100-1", 1),
            event("101-0", 2),
            event("102-0", 3),
            StreamItem::Done
        ]
    );
    assert_eq!(
        collect(after).await,
        [event("101-0", 2), event("102-0", 3), StreamItem::Done]
    );
    assert_eq!(collect(live).await, [event("102-0", 3), StreamItem::Done]);
    // Another run's stream is apart.
    t.publish("other", StreamItem::Done).await;
    assert_eq!(
        collect(t.bus.subscribe("other", Some("-1")).await.unwrap()).await,
        [StreamItem::Done]
    );
}

async fn a_subscriber_that_falls_behind_misses_trimmed_events_not_the_end(on: On) {
    let t = bus_on(on, |o| o.stream_len(10)).await;
    const SENT: i64 = 1000;
    for n in 0..SENT {
        t.publish("run", event(&format!("{n}-0"), n)).await;
    }
    t.publish("run", StreamItem::Done).await;
    let got = collect(t.bus.subscribe("run", Some("-1")).await.unwrap()).await;
    // `MAXLEN ~` trims whole nodes (100 entries by default): about the last 10 are kept, and
    // never anywhere near all.
    assert!(got.len() > 10 && got.len() < 300, "kept {}", got.len());
    assert_eq!(got.last(), Some(&StreamItem::Done));
    let ns: Vec<i64> = got
        .iter()
        .filter_map(|item| match item {
            StreamItem::Event { data, .. } => serde_json::from_str::<serde_json::Value>(data).unwrap()["n"].as_i64(),
            StreamItem::Done => None,
        })
        .collect();
    assert_eq!(ns.last(), Some(&(SENT - 1)));
    assert!(
        ns.windows(2).all(|w| w[1] == w[0] + 1),
        "the kept events are the newest, in order"
    );
}

async fn a_heartbeat_keeps_a_worker_alive_for_its_ttl(on: On) {
    let t = bus_on(on, |o| o).await;
    assert!(!t.bus.is_alive("w1").await.unwrap());
    t.bus.beat("w1", Duration::from_secs(30)).await.unwrap();
    assert!(t.bus.is_alive("w1").await.unwrap());
    assert!(!t.bus.is_alive("w2").await.unwrap());
    // Redis expires the key by its own clock: wait for that, boundedly.
    t.bus.beat("w2", Duration::from_millis(5)).await.unwrap();
    let expired = timeout(Duration::from_secs(5), async {
        while t.bus.is_alive("w2").await.unwrap() {
            tokio::task::yield_now().await;
        }
    });
    expired.await.expect("the beat expires after its ttl");
    assert!(t.bus.is_alive("w1").await.unwrap());
}

async fn two_processes_on_one_prefix_share_wakes_cancels_streams_and_beats(on: On) {
    let api = bus_on(on, |o| o).await;
    let worker = RedisBus::options().prefix(&api.prefix).connect(&api.url).await.unwrap();
    let mut watching = worker.cancellations().await.unwrap();
    let waiting = tokio::spawn({
        let worker = worker.clone();
        async move { worker.wait_wake(Duration::from_secs(30)).await }
    });
    api.bus.wake().await.unwrap();
    timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the wake ends the wait")
        .unwrap();
    api.bus.cancel("r1", CancelAction::Interrupt).await.unwrap();
    let got = timeout(Duration::from_secs(5), watching.next()).await.unwrap();
    assert_eq!(got, Some(("r1".to_owned(), CancelAction::Interrupt)));
    let following = api.bus.subscribe("r1", Some("-1")).await.unwrap();
    publish_first(&worker, "r1", event("5-0", 5)).await;
    publish_first(&worker, "r1", StreamItem::Done).await;
    assert_eq!(collect(following).await, [event("5-0", 5), StreamItem::Done]);
    worker.beat("w1", Duration::from_secs(30)).await.unwrap();
    assert!(api.bus.is_alive("w1").await.unwrap());
    // Another prefix sees none of it.
    let apart = bus_on(on, |o| o).await;
    assert!(!apart.bus.is_alive("w1").await.unwrap());
    assert_eq!(apart.bus.cancelled("r1").await.unwrap(), None);
}

async fn an_event_published_twice_is_read_once(on: On) {
    // A publish whose connection was lost is sent again, and may have landed the first time.
    let t = bus_on(on, |o| o).await;
    let live = t.bus.subscribe("run", None).await.unwrap();
    for item in [
        event("100-0", 0),
        event("100-0", 0),
        event("100-1", 1),
        event("100-1", 1),
    ] {
        t.publish("run", item).await;
    }
    t.publish("run", StreamItem::Done).await;
    let once = [event("100-0", 0), event("100-1", 1), StreamItem::Done];
    assert_eq!(collect(live).await, once);
    assert_eq!(collect(t.bus.subscribe("run", Some("-1")).await.unwrap()).await, once);
    assert_eq!(
        collect(t.bus.subscribe("run", Some("100-0")).await.unwrap()).await,
        once[1..]
    );
}

async fn an_attempt_the_run_was_taken_back_from_publishes_nothing_more(on: On) {
    // The API process's subscriber and the workers' publishes meet in Redis: a worker that was
    // only slow, whose run a sweeper put back in the queue, publishes nothing once fenced.
    let t = bus_on(on, |o| o).await;
    let live = t.bus.subscribe("run", None).await.unwrap();
    let publish = |by, item| t.bus.publish("run", by, item);
    assert!(publish(Publisher::Attempt(1), event("1-0", 1)).await.unwrap());
    t.bus.supersede("run", 1).await.unwrap();
    assert!(!publish(Publisher::Attempt(1), event("2-0", 2)).await.unwrap());
    assert!(publish(Publisher::Attempt(2), event("3-0", 3)).await.unwrap());
    // A late sweeper's older fence does not lower it.
    t.bus.supersede("run", 0).await.unwrap();
    assert!(!publish(Publisher::Attempt(1), StreamItem::Done).await.unwrap());
    assert!(publish(Publisher::Server, StreamItem::Done).await.unwrap());
    let kept = [event("1-0", 1), event("3-0", 3), StreamItem::Done];
    assert_eq!(collect(live).await, kept);
    assert_eq!(collect(t.bus.subscribe("run", Some("-1")).await.unwrap()).await, kept);
    // Another run's stream, and another prefix's run of the same id, are not fenced.
    t.publish("other", event("1-0", 1)).await;
    let apart = bus_on(on, |o| o).await;
    apart.publish("run", event("1-0", 1)).await;
}

async fn the_next_attempts_first_event_fences_the_earlier_ones(on: On) {
    // The sweeper's fence follows its requeue by a round trip, and may come after the next
    // attempt began publishing: that attempt's first event fences the earlier ones itself.
    let t = bus_on(on, |o| o).await;
    let live = t.bus.subscribe("run", None).await.unwrap();
    let publish = |by, item| t.bus.publish("run", by, item);
    assert!(publish(Publisher::Attempt(1), event("1-0", 1)).await.unwrap());
    assert!(
        publish(Publisher::Attempt(1), event("2-0", 2)).await.unwrap(),
        "attempt 1 fences nothing"
    );
    assert!(publish(Publisher::Attempt(2), event("3-0", 3)).await.unwrap());
    assert!(!publish(Publisher::Attempt(1), event("4-0", 4)).await.unwrap());
    // The sweeper's fence, late, neither lowers it nor fences attempt 2.
    t.bus.supersede("run", 1).await.unwrap();
    assert!(publish(Publisher::Attempt(2), event("5-0", 5)).await.unwrap());
    assert!(publish(Publisher::Attempt(3), event("6-0", 6)).await.unwrap());
    assert!(!publish(Publisher::Attempt(2), StreamItem::Done).await.unwrap());
    assert!(publish(Publisher::Attempt(3), StreamItem::Done).await.unwrap());
    let kept = [
        event("1-0", 1),
        event("2-0", 2),
        event("3-0", 3),
        event("5-0", 5),
        event("6-0", 6),
        StreamItem::Done,
    ];
    assert_eq!(collect(live).await, kept);
    assert_eq!(collect(t.bus.subscribe("run", Some("-1")).await.unwrap()).await, kept);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Redis: set WEIR_REDIS_URL, run with --include-ignored"]
async fn a_rediss_url_with_the_servers_ca_carries_the_bus_over_tls() {
    // A managed Redis that asks for TLS, its certificate signed by a CA of its own, named as
    // redis-py names it (`ssl_ca_certs`).
    let t = bus(|o| o).await;
    let proxy = weir_test_support::TlsProxy::redis(&t.url).await;
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("redis ca.pem");
    std::fs::write(&ca, &proxy.ca).unwrap();
    let file = ca.display().to_string().replace(' ', "%20");
    let url = format!("{}?ssl_ca_certs={file}", proxy.redis_url());
    let over_tls = RedisBus::options().prefix(&t.prefix).connect(&url).await.unwrap();
    let following = t.bus.subscribe("run", Some("-1")).await.unwrap();
    publish_first(&over_tls, "run", event("1-0", 1)).await;
    publish_first(&over_tls, "run", StreamItem::Done).await;
    assert_eq!(collect(following).await, [event("1-0", 1), StreamItem::Done]);
    over_tls.beat("w1", Duration::from_secs(30)).await.unwrap();
    assert!(t.bus.is_alive("w1").await.unwrap());
    assert!(proxy.ssl_requests() >= 1);

    // Webpki's roots and the system's do not know the test CA; a missing CA file is named; a
    // CA file for a plaintext URL is refused.
    // That is no Redis still starting: it fails at once, not after the connection's retries.
    let started = std::time::Instant::now();
    let e = RedisBus::options().connect(&proxy.redis_url()).await.unwrap_err();
    assert!(e.0.contains("UnknownIssuer"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    let missing = dir.path().join("gone.pem");
    let e = RedisBus::options()
        .connect(&format!("{}?ssl_ca_certs={}", proxy.redis_url(), missing.display()))
        .await
        .unwrap_err();
    assert!(
        e.0.contains(&format!("the CA file `{}` cannot be read", missing.display())),
        "{e}"
    );
    let e = RedisBus::options()
        .connect(&format!("{}?ssl_ca_certs={file}", t.url))
        .await
        .unwrap_err();
    assert!(e.0.contains("the URL's scheme must be `rediss://`"), "{e}");
}

#[tokio::test]
#[ignore = "needs Redis: set WEIR_REDIS_URL, run with --include-ignored"]
async fn a_lost_connection_costs_a_retry_not_a_failed_call() {
    let t = bus(|o| o).await;
    let proxy = Relay::in_front_of(&t.url).await;
    let bus = RedisBus::options()
        .prefix(&t.prefix)
        .connect(&proxy.url("redis"))
        .await
        .unwrap();
    publish_first(&bus, "run", event("100-0", 0)).await;
    // Each call finds the connection it would use gone, and answers on a new one.
    proxy.cut();
    publish_first(&bus, "run", event("100-1", 1)).await;
    proxy.cut();
    bus.wake().await.unwrap();
    proxy.cut();
    bus.cancel("r1", CancelAction::Interrupt).await.unwrap();
    proxy.cut();
    assert_eq!(bus.cancelled("r1").await.unwrap(), Some(CancelAction::Interrupt));
    proxy.cut();
    bus.beat("w1", Duration::from_secs(30)).await.unwrap();
    proxy.cut();
    assert!(bus.is_alive("w1").await.unwrap());
    proxy.cut();
    publish_first(&bus, "run", StreamItem::Done).await;
    assert_eq!(
        collect(t.bus.subscribe("run", Some("-1")).await.unwrap()).await,
        [event("100-0", 0), event("100-1", 1), StreamItem::Done]
    );
}

#[tokio::test]
#[ignore = "needs Redis: set WEIR_REDIS_URL, run with --include-ignored"]
async fn a_redis_not_up_yet_is_waited_for_and_a_refused_password_is_not() {
    // A deployment's processes may start before its Redis answers: a refused connection is
    // tried again. A password Redis refuses (as a wrong CA, above) fails at once.
    let t = bus(|o| o).await;
    let started = std::time::Instant::now();
    let e = RedisBus::options()
        .connect(&format!("redis://:wrong@{}", host_port(&t.url)))
        .await
        .unwrap_err();
    assert!(e.0.contains("redis://:***@") && e.0.contains("uthentication"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = free.local_addr().unwrap();
    drop(free);
    let late = tokio::spawn({
        let url = t.url.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(400)).await;
            Relay::at(addr, &url).await
        }
    });
    let bus = RedisBus::options()
        .prefix(&t.prefix)
        .connect(&format!("redis://{addr}"))
        .await
        .expect("connected once the port answered");
    bus.beat("w1", Duration::from_secs(30)).await.unwrap();
    assert!(t.bus.is_alive("w1").await.unwrap());
    drop(late.await.unwrap());
}

/// The next notice of `notices`, within 5 s.
pub(crate) async fn next_notice(notices: &mut futures::stream::BoxStream<'static, ThreadNotice>) -> ThreadNotice {
    timeout(Duration::from_secs(5), notices.next())
        .await
        .expect("a notice within 5 s")
        .expect("the notices go on")
}

async fn a_threads_notices_reach_its_watchers_in_every_process_and_nobody_else(on: On) {
    let api = bus_on(on, |o| o).await;
    let other = RedisBus::options().prefix(&api.prefix).connect(&api.url).await.unwrap();
    let mut t1 = other.watch_thread("t1").await.unwrap();
    let mut t1_here = api.bus.watch_thread("t1").await.unwrap();
    let mut t2 = other.watch_thread("t2").await.unwrap();
    // A prefix that reads as a pattern must not match the others' channels.
    let starred = format!("{}*", api.prefix);
    let wildcard = RedisBus::options().prefix(&starred).connect(&api.url).await.unwrap();
    let mut t1_apart = wildcard.watch_thread("t1").await.unwrap();

    api.bus
        .notify_thread("t1", ThreadNotice::Run("r1".into()))
        .await
        .unwrap();
    let edit = ThreadNotice::StateUpdate {
        id: "7-0".into(),
        data: r#"{"state":{"values":{"topic":"a b"}},"thread_id":"t1"}"#.into(),
    };
    other.notify_thread("t1", edit.clone()).await.unwrap();
    for notices in [&mut t1, &mut t1_here] {
        assert_eq!(next_notice(notices).await, ThreadNotice::Run("r1".into()));
        assert_eq!(next_notice(notices).await, edit);
    }
    api.bus
        .notify_thread("t2", ThreadNotice::Run("r2".into()))
        .await
        .unwrap();
    assert_eq!(next_notice(&mut t2).await, ThreadNotice::Run("r2".into()));
    wildcard
        .notify_thread("t1", ThreadNotice::Run("r3".into()))
        .await
        .unwrap();
    assert_eq!(next_notice(&mut t1_apart).await, ThreadNotice::Run("r3".into()));
    // Each heard its own only: the next notice of each is the one sent last.
    api.bus
        .notify_thread("t1", ThreadNotice::Run("r4".into()))
        .await
        .unwrap();
    assert_eq!(next_notice(&mut t1).await, ThreadNotice::Run("r4".into()));
    assert!(timeout(Duration::from_millis(300), t1_apart.next()).await.is_err());
}

#[tokio::test]
#[ignore = "needs Redis: set WEIR_REDIS_URL, run with --include-ignored"]
async fn a_watcher_hears_of_a_gap_when_the_threads_subscription_is_made_again() {
    let t = bus(|o| o).await;
    let proxy = Relay::in_front_of(&t.url).await;
    let bus = RedisBus::options()
        .prefix(&t.prefix)
        .connect(&proxy.url("redis"))
        .await
        .unwrap();
    let mut watching = bus.watch_thread("t1").await.unwrap();
    proxy.cut();
    assert_eq!(next_notice(&mut watching).await, ThreadNotice::Gap);
    t.bus.notify_thread("t1", ThreadNotice::Run("r1".into())).await.unwrap();
    assert_eq!(next_notice(&mut watching).await, ThreadNotice::Run("r1".into()));
}

/// A port nothing listens on.
fn free_port() -> u16 {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    free.local_addr().unwrap().port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Redis and a Redis Cluster: set WEIR_REDIS_URL and WEIR_REDIS_CLUSTER_URL, run with --include-ignored"]
async fn a_cluster_is_reached_past_a_seed_that_is_down_and_one_server_is_no_cluster() {
    let t = bus_on(On::Cluster, |o| o).await;
    // The first seed is down: the next one answers, at once.
    let started = std::time::Instant::now();
    let seeds = format!("redis://127.0.0.1:{},{}", free_port(), t.url);
    let bus = RedisBus::options().prefix(&t.prefix).connect(&seeds).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    publish_first(&bus, "run", event("1-0", 1)).await;
    publish_first(&bus, "run", StreamItem::Done).await;
    assert_eq!(
        collect(t.bus.subscribe("run", Some("-1")).await.unwrap()).await,
        [event("1-0", 1), StreamItem::Done]
    );
    // One node of the cluster, alone, is enough to find the rest.
    let one = t.url.split(',').nth(1).unwrap();
    let bus = RedisBus::options().prefix(&t.prefix).connect(one).await.unwrap();
    bus.beat("w1", Duration::from_secs(30)).await.unwrap();
    assert!(t.bus.is_alive("w1").await.unwrap());
    // `/ok?check_db=1`'s check asks every node.
    let (name, check) = bus.health().expect("the bus has a health check");
    assert_eq!(name, "redis");
    check.await.unwrap();

    // Several URLs of a server that is no cluster: refused, naming it.
    let server = On::Server.url();
    let e = RedisBus::options()
        .connect(&format!("{server},{server}"))
        .await
        .unwrap_err();
    assert!(
        e.0.contains(&format!(
            "2 comma-separated URLs name the nodes of a Redis Cluster, but `{server}` is not in cluster mode"
        )),
        "{e}"
    );
    let e = RedisBus::options().connect(",").await.unwrap_err();
    assert!(e.0.contains("no URL"), "{e}");
    let e = RedisBus::options()
        .connect(&format!("{server},not a url"))
        .await
        .unwrap_err();
    assert!(e.0.contains("`not a url`: not a URL"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Redis Cluster over TLS: set WEIR_REDIS_TLS_CLUSTER_URL, run with --include-ignored"]
async fn a_cluster_over_tls_takes_its_ca_and_refuses_another() {
    let t = bus_on(On::TlsCluster, |o| o).await;
    // Every node's connections, the subscriptions' among them, go over TLS with the CA named.
    let mut watching = t.bus.watch_thread("t1").await.unwrap();
    let other = RedisBus::options().prefix(&t.prefix).connect(&t.url).await.unwrap();
    other.notify_thread("t1", ThreadNotice::Run("r1".into())).await.unwrap();
    assert_eq!(next_notice(&mut watching).await, ThreadNotice::Run("r1".into()));
    // A CA that signed none of the nodes' certificates: refused at once, naming why.
    let dir = tempfile::tempdir().unwrap();
    let wrong = dir.path().join("other-ca.pem");
    std::fs::write(&wrong, weir_test_support::ca_pem("another CA")).unwrap();
    let (_, named) = t.url.split_once("ssl_ca_certs=").unwrap();
    let named = named.split(',').next().unwrap();
    let url = t.url.replace(named, &wrong.display().to_string());
    let started = std::time::Instant::now();
    let e = RedisBus::options().connect(&url).await.unwrap_err();
    assert!(e.0.contains("UnknownIssuer"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    // Without a CA the system's roots do not know it either.
    let plain: Vec<String> = t
        .url
        .split(',')
        .map(|n| n.split('?').next().unwrap().to_owned())
        .collect();
    let e = RedisBus::options().connect(&plain.join(",")).await.unwrap_err();
    assert!(e.0.contains("UnknownIssuer"), "{e}");
}
