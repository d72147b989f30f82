//! A research agent: plan, search the web and the docs in parallel, write a draft once both
//! searches are back, then review it and loop back to planning until the draft rests on enough
//! notes. The "LLM" is a deterministic fake, so every run prints the same thing.
//!
//! Every step is checkpointed in an embedded SQLite file (`research.db`, created on first use):
//! the run's history is printed at the end, and a run that crashed would resume from it.
//!
//! ```text
//! cargo run --example research
//! ```

use weir::prelude::*;

/// The agent's state: each field is a channel.
#[derive(State, Clone, Debug, Default)]
pub struct Research {
    /// The question (a last value: one write per step).
    pub question: String,
    /// Everything found so far, appended in task order.
    #[reducer(append)]
    pub notes: Vec<String>,
    /// Calls to the model, summed.
    #[reducer(add)]
    pub llm_calls: u32,
    /// The latest draft.
    pub draft: String,
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

/// Plans the next round: what to look for, given the notes so far.
async fn plan(s: &Research) -> ResearchUpdate {
    let round = s.notes.len() / 2 + 1;
    let plan = fake_llm(&format!("plan round {round} for {}", s.question));
    ResearchUpdate::default()
        .notes(vec![format!("plan: {plan}")])
        .llm_calls(1)
}

/// Searches the web (fake): one note per round.
async fn search_web(s: &Research, ctx: &Context) -> ResearchUpdate {
    let hit = fake_llm(&format!("web results for {} at step {}", s.question, ctx.step()));
    ResearchUpdate::default()
        .notes(vec![format!("web: {hit}")])
        .llm_calls(1)
}

/// Searches the documentation (fake): one note per round.
fn search_docs(s: &Research) -> ResearchUpdate {
    let hit = fake_llm(&format!("docs about {}", s.question));
    ResearchUpdate::default()
        .notes(vec![format!("docs: {hit}")])
        .llm_calls(1)
}

/// Writes a draft from every note; runs once per round, after both searches.
fn write(s: &Research) -> Result<ResearchUpdate, BoxError> {
    if s.notes.is_empty() {
        return Err("nothing to write about".into());
    }
    Ok(ResearchUpdate::default()
        .draft(format!("{}: a draft citing {} notes", s.question, s.notes.len()))
        .llm_calls(1))
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

/// Runs the agent on `question` in thread `thread`, checkpointing every step in the SQLite file
/// at `db`; returns the final state and the steps of the thread's checkpoints, newest first.
pub async fn research_durably(
    question: &str,
    db: &std::path::Path,
    thread: &str,
) -> Result<(Research, Vec<i64>), BoxError> {
    let saver = weir::checkpoint::SqliteSaver::open(db)?;
    let app = ResearchAgent::builder().with_checkpointer(saver).compile()?;
    let config = RunConfig::thread(thread);
    let input = ResearchUpdate::default().question(question.to_owned());
    let out = app.invoke(input, &config).await?;
    let steps = app
        .get_state_history(&config, None)
        .await?
        .iter()
        .map(|s| s.step)
        .collect();
    Ok((out, steps))
}

#[cfg_attr(test, allow(dead_code))]
#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let thread = format!("research-{}", std::process::id());
    let (out, steps) = research_durably("how does pregel schedule nodes", "research.db".as_ref(), &thread).await?;
    for note in &out.notes {
        println!("note: {note}");
    }
    println!("draft: {}", out.draft);
    println!("llm calls: {}", out.llm_calls);
    println!("checkpoints of thread `{thread}` in research.db: steps {steps:?}");
    println!("\n{}", ResearchAgent::MERMAID);
    Ok(())
}
