//! A research agent: plan, search the web and the docs in parallel, write a draft once both
//! searches are back, then review it and loop back to planning until the draft rests on enough
//! notes. The "LLM" is a deterministic fake, so every run prints the same thing.
//!
//! ```text
//! cargo run --example research
//! ```

// The state is written with the test suite's `hand_state!` until `#[derive(State)]` lands on
// main; with the derive, the block below becomes:
//
//     #[derive(State, Clone, Debug, Default)]
//     pub struct Research {
//         pub question: String,
//         #[reducer(append)] pub notes: Vec<String>,
//         #[reducer(add)] pub llm_calls: i64,
//         pub draft: String,
//     }
#[macro_use]
#[path = "../tests/common/mod.rs"]
mod common;

use weir::channel::{BinaryOperatorAggregate, LastValue, ReducerWrite};
use weir::prelude::*;
use weir::ChannelKind;

hand_state! {
    struct Research, ResearchUpdate, ResearchChannels {
        question: String => LastValue = LastValue::new(), ChannelKind::LastValue, |v| v;
        notes: Vec<String> => BinaryOperatorAggregate<Vec<String>, Vec<String>> = BinaryOperatorAggregate::new(common::append), ChannelKind::Reducer, ReducerWrite::Reduce;
        llm_calls: i64 => BinaryOperatorAggregate<i64, i64> = BinaryOperatorAggregate::new(common::add), ChannelKind::Reducer, ReducerWrite::Reduce;
        draft: String => LastValue = LastValue::new(), ChannelKind::LastValue, |v| v;
    }
}

/// A deterministic stand-in for a model: the same prompt always gets the same answer.
fn fake_llm(prompt: &str) -> String {
    let words: Vec<&str> = prompt.split_whitespace().collect();
    format!(
        "{} ({} words considered)",
        words.last().copied().unwrap_or(""),
        words.len()
    )
}

fn one_call() -> ReducerWrite<i64, i64> {
    ReducerWrite::Reduce(1)
}

/// Plans the next round: what to look for, given the notes so far.
async fn plan(s: &Research) -> ResearchUpdate {
    let round = s.notes.len() / 2 + 1;
    let plan = fake_llm(&format!("plan round {round} for {}", s.question));
    ResearchUpdate::default()
        .notes(ReducerWrite::Reduce(vec![format!("plan: {plan}")]))
        .llm_calls(one_call())
}

/// Searches the web (fake): one note per round.
async fn search_web(s: &Research, ctx: &Context) -> ResearchUpdate {
    let hit = fake_llm(&format!("web results for {} at step {}", s.question, ctx.step()));
    ResearchUpdate::default()
        .notes(ReducerWrite::Reduce(vec![format!("web: {hit}")]))
        .llm_calls(one_call())
}

/// Searches the documentation (fake): one note per round.
fn search_docs(s: &Research) -> ResearchUpdate {
    let hit = fake_llm(&format!("docs about {}", s.question));
    ResearchUpdate::default()
        .notes(ReducerWrite::Reduce(vec![format!("docs: {hit}")]))
        .llm_calls(one_call())
}

/// Writes a draft from every note; runs once per round, after both searches.
fn write(s: &Research) -> Result<ResearchUpdate, BoxError> {
    if s.notes.is_empty() {
        return Err("nothing to write about".into());
    }
    Ok(ResearchUpdate::default()
        .draft(format!("{}: a draft citing {} notes", s.question, s.notes.len()))
        .llm_calls(one_call()))
}

/// The reviewer's verdict on a draft.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Not enough material yet: plan another round.
    More,
    /// Good enough.
    Done,
}

/// Reviews the draft: two rounds of research are enough.
fn review(s: &Research) -> Verdict {
    if s.notes.len() >= 6 {
        Verdict::Done
    } else {
        Verdict::More
    }
}

graph! {
    /// The research agent's graph.
    pub struct ResearchAgent;
    state: Research,
    nodes: [
        plan(writes(notes, llm_calls)),
        search_web(writes(notes, llm_calls), retry(max_attempts = 3, initial_interval = 10ms)),
        search_docs(writes(notes, llm_calls)),
        write(writes(draft, llm_calls)),
    ],
    START -> plan -> [search_web, search_docs];  // fan-out: both searches run in the same step
    [search_web, search_docs] -> write;         // join: write runs once, after both
    write -> review ? {                         // the review loop: every verdict is mapped
        Verdict::More => plan,
        Verdict::Done => END,
    };
}

/// Runs the agent on `question`.
pub async fn research(question: &str) -> Result<Research, BoxError> {
    let app = ResearchAgent::compile()?;
    let input = ResearchUpdate::default().question(question.to_owned());
    Ok(app.invoke(input, &RunConfig::default()).await?)
}

#[cfg_attr(test, allow(dead_code))]
#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let out = research("how does pregel schedule nodes").await?;
    for note in &out.notes {
        println!("note: {note}");
    }
    println!("draft: {}", out.draft);
    println!("llm calls: {}", out.llm_calls);
    println!("\n{}", ResearchAgent::MERMAID);
    Ok(())
}
