#!/usr/bin/env bash
# Runs the WORKLOADS.md workloads on weir, LangGraph 1.2.9 (Python) and the Rust peers
# (adk-graph, weavegraph, langgraph-rs), alternately, row by row, on the same sizes, then prints
# a table of medians and ratios and draws docs/benchmarks.svg.
#
# Needs: a Rust toolchain, Python 3 with pip (and network access to PyPI and crates.io the
# first time). Everything it installs stays in bench/.venv and the target directories.
#
# Usage: bench/compare.sh [--quick]
#   env: PASSES=n (default 1)   IMPLS="weir langgraph peers" (default all three)
#        WEIR_TARGET_DIR (default target/)   PEERS_TARGET_DIR (default bench/peers/target)
#        RESULTS=path (default bench/results/<UTC stamp>.txt)
#        ROWS_ONLY="row; row; …" runs only these rows (same form as ROWS below, e.g.
#          ROWS_ONLY="func_sequential 1000 5; func_parallel 10000 1") and leaves the chart alone
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
QUICK=0
[ "${1:-}" = "--quick" ] && QUICK=1
PASSES=${PASSES:-1}
IMPLS=${IMPLS:-"weir langgraph peers"}
WEIR_TARGET_DIR=${WEIR_TARGET_DIR:-$ROOT/target}
PEERS_TARGET_DIR=${PEERS_TARGET_DIR:-$ROOT/bench/peers/target}
mkdir -p bench/results
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
RESULTS=${RESULTS:-bench/results/$STAMP.txt}
has() { case " $IMPLS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

# --- set up --------------------------------------------------------------------------------
if has langgraph; then
  if [ ! -x bench/.venv/bin/python ]; then
    python3 -m venv bench/.venv
  fi
  if ! bench/.venv/bin/python -c 'import langgraph.checkpoint.sqlite' 2>/dev/null; then
    bench/.venv/bin/pip install --quiet 'langgraph==1.2.9' langgraph-checkpoint-sqlite
  fi
fi
if has weir; then
  echo "building weir's harness (release)…" >&2
  CARGO_TARGET_DIR=$WEIR_TARGET_DIR cargo build --release --bench weir_bench --quiet
  WEIR_BIN=$(CARGO_TARGET_DIR=$WEIR_TARGET_DIR cargo bench --bench weir_bench --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m["target"]["name"]=="weir_bench" and m.get("executable"): print(m["executable"])' | tail -n1)
fi
if has peers; then
  echo "building the peers' harness (release)…" >&2
  (cd bench/peers && CARGO_TARGET_DIR=$PEERS_TARGET_DIR cargo build --release --quiet)
  PEERS_BIN=$PEERS_TARGET_DIR/release/weir-peers-bench
fi

# --- the rows: workload size [repeat for LangGraph] [flags…] ----------------------------------
# LangGraph and the peers are quadratic in graph size (sequential) and in state size (growing
# state): their largest rows run fewer times (third column), and growing state at 10 000 steps (≈5 GB of checkpoint blobs,
# minutes per invocation) is not run on it at all ("-" below).
if [ $QUICK = 1 ]; then
  ROWS=(
    "sequential 20 1"
    "fanout 20 1"
    "send_map_reduce 20 1"
    "loop 20 1"
    "wide_state 20 1"
    "checkpoint_memory 20 1"
    "checkpoint_sqlite 20 1 --sqlite-synchronous OFF"
    "checkpoint_growing_state 20 1 --sqlite-synchronous OFF"
    "func_sequential 20 1"
    "func_parallel 20 1"
    "func_sequential_sqlite 20 1 --sqlite-synchronous OFF"
    "func_parallel_sqlite 20 1 --sqlite-synchronous OFF"
  )
else
  ROWS=(
    "sequential 1000 5"
    "fanout 1000 5"
    "send_map_reduce 1000 5"
    "loop 10000 5"
    "wide_state 1000 5"
    "checkpoint_memory 1000 5"
    "checkpoint_sqlite 1000 5"
    "checkpoint_sqlite 1000 5 --sqlite-synchronous OFF"
    "checkpoint_sqlite 1000 5 --sqlite-synchronous OFF --durability sync"
    "checkpoint_growing_state 1000 5"
    "checkpoint_growing_state 1000 5 --sqlite-synchronous OFF"
    # the sweeps behind the chart
    "sequential 100 5"
    "sequential 10000 1"
    "loop 1000 5"
    "checkpoint_growing_state 2000 5 --sqlite-synchronous OFF"
    "checkpoint_growing_state 4000 2 --sqlite-synchronous OFF"
    "checkpoint_growing_state 10000 - --sqlite-synchronous OFF"
    "checkpoint_growing_state 10000 - "
    # the functional API (issue 26): 1,000 tasks one after the other, and 1,000 at once
    "func_sequential 1000 5"
    "func_parallel 1000 5"
    "func_sequential_sqlite 1000 5"
    "func_parallel_sqlite 1000 5"
    "func_sequential 10000 1"
  )
fi
if [ -n "${ROWS_ONLY:-}" ]; then
  IFS=';' read -r -a ROWS <<<"$ROWS_ONLY"
fi
REPEAT=5
[ $QUICK = 1 ] && REPEAT=1

facts() {
  echo "# date=$(date -u +%Y-%m-%dT%H:%M:%SZ) nproc=$(nproc) loadavg=\"$(cut -d' ' -f1-3 /proc/loadavg)\""
  echo "# cpu=\"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')\" mem_kb=$(grep MemTotal /proc/meminfo | awk '{print $2}') kernel=$(uname -r)"
  echo "# rustc=\"$(rustc --version)\" weir=$(git rev-parse --short HEAD)"
  if has langgraph; then
    echo "# $(bench/.venv/bin/python - <<'PY'
import sqlite3, sys
from importlib.metadata import version as v
print(f"python={sys.version.split()[0]} langgraph={v('langgraph')} langgraph-checkpoint={v('langgraph-checkpoint')} "
      f"langgraph-checkpoint-sqlite={v('langgraph-checkpoint-sqlite')} python_sqlite={sqlite3.sqlite_version}")
PY
)"
  fi
}

# Runs one implementation on one row; prefixes every line with impl= and the row's flags.
run_one() {
  local impl=$1 workload=$2 size=$3 lgrepeat=$4
  shift 4
  local flags="$*"
  local tag="flags=${flags// /_}"
  [ -z "$flags" ] && tag="flags=-"
  case $impl in
    weir) "$WEIR_BIN" "$workload" "$size" --repeat $REPEAT $flags 2>&1 || true ;;
    langgraph)
      if [ "$lgrepeat" = "-" ]; then
        echo "workload=$workload size=$size SKIPPED: quadratic in LangGraph, too slow at this size"
      else
        bench/.venv/bin/python bench/langgraph_workloads.py "$workload" "$size" --repeat "$lgrepeat" $flags 2>&1 || true
      fi
      ;;
    adk-graph | weavegraph | langgraph-rs)
      # The peers are quadratic where LangGraph is: they run as many times as it does.
      if [ "$lgrepeat" = "-" ]; then
        echo "workload=$workload size=$size SKIPPED: quadratic in this crate too, too slow at this size"
      else
        "$PEERS_BIN" "$impl" "$workload" "$size" --repeat "$lgrepeat" $flags 2>&1 || true
      fi
      ;;
  esac | sed "s/^/impl=$impl $tag /"
}

{
  facts
  for pass in $(seq 1 "$PASSES"); do
    for row in "${ROWS[@]}"; do
      # shellcheck disable=SC2086
      set -- $row
      echo "# pass=$pass row: $row" >&2
      has weir && run_one weir "$@"
      has langgraph && run_one langgraph "$@"
      if has peers; then
        for p in adk-graph weavegraph langgraph-rs; do run_one "$p" "$@"; done
      fi
    done
  done
} | tee "$RESULTS"

echo >&2
if [ -n "${ROWS_ONLY:-}" ]; then
  # A subset of the rows: the table only; the chart is drawn from the full set.
  python3 bench/report.py "$RESULTS"
else
  python3 bench/report.py "$RESULTS" --svg docs/benchmarks.svg
fi
