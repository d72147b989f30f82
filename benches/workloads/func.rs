//! The functional API's workloads (issue 26): an entrypoint calling `n` tasks one after the
//! other (`func_sequential`), or starting `n` calls before awaiting any (`func_parallel`), each
//! without a checkpointer and on a fresh SQLite file (`…_sqlite`: every call's result saved as a
//! pending write). Each task adds one to its argument; the entrypoint returns the sum.

use super::{check, fresh_sqlite, Harness, Report, THREAD};
use weir::prelude::*;

#[task]
fn bump(i: u64) -> u64 {
    i + 1
}

#[entrypoint]
async fn one_after_another(n: u64) -> Result<u64, BoxError> {
    let mut total = 0;
    for i in 0..n {
        total += bump(i).await?;
    }
    Ok(total)
}

#[entrypoint]
async fn all_at_once(n: u64) -> Result<u64, BoxError> {
    let calls: Vec<_> = (0..n).map(bump).collect();
    let mut total = 0;
    for c in calls {
        total += c.await?;
    }
    Ok(total)
}

/// Runs `name` (`func_sequential`, `func_parallel`, with `_sqlite` to checkpoint) at `n` tasks.
pub(super) fn run(h: &Harness, name: &str, n: usize) -> Result<Vec<Report>, String> {
    let parallel = name.starts_with("func_parallel");
    let entry = if parallel { all_at_once() } else { one_after_another() };
    let app = entry.compile().map_err(|e| e.to_string())?;
    let want = (n as u64) * (n as u64 + 1) / 2;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let sqlite = name.ends_with("_sqlite");
    let cfg = RunConfig::thread(THREAD).durability(h.opts.durability);
    let report = h.measure(
        name,
        n,
        "task",
        n,
        |r| {
            let app = if sqlite {
                app.with_checkpointer(fresh_sqlite(tmp.path(), r, h.opts.synchronous)?)
            } else {
                app.clone()
            };
            let cfg = cfg.clone();
            Ok(async move { app.invoke(n as u64, &cfg).await })
        },
        |_, out| {
            check(out == want, || format!("sum = {out}, want {want}"))?;
            Ok(vec![])
        },
    )?;
    Ok(vec![report])
}
