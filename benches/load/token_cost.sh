#!/usr/bin/env bash
# What a token this server issued (ES256, from its own authorization server) costs a
# `tools/call` against an HS256 token, in one run of one release build: the server on core 0,
# wrk on core 1, 16 connections; rounds alternate the two tokens, each on its own session, and
# the ratio is the median of the rounds' ratios. At saturation the rate is the inverse of the
# server's CPU per request, so ES256/HS256 >= 0.95 is "at most 5% more CPU".
# Usage: benches/load/token_cost.sh [seconds] [rounds]   (needs wrk and python3;
#   BENCH_NO_BUILD=1 measures the release binary as it is, without building it first)
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-5}; rounds=${2:-7}
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)"; exit 2; }
[ -n "${BENCH_NO_BUILD:-}" ] || cargo build --release -q -p mirobody-server
bin=target/release/mirobody-server
port=18290; data=$(mktemp -d)
export MIROBODY_BACKENDS__DATA_DIR=$data MIROBODY_PUBLIC_BASE_URL=http://127.0.0.1:$port
export MIROBODY_HTTP__CALLER_LIMITS__REQUESTS_PER_SECOND=0
email=bench@example.com; password='a password for the bench'
echo "$password" | $bin user add --email $email --password-stdin >/dev/null
id=$($bin user list | awk -v e=$email '$1==e{print $2}')
hs=$($bin token --user "$id" --ttl 3600)
taskset -c 0 $bin --bind 127.0.0.1:$port serve 2>/dev/null & pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$data"' EXIT
for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
es=$(python3 benches/load/oauth_token.py http://127.0.0.1:$port $email "$password")
session() {
  curl -si -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \
    -H "authorization: Bearer $1" "http://127.0.0.1:$port/mcp" \
    -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"wrk","version":"1"}}}' \
    | tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}'
}
sid_hs=$(session "$hs"); sid_es=$(session "$es")
[ -n "$sid_hs" ] && [ -n "$sid_es" ] || { echo "no session: the server refused a token"; exit 1; }
rate() {
  MCP_TOKEN=$1 MCP_SESSION=$2 taskset -c 1 wrk -t1 -c16 -d"$3"s -s benches/load/post.lua \
    http://127.0.0.1:$port/mcp | awk '/Requests\/sec/{print $2} /Non-2xx/{print "non-2xx", $0 > "/dev/stderr"}'
}
rate "$hs" "$sid_hs" 2 >/dev/null; rate "$es" "$sid_es" 2 >/dev/null
for _ in $(seq "$rounds"); do
  echo "$(rate "$hs" "$sid_hs" "$secs") $(rate "$es" "$sid_es" "$secs")"
done | awk '
  function median(a, n,   i, j, t) {
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2;
  }
  { n++; r[n] = $2/$1; printf "round %d: HS256 %.0f, ES256 (issued here) %.0f req/s; ES256/HS256 %.3f\n", n, $1, $2, $2/$1 }
  END { printf "median of %d rounds: ES256/HS256 %.3f\n", n, median(r, n) }'
# Both tokens still answered tools/call, not an error, after the load.
for pair in "$hs $sid_hs" "$es $sid_es"; do
  set -- $pair
  curl -s -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \
    -H "authorization: Bearer $1" -H "mcp-session-id: $2" http://127.0.0.1:$port/mcp \
    -d '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"text":"ok"}}}' | grep -q '"isError":false' \
    || { echo "a token stopped working under load"; exit 1; }
done
