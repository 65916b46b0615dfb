#!/usr/bin/env bash
# An honest signed-in client's tools/call while anonymous clients flood `initialize` and hold
# a few hundred stalled connections, beside the same client unattacked (attack.py says how).
# The server runs on its defaults, as an operator would expose it.
# Usage: benches/load/attack.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release -q -p mirobody-server --bin mirobody-server
exec python3 benches/load/attack.py target/release/mirobody-server "${1:-20}"
