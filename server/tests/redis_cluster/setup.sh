#!/usr/bin/env bash
# Starts a Redis Cluster of three primaries on this machine for the bus's cluster tests, and
# prints the URL of its nodes (comma-separated, as `--redis` takes them). The nodes listen on
# 127.0.0.1, ports $WEIR_REDIS_CLUSTER_PORT (default 7101) and the two after it, and keep their
# files under target/redis-cluster at the workspace root. With `--tls`, the cluster speaks TLS
# only (ports 7111 to 7113 by default), with a certificate for 127.0.0.1 that a CA made here
# signed; the URLs printed are `rediss://` and name that CA as `ssl_ca_certs`. A cluster already
# up on those ports is kept; `redis-server` is installed (Debian's package; CI runs as root) when
# missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
tls=""
[ "${1:-}" = --tls ] && tls=1
if [ -n "$tls" ]; then
  dir="$root/target/redis-cluster-tls"
  first="${WEIR_REDIS_TLS_CLUSTER_PORT:-7111}"
else
  dir="$root/target/redis-cluster"
  first="${WEIR_REDIS_CLUSTER_PORT:-7101}"
fi
ports=("$first" "$((first + 1))" "$((first + 2))")
mkdir -p "$dir"

if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >&2
fi

cli=(redis-cli)
url=""
if [ -n "$tls" ]; then
  if [ ! -f "$dir/node.pem" ]; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=weir test Redis CA" \
      -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
      -keyout "$dir/node.key" -out "$dir/node.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > "$dir/node.ext"
    openssl x509 -req -days 3650 -in "$dir/node.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
      -CAcreateserial -extfile "$dir/node.ext" -out "$dir/node.pem" 2>/dev/null
  fi
  cli=(redis-cli --tls --cacert "$dir/ca.pem")
  for port in "${ports[@]}"; do url+="rediss://127.0.0.1:$port/?ssl_ca_certs=$dir/ca.pem,"; done
else
  for port in "${ports[@]}"; do url+="redis://127.0.0.1:$port,"; done
fi
url="${url%,}"

state() { "${cli[@]}" -p "$1" cluster info 2>/dev/null | tr -d '\r' | sed -n 's/^cluster_state://p'; }

if [ "$(state "${ports[0]}")" = ok ]; then
  echo "$url"
  exit 0
fi

for port in "${ports[@]}"; do
  # A node left over from an earlier start that never formed a cluster: start it afresh.
  "${cli[@]}" -p "$port" shutdown nosave >/dev/null 2>&1 || true
  rm -rf "${dir:?}/$port"
  mkdir -p "$dir/$port"
  listen=(--port "$port")
  if [ -n "$tls" ]; then
    listen=(--port 0 --tls-port "$port" --tls-cluster yes --tls-auth-clients no
      --tls-cert-file "$dir/node.pem" --tls-key-file "$dir/node.key" --tls-ca-cert-file "$dir/ca.pem")
  fi
  redis-server "${listen[@]}" --bind 127.0.0.1 --daemonize yes --dir "$dir/$port" \
    --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
    --appendonly no --save '' --logfile "$dir/$port/redis.log" >&2
done
for port in "${ports[@]}"; do
  for _ in $(seq 50); do
    "${cli[@]}" -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.1
  done
done
"${cli[@]}" --cluster create "${ports[@]/#/127.0.0.1:}" --cluster-replicas 0 --cluster-yes >&2
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
