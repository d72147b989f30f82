#!/usr/bin/env bash
# Retention benchmark (issue 27), weir and LangGraph side by side:
#  1. a 10,000-turn chat thread on SQLite with keep-last-100 (pruned every 10 turns), and the
#     same thread with no retention: bytes on disk, checkpoints kept and µs per turn every
#     1,000 turns; and a chat keeping only its last 200 messages, with keep-last-100;
#  2. a SQLite file filled to about 1 GB, then pruned to keep-last-100, timed;
#  3. LangGraph 1.2.9's SqliteSaver (no retention) on the same thread, in bench/.venv.
#
# Usage: bench/retention.sh [TURNS] [MB]      (defaults 10000, 1024)
#   env: DIR (scratch files, default /tmp/weir-retention), SKIP_LANGGRAPH=1,
#        LANGGRAPH_TURNS (default 2000: its storage grows with the square of the turns)
# Builds only the `retention` example, in release. Prints CSV blocks; nothing is written to the
# work tree but bench/.venv.
set -euo pipefail
cd "$(dirname "$0")/.."
TURNS=${1:-10000}
MB=${2:-1024}
DIR=${DIR:-/tmp/weir-retention}
mkdir -p "$DIR"
cargo build --release --example retention --quiet
BIN=${CARGO_TARGET_DIR:-target}/release/examples/retention

echo "## weir, keep-last-100"
"$BIN" chat --db "$DIR/keep100.db" --turns "$TURNS" --keep-last 100
echo "## weir, no retention"
"$BIN" chat --db "$DIR/all.db" --turns "$TURNS"
echo "## weir, keep-last-100, a chat keeping its last 200 messages"
"$BIN" chat --db "$DIR/window.db" --turns "$TURNS" --keep-last 100 --window 200

echo "## weir, prune of a ~${MB} MB file"
rm -f "$DIR/big.db" "$DIR/big.db-wal" "$DIR/big.db-shm"
"$BIN" fill --db "$DIR/big.db" --mb "$MB"
"$BIN" prune --db "$DIR/big.db" --keep-last 100
rm -f "$DIR/big.db" "$DIR/big.db-wal" "$DIR/big.db-shm"

if [ "${SKIP_LANGGRAPH:-0}" != 1 ]; then
  if [ ! -x bench/.venv/bin/python ]; then python3 -m venv bench/.venv; fi
  if ! bench/.venv/bin/python -c 'import langgraph.checkpoint.sqlite' 2>/dev/null; then
    bench/.venv/bin/pip install --quiet 'langgraph==1.2.9' langgraph-checkpoint-sqlite
  fi
  echo "## LangGraph SqliteSaver (no retention)"
  bench/.venv/bin/python bench/retention_langgraph.py "$DIR/langgraph.db" "${LANGGRAPH_TURNS:-2000}" 250
fi
