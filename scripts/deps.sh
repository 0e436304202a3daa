#!/usr/bin/env bash
# Installs, with apt-get, the Debian packages that a part of rdmapool needs:
#   scripts/deps.sh run    what `make run` needs (the RDMA user-space libraries)
#   scripts/deps.sh test   what `make test` needs (headers, compilers, the VM's parts)
# Packages already installed are not touched, so a second run is quick.
set -euo pipefail

run_pkgs=(rdma-core libibverbs1 librdmacm1 ibverbs-providers)
test_pkgs=(
	"${run_pkgs[@]}"
	gcc libc6-dev libibverbs-dev librdmacm-dev gcc-aarch64-linux-gnu qemu-user-static
	qemu-system-x86 busybox-static cpio kmod iproute2 rdmacm-utils ibverbs-utils perftest
)

case "${1:-}" in
run) want=("${run_pkgs[@]}") ;;
test) want=("${test_pkgs[@]}") ;;
*)
	echo "usage: $0 run|test" >&2
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
sudo=()
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || {
		echo "deps: run as root or install sudo; missing packages: ${missing[*]}" >&2
		exit 1
	}
	sudo=(sudo)
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
