#!/usr/bin/env bash
# Instructions (callgrind's Ir) of each weir benchmark row for two harness binaries, the same
# invocation each: a comparison the load of a shared machine cannot move, unlike wall time.
# Prints a markdown table: row, base, new, new ÷ base (whole-process totals, start-up included).
#
# Usage: bench/instructions.sh BASE_BIN NEW_BIN
#   Build each with `cargo bench --bench weir_bench --no-run` at the revision wanted (a
#   CARGO_TARGET_DIR per revision); bench/before_after.sh does that for a base revision.
#   Needs valgrind (`apt-get install valgrind`). About a minute for both.
set -euo pipefail
BASE=${1:?usage: bench/instructions.sh BASE_BIN NEW_BIN}
NEW=${2:?usage: bench/instructions.sh BASE_BIN NEW_BIN}
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
ir() { # binary, row words... -> instructions
  local bin=$1; shift
  (cd "${TMPDIR:-/tmp}" && valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$@" --repeat 1 --no-floor 2>&1 |
    awk '/Collected/ {print $NF}')
}
echo "| row | base | new | new ÷ base |"
echo "|---|---:|---:|---:|"
for row in "${ROWS[@]}"; do
  # shellcheck disable=SC2086
  b=$(ir "$BASE" $row); n=$(ir "$NEW" $row)
  awk -v r="$row" -v b="$b" -v n="$n" 'BEGIN { printf "| %s | %.2f M | %.2f M | %.3f |\n", r, b/1e6, n/1e6, n/b }'
done
