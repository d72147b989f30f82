//! Semantic search, many concurrent writers, and 10,000 items.

use super::{keys, put};
use crate::support::{HandClock, Make};
use serde_json::json;
use weir::store::{FakeEmbeddings, Index, IndexConfig, ListNamespacesOp, Op, SearchOp, StoreConfig};

fn index_config(clock: &HandClock) -> StoreConfig {
    StoreConfig::default()
        .clock(clock.clock())
        .index(IndexConfig::new(64, FakeEmbeddings::new(64)).fields(["text"]))
}

pub async fn a_query_ranks_by_similarity_of_indexed_fields(make: Make) {
    let clock = HandClock::new();
    let h = make(index_config(&clock)).await;
    let s = &h.store;
    s.put(
        &["docs"],
        "apples",
        json!({"text": "red apples grow on trees", "kind": "fruit"}),
    )
    .await
    .unwrap();
    s.put(
        &["docs"],
        "sky",
        json!({"text": "the blue sky at noon", "kind": "nature"}),
    )
    .await
    .unwrap();
    s.put(
        &["docs"],
        "pears",
        json!({"text": "green pears and red apples", "kind": "fruit"}),
    )
    .await
    .unwrap();
    let mut off = put(&["docs"], "hidden", json!({"text": "red apples everywhere"}));
    off.index = Index::Off;
    s.put_op(off).await.unwrap();
    let mut other = put(&["docs"], "title", json!({"text": "nothing", "title": "apples"}));
    other.index = Index::Fields(vec!["title".into()]);
    s.put_op(other).await.unwrap();

    let found = s.search(SearchOp::new(&["docs"]).query("apples")).await.unwrap();
    assert_eq!(keys(&found), ["title", "apples", "pears", "sky", "hidden"]);
    assert!((found[0].score.unwrap() - 1.0).abs() < 1e-6, "{:?}", found[0].score);
    assert!(found[1].score.unwrap() > found[3].score.unwrap());
    assert_eq!(found[4].score, None, "an item put with index off has no score");
    let fruit = s
        .search(
            SearchOp::new(&["docs"])
                .query("sky")
                .filter(json!({"kind": "fruit"}))
                .limit(1),
        )
        .await
        .unwrap();
    assert_eq!(keys(&fruit), ["apples"]);
}

pub async fn concurrent_writers_from_many_tasks_all_land(make: Make) {
    let h = make(StoreConfig::default()).await;
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let s = h.store.clone();
            tokio::spawn(async move {
                for i in 0..25 {
                    let user = format!("u{w}");
                    s.put(&["users", &user], &format!("k{i}"), json!({"w": w, "i": i}))
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    let all = h.store.search(SearchOp::new(&["users"]).limit(1_000)).await.unwrap();
    assert_eq!(all.len(), 200);
    let one = h
        .store
        .search(SearchOp::new(&["users", "u3"]).filter(json!({"i": {"$gte": 20}})))
        .await
        .unwrap();
    assert_eq!(one.len(), 5);
    assert!(one.iter().all(|f| f.item.value["w"] == 3));
    assert_eq!(
        h.store
            .list_namespaces(ListNamespacesOp::default())
            .await
            .unwrap()
            .len(),
        8
    );
}

/// 10,000 items in one batch, then a filtered search paged to its end: exact counts, and the
/// times on stderr (a debug build's; the benchmark is left for later).
pub async fn ten_thousand_items_filter_and_page_exactly(make: Make) {
    let h = make(StoreConfig::default()).await;
    let s = &h.store;
    let ops = (0..10_000)
        .map(|i| {
            Op::Put(put(
                &["bulk", &format!("g{}", i % 10)],
                &format!("k{i}"),
                json!({"n": i, "even": i % 2 == 0}),
            ))
        })
        .collect();
    let started = std::time::Instant::now();
    s.batch(ops).await.unwrap();
    let put_time = started.elapsed();
    let started = std::time::Instant::now();
    let mut seen = 0;
    let mut offset = 0;
    loop {
        let op = SearchOp::new(&["bulk"])
            .filter(json!({"even": true, "n": {"$lt": 5_000}}))
            .limit(1_000)
            .offset(offset);
        let page = s.search(op).await.unwrap();
        if page.is_empty() {
            break;
        }
        seen += page.len();
        offset += page.len();
    }
    let search_time = started.elapsed();
    assert_eq!(seen, 2_500);
    let started = std::time::Instant::now();
    for i in (0..10_000).step_by(10) {
        let item = s
            .get(&["bulk", &format!("g{}", i % 10)], &format!("k{i}"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(item.value["n"], i);
    }
    let get_time = started.elapsed();
    eprintln!(
        "10k puts (one batch) {put_time:?}; 1k gets {get_time:?}; filtered search, 3 pages of 1k {search_time:?}"
    );
}
