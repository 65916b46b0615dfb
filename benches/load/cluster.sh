#!/usr/bin/env bash
# Requests per second through nginx (plain round-robin, as mirobody-server/tests/cluster.rs
# runs it) in front of one and of three instances sharing their sessions through Redis, on
# PostgreSQL: `tools/call echo` on one 2025-11-25 session, 16 connections, wrk on the last CPU.
# Each round measures one instance, three instances, and one instance without nginx, back to
# back; the figures are medians of the rounds. The instances and nginx share the machine's
# other CPUs, so on a small machine three instances measure the cost of the sharing, not the
# gain of more machines.
# Usage: benches/load/cluster.sh BINARY [seconds] [rounds]
#   Needs wrk, nginx (NGINX_BIN=path; tests unpack Debian's under target/tmp/external/nginx),
#   POSTGRES_URL and REDIS_URL (default: this machine's).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { echo "usage: $0 BINARY [seconds] [rounds]"; exit 2; }
binary=$(realpath "$1"); secs=${2:-6}; rounds=${3:-5}
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)"; exit 2; }
nginx=${NGINX_BIN:-$(command -v nginx || echo target/tmp/external/nginx/usr/sbin/nginx)}
[ -x "$nginx" ] || { echo "no nginx at $nginx (set NGINX_BIN=path)"; exit 2; }
. benches/load/common.sh
postgres=${POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}
redis=${REDIS_URL:-redis://127.0.0.1:6379}
scratch=$(mktemp -d); schema="bench_cluster_$$"
cpus=$(nproc); last=$((cpus - 1)); servers="0-$((cpus > 1 ? cpus - 2 : 0))"
pids=()
cleanup() {
  kill "${pids[@]}" 2>/dev/null || true
  psql "$postgres" -q -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1 || true
  rm -rf "$scratch"
}
trap cleanup EXIT
export MIROBODY_BACKENDS__DATABASE_URL=$postgres MIROBODY_BACKENDS__DATABASE_SCHEMA=$schema \
  MIROBODY_BACKENDS__REDIS_URL=$redis MIROBODY_BACKENDS__REDIS_KEY_PREFIX="$schema." \
  MIROBODY_REQUEST_STATE_KEY=bench-state-key-0123456789-0123456789 \
  MIROBODY_BACKENDS__SIGNING_KEY=bench-url-key-0123456789-0123456789 \
  MIROBODY_AUTH__HS256_SECRET=bench-token-key-0123456789-0123456789 \
  MIROBODY_HTTP__CALLER_LIMITS__REQUESTS_PER_SECOND=0 MIROBODY_HTTP__CALLER_LIMITS__MAX_CALLS=0 RUST_LOG=warn
ports=(18281 18282 18283)
for i in 0 1 2; do
  mkdir -p "$scratch/$i"
  (cd "$scratch/$i" && exec taskset -c "$servers" "$binary" --bind 127.0.0.1:${ports[$i]} serve 2>/dev/null) &
  pids+=($!)
done
# nginx_on PORT UPSTREAM_PORTS...: nginx on PORT, round-robin over the ports.
nginx_on() {
  local port=$1 dir="$scratch/nginx-$1"; shift
  mkdir -p "$dir/logs"
  {
    echo "worker_processes 1; daemon off; error_log $dir/logs/error.log warn; pid $dir/nginx.pid;"
    echo "events { worker_connections 4096; }"
    echo "http { access_log off; client_body_temp_path $dir/body; proxy_temp_path $dir/proxy;"
    echo "  fastcgi_temp_path $dir/f; uwsgi_temp_path $dir/u; scgi_temp_path $dir/s;"
    echo "  upstream servers {"; for p in "$@"; do echo "    server 127.0.0.1:$p;"; done; echo "    keepalive 64; }"
    echo "  server { listen 127.0.0.1:$port; location / { proxy_pass http://servers; proxy_http_version 1.1;"
    echo "    proxy_set_header Connection \"\"; proxy_set_header Host \$http_host; proxy_buffering off; } } }"
  } > "$dir/nginx.conf"
  taskset -c "$servers" "$nginx" -p "$dir" -c "$dir/nginx.conf" -e "$dir/logs/error.log" & pids+=($!)
}
nginx_on 18291 "${ports[0]}"
nginx_on 18293 "${ports[@]}"
for p in "${ports[@]}" 18291 18293; do
  for _ in $(seq 200); do (echo > /dev/tcp/127.0.0.1/$p) 2>/dev/null && break; sleep 0.05; done
done
one=$(session 18291); three=$(session 18293); direct=$(session "${ports[0]}")
[ -n "$one" ] && [ -n "$three" ] && [ -n "$direct" ] || { echo "a session could not be opened"; exit 1; }
rate() {
  MCP_SESSION=$2 taskset -c "$last" wrk -t1 -c16 -d"$3"s -s benches/load/post.lua "$1" | awk '/Requests\/sec/{print $2}'
}
rate http://127.0.0.1:18293/mcp "$three" 2 >/dev/null
for _ in $(seq "$rounds"); do
  echo "$(rate http://127.0.0.1:18291/mcp "$one" "$secs") $(rate http://127.0.0.1:18293/mcp "$three" "$secs")" \
    "$(rate "http://127.0.0.1:${ports[0]}/mcp" "$direct" "$secs")"
done | awk '
  function median(a, n,   i, j, t) {
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2;
  }
  { n++; one[n] = $1; three[n] = $2; direct[n] = $3; ratio[n] = $2/$1
    printf "round %d: nginx+1 %.0f, nginx+3 %.0f, 1 without nginx %.0f req/s\n", n, $1, $2, $3 }
  END { printf "median of %d rounds: nginx+1 %.0f, nginx+3 %.0f (x%.2f), 1 without nginx %.0f req/s\n",
        n, median(one, n), median(three, n), median(ratio, n), median(direct, n) }'
# The session made through nginx answered on every instance.
for p in "${ports[@]}"; do
  answer=$(call_echo "$p" "$three")
  grep -q '"isError":false' <<<"$answer" \
    || { echo "the instance on port $p did not answer tools/call echo in the shared session:"; echo "$answer"; exit 1; }
done
echo "every instance answered tools/call echo in the shared session"
