#!/usr/bin/env bash
# Starts a Redis Cluster of three primaries on this machine for the bus's cluster tests, and
# prints the URL of its nodes (comma-separated, as `--redis` takes them). The nodes listen on
# 127.0.0.1, ports $WEIR_REDIS_CLUSTER_PORT (default 7101) and the two after it, and keep their
# files under target/redis-cluster at the workspace root. A cluster already up on those ports is
# kept; `redis-server` is installed (Debian's package; CI runs as root) when missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
dir="$root/target/redis-cluster"
first="${WEIR_REDIS_CLUSTER_PORT:-7101}"
ports=("$first" "$((first + 1))" "$((first + 2))")
url=$(printf 'redis://127.0.0.1:%s,' "${ports[@]}")
url="${url%,}"

if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >&2
fi

state() { redis-cli -p "$1" cluster info 2>/dev/null | tr -d '\r' | sed -n 's/^cluster_state://p'; }

if [ "$(state "${ports[0]}")" = ok ]; then
  echo "$url"
  exit 0
fi

for port in "${ports[@]}"; do
  if redis-cli -p "$port" ping >/dev/null 2>&1; then
    # A node left over from an earlier start that never formed a cluster: start it afresh.
    redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  fi
  rm -rf "${dir:?}/$port"
  mkdir -p "$dir/$port"
  redis-server --port "$port" --bind 127.0.0.1 --daemonize yes --dir "$dir/$port" \
    --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
    --appendonly no --save '' --logfile "$dir/$port/redis.log" >&2
done
for port in "${ports[@]}"; do
  for _ in $(seq 50); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.1
  done
done
redis-cli --cluster create "${ports[@]/#/127.0.0.1:}" --cluster-replicas 0 --cluster-yes >&2
for _ in $(seq 100); do
  ok=1
  for port in "${ports[@]}"; do
    [ "$(state "$port")" = ok ] || ok=0
  done
  if [ "$ok" = 1 ]; then
    echo "$url"
    exit 0
  fi
  sleep 0.1
done
echo "the Redis Cluster on ports ${ports[*]} did not come up: see $dir/*/redis.log" >&2
exit 1
