#!/usr/bin/env bash
# Two builds of mirobody-server under the same load, in one run: `tools/call echo` on the
# 2025-11-25 session path, 16 connections, each server on core 0 and wrk on core 1, beside the
# bare hyper baseline. Each round measures bare, the old build and the new build back to back;
# the ratios are medians of the rounds' ratios, so a disturbed round does not decide the result.
# Also each build's peak resident memory under the load, its memory before the load, and its
# start-up peak, each build starting from a cold page cache (common.sh, drop_cached). For
# telling whether a change helped on a machine whose throughput drifts between runs.
# Usage: benches/load/compare.sh OLD_BINARY NEW_BINARY [seconds] [rounds]   (needs wrk)
#   OLD_ENV / NEW_ENV: settings for one build only, e.g. NEW_ENV='MIROBODY_HTTP__CALLER_LIMITS__REQUESTS_PER_SECOND=1000000000
#   MIROBODY_HTTP__CALLER_LIMITS__BURST=1000000000' when the old build predates the per-caller rate limit
#   (an older build refuses settings it does not know). The load generator is one caller, far
#   over the default rate, so a build that has the limit needs it raised. Builds from before
#   `release_startup_memory` always gave their start-up pages back; a later build compared with
#   one needs MIROBODY_RELEASE_STARTUP_MEMORY=true in its settings to compare like with like.
#   The cost of metrics, one binary twice: NEW_ENV='MIROBODY_METRICS__LISTEN=127.0.0.1:18199'.
#   e.g. git worktree add /tmp/old main && (cd /tmp/old && cargo build --release -p mirobody-server)
#        benches/load/compare.sh /tmp/old/target/release/mirobody-server target/release/mirobody-server
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 2 ] || { echo "usage: $0 OLD_BINARY NEW_BINARY [seconds] [rounds]"; exit 2; }
old=$(realpath "$1"); new=$(realpath "$2"); secs=${3:-6}; rounds=${4:-7}
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)"; exit 2; }
cargo build --release -q -p mirobody-benches --bin bare-hyper
. benches/load/common.sh
drop_cached "$old" "$new" target/release/bare-hyper
port_old=18190; port_new=18191; port_bare=18192
scratch_old=$(mktemp -d); scratch_new=$(mktemp -d)
(cd "$scratch_old" && exec env ${OLD_ENV:-} taskset -c 0 "$old" --bind 127.0.0.1:$port_old serve 2>/dev/null) & pid_old=$!
(cd "$scratch_new" && exec env ${NEW_ENV:-} taskset -c 0 "$new" --bind 127.0.0.1:$port_new serve 2>/dev/null) & pid_new=$!
taskset -c 0 target/release/bare-hyper 127.0.0.1:$port_bare & pid_bare=$!
trap 'kill $pid_old $pid_new $pid_bare 2>/dev/null || true; rm -rf "$scratch_old" "$scratch_new"' EXIT
for p in $port_old $port_new $port_bare; do
  # A first start on PostgreSQL creates its schema first: up to 30 s.
  for _ in $(seq 300); do (echo > /dev/tcp/127.0.0.1/$p) 2>/dev/null && break; sleep 0.1; done
done
session_old=$(session $port_old); session_new=$(session $port_new)
# The start-up peaks, once each server has answered; then each peak is reset, so that the peak
# read after the load is the peak under the load.
startup_old=$(rss $pid_old); startup_new=$(rss $pid_new)
reset_peak $pid_old; reset_peak $pid_new
start_old=$(rss $pid_old); start_new=$(rss $pid_new)
# rate URL SESSION SECONDS: requests per second.
rate() {
  MCP_SESSION=$2 taskset -c 1 wrk -t1 -c16 -d"$3"s -s benches/load/post.lua "$1" | awk '/Requests\/sec/{print $2}'
}
for warm in "http://127.0.0.1:$port_old/mcp $session_old" "http://127.0.0.1:$port_new/mcp $session_new" "http://127.0.0.1:$port_bare/ -"; do
  set -- $warm; rate "$1" "${2#-}" 2 >/dev/null
done
for _ in $(seq "$rounds"); do
  echo "$(rate http://127.0.0.1:$port_bare/ '' "$secs") $(rate http://127.0.0.1:$port_old/mcp "$session_old" "$secs") $(rate http://127.0.0.1:$port_new/mcp "$session_new" "$secs")"
done | awk '
  function median(a, n,   i, j, t) {
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2;
  }
  { n++; ob[n] = $2/$1; nb[n] = $3/$1; no[n] = $3/$2;
    printf "round %d: bare %.0f, old %.0f, new %.0f req/s; new/old %.2f\n", n, $1, $2, $3, $3/$2 }
  END { printf "median of %d rounds: old/bare %.2f, new/bare %.2f, new/old %.2f\n", n, median(ob, n), median(nb, n), median(no, n) }'
# Both builds answered tools/call, not an error, after the load.
for pair in "$port_old $session_old" "$port_new $session_new"; do
  set -- $pair
  answer=$(call_echo "$1" "$2")
  grep -q '"isError":false' <<<"$answer" || { echo "the server on port $1 did not answer tools/call echo:"; echo "$answer"; exit 1; }
done
echo "both builds answered tools/call echo correctly"
peak_old=$(rss $pid_old); peak_new=$(rss $pid_new)
echo "peak RSS under the load: old $peak_old KiB, new $peak_new KiB ($((peak_new - peak_old)) KiB);" \
  "before the load: old $start_old KiB, new $start_new KiB;" \
  "start-up peak: old $startup_old KiB, new $startup_new KiB"
