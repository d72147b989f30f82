//! The benchmark workloads (`benches/workloads`) at small sizes, in debug mode: every output is
//! checked, nothing is timed. Keeps the harness honest without building anything in release.

#[path = "../benches/workloads/mod.rs"]
mod workloads;

use weir::checkpoint::Synchronous;
use weir::Durability;
use workloads::{median, Opts, WORKLOADS};

fn quick_opts() -> Opts {
    Opts {
        repeat: 1,
        synchronous: Synchronous::Off,
        ..Opts::default()
    }
}

fn run(name: &str, size: usize, opts: &Opts) -> Vec<workloads::Report> {
    let reports = workloads::run(name, size, opts).unwrap_or_else(|e| panic!("{e}"));
    for r in &reports {
        assert_eq!(r.runs_ms.len(), opts.repeat, "{name}: one time per timed run");
        assert!(r
            .line()
            .starts_with(&format!("workload={} size={size} median_ms=", r.name)));
    }
    reports
}

#[test]
fn every_workload_runs_at_its_quick_size_and_verifies() {
    for &(name, _, quick, _) in WORKLOADS {
        let reports = run(name, quick, &quick_opts());
        assert_eq!(reports[0].name, name);
    }
}

#[test]
fn the_sqlite_workloads_report_the_bare_insert_floor() {
    let reports = run("checkpoint_growing_state", 10, &quick_opts());
    assert_eq!(reports.len(), 2);
    assert_eq!(reports[1].name, "sqlite_floor");
    let extra = |key: &str| reports[0].extra.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    assert_eq!(extra("checkpoints").as_deref(), Some("12"));
    assert!(extra("vs_floor").is_some());
    // The paired ratio: each invocation against the floor run right after it.
    let (runs, floors) = (&reports[0].runs_ms, &reports[1].runs_ms);
    assert_eq!(runs.len(), floors.len());
    let pairs: Vec<f64> = runs.iter().zip(floors).map(|(w, f)| w / f).collect();
    assert_eq!(extra("vs_floor_paired"), Some(format!("{:.2}", median(&pairs))));
}

#[test]
fn the_checkpoint_workloads_verify_under_every_durability() {
    for durability in [Durability::Sync, Durability::Exit] {
        let opts = Opts {
            durability,
            floor: false,
            ..quick_opts()
        };
        run("checkpoint_memory", 10, &opts);
        run("checkpoint_sqlite", 10, &opts);
    }
}

#[test]
fn fanout_applies_writes_in_node_name_order_as_langgraph_does() {
    let reports = run("fanout", 12, &quick_opts());
    let order = reports[0]
        .extra
        .iter()
        .find(|(k, _)| k == "items_order")
        .map(|(_, v)| v.as_str());
    assert_eq!(order, Some("node_name_lexicographic"));
}

#[test]
fn the_lexicographic_order_is_langgraphs() {
    assert_eq!(
        workloads::lexicographic(12, "w"),
        [0, 1, 10, 11, 2, 3, 4, 5, 6, 7, 8, 9]
    );
    assert_eq!(workloads::item(42).len(), 100);
    assert!(workloads::item(42).starts_with("000042x"));
}
