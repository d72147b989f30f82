//! weavegraph 0.7: the state has three fixed channels, `messages` (append), `extra` (a JSON map
//! merged key by key, last writer wins) and `errors`; there are no user-declared fields. A node is
//! a `Node` trait object that gets a `StateSnapshot` and returns a `NodePartial`. Conditional edges
//! return node names (`"End"` ends). `App::invoke` builds a fresh runner per call, with an
//! in-memory checkpointer autosaved after every superstep (or the one set with
//! `RuntimeConfig::checkpointer_custom`). All runs use the in-memory event bus (the default one
//! prints to stdout).
//!
//! Mapping of the workloads' fields: last-value ints are `extra` keys; an append list is the
//! `messages` channel (one `Message` per element, its content the element), because a custom
//! reducer on `extra` only sees the last writer's value of a key (`App::apply_barrier` merges the
//! partials' `extra` maps before running reducers).

use crate::{check, item, measure, order_name, Facts, Opts, Outcome};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use weavegraph::app::App;
use weavegraph::channels::Channel;
use weavegraph::graphs::{EdgePredicate, GraphBuilder};
use weavegraph::message::{Message, Role};
use weavegraph::node::{Node, NodeContext, NodeError, NodePartial};
use weavegraph::runtimes::checkpointer::{Checkpointer, InMemoryCheckpointer};
use weavegraph::runtimes::{RuntimeConfig, SQLiteCheckpointer, StepQuery};
use weavegraph::state::{StateSnapshot, VersionedState};
use weavegraph::types::NodeKind;

const THREAD: &str = "bench";

struct FnNode<F>(F);

#[async_trait::async_trait]
impl<F> Node for FnNode<F>
where
    F: Fn(&StateSnapshot) -> NodePartial + Send + Sync,
{
    async fn run(&self, snapshot: StateSnapshot, _ctx: NodeContext) -> Result<NodePartial, NodeError> {
        Ok((self.0)(&snapshot))
    }
}

fn node<F: Fn(&StateSnapshot) -> NodePartial + Send + Sync + 'static>(f: F) -> FnNode<F> {
    FnNode(f)
}

fn k(name: &str) -> NodeKind {
    NodeKind::Custom(name.to_owned())
}

fn int(extra: &std::collections::HashMap<String, Value, impl std::hash::BuildHasher>, key: &str) -> i64 {
    extra.get(key).and_then(Value::as_i64).unwrap_or(0)
}

fn extra(pairs: Vec<(String, Value)>) -> NodePartial {
    NodePartial::new().with_extra(pairs.into_iter().collect())
}

fn msg(content: String) -> Message {
    Message::with_role(Role::Assistant, &content)
}

fn ints(msgs: &[Message]) -> Vec<i64> {
    msgs.iter().filter_map(|m| m.content.parse().ok()).collect()
}

fn config(saver: Option<Arc<dyn Checkpointer>>) -> RuntimeConfig {
    let c = RuntimeConfig::new(Some(THREAD.into()), None).with_memory_event_bus();
    match saver {
        Some(s) => c.checkpointer_custom(s),
        None => c,
    }
}

fn state(count: i64) -> VersionedState {
    VersionedState::builder().with_extra("count", json!(count)).build()
}

fn chain(mut g: GraphBuilder, n: usize) -> GraphBuilder {
    g = g.add_edge(NodeKind::Start, k("n0"));
    for i in 1..n {
        g = g.add_edge(k(&format!("n{}", i - 1)), k(&format!("n{i}")));
    }
    g.add_edge(k(&format!("n{}", n - 1)), NodeKind::End)
}

fn loop_graph(m: i64, grow: bool) -> GraphBuilder {
    let mut g = GraphBuilder::new();
    for name in ["a", "b"] {
        g = g.add_node(
            k(name),
            node(move |s| {
                let c = int(&s.extra, "count");
                let p = extra(vec![("count".into(), json!(c + 1))]);
                if grow {
                    p.with_messages(vec![msg(item(c))])
                } else {
                    p
                }
            }),
        );
    }
    let route: EdgePredicate = Arc::new(move |s: StateSnapshot| {
        if int(&s.extra, "count") >= m {
            vec![NodeKind::End.as_target()]
        } else {
            vec!["a".to_owned()]
        }
    });
    g.add_edge(NodeKind::Start, k("a"))
        .add_edge(k("a"), k("b"))
        .add_conditional_edge(k("b"), route)
}

pub fn run(rt: &tokio::runtime::Runtime, o: &Opts, workload: &str, n: usize) -> Result<Outcome, String> {
    let ce = |e: weavegraph::graphs::GraphCompileError| e.to_string();
    let re = |e: weavegraph::runtimes::runner::RunnerError| e.to_string();
    let compile = |g: GraphBuilder, saver: Option<Arc<dyn Checkpointer>>| -> Result<Arc<App>, String> {
        Ok(Arc::new(g.with_runtime_config(config(saver)).compile().map_err(ce)?))
    };
    let line = match workload {
        "sequential" => {
            let mut g = GraphBuilder::new();
            for i in 0..n {
                g = g.add_node(
                    k(&format!("n{i}")),
                    node(|s| extra(vec![("count".into(), json!(int(&s.extra, "count") + 1))])),
                );
            }
            let app = compile(chain(g, n), None)?;
            measure(
                rt,
                o,
                "node",
                n,
                |_| {
                    let app = app.clone();
                    Ok(async move { app.invoke(state(0)).await.map_err(re) })
                },
                |out| {
                    let c = int(&out.extra.snapshot(), "count");
                    check(c == n as i64, || format!("count {c}"))?;
                    Ok(vec![("durability".into(), "sync(autosave,in-memory)".into())])
                },
            )?
        }
        "fanout" => {
            let merges = Arc::new(AtomicUsize::new(0));
            let mut g = GraphBuilder::new().add_node(k("split"), node(|_| NodePartial::new()));
            for i in 0..n {
                g = g.add_node(k(&format!("w{i}")), node(move |_| NodePartial::new().with_messages(vec![msg(i.to_string())])));
            }
            let m2 = merges.clone();
            g = g.add_node(
                k("merge"),
                node(move |s| {
                    m2.fetch_add(1, Ordering::Relaxed);
                    let total: i64 = ints(&s.messages).iter().sum();
                    extra(vec![("total".into(), json!(total))])
                }),
            );
            g = g.add_edge(NodeKind::Start, k("split"));
            for i in 0..n {
                // No waiting edge exists: plain edges wi → merge; merge runs once because the
                // next frontier is deduplicated and all workers end in the same superstep.
                g = g.add_edge(k("split"), k(&format!("w{i}"))).add_edge(k(&format!("w{i}")), k("merge"));
            }
            let app = compile(g.add_edge(k("merge"), NodeKind::End), None)?;
            measure(
                rt,
                o,
                "node",
                n + 2,
                |_| {
                    merges.store(0, Ordering::Relaxed);
                    let app = app.clone();
                    Ok(async move { app.invoke(VersionedState::builder().with_extra("total", json!(0)).build()).await.map_err(re) })
                },
                |out| {
                    let merged = merges.load(Ordering::Relaxed);
                    check(merged == 1, || format!("merge ran {merged} times"))?;
                    let total = int(&out.extra.snapshot(), "total");
                    check(total == (n * (n - 1) / 2) as i64, || format!("total {total}"))?;
                    let items = ints(&out.messages.snapshot());
                    let mut sorted = items.clone();
                    sorted.sort_unstable();
                    check(sorted == (0..n as i64).collect::<Vec<_>>(), || "items not a permutation".into())?;
                    Ok(vec![
                        ("items_order".into(), order_name(&items).into()),
                        ("join".into(), "none(plain_edges+frontier_dedup)".into()),
                        ("items_channel".into(), "messages".into()),
                        ("durability".into(), "sync(autosave,in-memory)".into()),
                    ])
                },
            )?
        }
        "send_map_reduce" => {
            return Ok(Outcome::Unsupported(
                "no Send: a node only receives the shared StateSnapshot, and routes/frontier commands name nodes (deduplicated per superstep), so one node cannot run once per payload with its own input".into(),
            ))
        }
        "loop" => {
            let app = compile(loop_graph(n as i64, false), None)?;
            measure(
                rt,
                o,
                "superstep",
                n,
                |_| {
                    let app = app.clone();
                    Ok(async move { app.invoke(state(0)).await.map_err(re) })
                },
                |out| {
                    let c = int(&out.extra.snapshot(), "count");
                    check(c == n as i64, || format!("count {c}"))?;
                    Ok(vec![("durability".into(), "sync(autosave,in-memory)".into())])
                },
            )?
        }
        "wide_state" => {
            let mut g = GraphBuilder::new();
            for j in 0..n {
                g = g.add_node(
                    k(&format!("n{j}")),
                    node(move |s| {
                        let upd = (0..10)
                            .map(|kk| {
                                let f = format!("f{}", (10 * j + kk) % 100);
                                let v = int(&s.extra, &f);
                                (f, json!(v + 1))
                            })
                            .collect();
                        extra(upd).with_messages(vec![msg(j.to_string())])
                    }),
                );
            }
            let app = compile(chain(g, n), None)?;
            let mut b = VersionedState::builder();
            for kk in 0..100 {
                b = b.with_extra(&format!("f{kk}"), json!(0));
            }
            let input = b.build();
            measure(
                rt,
                o,
                "node",
                n,
                |_| {
                    let (app, input) = (app.clone(), input.clone());
                    Ok(async move { app.invoke(input).await.map_err(re) })
                },
                |out| {
                    let ex = out.extra.snapshot();
                    for kk in 0..100 {
                        check(int(&ex, &format!("f{kk}")) == (n / 10) as i64, || format!("f{kk} off"))?;
                    }
                    let log = ints(&out.messages.snapshot());
                    check(log == (0..n as i64).collect::<Vec<_>>(), || "log is not 0..N".into())?;
                    Ok(vec![("log_channel".into(), "messages".into()), ("durability".into(), "sync(autosave,in-memory)".into())])
                },
            )?
        }
        "checkpoint_memory" | "checkpoint_sqlite" | "checkpoint_growing_state" => {
            let grow = workload == "checkpoint_growing_state";
            let sqlite = workload != "checkpoint_memory";
            if sqlite && o.synchronous != "FULL" {
                return Ok(Outcome::Unsupported(
                    "synchronous=OFF: SQLiteCheckpointer::connect(url) is the only constructor (no pool or pragma hook) and sqlx URLs take no `synchronous` parameter".into(),
                ));
            }
            let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
            let last: std::cell::RefCell<Option<(Arc<dyn Checkpointer>, Option<Arc<SQLiteCheckpointer>>, std::path::PathBuf)>> =
                Default::default();
            measure(
                rt,
                o,
                "superstep",
                n,
                |r| {
                    let path = tmp.path().join(format!("run{r}.sqlite"));
                    let (saver, sq): (Arc<dyn Checkpointer>, Option<Arc<SQLiteCheckpointer>>) = if sqlite {
                        // journal_mode=WAL is persistent in the file: set it before weavegraph
                        // connects (its URL-only `connect` cannot), so it runs WAL like the others.
                        let s = rt.block_on(async {
                            use sqlx::ConnectOptions;
                            let c = sqlx::sqlite::SqliteConnectOptions::new()
                                .filename(&path)
                                .create_if_missing(true)
                                .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
                                .connect()
                                .await
                                .map_err(|e| e.to_string())?;
                            sqlx::Connection::close(c).await.ok();
                            SQLiteCheckpointer::connect(&format!("sqlite://{}?mode=rwc", path.display()))
                                .await
                                .map_err(|e| e.to_string())
                        })?;
                        let s = Arc::new(s);
                        (s.clone(), Some(s))
                    } else {
                        (Arc::new(InMemoryCheckpointer::new()), None)
                    };
                    *last.borrow_mut() = Some((saver.clone(), sq, path));
                    let app = compile(loop_graph(n as i64, grow), Some(saver))?;
                    let input = state(0);
                    Ok(async move { app.invoke(input).await.map_err(re) })
                },
                |out| {
                    let c = int(&out.extra.snapshot(), "count");
                    check(c == n as i64, || format!("count {c}"))?;
                    if grow {
                        let items = out.messages.snapshot();
                        check(items.len() == n, || format!("{} items", items.len()))?;
                        check(items.iter().enumerate().all(|(i, m)| m.content == item(i as i64)), || "items".into())?;
                    }
                    let (saver, sq, path) = last.borrow().clone().expect("prepared");
                    let cp = rt
                        .block_on(saver.load_latest(THREAD))
                        .map_err(|e| e.to_string())?
                        .ok_or("no checkpoint saved")?;
                    let saved = int(&cp.state.extra.snapshot(), "count");
                    check(saved == n as i64, || format!("saved count {saved}"))?;
                    check(cp.frontier.iter().all(|f| *f == NodeKind::End) , || format!("saved frontier {:?}", cp.frontier))?;
                    if grow {
                        let items = cp.state.messages.snapshot();
                        check(
                            items.len() == n && items.iter().enumerate().all(|(i, m)| m.content == item(i as i64)),
                            || "saved items".into(),
                        )?;
                    }
                    let mut facts: Facts = vec![("durability".into(), "sync".into())];
                    match sq {
                        Some(sq) => {
                            let res = rt
                                .block_on(sq.query_steps(THREAD, StepQuery { limit: Some(1), ..Default::default() }))
                                .map_err(|e| e.to_string())?;
                            facts.push(("checkpoints".into(), res.page_info.total_count.to_string()));
                            let (jm, bytes, db) = rt.block_on(async {
                                use sqlx::{ConnectOptions, Row};
                                let mut c = sqlx::sqlite::SqliteConnectOptions::new()
                                    .filename(&path)
                                    .connect()
                                    .await
                                    .map_err(|e| e.to_string())?;
                                let jm: String = sqlx::query("PRAGMA journal_mode")
                                    .fetch_one(&mut c)
                                    .await
                                    .map_err(|e| e.to_string())?
                                    .get(0);
                                let bytes: i64 = sqlx::query("SELECT COALESCE(SUM(LENGTH(state_json)),0) FROM steps")
                                    .fetch_one(&mut c)
                                    .await
                                    .map(|r| r.get(0))
                                    .unwrap_or(-1);
                                sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(&mut c).await.ok();
                                let db = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                                Ok::<_, String>((jm, bytes, db))
                            })?;
                            facts.push(("journal_mode".into(), jm));
                            facts.push(("sqlite_synchronous".into(), "FULL".into()));
                            facts.push(("checkpoint_blob_bytes".into(), bytes.to_string()));
                            facts.push(("db_file_bytes".into(), db.to_string()));
                        }
                        None => facts.push(("checkpoints_retained".into(), "1(latest_only)".into())),
                    }
                    Ok(facts)
                },
            )?
        }
        other => return Err(format!("unknown workload `{other}`")),
    };
    Ok(Outcome::Done(line))
}
