#!/usr/bin/env bash
# Makes sure the Debian packages the soft-RoCE VM harness uses are installed.
# As root it installs missing ones with apt-get; otherwise it says what to install.
# Fast when everything is present (one dpkg-query per package, no network).
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=../scripts/apt.sh source-path=SCRIPTDIR
. "$VM_DIR/../scripts/apt.sh"

# Host packages: qemu and the kernel tooling, plus the userspace copied into the VM.
PACKAGES=(
	qemu-system-x86 # qemu-system-x86_64 (software emulation, no KVM needed)
	dash            # the VM's /bin/sh
	busybox-static  # the VM's basic commands
	cpio gzip       # initramfs
	xz-utils        # vmlinux out of vmlinuz (fetch.sh)
	kmod            # depmod/modprobe to resolve kernel module dependencies
	iproute2        # ip (veth pairs) and rdma (rxe links)
	rdma-core ibverbs-providers libibverbs1 librdmacm1 # libraries + rxe provider
	ibverbs-utils rdmacm-utils perftest # ibv_devinfo, rping, ib_*_lat/bw
)

missing_packages() {
	local p
	for p in "${PACKAGES[@]}"; do
		dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^ii' || printf '%s\n' "$p"
	done
}

main() {
	command -v dpkg-query >/dev/null || die "this harness needs a Debian-based host (dpkg-query not found)"
	local missing
	mapfile -t missing < <(missing_packages)
	[ "${#missing[@]}" -eq 0 ] && return 0
	if ! is_root; then
		die "missing packages: ${missing[*]}; install them with: sudo apt-get install ${missing[*]}"
	fi
	log "installing missing packages: ${missing[*]}"
	apt_get update -qq || die "apt-get update failed; check the Debian mirror configuration"
	apt_get install -y -qq --no-install-recommends "${missing[@]}" || die "apt-get install ${missing[*]} failed"
}

main "$@"
