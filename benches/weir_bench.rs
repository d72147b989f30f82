//! weir's side of the benchmark: the workloads of `WORKLOADS.md`, one per process.
//!
//! ```text
//! cargo bench --bench weir_bench -- <workload> [size] [--repeat R] [--durability sync|async|exit]
//!                                    [--sqlite-synchronous OFF|NORMAL|FULL] [--workers N] [--no-floor]
//! cargo bench --bench weir_bench -- list
//! cargo bench --bench weir_bench -- --quick      # every workload at a small size, verified
//! ```
//!
//! Prints `workload=… size=… median_ms=… min_ms=… per_unit_us=… …` per workload (the SQLite
//! workloads add a `sqlite_floor` line: bare inserts of the same bytes per step on the same file
//! settings, one run after each invocation), then `peak_rss_kb=…`. Exits non-zero when an output
//! check fails.

mod workloads;

use weir::checkpoint::Synchronous;
use weir::Durability;
use workloads::{Opts, WORKLOADS};

fn usage() -> ! {
    eprintln!(
        "usage: weir_bench <workload>|list|--quick [size] [--repeat R] [--durability sync|async|exit] \
         [--sqlite-synchronous OFF|NORMAL|FULL] [--workers N] [--no-floor]"
    );
    std::process::exit(2)
}

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let mut opts = Opts::default();
    let mut name = None;
    let mut size = None;
    let mut quick = false;
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--quick" => quick = true,
            "--repeat" => opts.repeat = value().parse().unwrap_or_else(|_| usage()),
            "--workers" => opts.workers = value().parse().unwrap_or_else(|_| usage()),
            "--no-floor" => opts.floor = false,
            "--durability" => {
                opts.durability = match value().as_str() {
                    "sync" => Durability::Sync,
                    "async" => Durability::Async,
                    "exit" => Durability::Exit,
                    _ => usage(),
                }
            }
            "--sqlite-synchronous" => {
                opts.synchronous = match value().to_ascii_uppercase().as_str() {
                    "OFF" => Synchronous::Off,
                    "NORMAL" => Synchronous::Normal,
                    "FULL" => Synchronous::Full,
                    _ => usage(),
                }
            }
            _ if a.starts_with("--") => usage(),
            _ if name.is_none() => name = Some(a),
            _ if size.is_none() => size = Some(a.parse().unwrap_or_else(|_| usage())),
            _ => usage(),
        }
    }
    let mut failed = false;
    let todo: Vec<(String, usize)> = if quick {
        opts.repeat = 1;
        WORKLOADS.iter().map(|w| (w.0.to_owned(), w.2)).collect()
    } else {
        match name.as_deref() {
            None => usage(),
            Some("list") => {
                for (name, size, quick, unit) in WORKLOADS {
                    println!("{name} default_size={size} quick_size={quick} unit={unit}");
                }
                return;
            }
            Some(n) => {
                let default = WORKLOADS.iter().find(|w| w.0 == n).map_or(1000, |w| w.1);
                vec![(n.to_owned(), size.unwrap_or(default))]
            }
        }
    };
    for (name, size) in todo {
        match workloads::run(&name, size, &opts) {
            Ok(reports) => {
                for r in reports {
                    println!("{}", r.line());
                }
            }
            Err(e) => {
                println!("workload={name} size={size} FAILED: {e}");
                failed = true;
            }
        }
    }
    println!("peak_rss_kb={}", workloads::peak_rss_kb());
    if failed {
        std::process::exit(1);
    }
}
