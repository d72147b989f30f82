//! langgraph-rs (`langgraph` 0.2.5, Onelevenvy): a port of the Python API. Channels are built by
//! hand (`LastValue`, `BinaryOperatorAggregate` with `append_reducer`), nodes are sync closures
//! over the state as `serde_json::Value` returning a partial update, a join is `add_join_edge`,
//! a conditional edge is `RoutingFn` + path map. The config is a JSON map (`configurable.thread_id`).
//! Invocations run as a spawned task on the multi-thread runtime, because the SQLite saver's
//! sync `put` uses `block_in_place` (the spawn costs a few µs per invocation).

use crate::{check, item, measure, order_name, Facts, Opts, Outcome};
use langgraph::channels::{binop::append_reducer, BinaryOperatorAggregate, Channel, LastValue};
use langgraph::checkpoint::checkpoint::base::BaseCheckpointSaver;
use langgraph::checkpoint::checkpoint::memory::InMemorySaver;
use langgraph::checkpoint::config::RunnableConfig;
use langgraph::constants::{END, START};
use langgraph::graph::{CompiledStateGraph, StateGraph};
use langgraph::runnable::{Runnable, RoutingFn, RunnableError, SyncNodeFn};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const THREAD: &str = "bench";

fn chans(last: &[&str], append: &[&str]) -> HashMap<String, Box<dyn Channel>> {
    let mut m: HashMap<String, Box<dyn Channel>> = HashMap::new();
    for k in last {
        m.insert((*k).into(), Box::new(LastValue::new(*k)));
    }
    for k in append {
        m.insert((*k).into(), Box::new(BinaryOperatorAggregate::new(*k, append_reducer)));
    }
    m
}

fn int(v: &Value, key: &str) -> i64 {
    v.get(key).and_then(Value::as_i64).unwrap_or(0)
}

fn ints(v: &Value, key: &str) -> Vec<i64> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_i64).collect())
        .unwrap_or_default()
}

type NodeRes = Result<Value, RunnableError>;

fn sync<F: Fn(&Value) -> NodeRes + Send + Sync + 'static>(
    f: F,
) -> SyncNodeFn<impl Fn(&Value, &RunnableConfig) -> NodeRes + Send + Sync + 'static> {
    SyncNodeFn(move |v: &Value, _: &RunnableConfig| f(v))
}

fn cfg(limit: usize) -> RunnableConfig {
    serde_json::from_value(json!({"recursion_limit": limit, "configurable": {"thread_id": THREAD}})).unwrap()
}

fn loop_graph(m: i64, grow: bool) -> Result<StateGraph, String> {
    let e = |e: langgraph::graph::GraphError| e.to_string();
    let mut g = StateGraph::new(if grow { chans(&["count"], &["items"]) } else { chans(&["count"], &[]) });
    for name in ["a", "b"] {
        g.add_node(
            name,
            sync(move |s| {
                let c = int(s, "count");
                Ok(if grow {
                    json!({"count": c + 1, "items": [item(c)]})
                } else {
                    json!({"count": c + 1})
                })
            }),
        )
        .map_err(e)?;
    }
    g.add_edge(START, "a").map_err(e)?;
    g.add_edge("a", "b").map_err(e)?;
    // The router gets b's own output (state.rs: `branch.path.ainvoke(&output, …)`), which holds
    // the new count.
    g.add_conditional_edges(
        "b",
        RoutingFn(move |out: &Value| if int(out, "count") >= m { END.to_owned() } else { "a".to_owned() }),
        Some(HashMap::from([("a".to_owned(), "a".to_owned()), (END.to_owned(), END.to_owned())])),
    )
    .map_err(e)?;
    Ok(g)
}

fn invoke(
    rt: &tokio::runtime::Runtime,
    g: &Arc<CompiledStateGraph>,
    input: Value,
    limit: usize,
) -> impl std::future::Future<Output = Result<Value, String>> {
    let g = g.clone();
    let h = rt.spawn(async move {
        let c = cfg(limit);
        g.ainvoke(&input, &c).await.map_err(|e| e.to_string())
    });
    async move { h.await.map_err(|e| e.to_string())? }
}

pub fn run(rt: &tokio::runtime::Runtime, o: &Opts, workload: &str, n: usize) -> Result<Outcome, String> {
    let e = |e: langgraph::graph::GraphError| e.to_string();
    let build = |mut g: StateGraph, limit: usize| -> Result<Arc<CompiledStateGraph>, String> {
        Ok(Arc::new(g.compile_builder().recursion_limit(limit as u64).build().map_err(e)?))
    };
    let line = match workload {
        "sequential" | "wide_state" => {
            let wide = workload == "wide_state";
            let fields: Vec<String> = (0..100).map(|k| format!("f{k}")).collect();
            let mut g = if wide {
                let f: Vec<&str> = fields.iter().map(String::as_str).collect();
                StateGraph::new(chans(&f, &["log"]))
            } else {
                StateGraph::new(chans(&["count"], &[]))
            };
            for j in 0..n {
                if wide {
                    g.add_node(
                        format!("n{j}"),
                        sync(move |s| {
                            let mut out = serde_json::Map::new();
                            for kk in 0..10 {
                                let f = format!("f{}", (10 * j + kk) % 100);
                                let v = int(s, &f);
                                out.insert(f, json!(v + 1));
                            }
                            out.insert("log".into(), json!([j]));
                            Ok(Value::Object(out))
                        }),
                    )
                } else {
                    g.add_node(format!("n{j}"), sync(|s| Ok(json!({"count": int(s, "count") + 1}))))
                }
                .map_err(e)?;
            }
            g.add_edge(START, "n0").map_err(e)?;
            for j in 1..n {
                g.add_edge(format!("n{}", j - 1), format!("n{j}")).map_err(e)?;
            }
            g.add_edge(format!("n{}", n - 1), END).map_err(e)?;
            let g = build(g, n + 10)?;
            let input = if wide {
                let mut m: serde_json::Map<String, Value> = fields.iter().map(|f| (f.clone(), json!(0))).collect();
                m.insert("log".into(), json!([]));
                Value::Object(m)
            } else {
                json!({"count": 0})
            };
            measure(
                rt,
                o,
                "node",
                n,
                |_| Ok(invoke(rt, &g, input.clone(), n + 10)),
                |out| {
                    if wide {
                        for f in &fields {
                            check(int(&out, f) == (n / 10) as i64, || format!("{f} off"))?;
                        }
                        check(ints(&out, "log") == (0..n as i64).collect::<Vec<_>>(), || "log is not 0..N".into())?;
                    } else {
                        check(int(&out, "count") == n as i64, || format!("count {:?}", out.get("count")))?;
                    }
                    Ok(vec![])
                },
            )?
        }
        "fanout" => {
            let merges = Arc::new(AtomicUsize::new(0));
            let mut g = StateGraph::new(chans(&["total"], &["items"]));
            g.add_node("split", sync(|_| Ok(json!({})))).map_err(e)?;
            for i in 0..n {
                g.add_node(format!("w{i}"), sync(move |_| Ok(json!({"items": [i]})))).map_err(e)?;
            }
            let m2 = merges.clone();
            g.add_node(
                "merge",
                sync(move |s| {
                    m2.fetch_add(1, Ordering::Relaxed);
                    Ok(json!({"total": ints(s, "items").iter().sum::<i64>()}))
                }),
            )
            .map_err(e)?;
            g.add_edge(START, "split").map_err(e)?;
            for i in 0..n {
                g.add_edge("split", format!("w{i}")).map_err(e)?;
            }
            g.add_join_edge((0..n).map(|i| format!("w{i}")).collect(), "merge").map_err(e)?;
            g.add_edge("merge", END).map_err(e)?;
            let g = build(g, 25)?;
            measure(
                rt,
                o,
                "node",
                n + 2,
                |_| {
                    merges.store(0, Ordering::Relaxed);
                    Ok(invoke(rt, &g, json!({"items": [], "total": 0}), 25))
                },
                |out| {
                    let merged = merges.load(Ordering::Relaxed);
                    check(merged == 1, || format!("merge ran {merged} times"))?;
                    check(int(&out, "total") == (n * (n - 1) / 2) as i64, || format!("total {:?}", out.get("total")))?;
                    let items = ints(&out, "items");
                    let mut sorted = items.clone();
                    sorted.sort_unstable();
                    check(sorted == (0..n as i64).collect::<Vec<_>>(), || "items not a permutation".into())?;
                    Ok(vec![("items_order".into(), order_name(&items).into())])
                },
            )?
        }
        "send_map_reduce" => {
            return Ok(Outcome::Unsupported(
                "Send is declared (types::Send, Command::goto) but never scheduled: a conditional edge's router returns one routing key resolved to one target node (graph/state.rs, compiled node step 5), and the __pregel_tasks channel that map_command writes for Command::goto(Send) is read by nothing in the Pregel loop, so no PUSH task with its own argument can be created".into(),
            ))
        }
        "loop" => {
            let g = build(loop_graph(n as i64, false)?, n + 10)?;
            measure(
                rt,
                o,
                "superstep",
                n,
                |_| Ok(invoke(rt, &g, json!({"count": 0}), n + 10)),
                |out| {
                    check(int(&out, "count") == n as i64, || format!("count {:?}", out.get("count")))?;
                    Ok(vec![])
                },
            )?
        }
        "checkpoint_memory" | "checkpoint_sqlite" | "checkpoint_growing_state" => {
            let grow = workload == "checkpoint_growing_state";
            let sqlite = workload != "checkpoint_memory";
            let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
            let last: std::cell::RefCell<Option<(Arc<CompiledStateGraph>, Option<sqlx::SqlitePool>, std::path::PathBuf)>> =
                Default::default();
            let sync_off = o.synchronous == "OFF";
            measure(
                rt,
                o,
                "superstep",
                n,
                |r| {
                    let path = tmp.path().join(format!("run{r}.sqlite"));
                    let (saver, pool): (Arc<dyn BaseCheckpointSaver>, _) = if sqlite {
                        // As `SqliteSaver::from_conn_string` (WAL), plus the `synchronous` pragma.
                        let opts = sqlx::sqlite::SqliteConnectOptions::new()
                            .filename(&path)
                            .create_if_missing(true)
                            .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
                            .synchronous(if sync_off {
                                sqlx::sqlite::SqliteSynchronous::Off
                            } else {
                                sqlx::sqlite::SqliteSynchronous::Full
                            });
                        let saver = rt.block_on(async {
                            let pool = sqlx::sqlite::SqlitePoolOptions::new()
                                .max_connections(5)
                                .connect_with(opts)
                                .await
                                .map_err(|e| e.to_string())?;
                            let s = langgraph::sqlite::SqliteSaver::new(pool.clone());
                            s.setup().await.map_err(|e| e.to_string())?;
                            Ok::<_, String>((s, pool))
                        })?;
                        (Arc::new(saver.0), Some(saver.1))
                    } else {
                        (Arc::new(InMemorySaver::new()), None)
                    };
                    let mut g = loop_graph(n as i64, grow)?;
                    let g = Arc::new(
                        g.compile_builder()
                            .checkpointer(saver)
                            .recursion_limit((n + 10) as u64)
                            .build()
                            .map_err(e)?,
                    );
                    *last.borrow_mut() = Some((g.clone(), pool, path));
                    let input = if grow { json!({"count": 0, "items": []}) } else { json!({"count": 0}) };
                    Ok(invoke(rt, &g, input, n + 10))
                },
                |out| {
                    check(int(&out, "count") == n as i64, || format!("count {:?}", out.get("count")))?;
                    let items_ok = |v: &Value| {
                        let items = v.get("items").and_then(Value::as_array).cloned().unwrap_or_default();
                        items.len() == n
                            && items.iter().enumerate().all(|(k, x)| x.as_str() == Some(item(k as i64).as_str()))
                    };
                    if grow {
                        check(items_ok(&out), || "items".into())?;
                    }
                    let (g, pool, path) = last.borrow().clone().expect("prepared");
                    let g2 = g.clone();
                    let (snap, count) = rt
                        .block_on(rt.spawn(async move {
                            let c = cfg(n + 10);
                            let snap = g2.get_state(&c).map_err(|e| e.to_string())?;
                            let cps = g2
                                .checkpointer()
                                .expect("checkpointer")
                                .list(Some(&c), None, None, None)
                                .map_err(|e| e.to_string())?;
                            Ok::<_, String>((snap, cps.len()))
                        }))
                        .map_err(|e| e.to_string())??;
                    check(int(&snap.values, "count") == n as i64, || format!("saved {:?}", snap.values.get("count")))?;
                    check(snap.next.is_empty(), || format!("saved next {:?}", snap.next))?;
                    if grow {
                        check(items_ok(&snap.values), || "saved items".into())?;
                    }
                    let mut facts: Facts = vec![("durability".into(), "sync".into()), ("checkpoints".into(), count.to_string())];
                    if let Some(pool) = pool {
                        let (jm, cp_bytes, blob_bytes, writes, db) = rt.block_on(async {
                            use sqlx::Row;
                            let q = |s: &'static str| sqlx::query(s).fetch_one(&pool);
                            let jm: String = q("PRAGMA journal_mode").await.map_err(|e| e.to_string())?.get(0);
                            let cpb: i64 = q("SELECT COALESCE(SUM(LENGTH(checkpoint)),0) FROM checkpoints")
                                .await
                                .map_err(|e| e.to_string())?
                                .get(0);
                            let bb: i64 = q("SELECT COALESCE(SUM(LENGTH(blob)),0) FROM checkpoint_blobs")
                                .await
                                .map_err(|e| e.to_string())?
                                .get(0);
                            let w: i64 = q("SELECT COUNT(*) FROM checkpoint_writes").await.map_err(|e| e.to_string())?.get(0);
                            sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(&pool).await.ok();
                            let db = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                            Ok::<_, String>((jm, cpb, bb, w, db))
                        })?;
                        facts.push(("journal_mode".into(), jm));
                        facts.push(("sqlite_synchronous".into(), if sync_off { "OFF" } else { "FULL" }.into()));
                        facts.push(("write_rows".into(), writes.to_string()));
                        facts.push(("checkpoint_blob_bytes".into(), (cp_bytes + blob_bytes).to_string()));
                        facts.push(("db_file_bytes".into(), db.to_string()));
                    }
                    Ok(facts)
                },
            )?
        }
        other => return Err(format!("unknown workload `{other}`")),
    };
    Ok(Outcome::Done(line))
}
