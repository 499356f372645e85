#!/usr/bin/env bash
# Install the Node packages used by the node-marked tests (Mermaid's parser + jsdom).
# Uses the lockfile when present; needs Node >= 20 and npm.
set -euo pipefail
cd "$(dirname "$0")"
if [[ -f package-lock.json ]]; then
  npm ci --no-audit --no-fund
else
  npm install --no-audit --no-fund
fi
