//! Typed state migrations: a thread saved by version 1 of a state, read and resumed by version 3
//! of it (a field renamed, one added with a default, one retyped, one dropped), its checkpoint
//! values, its pending writes and its history all brought to the new shape; a checkpoint of a
//! newer version refused by an older program; a migration that cannot decode a saved value
//! named with its field, thread, checkpoint and versions. On SQLite, as a deployed program
//! would see it across a new release.

use serde_json::json;
use std::sync::Arc;
use weir::checkpoint::{Checkpointer, SqliteSaver};
use weir::prelude::*;
use weir::NodeRef;

/// The state as the first release had it.
mod v1 {
    use weir::State;

    #[derive(State, Clone, Debug, Default)]
    pub struct Chat {
        #[reducer(append)]
        pub notes: Vec<String>,
        pub count: String,
        pub scratch: bool,
    }
}

/// The state three releases later: `notes` renamed `messages` and `tags` added (version 2),
/// `count` made a number and `scratch` dropped (version 3).
mod v3 {
    use weir::State;

    #[derive(State, Clone, Debug, Default)]
    #[state(version = 3)]
    #[migrate(from = 1, rename(from = notes, to = messages), add(tags, default = starting_tags))]
    #[migrate(from = 2, retype(count, with = count_from_text), drop(scratch))]
    pub struct Chat {
        #[reducer(append)]
        pub messages: Vec<String>,
        pub count: usize,
        pub tags: Vec<String>,
    }

    fn starting_tags() -> Vec<String> {
        vec!["migrated".to_owned()]
    }

    fn count_from_text(text: String) -> usize {
        text.len()
    }
}

/// Version 3 with a wrong idea of version 2's `count`: a number, where it was text.
mod v3_wrong {
    use weir::State;

    #[derive(State, Clone, Debug, Default)]
    #[state(version = 3)]
    #[migrate(from = 1, rename(from = notes, to = messages), add(tags))]
    #[migrate(from = 2, retype(count, with = count_from_number), drop(scratch))]
    pub struct Chat {
        #[reducer(append)]
        pub messages: Vec<String>,
        pub count: usize,
        pub tags: Vec<String>,
    }

    fn count_from_number(n: u64) -> usize {
        n as usize
    }
}

/// `START -> first -> {write, ask}`: `write` finishes while `ask` waits for an answer, so the
/// thread's last checkpoint has values and a pending task's writes.
fn first_release(saver: Arc<dyn Checkpointer>) -> CompiledGraph<v1::Chat> {
    use v1::{Chat, ChatUpdate};
    let mut g = GraphBuilder::<Chat>::new();
    g.add_node("first", |_: &Chat| {
        ChatUpdate::default()
            .notes(vec!["hi".into()])
            .count("ab".into())
            .scratch(true)
    });
    g.add_node("write", |_: &Chat| {
        ChatUpdate::default().notes(vec!["hello".into()]).count("abcd".into())
    });
    g.add_node("ask", |_: &Chat, ctx: &Context| -> Result<ChatUpdate, BoxError> {
        let answer: String = ctx.interrupt(json!("anything else?"))?;
        Ok(ChatUpdate::default().notes(vec![answer]))
    });
    g.add_edge(START, "first")
        .add_edge("first", "write")
        .add_edge("first", "ask");
    g.add_edge("write", END).add_edge("ask", END);
    g.set_checkpointer(saver);
    g.compile().unwrap()
}

/// The same graph over version 3 of the state.
fn third_release(saver: Arc<dyn Checkpointer>) -> CompiledGraph<v3::Chat> {
    use v3::{Chat, ChatUpdate};
    let mut g = GraphBuilder::<Chat>::new();
    g.add_node("first", |_: &Chat| {
        ChatUpdate::default().messages(vec!["hi".into()]).count(2)
    });
    g.add_node("write", |_: &Chat| {
        ChatUpdate::default().messages(vec!["hello".into()]).count(4)
    });
    g.add_node("ask", |_: &Chat, ctx: &Context| -> Result<ChatUpdate, BoxError> {
        let answer: String = ctx.interrupt(json!("anything else?"))?;
        Ok(ChatUpdate::default().messages(vec![answer]))
    });
    g.add_edge(START, "first")
        .add_edge("first", "write")
        .add_edge("first", "ask");
    g.add_edge("write", END).add_edge("ask", END);
    g.set_checkpointer(saver);
    g.compile().unwrap()
}

fn sqlite(dir: &tempfile::TempDir) -> Arc<dyn Checkpointer> {
    Arc::new(SqliteSaver::open(dir.path().join("weir.db")).unwrap())
}

/// The body of the thread's last checkpoint, as stored.
async fn last_body(saver: &Arc<dyn Checkpointer>, thread: &str) -> String {
    let loaded = saver.get(thread, "", None).await.unwrap().expect("a checkpoint");
    String::from_utf8(loaded.record.body).unwrap()
}

#[tokio::test]
async fn a_thread_of_version_1_is_read_and_resumed_by_version_3() {
    let dir = tempfile::tempdir().unwrap();
    let saver = sqlite(&dir);
    let cfg = RunConfig::thread("t");
    let out = first_release(saver.clone())
        .run(v1::Chat::default(), &cfg)
        .await
        .unwrap();
    assert_eq!(out.pauses().len(), 1, "`ask` waits for its answer");
    assert!(
        !last_body(&saver, "t").await.contains("\"version\""),
        "version 1 is not written"
    );

    let app = third_release(saver.clone());
    // The saved values in the new shape, with the writes of `write`, which finished before the
    // pause, applied as LangGraph's `get_state` does: migrated too (`notes` is `messages`,
    // "abcd" is 4).
    let st = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(st.values.messages, ["hi", "hello"]);
    assert_eq!(st.values.count, 4, "\"abcd\" retyped by its length");
    assert_eq!(st.values.tags, ["migrated"], "the added field's default");
    assert_eq!(
        st.next,
        ["ask"],
        "`write` finished before the pause: its writes are pending"
    );

    // Resuming applies `write`'s pending writes, then `ask`'s answer.
    let out = app.resume_with("no", &cfg).await.unwrap();
    let state = out.state();
    let mut messages = state.messages.clone();
    messages.sort();
    assert_eq!(messages, ["hello", "hi", "no"]);
    assert_eq!(state.count, 4);
    assert_eq!(state.tags, ["migrated"]);

    // The checkpoint the resumed run saved records version 3, holds every migrated field whole,
    // and reads back without a migration.
    assert!(last_body(&saver, "t").await.contains("\"version\":3"));
    let st = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(st.values.count, 4);
    assert_eq!(st.values.tags, ["migrated"]);
    assert_eq!(st.values.messages.len(), 3);

    // The history mixes both versions: each older checkpoint is migrated as it is read.
    let history = app.get_state_history(&cfg, None).await.unwrap();
    let counts: Vec<usize> = history.iter().map(|s| s.values.count).collect();
    assert!(
        counts.contains(&2),
        "the version-1 checkpoint after `first`: {counts:?}"
    );
    assert!(history.iter().all(|s| s.values.tags == ["migrated"]));
}

#[tokio::test]
async fn a_checkpoint_of_a_newer_version_is_refused_naming_both_versions() {
    let dir = tempfile::tempdir().unwrap();
    let saver = sqlite(&dir);
    let cfg = RunConfig::thread("newer");
    third_release(saver.clone())
        .run(v3::Chat::default(), &cfg)
        .await
        .unwrap();
    let id = saver.get("newer", "", None).await.unwrap().unwrap().record.id;
    let err = first_release(saver.clone())
        .get_state(&cfg)
        .await
        .unwrap_err()
        .to_string();
    for part in [
        "thread `newer`",
        &format!("checkpoint `{id}`"),
        "version 3 of the state `Chat`",
        "is version 1",
    ] {
        assert!(err.contains(part), "{part:?} missing from: {err}");
    }
    // Nothing was lost: the newer program still reads it.
    assert!(third_release(saver).get_state(&cfg).await.unwrap().is_some());
}

#[tokio::test]
async fn a_saved_value_the_migration_cannot_decode_names_its_field_and_step() {
    let dir = tempfile::tempdir().unwrap();
    let saver = sqlite(&dir);
    let cfg = RunConfig::thread("wrong");
    first_release(saver.clone())
        .run(v1::Chat::default(), &cfg)
        .await
        .unwrap();
    let mut g = GraphBuilder::<v3_wrong::Chat>::new();
    g.add_node("first", |_: &v3_wrong::Chat| v3_wrong::ChatUpdate::default());
    g.add_node("write", |_: &v3_wrong::Chat| v3_wrong::ChatUpdate::default());
    g.add_node("ask", |_: &v3_wrong::Chat| v3_wrong::ChatUpdate::default());
    g.add_edge(START, "first")
        .add_edge("first", "write")
        .add_edge("first", "ask");
    g.add_edge("write", END).add_edge("ask", END);
    g.set_checkpointer(saver.clone());
    let app = g.compile().unwrap();
    let err = app.get_state(&cfg).await.unwrap_err().to_string();
    for part in [
        "thread `wrong`",
        "saved by version 1 of the state `Chat`",
        "migrating it from version 2 to 3",
        "field `count`",
        "does not decode",
    ] {
        assert!(err.contains(part), "{part:?} missing from: {err}");
    }
    // The saved thread is untouched: the first release still reads and resumes it.
    let out = first_release(saver).resume_with("fine", &cfg).await.unwrap();
    assert_eq!(out.state().count, "abcd");
}

/// A log kept as a list of lines, saved as deltas (one line a step).
mod log_v1 {
    use weir::State;

    #[derive(State, Clone, Debug, Default)]
    pub struct Log {
        pub title: String,
        #[reducer(append)]
        pub lines: Vec<String>,
        #[reducer(append)]
        pub steps: Vec<u32>,
    }
}

/// Version 2: each line carries its length; `steps` is as it was.
mod log_v2 {
    use serde::{Deserialize, Serialize};
    use weir::State;

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    pub struct Line {
        pub text: String,
        pub len: usize,
    }

    #[derive(State, Clone, Debug, Default)]
    #[state(version = 2)]
    #[migrate(from = 1, retype(lines, with = measured))]
    pub struct Log {
        pub title: String,
        #[reducer(append)]
        pub lines: Vec<Line>,
        #[reducer(append)]
        pub steps: Vec<u32>,
    }

    pub fn measured(lines: Vec<String>) -> Vec<Line> {
        lines.into_iter().map(|text| Line { len: text.len(), text }).collect()
    }
}

/// A node that appends one line and one step number until there are `until` lines.
macro_rules! looping_log {
    ($m:ident, $saver:expr, $until:expr, $line:expr) => {{
        use $m::{Log, LogUpdate};
        let mut g = GraphBuilder::<Log>::new();
        let step = g.add_node("step", |s: &Log| {
            let n = s.steps.len() as u32;
            LogUpdate::default().lines(vec![$line(n)]).steps(vec![n])
        });
        let again = step.id();
        g.add_edge(START, &step);
        g.add_router(
            &step,
            move |s: &Log| {
                if s.steps.len() < $until {
                    Goto::from(again)
                } else {
                    Goto::End
                }
            },
            [NodeRef::from(again), NodeRef::End],
        );
        g.set_checkpointer($saver);
        g.compile().unwrap()
    }};
}

#[tokio::test]
async fn a_list_saved_as_deltas_is_retyped_whole_and_grows_by_deltas_again() {
    let dir = tempfile::tempdir().unwrap();
    let saver = sqlite(&dir);
    let cfg = RunConfig::thread("log").durability(Durability::Sync);
    let old = looping_log!(log_v1, saver.clone(), 5, |n: u32| format!("line {n}"));
    let input = log_v1::Log {
        title: "kept".into(),
        ..Default::default()
    };
    old.run(input, &cfg).await.unwrap();

    // Version 2 goes on for five more steps: `lines` is saved whole once, then as deltas.
    let new = looping_log!(log_v2, saver.clone(), 10, |n: u32| log_v2::Line {
        text: format!("entry {n}"),
        len: 0
    });
    let st = new.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(st.values.lines.len(), 5);
    assert_eq!(st.values.lines[3], log_v2::measured(vec!["line 3".into()])[0]);
    new.run(RunCommand::new().goto(Goto::Named("step".into())), &cfg)
        .await
        .unwrap();

    // Read back cold, by a graph that never saw the thread: the chains decode.
    let cold = looping_log!(log_v2, sqlite(&dir), 10, |_: u32| unreachable!());
    let st = cold.get_state(&cfg).await.unwrap().unwrap();
    let texts: Vec<&str> = st.values.lines.iter().map(|l| l.text.as_str()).collect();
    assert_eq!(
        &texts[..6],
        ["line 0", "line 1", "line 2", "line 3", "line 4", "entry 5"]
    );
    assert_eq!(st.values.lines.len(), 10);
    assert_eq!(st.values.lines[4].len, "line 4".len());
    assert_eq!(st.values.steps, (0..10).collect::<Vec<u32>>());
    // A field no step touched, saved under the input's checkpoint, is still found there.
    assert_eq!(st.values.title, "kept");
    // `lines` was saved whole once in the new shape, then grew by deltas on top of it.
    let loaded = saver.get("log", "", None).await.unwrap().unwrap();
    let chain = |name: &str| loaded.values.iter().find(|(n, _)| n == name).unwrap().1.clone();
    let lines = chain("lines");
    assert!(lines.len() > 1, "deltas after the migrated base: {} links", lines.len());
    let base = String::from_utf8(lines[0].clone()).unwrap();
    assert!(
        base.contains("\"len\":6") && base.contains("line 0"),
        "the base is the migrated list: {base}"
    );
}
