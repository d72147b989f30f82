//! `weir prune`: applies a retention policy to the checkpoints of a SQLite file or a PostgreSQL
//! schema (every thread, or one), and prints what it removed.

use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use weir_runtime::checkpoint::{Checkpointer, PostgresSaver, Pruned, Retention, SqliteSaver};

#[derive(Debug, Args)]
pub(crate) struct PruneArgs {
    /// The SQLite file whose checkpoints to prune.
    #[arg(long, conflicts_with = "postgres", required_unless_present = "postgres")]
    sqlite: Option<PathBuf>,
    /// The PostgreSQL server whose checkpoints to prune (`postgres://user@host/db`).
    #[arg(long)]
    postgres: Option<String>,
    /// The PostgreSQL schema holding the checkpoints.
    #[arg(long, default_value = "weir", requires = "postgres", value_parser = crate::schema_name)]
    schema: String,
    /// Keep the last N checkpoints of each thread (the newest always stays).
    #[arg(long, value_name = "N")]
    keep_last: Option<usize>,
    /// Remove checkpoints older than this: `90s`, `15m`, `12h`, `30d`, `2w`.
    #[arg(long, value_name = "AGE", value_parser = parse_age)]
    older_than: Option<Duration>,
    /// Delete whole threads not updated for this long (same units as `--older-than`).
    #[arg(long, value_name = "AGE", value_parser = parse_age)]
    thread_ttl: Option<Duration>,
    /// Prune this thread only.
    #[arg(long, value_name = "ID")]
    thread: Option<String>,
    /// Print what would be removed, and remove nothing.
    #[arg(long)]
    dry_run: bool,
}

/// An age: a whole number and a unit (`s`, `m`, `h`, `d`, `w`).
fn parse_age(text: &str) -> Result<Duration, String> {
    let unit = text.trim_start_matches(|c: char| c.is_ascii_digit());
    let number = &text[..text.len() - unit.len()];
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => {
            return Err(format!(
                "`{text}` is not an age: write a number and a unit, s, m, h, d or w (`30d`)"
            ))
        }
    };
    let n: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not an age: it needs a whole number before its unit (`30d`)"))?;
    n.checked_mul(seconds)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("`{text}` is too long an age"))
}

/// Runs `weir prune`.
pub(crate) fn prune(args: PruneArgs) -> ExitCode {
    if args.keep_last.is_none() && args.older_than.is_none() && args.thread_ttl.is_none() {
        eprintln!("error: nothing to prune by: give --keep-last, --older-than or --thread-ttl");
        return ExitCode::from(2);
    }
    let policy = Retention {
        keep_last: args.keep_last,
        max_age: args.older_than,
        thread_ttl: args.thread_ttl,
        dry_run: args.dry_run,
    };
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (saver, store): (Arc<dyn Checkpointer>, String) = match (&args.sqlite, &args.postgres) {
        (Some(path), _) => {
            if !path.is_file() {
                eprintln!("error: no SQLite file `{}` to prune", path.display());
                return ExitCode::from(2);
            }
            match SqliteSaver::open(path) {
                Ok(saver) => (Arc::new(saver), format!("`{}`", path.display())),
                Err(e) => return failed(e),
            }
        }
        (None, Some(url)) => match rt.block_on(PostgresSaver::connect_with_schema(url, &args.schema)) {
            Ok(saver) => (Arc::new(saver), format!("schema `{}`", args.schema)),
            Err(e) => return failed(e),
        },
        (None, None) => unreachable!("clap requires --sqlite or --postgres"),
    };
    let started = Instant::now();
    let pruned = rt.block_on(async {
        match &args.thread {
            Some(thread) => saver.prune(thread, &policy).await,
            None => saver.prune_all(&policy).await,
        }
    });
    match pruned {
        Ok(pruned) => {
            println!("{}", report(&pruned, &store, args.dry_run, started.elapsed()));
            ExitCode::SUCCESS
        }
        Err(e) => failed(e),
    }
}

fn failed(e: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {e}");
    ExitCode::FAILURE
}

/// The line `weir prune` prints.
fn report(p: &Pruned, store: &str, dry_run: bool, took: Duration) -> String {
    let verb = if dry_run { "would remove" } else { "removed" };
    format!(
        "{store}: {verb} {} checkpoint(s) and {} pending write(s) of {} thread(s), and {} idle thread(s) whole, \
         in {:.2} s",
        p.checkpoints,
        p.pending_writes,
        p.threads_pruned,
        p.threads_deleted,
        took.as_secs_f64()
    )
}

#[cfg(test)]
mod tests {
    use super::parse_age;
    use std::time::Duration;

    #[test]
    fn ages_take_a_number_and_a_unit() {
        assert_eq!(parse_age("30d"), Ok(Duration::from_secs(30 * 86_400)));
        assert_eq!(parse_age("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_age("2w"), Ok(Duration::from_secs(14 * 86_400)));
        assert!(parse_age("30").unwrap_err().contains("`30` is not an age"));
        assert!(parse_age("d").unwrap_err().contains("whole number"));
        assert!(parse_age("3x").unwrap_err().contains("`3x`"));
    }
}
