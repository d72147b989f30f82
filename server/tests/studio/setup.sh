#!/usr/bin/env bash
# What the studio's browser test needs: Debian's Chromium (installed when missing; CI runs as
# root) and the script's npm packages from the lock file.
set -euo pipefail
cd "$(dirname "$0")"
if [ -z "${CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1; then
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
fi
npm ci --no-audit --no-fund --silent >&2
npm run --silent build >&2
