#!/usr/bin/env bash
# Writes target/symbol-order.txt, a list of functions for the linker to put first in the release
# binary (optional; see mirobody-server/build.rs). Runs the release server under callgrind,
# pinned to one CPU and then on all, through start-up, then a session (initialize, tools/list,
# ping, tools/call echo), stateless 2026-07-28 calls, clients resetting their connections and a
# graceful shutdown, and lists every function of the binary that ran: those that ran for the
# requests first, so that the request path is packed together, then the start-up's, then the
# shutdown's (closing SQLite runs `PRAGMA optimize`, 0.3 MB of code that no request runs), the
# most instructions first in each part. Then build with the list:
#   MIROBODY_SYMBOL_ORDER=$PWD/target/symbol-order.txt cargo build --release -p mirobody-server
# Usage: benches/load/symbol-order.sh   (needs valgrind, python3 and curl)
set -euo pipefail
cd "$(dirname "$0")/../.."
# The load generator is one caller sending far more requests a second than the per-caller rate
# limit lets through: the limit is raised out of its way (not turned off, so its check is still
# paid on every request), as an operator would for a trusted load generator.
export MIROBODY_HTTP__CALLER_LIMITS__REQUESTS_PER_SECOND=1000000000 MIROBODY_HTTP__CALLER_LIMITS__BURST=1000000000
export MIROBODY_RELEASE_STARTUP_MEMORY=true
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)"; exit 2; }
cargo build --release -q -p mirobody-server --bin mirobody-server
bin=$PWD/target/release/mirobody-server
order=$PWD/target/symbol-order.txt
port=18290
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# One profiled run of the server: start-up's profile goes to RUN.1, the requests' to RUN.2, and
# the shutdown's to RUN, at exit.
profile() { # RUN [command prefix...]
  local run=$1; shift
  (cd "$out" && exec "$@" valgrind -q --tool=callgrind --demangle=no --callgrind-out-file="$out/$run" \
    "$bin" --bind 127.0.0.1:$port serve 2>/dev/null) &
  local pid=$!
  for _ in $(seq 300); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
  callgrind_control -d "$pid" >/dev/null 2>&1
  local url=http://127.0.0.1:$port/mcp session
  session=$(curl -si -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' "$url" \
    -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"order","version":"1"}}}' \
    | tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}')
  [ -n "$session" ] || { echo "the server gave no session"; exit 1; }
  local in_session=(MCP-Protocol-Version=2025-11-25 "Mcp-Session-Id=$session")
  curl -s -o /dev/null -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \
    -H "mcp-session-id: $session" -H 'mcp-protocol-version: 2025-11-25' "$url" \
    -d '{"jsonrpc":"2.0","method":"notifications/initialized"}'
  post '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' 20 '"tools"' "${in_session[@]}"
  post '{"jsonrpc":"2.0","id":2,"method":"ping"}' 20 '"result"' "${in_session[@]}"
  post "$(body benches/load/post.lua)" 200 '"isError":false' "${in_session[@]}"
  post "$(body benches/load/post_2026_07_28.lua)" 200 '"isError":false' \
    MCP-Protocol-Version=2026-07-28 Mcp-Method=tools/call Mcp-Name=echo
  # Clients that reset their connection, with a call in flight or idle after one, as a load
  # generator does when it stops: the server's I/O error paths.
  python3 - $port "$(body benches/load/post_2026_07_28.lua)" <<'RESET'
import socket, struct, sys
body = sys.argv[2].encode()
head = ("POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
        "Mcp-Method: tools/call\r\nMcp-Name: echo\r\nContent-Length: %d\r\n\r\n" % len(body))
for idle in [False, True] * 5:
    client = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    client.sendall(head.encode() + body)
    if idle:
        client.recv(65536)
    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    client.close()
RESET
  callgrind_control -d "$pid" >/dev/null 2>&1
  kill -INT "$pid"; wait "$pid" || true
}
post() { # BODY COUNT EXPECT [header=value ...]
  local body=$1 count=$2 expect=$3; shift 3
  echo "$body" | python3 benches/load/client.py $port /mcp "$count" --expect "$expect" "$@"
}
body() { sed -n "s/^wrk.body = '\(.*\)'$/\1/p" "$1"; }
# On one CPU the server runs tokio's current-thread scheduler, on more the work-stealing one
# (Config::runtime); each has its own code, and run.sh pins the server to one CPU.
profile one taskset -c 0
profile many

python3 benches/load/symbol_order.py write "$bin" "$out/one.2,$out/many.2" "$out/one.1,$out/many.1" "$out/one,$out/many" \
  > "$order.new"
mv "$order.new" "$order"
echo "wrote $order: $(grep -vc '^#' "$order") functions; link with it:"
echo "  MIROBODY_SYMBOL_ORDER=$order cargo build --release -p mirobody-server"
