#!/usr/bin/env bash
# The AWS path on this machine: SAM builds the Lambda image from template.yaml and runs every
# function in its container (tests/e2e/test_sam_local.py drives `sam local invoke` and
# `sam local start-api` against a moto S3 server).
#
#   bash infra/sam_local.sh           # prepare, then run the sam tests
#   bash infra/sam_local.sh prepare   # only: container runtime, SAM CLI, base image, sam build
#   bash infra/sam_local.sh stop      # stop the dockerd that prepare started, if it did
#
# prepare installs what it lacks (root + apt-get: docker.io, mmdebstrap), starts dockerd when
# `docker info` fails, puts the SAM CLI in its own venv (it pins an older boto3: never in the
# project's .venv), builds the base image once (cached in Docker) and runs `sam build`.
# Exit status 3: no container runtime can be had here (the sam tests skip, they do not fail).
#
# Where a container registry is reachable, set MEMLAKE_SAM_BASE=public.ecr.aws/lambda/python:3.11
# to build on the AWS base image; by default the base is a Debian bookworm root filesystem
# (mmdebstrap) with the Runtime Interface Client (infra/lambda-base/Dockerfile).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SAM_HOME=${MEMLAKE_SAM_HOME:-$HOME/.cache/memlake-sam}
SAM_VENV=$SAM_HOME/venv
BASE=${MEMLAKE_SAM_BASE:-memlake-lambda-base:bookworm}
ROOTFS=memlake-rootfs:bookworm
export SAM_CLI_TELEMETRY=0
mkdir -p "$SAM_HOME"

say() { echo "sam_local: $*" >&2; }
no_runtime() { say "no container runtime: $*"; exit 3; }
ts() { date +%s; }

apt_install() {  # apt_install PACKAGE...: only as root with apt-get; false otherwise
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 || return 1
  if [ ! -f "$SAM_HOME/apt-updated" ]; then
    apt-get update -q >&2 && touch "$SAM_HOME/apt-updated" || return 1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >&2
}

container_runtime() {
  if docker info >/dev/null 2>&1; then return 0; fi
  if ! command -v dockerd >/dev/null 2>&1; then
    apt_install docker.io || no_runtime "dockerd is missing and docker.io cannot be installed (needs root and apt-get)"
  fi
  [ "$(id -u)" = 0 ] || no_runtime "dockerd is not running and only root may start it"
  say "starting dockerd (log: $SAM_HOME/dockerd.log)"
  nohup dockerd >"$SAM_HOME/dockerd.log" 2>&1 &
  echo $! >"$SAM_HOME/dockerd.pid"  # `stop` ends only a daemon started here
  for _ in $(seq 30); do
    docker info >/dev/null 2>&1 && return 0
    sleep 1
  done
  no_runtime "dockerd did not start; see $SAM_HOME/dockerd.log"
}

sam_cli() {
  if [ -x "$SAM_VENV/bin/sam" ]; then return 0; fi
  say "installing the SAM CLI into $SAM_VENV"
  "${PYTHON:-python3}" -m venv "$SAM_VENV"
  "$SAM_VENV/bin/python" -m pip install -q --upgrade pip
  "$SAM_VENV/bin/python" -m pip install -q "aws-sam-cli>=1.120"
}

base_image() {
  if [ "$BASE" != "memlake-lambda-base:bookworm" ]; then return 0; fi  # a real base: docker pulls it
  if docker image inspect "$BASE" >/dev/null 2>&1; then return 0; fi
  if ! docker image inspect "$ROOTFS" >/dev/null 2>&1; then
    command -v mmdebstrap >/dev/null 2>&1 || apt_install mmdebstrap \
      || no_runtime "no base image and mmdebstrap cannot be installed"
    say "building the Debian root filesystem (mmdebstrap, about a minute)"
    local tar="$SAM_HOME/rootfs.tar"
    mmdebstrap --quiet --variant=apt \
      --include=python3,python3-venv,python3-pip,ca-certificates,tzdata bookworm "$tar" >&2
    docker import "$tar" "$ROOTFS" >/dev/null
    rm -f "$tar"
  fi
  # pip in the build reaches the registry like the host's pip: same CA bundle and pip.conf
  local ctx
  ctx=$(mktemp -d)
  cp infra/lambda-base/Dockerfile "$ctx/"
  cp /etc/ssl/certs/ca-certificates.crt "$ctx/" 2>/dev/null \
    || docker run --rm --entrypoint cat "$ROOTFS" /etc/ssl/certs/ca-certificates.crt >"$ctx/ca-certificates.crt"
  if [ -f /etc/pip.conf ]; then cp /etc/pip.conf "$ctx/"; else printf '[global]\n' >"$ctx/pip.conf"; fi
  if [ -n "${PIP_INDEX_URL:-}" ]; then printf 'index-url = %s\n' "$PIP_INDEX_URL" >>"$ctx/pip.conf"; fi
  say "building $BASE"
  docker build -q --build-arg "DEBIAN_ROOTFS=$ROOTFS" -t "$BASE" "$ctx" >/dev/null
  rm -rf "$ctx"
}

sam_build() {
  # the template SAM builds: template.yaml plus the base image build argument and the two
  # variables sam local sets (infra/sam_local_template.py says why)
  "$SAM_VENV/bin/python" infra/sam_local_template.py "$BASE" .aws-sam/local/template.yaml
  say "sam build"
  "$SAM_VENV/bin/sam" build -t .aws-sam/local/template.yaml --base-dir "$ROOT" \
    --build-dir .aws-sam/build \
    --parameter-overrides "JwtIssuer=https://issuer.invalid JwtAudience=sam-local" >&2
}

prepare() {
  local t0
  t0=$(ts)
  container_runtime
  sam_cli
  base_image
  sam_build
  say "prepared in $(($(ts) - t0)) s (sam: $SAM_VENV/bin/sam, template: .aws-sam/build/template.yaml)"
}

stop_runtime() {  # stop the dockerd that prepare started (none started: nothing to do)
  local pidfile="$SAM_HOME/dockerd.pid" pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  rm -f "$pidfile"
  if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" != dockerd ]; then return 0; fi
  say "stopping dockerd ($pid), which prepare started"
  kill "$pid"
  for _ in $(seq 30); do
    [ -d "/proc/$pid" ] || return 0
    sleep 1
  done
  kill -9 "$pid" 2>/dev/null || true
}

case "${1:-all}" in
  prepare) prepare ;;
  stop) stop_runtime ;;
  all)
    prepare
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 exec .venv/bin/python -m pytest -m sam -v tests/e2e/test_sam_local.py
    ;;
  *) echo "usage: bash infra/sam_local.sh [prepare|stop|all]" >&2; exit 2 ;;
esac
