//! Filters at the edges, where SQL could part from the in-memory meaning: nested paths, numbers
//! against strings, missing keys and `null`, mixed types in one field, `LIKE`'s wildcards in a
//! prefix, forms the SQL backends leave to Rust, and pages of a filtered search.

use super::keys;
use crate::support::{HandClock, Make};
use serde_json::json;
use weir::store::{SearchOp, StoreConfig};

pub async fn filters_agree_on_nested_paths_mixed_types_and_missing_keys(make: Make) {
    let clock = HandClock::new();
    let h = make(StoreConfig::default().clock(clock.clock())).await;
    let s = &h.store;
    let docs = [
        (
            "d1",
            json!({"n": 1, "s": "10", "m": {"x": {"y": 5}}, "b": true, "z": null}),
        ),
        ("d2", json!({"n": 1.5, "s": "9", "m": {"x": {"y": "5"}}, "b": false})),
        ("d3", json!({"n": "2", "s": 10, "m": {"x": 7}, "arr": [1, 2]})),
        ("d4", json!({"s": "abc", "m": {}, "n": null})),
    ];
    for (key, value) in docs {
        clock.advance_micros(1_000);
        s.put(&["mixed", "docs"], key, value).await.unwrap();
    }
    let cases = [
        (json!({"m.x.y": 5}), vec!["d1"]),
        (json!({"m.x.y": "5"}), vec!["d2"]),
        (json!({"m.x.y": {"$ne": 5}}), vec!["d4", "d3", "d2"]),
        (json!({"n": {"$gt": 1}}), vec!["d2"]),
        (json!({"n": {"$gte": 1}}), vec!["d2", "d1"]),
        (json!({"n": 1.0}), vec!["d1"]),
        (json!({"n": {"$lt": "3"}}), vec!["d3"]),
        (json!({"s": {"$gt": "9"}}), vec!["d4"]),
        (json!({"s": {"$lt": "9"}}), vec!["d1"]),
        (json!({"s": 10}), vec!["d3"]),
        (json!({"s": {"$gte": 10}}), vec!["d3"]),
        (json!({"b": false}), vec!["d2"]),
        (json!({"b": {"$ne": true}}), vec!["d4", "d3", "d2"]),
        (json!({"z": null}), vec!["d1"]),
        (json!({"n": null}), vec!["d4"]),
        (json!({"n": {"$ne": null}}), vec!["d3", "d2", "d1"]),
        (json!({"missing.deep": {"$ne": "x"}}), vec!["d4", "d3", "d2", "d1"]),
        (json!({"missing": {"$lt": 5}}), vec![]),
        (json!({"n": {"$gt": true}}), vec![]),
        (json!({"arr[1]": 2}), vec!["d3"]),
        (json!({"m": {"x": 7}}), vec!["d3"]),
        (json!({"m.x": {"$gte": 7}, "s": {"$ne": "x"}}), vec!["d3"]),
    ];
    for (filter, want) in cases {
        let found = s
            .search(SearchOp::new(&["mixed"]).filter(filter.clone()))
            .await
            .unwrap();
        assert_eq!(keys(&found), want, "filter {filter}");
    }
    let page = s
        .search(
            SearchOp::new(&["mixed"])
                .filter(json!({"n": {"$ne": null}}))
                .limit(2)
                .offset(1),
        )
        .await
        .unwrap();
    assert_eq!(keys(&page), ["d2", "d1"]);
    let page = s
        .search(
            SearchOp::new(&["mixed"])
                .filter(json!({"arr[0]": {"$ne": 9}}))
                .limit(1)
                .offset(3),
        )
        .await
        .unwrap();
    assert_eq!(keys(&page), ["d1"], "a filter left to Rust pages the same");

    // Equality is of the field itself: an array or object holding the value is not equal to it.
    let held = [
        ("h1", json!({"tags": ["a", "b"], "o": {"k": ["x"]}})),
        ("h2", json!({"tags": "a", "o": [{"k": "x"}]})),
        ("h3", json!({"tags": {"a": true}, "o": {"k": "x", "j": 1}})),
        ("h4", json!({"tags": [null], "o": {"k": null}})),
    ];
    for (key, value) in held {
        clock.advance_micros(1_000);
        s.put(&["held"], key, value).await.unwrap();
    }
    let cases = [
        (json!({"tags": "a"}), vec!["h2"]),
        (json!({"tags": {"$ne": "a"}}), vec!["h4", "h3", "h1"]),
        (json!({"o.k": "x"}), vec!["h3"]),
        (json!({"o.k": null}), vec!["h4"]),
        (json!({"tags": null}), vec![]),
        (json!({"o.k": {"$ne": "x"}, "tags.a": true}), vec![]),
        (json!({"tags.a": true}), vec!["h3"]),
    ];
    for (filter, want) in cases {
        let found = s.search(SearchOp::new(&["held"]).filter(filter.clone())).await.unwrap();
        assert_eq!(keys(&found), want, "filter {filter}");
    }
}

pub async fn a_prefix_with_like_wildcards_matches_only_itself(make: Make) {
    let h = make(StoreConfig::default()).await;
    let s = &h.store;
    for label in ["a_b", "axb", "a%b", "a%bc"] {
        s.put(&[label, "in"], "k", json!({"label": label})).await.unwrap();
    }
    for label in ["a_b", "a%b"] {
        let found = s
            .search(SearchOp::new(&[label]).filter(json!({"label": label})))
            .await
            .unwrap();
        assert_eq!(found.len(), 1, "{label}");
        assert_eq!(found[0].item.namespace, [label, "in"]);
        let found = s.search(SearchOp::new(&[label])).await.unwrap();
        assert_eq!(found.len(), 1, "{label} without a filter");
    }
}
