//! Conformance scenarios of SEMANTICS.md §6 that need a checkpointer, with LangGraph 1.2.9's
//! observed values (`anchor_results.txt`). Each takes the saver under test.
//!
//! Deliberate differences, everywhere: task ids are weir's (`pull:<node>`), not LangGraph's
//! hashes; an error kept in a pending write is weir's message (`node `two` failed at step 1:
//! I'm not good`), not Python's `repr`; a state's fields are typed, so an input key the state does
//! not declare (G12's `market`) cannot be given.

use crate::support::thread;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use weir::checkpoint::{Checkpointer, Source};
use weir::prelude::*;
use weir::PauseKind;

fn sorted_concat(v: &mut Vec<String>, more: Vec<String>) {
    v.extend(more);
    v.sort();
}

fn concat(v: &mut String, more: String) {
    v.push_str(&more);
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

async fn checkpoints(saver: &dyn Checkpointer, thread: &str) -> usize {
    saver.list(thread, "", None, None).await.unwrap().len()
}

// ---------------------------------------------------------------------------------------------
// P05: a binop total across runs of one thread, and the error kept as a pending write.

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Total {
    input: i64,
    #[reducer(add)]
    total: i64,
    output: i64,
}

pub async fn p05_binop_across_runs_and_error_write(saver: Arc<dyn Checkpointer>) {
    let mut g = GraphBuilder::<Total>::pregel();
    let one = g.add_node("one", |s: &Total| -> Result<TotalUpdate, BoxError> {
        let v = s.total + s.input;
        if v > 10 {
            return Err("Input is too large".into());
        }
        Ok(TotalUpdate::default().output(v).total(v))
    });
    g.subscribe(&one, 0);
    g.set_checkpointer(saver.clone());
    let app = g.compile().unwrap();
    let t1 = RunConfig::thread(thread("p05-1"));
    let total = |app: &CompiledGraph<Total>, cfg: &RunConfig| {
        let (app, cfg) = (app.clone(), cfg.clone());
        async move { app.get_state(&cfg).await.unwrap().unwrap().values.total }
    };

    // The total starts at 0: 0 + 2.
    assert_eq!(
        app.invoke(TotalUpdate::default().input(2), &t1).await.unwrap().output,
        2
    );
    assert_eq!(total(&app, &t1).await, 2);
    // 2 + 3, and the total is 2 + 5.
    assert_eq!(
        app.invoke(TotalUpdate::default().input(3), &t1).await.unwrap().output,
        5
    );
    assert_eq!(total(&app, &t1).await, 7);
    // 7 + 4 > 10: the node fails; the checkpoint keeps the total, and the error as a pending write.
    let err = app.invoke(TotalUpdate::default().input(4), &t1).await.unwrap_err();
    assert!(err.is_node_error(), "{err}");
    assert_eq!(err.node_name(), Some("one"));
    assert!(err.to_string().ends_with("Input is too large"), "{err}");
    assert_eq!(total(&app, &t1).await, 7);
    let loaded = saver
        .get(t1.thread_id.as_deref().unwrap(), "", None)
        .await
        .unwrap()
        .unwrap();
    let pending: Vec<(&str, String)> = loaded
        .pending_writes
        .iter()
        .map(|w| (w.channel.as_str(), String::from_utf8(w.bytes.clone()).unwrap()))
        .collect();
    // LangGraph: [("__error__", "ValueError('Input is too large')")]; weir keeps its own message
    // (step 4: the thread's third input is step 3).
    assert_eq!(
        pending,
        [(
            "__error__",
            "node `one` failed at step 4: Input is too large".to_owned()
        )]
    );
    // A new thread starts from a total of 0.
    let t2 = RunConfig::thread(thread("p05-2"));
    assert_eq!(
        app.invoke(TotalUpdate::default().input(5), &t2).await.unwrap().output,
        5
    );
}

// ---------------------------------------------------------------------------------------------
// P06: a per-step topic is cleared between steps and between runs; an emptied topic is stored.

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Topics {
    input: i64,
    #[channel(topic)]
    inbox: Vec<i64>,
    output: Vec<i64>,
}

pub async fn p06_topic_cleared_between_steps_and_runs(saver: Arc<dyn Checkpointer>) {
    let mut g = GraphBuilder::<Topics>::pregel();
    let one = g.add_node("one", |s: &Topics| TopicsUpdate::default().inbox(vec![s.input + 1]));
    let three = g.add_node("chain_three", |s: &Topics| {
        TopicsUpdate::default().inbox(vec![s.input + 1])
    });
    let four = g.add_node("chain_four", |s: &Topics| {
        let mut v: Vec<i64> = s.inbox.iter().map(|x| x + 10).collect();
        v.sort();
        TopicsUpdate::default().output(v)
    });
    g.subscribe(&one, 0).subscribe(&three, 0).subscribe(&four, 1);
    g.set_checkpointer(saver.clone());
    let app = g.compile().unwrap();
    let cfg = RunConfig::thread(thread("p06"));
    assert_eq!(
        app.invoke(TopicsUpdate::default().input(2), &cfg).await.unwrap().output,
        [13, 13]
    );
    assert_eq!(
        app.invoke(TopicsUpdate::default().input(2), &cfg).await.unwrap().output,
        [13, 13]
    );
    // LangGraph: channel_values (inbox, output, input) = ([], [13, 13], 2): the emptied topic is
    // still stored, as `[]`.
    let loaded = saver
        .get(cfg.thread_id.as_deref().unwrap(), "", None)
        .await
        .unwrap()
        .unwrap();
    assert!(loaded.values.iter().any(|(c, _)| c == "inbox"), "{:?}", loaded.values);
    let s = app.decode_checkpoint(loaded).unwrap();
    assert_eq!((s.inbox, s.output, s.input), (vec![], vec![13, 13], 2));
}

// ---------------------------------------------------------------------------------------------
// G02: interrupt_after / interrupt_before on G01's fan-out with a join, and update_state.

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Docs {
    query: String,
    answer: String,
    #[reducer(with = sorted_concat)]
    docs: Vec<String>,
}

fn fanout(saver: &Arc<dyn Checkpointer>, ran: &Arc<std::sync::Mutex<Vec<String>>>) -> GraphBuilder<Docs> {
    let mut g = GraphBuilder::<Docs>::new();
    let log = |ran: &Arc<std::sync::Mutex<Vec<String>>>, node: &str| ran.lock().unwrap().push(node.to_owned());
    let r = ran.clone();
    g.add_node("rewrite_query", move |s: &Docs| {
        log(&r, "rewrite_query");
        DocsUpdate::default().query(format!("query: {}", s.query))
    });
    let r = ran.clone();
    g.add_node("analyzer_one", move |s: &Docs| {
        log(&r, "analyzer_one");
        DocsUpdate::default().query(format!("analyzed: {}", s.query))
    });
    let r = ran.clone();
    g.add_node("retriever_one", move |_: &Docs| {
        log(&r, "retriever_one");
        DocsUpdate::default().docs(strings(&["doc1", "doc2"]))
    });
    let r = ran.clone();
    g.add_node("retriever_two", move |_: &Docs| {
        let r = r.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            log(&r, "retriever_two");
            DocsUpdate::default().docs(strings(&["doc3", "doc4"]))
        }
    });
    let r = ran.clone();
    g.add_node("qa", move |s: &Docs| {
        log(&r, "qa");
        DocsUpdate::default().answer(s.docs.join(","))
    });
    g.add_edge(START, "rewrite_query")
        .add_edge("rewrite_query", "analyzer_one")
        .add_edge("analyzer_one", "retriever_one")
        .add_edge("rewrite_query", "retriever_two")
        .add_join(["retriever_one", "retriever_two"], "qa")
        .add_edge("qa", END);
    g.set_checkpointer(saver.clone());
    g
}

pub async fn g02_interrupt_after_then_before_with_update_state_on_a_join(saver: Arc<dyn Checkpointer>) {
    let input = || DocsUpdate::default().query("what is weather in sf".into());
    let docs4 = strings(&["doc1", "doc2", "doc3", "doc4"]);

    // interrupt_after retriever_one: the run pauses after step 3, with every doc but no answer.
    let ran = Arc::default();
    let mut g = fanout(&saver, &ran);
    g.interrupt_after("retriever_one");
    let app = g.compile().unwrap();
    let cfg = RunConfig::thread(thread("g02-after"));
    let out = app.run(input(), &cfg).await.unwrap();
    let pauses: Vec<(&str, PauseKind)> = out.pauses().iter().map(|p| (p.node.as_str(), p.kind)).collect();
    assert_eq!(pauses, [("retriever_one", PauseKind::After)]);
    assert_eq!(out.state().docs, docs4);
    assert_eq!(out.state().answer, "");
    // Four updates before the pause (LangGraph: 5 chunks, the last `{"__interrupt__": ()}`).
    assert_eq!(ran.lock().unwrap().len(), 4);
    // Resuming runs qa only.
    let out = app.resume(&cfg).await.unwrap();
    assert!(!out.is_paused());
    assert_eq!(out.state().answer, "doc1,doc2,doc3,doc4");
    assert_eq!(ran.lock().unwrap()[4..], ["qa"]);

    // interrupt_before qa, then update_state with the writing node inferred.
    let ran = Arc::default();
    let mut g = fanout(&saver, &ran);
    g.interrupt_before("qa");
    let app = g.compile().unwrap();
    let cfg = RunConfig::thread(thread("g02-before"));
    let out = app.run(input(), &cfg).await.unwrap();
    let pauses: Vec<(&str, PauseKind)> = out.pauses().iter().map(|p| (p.node.as_str(), p.kind)).collect();
    assert_eq!(pauses, [("qa", PauseKind::Before)]);
    let st = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(st.next, ["qa"]);
    app.update_state(&cfg, DocsUpdate::default().docs(strings(&["doc5"])), None)
        .await
        .unwrap();
    let st = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(st.values.query, "analyzed: query: what is weather in sf");
    assert_eq!(st.values.docs, strings(&["doc1", "doc2", "doc3", "doc4", "doc5"]));
    assert_eq!(st.next, ["qa"]);
    assert_eq!((st.source, st.step), (Source::Update, 4));
    let out = app.resume(&cfg).await.unwrap();
    assert!(!out.is_paused());
    assert_eq!(out.state().answer, "doc1,doc2,doc3,doc4,doc5");
    assert_eq!(ran.lock().unwrap().iter().filter(|n| *n == "qa").count(), 1);
}

// ---------------------------------------------------------------------------------------------
// G11: when one of two parallel nodes fails, the other's writes are kept and not run again.

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Value {
    #[reducer(add)]
    value: i64,
}

pub async fn g11_resume_after_failure_skips_the_succeeded_sibling(saver: Arc<dyn Checkpointer>) {
    for durability in [Durability::Sync, Durability::Async, Durability::Exit] {
        let one_calls = Arc::new(AtomicUsize::new(0));
        let two_calls = Arc::new(AtomicUsize::new(0));
        let two_fixed = Arc::new(AtomicBool::new(false));
        let mut g = GraphBuilder::<Value>::new();
        let calls = one_calls.clone();
        g.add_node("one", move |_: &Value| {
            let calls = calls.clone();
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(5)).await;
                ValueUpdate::default().value(2)
            }
        });
        let (calls, fixed) = (two_calls.clone(), two_fixed.clone());
        let two = g.add_node("two", move |_: &Value| {
            let (calls, fixed) = (calls.clone(), fixed.clone());
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(10)).await;
                if fixed.load(Ordering::SeqCst) {
                    Ok(ValueUpdate::default().value(3))
                } else {
                    Err::<ValueUpdate, BoxError>("I'm not good".into())
                }
            }
        });
        g.retry(&two, RetryPolicy::new(2).initial_interval(Duration::ZERO).jitter(false));
        g.add_edge(START, "one").add_edge(START, "two");
        g.add_edge("one", END).add_edge("two", END);
        g.set_checkpointer(saver.clone());
        let app = g.compile().unwrap();
        let id = thread("g11");
        let cfg = RunConfig::thread(id.clone()).durability(durability);
        let calls = || (one_calls.load(Ordering::SeqCst), two_calls.load(Ordering::SeqCst));

        let err = app.invoke(ValueUpdate::default().value(1), &cfg).await.unwrap_err();
        assert_eq!(err.node_name(), Some("two"), "{durability:?}");
        assert!(err.to_string().ends_with("I'm not good"), "{err}");
        assert_eq!(calls(), (1, 2), "{durability:?}");

        // The latest state applies the kept writes of `one`; only `two` is next.
        let st = app.get_state(&cfg).await.unwrap().unwrap();
        assert_eq!(st.values.value, 3, "{durability:?}");
        assert_eq!(st.next, ["two"]);
        assert_eq!((st.source, st.step), (Source::Loop, 0), "{durability:?}");
        let tasks: Vec<(&str, bool, Option<&str>)> = st
            .tasks
            .iter()
            .map(|t| (t.name.as_str(), t.done, t.error.as_deref()))
            .collect();
        // LangGraph: [("one", {value: 2}, None), ("two", None, 'ConnectionError("I\'m not good")')].
        assert_eq!(
            tasks,
            [
                ("one", true, None),
                ("two", false, Some("node `two` failed at step 1: I'm not good"))
            ]
        );
        // At that checkpoint's id, the kept writes are not applied.
        let at = cfg.clone().checkpoint_id(st.checkpoint_id.clone());
        let st = app.get_state(&at).await.unwrap().unwrap();
        assert_eq!(st.values.value, 1);
        assert_eq!(st.next, ["one", "two"]);

        // A resume runs only `two`, which fails again.
        let err = app.resume(&cfg).await.unwrap_err();
        assert_eq!(err.node_name(), Some("two"));
        assert_eq!(calls(), (1, 4), "{durability:?}");
        two_fixed.store(true, Ordering::SeqCst);
        let out = app.resume(&cfg).await.unwrap();
        assert_eq!(out.state().value, 6);
        assert_eq!(calls(), (1, 5), "{durability:?}");
        let expected = if durability == Durability::Exit { 2 } else { 3 };
        assert_eq!(checkpoints(&*saver, &id).await, expected, "{durability:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// G12: several interrupts in one node, answered in order; the node runs k + 1 times.

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Key {
    #[reducer(with = concat)]
    my_key: String,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Ask {
    value: u32,
}

pub async fn g12_multiple_interrupts_in_one_node(saver: Arc<dyn Checkpointer>) {
    // LangGraph resumes the first time with `Command(resume="answer 1", update={"my_key": " foofoo "})`;
    // weir's resume takes no update (update_state would start a new step), so the final value
    // lacks " foofoo ": LangGraph's `DE foofoo answer 1 answer 2` is `DEanswer 1 answer 2` here.
    for by_id in [false, true] {
        let runs = Arc::new(AtomicUsize::new(0));
        let mut g = GraphBuilder::<Key>::new();
        let r = runs.clone();
        g.add_node("node", move |_: &Key, ctx: &Context| -> Result<KeyUpdate, BoxError> {
            r.fetch_add(1, Ordering::SeqCst);
            let a1: String = ctx.interrupt(Ask { value: 1 })?;
            let a2: String = ctx.interrupt(Ask { value: 2 })?;
            Ok(KeyUpdate::default().my_key(format!("{a1} {a2}")))
        });
        g.add_edge(START, "node").add_edge("node", END);
        g.set_checkpointer(saver.clone());
        let app = g.compile().unwrap();
        let cfg = RunConfig::thread(thread("g12"));
        let out = app.run(KeyUpdate::default().my_key("DE".into()), &cfg).await.unwrap();
        let first = out.pauses().to_vec();
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].question::<Ask>().unwrap(), Ask { value: 1 });
        let resume = |answer: &str, id: &str| {
            let (app, cfg, answer, id) = (app.clone(), cfg.clone(), answer.to_owned(), id.to_owned());
            async move {
                if by_id {
                    app.resume_task(&id, answer, &cfg).await
                } else {
                    app.resume_with(answer, &cfg).await
                }
            }
        };
        let out = resume("answer 1", &first[0].id).await.unwrap();
        let second = out.pauses().to_vec();
        assert_eq!(second.len(), 1);
        assert_eq!(second[0].question::<Ask>().unwrap(), Ask { value: 2 });
        // The pause keeps its id across re-executions of the node.
        assert_eq!(second[0].id, first[0].id);
        let out = resume("answer 2", &second[0].id).await.unwrap();
        assert!(!out.is_paused());
        assert_eq!(out.state().my_key, "DEanswer 1 answer 2");
        assert_eq!(runs.load(Ordering::SeqCst), 3);
    }
}

// ---------------------------------------------------------------------------------------------
// G13: a node asks again until the answer is valid; the answers so far are replayed each time.

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Age {
    age: u32,
    other: String,
}

pub async fn g13_interrupt_loop(saver: Arc<dyn Checkpointer>) {
    let mut g = GraphBuilder::<Age>::new();
    g.add_node("node", |_: &Age, ctx: &Context| -> Result<AgeUpdate, BoxError> {
        let mut question = "How old are you?";
        for _ in 0..10 {
            let answer: String = ctx.interrupt(question)?;
            match answer.parse::<u32>() {
                Ok(age) if age >= 18 => return Ok(AgeUpdate::default().age(age)),
                _ => question = "invalid response",
            }
        }
        Err("no valid answer".into())
    });
    g.add_edge(START, "node").add_edge("node", END);
    g.set_checkpointer(saver.clone());
    let app = g.compile().unwrap();
    let cfg = RunConfig::thread(thread("g13"));
    let questions =
        |out: &Outcome<Age>| -> Vec<String> { out.pauses().iter().map(|p| p.question().unwrap()).collect() };
    let out = app.run(AgeUpdate::default().other(String::new()), &cfg).await.unwrap();
    assert_eq!(questions(&out), ["How old are you?"]);
    let out = app.resume_with("13", &cfg).await.unwrap();
    assert_eq!(questions(&out), ["invalid response"]);
    let out = app.resume_with("15", &cfg).await.unwrap();
    assert_eq!(questions(&out), ["invalid response"]);
    let out = app.resume_with("19", &cfg).await.unwrap();
    assert!(!out.is_paused());
    assert_eq!(out.state().age, 19);
}

// ---------------------------------------------------------------------------------------------
// G14: two parallel nodes pause; an answer without a task id is refused, answers by id finish.

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Texts {
    text_1: String,
    text_2: String,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Revise {
    text_to_revise: String,
}

pub async fn g14_parallel_interrupts_are_answered_by_id(saver: Arc<dyn Checkpointer>) {
    let mut g = GraphBuilder::<Texts>::new();
    g.add_node(
        "human_node_1",
        |s: &Texts, ctx: &Context| -> Result<TextsUpdate, BoxError> {
            let text = ctx.interrupt(Revise {
                text_to_revise: s.text_1.clone(),
            })?;
            Ok(TextsUpdate::default().text_1(text))
        },
    );
    g.add_node(
        "human_node_2",
        |s: &Texts, ctx: &Context| -> Result<TextsUpdate, BoxError> {
            let text = ctx.interrupt(Revise {
                text_to_revise: s.text_2.clone(),
            })?;
            Ok(TextsUpdate::default().text_2(text))
        },
    );
    g.add_edge(START, "human_node_1").add_edge(START, "human_node_2");
    g.add_edge("human_node_1", END).add_edge("human_node_2", END);
    g.set_checkpointer(saver.clone());
    let app = g.compile().unwrap();
    let cfg = RunConfig::thread(thread("g14"));
    let input = Texts {
        text_1: "original text 1".into(),
        text_2: "original text 2".into(),
    };
    let out = app.run(input, &cfg).await.unwrap();
    assert_eq!(out.pauses().len(), 2);
    let st = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(st.pauses.len(), 2);
    // LangGraph: `Command(resume="x")` with two pending interrupts is a RuntimeError.
    let err = app.resume_with("x", &cfg).await.unwrap_err();
    assert!(err.is_bad_resume(), "{err}");
    // LangGraph answers both in one resume with a map of interrupt ids; so does weir.
    let answers: BTreeMap<String, String> = st
        .pauses
        .iter()
        .map(|p| {
            let q: Revise = p.question().unwrap();
            (p.id.clone(), format!("resume for prompt: {}", q.text_to_revise))
        })
        .collect();
    let out = app.resume_map(answers, &cfg).await.unwrap();
    assert!(!out.is_paused());
    assert_eq!(out.state().text_1, "resume for prompt: original text 1");
    assert_eq!(out.state().text_2, "resume for prompt: original text 2");
}

// ---------------------------------------------------------------------------------------------
// G18: a fork through update_state on a past checkpoint, continued from there.

pub async fn g18_fork_via_update_state_ignores_old_pending_writes(saver: Arc<dyn Checkpointer>) {
    let mut g = GraphBuilder::<Value>::new();
    g.add_node("node_a", |_: &Value| ValueUpdate::default().value(10));
    g.add_node("node_b", |_: &Value| ValueUpdate::default().value(100));
    g.add_edge(START, "node_a")
        .add_edge("node_a", "node_b")
        .add_edge("node_b", END);
    g.set_checkpointer(saver.clone());
    let app = g.compile().unwrap();
    let cfg = RunConfig::thread(thread("g18"));
    assert_eq!(
        app.invoke(ValueUpdate::default().value(1), &cfg).await.unwrap().value,
        111
    );
    let history = app.get_state_history(&cfg, None).await.unwrap();
    let rows: Vec<(Vec<String>, i64, Source)> = history.iter().map(|s| (s.next.clone(), s.step, s.source)).collect();
    assert_eq!(
        rows,
        [
            (vec![], 2, Source::Loop),
            (strings(&["node_b"]), 1, Source::Loop),
            (strings(&["node_a"]), 0, Source::Loop),
            (strings(&["__start__"]), -1, Source::Input),
        ]
    );
    let before_a = history.iter().find(|s| s.next == ["node_a"]).unwrap();
    let at = cfg.clone().checkpoint_id(before_a.checkpoint_id.clone());
    let fork = app
        .update_state(&at, ValueUpdate::default().value(20), Some("node_a"))
        .await
        .unwrap();
    let fork_cfg = cfg.clone().checkpoint_id(fork.clone());
    let st = app.get_state(&fork_cfg).await.unwrap().unwrap();
    assert_eq!(
        (st.values.value, st.next.clone(), st.source, st.step),
        (21, strings(&["node_b"]), Source::Update, 1)
    );
    assert_eq!(st.parent_id.as_deref(), Some(before_a.checkpoint_id.as_str()));
    assert_eq!(app.resume(&fork_cfg).await.unwrap().state().value, 121);
}

// ---------------------------------------------------------------------------------------------
// G20: interrupt after every node, nodes that write nothing; checkpoints per durability.

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Input {
    input: String,
}

pub async fn g20_interrupt_after_every_node_and_checkpoint_counts(saver: Arc<dyn Checkpointer>) {
    for durability in [Durability::Sync, Durability::Async, Durability::Exit] {
        let mut g = GraphBuilder::<Input>::new();
        // LangGraph's `interrupt_after="*"`: weir names each node.
        for n in ["step_1", "step_2", "step_3"] {
            g.add_node(n, |_: &Input| InputUpdate::default());
            g.interrupt_after(n);
        }
        g.add_edge(START, "step_1")
            .add_edge("step_1", "step_2")
            .add_edge("step_2", "step_3")
            .add_edge("step_3", END);
        g.set_checkpointer(saver.clone());
        let app = g.compile().unwrap();
        let id = thread("g20");
        let cfg = RunConfig::thread(id.clone()).durability(durability);
        let mut seen = Vec::new();
        app.run(InputUpdate::default().input("hello world".into()), &cfg)
            .await
            .unwrap();
        for i in 0..3 {
            if i > 0 {
                app.resume(&cfg).await.unwrap();
            }
            let next = app.get_state(&cfg).await.unwrap().unwrap().next;
            let n = app.get_state_history(&cfg, None).await.unwrap().len();
            seen.push((next, n));
        }
        let counts: [usize; 3] = if durability == Durability::Exit {
            [1, 2, 3]
        } else {
            [3, 4, 5]
        };
        let expected = vec![
            (strings(&["step_2"]), counts[0]),
            (strings(&["step_3"]), counts[1]),
            (vec![], counts[2]),
        ];
        assert_eq!(seen, expected, "{durability:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// G21: a resume passes the static breakpoint it stopped at.

// LangGraph's field is `foo`, a name clippy refuses.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Foo {
    text: String,
}

pub async fn g21_resume_passes_a_static_breakpoint(saver: Arc<dyn Checkpointer>) {
    let mut g = GraphBuilder::<Foo>::new();
    g.add_node("node1", |s: &Foo| {
        FooUpdate::default().text(format!("{}|node-1", s.text))
    });
    g.add_node("node2", |s: &Foo| {
        FooUpdate::default().text(format!("{}|node-2", s.text))
    });
    g.add_edge(START, "node1")
        .add_edge("node1", "node2")
        .add_edge("node2", END);
    g.interrupt_before("node1");
    g.set_checkpointer(saver.clone());
    let app = g.compile().unwrap();
    let cfg = RunConfig::thread(thread("g21"));
    let out = app.run(FooUpdate::default().text("abc".into()), &cfg).await.unwrap();
    assert!(out.is_paused());
    assert_eq!(out.state().text, "abc");
    // LangGraph resumes with `Command(resume="node1")` although no node called `interrupt()`;
    // weir's answer goes to a paused `interrupt` call, so a static breakpoint resumes without
    // one (an answer is refused: nothing asked for it). LangGraph's `Command(goto=..)` at the
    // breakpoint is a `RunCommand` with a goto (`tests/command_input.rs`).
    let err = app.resume_with("node1", &cfg).await.unwrap_err();
    assert!(err.is_bad_resume(), "{err}");
    let out = app.resume(&cfg).await.unwrap();
    assert!(!out.is_paused());
    assert_eq!(out.state().text, "abc|node-1|node-2");
}

// ---------------------------------------------------------------------------------------------
// G30: the four checkpoints of START -> x -> y (§4.2).

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct AN {
    a: String,
    #[reducer(add)]
    n: i64,
}

pub async fn g30_checkpoint_layout_after_a_two_node_run(saver: Arc<dyn Checkpointer>) {
    let mut g = GraphBuilder::<AN>::new();
    g.add_node("x", |_: &AN| ANUpdate::default().a("x".into()).n(1));
    g.add_node("y", |_: &AN| ANUpdate::default().n(10));
    g.add_edge(START, "x").add_edge("x", "y").add_edge("y", END);
    g.set_checkpointer(saver.clone());
    let app = g.compile().unwrap();
    let id = thread("g30");
    // Task results kept, as LangGraph keeps every task's writes.
    let cfg = RunConfig::thread(id.clone()).task_results(true);
    let out = app.invoke(ANUpdate::default().a("in".into()), &cfg).await.unwrap();
    assert_eq!((out.a.as_str(), out.n), ("x", 11));

    // weir compares what its records hold of LangGraph's: step, source, each channel's version
    // (LangGraph's integer part), which fields have a stored value, and the next nodes. The
    // internal channels (`__start__`, `branch:to:*`) keep their state in the record's body, never
    // in a blob; and, keeping task results, each step's task keeps its writes against the
    // checkpoint the step started from, as LangGraph's does (the thread's history shows them as
    // the task's result).
    let mut records = saver.list(&id, "", None, None).await.unwrap();
    records.reverse();
    type Row = (i64, Source, BTreeMap<String, u64>, Vec<String>, Vec<String>);
    let mut rows: Vec<Row> = Vec::new();
    let mut pending: Vec<Vec<(String, String)>> = Vec::new();
    for r in &records {
        let versions = r.channels.iter().map(|c| (c.channel.to_string(), c.version)).collect();
        let stored = r
            .channels
            .iter()
            .filter(|c| c.blob.is_some())
            .map(|c| c.channel.to_string())
            .collect();
        let at = cfg.clone().checkpoint_id(&*r.id);
        let next = app.get_state(&at).await.unwrap().unwrap().next;
        rows.push((r.step, r.source, versions, stored, next));
        let loaded = saver.get(&id, "", Some(&r.id)).await.unwrap().unwrap();
        let tasks = loaded.pending_writes.iter();
        pending.push(tasks.map(|w| (w.task_id.clone(), w.channel.clone())).collect());
    }
    let task = |id: &str| vec![(id.to_owned(), "__writes__".to_owned())];
    assert_eq!(
        pending,
        [task("pull:__start__"), task("pull:x"), task("pull:y"), vec![]]
    );
    let v =
        |pairs: &[(&str, u64)]| -> BTreeMap<String, u64> { pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect() };
    let expected: Vec<Row> = vec![
        (
            -1,
            Source::Input,
            v(&[("__start__", 1)]),
            vec![],
            strings(&["__start__"]),
        ),
        (
            0,
            Source::Loop,
            v(&[("__start__", 2), ("a", 2), ("branch:to:x", 2)]),
            strings(&["a"]),
            strings(&["x"]),
        ),
        (
            1,
            Source::Loop,
            v(&[
                ("__start__", 2),
                ("a", 3),
                ("branch:to:x", 3),
                ("branch:to:y", 3),
                ("n", 3),
            ]),
            strings(&["a", "n"]),
            strings(&["y"]),
        ),
        (
            2,
            Source::Loop,
            v(&[
                ("__start__", 2),
                ("a", 3),
                ("branch:to:x", 3),
                ("branch:to:y", 4),
                ("n", 4),
            ]),
            strings(&["a", "n"]),
            vec![],
        ),
    ];
    assert_eq!(rows, expected);
    let writes: Vec<Vec<String>> = records
        .iter()
        .map(|r| r.writes.iter().map(|w| w.to_string()).collect())
        .collect();
    assert_eq!(
        writes,
        [vec![], strings(&["__start__"]), strings(&["x"]), strings(&["y"])]
    );
    // The input checkpoint's snapshot shows the reducer's default (LangGraph: `{n: 0}`).
    let at = cfg.clone().checkpoint_id(&*records[0].id);
    let st = app.get_state(&at).await.unwrap().unwrap();
    assert_eq!((st.values.a.as_str(), st.values.n), ("", 0));
}
