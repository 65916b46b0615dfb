#!/usr/bin/env bash
# Instructions per request, counted by callgrind: the same figure on a busy machine as on a quiet
# one, where requests per second are not. Counts the user-space instructions each server spends
# answering N keep-alive `tools/call echo` requests after a warm-up: bare hyper, hyper doing only
# the JSON-RPC work (`bare-hyper --json`), mirobody on the 2025-11-25 session path, and mirobody
# on the stateless 2026-07-28 path. Each server runs on one CPU, as in run.sh (so mirobody-server
# runs on one thread). Kernel time (the socket reads and writes, most of bare hyper's cost) is
# not counted; run.sh measures it.
# Usage: benches/load/instructions.sh [requests]   (needs valgrind and python3)
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-2000}
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)"; exit 2; }
cargo build --release -q -p mirobody-server -p mirobody-benches --bin mirobody-server --bin bare-hyper
out=/tmp/cgout; rm -rf $out; mkdir -p $out


body() { sed -n "s/^wrk.body = '\(.*\)'$/\1/p" "$1"; }

# measure NAME PORT PATH BODY_SCRIPT [header=value ...] -- COMMAND...: instructions per request.
measure() {
  local name=$1 port=$2 path=$3 script=$4; shift 4
  local headers=(); while [ "$1" != "--" ]; do headers+=("$1"); shift; done; shift
  (cd "$out" && exec taskset -c 0 valgrind -q --tool=callgrind --callgrind-out-file="$out/$name.%p" "$@" 2>/dev/null) &
  local pid=$!
  for _ in $(seq 300); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
  if [ "$name" = mcp ]; then
    local session
    session=$(curl -si -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \
      "http://127.0.0.1:$port$path" \
      -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}' \
      | tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}')
    headers+=("Mcp-Session-Id=$session")
  fi
  body "$script" | python3 benches/load/client.py "$port" "$path" 300 --expect '"isError":false' "${headers[@]}"
  callgrind_control -z "$pid" >/dev/null 2>&1
  body "$script" | python3 benches/load/client.py "$port" "$path" "$n" --expect '"isError":false' "${headers[@]}"
  callgrind_control -d "$pid" >/dev/null 2>&1
  kill "$pid"; wait "$pid" 2>/dev/null || true
  # The dump after zeroing is the one with the highest part number.
  local dump; dump=$(ls "$out/$name".*.1 | head -1)
  awk -v n="$n" '/^totals:/{printf "%.0f\n", $2/n}' "$dump"
}

bin=$PWD/target/release
#bare=$(measure bare 18281 / benches/load/post.lua MCP-Protocol-Version=2025-11-25 -- "$bin/bare-hyper" 127.0.0.1:18281)
#json=$(measure json 18283 / benches/load/post.lua MCP-Protocol-Version=2025-11-25 -- "$bin/bare-hyper" 127.0.0.1:18283 --json)
mcp=$(measure mcp 18280 /mcp benches/load/post.lua MCP-Protocol-Version=2025-11-25 -- "$bin/mirobody-server" --bind 127.0.0.1:18280 serve)
#modern=$(measure modern 18282 /mcp benches/load/post_modern.lua MCP-Protocol-Version=2026-07-28 Mcp-Method=tools/call Mcp-Name=echo \
echo mcp=$mcp
