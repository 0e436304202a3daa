#!/usr/bin/env bash
# The main job: `rdmapool bench` against the embedded Valkey-compatible
# server, over RDMA where this machine can, else over TCP (saying why).
# Installs what it needs first: the RDMA user-space libraries and, when the
# machine has no Go new enough, Go (scripts/go.sh). Arguments go to
# `rdmapool bench` (`scripts/run.sh --help` lists its flags).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=go.sh source-path=SCRIPTDIR
. scripts/go.sh

scripts/deps.sh run
ensure_go
CGO_ENABLED=0 exec go run ./cmd/rdmapool bench "$@"
