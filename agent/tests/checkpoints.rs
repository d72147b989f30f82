//! A conversation's checkpoints, on every saver (`MemorySaver`, `SqliteSaver`, and `PostgresSaver`
//! with the `postgres` feature, ignored unless asked for with `--include-ignored` and
//! `WEIR_POSTGRES_URL`): `add_messages` reports whether a write only appended, so a checkpoint
//! stores the messages appended since the last one as a delta, and the whole list after a
//! replacement by id, a `RemoveMessage` or a remove-all. Every checkpoint must read back exactly
//! what a state whose reducer says nothing (saved whole each time) reads back for the same
//! thread: through history, resumes and forks from the middle of a delta chain, `update_state`,
//! a prune that keeps a chain whose base it deletes, and two graphs taking turns on one thread
//! (a run decodes only what its checkpoint added to the chains it last read). Same input, same
//! checkpoints.

use serde::{Deserialize, Serialize};
use std::sync::Arc;
use weir::checkpoint::{Checkpointer, MemorySaver, Retention, Source, SqliteSaver};
use weir::State as _;
use weir_agent::message::{add_messages, Message, Messages, MessagesState, MessagesStateUpdate, RemoveMessage};
use weir_runtime::{CompiledGraph, GraphBuilder, RunConfig, StateSnapshot, END, START};

/// `add_messages` behind a reducer that says nothing of what it did: its field is stored whole
/// at every change, the oracle the delta chains are checked against.
fn add_whole(list: &mut Vec<Message>, write: Messages) {
    let _ = add_messages(list, write);
}

/// [`MessagesState`] saved whole.
#[derive(weir::State, Clone, Debug, Default, Serialize, Deserialize)]
struct Whole {
    #[reducer(with = add_whole, update = Messages)]
    messages: Vec<Message>,
}

/// What the tests need of both states.
trait Chat: weir::State {
    fn messages(&self) -> &[Message];
    fn write(write: Messages) -> Self::Update;
}

impl Chat for MessagesState {
    fn messages(&self) -> &[Message] {
        &self.messages
    }
    fn write(write: Messages) -> Self::Update {
        MessagesStateUpdate::default().messages(write)
    }
}

impl Chat for Whole {
    fn messages(&self) -> &[Message] {
        &self.messages
    }
    fn write(write: Messages) -> Self::Update {
        WholeUpdate::default().messages(write)
    }
}

/// The id of the last message, for the ids of the messages the nodes add (unique on a thread).
fn last_id<S: Chat>(s: &S) -> String {
    s.messages().last().and_then(Message::id).unwrap_or("none").to_owned()
}

/// `think` then `answer`, each appending one AI message whose id follows from the last one.
fn graph<S: Chat>(saver: &Arc<dyn Checkpointer>) -> CompiledGraph<S> {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("think", |s: &S| {
        let last = last_id(s);
        S::write(
            Message::ai(format!("thinking about {last} and what came before it"))
                .with_id(format!("t-{last}"))
                .into(),
        )
    });
    g.add_node("answer", |s: &S| {
        let last = last_id(s);
        S::write(
            Message::ai(format!("the answer to {last}, {} messages in", s.messages().len()))
                .with_id(format!("a-{last}"))
                .into(),
        )
    });
    g.add_edge(START, "think")
        .add_edge("think", "answer")
        .add_edge("answer", END);
    g.set_checkpointer(saver.clone());
    g.compile().unwrap()
}

fn human(n: usize) -> Message {
    Message::human(format!("question {n}: what about it?")).with_id(format!("h{n}"))
}

/// The turns of the thread: appends, then a replacement by id, a removal, a remove-all, each
/// followed by appends.
fn script() -> Vec<Messages> {
    let mut turns: Vec<Messages> = (0..6).map(|n| human(n).into()).collect();
    turns.push(Messages::new().put(Message::human("question 1, asked again").with_id("h1")));
    turns.push(human(6).into());
    turns.push(Messages::new().remove("t-h2"));
    turns.push(human(7).into());
    turns.push(human(8).into());
    let summary = "a summary of the conversation so far, which the remove-all replaced: ".repeat(4);
    turns.push(
        Messages::from(RemoveMessage::all())
            .put(Message::system(summary).with_id("summary"))
            .put(human(9)),
    );
    turns.extend((10..16).map(|n| Messages::from(human(n))));
    turns
}

/// Runs `turns` on `thread`, one invoke each.
async fn run<S: Chat>(app: &CompiledGraph<S>, thread: &str, turns: Vec<Messages>) {
    let cfg = RunConfig::thread(thread);
    for turn in turns {
        app.invoke(S::write(turn), &cfg).await.unwrap();
    }
}

/// Deletes the threads a test made (a PostgreSQL database outlives the test).
async fn delete(saver: &Arc<dyn Checkpointer>, threads: &[&str]) {
    for t in threads {
        saver.delete_thread(t).await.unwrap();
    }
}

/// A unique thread id.
fn thread(name: &str) -> String {
    format!("{name}-{}", &weir::checkpoint::new_checkpoint_id()[12..])
}

/// A checkpoint as the tests compare it: where it stands and the messages it holds.
#[derive(Debug, PartialEq)]
struct Seen {
    source: Source,
    step: i64,
    next: Vec<String>,
    messages: Vec<Message>,
}

fn seen<S: Chat>(s: &StateSnapshot<S>) -> Seen {
    Seen {
        source: s.source,
        step: s.step,
        next: s.next.clone(),
        messages: s.values.messages().to_vec(),
    }
}

async fn history<S: Chat>(app: &CompiledGraph<S>, thread: &str) -> Vec<StateSnapshot<S>> {
    app.get_state_history(&RunConfig::thread(thread), None).await.unwrap()
}

/// The chain of blobs that rebuilds the `messages` of checkpoint `id`: its length (1 for a
/// whole value) and its bytes.
async fn chain(saver: &Arc<dyn Checkpointer>, thread: &str, id: &str) -> Vec<Vec<u8>> {
    let loaded = saver.get(thread, "", Some(id)).await.unwrap().unwrap();
    loaded
        .values
        .into_iter()
        .find(|(c, _)| c == "messages")
        .map(|(_, chain)| chain)
        .unwrap_or_default()
}

/// Both states' threads after the same turns: every checkpoint reads back the same.
async fn same_history(saver: &Arc<dyn Checkpointer>, deltas: &str, whole: &str) -> Vec<StateSnapshot<MessagesState>> {
    let d = history(&graph::<MessagesState>(saver), deltas).await;
    let w = history(&graph::<Whole>(saver), whole).await;
    assert_eq!(
        d.iter().map(seen).collect::<Vec<_>>(),
        w.iter().map(seen).collect::<Vec<_>>()
    );
    d
}

/// Every checkpoint of a thread with the `add_messages` reducer reads back what the whole-saved
/// oracle does; one whose messages are not its parent's plus new ones is stored whole, and the
/// appends after it chain onto it; the whole thread stores fewer bytes than the oracle's.
async fn appends_chain_and_rewrites_restart_the_chain(saver: Arc<dyn Checkpointer>) {
    let (deltas, whole) = (thread("deltas"), thread("whole"));
    run(&graph::<MessagesState>(&saver), &deltas, script()).await;
    run(&graph::<Whole>(&saver), &whole, script()).await;
    let history = same_history(&saver, &deltas, &whole).await;
    assert_eq!(history.len(), script().len() * 4);

    let (mut chained, mut rewrites) = (0, 0);
    for pair in history.windows(2) {
        let (now, parent) = (&pair[0], &pair[1]);
        let links = chain(&saver, &deltas, &now.checkpoint_id).await.len();
        let (old, new) = (&parent.values.messages, &now.values.messages);
        if new.len() < old.len() || new[..old.len()] != old[..] {
            rewrites += 1;
            assert_eq!(
                links, 1,
                "checkpoint {} rewrote the list: stored whole",
                now.checkpoint_id
            );
            // The append that follows it is a delta onto it.
            let after = history
                .iter()
                .rposition(|s| s.parent_id.as_deref() == Some(&now.checkpoint_id));
            let after = &history[after.expect("a checkpoint after each rewrite")];
            assert_eq!(chain(&saver, &deltas, &after.checkpoint_id).await.len(), 2);
        } else if links > 1 {
            chained += 1;
        }
    }
    assert_eq!(rewrites, 3, "a replacement, a removal, a remove-all");
    assert!(
        chained > history.len() / 2,
        "{chained} of {} checkpoints are deltas",
        history.len()
    );
    let (d, w) = (
        saver.usage(&deltas).await.unwrap().blob_bytes,
        saver.usage(&whole).await.unwrap().blob_bytes,
    );
    assert!(d * 2 < w, "deltas store {d} bytes, whole values {w}");
    delete(&saver, &[&deltas, &whole]).await;
}

/// A resume from a checkpoint in the middle of a delta chain forks there, and `update_state` at
/// another forks again: both branches go on appending onto the chain they started from, and
/// read back what the oracle's do.
async fn forks_from_the_middle_of_a_chain_read_back_exactly(saver: Arc<dyn Checkpointer>) {
    let (deltas, whole) = (thread("fork-deltas"), thread("fork-whole"));
    let (dapp, wapp) = (graph::<MessagesState>(&saver), graph::<Whole>(&saver));
    run(&dapp, &deltas, script()).await;
    run(&wapp, &whole, script()).await;
    let (d, w) = (history(&dapp, &deltas).await, history(&wapp, &whole).await);
    // The checkpoints in the middle of a chain of at least three links, `answer` next, whose
    // chain has room for the message `update_state` writes below (a chain takes deltas up to the
    // size of its base, then a whole value starts the next).
    let edit = || Messages::from(Message::ai("an answer written by hand").with_id("by-hand"));
    let by_hand = serde_json::to_vec(&[Message::ai("an answer written by hand").with_id("by-hand")]).unwrap();
    let mut middle = Vec::new();
    for (k, s) in d.iter().enumerate() {
        let links = chain(&saver, &deltas, &s.checkpoint_id).await;
        if s.next != ["answer"] || links.len() < 3 {
            continue;
        }
        let room = links[0].len().saturating_sub(links[1..].iter().map(Vec::len).sum());
        if room >= by_hand.len() {
            middle.push(k);
        }
    }
    assert!(
        middle.len() >= 2,
        "chains long enough to fork in the middle of: {middle:?}"
    );
    let (k, j) = (middle[0], middle[middle.len() - 1]);

    // A resume from checkpoint k: `answer` runs again there.
    dapp.resume(&RunConfig::thread(&deltas).checkpoint_id(d[k].checkpoint_id.clone()))
        .await
        .unwrap();
    wapp.resume(&RunConfig::thread(&whole).checkpoint_id(w[k].checkpoint_id.clone()))
        .await
        .unwrap();
    // `update_state` at checkpoint j, as `answer`: the thread's head forks there.
    dapp.update_state(
        &RunConfig::thread(&deltas).checkpoint_id(d[j].checkpoint_id.clone()),
        MessagesState::write(edit()),
        Some("answer"),
    )
    .await
    .unwrap();
    wapp.update_state(
        &RunConfig::thread(&whole).checkpoint_id(w[j].checkpoint_id.clone()),
        Whole::write(edit()),
        Some("answer"),
    )
    .await
    .unwrap();
    // Two more turns on the fork.
    run(&dapp, &deltas, vec![human(20).into(), human(21).into()]).await;
    run(&wapp, &whole, vec![human(20).into(), human(21).into()]).await;
    let after = same_history(&saver, &deltas, &whole).await;
    let head = &after[0].values.messages;
    let ids: Vec<&str> = head.iter().rev().take(4).filter_map(Message::id).collect();
    assert_eq!(ids, ["a-t-h21", "t-h21", "h21", "a-t-h20"]);
    assert!(head.iter().any(|m| m.id() == Some("by-hand")));
    // The fork's own checkpoints are deltas onto the chain it started from.
    let update = after.iter().find(|s| s.source == Source::Update).unwrap();
    let links = chain(&saver, &deltas, &update.checkpoint_id).await.len();
    let base = chain(&saver, &deltas, &d[j].checkpoint_id).await.len();
    assert_eq!(
        links,
        base + 1,
        "the update's message is one more delta onto checkpoint {j}'s chain"
    );
    delete(&saver, &[&deltas, &whole]).await;
}

/// A prune that keeps the last checkpoints deletes the one that holds the base of the oldest
/// kept checkpoint's chain, and keeps its blob: every kept checkpoint reads back as before, and
/// the thread goes on.
async fn a_prune_keeps_the_base_of_a_kept_chain(saver: Arc<dyn Checkpointer>) {
    let deltas = thread("prune");
    let app = graph::<MessagesState>(&saver);
    run(&app, &deltas, script()).await;
    let before = history(&app, &deltas).await;
    // Keep from the newest checkpoint back to one in the middle of a chain of three or more.
    let mut keep = None;
    for (k, s) in before.iter().enumerate().skip(4) {
        if chain(&saver, &deltas, &s.checkpoint_id).await.len() >= 3 {
            keep = Some(k + 1);
            break;
        }
    }
    let keep = keep.expect("a long chain");
    let oldest_kept = before[keep - 1].checkpoint_id.clone();
    let links = chain(&saver, &deltas, &oldest_kept).await;
    let pruned = saver.prune(&deltas, &Retention::new().keep_last(keep)).await.unwrap();
    assert_eq!(pruned.checkpoints as usize, before.len() - keep);

    let after = history(&app, &deltas).await;
    assert_eq!(after.len(), keep);
    assert_eq!(
        after.iter().map(seen).collect::<Vec<_>>(),
        before[..keep].iter().map(seen).collect::<Vec<_>>()
    );
    assert_eq!(
        chain(&saver, &deltas, &oldest_kept).await,
        links,
        "the chain's base was kept"
    );
    run(&app, &deltas, vec![human(30).into()]).await;
    let head = app.get_state(&RunConfig::thread(&deltas)).await.unwrap().unwrap();
    let expected: Vec<Message> = before[0].values.messages.iter().cloned().chain([human(30)]).collect();
    assert_eq!(&head.values.messages[..expected.len()], &expected[..]);
    delete(&saver, &[&deltas]).await;
}

/// Two graphs take turns on one thread, each going on from checkpoints the other wrote (a run
/// decodes only the links a checkpoint added to the chains it last read, and the other graph's
/// turns add links, restart chains, or leave them as they were): every checkpoint reads back
/// what the oracle's do.
async fn two_graphs_taking_turns_on_a_thread_read_back_exactly(saver: Arc<dyn Checkpointer>) {
    let (deltas, whole) = (thread("turns-deltas"), thread("turns-whole"));
    let apps = [graph::<MessagesState>(&saver), graph::<MessagesState>(&saver)];
    for (k, turn) in script().into_iter().enumerate() {
        // Graph 0 runs turns 0, 1, 2, 5, 6, 7, ...: it reads back after one turn of its own or
        // after two of the other's.
        let app = &apps[usize::from(k % 5 >= 3)];
        run(app, &deltas, vec![turn]).await;
    }
    run(&graph::<Whole>(&saver), &whole, script()).await;
    same_history(&saver, &deltas, &whole).await;
    delete(&saver, &[&deltas, &whole]).await;
}

/// Two threads given the same turns store the same checkpoints: the same chains, byte for byte.
async fn same_input_same_checkpoints(saver: Arc<dyn Checkpointer>) {
    let (one, two) = (thread("same-1"), thread("same-2"));
    let app = graph::<MessagesState>(&saver);
    run(&app, &one, script()).await;
    run(&app, &two, script()).await;
    let (a, b) = (history(&app, &one).await, history(&app, &two).await);
    assert_eq!(
        a.iter().map(seen).collect::<Vec<_>>(),
        b.iter().map(seen).collect::<Vec<_>>()
    );
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(
            chain(&saver, &one, &x.checkpoint_id).await,
            chain(&saver, &two, &y.checkpoint_id).await
        );
    }
    delete(&saver, &[&one, &two]).await;
}

/// A state's field list, to check the oracle is a state of the same shape.
#[test]
fn the_oracle_has_the_shape_of_messages_state() {
    assert_eq!(Whole::FIELDS, MessagesState::FIELDS);
}

macro_rules! on_saver {
    ($saver:ident, $make:expr $(, $ignore:literal)?) => {
        mod $saver {
            use super::*;
            on_saver!(@test $make $(, $ignore)?; appends_chain_and_rewrites_restart_the_chain);
            on_saver!(@test $make $(, $ignore)?; forks_from_the_middle_of_a_chain_read_back_exactly);
            on_saver!(@test $make $(, $ignore)?; a_prune_keeps_the_base_of_a_kept_chain);
            on_saver!(@test $make $(, $ignore)?; same_input_same_checkpoints);
            on_saver!(@test $make $(, $ignore)?; two_graphs_taking_turns_on_a_thread_read_back_exactly);
        }
    };
    (@test $make:expr $(, $ignore:literal)?; $name:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        $(#[ignore = $ignore])?
        async fn $name() {
            let (saver, _dir) = $make.await;
            super::$name(saver).await;
        }
    };
}

/// What a saver's test keeps alive beside it: a SQLite file's directory, a PostgreSQL schema.
type Keep = Option<Box<dyn std::any::Any>>;

async fn memory() -> (Arc<dyn Checkpointer>, Keep) {
    (Arc::new(MemorySaver::new()), None)
}

async fn sqlite() -> (Arc<dyn Checkpointer>, Keep) {
    let dir = tempfile::tempdir().unwrap();
    let saver = SqliteSaver::open(dir.path().join("chat.db")).unwrap();
    (Arc::new(saver), Some(Box::new(dir)))
}

#[cfg(feature = "postgres")]
async fn postgres() -> (Arc<dyn Checkpointer>, Keep) {
    let schema = weir_test_support::Schema::fresh("weir_agent");
    let saver = weir::checkpoint::PostgresSaver::connect_with_schema(&schema.url, &schema.name)
        .await
        .unwrap();
    (Arc::new(saver), Some(Box::new(schema)))
}

on_saver!(memory_saver, memory());
on_saver!(sqlite_saver, sqlite());
#[cfg(feature = "postgres")]
on_saver!(postgres_saver, postgres(), "needs WEIR_POSTGRES_URL");
