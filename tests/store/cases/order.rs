//! The order a search pages through: one newest-first order over every namespace under the
//! prefix, whatever the writes that made it (puts again, deletes, expiries, many writes in one
//! microsecond), checked against a model of the writes.

use super::put;
use crate::support::{HandClock, Make};
use serde_json::json;
use std::collections::BTreeMap;
use weir::checkpoint::Timestamp;
use weir::store::{Op, PutOp, SearchOp, Store, StoreConfig, TtlConfig};

const NAMESPACES: [&[&str]; 7] = [
    &["o"],
    &["o", "a"],
    &["o", "a", "x"],
    &["o", "b"],
    &["o", "bb"],
    &["oa"],
    &["p"],
];

/// What the store should hold: by (dot-joined namespace, key), an [`Entry`].
type Model = BTreeMap<(String, String), Entry>;

/// An item's value's `n`, when it was last put and when it expires.
type Entry = (u64, Timestamp, Option<Timestamp>);

/// The keys and namespaces a search should find, from the model.
fn expected(
    model: &Model,
    now: Timestamp,
    prefix: &[&str],
    min_n: Option<u64>,
    offset: usize,
    limit: usize,
) -> Vec<String> {
    let prefix = prefix.join(".");
    let mut live: Vec<(&(String, String), &Entry)> = model
        .iter()
        .filter(|(_, (_, _, expires))| expires.is_none_or(|e| e > now))
        .filter(|((p, _), _)| prefix.is_empty() || *p == prefix || p.starts_with(&format!("{prefix}.")))
        .filter(|(_, (n, _, _))| min_n.is_none_or(|m| *n >= m))
        .collect();
    live.sort_by(|((pa, ka), (_, ta, _)), ((pb, kb), (_, tb, _))| tb.cmp(ta).then(pa.cmp(pb)).then(ka.cmp(kb)));
    live.into_iter()
        .skip(offset)
        .take(limit)
        .map(|((p, k), _)| format!("{p}/{k}"))
        .collect()
}

async fn check(s: &dyn Store, model: &Model, now: Timestamp, step: usize) {
    for prefix in [&[][..], &["o"], &["o", "a"], &["o", "b"], &["p"]] {
        for min_n in [None, Some(5)] {
            for (offset, limit) in [(0, 1), (0, 3), (2, 4), (5, 100), (0, 1_000)] {
                let mut op = SearchOp::new(prefix).limit(limit).offset(offset);
                if let Some(m) = min_n {
                    op = op.filter(json!({"n": {"$gte": m}}));
                }
                let found: Vec<String> = s
                    .search(op)
                    .await
                    .unwrap()
                    .iter()
                    .map(|f| format!("{}/{}", f.item.namespace.join("."), f.item.key))
                    .collect();
                let want = expected(model, now, prefix, min_n, offset, limit);
                assert_eq!(
                    found, want,
                    "step {step}: prefix {prefix:?}, n >= {min_n:?}, offset {offset}, limit {limit}"
                );
            }
        }
    }
}

pub async fn pages_follow_one_newest_first_order_through_rewrites_deletes_and_expiry(make: Make) {
    let clock = HandClock::new();
    let ttl = TtlConfig {
        refresh_on_read: false,
        default_ttl: None,
        sweep_interval_minutes: None,
    };
    let h = make(StoreConfig::default().clock(clock.clock()).ttl(ttl)).await;
    let s = &*h.store;
    let mut model = Model::new();
    // A fixed pseudo-random walk (an LCG), so that a failure names a step that comes again.
    let mut seed: u64 = 0x5eed;
    let mut next = move |below: u64| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % below
    };
    for step in 0..240 {
        let namespace = NAMESPACES[next(NAMESPACES.len() as u64) as usize];
        let key = format!("k{}", next(6));
        let prefix = namespace.join(".");
        match next(10) {
            // Deletes, of present and absent keys alike.
            0 => {
                s.put_op(PutOp {
                    value: None,
                    ..put(namespace, &key, json!({}))
                })
                .await
                .unwrap();
                model.remove(&(prefix, key));
            }
            // A batch writing the same key twice, in one microsecond.
            1 => {
                let n = next(10);
                s.batch(vec![
                    Op::Put(put(namespace, &key, json!({"n": 99}))),
                    Op::Put(put(namespace, &key, json!({"n": n}))),
                ])
                .await
                .unwrap();
                model.insert((prefix, key), (n, clock.now(), None));
            }
            // Short-lived items, which expire when the clock jumps below.
            2 => {
                let n = next(10);
                let mut op = put(namespace, &key, json!({"n": n}));
                op.ttl = Some(1.0);
                s.put_op(op).await.unwrap();
                model.insert(
                    (prefix, key),
                    (
                        n,
                        clock.now(),
                        Some(Timestamp::from_unix_micros(clock.now().unix_micros() + 60_000_000)),
                    ),
                );
            }
            _ => {
                let n = next(10);
                s.put(namespace, &key, json!({"n": n})).await.unwrap();
                model.insert((prefix, key), (n, clock.now(), None));
            }
        }
        // Often no time passes between writes (ties go by namespace, then key).
        match next(8) {
            0 => clock.advance_minutes(0.6),
            1..=3 => clock.advance_micros(next(3)),
            _ => {}
        }
        if step % 40 == 39 {
            check(s, &model, clock.now(), step).await;
        }
    }
    assert!(
        model.len() > 20,
        "the walk left too little to page through: {}",
        model.len()
    );
}
