//! A functional workflow that drafts, asks a human, and revises — paused in one process and
//! resumed in another, through a SQLite checkpointer.
//!
//! ```text
//! cargo run --example draft_review -- start  /tmp/drafts.db post-1 "supersteps"
//! cargo run --example draft_review -- answer /tmp/drafts.db post-1 "shorter, please"
//! cargo run --example draft_review            # both phases, on a temporary database
//! ```
//!
//! `start` writes the draft (a task: its result is saved) and stops at the question; `answer`,
//! a second process, answers it: the entrypoint re-runs from the top, the saved draft comes back
//! without being written again, and the revision runs.

use weir::checkpoint::SqliteSaver;
use weir::prelude::*;

/// Writes the first draft (an LLM call in a real workflow).
#[task]
pub async fn write_draft(topic: String) -> String {
    println!("  (writing the draft on {topic})");
    format!("A short note on {topic}: they run nodes in steps and apply writes at the boundary.")
}

/// Revises the draft after the reviewer's feedback.
#[task]
pub async fn revise(draft: String, feedback: String) -> String {
    println!("  (revising after: {feedback})");
    format!("{draft} [revised: {feedback}]")
}

/// Drafts, asks for a review, revises.
#[entrypoint]
pub async fn draft_review(topic: String, ctx: &Context) -> Result<String, BoxError> {
    let draft = write_draft(topic).await?;
    let feedback: String = ctx.interrupt(serde_json::json!({ "review this draft": draft }))?;
    Ok(revise(draft, feedback).await?)
}

pub async fn start(db: &str, thread: &str, topic: &str) -> Result<(), BoxError> {
    let app = draft_review().with_checkpointer(SqliteSaver::open(db)?).compile()?;
    let outcome = app.run(topic.to_owned(), &RunConfig::thread(thread)).await?;
    for pause in outcome.pauses() {
        println!("paused, asking: {}", pause.question.clone().unwrap_or_default());
    }
    Ok(())
}

pub async fn answer(db: &str, thread: &str, feedback: &str) -> Result<(), BoxError> {
    let app = draft_review().with_checkpointer(SqliteSaver::open(db)?).compile()?;
    let outcome = app.resume_with(feedback, &RunConfig::thread(thread)).await?;
    println!("final: {}", app.output(outcome.state())?);
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["start", db, thread, topic] => start(db, thread, topic).await,
        ["answer", db, thread, feedback] => answer(db, thread, feedback).await,
        [] => {
            let db = std::env::temp_dir().join(format!("weir-draft-review-{}.db", std::process::id()));
            let db = db.to_string_lossy().into_owned();
            println!("start:");
            start(&db, "demo", "supersteps").await?;
            println!("answer:");
            answer(&db, "demo", "shorter, please").await?;
            let _ = std::fs::remove_file(&db);
            Ok(())
        }
        _ => Err("usage: draft_review [start <db> <thread> <topic> | answer <db> <thread> <feedback>]".into()),
    }
}
