#!/usr/bin/env bash
# Load benchmark on loopback: `tools/call echo` against the release mirobody-server, beside two
# baselines in the same run: a bare hyper server answering the same bytes, and the same server
# doing only the JSON-RPC work (`bare-hyper --json`: parse to a Value, write the reply). Servers
# on core 0, wrk on core 1, 16 connections. Prints requests/s, p50/p99 latency and peak resident
# memory for each, and ratios: the 2025-11-25 session path against both baselines, and the
# stateless 2026-07-28 path (per-request _meta and mirrored headers, post_2026_07_28.lua) against the
# 2025-11-25 path.
# Also the server's CPU time per request, split into user and system time (from /proc), and its
# resident memory split into anonymous (heap, stacks) and file-backed (the program's code), and
# by part (resident.py: the binary's sections, each library, the heap and the rest).
# Peak memory is the peak under the load: each server's high-water mark is reset (clear_refs)
# once it has answered, so the start-up peak, which it prints apart, does not stand in for it.
# The servers start from a cold page cache, as an installed binary does (common.sh, drop_cached).
# Each round measures the four back to back; the throughput ratios are the median of the rounds'
# ratios, so one disturbed round on a noisy machine does not decide the result.
# Usage: benches/load/run.sh [seconds per measurement] [rounds]   (needs wrk: apt-get install wrk, and python3)
set -euo pipefail
cd "$(dirname "$0")/../.."
# The load generator is one caller sending far more requests a second than the per-caller rate
# limit lets through: the limit is raised out of its way (not turned off, so its check is still
# paid on every request), as an operator would for a trusted load generator.
export MIROBODY_HTTP__CALLER_LIMITS__REQUESTS_PER_SECOND=1000000000 MIROBODY_HTTP__CALLER_LIMITS__BURST=1000000000
# Give back the start-up pages, as an operator who counts resident memory would (off by default).
export MIROBODY_RELEASE_STARTUP_MEMORY=true
secs=${1:-10}
rounds=${2:-5}
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)"; exit 2; }
cargo build --release -q -p mirobody-server -p mirobody-benches --bin mirobody-server --bin bare-hyper
# The server's resident memory depends on its code layout (optional: mirobody-server/build.rs).
if [ -n "${MIROBODY_SYMBOL_ORDER:-}" ]; then
  python3 benches/load/symbol_order.py check target/release/mirobody-server "$MIROBODY_SYMBOL_ORDER"
fi
. benches/load/common.sh
drop_cached target/release/mirobody-server target/release/bare-hyper
port_mcp=18180; port_bare=18181; port_json=18182
# The server runs in a scratch folder, so its local state (the SQLite file of the default
# backends) neither comes from nor lands in the checkout.
scratch=$(mktemp -d)
(cd "$scratch" && exec taskset -c 0 "$OLDPWD/target/release/mirobody-server" --bind 127.0.0.1:$port_mcp serve 2>/dev/null) & mcp=$!
taskset -c 0 target/release/bare-hyper 127.0.0.1:$port_bare & bare=$!
taskset -c 0 target/release/bare-hyper 127.0.0.1:$port_json --json & json=$!
trap 'kill $mcp $bare $json 2>/dev/null || true; rm -rf "$scratch"' EXIT
for p in $port_mcp $port_bare $port_json; do
  for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$p) 2>/dev/null && break; sleep 0.05; done
done
session=$(session $port_mcp)

run() { # name url session script pid
  local before after rps p50 p99 n
  before=$(cpu "$5")
  MCP_SESSION=$3 taskset -c 1 wrk -t1 -c16 -d${secs}s --latency -s "$4" "$2" > "/tmp/wrk-$1.txt"
  after=$(cpu "$5")
  rps=$(awk '/Requests\/sec/{print $2}' "/tmp/wrk-$1.txt")
  p50=$(awk '$1=="50%"{print $2}' "/tmp/wrk-$1.txt")
  p99=$(awk '$1=="99%"{print $2}' "/tmp/wrk-$1.txt")
  n=$(awk '/requests in/{print $1}' "/tmp/wrk-$1.txt")
  # Microseconds of server CPU per request, user and system (ticks are 1/100 s).
  echo "$1 $rps $p50 $p99 $before $after $n" | awk '{printf "%s %s %s %s %.2f %.2f\n", $1, $2, $3, $4, ($7-$5)*1e4/$9, ($8-$6)*1e4/$9}'
}
# Resident memory by kind (KiB): heap and stacks, and the program's code and data files.
rss_split() { awk '/RssAnon/{a=$2} /RssFile/{f=$2} END{printf "anon %d KiB, file %d KiB", a, f}' /proc/$1/status; }
# The server's CPU time (user and system, in clock ticks) so far.
cpu() { awk '{print $14, $15}' /proc/$1/stat; }

# The start-up peaks (the servers have answered: mirobody's session above), then resident
# memory before any load: what load adds is the peak less this.
startup_mcp=$(rss $mcp); startup_bare=$(rss $bare)
reset_peak $mcp; reset_peak $bare
start_mcp=$(rss $mcp); start_bare=$(rss $bare)

# Warm up all four, then measure them in turn, round after round.
MCP_SESSION=$session taskset -c 1 wrk -t1 -c16 -d2s -s benches/load/post.lua http://127.0.0.1:$port_mcp/mcp >/dev/null
taskset -c 1 wrk -t1 -c16 -d2s -s benches/load/post_2026_07_28.lua http://127.0.0.1:$port_mcp/mcp >/dev/null
taskset -c 1 wrk -t1 -c16 -d2s -s benches/load/post.lua http://127.0.0.1:$port_bare/ >/dev/null
taskset -c 1 wrk -t1 -c16 -d2s -s benches/load/post.lua http://127.0.0.1:$port_json/ >/dev/null
results=()
for round in $(seq "$rounds"); do
  results+=("$round $(run bare http://127.0.0.1:$port_bare/ '' benches/load/post.lua $bare)")
  results+=("$round $(run json http://127.0.0.1:$port_json/ '' benches/load/post.lua $json)")
  results+=("$round $(run mcp http://127.0.0.1:$port_mcp/mcp "$session" benches/load/post.lua $mcp)")
  results+=("$round $(run modern http://127.0.0.1:$port_mcp/mcp '' benches/load/post_2026_07_28.lua $mcp)")
done
printf '%s\n' "${results[@]}" | awk -v rss_mcp="$(rss $mcp)" -v rss_bare="$(rss $bare)" \
  -v start_mcp="$start_mcp" -v start_bare="$start_bare" -v startup_mcp="$startup_mcp" -v startup_bare="$startup_bare" \
  -v split_mcp="$(rss_split $mcp)" -v split_bare="$(rss_split $bare)" '
  # The median of the first n entries of a (sorted in place).
  function median(a, n,   i, j, t) {
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2;
  }
  { r=$1; k=$2; rate[r, k]=$3; rps[k]+=$3; n[k]++; p50[k]=p50[k] " " $4; p99[k]=p99[k] " " $5; usr[k]+=$6; sys[k]+=$7; last=r }
  END {
    b=rps["bare"]/n["bare"]; j=rps["json"]/n["json"]; m=rps["mcp"]/n["mcp"]; s=rps["modern"]/n["modern"];
    for (r = 1; r <= last; r++) {
      mb[r]=rate[r,"mcp"]/rate[r,"bare"]; mj[r]=rate[r,"mcp"]/rate[r,"json"]; jb[r]=rate[r,"json"]/rate[r,"bare"]; sm[r]=rate[r,"modern"]/rate[r,"mcp"];
      rounds=rounds sprintf(" %.2f", mb[r]);
    }
    printf "bare hyper:      %9.0f req/s  p50%s  p99%s  CPU/request %.2f us user + %.2f us system\n", b, p50["bare"], p99["bare"], usr["bare"]/n["bare"], sys["bare"]/n["bare"];
    printf "hyper + JSON:    %9.0f req/s  p50%s  p99%s  CPU/request %.2f us user + %.2f us system\n", j, p50["json"], p99["json"], usr["json"]/n["json"], sys["json"]/n["json"];
    printf "mirobody-server: %9.0f req/s  p50%s  p99%s  CPU/request %.2f us user + %.2f us system (2025-11-25, session)\n", m, p50["mcp"], p99["mcp"], usr["mcp"]/n["mcp"], sys["mcp"]/n["mcp"];
    printf "mirobody-server: %9.0f req/s  p50%s  p99%s  CPU/request %.2f us user + %.2f us system (2026-07-28, stateless)\n", s, p50["modern"], p99["modern"], usr["modern"]/n["modern"], sys["modern"]/n["modern"];
    printf "peak RSS under the load: bare %d KiB, mirobody %d KiB (%+d KiB); now bare %s, mirobody %s\n", rss_bare, rss_mcp, rss_mcp-rss_bare, split_bare, split_mcp;
    printf "start-up peak RSS: bare %d KiB, mirobody %d KiB (%+d KiB)\n", startup_bare, startup_mcp, startup_mcp-startup_bare;
    printf "RSS before the load: bare %d KiB, mirobody %d KiB; the load added bare %+d KiB, mirobody %+d KiB\n", start_bare, start_mcp, rss_bare-start_bare, rss_mcp-start_mcp;
    printf "mirobody/bare by round:%s\n", rounds;
    printf "throughput ratio mirobody/bare: %.2f (median of %d rounds; target >= 0.80); mirobody/(hyper + JSON): %.2f; (hyper + JSON)/bare: %.2f\n", median(mb, last), last, median(mj, last), median(jb, last);
    printf "throughput ratio 2026-07-28/2025-11-25: %.2f (median; target >= 1.00)\n", median(sm, last);
    # The same comparison from the CPU time each request took: with the core of each server busy
    # throughout, throughput is the inverse of it, so this checks the ratio above by another
    # measurement (CPU time is charged only while the server runs, not while it waits).
    cb=(usr["bare"]+sys["bare"])/n["bare"]; cm=(usr["mcp"]+sys["mcp"])/n["mcp"];
    printf "CPU time per request, bare/mirobody: %.2f (%.2f us against %.2f us, user and system)\n", cb/cm, cb, cm;
  }'
# Which parts of each program the resident memory is in: code, data, libraries, heap.
echo "resident memory now, by part (KiB, benches/load/resident.py):"
for pid in $bare $mcp; do python3 benches/load/resident.py "$pid" | sed 's/^/  /'; done
# Check the MCP server really answered tools/call (not an error) during the run.
grep -q '"isError":false' <<<"$(call_echo "$port_mcp" "$session")" && echo "mirobody-server answered tools/call echo correctly"
modern=$(curl -s -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \
  -H 'mcp-protocol-version: 2026-07-28' -H 'mcp-method: tools/call' -H 'mcp-name: echo' \
  http://127.0.0.1:$port_mcp/mcp -d "$(sed -n "s/^wrk.body = '\(.*\)'$/\1/p" benches/load/post_2026_07_28.lua)" || true)
grep -q '"resultType":"complete"' <<<"$modern" && echo "mirobody-server answered the 2026-07-28 tools/call echo correctly"
