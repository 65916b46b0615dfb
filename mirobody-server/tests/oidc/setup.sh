#!/usr/bin/env bash
# Idempotent set-up for the sign-in-with-a-provider test: panva's oidc-provider from npm, at
# the version package-lock.json pins. Usage: bash setup.sh (from any directory). Exits
# non-zero with a message when it cannot.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")" || exit 1
die() { echo "oidc setup: $*" >&2; exit 1; }

# One set-up at a time: parallel tests would fail on each other's npm locks.
if command -v flock >/dev/null 2>&1; then
  exec 9>"${TMPDIR:-/tmp}/mirobody-oidc-setup.lock"
  flock -w 600 9 || die "another set-up held its lock for 10 minutes"
fi

command -v node >/dev/null 2>&1 || die "node is not installed"
# oidc-provider 9 needs Node 20.19 or later (its require(esm) use).
node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a===20&&b>=19)?0:1)' \
  || die "oidc-provider needs Node >= 20.19, this is $(node --version)"
if [ ! -f node_modules/oidc-provider/package.json ]; then
  command -v npm >/dev/null 2>&1 || die "npm is not installed"
  echo "oidc setup: installing oidc-provider" >&2
  npm ci --no-audit --no-fund >&2 || die "npm could not install oidc-provider"
  [ -f node_modules/oidc-provider/package.json ] || die "node_modules/oidc-provider is missing after npm ci"
fi
exit 0
