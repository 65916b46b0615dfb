#!/usr/bin/env bash
# Instructions per request, counted by callgrind: the same figure on a busy machine as on a quiet
# one, where requests per second are not. Counts the user-space instructions each server spends
# answering N keep-alive `tools/call echo` requests after a warm-up: bare hyper, hyper doing only
# the JSON-RPC work (`bare-hyper --json`), mirobody on the 2025-11-25 session path, and mirobody
# on the stateless 2026-07-28 path. Each server runs on one CPU, as in run.sh (so mirobody-server
# runs on one thread). Kernel time (the socket reads and writes, most of bare hyper's cost) is
# not counted; run.sh measures it.
# Beside each total, the connection task's share: the future that serves one connection (hyper's
# reading and writing, the endpoint, the call). The rest is the runtime's parking and timers,
# which run by the clock rather than per request, so the totals move by a few hundred between
# runs, more on a busy machine; the connection task's count is the one to compare two builds by.
# Usage: [BIN_DIR=dir] benches/load/instructions.sh [requests]   (needs valgrind and python3)
set -euo pipefail
cd "$(dirname "$0")/../.."
# The load generator is one caller sending far more requests a second than the per-caller rate
# limit lets through: the limit is raised out of its way (not turned off, so its check is still
# paid on every request), as an operator would for a trusted load generator.
export MIROBODY_HTTP__CALLER_LIMITS__REQUESTS_PER_SECOND=1000000000 MIROBODY_HTTP__CALLER_LIMITS__BURST=1000000000
n=${1:-2000}
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)"; exit 2; }
# BIN_DIR=dir measures the mirobody-server and bare-hyper built there instead (another
# checkout's target/release), to compare two builds' counts.
if [ -n "${BIN_DIR:-}" ]; then
  bin=$(realpath "$BIN_DIR")
else
  cargo build --release -q -p mirobody-server -p mirobody-benches --bin mirobody-server --bin bare-hyper
  bin=$PWD/target/release
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

body() { sed -n "s/^wrk.body = '\(.*\)'$/\1/p" "$1"; }

# measure NAME PORT PATH BODY_SCRIPT TASK [header=value ...] -- COMMAND...: instructions per
# request, in all and in TASK (the function that serves a connection).
measure() {
  local name=$1 port=$2 path=$3 script=$4 task=$5; shift 5
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
  local total in_task
  total=$(awk -v n="$n" '/^totals:/{printf "%.0f", $2/n}' "$dump")
  # awk reads to the end: leaving early would fail the pipe (callgrind_annotate gets SIGPIPE).
  in_task=$(callgrind_annotate --inclusive=yes "$dump" 2>/dev/null |
    awk -v n="$n" -v task="$task [" 'index($0, task) && !found {gsub(",", "", $1); found = $1 / n} END {if (found) printf "%.0f", found}')
  echo "$total ${in_task:-0}"
}

bare_task='bare_hyper::main::{{closure}}::{{closure}}'
mcp_task='mirobody_mcp::transport::serve::serve_until::{{closure}}::{{closure}}'
read -r bare bare_task_n < <(measure bare 18281 / benches/load/post.lua "$bare_task" MCP-Protocol-Version=2025-11-25 \
  -- "$bin/bare-hyper" 127.0.0.1:18281)
read -r json json_task_n < <(measure json 18283 / benches/load/post.lua "$bare_task" MCP-Protocol-Version=2025-11-25 \
  -- "$bin/bare-hyper" 127.0.0.1:18283 --json)
read -r mcp mcp_task_n < <(measure mcp 18280 /mcp benches/load/post.lua "$mcp_task" MCP-Protocol-Version=2025-11-25 \
  -- "$bin/mirobody-server" --bind 127.0.0.1:18280 serve)
read -r modern modern_task_n < <(measure modern 18282 /mcp benches/load/post_2026_07_28.lua "$mcp_task" \
  MCP-Protocol-Version=2026-07-28 Mcp-Method=tools/call Mcp-Name=echo -- "$bin/mirobody-server" --bind 127.0.0.1:18282 serve)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/b}'; }
echo "instructions per tools/call echo ($n requests, one keep-alive connection), in all and in the connection task:"
echo "  bare hyper:                  $bare, $bare_task_n"
echo "  hyper + JSON:                $json, $json_task_n ($(ratio "$json" "$bare")x bare)"
echo "  mirobody 2025-11-25 session: $mcp, $mcp_task_n ($(ratio "$mcp" "$bare")x bare, $(ratio "$mcp_task_n" "$bare_task_n")x in the connection task; $(ratio "$mcp" "$json")x hyper + JSON)"
echo "  mirobody 2026-07-28:         $modern, $modern_task_n ($(ratio "$modern" "$mcp")x the session path, $(ratio "$modern_task_n" "$mcp_task_n")x in the connection task)"
