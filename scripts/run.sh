#!/usr/bin/env bash
# The main job: `rdmapool bench` against the embedded Valkey-compatible
# server, over RDMA where this machine can, else over TCP (saying why).
# Installs what it needs first: the RDMA user-space libraries and, when the
# machine has no Go new enough, Go (scripts/go.sh). It prints one line per
# step, with apt-get's and the build's output in out/deps.log and
# out/build.log, so that the benchmark's report is the last thing on the
# screen. Arguments go to `rdmapool bench` (`scripts/run.sh --help` lists
# its flags).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=go.sh source-path=SCRIPTDIR
. scripts/go.sh

step() { printf 'run: %s\n' "$*"; }

mkdir -p out
export RDMAPOOL_DEPS_LOG=$PWD/out/deps.log
step "dependencies (apt-get output in out/deps.log)"
scripts/deps.sh run
ensure_go
step "building rdmapool with CGO_ENABLED=0 (output in out/build.log)"
if ! CGO_ENABLED=0 go build -o out/rdmapool ./cmd/rdmapool >out/build.log 2>&1; then
	cat out/build.log >&2
	echo "run: the build failed (above; also in out/build.log)" >&2
	exit 1
fi
step "rdmapool bench $*"
exec out/rdmapool bench "$@"
