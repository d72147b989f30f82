//! The eight workloads of `WORKLOADS.md`, written on weir as a user would write them, and the
//! measurement protocol around them.
//!
//! Shared by the release harness (`benches/weir_bench.rs`, `cargo bench --bench weir_bench`) and
//! by `tests/bench_quick.rs`, which runs every workload at a small size in debug mode and checks
//! its output. Graphs whose size is fixed in the source use `graph!`; graphs whose node count is
//! the workload's size parameter (`sequential`, `fanout`, `wide_state`: hundreds to ten thousand
//! nodes) are built with `GraphBuilder` in a loop, the way a user generating a graph would.
//!
//! Protocol (WORKLOADS.md §1): the graph is built and compiled untimed (for the checkpoint
//! workloads: once per invocation, with a fresh saver whose schema exists), one verified warm-up
//! invocation, then `repeat` timed invocations, each verified. The timer covers `invoke` only.

#![allow(dead_code)] // each of the two users calls a different part

mod func;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use weir::checkpoint::{Checkpointer, MemorySaver, SqliteSaver, Synchronous};
use weir::prelude::*;
use weir::NodeRef;

// ---------------------------------------------------------------------------------------------
// Harness types
// ---------------------------------------------------------------------------------------------

/// How to run a workload.
#[derive(Debug, Clone)]
pub struct Opts {
    /// Timed invocations after the warm-up.
    pub repeat: usize,
    /// Durability of the checkpoint workloads.
    pub durability: Durability,
    /// `PRAGMA synchronous` of the SQLite workloads (LangGraph's default is FULL).
    pub synchronous: Synchronous,
    /// Worker threads of the tokio runtime (0: a current-thread runtime).
    pub workers: usize,
    /// Whether the SQLite workloads also measure the bare-insert floor.
    pub floor: bool,
}

impl Default for Opts {
    fn default() -> Self {
        Self {
            repeat: 5,
            durability: Durability::Async,
            synchronous: Synchronous::Full,
            workers: 2,
            floor: true,
        }
    }
}

/// One measured workload: what the harness prints as one line.
#[derive(Debug, Clone)]
pub struct Report {
    pub name: String,
    pub size: usize,
    pub unit: &'static str,
    pub units: usize,
    pub runs_ms: Vec<f64>,
    /// Extra `key=value` facts (checkpoint counts, bytes, order of items, …).
    pub extra: Vec<(String, String)>,
    /// Peak RSS during the `invoke` calls alone (Linux `VmHWM` after a reset), in kB.
    pub invoke_peak_rss_kb: Option<u64>,
}

impl Report {
    pub fn median_ms(&self) -> f64 {
        median(&self.runs_ms)
    }
    pub fn per_unit_us(&self) -> f64 {
        self.median_ms() * 1000.0 / self.units as f64
    }
    /// The line of WORKLOADS.md §1.5.
    pub fn line(&self) -> String {
        let min = self.runs_ms.iter().copied().fold(f64::INFINITY, f64::min);
        let runs: Vec<String> = self.runs_ms.iter().map(|t| format!("{t:.3}")).collect();
        let mut s = format!(
            "workload={} size={} median_ms={:.3} min_ms={:.3} per_unit_us={:.3} unit={} units={} runs_ms={}",
            self.name,
            self.size,
            self.median_ms(),
            min,
            self.per_unit_us(),
            self.unit,
            self.units,
            runs.join(",")
        );
        if let Some(kb) = self.invoke_peak_rss_kb {
            s += &format!(" invoke_peak_rss_kb={kb}");
        }
        for (k, v) in &self.extra {
            s += &format!(" {k}={v}");
        }
        s
    }
}

pub fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The workloads: name, default size (WORKLOADS.md), size for `--quick`, unit.
pub const WORKLOADS: &[(&str, usize, usize, &str)] = &[
    ("sequential", 1000, 20, "node"),
    ("fanout", 1000, 20, "node"),
    ("send_map_reduce", 1000, 20, "node"),
    ("loop", 10_000, 20, "superstep"),
    ("wide_state", 1000, 20, "node"),
    ("checkpoint_memory", 1000, 20, "superstep"),
    ("checkpoint_sqlite", 1000, 20, "superstep"),
    ("checkpoint_growing_state", 1000, 20, "superstep"),
    ("func_sequential", 1000, 20, "task"),
    ("func_parallel", 1000, 20, "task"),
    ("func_sequential_sqlite", 1000, 20, "task"),
    ("func_parallel_sqlite", 1000, 20, "task"),
];

pub const THREAD: &str = "bench";

/// Runs workload `name` at `size` under `opts`; `Err` names the check that failed.
pub fn run(name: &str, size: usize, opts: &Opts) -> Result<Vec<Report>, String> {
    let rt = if opts.workers == 0 {
        tokio::runtime::Builder::new_current_thread().enable_all().build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(opts.workers)
            .enable_all()
            .build()
    }
    .map_err(|e| e.to_string())?;
    let h = Harness { rt, opts: opts.clone() };
    match name {
        "sequential" => sequential(&h, size),
        "fanout" => fanout(&h, size),
        "send_map_reduce" => send_map_reduce(&h, size),
        "loop" => looping(&h, size),
        "wide_state" => wide_state(&h, size),
        "checkpoint_memory" => checkpoint_memory(&h, size),
        "checkpoint_sqlite" => checkpoint_sqlite(&h, size),
        "checkpoint_growing_state" => checkpoint_growing_state(&h, size),
        "func_sequential" | "func_parallel" | "func_sequential_sqlite" | "func_parallel_sqlite" => {
            func::run(&h, name, size)
        }
        "sqlite_floor" => {
            let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
            Ok(vec![sqlite_floor(&h, size, 300, tmp.path())?])
        }
        _ => Err(format!("unknown workload `{name}`")),
    }
}

struct Harness {
    rt: tokio::runtime::Runtime,
    opts: Opts,
}

impl Harness {
    /// Warm-up plus `repeat` timed invocations. `prepare` builds one invocation untimed and
    /// returns the future to time; `verify` checks its output (untimed) and returns facts.
    fn measure<P, F, O, V>(
        &self,
        name: &str,
        size: usize,
        unit: &'static str,
        units: usize,
        mut prepare: P,
        mut verify: V,
    ) -> Result<Report, String>
    where
        P: FnMut(usize) -> Result<F, String>,
        F: std::future::Future<Output = Result<O, Error>>,
        V: FnMut(usize, O) -> Result<Vec<(String, String)>, String>,
    {
        let mut runs = Vec::new();
        let mut extra = Vec::new();
        let mut peak = None;
        for r in 0..=self.opts.repeat {
            let fut = prepare(r)?;
            let can_reset = reset_hwm();
            let t0 = Instant::now();
            let out = self.rt.block_on(fut);
            let dt = t0.elapsed();
            if can_reset {
                peak = peak.max(read_hwm_kb());
            }
            let out = out.map_err(|e| format!("{name}: invocation {r} failed: {e}"))?;
            extra = verify(r, out).map_err(|e| format!("{name}: {e}"))?;
            if timed(r) {
                runs.push(dt.as_secs_f64() * 1000.0);
            }
        }
        Ok(Report {
            name: name.to_owned(),
            size,
            unit,
            units,
            runs_ms: runs,
            extra,
            invoke_peak_rss_kb: peak,
        })
    }
}

/// Whether run `r` counts: run 0 is the warm-up, verified but not timed.
fn timed(r: usize) -> bool {
    r > 0
}

fn check(cond: bool, msg: impl FnOnce() -> String) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(msg())
    }
}

fn facts(kv: &[(&str, String)]) -> Vec<(String, String)> {
    kv.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect()
}

// ---------------------------------------------------------------------------------------------
// Peak RSS (Linux): the process peak (getrusage) and the peak of the invocations alone
// ---------------------------------------------------------------------------------------------

/// The process's peak RSS in kB (`getrusage(RUSAGE_SELF).ru_maxrss`).
pub fn peak_rss_kb() -> u64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a `rusage` into the pointer it is given, which is valid and
    // large enough; RUSAGE_SELF cannot fail.
    #[allow(unsafe_code)]
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    PROC_PEAK_KB.load(Ordering::Relaxed).max(usage.ru_maxrss as u64) as u64
}

/// The process peak seen before each reset of the kernel's high-water mark.
static PROC_PEAK_KB: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Resets the kernel's RSS high-water mark (`/proc/self/clear_refs` ← 5), as the anchor does.
fn reset_hwm() -> bool {
    if let Some(kb) = read_status_kb("VmHWM:") {
        PROC_PEAK_KB.fetch_max(kb, Ordering::Relaxed);
    }
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn read_hwm_kb() -> Option<u64> {
    let kb = read_status_kb("VmHWM:")?;
    PROC_PEAK_KB.fetch_max(kb, Ordering::Relaxed);
    Some(kb)
}

fn read_status_kb(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

// ---------------------------------------------------------------------------------------------
// 1. sequential: a chain of N nodes, each `count += 1` (GraphBuilder: N is a run-time size)
// ---------------------------------------------------------------------------------------------

/// The state of `sequential`, `loop` and the checkpointed loops: one last-value field.
#[derive(State, Clone, Debug, Default)]
pub struct Count {
    pub count: i64,
}

fn inc(s: &Count) -> CountUpdate {
    CountUpdate::default().count(s.count + 1)
}

pub fn build_sequential(n: usize) -> GraphBuilder<Count> {
    let mut g = GraphBuilder::<Count>::new();
    let mut prev = START;
    for i in 0..n {
        let node = g.add_node(format!("n{i}"), inc);
        g.add_edge(prev, &node);
        prev = NodeRef::from(&node);
    }
    g.add_edge(prev, END);
    g
}

fn sequential(h: &Harness, n: usize) -> Result<Vec<Report>, String> {
    let app = build_sequential(n).compile().map_err(|e| e.to_string())?;
    let cfg = RunConfig::default().recursion_limit(n + 10);
    let report = h.measure(
        "sequential",
        n,
        "node",
        n,
        |_| Ok(app.invoke(Count { count: 0 }, &cfg)),
        |_, out| {
            check(out.count == n as i64, || format!("count = {}, want {n}", out.count))?;
            Ok(vec![])
        },
    )?;
    Ok(vec![report])
}

// ---------------------------------------------------------------------------------------------
// 2. fanout: split → w0..w{W-1} → (join) merge (GraphBuilder: W is a run-time size)
// ---------------------------------------------------------------------------------------------

#[derive(State, Clone, Debug, Default)]
pub struct Fan {
    #[reducer(append)]
    pub items: Vec<i64>,
    pub total: i64,
}

pub fn build_fanout(w: usize, merges: Arc<AtomicUsize>) -> GraphBuilder<Fan> {
    let mut g = GraphBuilder::<Fan>::new();
    g.add_node("split", |_: &Fan| ());
    let workers: Vec<NodeRef> = (0..w)
        .map(|i| {
            let item = i as i64;
            let node = g.add_node(format!("w{i}"), move |_: &Fan| FanUpdate::default().items(vec![item]));
            g.add_edge("split", &node);
            NodeRef::from(&node)
        })
        .collect();
    g.add_node("merge", move |s: &Fan| {
        merges.fetch_add(1, Ordering::Relaxed);
        FanUpdate::default().total(s.items.iter().sum())
    });
    g.add_edge(START, "split");
    g.add_join(workers, "merge"); // a waiting edge: merge runs once, after every worker
    g.add_edge("merge", END);
    g
}

/// `0..w` in the byte-wise order of the worker names `w0, w1, w10, w100, …` (LangGraph's order).
pub fn lexicographic(w: usize, prefix: &str) -> Vec<i64> {
    let mut v: Vec<i64> = (0..w as i64).collect();
    v.sort_by_key(|i| format!("{prefix}{i}"));
    v
}

fn order_name(items: &[i64], prefix: &str) -> &'static str {
    let numeric: Vec<i64> = (0..items.len() as i64).collect();
    if items == numeric.as_slice() {
        "numeric"
    } else if items == lexicographic(items.len(), prefix).as_slice() {
        "node_name_lexicographic"
    } else {
        "other"
    }
}

fn fanout(h: &Harness, w: usize) -> Result<Vec<Report>, String> {
    let merges = Arc::new(AtomicUsize::new(0));
    let app = build_fanout(w, merges.clone()).compile().map_err(|e| e.to_string())?;
    let cfg = RunConfig::default().recursion_limit(25);
    let mut first: Option<Vec<i64>> = None;
    let report = h.measure(
        "fanout",
        w,
        "node",
        w + 2,
        |_| {
            merges.store(0, Ordering::Relaxed);
            Ok(app.invoke(Fan::default(), &cfg))
        },
        |_, out| {
            let want = (w * w.saturating_sub(1) / 2) as i64;
            check(merges.load(Ordering::Relaxed) == 1, || {
                format!("merge ran {} times, want 1", merges.load(Ordering::Relaxed))
            })?;
            check(out.total == want, || format!("total = {}, want {want}", out.total))?;
            let mut sorted = out.items.clone();
            sorted.sort_unstable();
            check(sorted == (0..w as i64).collect::<Vec<_>>(), || {
                "items are not a permutation of 0..W".into()
            })?;
            let first = first.get_or_insert_with(|| out.items.clone());
            check(*first == out.items, || "the order of items differs between runs".into())?;
            let head: Vec<String> = out.items.iter().take(6).map(i64::to_string).collect();
            Ok(facts(&[
                ("items_order", order_name(&out.items, "w").into()),
                ("items_head", head.join(",")),
            ]))
        },
    )?;
    Ok(vec![report])
}

// ---------------------------------------------------------------------------------------------
// 3. send_map_reduce: plan → one Send per i → work → reduce (graph!)
// ---------------------------------------------------------------------------------------------

#[derive(State, Clone, Debug, Default)]
pub struct MapReduce {
    pub n: u64,
    #[reducer(append)]
    pub results: Vec<u64>,
    pub total: u64,
}

fn plan(_: &MapReduce) {}

fn each_index(s: &MapReduce) -> Vec<u64> {
    (0..s.n).collect()
}

fn work(i: &u64) -> MapReduceUpdate {
    MapReduceUpdate::default().results(vec![i * i])
}

fn reduce(s: &MapReduce) -> MapReduceUpdate {
    MapReduceUpdate::default().total(s.results.iter().sum())
}

graph! {
    /// `send_map_reduce`: W `work` tasks in one superstep, from `Send`s.
    pub struct MapReduceGraph;
    state: MapReduce,
    START -> plan;
    plan -> each_index ?> work;   // one `work` task per index, all in the next step
    work -> reduce -> END;        // a plain edge: every work task runs in one step, so reduce runs once
}

fn send_map_reduce(h: &Harness, w: usize) -> Result<Vec<Report>, String> {
    let app = MapReduceGraph::compile().map_err(|e| e.to_string())?;
    let cfg = RunConfig::default().recursion_limit(25);
    let input = || MapReduceUpdate::default().n(w as u64);
    let report = h.measure(
        "send_map_reduce",
        w,
        "node",
        w + 2,
        |_| Ok(app.invoke(input(), &cfg)),
        |_, out| {
            let w = w as u64;
            let want = w.saturating_sub(1) * w * (2 * w).saturating_sub(1) / 6;
            check(out.total == want, || format!("total = {}, want {want}", out.total))?;
            let squares: Vec<u64> = (0..w).map(|i| i * i).collect();
            check(out.results == squares, || {
                "results are not the squares in Send order".into()
            })?;
            Ok(facts(&[("results_order", "send_order".into())]))
        },
    )?;
    Ok(vec![report])
}

// ---------------------------------------------------------------------------------------------
// 4. loop: a ↔ b, M supersteps (graph!; the router closes over M)
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
pub enum Next {
    Again,
    Done,
}

/// The `loop` graph: `START → a → b`, then `b` goes back to `a` until `count ≥ m`.
pub fn build_loop(m: i64) -> GraphBuilder<Count> {
    graph! {
        state: Count,
        nodes: [a = inc, b = inc],
        START -> a -> b;
        b -> (move |s: &Count| if s.count >= m { Next::Done } else { Next::Again }) ? {
            Next::Again => a,
            Next::Done => END,
        };
    }
}

fn looping(h: &Harness, m: usize) -> Result<Vec<Report>, String> {
    check(m.is_multiple_of(2), || "M must be even".into())?;
    let app = build_loop(m as i64).compile().map_err(|e| e.to_string())?;
    let cfg = RunConfig::default().recursion_limit(m + 10);
    let report = h.measure(
        "loop",
        m,
        "superstep",
        m,
        |_| Ok(app.invoke(Count { count: 0 }, &cfg)),
        |_, out| {
            check(out.count == m as i64, || format!("count = {}, want {m}", out.count))?;
            Ok(vec![])
        },
    )?;
    Ok(vec![report])
}

// ---------------------------------------------------------------------------------------------
// 5. wide_state: 100 last-value fields and an append log; a chain of N nodes, each bumping 10
//    fields (GraphBuilder: N is a run-time size; the struct is spelled out by a macro_rules)
// ---------------------------------------------------------------------------------------------

macro_rules! wide_state {
    ($($f:ident $k:literal)*) => {
        /// `wide_state`'s state: `f0 … f99` (last value) and `log` (append): 101 fields.
        #[derive(State, Clone, Debug, Default)]
        pub struct Wide {
            $(pub $f: i64,)*
            #[reducer(append)]
            pub log: Vec<i64>,
        }

        impl Wide {
            /// The value of `f{k}`.
            pub fn field(&self, k: usize) -> i64 {
                match k {
                    $($k => self.$f,)*
                    _ => unreachable!("no field f{k}"),
                }
            }
        }

        /// `update` with `f{k} = v` added.
        fn set_field(update: WideUpdate, k: usize, v: i64) -> WideUpdate {
            match k {
                $($k => update.$f(v),)*
                _ => unreachable!("no field f{k}"),
            }
        }
    };
}

wide_state! {
    f0 0 f1 1 f2 2 f3 3 f4 4 f5 5 f6 6 f7 7 f8 8 f9 9 f10 10 f11 11 f12 12 f13 13 f14 14 f15 15
    f16 16 f17 17 f18 18 f19 19 f20 20 f21 21 f22 22 f23 23 f24 24 f25 25 f26 26 f27 27 f28 28
    f29 29 f30 30 f31 31 f32 32 f33 33 f34 34 f35 35 f36 36 f37 37 f38 38 f39 39 f40 40 f41 41
    f42 42 f43 43 f44 44 f45 45 f46 46 f47 47 f48 48 f49 49 f50 50 f51 51 f52 52 f53 53 f54 54
    f55 55 f56 56 f57 57 f58 58 f59 59 f60 60 f61 61 f62 62 f63 63 f64 64 f65 65 f66 66 f67 67
    f68 68 f69 69 f70 70 f71 71 f72 72 f73 73 f74 74 f75 75 f76 76 f77 77 f78 78 f79 79 f80 80
    f81 81 f82 82 f83 83 f84 84 f85 85 f86 86 f87 87 f88 88 f89 89 f90 90 f91 91 f92 92 f93 93
    f94 94 f95 95 f96 96 f97 97 f98 98 f99 99
}

const K_FIELDS: usize = 100;
const FIELDS_PER_NODE: usize = 10;

pub fn build_wide(n: usize) -> GraphBuilder<Wide> {
    let mut g = GraphBuilder::<Wide>::new();
    let mut prev = START;
    for j in 0..n {
        let node = g.add_node(format!("n{j}"), move |s: &Wide| {
            let mut update = WideUpdate::default().log(vec![j as i64]);
            for k in 0..FIELDS_PER_NODE {
                let f = (FIELDS_PER_NODE * j + k) % K_FIELDS;
                update = set_field(update, f, s.field(f) + 1);
            }
            update
        });
        g.add_edge(prev, &node);
        prev = NodeRef::from(&node);
    }
    g.add_edge(prev, END);
    g
}

fn wide_state(h: &Harness, n: usize) -> Result<Vec<Report>, String> {
    check(n.is_multiple_of(10), || "N must be a multiple of 10".into())?;
    let app = build_wide(n).compile().map_err(|e| e.to_string())?;
    let cfg = RunConfig::default().recursion_limit(n + 10);
    let report = h.measure(
        "wide_state",
        n,
        "node",
        n,
        |_| Ok(app.invoke(Wide::default(), &cfg)),
        |_, out| {
            let per_field = (n * FIELDS_PER_NODE / K_FIELDS) as i64;
            for k in 0..K_FIELDS {
                check(out.field(k) == per_field, || {
                    format!("f{k} = {}, want {per_field}", out.field(k))
                })?;
            }
            check(out.log == (0..n as i64).collect::<Vec<_>>(), || {
                "log is not 0..N".into()
            })?;
            Ok(vec![])
        },
    )?;
    Ok(vec![report])
}

// ---------------------------------------------------------------------------------------------
// 6./7. checkpointed loop (in-memory, SQLite): a fresh saver and graph per invocation
// ---------------------------------------------------------------------------------------------

fn thread_config(m: usize, durability: Durability) -> RunConfig {
    RunConfig::thread(THREAD).recursion_limit(m + 10).durability(durability)
}

fn durability_name(d: Durability) -> &'static str {
    match d {
        Durability::Sync => "sync",
        Durability::Async => "async",
        Durability::Exit => "exit",
    }
}

fn synchronous_name(s: Synchronous) -> &'static str {
    match s {
        Synchronous::Off => "OFF",
        Synchronous::Normal => "NORMAL",
        Synchronous::Full => "FULL",
    }
}

/// Checks the state saved for the thread: `count = m`, nothing left to run.
fn verify_saved_count(h: &Harness, app: &CompiledGraph<Count>, cfg: &RunConfig, m: usize) -> Result<(), String> {
    let snap =
        h.rt.block_on(app.get_state(cfg))
            .map_err(|e| e.to_string())?
            .ok_or("no saved state")?;
    check(snap.values.count == m as i64, || {
        format!("saved count = {}, want {m}", snap.values.count)
    })?;
    check(snap.next.is_empty(), || {
        format!("saved state still has next = {:?}", snap.next)
    })
}

fn usage(h: &Harness, saver: &dyn Checkpointer) -> Result<weir::checkpoint::Usage, String> {
    h.rt.block_on(saver.usage(THREAD)).map_err(|e| e.to_string())
}

/// The checkpoints a run of `m` supersteps writes: LangGraph's M + 2 (input, START step, and one
/// per node superstep) unless only the last is kept.
fn expected_checkpoints(m: usize, d: Durability) -> u64 {
    match d {
        Durability::Exit => 1,
        _ => m as u64 + 2,
    }
}

fn checkpoint_memory(h: &Harness, m: usize) -> Result<Vec<Report>, String> {
    check(m.is_multiple_of(2), || "M must be even".into())?;
    let durability = h.opts.durability;
    let cfg = thread_config(m, durability);
    let mut current: Option<(CompiledGraph<Count>, MemorySaver)> = None;
    let report = {
        let cur = std::cell::RefCell::new(&mut current);
        h.measure(
            "checkpoint_memory",
            m,
            "superstep",
            m,
            |_| {
                let saver = MemorySaver::new();
                let app = build_loop(m as i64)
                    .with_checkpointer(saver.clone())
                    .compile()
                    .map_err(|e| e.to_string())?;
                **cur.borrow_mut() = Some((app.clone(), saver));
                let cfg = cfg.clone();
                Ok(async move { app.invoke(Count { count: 0 }, &cfg).await })
            },
            |_, out| {
                check(out.count == m as i64, || format!("count = {}, want {m}", out.count))?;
                let guard = cur.borrow();
                let (app, saver) = guard.as_ref().expect("prepared");
                verify_saved_count(h, app, &cfg, m)?;
                let u = usage(h, saver)?;
                let want = expected_checkpoints(m, durability);
                check(u.checkpoints == want, || {
                    format!("{} checkpoints, want {want}", u.checkpoints)
                })?;
                Ok(facts(&[
                    ("durability", durability_name(durability).into()),
                    ("checkpoints", u.checkpoints.to_string()),
                    ("blobs", u.blobs.to_string()),
                    ("checkpoint_blob_bytes", u.blob_bytes.to_string()),
                    ("pending_writes", u.pending_writes.to_string()),
                ]))
            },
        )?
    };
    Ok(vec![report])
}

/// A fresh SQLite file in `dir` with its schema created (untimed), WAL, the given `synchronous`.
fn fresh_sqlite(dir: &Path, r: usize, sync: Synchronous) -> Result<SqliteSaver, String> {
    let path = dir.join(format!("run{r}.sqlite"));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    SqliteSaver::options()
        .synchronous(sync)
        .open(&path)
        .map_err(|e| e.to_string())
}

/// What the file holds after a run: rows, bytes of every stored value, file size after
/// `wal_checkpoint(TRUNCATE)`.
#[derive(Debug, Default, Clone, Copy)]
struct FileFacts {
    checkpoint_rows: u64,
    write_rows: u64,
    /// Bytes of all columns of all rows (text and blobs by length, numbers as 8).
    row_bytes: u64,
    /// Bytes of the stored values alone (the `blob_bytes` of the checkpoint rows).
    blob_bytes: u64,
    /// The most bytes of values stored under one checkpoint.
    max_blob_bytes: u64,
    db_file_bytes: u64,
}

fn file_facts(path: &Path) -> Result<FileFacts, String> {
    use rusqlite::types::ValueRef;
    let conn = rusqlite::Connection::open(path).map_err(|e| e.to_string())?;
    let q = |sql: &str| -> Result<u64, String> {
        conn.query_row(sql, [], |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
            .map_err(|e| e.to_string())
    };
    let mut f = FileFacts {
        checkpoint_rows: q("SELECT COUNT(*) FROM checkpoints")?,
        write_rows: q("SELECT COUNT(*) FROM writes")?,
        blob_bytes: q("SELECT COALESCE(SUM(LENGTH(blob_bytes)), 0) FROM checkpoints")?,
        max_blob_bytes: q("SELECT COALESCE(MAX(LENGTH(blob_bytes)), 0) FROM checkpoints")?,
        ..FileFacts::default()
    };
    for table in ["checkpoints", "writes"] {
        let mut stmt = conn
            .prepare(&format!("SELECT * FROM {table}"))
            .map_err(|e| e.to_string())?;
        let cols = stmt.column_count();
        let mut rows = stmt.query([]).map_err(|e| e.to_string())?;
        while let Some(row) = rows.next().map_err(|e| e.to_string())? {
            for c in 0..cols {
                f.row_bytes += match row.get_ref(c).map_err(|e| e.to_string())? {
                    ValueRef::Null => 0,
                    ValueRef::Integer(_) | ValueRef::Real(_) => 8,
                    ValueRef::Text(t) | ValueRef::Blob(t) => t.len() as u64,
                };
            }
        }
    }
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .map_err(|e| e.to_string())?;
    drop(conn);
    f.db_file_bytes = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    Ok(f)
}

fn checkpoint_sqlite(h: &Harness, m: usize) -> Result<Vec<Report>, String> {
    check(m.is_multiple_of(2), || "M must be even".into())?;
    sqlite_loop(h, "checkpoint_sqlite", m, false)
}

// ---------------------------------------------------------------------------------------------
// 8. checkpoint_growing_state: the loop appending a 100-byte item per step, on SQLite (graph!)
// ---------------------------------------------------------------------------------------------

#[derive(State, Clone, Debug, Default)]
pub struct Grow {
    pub count: i64,
    #[reducer(append)]
    pub items: Vec<String>,
}

/// Item `k`: `k` zero-padded to 6 digits, then 94 `x`: exactly 100 ASCII bytes.
pub fn item(k: i64) -> String {
    format!("{k:06}{}", "x".repeat(94))
}

fn grow_step(s: &Grow) -> GrowUpdate {
    let c = s.count;
    GrowUpdate::default().count(c + 1).items(vec![item(c)])
}

pub fn build_grow(m: i64) -> GraphBuilder<Grow> {
    graph! {
        state: Grow,
        nodes: [a = grow_step, b = grow_step],
        START -> a -> b;
        b -> (move |s: &Grow| if s.count >= m { Next::Done } else { Next::Again }) ? {
            Next::Again => a,
            Next::Done => END,
        };
    }
}

fn checkpoint_growing_state(h: &Harness, m: usize) -> Result<Vec<Report>, String> {
    check(m.is_multiple_of(2), || "M must be even".into())?;
    sqlite_loop(h, "checkpoint_growing_state", m, true)
}

/// Workloads 7 and 8: the loop (`grow`: with the growing list) on a fresh SQLite file per
/// invocation; then, when asked, the floor: bare inserts of the same bytes per step.
fn sqlite_loop(h: &Harness, name: &str, m: usize, grow: bool) -> Result<Vec<Report>, String> {
    let durability = h.opts.durability;
    let sync = h.opts.synchronous;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let dir = tmp.path().to_path_buf();
    let cfg = thread_config(m, durability);
    let verifier = h;
    let last =
        std::cell::RefCell::new(None::<(Option<CompiledGraph<Count>>, Option<CompiledGraph<Grow>>, SqliteSaver)>);
    // The floor runs once after each invocation, on the bytes it stored per step: the two
    // alternate, so that both see the box as it is at the time.
    let mut floor_bytes = 0;
    let mut floor_runs = Vec::new();
    let mut report = h.measure(
        name,
        m,
        "superstep",
        m,
        |r| {
            let saver = fresh_sqlite(&dir, r, sync)?;
            let cfg = cfg.clone();
            if grow {
                let app = build_grow(m as i64)
                    .with_checkpointer(saver.clone())
                    .compile()
                    .map_err(|e| e.to_string())?;
                *last.borrow_mut() = Some((None, Some(app.clone()), saver));
                Ok(futures::future::Either::Left(async move {
                    app.invoke(Grow::default(), &cfg)
                        .await
                        .map(|s| (s.count, Some(s.items)))
                }))
            } else {
                let app = build_loop(m as i64)
                    .with_checkpointer(saver.clone())
                    .compile()
                    .map_err(|e| e.to_string())?;
                *last.borrow_mut() = Some((Some(app.clone()), None, saver));
                Ok(futures::future::Either::Right(async move {
                    app.invoke(Count { count: 0 }, &cfg).await.map(|s| (s.count, None))
                }))
            }
        },
        |r, (count, items)| {
            check(count == m as i64, || format!("count = {count}, want {m}"))?;
            let (loop_app, grow_app, saver) = last.borrow_mut().take().expect("prepared");
            if let Some(items) = items {
                check(items.len() == m, || format!("{} items, want {m}", items.len()))?;
                check(items.iter().enumerate().all(|(k, it)| *it == item(k as i64)), || {
                    "items differ from item(0..M)".into()
                })?;
                let app = grow_app.expect("grow graph");
                let snap = verifier
                    .rt
                    .block_on(app.get_state(&cfg))
                    .map_err(|e| e.to_string())?
                    .ok_or("no saved state")?;
                check(snap.values.items == items, || {
                    "the saved items differ from the output".into()
                })?;
                check(snap.next.is_empty(), || "the saved state still has next nodes".into())?;
            } else {
                verify_saved_count(verifier, &loop_app.expect("loop graph"), &cfg, m)?;
            }
            let u = usage(verifier, &saver)?;
            let want = expected_checkpoints(m, durability);
            check(u.checkpoints == want, || {
                format!("{} checkpoints, want {want}", u.checkpoints)
            })?;
            let path = saver.path().to_path_buf();
            drop(saver);
            let f = file_facts(&path)?;
            floor_bytes = (f.row_bytes as f64 / m as f64).round().max(1.0) as usize;
            if verifier.opts.floor {
                let ms = floor_run(sync, m, floor_bytes, &dir.join(format!("floor{r}.sqlite")))?;
                if timed(r) {
                    floor_runs.push(ms);
                }
            }
            Ok(facts(&[
                ("durability", durability_name(durability).into()),
                ("sqlite_synchronous", synchronous_name(sync).into()),
                ("sqlite_journal_mode", "wal".into()),
                ("checkpoints", u.checkpoints.to_string()),
                ("sqlite_checkpoint_rows", f.checkpoint_rows.to_string()),
                ("blobs", u.blobs.to_string()),
                ("sqlite_write_rows", f.write_rows.to_string()),
                ("checkpoint_blob_bytes", f.blob_bytes.to_string()),
                ("max_checkpoint_blob_bytes", f.max_blob_bytes.to_string()),
                ("stored_row_bytes", f.row_bytes.to_string()),
                ("db_file_bytes", f.db_file_bytes.to_string()),
            ]))
        },
    )?;
    let mut out = Vec::new();
    if h.opts.floor {
        // Each invocation against the floor run right after it, too: when the box changes speed
        // between the two medians' runs, the pairs still compare like with like.
        let paired: Vec<f64> = report.runs_ms.iter().zip(&floor_runs).map(|(w, f)| w / f).collect();
        let floor = floor_report(h, m, floor_bytes, floor_runs);
        let ratio = report.per_unit_us() / floor.per_unit_us();
        report
            .extra
            .push(("floor_insert_us".into(), format!("{:.3}", floor.per_unit_us())));
        report.extra.push(("vs_floor".into(), format!("{ratio:.2}")));
        report
            .extra
            .push(("vs_floor_paired".into(), format!("{:.2}", median(&paired))));
        out.push(report);
        out.push(floor);
    } else {
        out.push(report);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// The floor: one bare SQLite insert (its own transaction) of `bytes` bytes per step, on a file
// with the same settings (WAL, the same `synchronous`), with rusqlite directly.
// ---------------------------------------------------------------------------------------------

fn sqlite_floor(h: &Harness, m: usize, bytes: usize, dir: &Path) -> Result<Report, String> {
    let mut runs = Vec::new();
    for r in 0..=h.opts.repeat {
        let ms = floor_run(h.opts.synchronous, m, bytes, &dir.join(format!("floor{r}.sqlite")))?;
        if timed(r) {
            runs.push(ms);
        }
    }
    Ok(floor_report(h, m, bytes, runs))
}

/// One run of the floor: `m` inserts of `bytes` bytes into a fresh file at `path`; returns the
/// milliseconds they took.
fn floor_run(sync: Synchronous, m: usize, bytes: usize, path: &Path) -> Result<f64, String> {
    let payload = vec![b'x'; bytes];
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    let conn = rusqlite::Connection::open(path).map_err(|e| e.to_string())?;
    conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
        .map_err(|e| e.to_string())?;
    conn.pragma_update(None, "synchronous", synchronous_name(sync))
        .map_err(|e| e.to_string())?;
    conn.execute_batch("CREATE TABLE t (thread_id TEXT NOT NULL, step INTEGER NOT NULL, v BLOB NOT NULL)")
        .map_err(|e| e.to_string())?;
    let mut stmt = conn
        .prepare("INSERT INTO t (thread_id, step, v) VALUES (?1, ?2, ?3)")
        .map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    for step in 0..m {
        stmt.execute(rusqlite::params![THREAD, step as i64, payload])
            .map_err(|e| e.to_string())?;
    }
    let dt = t0.elapsed();
    drop(stmt);
    let rows: i64 = conn
        .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
        .map_err(|e| e.to_string())?;
    check(rows == m as i64, || format!("floor: {rows} rows, want {m}"))?;
    Ok(dt.as_secs_f64() * 1000.0)
}

/// The `sqlite_floor` line of timed floor runs.
fn floor_report(h: &Harness, m: usize, bytes: usize, runs_ms: Vec<f64>) -> Report {
    Report {
        name: "sqlite_floor".into(),
        size: m,
        unit: "insert",
        units: m,
        runs_ms,
        extra: facts(&[
            ("bytes_per_insert", bytes.to_string()),
            ("sqlite_synchronous", synchronous_name(h.opts.synchronous).into()),
            ("sqlite_journal_mode", "wal".into()),
        ]),
        invoke_peak_rss_kb: None,
    }
}
