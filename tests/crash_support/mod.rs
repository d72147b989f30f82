//! Support for the tests that kill a process mid-run (`crash.rs`, `crash_mid_step.rs`,
//! `functional_crash.rs`): the child is the same test binary run again with only its child test
//! selected, told what to do through environment variables; its nodes note what they do in a
//! side file, a line per `write`, which the killed child leaves behind for the parent to read.

// Each test binary uses part of it.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use weir::checkpoint::{Checkpointer, SqliteSaver};
use weir::Durability;

/// Appends one line to the side file, in one `write` to a file opened for appending: once it
/// returns, the line survives the process being killed.
pub fn record(side: &Path, line: &str) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(side)
        .unwrap();
    f.write_all(format!("{line}\n").as_bytes()).unwrap();
}

/// The side file's lines (none before the child wrote one).
pub fn side_lines(side: &Path) -> Vec<String> {
    std::fs::read_to_string(side)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The durability a child is told by name: `sync` or `async`.
pub fn durability_named(name: &str) -> Durability {
    match name {
        "sync" => Durability::Sync,
        "async" => Durability::Async,
        other => panic!("unknown durability `{other}`"),
    }
}

/// Starts this test binary again, running only the test `child` with the environment `env`
/// (its output discarded, but for its standard error, which [`still_running`] shows when the
/// child ended on its own).
pub fn start_child(child: &str, env: &[(&str, &OsStr)]) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", child, "--test-threads=1", "--nocapture"])
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Asserts that `child` has not ended; if it has, fails naming `who`, its exit status and what
/// it wrote to its standard error (a panic's message, say).
pub fn still_running(child: &mut Child, who: &str) {
    let Some(status) = child.try_wait().unwrap() else {
        return;
    };
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
    }
    panic!("{who} ended before it was killed ({status}); its stderr:\n{stderr}");
}

/// The checkpointer a child or the parent opens, by name: `sqlite:<path>` or
/// `postgres:<schema>:<url>`.
pub async fn open_saver(saver: &str) -> Arc<dyn Checkpointer> {
    match saver.split_once(':') {
        Some(("sqlite", path)) => Arc::new(SqliteSaver::open(path).unwrap()),
        #[cfg(feature = "postgres")]
        Some(("postgres", at)) => {
            let (schema, url) = at.split_once(':').expect("`postgres:<schema>:<url>`");
            Arc::new(
                weir::checkpoint::PostgresSaver::connect_with_schema(url, schema)
                    .await
                    .unwrap(),
            )
        }
        _ => panic!("unknown checkpointer `{saver}`"),
    }
}
