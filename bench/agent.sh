#!/usr/bin/env bash
# The agent benchmark: a ReAct agent with a model that answers instantly and two trivial tools,
# on weir (agent/examples/agent_bench.rs, release build) and on LangGraph's create_react_agent
# (bench/agent_langgraph.py, a fake chat model from langchain-core), side by side: the cost of
# one turn (median and mean over TURNS turns of one growing conversation, MemorySaver /
# InMemorySaver) and the memory a thread of MESSAGES messages adds (checkpoints included).
#
# Needs: a Rust toolchain, Python 3 with pip (and PyPI the first time: langgraph 1.2.9, as
# bench/compare.sh, into bench/.venv).
#
# Usage: bench/agent.sh       env: TURNS (100) THREADS (5) MESSAGES (1000) WEIR_TARGET_DIR (target/)
set -euo pipefail
cd "$(dirname "$0")/.."
TURNS=${TURNS:-100}
THREADS=${THREADS:-5}
MESSAGES=${MESSAGES:-1000}
WEIR_TARGET_DIR=${WEIR_TARGET_DIR:-${CARGO_TARGET_DIR:-$PWD/target}}

if [ ! -x bench/.venv/bin/python ]; then
  python3 -m venv bench/.venv
fi
if ! bench/.venv/bin/python -c 'import langgraph.prebuilt, langchain_core' 2>/dev/null; then
  bench/.venv/bin/pip install --quiet 'langgraph==1.2.9'
fi

echo "building the weir agent bench (release)…" >&2
CARGO_TARGET_DIR=$WEIR_TARGET_DIR cargo build --release --quiet -p weir-agent --example agent_bench
ARGS=(--turns "$TURNS" --threads "$THREADS" --messages "$MESSAGES")
WEIR=$("$WEIR_TARGET_DIR/release/examples/agent_bench" "${ARGS[@]}")
LG=$(bench/.venv/bin/python bench/agent_langgraph.py "${ARGS[@]}")
VERSIONS=$(bench/.venv/bin/python -c 'from importlib.metadata import version as v; print("langgraph", v("langgraph"), "langchain-core", v("langchain-core"))')

python3 - "$WEIR" "$LG" "$VERSIONS" <<'PY'
import json, sys
w, l = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(f"agent benchmark: {w['turns']} turns; memory over {w['threads']} threads of {w['messages']} messages ({sys.argv[3]})")
print(f"load average: {open('/proc/loadavg').read().split()[0]} on {__import__('os').cpu_count()} cores")
print(f"{'':24}{'weir':>12}{'LangGraph':>12}{'ratio':>10}")
for key, name in [("fresh_turn_cpu_us", "fresh turn, CPU (µs)"), ("fresh_turn_us_mean", "fresh turn, wall (µs)"), ("turn_cpu_us", "turn, CPU (µs)"), ("turn_us_median", "turn, wall median (µs)"), ("turn_us_mean", "turn, wall mean (µs)"), ("mib_per_thread", "MiB per thread")]:
    ratio = f"{l[key] / w[key]:>9.1f}×" if w[key] else "        -"
    print(f"{name:24}{w[key]:>12.1f}{l[key]:>12.1f}{ratio}")
print(f"weir's MemorySaver for one thread of {w['messages']} messages: {w['saver_checkpoints']} checkpoints, "
      f"{w['saver_blob_kib']:.1f} KiB of value blobs, {w['saver_pending_writes']} pending writes")
PY
