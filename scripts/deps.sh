#!/usr/bin/env bash
# Installs, with apt-get, the Debian packages that a part of rdmapool needs:
#   scripts/deps.sh run    what scripts/run.sh needs (the RDMA user-space libraries)
#   scripts/deps.sh test   what scripts/test.sh needs (headers, compilers, the VM's parts)
#   scripts/deps.sh go     a Go that can fetch the toolchain go.mod asks for
#                          (scripts/go.sh: Go 1.23 from bookworm-backports on
#                          bookworm, else the release's golang-go)
# Packages already installed are not touched, so a second run is quick.
# Every package the scripts rely on beyond a minimal Debian (debootstrap
# --variant=minbase, as the debian:bookworm images hold) is named here;
# scripts/minroot-test.sh checks that in such a root.
#
# apt-get waits for another package manager's lock (RDMAPOOL_APT_LOCK_WAIT
# seconds, 600) and writes to RDMAPOOL_DEPS_LOG when set, else to stderr
# (scripts/apt.sh).
set -euo pipefail
# shellcheck source=apt.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

# ca-certificates: the go command fetches modules and its toolchain over HTTPS.
base_pkgs=(ca-certificates)
run_pkgs=("${base_pkgs[@]}" rdma-core libibverbs1 librdmacm1 ibverbs-providers)
# valkey-server (8.0) and Go 1.23 come from bookworm-backports;
# enable_backports adds that suite, from the mirror the machine already uses.
backports_pkgs=(valkey-server valkey-tools golang-1.23-go)
test_pkgs=(
	"${run_pkgs[@]}"
	gcc libc6-dev libibverbs-dev librdmacm-dev gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static
	qemu-system-x86 busybox-static cpio kmod iproute2 rdmacm-utils ibverbs-utils perftest
	xz-utils # unpacks the VM kernel's vmlinux from vmlinuz (vm/fetch.sh)
	git      # scripts/test.sh lists the tracked Go files for gofmt
	debootstrap # scripts/minroot-test.sh
	make     # the Makefile's other targets (make bench-rxe, make test-rxe, ...)
)

codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
case "${1:-}" in
run) want=("${run_pkgs[@]}") ;;
test) want=("${test_pkgs[@]}" valkey-server valkey-tools) ;;
go)
	if [ "$codename" = bookworm ]; then
		want=("${base_pkgs[@]}" golang-1.23-go) # bookworm's own golang-go is 1.19
	else
		want=("${base_pkgs[@]}" golang-go)
	fi
	;;
*)
	echo "usage: $0 run|test|go" >&2
	exit 2
	;;
esac

missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null; then
	echo "deps: these Debian packages are missing and there is no apt-get: ${missing[*]}" >&2
	exit 1
fi
apt_sudo || { echo "deps: missing packages: ${missing[*]}" >&2; exit 1; }
# enable_backports adds the bookworm-backports suite of the Debian mirror
# this machine already uses, when the system is bookworm and has none.
enable_backports() {
	[ "$codename" = bookworm ] || return 0
	grep -rqsE '^[^#]*bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/ && return 0
	# The mirror of a deb822 .sources file, else of sources.list (the
	# installer's classic format); either may be missing.
	local uri
	uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null) || true
	[ -n "$uri" ] || uri=$(awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}' /etc/apt/sources.list 2>/dev/null) || true
	[ -n "$uri" ] || { echo "deps: cannot find the Debian mirror to add bookworm-backports" >&2; return 1; }
	printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$uri" |
		"${APT_SUDO[@]}" tee /etc/apt/sources.list.d/rdmapool-backports.sources >/dev/null
}

echo "deps: installing ${missing[*]}${RDMAPOOL_DEPS_LOG:+ (apt-get output in $RDMAPOOL_DEPS_LOG)}"
for p in "${missing[@]}"; do
	case " ${backports_pkgs[*]} " in *" $p "*) enable_backports ;; esac
done
apt_get update -q || { echo "deps: apt-get update failed" >&2; exit 1; }
apt_get install -y -q --no-install-recommends "${missing[@]}" || { echo "deps: apt-get install ${missing[*]} failed" >&2; exit 1; }
