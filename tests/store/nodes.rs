//! The store as nodes see it: `ctx.store()` in a node and in a subgraph's node, shared by every
//! thread of a checkpointed graph, a run's store in place of the graph's, and the error of a
//! node that asks for a store the run does not have.

use serde_json::json;
use std::sync::Arc;
use weir::checkpoint::MemorySaver;
use weir::prelude::*;
use weir::store::{InMemoryStore, Store};

#[derive(State, Clone, Debug, Default)]
struct Visit {
    user: String,
    #[reducer(append)]
    log: Vec<String>,
}

/// Counts the user's visits in the store, across threads, and logs the count.
fn count_visits(s: &Visit, ctx: &Context) -> impl std::future::Future<Output = Result<VisitUpdate, BoxError>> + Send {
    let (store, user) = (ctx.store().cloned(), s.user.clone());
    async move {
        let store = store?;
        let seen = store.get_as::<serde_json::Value>(&["visits"], &user).await?;
        let n = seen.and_then(|v| v["n"].as_u64()).unwrap_or(0) + 1;
        store.put_as(&["visits"], &user, &json!({ "n": n })).await?;
        Ok(VisitUpdate::default().log(vec![format!("{user} visit {n}")]))
    }
}

fn visit_graph() -> CompiledGraph<Visit> {
    let mut g = GraphBuilder::<Visit>::new();
    g.add_node("count", count_visits);
    g.add_edge(START, "count").add_edge("count", END);
    g.compile().unwrap()
}

fn input(user: &str) -> VisitUpdate {
    VisitUpdate::default().user(user.into())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_reads_and_writes_the_store_shared_across_threads() {
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let app = visit_graph()
        .with_checkpointer(MemorySaver::new())
        .with_store(store.clone());
    let a = app.invoke(input("ann"), &RunConfig::thread("t1")).await.unwrap();
    let b = app.invoke(input("ann"), &RunConfig::thread("t2")).await.unwrap();
    let c = app.invoke(input("bob"), &RunConfig::thread("t3")).await.unwrap();
    assert_eq!(
        (a.log, b.log, c.log),
        (
            vec!["ann visit 1".to_owned()],
            vec!["ann visit 2".to_owned()],
            vec!["bob visit 1".to_owned()]
        )
    );
    assert_eq!(
        store.get(&["visits"], "ann").await.unwrap().unwrap().value,
        json!({"n": 2})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_store_takes_the_place_of_the_graphs() {
    let graphs: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let runs: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let app = visit_graph().with_store(graphs.clone());
    app.invoke(input("ann"), &RunConfig::default().store(runs.clone()))
        .await
        .unwrap();
    assert!(graphs.get(&["visits"], "ann").await.unwrap().is_none());
    assert!(runs.get(&["visits"], "ann").await.unwrap().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subgraphs_nodes_reach_the_parents_store() {
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let mut parent = GraphBuilder::<Visit>::new();
    parent.add_subgraph(
        "inner",
        visit_graph(),
        |s: &Visit| VisitUpdate::default().user(s.user.clone()),
        |t: &Visit| VisitUpdate::default().log(t.log.clone()),
    );
    parent.add_edge(START, "inner").add_edge("inner", END);
    let app = parent
        .compile()
        .unwrap()
        .with_checkpointer(MemorySaver::new())
        .with_store(store.clone());
    let out = app.invoke(input("cy"), &RunConfig::thread("t")).await.unwrap();
    assert_eq!(out.log, ["cy visit 1"]);
    assert_eq!(
        store.get(&["visits"], "cy").await.unwrap().unwrap().value,
        json!({"n": 1})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_asking_for_a_missing_store_fails_the_run_naming_the_node() {
    let e = visit_graph()
        .invoke(input("ann"), &RunConfig::default())
        .await
        .unwrap_err();
    assert_eq!(e.node_name(), Some("count"));
    assert!(
        e.to_string()
            .contains("node `count` asked for the store, but the run has none"),
        "{e}"
    );
}
