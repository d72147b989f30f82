//! `weir`: check, draw and run flows drawn in a visual editor.
//!
//! Exit status: 0 success, 1 a failed run or a bad flow, 2 bad usage, 3 the run paused at an
//! `output` node that asks for a choice.

use clap::{Parser, Subcommand};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use weir_flow::{Event, Flow, LoadOptions, Registry};

/// The exit status of a run that stopped to ask a person for a choice.
const PAUSED: u8 = 3;

#[derive(Parser)]
#[command(
    name = "weir",
    version,
    about = "Check, draw and run weir flows (React Flow / xyflow JSON)"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Validate a flow: print every problem, with its JSON path; exit 1 if there is any.
    Check {
        /// The flow file.
        flow: PathBuf,
        /// Print the problems as JSON, one object per line.
        #[arg(long)]
        json: bool,
    },
    /// Print the flow as a Mermaid diagram.
    Graph {
        /// The flow file.
        flow: PathBuf,
    },
    /// Run a flow, streaming its events.
    Run {
        /// The flow file.
        flow: PathBuf,
        /// The input: a JSON object of state fields.
        #[arg(long, default_value = "{}")]
        input: String,
        /// The thread the run belongs to (its checkpoints are kept under it).
        #[arg(long)]
        thread: Option<String>,
        /// The SQLite file keeping the thread's checkpoints.
        #[arg(long)]
        db: Option<PathBuf>,
        /// One JSON object per line instead of text.
        #[arg(long)]
        json: bool,
        /// The default `max_steps` of nodes that do not set one.
        #[arg(long, default_value_t = 10)]
        max_steps: u32,
    },
}

fn read_flow(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Cmd::Check { flow, json } => check(&flow, json),
        Cmd::Graph { flow } => match load(&flow, LoadOptions::default()) {
            Ok(f) => {
                print!("{}", f.mermaid());
                ExitCode::SUCCESS
            }
            Err(code) => code,
        },
        Cmd::Run {
            flow,
            input,
            thread,
            db,
            json,
            max_steps,
        } => run(&flow, &input, thread, db, json, max_steps),
    }
}

fn check(path: &Path, json: bool) -> ExitCode {
    let text = match read_flow(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    match Flow::from_json(&text, &Registry::new()) {
        Ok(f) => {
            if !json {
                println!(
                    "{}: ok ({} nodes, recursion limit {})",
                    path.display(),
                    f.levels().len(),
                    f.recursion_limit()
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            for d in e.diagnostics() {
                if json {
                    let line =
                        serde_json::json!({"path": d.path(), "id": d.id(), "message": d.message()});
                    println!("{line}");
                } else {
                    println!(
                        "error: {}\n  --> {}:{}",
                        d.message(),
                        path.display(),
                        d.path()
                    );
                }
            }
            if !json {
                println!("{}: {} problem(s)", path.display(), e.diagnostics().len());
            }
            ExitCode::FAILURE
        }
    }
}

fn load(path: &Path, options: LoadOptions) -> Result<Flow, ExitCode> {
    let text = read_flow(path).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    })?;
    Flow::load(&text, &Registry::new(), options).map_err(|e| {
        for d in e.diagnostics() {
            eprintln!(
                "error: {}\n  --> {}:{}",
                d.message(),
                path.display(),
                d.path()
            );
        }
        ExitCode::FAILURE
    })
}

fn run(
    path: &Path,
    input: &str,
    thread: Option<String>,
    db: Option<PathBuf>,
    json: bool,
    max_steps: u32,
) -> ExitCode {
    if db.is_some() {
        // Checkpointing (SQLite saver, interrupts, resume) is not in the runtime yet.
        eprintln!(
            "error: `--db` needs the runtime's SQLite checkpointer, which is not available yet"
        );
        return ExitCode::from(2);
    }
    let _ = thread;
    let flow = match load(path, LoadOptions { max_steps }) {
        Ok(f) => f,
        Err(code) => return code,
    };
    let input: serde_json::Value = match serde_json::from_str(input) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: `--input` is not JSON: {e}");
            return ExitCode::from(2);
        }
    };
    let progress = (!json && std::io::stderr().is_terminal()).then(|| {
        let p = indicatif::ProgressBar::new_spinner();
        p.enable_steady_tick(std::time::Duration::from_millis(120));
        p
    });
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut out = std::io::stdout().lock();
    let result = rt.block_on(flow.invoke_with(input, |e| {
        if let Some(p) = &progress {
            if let Event::Node { node, step, .. } = &e {
                p.set_message(format!("step {step}: {node}"));
            }
        }
        let _ = print_event(&mut out, &e, json);
    }));
    if let Some(p) = progress {
        p.finish_and_clear();
    }
    match result {
        Ok(state) => {
            let state = serde_json::Value::Object(state.to_json());
            if json {
                let _ = writeln!(
                    out,
                    "{}",
                    serde_json::json!({"event": "done", "state": state})
                );
            } else {
                let _ = writeln!(
                    out,
                    "done: {}",
                    serde_json::to_string_pretty(&state).unwrap_or_default()
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            if let Some(p) = e.pause() {
                if json {
                    let _ = writeln!(
                        out,
                        "{}",
                        serde_json::json!({"event": "paused", "node": p.node, "question": p.question, "choices": p.choices})
                    );
                } else {
                    let _ = writeln!(out, "? {}", p.question);
                    for c in &p.choices {
                        let _ = writeln!(out, "  [{}] {}", c.id, c.label);
                    }
                }
                return ExitCode::from(PAUSED);
            }
            if json {
                let _ = writeln!(
                    out,
                    "{}",
                    serde_json::json!({"event": "error", "node": e.node(), "message": e.to_string()})
                );
            } else {
                eprintln!("error: {e}");
            }
            ExitCode::FAILURE
        }
    }
}

fn print_event(out: &mut impl Write, e: &Event, json: bool) -> std::io::Result<()> {
    if json {
        return writeln!(out, "{}", serde_json::to_string(e).unwrap_or_default());
    }
    match e {
        Event::Node { node, step, writes } if writes.is_empty() => writeln!(out, "[{step}] {node}"),
        Event::Node { node, step, writes } => {
            writeln!(
                out,
                "[{step}] {node} → {}",
                serde_json::Value::Object(writes.clone())
            )
        }
        Event::Message { node, text, .. } => writeln!(out, "  {node}: {text}"),
        _ => Ok(()),
    }
}
