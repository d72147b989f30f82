#!/usr/bin/env bash
# The server's figures, side by side: `weir serve` on the anchor graphs (server/examples/anchor,
# the flows of shared/langgraph/server/anchor/app/graph.py) embedded (one SQLite file), and
# scaled out on PostgreSQL + Redis with one API process and 1, 2 and 3 worker processes; and,
# when the `langgraph` CLI is found (LANGGRAPH, default `langgraph` on PATH, e.g. from
# `pip install "langgraph-cli[inmem]"` in a venv), `langgraph dev` on the same graphs.
#
# Each server is measured by the native load generator (server/examples/load.rs): sequential
# `runs.wait` on new threads (p50, p99), the throughput of CONCURRENT_RUNS runs (default 2,000)
# with CLIENTS (default 100) in flight at once, each client on its own connection, the first streamed
# `updates` event of a stateless run, PINGS (default 20,000) `GET /ok` by the same clients (the
# rate of the server's HTTP stack alone: a ceiling for its runs/s); then a fresh one gets
# IDLE_THREADS threads and its peak resident memory (VmHWM, summed over its processes) is read. With SDK_PYTHON (a python with
# `langgraph-sdk`) shared/langgraph/server/anchor/probe.py is run against each too: the official
# client's view. One `key=value` line per measurement goes to OUT; bench/server_report.py turns
# the lines into docs/server.md's table and docs/server.svg. Not run in CI.
#
# SERVERS picks which (default: all of `embedded pg1 pg2 pg3 langgraph` that can run); PROFILE
# the cargo profile of weir and the load generator (default release).
#
#   bench/server.sh
#   RUNS=100 IDLE_THREADS=10000 WEIR_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test \
#     WEIR_REDIS_URL=redis://127.0.0.1:6379 LANGGRAPH=/path/to/venv/bin/langgraph bench/server.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
runs="${RUNS:-100}"
concurrent_runs="${CONCURRENT_RUNS:-2000}"
clients="${CLIENTS:-100}"
idle="${IDLE_THREADS:-10000}"
connections="${IDLE_CONNECTIONS:-5000}"
pings="${PINGS:-20000}"
probe_runs="${PROBE_RUNS:-20}"
target="${CARGO_TARGET_DIR:-target}"
out="${OUT:-bench/results/server-$(date -u +%Y%m%dT%H%M%SZ).txt}"
pg="${WEIR_POSTGRES_URL:-}"
redis="${WEIR_REDIS_URL:-}"
langgraph="${LANGGRAPH:-$(command -v langgraph || true)}"
anchor="$root/../shared/langgraph/server/anchor"
config="$root/server/examples/anchor/weir.json"

profile="${PROFILE:-release}"
[ -n "${NO_BUILD:-}" ] || cargo build --quiet --profile "$profile" -p weir-server --bin weir --example load
dirname="$profile"; [ "$profile" = dev ] && dirname=debug
weir="$target/$dirname/weir"
load="$target/$dirname/examples/load"
dir="$(mktemp -d)"
pids=()
schemas=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for s in "${schemas[@]}"; do psql -q "$pg" -c "DROP SCHEMA IF EXISTS \"$s\" CASCADE" >/dev/null 2>&1 || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
mkdir -p "$(dirname "$out")"
{
  echo "# bench/server.sh $(date -u +%FT%TZ) runs=$runs concurrent_runs=$concurrent_runs clients=$clients idle_threads=$idle idle_connections=$connections profile=$profile"
  echo "# host: $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee -a "$out"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Waits for http://127.0.0.1:$1/ok, or fails naming the log $2.
wait_ok() {
  for _ in $(seq 1200); do
    curl -sf "http://127.0.0.1:$1/ok" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "no server answered on port $1 within 120 s: $(tail -5 "$2")" >&2
  return 1
}

# The peak resident memory (VmHWM) of these processes and their children, in MiB.
peak_mib() {
  local all=() p
  for p in "$@"; do all+=("$p") ; all+=($(pgrep -P "$p" || true)); done
  for p in "${all[@]}"; do awk '/VmHWM/ {print $2}' "/proc/$p/status" 2>/dev/null || true; done |
    awk '{s += $1} END {printf "%.1f", s / 1024}'
}

# Starts one server process in the background: $1 = log name, the rest = the command.
started=()
spawn() {
  local log="$dir/$1.log"; shift
  "$@" >"$log" 2>&1 &
  pids+=($!)
  started+=($!)
}

stop_started() {
  for p in "${started[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${started[@]}"; do wait "$p" 2>/dev/null || true; done
  started=()
}

# Starts the server of label $1 on port $2: embedded, pgN (one API process, N workers) or langgraph.
start_server() {
  local label="$1" port="$2"
  case "$label" in
    embedded)
      spawn "$label" "$weir" serve --config "$config" --port "$port" --db "$dir/weir-$port.db" ;;
    pg*)
      local n="${label#pg}" schema="bench_server_$$_$port" i
      schemas+=("$schema")
      local common=(--config "$config" --postgres "$pg" --redis "$redis" --schema "$schema" --prefix "$schema")
      spawn "$label-api" "$weir" serve "${common[@]}" --port "$port" --role api
      wait_ok "$port" "$dir/$label-api.log"
      for i in $(seq "$n"); do spawn "$label-w$i" "$weir" serve "${common[@]}" --role worker; done ;;
    langgraph)
      rm -rf "$dir/anchor"; cp -r "$anchor" "$dir/anchor"
      (cd "$dir/anchor" && exec "$langgraph" dev --no-browser --no-reload --port "$port") >"$dir/$label.log" 2>&1 &
      pids+=($!); started+=($!) ;;
  esac
  wait_ok "$port" "$dir/$label.log" 2>/dev/null || wait_ok "$port" "$dir/$label-api.log"
}

# The kind of server a label is, for the result lines.
describe() {
  case "$1" in
    embedded) echo "impl=weir mode=embedded workers=1 build=$profile" ;;
    pg*) echo "impl=weir mode=postgres+redis workers=${1#pg} build=$profile" ;;
    langgraph) echo "impl=langgraph mode=dev-inmem workers=1" ;;
  esac
}

measure() {
  local label="$1" port url
  port="$(free_port)"; url="http://127.0.0.1:$port"
  echo "== $label: runs" | tee -a "$out"
  start_server "$label" "$port"
  "$load" "$url" --runs "$runs" --concurrent-runs "$concurrent_runs" --clients "$clients" | tee "$dir/load.out"
  echo "$(describe "$label") client=load $(sed -n 's/^result //p' "$dir/load.out")" >>"$out"
  "$load" "$url" --pings "$pings" --clients "$clients" | tee "$dir/pings.out"
  echo "$(describe "$label") client=load $(sed -n 's/^result //p' "$dir/pings.out")" >>"$out"
  if [ -n "${SDK_PYTHON:-}" ]; then
    "$SDK_PYTHON" "$anchor/probe.py" "$url" "$probe_runs" | grep -E '^(sequential|concurrent|stream first)' | tee "$dir/probe.out"
    python3 - "$dir/probe.out" "$(describe "$label")" >>"$out" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
seq = re.search(r"= ([\d.]+) runs/s; p50 ([\d.]+) ms p99 ([\d.]+) ms", text)
conc = re.search(r"concurrent: .* = ([\d.]+) runs/s", text)
first = re.search(r"stream first update p50 ([\d.]+) ms", text)
print(f"{sys.argv[2]} client=probe seq_rps={seq[1]} seq_p50_ms={seq[2]} seq_p99_ms={seq[3]} "
      f"conc_rps={conc[1]} first_p50_ms={first[1]}")
EOF
  fi
  stop_started
  memory "$label" "$idle idle threads" --idle-threads "$idle" peak_rss_mib
  memory "$label" "$connections open connections" --idle-connections "$connections" conn_peak_rss_mib
}

# A fresh server's peak memory under one of the load generator's memory loads:
# $1 = label, $2 = what the load is, $3 $4 = the load's flag and count, $5 = the figure's key.
memory() {
  local label="$1" port url
  echo "== $label: $2" | tee -a "$out"
  port="$(free_port)"; url="http://127.0.0.1:$port"
  start_server "$label" "$port"
  "$load" "$url" "$3" "$4" | tee "$dir/memory.out"
  echo "$(describe "$label") client=load $(sed -n 's/^result //p' "$dir/memory.out") $5=$(peak_mib "${started[@]}")" >>"$out"
  stop_started
}

for server in ${SERVERS:-embedded pg1 pg2 pg3 langgraph}; do
  case "$server" in
    pg*) if [ -z "$pg" ] || [ -z "$redis" ]; then
           echo "(WEIR_POSTGRES_URL and WEIR_REDIS_URL unset: no $server figures)" | tee -a "$out"; continue
         fi ;;
    langgraph) if [ -z "$langgraph" ]; then
           echo "(no langgraph CLI: set LANGGRAPH to compare with langgraph dev)" | tee -a "$out"; continue
         fi ;;
  esac
  measure "$server"
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out"
echo "results: $out (python3 bench/server_report.py $out)"
