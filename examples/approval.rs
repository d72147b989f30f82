//! Human in the loop: an expense request pauses for a person's approval, the program exits, and
//! a second invocation answers it from the SQLite file and finishes the run.
//!
//! ```text
//! cargo run --example approval -- --db approval.db start
//! cargo run --example approval -- --db approval.db approve yes
//! ```
//!
//! `start` runs the graph until the approval step asks its question, prints it and exits;
//! `approve yes|no` resumes the thread in a new process, with a new graph, from the file.
//! `--thread <id>` picks the thread (default `expense-1`).

use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;
use weir::checkpoint::SqliteSaver;
use weir::prelude::*;

/// The state of one expense request.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Expense {
    pub amount: u32,
    pub approved: Option<bool>,
    #[reducer(append)]
    pub log: Vec<String>,
}

/// What the approval step asks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    pub summary: String,
}

/// draft -> approval -> (pay | reject): `approval` pauses until a person answers.
pub fn graph(db: &Path) -> Result<CompiledGraph<Expense>, BoxError> {
    let mut g = GraphBuilder::<Expense>::new();
    g.add_node("draft", |s: &Expense| {
        ExpenseUpdate::default().log(vec![format!("drafted a request for {} EUR", s.amount)])
    });
    g.add_node(
        "approval",
        |s: &Expense, ctx: &Context| -> Result<ExpenseUpdate, BoxError> {
            let question = Question {
                summary: format!("approve an expense of {} EUR?", s.amount),
            };
            let yes: bool = ctx.interrupt(question)?;
            let verdict = if yes { "approved" } else { "rejected" };
            Ok(ExpenseUpdate::default()
                .approved(Some(yes))
                .log(vec![verdict.to_owned()]))
        },
    );
    let pay = g.add_node("pay", |s: &Expense| {
        ExpenseUpdate::default().log(vec![format!("paid {} EUR", s.amount)])
    });
    let reject = g.add_node("reject", |_: &Expense| {
        ExpenseUpdate::default().log(vec!["sent back".to_owned()])
    });
    let (to_pay, to_reject) = (pay.id(), reject.id());
    g.add_edge(START, "draft").add_edge("draft", "approval");
    g.add_router(
        "approval",
        move |s: &Expense| if s.approved == Some(true) { to_pay } else { to_reject },
        [&pay, &reject],
    );
    g.add_edge(&pay, END).add_edge(&reject, END);
    g.set_checkpointer(Arc::new(SqliteSaver::open(db)?));
    Ok(g.compile()?)
}

/// Starts a request of `amount` on `thread`; runs until the approval step asks.
pub async fn start(db: &Path, thread: &str, amount: u32) -> Result<Outcome<Expense>, BoxError> {
    let app = graph(db)?;
    let input = ExpenseUpdate::default().amount(amount);
    Ok(app.run(input, &RunConfig::thread(thread)).await?)
}

/// Answers the paused approval step of `thread` and finishes the run.
pub async fn approve(db: &Path, thread: &str, yes: bool) -> Result<Outcome<Expense>, BoxError> {
    let app = graph(db)?;
    Ok(app.resume_with(yes, &RunConfig::thread(thread)).await?)
}

fn report(outcome: &Outcome<Expense>) {
    for line in &outcome.state().log {
        println!("  {line}");
    }
    match outcome {
        Outcome::Paused { pauses, .. } => {
            for p in pauses {
                let q: Question = p.question().expect("the approval step asks a `Question`");
                println!("paused at `{}`: {}", p.node, q.summary);
            }
            println!("answer with: approve yes | approve no");
        }
        Outcome::Done(s) => println!("done: approved = {:?}", s.approved),
    }
}

const USAGE: &str = "usage: approval --db <file> [--thread <id>] (start [amount] | approve yes|no)";

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let mut args = std::env::args().skip(1);
    let (mut db, mut thread, mut rest) = (None, "expense-1".to_owned(), Vec::new());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--db" => db = args.next(),
            "--thread" => thread = args.next().ok_or(USAGE)?,
            _ => rest.push(arg),
        }
    }
    let db = db.ok_or(USAGE)?;
    let db = Path::new(&db);
    let outcome = match rest.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["start"] => start(db, &thread, 1200).await?,
        ["start", amount] => start(db, &thread, amount.parse()?).await?,
        ["approve", "yes"] => approve(db, &thread, true).await?,
        ["approve", "no"] => approve(db, &thread, false).await?,
        _ => return Err(USAGE.into()),
    };
    report(&outcome);
    Ok(())
}
