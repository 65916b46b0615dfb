#!/usr/bin/env bash
# Idempotent set-up for the browser tests: Debian's Chromium, playwright-core, and for the
# view tests the official MCP TypeScript SDK, @modelcontextprotocol/ext-apps and esbuild.
# Usage: bash setup.sh   (from any directory). Exits non-zero with a message when it cannot.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")" || exit 1

CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
die() { echo "browser setup: $*" >&2; exit 1; }

# One set-up at a time on this machine: the browser tests run in parallel, each calling this
# script, and two apt-get or npm installs at once fail on each other's locks.
if command -v flock >/dev/null 2>&1; then
  exec 9>"${TMPDIR:-/tmp}/mirobody-browser-setup.lock"
  flock -w 900 9 || die "another browser set-up held its lock for 15 minutes"
fi

if [ ! -x "$CHROMIUM" ]; then
  command -v apt-get >/dev/null 2>&1 || die "$CHROMIUM is missing and apt-get is not available to install it"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || die "$CHROMIUM is missing; installing it needs root (or sudo)"
    SUDO="sudo -n"
  fi
  export DEBIAN_FRONTEND=noninteractive
  echo "browser setup: installing Debian's chromium" >&2
  # Wait for an apt or dpkg run outside this script (CI installs poppler the same way).
  APT="$SUDO apt-get -o DPkg::Lock::Timeout=600"
  if ! $APT install -y --no-install-recommends chromium >&2; then
    $APT update >&2 || die "apt-get update failed"
    $APT install -y --no-install-recommends chromium >&2 || die "could not install chromium with apt-get"
  fi
  [ -x "$CHROMIUM" ] || die "chromium was installed but $CHROMIUM is not there (set CHROMIUM=path)"
fi

if [ ! -d node_modules/playwright-core ] || [ ! -d node_modules/esbuild ] || [ ! -d node_modules/@modelcontextprotocol/ext-apps ]; then
  command -v npm >/dev/null 2>&1 || die "npm is not installed (needed for playwright-core)"
  echo "browser setup: installing playwright-core, the MCP SDK and ext-apps, esbuild" >&2
  if [ -f package-lock.json ]; then
    npm ci --no-audit --no-fund >&2 || npm install --no-audit --no-fund >&2 || die "npm could not install playwright-core"
  else
    npm install --no-audit --no-fund >&2 || die "npm could not install playwright-core"
  fi
  [ -d node_modules/playwright-core ] || die "node_modules/playwright-core is missing after npm install"
fi

exit 0
