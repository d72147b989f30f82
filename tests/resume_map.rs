//! Answering several pauses in one resume (LangGraph's `Command(resume={id: value, ..})`): each
//! answer goes to the task whose pause has that id, and the step runs again once.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use weir::checkpoint::{MemorySaver, Source};
use weir::prelude::*;
use weir::{NodeRef, Paused};

#[derive(State, Clone, Debug, Default, PartialEq)]
struct Texts {
    text_a: String,
    text_b: String,
}

/// Runs of each node, counted.
#[derive(Clone, Default)]
struct Runs(Arc<[AtomicUsize; 2]>);

impl Runs {
    fn get(&self) -> [usize; 2] {
        [0, 1].map(|i| self.0[i].load(Ordering::SeqCst))
    }
}

/// `START -> {ask_a, ask_b} -> END`, each asking for its text.
fn two_askers(runs: &Runs) -> CompiledGraph<Texts> {
    let mut g = GraphBuilder::<Texts>::new();
    let r = runs.clone();
    g.add_node(
        "ask_a",
        move |_: &Texts, ctx: &Context| -> Result<TextsUpdate, BoxError> {
            r.0[0].fetch_add(1, Ordering::SeqCst);
            let text: String = ctx.interrupt("text a?")?;
            Ok(TextsUpdate::default().text_a(text))
        },
    );
    let r = runs.clone();
    g.add_node(
        "ask_b",
        move |_: &Texts, ctx: &Context| -> Result<TextsUpdate, BoxError> {
            if r.0[1].fetch_add(1, Ordering::SeqCst) > 0 {
                // Answered, `ask_b` is the slower of the two: `ask_a` finishes first.
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            let text: String = ctx.interrupt("text b?")?;
            Ok(TextsUpdate::default().text_b(text))
        },
    );
    g.add_edge(START, "ask_a").add_edge(START, "ask_b");
    g.add_edge("ask_a", END).add_edge("ask_b", END);
    g.with_checkpointer(MemorySaver::new()).compile().unwrap()
}

/// The pauses' ids by question.
fn ids(pauses: &[Paused]) -> BTreeMap<String, String> {
    pauses
        .iter()
        .map(|p| (p.question::<String>().unwrap(), p.id.clone()))
        .collect()
}

#[tokio::test]
async fn two_parallel_pauses_answered_in_one_resume_run_their_step_once_more() {
    let runs = Runs::default();
    let app = two_askers(&runs);
    let cfg = RunConfig::thread("t");
    let out = app.run(Texts::default(), &cfg).await.unwrap();
    let asked = ids(out.pauses());
    assert_eq!(asked.len(), 2);
    // The ids are the ones `get_state` shows, on the pauses and on their tasks.
    let st = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(ids(&st.pauses), asked);
    let task_pauses: Vec<Paused> = st.tasks.iter().filter_map(|t| t.pause.clone()).collect();
    assert_eq!(ids(&task_pauses), asked);
    assert_eq!(
        st.tasks.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
        ["pull:ask_a", "pull:ask_b"]
    );

    let answers = [
        (asked["text a?"].clone(), "A".to_owned()),
        (asked["text b?"].clone(), "B".to_owned()),
    ];
    let out = app.resume_map(answers, &cfg).await.unwrap();
    assert!(!out.is_paused());
    assert_eq!(
        *out.state(),
        Texts {
            text_a: "A".into(),
            text_b: "B".into()
        }
    );
    assert_eq!(runs.get(), [2, 2]);
    // One step after the resume: one more checkpoint, from the loop.
    let history = app.get_state_history(&cfg, None).await.unwrap();
    let sources: Vec<Source> = history.iter().map(|h| h.source).collect();
    assert_eq!(sources, [Source::Loop, Source::Loop, Source::Input]);
}

#[tokio::test]
async fn an_unknown_id_is_refused_by_name_and_the_questions_stay() {
    let runs = Runs::default();
    let app = two_askers(&runs);
    let cfg = RunConfig::thread("t");
    let asked = ids(app.run(Texts::default(), &cfg).await.unwrap().pauses());
    let answers = [(asked["text a?"].as_str(), "A"), ("pull:nobody", "B")];
    let err = app.resume_map(answers, &cfg).await.unwrap_err();
    assert!(err.is_bad_resume(), "{err}");
    assert_eq!(
        err.to_string(),
        "thread `t` has no paused task `pull:nobody` to give an answer to"
    );
    let twice = [("pull:ask_a", "A"), ("pull:ask_a", "again")];
    let err = app.resume_map(twice, &cfg).await.unwrap_err();
    assert_eq!(err.to_string(), "the answers name the paused task `pull:ask_a` twice");
    // Nothing ran, and both still wait.
    assert_eq!(runs.get(), [1, 1]);
    assert_eq!(ids(&app.get_state(&cfg).await.unwrap().unwrap().pauses), asked);
}

#[tokio::test]
async fn a_pause_left_out_of_the_map_asks_again_and_the_answered_task_is_kept() {
    let runs = Runs::default();
    let app = two_askers(&runs);
    let cfg = RunConfig::thread("t");
    let asked = ids(app.run(Texts::default(), &cfg).await.unwrap().pauses());
    let out = app.resume_map([(&asked["text a?"], "A")], &cfg).await.unwrap();
    assert_eq!(
        ids(out.pauses()),
        BTreeMap::from([("text b?".into(), asked["text b?"].clone())])
    );
    let st = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(st.values.text_a, "A");
    assert_eq!(st.next, ["ask_b"]);
    let out = app.resume_map([(&asked["text b?"], "B")], &cfg).await.unwrap();
    assert_eq!(out.state().text_b, "B");
    assert_eq!(out.state().text_a, "A");
    // `ask_a` did not run again for `ask_b`'s answer.
    assert_eq!(runs.get(), [2, 3]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_of_the_wrong_type_in_a_map_keeps_that_question_open() {
    let runs = Runs::default();
    let app = two_askers(&runs);
    let cfg = RunConfig::thread("t");
    let asked = ids(app.run(Texts::default(), &cfg).await.unwrap().pauses());
    let answers = [
        (asked["text a?"].clone(), serde_json::json!("A")),
        (asked["text b?"].clone(), serde_json::json!(42)),
    ];
    let err = app.resume_map(answers, &cfg).await.unwrap_err();
    assert!(err.is_bad_resume(), "{err}");
    assert_eq!(err.node_name(), Some("ask_b"));
    let st = app.get_state(&cfg).await.unwrap().unwrap();
    // `ask_a` finished before `ask_b` failed: its writes are kept, and only `ask_b` still asks.
    assert_eq!(
        ids(&st.pauses),
        BTreeMap::from([("text b?".into(), asked["text b?"].clone())])
    );
    assert_eq!(st.values.text_a, "A");
    let out = app.resume_map([(&asked["text b?"], "B")], &cfg).await.unwrap();
    assert_eq!(runs.get(), [2, 3]);
    assert!(!out.is_paused());
    assert_eq!(
        *out.state(),
        Texts {
            text_a: "A".into(),
            text_b: "B".into()
        }
    );
}

#[tokio::test]
async fn one_task_asking_twice_keeps_its_id_and_takes_each_answer_from_a_map() {
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let mut g = GraphBuilder::<Texts>::new();
    g.add_node(
        "ask",
        move |_: &Texts, ctx: &Context| -> Result<TextsUpdate, BoxError> {
            r.fetch_add(1, Ordering::SeqCst);
            let a: String = ctx.interrupt("first?")?;
            let b: String = ctx.interrupt("second?")?;
            Ok(TextsUpdate::default().text_a(a).text_b(b))
        },
    );
    g.add_edge(START, "ask").add_edge("ask", END);
    let app = g.with_checkpointer(MemorySaver::new()).compile().unwrap();
    let cfg = RunConfig::thread("t");
    let first = app.run(Texts::default(), &cfg).await.unwrap().pauses().to_vec();
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].question::<String>().unwrap(), "first?");
    let second = app
        .resume_map([(&first[0].id, "1")], &cfg)
        .await
        .unwrap()
        .pauses()
        .to_vec();
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].question::<String>().unwrap(), "second?");
    assert_eq!(second[0].id, first[0].id);
    let out = app.resume_map([(&second[0].id, "2")], &cfg).await.unwrap();
    assert_eq!(
        *out.state(),
        Texts {
            text_a: "1".into(),
            text_b: "2".into()
        }
    );
    assert_eq!(runs.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn an_empty_map_is_a_plain_resume() {
    let runs = Runs::default();
    let app = two_askers(&runs);
    let cfg = RunConfig::thread("t");
    app.run(Texts::default(), &cfg).await.unwrap();
    let out = app.resume_map(Vec::<(String, String)>::new(), &cfg).await.unwrap();
    assert_eq!(out.pauses().len(), 2);
    assert_eq!(runs.get(), [2, 2]);
}

#[tokio::test]
async fn pause_ids_are_32_hex_digits_new_in_each_step_and_a_stale_one_is_refused() {
    // `ask` asks each time it runs, and runs twice, in two steps.
    let mut g = GraphBuilder::<Texts>::new();
    let ask = g.add_node("ask", |s: &Texts, ctx: &Context| -> Result<TextsUpdate, BoxError> {
        let text: String = ctx.interrupt(format!("after `{}`?", s.text_a))?;
        Ok(TextsUpdate::default().text_a(format!("{}{text}", s.text_a)))
    });
    let again = ask.id();
    g.add_edge(START, "ask");
    g.add_router(
        "ask",
        move |s: &Texts| (s.text_a.len() < 2).then_some(again),
        [NodeRef::from(&ask), END],
    );
    let app = g.with_checkpointer(MemorySaver::new()).compile().unwrap();
    let cfg = RunConfig::thread("t");
    let first = app.run(Texts::default(), &cfg).await.unwrap().pauses()[0].id.clone();
    assert_eq!(first.len(), 32);
    assert!(
        first.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()),
        "{first}"
    );
    // The same step, read back: the same id.
    assert_eq!(app.get_state(&cfg).await.unwrap().unwrap().pauses[0].id, first);
    let second = app.resume_map([(&first, "x")], &cfg).await.unwrap().pauses()[0]
        .id
        .clone();
    assert_ne!(second, first);
    let err = app.resume_map([(&first, "y")], &cfg).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("thread `t` has no paused task `{first}` to give an answer to")
    );
    // The task's own id answers it too.
    let out = app.resume_task("pull:ask", "y", &cfg).await.unwrap();
    assert_eq!(out.state().text_a, "xy");
}

#[tokio::test]
async fn one_answer_for_several_pauses_is_refused_listing_their_ids() {
    let runs = Runs::default();
    let app = two_askers(&runs);
    let cfg = RunConfig::thread("t");
    let out = app.run(Texts::default(), &cfg).await.unwrap();
    let ids: Vec<String> = out.pauses().iter().map(|p| format!("`{}`", p.id)).collect();
    let err = app.resume_with("both?", &cfg).await.unwrap_err();
    assert!(err.is_bad_resume(), "{err}");
    assert_eq!(
        err.to_string(),
        format!(
            "thread `t` has several paused tasks ({}): answer each by its id",
            ids.join(", ")
        )
    );
}
