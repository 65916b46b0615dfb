#!/usr/bin/env bash
# An honest signed-in client's tools/call while anonymous clients flood `initialize` and hold
# a few hundred stalled connections, beside the same client unattacked (attack.py says how);
# with `documents`, while hostile PDFs are uploaded in a loop, slow upload bodies are held and
# anonymous callers draw large charts. The server runs on its defaults, as an operator would
# expose it.
# Usage: benches/load/attack.sh [seconds] [flood|documents]
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release -q -p mirobody-server --bin mirobody-server
exec python3 benches/load/attack.py target/release/mirobody-server "${1:-20}" "${2:-flood}"
