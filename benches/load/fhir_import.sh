#!/usr/bin/env bash
# FHIR import throughput over HTTP: N `batch` Bundles of 1,000 glucose Observations each (LOINC
# 2339-0, over the last year), POSTed one after another with curl to /fhir on the release
# mirobody-server (embedded SQLite in a fresh data folder); prints observations per second.
# The bundles are written to files first, so only the requests are timed. The bare-sqlx
# baseline of the same rows is in the criterion bench (`cargo bench -p mirobody-tools --bench
# health_data`, the `RATIO ... import/bare` line).
# Usage: benches/load/fhir_import.sh [bundles]   (default 20; needs curl and python3, and
#   `cargo build --release -p mirobody-server` first)
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-20}
bin=$PWD/target/release/mirobody-server
[ -x "$bin" ] || { echo "build it first: cargo build --release -p mirobody-server"; exit 2; }
# One caller sending as fast as it can: the per-caller rate limit is raised out of its way.
export MIROBODY_HTTP__CALLER_LIMITS__REQUESTS_PER_SECOND=1000000000 MIROBODY_HTTP__CALLER_LIMITS__BURST=1000000000
port=18190
scratch=$(mktemp -d)
(cd "$scratch" && exec "$bin" --bind 127.0.0.1:$port serve 2>/dev/null) & server=$!
trap 'kill $server 2>/dev/null || true; rm -rf "$scratch"' EXIT
for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
# The token is signed with the key the server made in its data folder (the scratch folder's).
token=$(cd "$scratch" && "$bin" --bind 127.0.0.1:$port token --user fhir-bench)

mkdir "$scratch/bundles"
python3 - "$scratch/bundles" "$n" <<'EOF'
import datetime, json, sys
out, n = sys.argv[1], int(sys.argv[2])
end = int(datetime.datetime.now(datetime.timezone.utc).timestamp())
step = 365 * 24 * 3600 // 1000  # one value every 8.76 hours
for b in range(n):
    entries = []
    for i in range(1000):
        t = datetime.datetime.fromtimestamp(end - 365 * 24 * 3600 + i * step + b, datetime.timezone.utc)
        entries.append({"resource": {
            "resourceType": "Observation", "id": f"b{b}-{i}", "status": "final",
            "code": {"coding": [{"system": "http://loinc.org", "code": "2339-0",
                                 "display": "Glucose [Mass/volume] in Blood"}]},
            "effectiveDateTime": t.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "valueQuantity": {"value": 70 + (b * 37 + i * 11) % 110 + (i % 10) / 10, "unit": "mg/dL"},
        }, "request": {"method": "POST", "url": "Observation"}})
    with open(f"{out}/{b}.json", "w") as f:
        json.dump({"resourceType": "Bundle", "type": "batch", "entry": entries}, f)
EOF

start=$(date +%s.%N)
for b in $(seq 0 $((n - 1))); do
  code=$(curl -s -o "$scratch/response.json" -w '%{http_code}' -H "authorization: Bearer $token" \
    -H 'content-type: application/fhir+json' --data-binary @"$scratch/bundles/$b.json" \
    "http://127.0.0.1:$port/fhir")
  [ "$code" = 200 ] || { echo "bundle $b: HTTP $code"; cat "$scratch/response.json"; exit 1; }
done
end=$(date +%s.%N)
# Every entry must have been stored, not found already there or refused.
created=$(python3 -c 'import json, sys
print(sum(e["response"]["status"].startswith("201") for e in json.load(open(sys.argv[1]))["entry"]))' \
  "$scratch/response.json")
[ "$created" = 1000 ] || { echo "the last bundle stored $created of 1000"; exit 1; }
awk -v n="$n" -v s="$start" -v e="$end" 'BEGIN {
  printf "RATE http POST /fhir: %d observations in %d bundles of 1000, %.2f s = %.0f observations/s\n",
    n * 1000, n, e - s, n * 1000 / (e - s) }'
