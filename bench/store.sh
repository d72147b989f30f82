#!/usr/bin/env bash
# The Store benchmark, weir beside LangGraph on the same data: puts (batches of 1,000), gets,
# filtered searches (in one namespace of 1,000 items, and over all 100,000) and
# list_namespaces, over 100,000 items, on weir's memory, SQLite and PostgreSQL stores and
# LangGraph's InMemoryStore, SqliteStore and PostgresStore; each backend in its own process,
# peak RSS reported. Prints the JSON lines, then the table (bench/store_report.py).
#
#   WEIR_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test bench/store.sh [N]
#
# Makes a venv (STORE_BENCH_VENV, default /tmp/weir-store-venv) with langgraph,
# langgraph-checkpoint-sqlite, langgraph-checkpoint-postgres and psycopg[binary]; builds only
# the weir example, --release.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-100000}"
VENV="${STORE_BENCH_VENV:-/tmp/weir-store-venv}"
: "${WEIR_POSTGRES_URL:?set WEIR_POSTGRES_URL, e.g. postgres://postgres@127.0.0.1:5432/test}"
export WEIR_POSTGRES_URL
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q langgraph langgraph-checkpoint-sqlite langgraph-checkpoint-postgres "psycopg[binary]"
fi
cargo build --release -q -p weir-runtime --features postgres --example store_bench
BIN="${CARGO_TARGET_DIR:-target}/release/examples/store_bench"
OUT="$(mktemp)"
for backend in memory sqlite postgres; do
    "$BIN" "$backend" "$N" | tee -a "$OUT"
done
for backend in memory sqlite postgres; do
    "$VENV/bin/python" bench/store_langgraph.py "$backend" "$N" | tee -a "$OUT"
done
echo
"$VENV/bin/python" bench/store_report.py < "$OUT"
rm -f "$OUT"
