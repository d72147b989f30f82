//! TTL: expiry, refresh on read and search, listing and sweeping (LangGraph's TTL tests).

use super::{keys, ns, put};
use crate::support::{HandClock, Make};
use serde_json::json;
use weir::store::{GetOp, ListNamespacesOp, Op, SearchOp, StoreConfig, TtlConfig};

fn ttl_config(clock: &HandClock, refresh_on_read: bool, default_ttl: Option<f64>) -> StoreConfig {
    StoreConfig::default().clock(clock.clock()).ttl(TtlConfig {
        refresh_on_read,
        default_ttl,
        sweep_interval_minutes: None,
    })
}

pub async fn expired_items_are_omitted_and_reads_refresh_the_ttl(make: Make) {
    let clock = HandClock::new();
    let h = make(ttl_config(&clock, true, None)).await;
    let s = &h.store;
    let mut op = put(&["t"], "short", json!({"v": 1}));
    op.ttl = Some(2.0);
    s.put_op(op).await.unwrap();
    s.put(&["t"], "forever", json!({"v": 2})).await.unwrap();
    clock.advance_minutes(1.5);
    assert!(
        s.get(&["t"], "short").await.unwrap().is_some(),
        "alive, and the read restarts its ttl"
    );
    clock.advance_minutes(1.5);
    assert!(
        s.get(&["t"], "short").await.unwrap().is_some(),
        "the refreshed ttl runs from the last read"
    );
    let no_refresh = |k: &str| {
        Op::Get(GetOp {
            namespace: ns(&["t"]),
            key: k.into(),
            refresh_ttl: Some(false),
        })
    };
    clock.advance_minutes(1.5);
    s.batch(vec![no_refresh("short")]).await.unwrap();
    clock.advance_minutes(1.0);
    assert_eq!(
        s.get(&["t"], "short").await.unwrap(),
        None,
        "a read without refresh left the ttl"
    );
    assert_eq!(keys(&s.search(SearchOp::new(&["t"])).await.unwrap()), ["forever"]);
    clock.advance_minutes(100.0);
    assert!(s.get(&["t"], "forever").await.unwrap().is_some());
}

pub async fn searches_refresh_ttls_unless_told_not_to_and_listing_skips_expired(make: Make) {
    let clock = HandClock::new();
    let h = make(ttl_config(&clock, false, Some(1.0))).await;
    let s = &h.store;
    s.put(&["a", "x"], "k1", json!({"v": 1})).await.unwrap();
    s.put(&["b"], "k2", json!({"v": 2})).await.unwrap();
    clock.advance_minutes(0.75);
    s.search(SearchOp::new(&["a"]).refresh_ttl(true)).await.unwrap();
    s.get(&["b"], "k2").await.unwrap().unwrap();
    clock.advance_minutes(0.75);
    assert!(
        s.get(&["b"], "k2").await.unwrap().is_none(),
        "refresh_on_read is off: the get did not refresh"
    );
    assert!(
        s.get(&["a", "x"], "k1").await.unwrap().is_some(),
        "the search refreshed it"
    );
    let listed = s.list_namespaces(ListNamespacesOp::default()).await.unwrap();
    assert_eq!(listed, [ns(&["a", "x"])]);
    clock.advance_minutes(1.0);
    assert!(s.list_namespaces(ListNamespacesOp::default()).await.unwrap().is_empty());
    assert_eq!(s.sweep().await.unwrap(), 2);
    assert_eq!(s.sweep().await.unwrap(), 0);
    s.put(&["b"], "k2", json!({"v": 3})).await.unwrap();
    let again = s.get(&["b"], "k2").await.unwrap().unwrap();
    assert_eq!(again.created_at, clock.now(), "an expired item put again is new");
}
