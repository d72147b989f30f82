//! `weir`: check, draw, run and serve flows drawn in a visual editor, with durable threads in
//! SQLite (or, with `--postgres URL`, on a PostgreSQL server several machines share); `weir serve`
//! speaks LangGraph's server API over them.
//!
//! Exit status: 0 success, 1 a failed run or a bad flow, 2 bad usage, 3 the run paused after an
//! `output` node that asks for a choice (answer it with `weir resume --choice`) or for an
//! acknowledgement (`weir resume` without a choice).

mod prune;
mod serve;
mod studio;

use clap::{Args, Parser, Subcommand};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use weir_flow::{Event, Flow, LoadOptions, Outcome, Registry, RunError};
use weir_runtime::checkpoint::SqliteSaver;

/// A server's memory comes and goes with bursts of runs; mimalloc gives back what glibc's
/// malloc kept (see `server/Cargo.toml`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The exit status of a run that stopped to ask a person for a choice.
const PAUSED: u8 = 3;

#[derive(Parser)]
#[command(
    name = "weir",
    version,
    about = "Check, draw, run and serve weir flows (React Flow / xyflow JSON)"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Args)]
struct Thread {
    /// The thread: one durable run, kept in the database.
    #[arg(long)]
    thread: String,
    /// The SQLite file keeping the threads' checkpoints.
    #[arg(long, default_value = "weir.db")]
    db: PathBuf,
    /// Keep the threads on this PostgreSQL server instead (`postgres://user@host/db`).
    #[cfg(feature = "postgres")]
    #[arg(long, conflicts_with = "db")]
    postgres: Option<String>,
    /// The PostgreSQL schema holding the threads' checkpoints and the record of their flows.
    #[cfg(feature = "postgres")]
    #[arg(long, default_value = "weir", requires = "postgres", value_parser = schema_name)]
    schema: String,
}

/// `--schema`'s parser: a name weir can write into SQL, checked before anything connects.
fn schema_name(name: &str) -> Result<String, String> {
    weir_runtime::postgres::check_schema(name).map(|()| name.to_owned())
}

impl Thread {
    #[cfg(feature = "postgres")]
    fn postgres(&self) -> Option<&str> {
        self.postgres.as_deref()
    }
    #[cfg(not(feature = "postgres"))]
    fn postgres(&self) -> Option<&str> {
        None
    }
    /// Where the threads are, for messages.
    fn store(&self) -> String {
        match self.postgres() {
            #[cfg(feature = "postgres")]
            Some(url) => format!(
                "schema `{}` of PostgreSQL server `{}`",
                self.schema,
                weir_runtime::postgres::without_password(url)
            ),
            #[cfg(not(feature = "postgres"))]
            Some(url) => format!("PostgreSQL server `{}`", weir_runtime::postgres::without_password(url)),
            None => format!("`{}`", self.db.display()),
        }
    }
}

#[derive(Args)]
struct Limit {
    /// The most steps the run may take (default: max((nodes - ends - 1) * max_steps, 1) + ends
    /// + 1). Not kept with the thread: give it again to `weir resume`.
    #[arg(long, value_name = "STEPS", value_parser = clap::value_parser!(u64).range(1..))]
    recursion_limit: Option<u64>,
}

impl Limit {
    fn steps(&self) -> Option<usize> {
        self.recursion_limit.map(|n| usize::try_from(n).unwrap_or(usize::MAX))
    }
}

/// How a CLI user raises the recursion limit, for the message of a run that reached it.
const RAISE_LIMIT: &str = "with `--recursion-limit <STEPS>`";

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
    /// Run a flow on a new input, streaming its events; exits 3 when it asks for a choice.
    Run {
        /// The flow file.
        flow: PathBuf,
        /// The input: a JSON object of state fields.
        #[arg(long, default_value = "{}")]
        input: String,
        #[command(flatten)]
        thread: Thread,
        /// One JSON object per line instead of text.
        #[arg(long)]
        json: bool,
        /// The default `max_steps` of nodes that do not set one.
        #[arg(long, default_value_t = 10)]
        max_steps: u32,
        #[command(flatten)]
        limit: Limit,
    },
    /// Go on with a thread: answer its question with `--choice`, acknowledge a message that
    /// asks for no choice, or re-run what failed.
    Resume {
        #[command(flatten)]
        thread: Thread,
        /// The answer to the paused output node: one of its choice ids.
        #[arg(long)]
        choice: Option<String>,
        /// One JSON object per line instead of text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        limit: Limit,
    },
    /// Print a thread's latest state as JSON.
    State {
        #[command(flatten)]
        thread: Thread,
    },
    /// Serve LangGraph's server API (the SDKs', agent-chat-ui's and Studio's) over the flows of a
    /// config file.
    Serve(serve::ServeArgs),
    /// Open a flow in weir studio (a web page at /studio) on an embedded server, with no config
    /// file.
    Studio(studio::StudioArgs),
    /// Remove old checkpoints by a retention policy (`--keep-last`, `--older-than`,
    /// `--thread-ttl`) from a SQLite file or a PostgreSQL schema, and print what went.
    Prune(prune::PruneArgs),
    /// Print a thread's checkpoints, newest first, one JSON object per line.
    History {
        #[command(flatten)]
        thread: Thread,
        /// At most this many.
        #[arg(long)]
        limit: Option<usize>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Cmd::Check { flow, json } => check(&flow, json),
        Cmd::Graph { flow } => read(&flow).and_then(|text| {
            let f = load(&text, &flow.display().to_string(), LoadOptions::default())?;
            print!("{}", f.mermaid());
            Ok(ExitCode::SUCCESS)
        }),
        Cmd::Run {
            flow,
            input,
            thread,
            json,
            max_steps,
            limit,
        } => run(&flow, &input, &thread, json, max_steps, limit.steps()),
        Cmd::Resume {
            thread,
            choice,
            json,
            limit,
        } => resume(&thread, choice.as_deref(), json, limit.steps()),
        Cmd::State { thread } => open_thread(&thread, None).and_then(|(flow, rt)| {
            match rt.block_on(flow.state(&thread.thread)).map_err(run_failed)? {
                Some(s) => println!("{}", serde_json::to_string_pretty(&s).unwrap_or_default()),
                None => println!("null"),
            }
            Ok(ExitCode::SUCCESS)
        }),
        Cmd::Serve(args) => serve::serve(args),
        Cmd::Studio(args) => studio::studio(args),
        Cmd::Prune(args) => Ok(prune::prune(args)),
        Cmd::History { thread, limit } => open_thread(&thread, None).and_then(|(flow, rt)| {
            for s in rt.block_on(flow.history(&thread.thread, limit)).map_err(run_failed)? {
                println!("{}", serde_json::to_string(&s).unwrap_or_default());
            }
            Ok(ExitCode::SUCCESS)
        }),
    };
    result.unwrap_or_else(|code| code)
}

fn usage(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(2)
}

fn run_failed(e: RunError) -> ExitCode {
    eprintln!("error: {e}");
    ExitCode::FAILURE
}

fn read(path: &Path) -> Result<String, ExitCode> {
    std::fs::read_to_string(path).map_err(|e| usage(format!("cannot read `{}`: {e}", path.display())))
}

fn check(path: &Path, json: bool) -> Result<ExitCode, ExitCode> {
    let text = read(path)?;
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
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            for d in e.diagnostics() {
                if json {
                    let line = serde_json::json!({"path": d.path(), "id": d.id(), "message": d.message()});
                    println!("{line}");
                } else {
                    println!("error: {}\n  --> {}:{}", d.message(), path.display(), d.path());
                }
            }
            if !json {
                println!("{}: {} problem(s)", path.display(), e.diagnostics().len());
            }
            Ok(ExitCode::FAILURE)
        }
    }
}

fn load(text: &str, name: &str, options: LoadOptions) -> Result<Flow, ExitCode> {
    Flow::load(text, &Registry::new(), options).map_err(|e| {
        for d in e.diagnostics() {
            eprintln!("error: {}\n  --> {name}:{}", d.message(), d.path());
        }
        ExitCode::FAILURE
    })
}

/// The database's record of which flow each thread runs, beside the saver's own tables.
enum Threads {
    Sqlite(rusqlite::Connection),
    /// One connection of weir's pool (TLS as the URL's `sslmode` says, as the saver's).
    #[cfg(feature = "postgres")]
    Postgres(weir_runtime::postgres::Pool),
}

const THREADS_TABLE: &str = "CREATE TABLE IF NOT EXISTS weir_flow_threads (
    thread_id TEXT PRIMARY KEY, flow TEXT NOT NULL, max_steps BIGINT NOT NULL)";

impl Threads {
    fn open(t: &Thread, rt: &tokio::runtime::Runtime) -> Result<Self, ExitCode> {
        #[cfg(feature = "postgres")]
        if let Some(url) = t.postgres() {
            use weir_runtime::postgres::{Pool, PoolOptions};
            let pool = Pool::new(url, PoolOptions::new().size(1).schema(&t.schema));
            rt.block_on(async {
                let conn = pool.get().await?;
                Self::prepare_schema(&conn.client, &t.schema).await?;
                Ok::<_, weir_runtime::postgres::PoolError>(())
            })
            .map_err(|e| usage(format!("cannot prepare {}: {e}", t.store())))?;
            return Ok(Self::Postgres(pool));
        }
        let _ = rt;
        let c = rusqlite::Connection::open(&t.db).map_err(|e| usage(format!("cannot open {}: {e}", t.store())))?;
        c.busy_timeout(std::time::Duration::from_secs(5)).ok();
        c.execute_batch(THREADS_TABLE)
            .map_err(|e| usage(format!("cannot prepare {}: {e}", t.store())))?;
        Ok(Self::Sqlite(c))
    }
    /// Makes `schema` (a name checked as the arguments were read) and the record in it. The
    /// record lived in the connection's default schema (`public`)
    /// before the command line had `--schema`, beside checkpoints in `weir`: the first time
    /// `weir` is opened, what that older record holds is copied over, so its threads still
    /// resume.
    #[cfg(feature = "postgres")]
    async fn prepare_schema(client: &tokio_postgres::Client, schema: &str) -> Result<(), tokio_postgres::Error> {
        let made: Option<String> = client
            .query_one(
                &format!("SELECT to_regclass('\"{schema}\".weir_flow_threads')::text"),
                &[],
            )
            .await?
            .get(0);
        let older: Option<String> = client
            .query_one("SELECT to_regclass('public.weir_flow_threads')::text", &[])
            .await?
            .get(0);
        client
            .batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\"; {THREADS_TABLE}"))
            .await?;
        if made.is_none() && older.is_some() && schema == "weir" {
            client
                .batch_execute(
                    "INSERT INTO weir_flow_threads SELECT thread_id, flow, max_steps FROM public.weir_flow_threads
                     ON CONFLICT (thread_id) DO NOTHING",
                )
                .await?;
        }
        Ok(())
    }
    fn record(&self, rt: &tokio::runtime::Runtime, thread: &str, flow: &str, max_steps: u32) -> Result<(), ExitCode> {
        let failed = |e: &dyn std::fmt::Display| usage(format!("cannot record thread `{thread}`: {e}"));
        match self {
            Self::Sqlite(c) => c
                .execute(
                    "INSERT OR REPLACE INTO weir_flow_threads (thread_id, flow, max_steps) VALUES (?1, ?2, ?3)",
                    rusqlite::params![thread, flow, max_steps],
                )
                .map(|_| ())
                .map_err(|e| failed(&e)),
            #[cfg(feature = "postgres")]
            Self::Postgres(pool) => rt
                .block_on(async {
                    let conn = pool.get().await?;
                    conn.client
                        .execute(
                            "INSERT INTO weir_flow_threads (thread_id, flow, max_steps) VALUES ($1, $2, $3)
                             ON CONFLICT (thread_id) DO UPDATE SET flow = EXCLUDED.flow, max_steps = EXCLUDED.max_steps",
                            &[&thread, &flow, &i64::from(max_steps)],
                        )
                        .await?;
                    Ok::<_, weir_runtime::postgres::PoolError>(())
                })
                .map_err(|e| failed(&e)),
        }
    }
    fn flow_of(&self, rt: &tokio::runtime::Runtime, thread: &str) -> Result<(String, u32), ExitCode> {
        let missing = || {
            usage(format!(
                "no thread `{thread}` in this database; start it with `weir run`"
            ))
        };
        match self {
            Self::Sqlite(c) => c
                .query_row(
                    "SELECT flow, max_steps FROM weir_flow_threads WHERE thread_id = ?1",
                    [thread],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .map_err(|_| missing()),
            #[cfg(feature = "postgres")]
            Self::Postgres(pool) => {
                let row = rt
                    .block_on(async {
                        let conn = pool.get().await?;
                        let sql = "SELECT flow, max_steps FROM weir_flow_threads WHERE thread_id = $1";
                        Ok::<_, weir_runtime::postgres::PoolError>(conn.client.query_opt(sql, &[&thread]).await?)
                    })
                    .map_err(|e| usage(format!("cannot read thread `{thread}`: {e}")))?
                    .ok_or_else(missing)?;
                let steps: i64 = row.get(1);
                Ok((row.get(0), u32::try_from(steps).unwrap_or(u32::MAX)))
            }
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Runtime::new().map_err(|e| usage(format!("cannot start the async runtime: {e}")))
}

fn saved_flow(
    text: &str,
    t: &Thread,
    max_steps: u32,
    recursion_limit: Option<usize>,
    rt: &tokio::runtime::Runtime,
) -> Result<Flow, ExitCode> {
    let options = LoadOptions {
        max_steps,
        recursion_limit,
        ..LoadOptions::default()
    };
    let cannot = |e: &dyn std::fmt::Display| usage(format!("cannot open {}: {e}", t.store()));
    #[cfg(feature = "postgres")]
    if let Some(url) = t.postgres() {
        let saver = rt
            .block_on(weir_runtime::checkpoint::PostgresSaver::connect_with_schema(
                url, &t.schema,
            ))
            .map_err(|e| cannot(&e))?;
        return load(
            text,
            &format!("flow of thread `{}`", t.thread),
            options.checkpointer(saver),
        );
    }
    let _ = rt;
    let saver = SqliteSaver::open(&t.db).map_err(|e| cannot(&e))?;
    load(
        text,
        &format!("flow of thread `{}`", t.thread),
        options.checkpointer(saver),
    )
}

fn open_thread(t: &Thread, recursion_limit: Option<usize>) -> Result<(Flow, tokio::runtime::Runtime), ExitCode> {
    let rt = runtime()?;
    let (text, max_steps) = Threads::open(t, &rt)?.flow_of(&rt, &t.thread)?;
    Ok((saved_flow(&text, t, max_steps, recursion_limit, &rt)?, rt))
}

fn run(
    path: &Path,
    input: &str,
    t: &Thread,
    json: bool,
    max_steps: u32,
    recursion_limit: Option<usize>,
) -> Result<ExitCode, ExitCode> {
    let text = read(path)?;
    let input: serde_json::Value =
        serde_json::from_str(input).map_err(|e| usage(format!("`--input` is not JSON: {e}")))?;
    let flow = load(
        &text,
        &path.display().to_string(),
        LoadOptions {
            max_steps,
            ..LoadOptions::default()
        },
    )?;
    drop(flow); // checked; now the checkpointed one
    let rt = runtime()?;
    let flow = saved_flow(&text, t, max_steps, recursion_limit, &rt)?;
    Threads::open(t, &rt)?.record(&rt, &t.thread, &text, max_steps)?;
    stream(json, |on_event| rt.block_on(flow.run(input, Some(&t.thread), on_event)))
}

fn resume(t: &Thread, choice: Option<&str>, json: bool, recursion_limit: Option<usize>) -> Result<ExitCode, ExitCode> {
    let (flow, rt) = open_thread(t, recursion_limit)?;
    stream(json, |on_event| rt.block_on(flow.resume(&t.thread, choice, on_event)))
}

/// Runs `go`, printing its events (and a progress line on a terminal), then how it ended.
fn stream(
    json: bool,
    go: impl FnOnce(&mut dyn FnMut(Event)) -> Result<Outcome, RunError>,
) -> Result<ExitCode, ExitCode> {
    let progress = (!json && std::io::stderr().is_terminal()).then(|| {
        let p = indicatif::ProgressBar::new_spinner();
        p.enable_steady_tick(std::time::Duration::from_millis(120));
        p
    });
    let mut out = std::io::stdout().lock();
    let result = go(&mut |e: Event| {
        if let (Some(p), Event::Node { node, step, .. }) = (&progress, &e) {
            p.set_message(format!("step {step}: {node}"));
        }
        let _ = print_event(&mut out, &e, json);
    });
    if let Some(p) = progress {
        p.finish_and_clear();
    }
    let code = match result.map_err(|e| e.raise_limit_with(RAISE_LIMIT)) {
        Ok(Outcome::Done(state)) => {
            let state = serde_json::Value::Object(state.to_json());
            if json {
                let _ = writeln!(out, "{}", serde_json::json!({"event": "done", "state": state}));
            } else {
                let _ = writeln!(
                    out,
                    "done: {}",
                    serde_json::to_string_pretty(&state).unwrap_or_default()
                );
            }
            ExitCode::SUCCESS
        }
        Ok(Outcome::Paused { pauses, .. }) => {
            for p in pauses {
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
                    if p.choices.is_empty() {
                        let _ = writeln!(out, "acknowledge with: weir resume --thread <ID>");
                    } else {
                        let _ = writeln!(out, "answer with: weir resume --thread <ID> --choice <CHOICE>");
                    }
                }
            }
            ExitCode::from(PAUSED)
        }
        Err(e) => {
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
    };
    Ok(code)
}

fn print_event(out: &mut impl Write, e: &Event, json: bool) -> std::io::Result<()> {
    if json {
        return writeln!(out, "{}", serde_json::to_string(e).unwrap_or_default());
    }
    match e {
        Event::Node { node, step, writes } if writes.is_empty() => writeln!(out, "[{step}] {node}"),
        Event::Node { node, step, writes } => {
            writeln!(out, "[{step}] {node} → {}", serde_json::Value::Object(writes.clone()))
        }
        Event::Message { node, text, .. } => writeln!(out, "  {node}: {text}"),
        _ => Ok(()),
    }
}
