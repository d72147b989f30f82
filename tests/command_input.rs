//! A `RunCommand` as a run's input (LangGraph's `Command(resume=…, update=…, goto=…)` given to
//! `invoke`): the answer, the update and the goto in one call, the update and goto saved as the
//! null task's pending writes before the step runs, so a run stopped before the step completes
//! applies them again, once. The scenarios are LangGraph's (`../shared/langgraph/SEMANTICS.md`,
//! G12, G14, G21), on the memory and SQLite checkpointers (and PostgreSQL, when asked).

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use weir::checkpoint::{Checkpointer, MemorySaver, Source, SqliteSaver};
use weir::prelude::*;
use weir::{Event, StreamMode};

fn concat(value: &mut String, write: String) {
    value.push_str(&write);
}

/// G12's state: `my_key: Annotated[str, operator.add]`.
#[derive(State, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Market {
    #[reducer(with = concat)]
    my_key: String,
    market: String,
}

/// G12: one node asking twice, answered `a1 + " " + a2`.
fn asks_twice(saver: Arc<dyn Checkpointer>) -> CompiledGraph<Market> {
    let mut g = GraphBuilder::<Market>::new();
    g.add_node("node", |_: &Market, ctx: &Context| -> Result<MarketUpdate, BoxError> {
        let a1: String = ctx.interrupt(json!({"value": 1}))?;
        let a2: String = ctx.interrupt(json!({"value": 2}))?;
        Ok(MarketUpdate::default().my_key(format!("{a1} {a2}")))
    });
    g.add_edge(START, "node").add_edge("node", END);
    g.set_checkpointer(saver);
    g.compile().unwrap()
}

fn sqlite(dir: &tempfile::TempDir) -> Arc<dyn Checkpointer> {
    Arc::new(SqliteSaver::open(dir.path().join("weir.db")).unwrap())
}

/// The states of a run's `values` events.
async fn values(app: &CompiledGraph<Market>, input: RunCommand<Market>, cfg: &RunConfig) -> Vec<String> {
    let mut stream = app.stream(input, cfg, StreamMode::VALUES);
    let mut out = Vec::new();
    while let Some(event) = stream.next().await {
        if let Event::Values { state, .. } = event.unwrap() {
            out.push(state.my_key.clone());
        }
    }
    out
}

/// G12, answered by value (`by_id`: by the pause's id): the update applies before the node runs
/// again; the second question has the first's id; the last resume streams the state with the
/// earlier command's update applied (once), then the answers.
async fn g12(saver: Arc<dyn Checkpointer>, by_id: bool) {
    let app = asks_twice(saver);
    let cfg = RunConfig::thread("g12");
    let input = Market {
        my_key: "DE".into(),
        market: "DE".into(),
    };
    let out = app.run(input, &cfg).await.unwrap();
    let first = out.pauses()[0].clone();
    assert_eq!(first.question::<serde_json::Value>().unwrap(), json!({"value": 1}));
    let answer = |command: RunCommand<Market>, a: &str, id: &str| {
        if by_id {
            command.resume_map([(id.to_owned(), a.to_owned())])
        } else {
            command.resume(a)
        }
    };
    let command =
        answer(RunCommand::new(), "answer 1", &first.id).update(MarketUpdate::default().my_key(" foofoo ".into()));
    let out = app.run(command, &cfg).await.unwrap();
    let second = out.pauses()[0].clone();
    assert_eq!(second.question::<serde_json::Value>().unwrap(), json!({"value": 2}));
    assert_eq!(second.id, first.id, "a task's pauses share one id");
    assert_eq!(out.state().my_key, "DE foofoo ");
    let seen = values(&app, answer(RunCommand::new(), "answer 2", &second.id), &cfg).await;
    assert_eq!(seen, ["DE foofoo ", "DE foofoo answer 1 answer 2"]);
    // No checkpoint for the command itself: the input's, the start's, the node's step.
    let history = app.get_state_history(&cfg, None).await.unwrap();
    let sources: Vec<(Source, i64)> = history.iter().map(|h| (h.source, h.step)).collect();
    assert_eq!(sources, [(Source::Loop, 1), (Source::Loop, 0), (Source::Input, -1)]);
}

#[tokio::test]
async fn g12_resume_and_update_in_one_command_keep_the_pause_id_on_memory() {
    g12(Arc::new(MemorySaver::new()), false).await;
    g12(Arc::new(MemorySaver::new()), true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g12_resume_and_update_in_one_command_keep_the_pause_id_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    g12(sqlite(&dir), false).await;
    let dir = tempfile::tempdir().unwrap();
    g12(sqlite(&dir), true).await;
}

#[tokio::test]
async fn g12_from_json_as_a_server_receives_it() {
    let app = asks_twice(Arc::new(MemorySaver::new()));
    let cfg = RunConfig::thread("g12-json");
    app.run(MarketUpdate::default().my_key("DE".into()), &cfg)
        .await
        .unwrap();
    let command = app
        .command_from_json(&json!({"resume": "answer 1", "update": {"my_key": " foofoo "}}))
        .unwrap();
    assert!(app.run(command, &cfg).await.unwrap().is_paused());
    let command = app.command_from_json(&json!({"resume": "answer 2"})).unwrap();
    let out = app.invoke(command, &cfg).await.unwrap();
    assert_eq!(out.my_key, "DE foofoo answer 1 answer 2");
}

#[derive(State, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Texts {
    text_1: String,
    text_2: String,
}

/// G14: two parallel pauses; an answer without an id is refused, a map of ids answers both.
#[tokio::test]
async fn g14_an_id_map_command_answers_two_parallel_pauses() {
    let mut g = GraphBuilder::<Texts>::new();
    g.add_node(
        "human_node_1",
        |s: &Texts, ctx: &Context| -> Result<TextsUpdate, BoxError> {
            let answer: String = ctx.interrupt(json!({"text_to_revise": s.text_1}))?;
            Ok(TextsUpdate::default().text_1(answer))
        },
    );
    g.add_node(
        "human_node_2",
        |s: &Texts, ctx: &Context| -> Result<TextsUpdate, BoxError> {
            let answer: String = ctx.interrupt(json!({"text_to_revise": s.text_2}))?;
            Ok(TextsUpdate::default().text_2(answer))
        },
    );
    g.add_edge(START, "human_node_1").add_edge(START, "human_node_2");
    let app = g.with_checkpointer(MemorySaver::new()).compile().unwrap();
    let cfg = RunConfig::thread("g14");
    let input = Texts {
        text_1: "original text 1".into(),
        text_2: "original text 2".into(),
    };
    let out = app.run(input, &cfg).await.unwrap();
    assert_eq!(out.pauses().len(), 2);
    let err = app.run(RunCommand::new().resume("x"), &cfg).await.unwrap_err();
    assert!(err.is_bad_resume(), "{err}");
    // The server's form: `{"resume": {id: answer, ..}}`.
    let mut map = serde_json::Map::new();
    for p in out.pauses() {
        let q: serde_json::Value = p.question().unwrap();
        map.insert(
            p.id.clone(),
            json!(format!("resume for prompt: {}", q["text_to_revise"].as_str().unwrap())),
        );
    }
    let command = app.command_from_json(&json!({ "resume": map })).unwrap();
    let out = app.invoke(command, &cfg).await.unwrap();
    assert_eq!(out.text_1, "resume for prompt: original text 1");
    assert_eq!(out.text_2, "resume for prompt: original text 2");
}

#[derive(State, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Trail {
    #[reducer(with = concat)]
    trail: String,
}

/// G21: `node1 -> node2`, paused before `node1`.
fn breakpoint_chain() -> CompiledGraph<Trail> {
    let mut g = GraphBuilder::<Trail>::new();
    g.add_node("node1", |_: &Trail| TrailUpdate::default().trail("|node-1".into()));
    g.add_node("node2", |_: &Trail| TrailUpdate::default().trail("|node-2".into()));
    g.add_edge(START, "node1")
        .add_edge("node1", "node2")
        .add_edge("node2", END);
    g.interrupt_before("node1");
    g.with_checkpointer(MemorySaver::new()).compile().unwrap()
}

/// G21: a goto at a static breakpoint adds its node to the step the run stopped before, which
/// runs with the breakpoint passed.
#[tokio::test]
async fn g21_a_goto_at_a_breakpoint_adds_the_node_to_the_pending_step() {
    let app = breakpoint_chain();
    let cfg = RunConfig::thread("g21");
    let out = app.run(TrailUpdate::default().trail("abc".into()), &cfg).await.unwrap();
    assert!(out.is_paused());
    assert_eq!(out.state().trail, "abc");
    let out = app.invoke(RunCommand::new().goto("node2"), &cfg).await.unwrap();
    assert_eq!(out.trail, "abc|node-1|node-2|node-2");

    // The same from JSON, as a list.
    let cfg = RunConfig::thread("g21-json");
    app.run(TrailUpdate::default().trail("abc".into()), &cfg).await.unwrap();
    let command = app.command_from_json(&json!({"goto": ["node2"]})).unwrap();
    assert_eq!(
        app.invoke(command, &cfg).await.unwrap().trail,
        "abc|node-1|node-2|node-2"
    );
}

#[tokio::test]
async fn a_goto_send_from_json_runs_the_node_on_its_input() {
    let mut g = GraphBuilder::<Trail>::new();
    g.add_node("node1", |_: &Trail| TrailUpdate::default().trail("|node-1".into()));
    g.add_send_node("echo", |word: &String| TrailUpdate::default().trail(format!("|{word}")));
    g.add_edge(START, "node1").add_edge("node1", END);
    g.interrupt_before("node1");
    let app = g.with_checkpointer(MemorySaver::new()).compile().unwrap();
    let cfg = RunConfig::thread("send");
    app.run(TrailUpdate::default().trail("abc".into()), &cfg).await.unwrap();
    let command = app
        .command_from_json(&json!({"goto": [{"node": "echo", "input": "hi"}, {"node": "echo", "arg": "ho"}]}))
        .unwrap();
    assert_eq!(app.invoke(command, &cfg).await.unwrap().trail, "abc|node-1|hi|ho");
}

#[derive(State, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Log {
    #[reducer(append)]
    log: Vec<String>,
    count: u32,
}

/// `START -> ask -> END`: `ask` asks "go?" and logs the answer; counts its runs. While `hang`
/// is set, an answered `ask` says so on `started` and never returns (the process "crashes"
/// there: the run is dropped).
#[derive(Clone, Default)]
struct Gate {
    runs: Arc<AtomicUsize>,
    hang: Arc<AtomicBool>,
    started: Arc<tokio::sync::Notify>,
}

fn asks(saver: Arc<dyn Checkpointer>, gate: &Gate) -> CompiledGraph<Log> {
    let mut g = GraphBuilder::<Log>::new();
    let gate = gate.clone();
    g.add_node("ask", move |_: &Log, ctx: &Context| {
        let (gate, ctx) = (gate.clone(), ctx.clone());
        async move {
            gate.runs.fetch_add(1, Ordering::SeqCst);
            let answer: String = ctx.interrupt("go?")?;
            if gate.hang.load(Ordering::SeqCst) {
                gate.started.notify_one();
                std::future::pending::<()>().await;
            }
            Ok::<_, BoxError>(LogUpdate::default().log(vec![format!("asked {answer}")]))
        }
    });
    g.add_edge(START, "ask").add_edge("ask", END);
    g.set_checkpointer(saver);
    g.compile().unwrap()
}

/// An update alone on a paused thread: applied, and the paused node asks again under the same
/// id; the update stays with the checkpoint (in `get_state` too) until the step completes.
#[tokio::test]
async fn an_update_only_command_on_a_paused_thread_applies_and_asks_again() {
    let gate = Gate::default();
    let app = asks(Arc::new(MemorySaver::new()), &gate);
    let cfg = RunConfig::thread("update-only");
    let first = app
        .run(LogUpdate::default().log(vec!["start".into()]), &cfg)
        .await
        .unwrap();
    let command = RunCommand::new().update(LogUpdate::default().log(vec!["edited".into()]).count(7));
    let out = app.run(command, &cfg).await.unwrap();
    assert_eq!(out.pauses()[0].id, first.pauses()[0].id);
    assert_eq!(out.state().log, ["start", "edited"]);
    let st = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(
        (st.values.log.as_slice(), st.values.count),
        (&["start".to_owned(), "edited".to_owned()][..], 7)
    );
    assert_eq!(st.pauses.len(), 1);
    let out = app.invoke(RunCommand::new().resume("yes"), &cfg).await.unwrap();
    assert_eq!(out.log, ["start", "edited", "asked yes"]);
    assert_eq!(gate.runs.load(Ordering::SeqCst), 3);
}

/// The run "crashes" (is dropped) after the command's writes were saved, mid-step; the thread,
/// read again through a new checkpointer on the same storage, applies them once when it goes on,
/// with a later command's on the same checkpoint after them.
async fn crash_between_saving_and_finishing(
    open: impl Fn() -> Arc<dyn Checkpointer>,
    thread: &str,
    durability: Durability,
) {
    let gate = Gate::default();
    let cfg = RunConfig::thread(thread).durability(durability);
    {
        let app = asks(open(), &gate);
        app.run(LogUpdate::default().log(vec!["start".into()]), &cfg)
            .await
            .unwrap();
        gate.hang.store(true, Ordering::SeqCst);
        let command = RunCommand::new()
            .resume("yes")
            .update(LogUpdate::default().log(vec!["edited".into()]));
        let run = tokio::spawn({
            let (app, cfg) = (app.clone(), cfg.clone());
            async move { app.run(command, &cfg).await }
        });
        gate.started.notified().await;
        run.abort();
        assert!(run.await.unwrap_err().is_cancelled());
    }
    gate.hang.store(false, Ordering::SeqCst);
    let app = asks(open(), &gate);
    // The saved update shows in the state, not applied twice by the read.
    let st = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(st.values.log, ["start", "edited"]);
    assert_eq!(st.next, ["ask"]);
    let command = RunCommand::new()
        .resume("again")
        .update(LogUpdate::default().log(vec!["second".into()]));
    let out = app.invoke(command, &cfg).await.unwrap();
    assert_eq!(out.log, ["start", "edited", "second", "asked again"]);
    // The step completed: its checkpoint holds the writes, and nothing is pending on it.
    let last = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!((last.source, last.step), (Source::Loop, 1));
    assert_eq!(last.values.log, out.log);
    assert!(last.next.is_empty());
    let out = app.invoke(LogUpdate::default().log(vec!["new".into()]), &cfg).await;
    assert!(out.unwrap_err().is_paused());
    let st = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(st.values.log, ["start", "edited", "second", "asked again", "new"]);
}

#[tokio::test]
async fn a_command_saved_before_a_crash_is_applied_once_on_memory() {
    let saver: Arc<dyn Checkpointer> = Arc::new(MemorySaver::new());
    crash_between_saving_and_finishing(|| saver.clone(), "crash-memory", Durability::Async).await;
    // Under exit durability too: the command's writes are put before the step runs.
    crash_between_saving_and_finishing(|| saver.clone(), "crash-memory-exit", Durability::Exit).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_saved_before_a_crash_is_applied_once_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    crash_between_saving_and_finishing(|| sqlite(&dir), "crash-sqlite", Durability::Sync).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored"]
async fn a_command_saved_before_a_crash_is_applied_once_on_postgres() {
    let schema = weir_test_support::Schema::fresh("weir_command");
    let thread = format!("crash-postgres-{}", weir::checkpoint::new_checkpoint_id());
    // The run before the crash and the thread read again after it: two connections.
    let mut savers: Vec<Arc<dyn Checkpointer>> = Vec::new();
    for _ in 0..2 {
        let saver = weir::checkpoint::PostgresSaver::connect_with_schema(&schema.url, &schema.name).await;
        savers.push(Arc::new(saver.unwrap()));
    }
    let opened = AtomicUsize::new(0);
    let open = || savers[opened.fetch_add(1, Ordering::SeqCst).min(1)].clone();
    crash_between_saving_and_finishing(open, &thread, Durability::Async).await;
}

/// A node that fails after a command's update: the update stays with the checkpoint, and the
/// next resume applies it once, before the node runs again.
#[tokio::test]
async fn a_failed_step_keeps_the_command_update_for_the_next_resume() {
    let left = Arc::new(AtomicUsize::new(2));
    let mut g = GraphBuilder::<Log>::new();
    g.add_node("flaky", move |s: &Log| -> Result<LogUpdate, std::io::Error> {
        if left.load(Ordering::SeqCst) > 0 {
            left.fetch_sub(1, Ordering::SeqCst);
            return Err(std::io::Error::other("down"));
        }
        Ok(LogUpdate::default().log(vec![format!("flaky saw {}", s.log.len())]))
    });
    g.add_edge(START, "flaky").add_edge("flaky", END);
    let app = g.with_checkpointer(MemorySaver::new()).compile().unwrap();
    let cfg = RunConfig::thread("failed");
    let err = app
        .run(LogUpdate::default().log(vec!["start".into()]), &cfg)
        .await
        .unwrap_err();
    assert_eq!(err.node_name(), Some("flaky"));
    let command = RunCommand::new().update(LogUpdate::default().log(vec!["fix".into()]));
    let err = app.run(command, &cfg).await.unwrap_err();
    assert_eq!(err.node_name(), Some("flaky"));
    let out = app.resume(&cfg).await.unwrap();
    assert_eq!(out.state().log, ["start", "fix", "flaky saw 2"]);
}

#[tokio::test]
async fn a_command_with_nothing_in_it_or_nothing_to_go_on_from_is_refused() {
    let gate = Gate::default();
    let app = asks(Arc::new(MemorySaver::new()), &gate);
    let cfg = RunConfig::thread("refused");
    // A thread that never ran: nothing to answer, nothing to update.
    let err = app.run(RunCommand::new().resume("yes"), &cfg).await.unwrap_err();
    assert!(err.is_bad_resume(), "{err}");
    let err = app
        .run(RunCommand::new().update(LogUpdate::default().count(1)), &cfg)
        .await
        .unwrap_err();
    assert!(err.is_bad_resume(), "{err}");
    app.run(LogUpdate::default(), &cfg).await.unwrap();
    let err = app.run(RunCommand::new(), &cfg).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "the command has no `resume`, no `update` that writes a field and no `goto`: nothing to run"
    );
    let err = app
        .run(RunCommand::new().update(LogUpdate::default()), &cfg)
        .await
        .unwrap_err();
    assert!(err.to_string().starts_with("the command has no `resume`"), "{err}");
    let err = app.run(RunCommand::new().goto("nobody"), &cfg).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "the command's `goto` names unknown node `nobody`; the nodes are `ask`"
    );
    // Nothing was saved or run by the refused commands; a done thread has nothing to answer.
    app.invoke(RunCommand::new().resume("yes"), &cfg).await.unwrap();
    let err = app.run(RunCommand::new().resume("again"), &cfg).await.unwrap_err();
    assert!(err.is_bad_resume(), "{err}");
    assert_eq!(
        err.to_string(),
        "thread `refused` has no paused node to give an answer to"
    );
    assert_eq!(gate.runs.load(Ordering::SeqCst), 2);
}

/// Every JSON mistake is refused with the path at fault.
#[tokio::test]
async fn a_json_command_names_the_path_at_fault() {
    let app = asks(Arc::new(MemorySaver::new()), &Gate::default());
    let err = |v: serde_json::Value| app.command_from_json(&v).unwrap_err().to_string();
    assert_eq!(
        err(json!({"update": {"count": "x"}})),
        "`command.update.count`: invalid type: string \"x\", expected u32"
    );
    assert_eq!(
        err(json!({"update": {"cnt": 1}})),
        "`command.update.cnt`: the state has no field `cnt`; its fields are `log`, `count`"
    );
    assert_eq!(
        err(json!({"update": [["count", 1], ["log"]]})),
        "`command.update[1]`: expected a `[field, value]` pair, found a list"
    );
    assert_eq!(
        err(json!({"update": 3})),
        "`command.update`: expected an object of fields, found a number"
    );
    assert_eq!(
        err(json!({"goto": ["ask", "serch"]})),
        "`command.goto[1]`: unknown node `serch`; the nodes are `ask`"
    );
    assert_eq!(
        err(json!({"goto": {"node": "ask", "input": 1}})),
        "`command.goto`: node `ask` takes no `Send`s: add it with `add_send_node`"
    );
    assert_eq!(
        err(json!({"goto": [{"nod": "ask"}]})),
        "`command.goto[0].nod`: unknown key; a `Send` has `node` and `input`"
    );
    assert_eq!(
        err(json!({"goto": 3})),
        "`command.goto`: expected a node's name or a `Send` (`{\"node\": …, \"input\": …}`), found a number"
    );
    assert_eq!(
        err(json!({"graph": "__parent__"})),
        "`command.graph`: there is no parent graph: a run's command applies to its own graph"
    );
    assert_eq!(
        err(json!({"resum": null})),
        "`command.resum`: unknown key; a command has `resume`, `update` and `goto`"
    );
    assert_eq!(err(json!([1])), "`command`: expected an object, found a list");

    // The good forms: pairs (two writes of a list field), an overwrite, nulls for absent keys.
    let command = app
        .command_from_json(
            &json!({"update": [["log", ["a"]], ["log", ["b"]], ["count", 2]], "goto": null, "resume": null}),
        )
        .unwrap();
    let update = command.update.unwrap();
    assert_eq!(
        format!("{update:?}"),
        "LogUpdate { log: Many([Reduce([\"a\"]), Reduce([\"b\"])]), count: One(2) }"
    );
    assert!(command.resume.is_none() && command.goto.is_empty());
    let command = app
        .command_from_json(&json!({"update": {"log": {"__overwrite__": ["x"]}}}))
        .unwrap();
    assert!(format!("{:?}", command.update.unwrap()).contains("Overwrite"));
}
