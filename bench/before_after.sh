#!/usr/bin/env bash
# Runs weir's benchmark rows on two revisions side by side: the base revision's harness and the
# work tree's, alternately, invocation by invocation, so both see the same machine. Prints each
# row's medians and the ratio (work tree ÷ base; above 1.00 is slower).
#
# Usage: bench/before_after.sh BASE_REV [ROUNDS]
#   env: BASE_TARGET_DIR (default /tmp/weir-base-target)  WEIR_TARGET_DIR (default target/)
#        RESULTS=path (default bench/results/before-after-<UTC stamp>.txt)
# The base is checked out in a temporary git worktree; nothing in the work tree changes.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BASE=${1:?usage: bench/before_after.sh BASE_REV [ROUNDS]}
ROUNDS=${2:-3}
BASE_TARGET_DIR=${BASE_TARGET_DIR:-/tmp/weir-base-target}
WEIR_TARGET_DIR=${WEIR_TARGET_DIR:-$ROOT/target}
mkdir -p bench/results
RESULTS=${RESULTS:-bench/results/before-after-$(date -u +%Y%m%dT%H%M%SZ).txt}

harness() { # dir target-dir -> path of the release weir_bench binary
  (cd "$1" && CARGO_TARGET_DIR=$2 cargo build --release --bench weir_bench --quiet &&
    CARGO_TARGET_DIR=$2 cargo bench --bench weir_bench --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m["target"]["name"]=="weir_bench" and m.get("executable"): print(m["executable"])' | tail -n1)
}
WT=$(mktemp -d)
trap 'git worktree remove --force "$WT" >/dev/null 2>&1 || true' EXIT
git worktree add -q --detach "$WT" "$BASE"
echo "building the base harness ($BASE)…" >&2
BASE_BIN=$(harness "$WT" "$BASE_TARGET_DIR")
echo "building the work tree's harness…" >&2
NEW_BIN=$(harness "$ROOT" "$WEIR_TARGET_DIR")

ROWS=(
  "sequential 1000"
  "fanout 1000"
  "send_map_reduce 1000"
  "loop 10000"
  "wide_state 1000"
  "checkpoint_memory 1000"
  "checkpoint_sqlite 1000"
  "checkpoint_sqlite 1000 --sqlite-synchronous OFF"
  "checkpoint_sqlite 1000 --sqlite-synchronous OFF --durability sync"
  "checkpoint_growing_state 1000 --sqlite-synchronous OFF"
)
{
  echo "# date=$(date -u +%Y-%m-%dT%H:%M:%SZ) base=$(git rev-parse --short "$BASE") new=$(git rev-parse --short HEAD)$(git diff --quiet || echo +dirty) rounds=$ROUNDS"
  for round in $(seq 1 "$ROUNDS"); do
    for row in "${ROWS[@]}"; do
      # shellcheck disable=SC2086
      set -- $row
      flags="${*:3}"; tag="flags=${flags// /_}"; [ -z "$flags" ] && tag="flags=-"
      echo "# round=$round row: $row" >&2
      # Alternate which goes first, so neither always runs on a warmer machine.
      if [ $((round % 2)) = 1 ]; then order="base new"; else order="new base"; fi
      for which in $order; do
        bin=$BASE_BIN; [ "$which" = new ] && bin=$NEW_BIN
        "$bin" "$@" --repeat 5 2>&1 | grep '^workload=' | sed "s/^/impl=$which $tag /" || true
      done
    done
  done
} | tee "$RESULTS" >&2

python3 - "$RESULTS" <<'PY'
import statistics, sys
from collections import defaultdict
runs = defaultdict(lambda: defaultdict(list))
order = []
for line in open(sys.argv[1]):
    if not line.startswith("impl="):
        continue
    kv = dict(p.split("=", 1) for p in line.split() if "=" in p)
    if kv.get("workload") == "sqlite_floor" or "median_ms" not in kv:
        continue
    key = (kv["workload"], kv["size"], kv["flags"])
    if key not in order:
        order.append(key)
    runs[key][kv["impl"]].append(float(kv["median_ms"]))
print("| workload | size | flags | base ms | new ms | new ÷ base |")
print("|---|---:|---|---:|---:|---:|")
for key in order:
    b, n = (statistics.median(runs[key][w]) for w in ("base", "new"))
    print(f"| {key[0]} | {int(key[1]):,} | {key[2]} | {b:.3f} | {n:.3f} | {n / b:.2f} |")
PY
