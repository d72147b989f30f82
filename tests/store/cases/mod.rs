//! The conformance cases every store passes, ported from LangGraph's store tests
//! (`libs/checkpoint/tests/test_store.py`, the SQLite and PostgreSQL store tests): items,
//! namespaces, search filters, pagination, namespace listing, TTL, batches and semantic search.

mod filters;
mod order;
mod scale;
mod ttl;

pub use filters::*;
pub use order::*;
pub use scale::*;
pub use ttl::*;

use crate::support::{HandClock, Make};
use serde_json::json;
use std::sync::Arc;
use weir::store::{GetOp, Index, ListNamespacesOp, MatchCondition, Op, OpResult, PutOp, SearchOp, Store, StoreConfig};

pub(crate) fn ns(labels: &[&str]) -> Vec<String> {
    labels.iter().map(|l| (*l).to_owned()).collect()
}

pub(crate) fn keys(found: &[weir::store::SearchItem]) -> Vec<&str> {
    found.iter().map(|f| f.item.key.as_str()).collect()
}

pub(crate) fn put(namespace: &[&str], key: &str, value: serde_json::Value) -> PutOp {
    PutOp {
        namespace: ns(namespace),
        key: key.into(),
        value: value.as_object().cloned(),
        index: Index::Default,
        ttl: None,
    }
}

pub async fn put_get_update_delete(make: Make) {
    let clock = HandClock::new();
    let h = make(StoreConfig::default().clock(clock.clock())).await;
    let s = &h.store;
    assert_eq!(s.get(&["users", "u1"], "prefs").await.unwrap(), None);
    s.put(&["users", "u1"], "prefs", json!({"color": "blue"}))
        .await
        .unwrap();
    let first = s.get(&["users", "u1"], "prefs").await.unwrap().unwrap();
    assert_eq!(first.namespace, ns(&["users", "u1"]));
    assert_eq!((first.key.as_str(), &first.value), ("prefs", &json!({"color": "blue"})));
    assert_eq!((first.created_at, first.updated_at), (clock.now(), clock.now()));

    clock.advance_micros(1_500);
    s.put(&["users", "u1"], "prefs", json!({"color": "red"})).await.unwrap();
    let second = s.get(&["users", "u1"], "prefs").await.unwrap().unwrap();
    assert_eq!(second.value, json!({"color": "red"}));
    assert_eq!(second.created_at, first.created_at, "an update keeps created_at");
    assert_eq!(second.updated_at, clock.now());

    s.delete(&["users", "u1"], "prefs").await.unwrap();
    assert_eq!(s.get(&["users", "u1"], "prefs").await.unwrap(), None);
    s.delete(&["users", "u1"], "prefs").await.unwrap();
}

pub async fn invalid_namespaces_and_values_are_refused_naming_them(make: Make) {
    let h = make(StoreConfig::default()).await;
    let s = &h.store;
    let cases: [(&[&str], &str); 4] = [
        (&[], "namespace (): must have at least one label"),
        (&["a", ""], "namespace (\"a\", \"\"): a label is empty"),
        (
            &["a", "b.c"],
            "namespace (\"a\", \"b.c\"): label \"b.c\" contains a `.`",
        ),
        (
            &["langgraph", "x"],
            "namespace (\"langgraph\", \"x\"): the root label `langgraph` is reserved",
        ),
    ];
    for (namespace, message) in cases {
        let e = s.put(namespace, "k", json!({})).await.unwrap_err();
        assert!(e.is_invalid());
        assert_eq!(e.to_string(), message);
        assert_eq!(s.get(namespace, "k").await.unwrap_err().to_string(), message);
    }
    let e = s.put(&["a"], "k", json!([1])).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "item \"k\" in namespace (\"a\"): a value must be a JSON object, not [1]"
    );
    let e = s
        .search(SearchOp::new(&["a"]).filter(json!({"n": {"$in": [1]}})))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("unknown operator `$in`"), "{e}");
    // Past the cap, an expiry is no date PostgreSQL can store (LangGraph's column is an
    // `integer` of minutes): refused on every backend alike.
    for (minutes, shown) in [(-1.0, "-1.0"), (0.0, "0.0"), (f64::NAN, "NaN"), (1e300, "1e300")] {
        let mut ttl = put(&["a"], "k", json!({}));
        ttl.ttl = Some(minutes);
        let e = s.put_op(ttl).await.unwrap_err();
        assert!(e.is_invalid(), "{e}");
        assert_eq!(
            e.to_string(),
            format!(
                "item \"k\" in namespace (\"a\"): ttl must be a positive number of minutes up to 2147483647, not {shown}"
            )
        );
    }
    let mut longest = put(&["a"], "longest", json!({}));
    longest.ttl = Some(weir::store::MAX_TTL_MINUTES);
    s.put_op(longest).await.unwrap();
    assert!(s.get(&["a"], "longest").await.unwrap().is_some());
    s.delete(&["a"], "longest").await.unwrap();
    assert_eq!(
        s.list_namespaces(ListNamespacesOp::default()).await.unwrap(),
        Vec::<Vec<String>>::new()
    );
}

/// LangGraph's `test_search`-style documents.
async fn documents(s: &Arc<dyn Store>, clock: &HandClock) {
    let docs = [
        (
            &["test", "docs"][..],
            "doc1",
            json!({"title": "Alpha", "score": 4.5, "tags": "a", "meta": {"v": 1}}),
        ),
        (
            &["test", "docs"],
            "doc2",
            json!({"title": "Beta", "score": 3.0, "tags": "b", "meta": {"v": 2}}),
        ),
        (
            &["test", "docs", "deep"],
            "doc3",
            json!({"title": "Gamma", "score": 5.0, "tags": "a", "meta": {"v": 3}}),
        ),
        (
            &["test", "docsx"],
            "doc4",
            json!({"title": "Delta", "score": 1.0, "tags": "a"}),
        ),
        (
            &["other"],
            "doc5",
            json!({"title": "Epsilon", "score": 2.0, "tags": "a"}),
        ),
    ];
    for (namespace, key, value) in docs {
        clock.advance_micros(10);
        s.put(namespace, key, value).await.unwrap();
    }
}

pub async fn search_finds_items_under_a_prefix_newest_first(make: Make) {
    let clock = HandClock::new();
    let h = make(StoreConfig::default().clock(clock.clock())).await;
    let s = &h.store;
    documents(s, &clock).await;
    let found = s.search(SearchOp::new(&["test", "docs"])).await.unwrap();
    assert_eq!(keys(&found), ["doc3", "doc2", "doc1"], "`docsx` is not under `docs`");
    assert!(found.iter().all(|f| f.score.is_none()));
    assert_eq!(found[0].item.namespace, ns(&["test", "docs", "deep"]));
    let all = s.search(SearchOp::new(&[])).await.unwrap();
    assert_eq!(keys(&all), ["doc5", "doc4", "doc3", "doc2", "doc1"]);
    let page = s.search(SearchOp::new(&["test"]).limit(2).offset(1)).await.unwrap();
    assert_eq!(keys(&page), ["doc3", "doc2"]);
    assert!(s.search(SearchOp::new(&["nothing"])).await.unwrap().is_empty());
}

pub async fn search_filters_with_every_operator(make: Make) {
    let clock = HandClock::new();
    let h = make(StoreConfig::default().clock(clock.clock())).await;
    let s = &h.store;
    documents(s, &clock).await;
    let cases = [
        (json!({"tags": "a"}), vec!["doc4", "doc3", "doc1"]),
        (json!({"tags": {"$eq": "b"}}), vec!["doc2"]),
        (json!({"tags": {"$ne": "a"}}), vec!["doc2"]),
        (json!({"score": {"$gt": 3.0}}), vec!["doc3", "doc1"]),
        (json!({"score": {"$gte": 3}}), vec!["doc3", "doc2", "doc1"]),
        (json!({"score": {"$lt": 3.0}}), vec!["doc4"]),
        (json!({"score": {"$lte": 3.0}}), vec!["doc4", "doc2"]),
        (json!({"score": {"$gt": 1.0, "$lt": 5.0}, "tags": "a"}), vec!["doc1"]),
        (json!({"meta.v": 2}), vec!["doc2"]),
        (json!({"meta": {"v": 3}}), vec!["doc3"]),
        (json!({"title": {"$gte": "B", "$lt": "E"}}), vec!["doc4", "doc2"]),
        (json!({"missing": "x"}), vec![]),
    ];
    for (filter, want) in cases {
        let found = s.search(SearchOp::new(&["test"]).filter(filter.clone())).await.unwrap();
        assert_eq!(keys(&found), want, "filter {filter}");
    }
}

pub async fn list_namespaces_with_conditions_depth_and_pages(make: Make) {
    let h = make(StoreConfig::default()).await;
    let s = &h.store;
    let namespaces: [&[&str]; 9] = [
        &["a", "b", "c"],
        &["a", "b", "d", "e"],
        &["a", "b", "d", "i"],
        &["a", "b", "f"],
        &["a", "c", "f"],
        &["b", "a", "f"],
        &["users", "123"],
        &["users", "456", "settings"],
        &["admin", "users", "789"],
    ];
    for n in namespaces {
        s.put(n, "k", json!({"v": 1})).await.unwrap();
    }
    let list = |conditions: Vec<MatchCondition>, max_depth: Option<usize>| ListNamespacesOp {
        match_conditions: conditions,
        max_depth,
        ..ListNamespacesOp::default()
    };
    let p = |l: &[&str]| MatchCondition::Prefix(ns(l));
    let x = |l: &[&str]| MatchCondition::Suffix(ns(l));
    let all = s.list_namespaces(list(vec![], None)).await.unwrap();
    assert_eq!(all.len(), 9);
    assert_eq!(all[0], ns(&["a", "b", "c"]), "sorted");
    let got = s.list_namespaces(list(vec![p(&["a", "b"])], None)).await.unwrap();
    assert_eq!(
        got,
        [
            ns(&["a", "b", "c"]),
            ns(&["a", "b", "d", "e"]),
            ns(&["a", "b", "d", "i"]),
            ns(&["a", "b", "f"])
        ]
    );
    let got = s.list_namespaces(list(vec![x(&["f"])], None)).await.unwrap();
    assert_eq!(got, [ns(&["a", "b", "f"]), ns(&["a", "c", "f"]), ns(&["b", "a", "f"])]);
    let got = s.list_namespaces(list(vec![p(&["a", "*", "f"])], None)).await.unwrap();
    assert_eq!(got, [ns(&["a", "b", "f"]), ns(&["a", "c", "f"])]);
    let got = s
        .list_namespaces(list(vec![p(&["a"]), x(&["*", "f"])], None))
        .await
        .unwrap();
    assert_eq!(got, [ns(&["a", "b", "f"]), ns(&["a", "c", "f"])]);
    let got = s.list_namespaces(list(vec![p(&["a", "b"])], Some(3))).await.unwrap();
    assert_eq!(got, [ns(&["a", "b", "c"]), ns(&["a", "b", "d"]), ns(&["a", "b", "f"])]);
    let got = s.list_namespaces(list(vec![], Some(1))).await.unwrap();
    assert_eq!(got, [ns(&["a"]), ns(&["admin"]), ns(&["b"]), ns(&["users"])]);
    let got = s.list_namespaces(list(vec![x(&["users", "*"])], None)).await.unwrap();
    assert_eq!(got, [ns(&["admin", "users", "789"]), ns(&["users", "123"])]);
    let page = ListNamespacesOp {
        limit: 2,
        offset: 3,
        ..ListNamespacesOp::default()
    };
    assert_eq!(
        s.list_namespaces(page).await.unwrap(),
        [ns(&["a", "b", "f"]), ns(&["a", "c", "f"])]
    );
    s.delete(&["users", "123"], "k").await.unwrap();
    let got = s.list_namespaces(list(vec![p(&["users"])], None)).await.unwrap();
    assert_eq!(
        got,
        [ns(&["users", "456", "settings"])],
        "a namespace without items is not listed"
    );
}

pub async fn batch_runs_mixed_operations_in_order(make: Make) {
    let h = make(StoreConfig::default()).await;
    let s = &h.store;
    s.put(&["test", "foo"], "key1", json!({"data": "value1"}))
        .await
        .unwrap();
    let get = |n: &[&str], k: &str| {
        Op::Get(GetOp {
            namespace: ns(n),
            key: k.into(),
            refresh_ttl: None,
        })
    };
    let results = s
        .batch(vec![
            get(&["test", "foo"], "key1"),
            Op::Put(put(&["test", "bar"], "key2", json!({"data": "value2"}))),
            get(&["test", "bar"], "key2"),
            Op::Search(SearchOp::new(&["test"]).filter(json!({"data": "value1"}))),
            Op::ListNamespaces(ListNamespacesOp::default()),
            Op::Put(PutOp {
                value: None,
                ..put(&["test", "foo"], "key1", json!({}))
            }),
            get(&["test", "foo"], "key1"),
        ])
        .await
        .unwrap();
    assert_eq!(results.len(), 7);
    assert!(matches!(&results[0], OpResult::Item(Some(i)) if i.value == json!({"data": "value1"})));
    assert_eq!(results[1], OpResult::Done);
    assert!(
        matches!(&results[2], OpResult::Item(Some(i)) if i.key == "key2"),
        "a get sees the put before it"
    );
    assert!(matches!(&results[3], OpResult::Items(items) if keys(items) == ["key1"]));
    assert_eq!(
        results[4],
        OpResult::Namespaces(vec![ns(&["test", "bar"]), ns(&["test", "foo"])])
    );
    assert_eq!(results[5], OpResult::Done);
    assert_eq!(results[6], OpResult::Item(None));
    let e = s
        .batch(vec![get(&["test"], "a"), get(&["bad.ns"], "b")])
        .await
        .unwrap_err();
    assert!(e.is_invalid());
}

/// A key written several times in one batch ends as the writes in order leave it: the last
/// value, created when the run of puts that ends its writes began (or when the live item it
/// replaces was), and a delete before those puts makes it new again.
pub async fn a_key_written_again_in_one_batch_ends_as_its_last_write(make: Make) {
    let clock = HandClock::new();
    let h = make(StoreConfig::default().clock(clock.clock())).await;
    let s = &h.store;
    s.put(&["b"], "kept", json!({"v": 0})).await.unwrap();
    s.put(&["b"], "renewed", json!({"v": 0})).await.unwrap();
    let made = clock.now();
    clock.advance_micros(1_000);
    let delete = |key: &str| {
        Op::Put(PutOp {
            value: None,
            ..put(&["b"], key, json!({}))
        })
    };
    s.batch(vec![
        Op::Put(put(&["b"], "kept", json!({"v": 1}))),
        Op::Put(put(&["b"], "new", json!({"v": 1}))),
        delete("renewed"),
        Op::Put(put(&["b"], "kept", json!({"v": 2}))),
        Op::Put(put(&["b"], "renewed", json!({"v": 2}))),
        Op::Put(put(&["b"], "new", json!({"v": 2}))),
        Op::Put(put(&["b"], "gone", json!({"v": 1}))),
        delete("gone"),
    ])
    .await
    .unwrap();
    let now = clock.now();
    let item = |key: &'static str| async move { s.get(&["b"], key).await.unwrap() };
    let kept = item("kept").await.unwrap();
    assert_eq!(
        (kept.value, kept.created_at, kept.updated_at),
        (json!({"v": 2}), made, now)
    );
    let renewed = item("renewed").await.unwrap();
    assert_eq!(
        (renewed.value, renewed.created_at),
        (json!({"v": 2}), now),
        "deleted, then new"
    );
    let new = item("new").await.unwrap();
    assert_eq!((new.value, new.created_at), (json!({"v": 2}), now));
    assert_eq!(item("gone").await, None);
    let all = s.search(SearchOp::new(&["b"])).await.unwrap();
    assert_eq!(all.len(), 3, "{:?}", keys(&all));
}

pub async fn typed_helpers_round_trip_serde_values(make: Make) {
    #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
    struct Prefs {
        color: String,
        size: u32,
    }
    let h = make(StoreConfig::default()).await;
    let s: &dyn Store = &*h.store;
    let prefs = Prefs {
        color: "blue".into(),
        size: 3,
    };
    s.put_as(&["users", "u1"], "prefs", &prefs).await.unwrap();
    assert_eq!(s.get_as::<Prefs>(&["users", "u1"], "prefs").await.unwrap(), Some(prefs));
    assert_eq!(s.get_as::<Prefs>(&["users", "u1"], "none").await.unwrap(), None);
    let e = s.get_as::<Vec<u8>>(&["users", "u1"], "prefs").await.unwrap_err();
    assert!(
        e.to_string()
            .starts_with("item \"prefs\" in namespace (\"users\", \"u1\"): not a alloc::vec::Vec<u8>"),
        "{e}"
    );
    let e = s.put_as(&["users"], "n", &5).await.unwrap_err();
    assert!(e.to_string().contains("a value must be a JSON object, not 5"), "{e}");
}
