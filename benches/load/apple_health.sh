#!/usr/bin/env bash
# Apple Health import of a generated export.xml: throughput and peak resident memory of the
# import (mirobody_health::apple, into a fresh embedded SQLite store), against its two
# baselines measured in the same run: a bare quick-xml pass over the same file, and a bare
# batched sqlx insert of the rows the import stored. Each step is its own process under
# /usr/bin/time -v (src/bin/apple-health.rs). The bare insert is measured two ways: one row a
# statement (as the health_data bench's baseline) and multi-row statements; the import with a store that keeps nothing
# (`parse`) tells the import's own work from the database's. Prints TIME/RSS lines and the ratio
# import / (xml + insert) (target: at most 1.5) and the import's peak RSS (target: 128 MiB).
# Usage: benches/load/apple_health.sh [MiB]   (default 1024: 51,400 days, 2.57 million records)
#   BENCH_PROFILE=dev measures the debug build (default: release); BENCH_NO_BUILD=1 uses it as built.
#   BENCH_DB=postgres runs the import and the bare inserts on PostgreSQL (default: sqlite), in
#   fresh schemas of MIROBODY_BENCH_POSTGRES_URL (default: MIROBODY_TEST_POSTGRES_URL) that are
#   dropped on exit. The import's peak RSS is then its process's alone, not the server's.
set -euo pipefail
cd "$(dirname "$0")/../.."
mib=${1:-1024}
profile=${BENCH_PROFILE:-release}
dir=$([ "$profile" = dev ] && echo debug || echo "$profile")
[ "${BENCH_NO_BUILD:-}" = 1 ] || cargo build -q --profile "$profile" -p mirobody-benches --bin apple-health
bin=${CARGO_TARGET_DIR:-$PWD/target}/$dir/apple-health
scratch=$(mktemp -d)
case ${BENCH_DB:-sqlite} in
  sqlite)
    label=SQLite
    unset MIROBODY_BENCH_POSTGRES_URL
    import_db=$scratch/import bare_db=$scratch/bare multi_db=$scratch/bare-multi
    trap 'rm -rf "$scratch"' EXIT
    ;;
  postgres)
    label=PostgreSQL
    export MIROBODY_BENCH_POSTGRES_URL=${MIROBODY_BENCH_POSTGRES_URL:-${MIROBODY_TEST_POSTGRES_URL:-}}
    if [ -z "$MIROBODY_BENCH_POSTGRES_URL" ]; then
      echo "BENCH_DB=postgres needs MIROBODY_BENCH_POSTGRES_URL (or MIROBODY_TEST_POSTGRES_URL)" >&2
      rm -rf "$scratch"; exit 2
    fi
    # Schemas of this run only, dropped however it ends.
    import_db=mirobody_bench_ah_$$_import bare_db=mirobody_bench_ah_$$_bare multi_db=mirobody_bench_ah_$$_multi
    trap '"$bin" drop-schemas "$import_db" "$bare_db" "$multi_db"; rm -rf "$scratch"' EXIT
    trap 'exit 130' INT TERM
    ;;
  *) echo "BENCH_DB is sqlite or postgres, not '$BENCH_DB'" >&2; rm -rf "$scratch"; exit 2 ;;
esac
echo "DATABASE $label"
# The generator writes about 389 bytes a record, 50 records a day.
days=$(( mib * 1024 * 1024 / (389 * 50) ))
"$bin" generate "$days" "$scratch/export.xml"

step() { # name, then the command: prints TIME and RSS (KiB) of it
  local name=$1; shift
  /usr/bin/time -v "$@" > "$scratch/$name.out" 2> "$scratch/$name.time"
  cat "$scratch/$name.out"
  awk -v n="$name" '/Maximum resident set size/ {print "RSS " n " " $NF " KiB"}' "$scratch/$name.time"
}
step xml "$bin" xml "$scratch/export.xml"
step parse "$bin" parse "$scratch/export.xml"
step import "$bin" import "$scratch/export.xml" "$import_db"
step insert "$bin" insert "$import_db" "$bare_db"
step multi "$bin" insert-multi "$import_db" "$multi_db"
bytes=$(stat -c %s "$scratch/export.xml")
awk -v bytes="$bytes" -v db="$label" '
  /^TIME/ {t[$2 == "insert-multi" ? "multi" : $2] = $3} /^RSS/ {r[$2] = $3} /^RECORDS/ && !rec {rec = $2}
  END {
    printf "RATE import into %s: %.1f MB/s, %.0f records/s (%d records, %.0f MB)\n", db, bytes / t["import"] / 1e6, rec / t["import"], rec, bytes / 1e6
    printf "RATIO %s import/(xml+insert): %.2f (xml %.1f s, insert one row a statement %.1f s, import %.1f s; target <= 1.5)\n", db, t["import"] / (t["xml"] + t["insert"]), t["xml"], t["insert"], t["import"]
    printf "RATIO %s import/(xml+multi-row insert): %.2f (multi-row insert %.1f s)\n", db, t["import"] / (t["xml"] + t["multi"]), t["multi"]
    printf "PARSE the import with a store that keeps nothing: %.1f s, %.2f x the xml pass\n", t["parse"], t["parse"] / t["xml"]
    printf "PEAK %s import %.1f MiB (target <= 128), xml pass %.1f MiB%s\n", db, r["import"] / 1024, r["xml"] / 1024,
      db == "PostgreSQL" ? " (the import process alone, not the PostgreSQL server)" : ""
  }' "$scratch"/*.out <(for f in "$scratch"/*.time; do awk -v n="$(basename "$f" .time)" '/Maximum resident set size/ {print "RSS " n " " $NF}' "$f"; done)
