//! adk-graph 2.3: the state is a `HashMap<String, serde_json::Value>`; nodes are async closures
//! over a `NodeContext`; routers return a node name; a node with several incoming edges is a
//! deferred fan-in automatically. There is no `Send` (one task per payload of one node).

use crate::{check, item, measure, order_name, Facts, Opts, Outcome};
use adk_graph::{
    Checkpointer, ExecutionConfig, MemoryCheckpointer, NodeOutput, SqliteCheckpointer, State, StateGraph, StateSchema,
    END, START,
};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const THREAD: &str = "bench";

fn int(s: &State, key: &str) -> i64 {
    s.get(key).and_then(Value::as_i64).unwrap_or(0)
}

fn state(pairs: &[(&str, Value)]) -> State {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect()
}

fn inc_graph(g: StateGraph, name: &str) -> StateGraph {
    g.add_node_fn(name, |ctx| async move {
        let c = ctx.get("count").and_then(Value::as_i64).unwrap_or(0);
        Ok(NodeOutput::new().with_update("count", json!(c + 1)))
    })
}

fn loop_graph(m: i64, grow: bool) -> StateGraph {
    let mut g = if grow {
        StateGraph::new(StateSchema::builder().channel("count").list_channel("items").build())
    } else {
        StateGraph::with_channels(&["count"])
    };
    for name in ["a", "b"] {
        g = if grow {
            g.add_node_fn(name, |ctx| async move {
                let c = ctx.get("count").and_then(Value::as_i64).unwrap_or(0);
                Ok(NodeOutput::new()
                    .with_update("count", json!(c + 1))
                    .with_update("items", json!([item(c)])))
            })
        } else {
            inc_graph(g, name)
        };
    }
    g.add_edge(START, "a").add_edge("a", "b").add_conditional_edges(
        "b",
        move |s: &State| {
            if int(s, "count") >= m {
                END.to_owned()
            } else {
                "a".to_owned()
            }
        },
        [("a", "a"), (END, END)],
    )
}

pub fn run(rt: &tokio::runtime::Runtime, o: &Opts, workload: &str, n: usize) -> Result<Outcome, String> {
    let e = |e: adk_graph::GraphError| e.to_string();
    let cfg = |limit: usize| ExecutionConfig::new(THREAD).with_recursion_limit(limit);
    let line = match workload {
        "sequential" => {
            let mut g = StateGraph::with_channels(&["count"]);
            for i in 0..n {
                g = inc_graph(g, &format!("n{i}"));
            }
            g = g.add_edge(START, "n0");
            for i in 1..n {
                g = g.add_edge(&format!("n{}", i - 1), &format!("n{i}"));
            }
            let g = Arc::new(
                g.add_edge(&format!("n{}", n - 1), END)
                    .compile()
                    .map_err(e)?
                    .with_recursion_limit(n + 10),
            );
            measure(
                rt,
                o,
                "node",
                n,
                |_| {
                    let g = g.clone();
                    Ok(async move { g.invoke(state(&[("count", json!(0))]), cfg(n + 10)).await.map_err(e) })
                },
                |out| {
                    check(int(&out, "count") == n as i64, || {
                        format!("count {:?}", out.get("count"))
                    })?;
                    Ok(vec![])
                },
            )?
        }
        "fanout" => {
            let merges = Arc::new(AtomicUsize::new(0));
            let schema = StateSchema::builder().list_channel("items").channel("total").build();
            let mut g = StateGraph::new(schema).add_node_fn("split", |_| async { Ok(NodeOutput::new()) });
            for i in 0..n {
                g = g.add_node_fn(&format!("w{i}"), move |_| async move {
                    Ok(NodeOutput::new().with_update("items", json!([i])))
                });
            }
            let m2 = merges.clone();
            g = g.add_node_fn("merge", move |ctx| {
                m2.fetch_add(1, Ordering::Relaxed);
                let total: i64 = ctx
                    .get("items")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_i64).sum())
                    .unwrap_or(0);
                async move { Ok(NodeOutput::new().with_update("total", json!(total))) }
            });
            g = g.add_edge(START, "split");
            for i in 0..n {
                // several incoming edges make `merge` a deferred fan-in (adk-graph's join)
                g = g
                    .add_edge("split", &format!("w{i}"))
                    .add_edge(&format!("w{i}"), "merge");
            }
            let g = Arc::new(g.add_edge("merge", END).compile().map_err(e)?.with_recursion_limit(25));
            measure(
                rt,
                o,
                "node",
                n + 2,
                |_| {
                    merges.store(0, Ordering::Relaxed);
                    let g = g.clone();
                    Ok(async move {
                        g.invoke(state(&[("items", json!([])), ("total", json!(0))]), cfg(25))
                            .await
                            .map_err(e)
                    })
                },
                |out| {
                    check(merges.load(Ordering::Relaxed) == 1, || {
                        format!("merge ran {} times", merges.load(Ordering::Relaxed))
                    })?;
                    check(int(&out, "total") == (n * (n - 1) / 2) as i64, || {
                        format!("total {:?}", out.get("total"))
                    })?;
                    let items: Vec<i64> = out
                        .get("items")
                        .and_then(Value::as_array)
                        .map(|a| a.iter().filter_map(Value::as_i64).collect())
                        .unwrap_or_default();
                    let mut sorted = items.clone();
                    sorted.sort_unstable();
                    check(sorted == (0..n as i64).collect::<Vec<_>>(), || {
                        "items not a permutation".into()
                    })?;
                    let keys: Vec<&String> = out.keys().collect();
                    Ok(vec![
                        ("items_order".into(), order_name(&items).into()),
                        ("state_keys".into(), format!("{}", keys.len())),
                    ])
                },
            )?
        }
        "send_map_reduce" => {
            return Ok(Outcome::Unsupported(
                "no Send: a router or `with_goto` names nodes, it cannot start one task of a node per payload".into(),
            ))
        }
        "loop" => {
            let g = Arc::new(
                loop_graph(n as i64, false)
                    .compile()
                    .map_err(e)?
                    .with_recursion_limit(n + 10),
            );
            measure(
                rt,
                o,
                "superstep",
                n,
                |_| {
                    let g = g.clone();
                    Ok(async move { g.invoke(state(&[("count", json!(0))]), cfg(n + 10)).await.map_err(e) })
                },
                |out| {
                    check(int(&out, "count") == n as i64, || {
                        format!("count {:?}", out.get("count"))
                    })?;
                    Ok(vec![])
                },
            )?
        }
        "wide_state" => {
            let mut b = StateSchema::builder();
            for k in 0..100 {
                b = b.channel(&format!("f{k}"));
            }
            let mut g = StateGraph::new(b.list_channel("log").build());
            for j in 0..n {
                g = g.add_node_fn(&format!("n{j}"), move |ctx| {
                    let mut out = NodeOutput::new().with_update("log", json!([j]));
                    for k in 0..10 {
                        let f = format!("f{}", (10 * j + k) % 100);
                        let v = ctx.get(&f).and_then(Value::as_i64).unwrap_or(0);
                        out = out.with_update(&f, json!(v + 1));
                    }
                    async move { Ok(out) }
                });
            }
            g = g.add_edge(START, "n0");
            for j in 1..n {
                g = g.add_edge(&format!("n{}", j - 1), &format!("n{j}"));
            }
            let g = Arc::new(
                g.add_edge(&format!("n{}", n - 1), END)
                    .compile()
                    .map_err(e)?
                    .with_recursion_limit(n + 10),
            );
            let mut input: State = (0..100).map(|k| (format!("f{k}"), json!(0))).collect();
            input.insert("log".into(), json!([]));
            measure(
                rt,
                o,
                "node",
                n,
                |_| {
                    let (g, input) = (g.clone(), input.clone());
                    Ok(async move { g.invoke(input, cfg(n + 10)).await.map_err(e) })
                },
                |out| {
                    for k in 0..100 {
                        check(int(&out, &format!("f{k}")) == (n / 10) as i64, || format!("f{k} off"))?;
                    }
                    let log: Vec<i64> = out
                        .get("log")
                        .and_then(Value::as_array)
                        .map(|a| a.iter().filter_map(Value::as_i64).collect())
                        .unwrap_or_default();
                    check(log == (0..n as i64).collect::<Vec<_>>(), || "log is not 0..N".into())?;
                    Ok(vec![])
                },
            )?
        }
        "checkpoint_memory" | "checkpoint_sqlite" | "checkpoint_growing_state" => {
            let grow = workload == "checkpoint_growing_state";
            let sqlite = workload != "checkpoint_memory";
            let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
            let last: std::cell::RefCell<Option<Arc<dyn Checkpointer>>> = Default::default();
            let sync = o.synchronous.clone();
            measure(
                rt,
                o,
                "superstep",
                n,
                |r| {
                    let saver: Arc<dyn Checkpointer> = if sqlite {
                        let path = tmp.path().join(format!("run{r}.sqlite"));
                        let opts = sqlx::sqlite::SqliteConnectOptions::new()
                            .filename(&path)
                            .create_if_missing(true)
                            .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
                            .synchronous(if sync == "OFF" {
                                sqlx::sqlite::SqliteSynchronous::Off
                            } else {
                                sqlx::sqlite::SqliteSynchronous::Full
                            });
                        let saver = rt.block_on(async {
                            let pool = sqlx::sqlite::SqlitePoolOptions::new()
                                .connect_with(opts)
                                .await
                                .map_err(|e| e.to_string())?;
                            SqliteCheckpointer::from_pool(pool).await.map_err(e)
                        })?;
                        Arc::new(saver)
                    } else {
                        Arc::new(MemoryCheckpointer::new())
                    };
                    *last.borrow_mut() = Some(saver.clone());
                    let g = loop_graph(n as i64, grow)
                        .compile()
                        .map_err(e)?
                        .with_recursion_limit(n + 10)
                        .with_checkpointer_arc(saver);
                    let input = if grow {
                        state(&[("count", json!(0)), ("items", json!([]))])
                    } else {
                        state(&[("count", json!(0))])
                    };
                    Ok(async move { g.invoke(input, cfg(n + 10)).await.map_err(e) })
                },
                |out| {
                    check(int(&out, "count") == n as i64, || {
                        format!("count {:?}", out.get("count"))
                    })?;
                    if grow {
                        let items = out.get("items").and_then(Value::as_array).cloned().unwrap_or_default();
                        check(items.len() == n, || format!("{} items", items.len()))?;
                        check(
                            items
                                .iter()
                                .enumerate()
                                .all(|(k, v)| v.as_str() == Some(item(k as i64).as_str())),
                            || "items".into(),
                        )?;
                    }
                    let saver = last.borrow().clone().expect("prepared");
                    let cps = rt.block_on(saver.list(THREAD)).map_err(e)?;
                    let saved = cps.last().map(|c| int(&c.state, "count")).unwrap_or(-1);
                    check(saved == n as i64, || format!("saved count {saved}"))?;
                    let bytes: usize = cps
                        .iter()
                        .map(|c| serde_json::to_vec(&c.state).map(|v| v.len()).unwrap_or(0))
                        .sum();
                    let facts: Facts = vec![
                        ("durability".into(), "sync".into()),
                        ("checkpoints".into(), cps.len().to_string()),
                        ("checkpoint_state_json_bytes".into(), bytes.to_string()),
                    ];
                    Ok(facts)
                },
            )?
        }
        other => return Err(format!("unknown workload `{other}`")),
    };
    Ok(Outcome::Done(line))
}
