#!/usr/bin/env bash
# Runs every test of rdmapool, as CI does (.ci/run calls this):
#   1. installs the Debian packages the tests need (scripts/deps.sh test),
#      and Go when the machine has none new enough (scripts/go.sh)
#   2. gofmt, go vet, and the build with CGO_ENABLED=0, for amd64 and arm64,
#      and for macOS and Windows, where RDMA is unavailable
#   3. the unit tests with CGO_ENABLED=0, then again under the race detector
#      (which needs CGO_ENABLED=1)
#   4. the C call path's tests for linux/arm64, under qemu-user
#   5. the README commands' dependency step in a fresh minimal Debian root
#      (scripts/minroot-test.sh; needs root)
#   6. the VM harness's own tests (vm/harness-test.sh: a broken KVM falls
#      back to TCG, timeouts say what hung)
#   7. the tests on a real kernel RDMA stack: soft-RoCE in a qemu VM (vm/test.sh)
# Tests that need something missing skip when run by hand and fail in CI
# (CI=true) or with RDMAPOOL_STRICT=1.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=go.sh source-path=SCRIPTDIR
. scripts/go.sh

step() { printf '\n=== %s\n' "$*"; }

step "dependencies"
scripts/deps.sh test
ensure_go

step "gofmt"
# The gofmt of the toolchain that builds (GOTOOLCHAIN may have fetched a
# newer one than the gofmt on PATH, which may not parse today's syntax).
gofmt=$(go env GOROOT)/bin/gofmt
unformatted=$("$gofmt" -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change: $unformatted" >&2
	exit 1
fi

step "build and vet (CGO_ENABLED=0; linux/amd64 and linux/arm64)"
export CGO_ENABLED=0
go build ./...
go vet ./...
GOARCH=arm64 go build ./...
GOARCH=arm64 go vet ./...
go vet -tags rdmapool_stages ./internal/stages ./qp ./bench # the stage-timing build (internal/stages)

step "cross builds and vet (CGO_ENABLED=0; darwin/arm64, darwin/amd64, windows/amd64)"
# Off Linux the RDMA packages build with stubs: loader.Load fails with an
# error matching ErrUnavailable (docs/design.md, "Other systems"), and the
# pool runs over TCP.
cross=(./...)
for target in darwin/arm64 darwin/amd64 windows/amd64; do
	GOOS=${target%/*} GOARCH=${target#*/} go build "${cross[@]}"
	GOOS=${target%/*} GOARCH=${target#*/} go vet "${cross[@]}"
done

step "unit tests (CGO_ENABLED=0)"
go test -count=1 ./...

step "race detector (CGO_ENABLED=1)"
CGO_ENABLED=1 go test -race -count=1 ./...

step "linux/arm64: the C call path under qemu-user"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
GOARCH=arm64 go test -c -o "$tmp/ffi-arm64.test" ./internal/ffi
(cd internal/ffi && CC=aarch64-linux-gnu-gcc \
	RDMAPOOL_TEST_EXEC_WRAPPER="qemu-aarch64-static -L /usr/aarch64-linux-gnu" \
	qemu-aarch64-static -L /usr/aarch64-linux-gnu "$tmp/ffi-arm64.test" -test.count=1 -test.v)

step "a minimal Debian root is enough (scripts/minroot-test.sh)"
if [ -n "${RDMAPOOL_IN_MINROOT:-}" ]; then
	echo "skipped: this run is itself inside scripts/minroot-test.sh's root"
elif [ "$(id -u)" -eq 0 ]; then
	scripts/minroot-test.sh
elif [ "${CI:-}" = true ] || [ "${RDMAPOOL_STRICT:-}" = 1 ]; then
	echo "scripts/minroot-test.sh needs root (debootstrap, chroot), and CI runs every test" >&2
	exit 1
else
	echo "skipped: scripts/minroot-test.sh needs root (debootstrap, chroot); run it as root"
fi

step "VM harness tests"
vm/harness-test.sh

step "soft-RoCE VM tests"
# bench's TestScaleManyConns opens 10,000 connection pairs in one process
# there (a few minutes under emulation), which wants more than the VM's
# default memory.
RDMAPOOL_VM_MEM=${RDMAPOOL_VM_MEM:-6144} vm/test.sh --timeout 2400 \
	--env "RDMAPOOL_SCALE_CONNS=${RDMAPOOL_SCALE_CONNS:-10000}"
