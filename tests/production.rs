//! What production runs rely on: node caches, error handlers, deferred nodes and subgraphs.

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use weir::cache::InMemoryCache;
use weir::checkpoint::MemorySaver;
use weir::prelude::*;
use weir::{CachePolicy, NodeError};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Docs {
    query: String,
    answer: String,
    #[reducer(append)]
    docs: Vec<String>,
}

fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

// G05: a cacheable node runs once per distinct input, across runs of the same compiled graph.
#[tokio::test]
async fn g05_a_cache_hit_does_not_run_the_node() {
    let runs = counter();
    let r = runs.clone();
    let mut g = GraphBuilder::<Docs>::new();
    let rewrite = g.add_node("rewrite_query", move |s: &Docs| {
        r.fetch_add(1, Ordering::SeqCst);
        DocsUpdate::default().query(format!("query: {}", s.query))
    });
    g.add_node("retrieve", |s: &Docs| {
        DocsUpdate::default().docs(vec![format!("doc for {}", s.query)])
    });
    g.cache(&rewrite, CachePolicy::new(|s: &Docs| s.query.clone()));
    g.add_edge(START, &rewrite).add_edge(&rewrite, "retrieve");
    let app = g.with_cache(InMemoryCache::new()).compile().unwrap();
    let input = || DocsUpdate::default().query("weather".into());
    let first = app.invoke(input(), &RunConfig::default()).await.unwrap();
    let second = app.invoke(input(), &RunConfig::default()).await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the second run took the cached writes");
    assert_eq!(first.docs, ["doc for query: weather"]);
    assert_eq!(
        second.docs, first.docs,
        "the cached writes and the node's edges both apply"
    );
    app.invoke(DocsUpdate::default().query("news".into()), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 2, "another key runs the node");
}

#[tokio::test]
async fn cached_writes_expire_after_their_ttl_and_survive_in_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache.db");
    let runs = counter();
    let build = |runs: Arc<AtomicUsize>, ttl: std::time::Duration| {
        let mut g = GraphBuilder::<Docs>::new();
        let n = g.add_node("n", move |_: &Docs| {
            runs.fetch_add(1, Ordering::SeqCst);
            DocsUpdate::default().answer("computed".into())
        });
        g.cache(&n, CachePolicy::new(|s: &Docs| s.query.clone()).ttl(ttl));
        g.add_edge(START, &n);
        g.with_cache(weir::cache::SqliteCache::open(&path).unwrap())
            .compile()
            .unwrap()
    };
    let long = std::time::Duration::from_secs(60);
    build(runs.clone(), long)
        .invoke(Docs::default(), &RunConfig::default())
        .await
        .unwrap();
    // Another graph instance on the same file (another process would do the same).
    let out = build(runs.clone(), long)
        .invoke(Docs::default(), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!((out.answer.as_str(), runs.load(Ordering::SeqCst)), ("computed", 1));
    let short = std::time::Duration::from_millis(30);
    let q = DocsUpdate::default().query("q".into());
    build(runs.clone(), short)
        .invoke(q.clone(), &RunConfig::default())
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(60)).await;
    build(runs.clone(), short)
        .invoke(q, &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 3, "an expired entry runs the node again");
}

#[derive(Debug)]
struct Flaky(&'static str);
impl std::fmt::Display for Flaky {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}
impl std::error::Error for Flaky {}

fn with_handler(fails: Arc<AtomicUsize>, saver: Option<MemorySaver>, handler_fails: bool) -> CompiledGraph<Docs> {
    let mut g = GraphBuilder::<Docs>::new();
    let f = fails.clone();
    let fetch = g.add_node("fetch", move |_: &Docs| -> Result<DocsUpdate, Flaky> {
        f.fetch_add(1, Ordering::SeqCst);
        Err(Flaky("upstream down"))
    });
    let fallback = g.add_node("fallback", |s: &Docs| {
        DocsUpdate::default().answer(format!("fallback after {}", s.docs.join(",")))
    });
    let summarize = g.add_node("summarize", |_: &Docs| DocsUpdate::default().answer("summary".into()));
    let fb = fallback.id();
    g.on_error(&fetch, move |_: &Docs, e: &NodeError| -> Result<Command<Docs>, Flaky> {
        if handler_fails {
            return Err(Flaky("handler down too"));
        }
        Ok(Command::new()
            .update(DocsUpdate::default().docs(vec![format!("{}: {}", e.node, e.error)]))
            .goto(fb))
    });
    g.add_edge(START, &fetch)
        .add_edge(&fetch, &summarize)
        .declare_destinations(&fetch, [&fallback]);
    if let Some(s) = saver {
        g = g.with_checkpointer(s);
    }
    g.compile().unwrap()
}

#[tokio::test]
async fn an_error_handler_updates_the_state_and_routes_instead_of_failing() {
    let fails = counter();
    let out = with_handler(fails.clone(), None, false)
        .invoke(Docs::default(), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.docs, ["fetch: node `fetch` failed at step 1: upstream down"]);
    assert_eq!(
        out.answer, "fallback after fetch: node `fetch` failed at step 1: upstream down",
        "the handler's route ran, the failed node's own edge to `summarize` did not"
    );
    assert_eq!(fails.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn after_a_failure_and_a_resume_the_handler_runs_not_the_node() {
    let fails = counter();
    let saver = MemorySaver::new();
    let cfg = RunConfig::thread("h");
    let err = with_handler(fails.clone(), Some(saver.clone()), true)
        .invoke(Docs::default(), &cfg)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "node `fetch` failed at step 1: its error handler failed: handler down too (handling: node `fetch` failed at step 1: upstream down)"
    );
    assert_eq!(fails.load(Ordering::SeqCst), 1);
    // The handler is mended; the resume runs it on the saved failure, not `fetch` again.
    let out = with_handler(fails.clone(), Some(saver), false)
        .resume(&cfg)
        .await
        .unwrap();
    assert_eq!(fails.load(Ordering::SeqCst), 1, "the failed node did not run again");
    assert!(
        out.state().answer.starts_with("fallback after fetch:"),
        "{:?}",
        out.state()
    );
}

// G03: a deferred node runs after every branch has drained, once.
#[tokio::test]
async fn g03_a_deferred_node_waits_for_all_branches() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut g = GraphBuilder::<Docs>::new();
    let step_of = |name: &'static str, docs: Vec<&'static str>| {
        let log = log.clone();
        move |_: &Docs, ctx: &Context| {
            log.lock().unwrap().push((ctx.step(), name));
            DocsUpdate::default().docs(docs.iter().map(|d| d.to_string()).collect())
        }
    };
    g.add_node("rewrite_query", step_of("rewrite_query", vec![]));
    g.add_node("retriever_one", step_of("retriever_one", vec!["doc1", "doc2"]));
    g.add_node("retriever_two", step_of("retriever_two", vec!["doc3", "doc4"]));
    g.add_node("analyzer_one", step_of("analyzer_one", vec![]));
    let l = log.clone();
    let qa = g.add_node("qa", move |s: &Docs, ctx: &Context| {
        l.lock().unwrap().push((ctx.step(), "qa"));
        DocsUpdate::default().answer(s.docs.join(","))
    });
    g.defer(&qa);
    g.add_edge(START, "rewrite_query")
        .add_edge("rewrite_query", "retriever_one")
        .add_edge("retriever_one", "analyzer_one")
        .add_edge("rewrite_query", "retriever_two")
        .add_edge("analyzer_one", &qa)
        .add_edge("retriever_two", &qa);
    let out = g
        .compile()
        .unwrap()
        .invoke(Docs::default(), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.answer, "doc1,doc2,doc3,doc4");
    let mut seen = log.lock().unwrap().clone();
    seen.sort();
    assert_eq!(
        seen,
        [
            (1, "rewrite_query"),
            (2, "retriever_one"),
            (2, "retriever_two"),
            (3, "analyzer_one"),
            (4, "qa")
        ],
        "LangGraph's steps: qa runs once, at step 4, after analyzer_one"
    );
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Inner {
    text: String,
    #[reducer(append)]
    trail: Vec<String>,
}

fn approval_subgraph(runs: Arc<AtomicUsize>) -> CompiledGraph<Inner> {
    let mut g = GraphBuilder::<Inner>::new();
    g.add_node("draft", |s: &Inner| {
        InnerUpdate::default().trail(vec![format!("draft {}", s.text)])
    });
    g.add_node(
        "ask",
        move |s: &Inner, ctx: &Context| -> Result<InnerUpdate, BoxError> {
            runs.fetch_add(1, Ordering::SeqCst);
            let ok: bool = ctx.interrupt(format!("publish {}?", s.text))?;
            Ok(InnerUpdate::default().trail(vec![format!("approved {ok}")]))
        },
    );
    g.add_edge(START, "draft").add_edge("draft", "ask");
    g.compile().unwrap()
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Outer {
    topic: String,
    #[reducer(append)]
    log: Vec<String>,
}

fn outer(sub: CompiledGraph<Inner>, saver: MemorySaver) -> CompiledGraph<Outer> {
    let mut g = GraphBuilder::<Outer>::new();
    g.add_node("prepare", |s: &Outer| {
        OuterUpdate::default().log(vec![format!("prepare {}", s.topic)])
    });
    g.add_subgraph(
        "review",
        sub,
        |s: &Outer| InnerUpdate::default().text(s.topic.clone()),
        |t: &Inner| OuterUpdate::default().log(t.trail.clone()),
    );
    g.add_node("finish", |_: &Outer| OuterUpdate::default().log(vec!["finish".into()]));
    g.add_edge(START, "prepare")
        .add_edge("prepare", "review")
        .add_edge("review", "finish");
    g.with_checkpointer(saver).compile().unwrap()
}

#[tokio::test]
async fn an_interrupt_in_a_subgraph_surfaces_and_resumes_into_the_subgraph() {
    let asks = counter();
    let saver = MemorySaver::new();
    let app = outer(approval_subgraph(asks.clone()), saver.clone());
    let cfg = RunConfig::thread("outer");
    let out = app
        .run(OuterUpdate::default().topic("rust".into()), &cfg)
        .await
        .unwrap();
    assert!(out.is_paused());
    assert_eq!(out.pauses()[0].node, "review");
    assert_eq!(out.pauses()[0].question::<String>().unwrap(), "publish rust?");
    // The subgraph's own checkpoints live in the parent's thread, under the task's namespace.
    let sub_state = approval_subgraph(counter())
        .with_checkpointer(saver.clone())
        .get_state(&RunConfig::thread("outer").ns("pull:review:2"))
        .await
        .unwrap()
        .expect("the subgraph's checkpoint");
    assert_eq!(sub_state.values.trail, ["draft rust"]);
    assert_eq!(sub_state.next, ["ask"]);
    let done = app.resume_with(true, &cfg).await.unwrap();
    assert_eq!(
        done.state().log,
        ["prepare rust", "draft rust", "approved true", "finish"]
    );
    assert_eq!(
        asks.load(Ordering::SeqCst),
        2,
        "`ask` ran once to ask and once with the answer"
    );
}

#[tokio::test]
async fn a_subgraph_without_a_checkpointer_runs_plain() {
    let mut g = GraphBuilder::<Inner>::new();
    g.add_node("shout", |s: &Inner| {
        InnerUpdate::default().trail(vec![s.text.to_uppercase()])
    });
    g.add_edge(START, "shout");
    let sub = g.compile().unwrap();
    let mut g = GraphBuilder::<Outer>::new();
    g.add_subgraph(
        "sub",
        sub,
        |s: &Outer| InnerUpdate::default().text(s.topic.clone()),
        |t: &Inner| OuterUpdate::default().log(t.trail.clone()),
    );
    g.add_edge(START, "sub");
    let out = g
        .compile()
        .unwrap()
        .invoke(OuterUpdate::default().topic("hi".into()), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.log, ["HI"]);
}

#[tokio::test]
async fn a_subgraph_node_commands_its_parent_to_go_elsewhere() {
    let mut g = GraphBuilder::<Inner>::new();
    g.add_node("triage", |s: &Inner| -> Result<Command<Inner>, BoxError> {
        if s.text == "urgent" {
            // Leave the subgraph: write to the parent's state and route the parent.
            return Command::to_parent(OuterUpdate::default().log(vec!["escalated".into()]), ["page"]);
        }
        Ok(Command::new().update(InnerUpdate::default().trail(vec!["routine".into()])))
    });
    g.add_edge(START, "triage");
    let sub = g.compile().unwrap();
    let mut g = GraphBuilder::<Outer>::new();
    let triage = g.add_subgraph(
        "triage",
        sub,
        |s: &Outer| InnerUpdate::default().text(s.topic.clone()),
        |t: &Inner| OuterUpdate::default().log(t.trail.clone()),
    );
    g.add_node("page", |_: &Outer| {
        OuterUpdate::default().log(vec!["paged on-call".into()])
    });
    g.add_edge(START, &triage).declare_destinations(&triage, ["page"]);
    let app = g.compile().unwrap();
    let urgent = app
        .invoke(OuterUpdate::default().topic("urgent".into()), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(urgent.log, ["escalated", "paged on-call"]);
    let routine = app
        .invoke(OuterUpdate::default().topic("calm".into()), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(routine.log, ["routine"]);
    // On its own, the subgraph has no parent to speak to.
    let mut g = GraphBuilder::<Inner>::new();
    g.add_node("n", |_: &Inner| {
        Command::<Inner>::to_parent(serde_json::json!({}), ["x"])
    });
    g.add_edge(START, "n");
    let err = g
        .compile()
        .unwrap()
        .invoke(Inner::default(), &RunConfig::default())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "node `n` sent a command to the parent graph (going to [\"x\"]), but this graph runs on its own"
    );
}
