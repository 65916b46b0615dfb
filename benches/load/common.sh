# Shell functions shared by run.sh, compare.sh and cluster.sh (sourced, not run).

# Peak resident memory of process PID, in KiB.
rss() { awk '/VmHWM/{print $2}' /proc/$1/status; }

# Resets process PID's peak to its present resident memory (Linux 4.0 and later), so that the
# peak read later is the peak since now.
reset_peak() { echo 5 > /proc/$1/clear_refs; }

# Writes out the files' pages and drops them from the page cache, so that the programs start as
# an installed binary does after a reboot. A binary the linker has just written sits in the
# cache in small pieces, and a page the server released (mirobody_server::memory) comes back
# with only its neighbours; read from the disk, the cache holds large pieces that come back
# whole. Starting cold measures the second case, the one operators have.
drop_cached() {
  sync "$@"
  python3 -c 'import os, sys
for path in sys.argv[1:]:
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)' "$@"
}

# Opens an MCP session (2025-11-25) on the server at PORT's /mcp; prints its id.
session() {
  curl -si -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \
    "http://127.0.0.1:$1/mcp" \
    -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"wrk","version":"1"}}}' \
    | tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}'
}

# Sends post.lua's `tools/call echo` in session SESSION to the server at PORT; prints the whole
# answer, headers included. Read whole before it is searched: `curl | grep -q` under pipefail
# fails when grep stops reading before curl has written everything.
call_echo() {
  curl -si -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \
    -H "mcp-session-id: $2" "http://127.0.0.1:$1/mcp" \
    -d "$(sed -n "s/^wrk.body = '\(.*\)'$/\1/p" benches/load/post.lua)" || true
}
