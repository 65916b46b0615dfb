#!/usr/bin/env bash
# Regenerates mirobody-server/link/symbol-order.txt, the list of functions the linker puts first
# in the release binary (see mirobody-server/build.rs). Runs the release server under callgrind
# through start-up, then a session (initialize, tools/list, ping, tools/call echo), stateless
# 2026-07-28 calls and a graceful shutdown, and lists every function of the binary that ran:
# those that ran for the requests first, so that the request path is packed together, then the
# start-up's, the most instructions first in each part. Run it after a toolchain or dependency
# update, or when run.sh says the list is stale, then rebuild and commit the list.
# Usage: benches/load/symbol-order.sh   (needs valgrind, python3 and curl)
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)"; exit 2; }
cargo build --release -q -p mirobody-server --bin mirobody-server
bin=$PWD/target/release/mirobody-server
order=mirobody-server/link/symbol-order.txt
port=18290
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

(cd "$out" && exec valgrind -q --tool=callgrind --demangle=no --callgrind-out-file="$out/callgrind.out" \
  "$bin" --bind 127.0.0.1:$port serve 2>/dev/null) &
pid=$!
for _ in $(seq 300); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
# Start-up's profile goes to callgrind.out.1; the final one, at exit, holds the rest.
callgrind_control -d "$pid" >/dev/null 2>&1
url=http://127.0.0.1:$port/mcp
session=$(curl -si -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' "$url" \
  -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"order","version":"1"}}}' \
  | tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}')
[ -n "$session" ] || { echo "the server gave no session"; exit 1; }
in_session=(MCP-Protocol-Version=2025-11-25 "Mcp-Session-Id=$session")
post() { # BODY COUNT EXPECT [header=value ...]
  local body=$1 count=$2 expect=$3; shift 3
  echo "$body" | python3 benches/load/client.py $port /mcp "$count" --expect "$expect" "$@"
}
curl -s -o /dev/null -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \
  -H "mcp-session-id: $session" -H 'mcp-protocol-version: 2025-11-25' "$url" \
  -d '{"jsonrpc":"2.0","method":"notifications/initialized"}'
post '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' 20 '"tools"' "${in_session[@]}"
post '{"jsonrpc":"2.0","id":2,"method":"ping"}' 20 '"result"' "${in_session[@]}"
body() { sed -n "s/^wrk.body = '\(.*\)'$/\1/p" "$1"; }
post "$(body benches/load/post.lua)" 200 '"isError":false' "${in_session[@]}"
post "$(body benches/load/post_modern.lua)" 200 '"isError":false' \
  MCP-Protocol-Version=2026-07-28 Mcp-Method=tools/call Mcp-Name=echo
kill -INT "$pid"; wait "$pid" || true

python3 benches/load/symbol_order.py write "$bin" "$out/callgrind.out" "$out/callgrind.out.1" > "$order.new"
mv "$order.new" "$order"
echo "wrote $order: $(grep -vc '^#' "$order") functions; rebuild with cargo build --release"
