//! The WORKLOADS.md workloads on the Rust peers, with the protocol of weir's harness: build and
//! compile untimed, one verified warm-up, R timed invocations (the timer covers `invoke` only),
//! every output verified, one `workload=… size=… median_ms=…` line, `peak_rss_kb=` at exit.
//!
//! ```text
//! weir-peers-bench <adk-graph|weavegraph|langgraph-rs> <workload> [size] [--repeat R]
//!                  [--sqlite-synchronous OFF|FULL] [--durability sync]
//! ```
//!
//! A workload a crate's API cannot express prints `workload=… size=… UNSUPPORTED: <why>`.

mod adk;
mod lg;
mod weave;

use std::future::Future;
use std::time::Instant;

pub struct Opts {
    pub repeat: usize,
    /// `PRAGMA synchronous` for the SQLite workloads: "FULL" (SQLite's default) or "OFF".
    pub synchronous: String,
}

pub type Facts = Vec<(String, String)>;

pub struct Line {
    pub runs_ms: Vec<f64>,
    pub unit: &'static str,
    pub units: usize,
    pub facts: Facts,
}

pub enum Outcome {
    Done(Line),
    Unsupported(String),
}

/// Warm-up plus `repeat` timed runs of the future `prepare` builds; `verify` checks each output.
pub fn measure<P, F, O, V>(
    rt: &tokio::runtime::Runtime,
    opts: &Opts,
    unit: &'static str,
    units: usize,
    mut prepare: P,
    mut verify: V,
) -> Result<Line, String>
where
    P: FnMut(usize) -> Result<F, String>,
    F: Future<Output = Result<O, String>>,
    V: FnMut(O) -> Result<Facts, String>,
{
    let mut runs = Vec::new();
    let mut facts = Vec::new();
    for r in 0..=opts.repeat {
        let fut = prepare(r)?;
        let t0 = Instant::now();
        let out = rt.block_on(fut);
        let dt = t0.elapsed();
        facts = verify(out?)?;
        if r > 0 {
            runs.push(dt.as_secs_f64() * 1000.0);
        }
    }
    Ok(Line {
        runs_ms: runs,
        unit,
        units,
        facts,
    })
}

pub fn check(cond: bool, msg: impl FnOnce() -> String) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(msg())
    }
}

/// `0..w` in the byte-wise order of the names `w0, w1, w10, …` (LangGraph's order).
pub fn order_name(items: &[i64]) -> &'static str {
    let numeric: Vec<i64> = (0..items.len() as i64).collect();
    let mut lex = numeric.clone();
    lex.sort_by_key(|i| format!("w{i}"));
    if items == numeric.as_slice() {
        "numeric"
    } else if items == lex.as_slice() {
        "node_name_lexicographic"
    } else {
        "other"
    }
}

pub fn item(k: i64) -> String {
    format!("{k:06}{}", "x".repeat(94))
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn peak_rss_kb() -> i64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the valid `rusage` it is pointed at.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    usage.ru_maxrss
}

fn usage() -> ! {
    eprintln!("usage: weir-peers-bench <adk-graph|weavegraph|langgraph-rs> <workload> [size] [--repeat R] [--sqlite-synchronous OFF|FULL]");
    std::process::exit(2)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let krate = args.next().unwrap_or_else(|| usage());
    let workload = args.next().unwrap_or_else(|| usage());
    let mut size: Option<usize> = None;
    let mut opts = Opts {
        repeat: 5,
        synchronous: "FULL".into(),
    };
    let mut durability = String::from("default");
    while let Some(a) = args.next() {
        match a.as_str() {
            "--repeat" => opts.repeat = args.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| usage()),
            "--sqlite-synchronous" => opts.synchronous = args.next().unwrap_or_else(|| usage()).to_uppercase(),
            "--durability" => durability = args.next().unwrap_or_else(|| usage()),
            _ if size.is_none() => size = Some(a.parse().unwrap_or_else(|_| usage())),
            _ => usage(),
        }
    }
    let size = size.unwrap_or(if workload == "loop" { 10_000 } else { 1000 });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let outcome = if durability != "default" && durability != "sync" {
        Ok(Outcome::Unsupported(format!(
            "durability={durability}: every peer saves synchronously per superstep"
        )))
    } else {
        match krate.as_str() {
            "adk-graph" => adk::run(&rt, &opts, &workload, size),
            "weavegraph" => weave::run(&rt, &opts, &workload, size),
            "langgraph-rs" => lg::run(&rt, &opts, &workload, size),
            _ => usage(),
        }
    };
    let rc = match outcome {
        Ok(Outcome::Done(line)) => {
            let med = median(&line.runs_ms);
            let min = line.runs_ms.iter().copied().fold(f64::INFINITY, f64::min);
            let runs: Vec<String> = line.runs_ms.iter().map(|t| format!("{t:.3}")).collect();
            let mut s = format!(
                "workload={workload} size={size} median_ms={med:.3} min_ms={min:.3} per_unit_us={:.3} unit={} units={} runs_ms={}",
                med * 1000.0 / line.units as f64,
                line.unit,
                line.units,
                runs.join(",")
            );
            for (k, v) in &line.facts {
                s += &format!(" {k}={v}");
            }
            println!("{s}");
            0
        }
        Ok(Outcome::Unsupported(why)) => {
            println!("workload={workload} size={size} UNSUPPORTED: {why}");
            0
        }
        Err(e) => {
            println!("workload={workload} size={size} FAILED: {e}");
            1
        }
    };
    println!("peak_rss_kb={}", peak_rss_kb());
    std::process::exit(rc);
}
