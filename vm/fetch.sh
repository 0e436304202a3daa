#!/usr/bin/env bash
# Downloads Debian's amd64 kernel package into the cache, extracts it and runs depmod.
# Prints the extracted root (holding boot/vmlinuz-* and lib/modules/*) on stdout.
#
# Cache: $RDMAPOOL_VM_CACHE, default ${XDG_CACHE_HOME:-$HOME/.cache}/rdmapool-vm.
# Override the package with RDMAPOOL_VM_KERNEL_PKG=linux-image-<version>-amd64.
# Idempotent: a kernel already in the cache is reused without any download.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=../scripts/apt.sh source-path=SCRIPTDIR
. "$VM_DIR/../scripts/apt.sh"

# kernel_pkg_from_apt prints the versioned package linux-image-amd64 depends on.
kernel_pkg_from_apt() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		sed -n 's/^ *|\{0,1\}Depends: \(linux-image-[0-9][^ <>]*-amd64\)$/\1/p' | head -n 1
}

# newest_cached prints the newest complete kernel dir in the cache, if any.
newest_cached() {
	local d best=
	for d in "$1"/linux-image-*; do
		[ -f "$d/.complete" ] && best=$d
	done
	[ -n "$best" ] && printf '%s\n' "$best"
}

resolve_pkg() {
	local cache=$1 pkg=${RDMAPOOL_VM_KERNEL_PKG:-}
	[ -n "$pkg" ] && { printf '%s\n' "$pkg"; return; }
	pkg=$(kernel_pkg_from_apt)
	if [ -z "$pkg" ] && is_root; then
		log "apt-cache does not know linux-image-amd64; running apt-get update"
		apt_get update -qq || log "apt-get update failed"
		pkg=$(kernel_pkg_from_apt)
	fi
	if [ -z "$pkg" ]; then
		local cached
		cached=$(newest_cached "$cache") ||
			die "cannot tell which kernel package to use: 'apt-cache depends linux-image-amd64' names none (run 'apt-get update' as root, or set RDMAPOOL_VM_KERNEL_PKG)"
		log "warning: apt-cache names no kernel package; using cached $(basename "$cached")"
		pkg=$(basename "$cached")
	fi
	printf '%s\n' "$pkg"
}

# download_and_extract PKG DEST: builds DEST atomically (via a temp dir next to it).
download_and_extract() {
	local pkg=$1 dest=$2 tmp deb kver
	tmp=$(mktemp -d "$dest.tmp.XXXXXX")
	# shellcheck disable=SC2064 # expand now: tmp is local
	trap "rm -rf '$tmp'" EXIT
	log "downloading $pkg (about 70 MB, once)"
	local apt_opts=()
	# apt's _apt sandbox user cannot write into a root-owned temp dir.
	is_root && apt_opts=(-o APT::Sandbox::User=root)
	(cd "$tmp" && apt-get download -q "${apt_opts[@]}" "$pkg" >&2) ||
		die "apt-get download $pkg failed (is a Debian mirror reachable and 'apt-get update' done?)"
	deb=$(find "$tmp" -maxdepth 1 -name "${pkg}_*.deb" | head -n 1)
	[ -n "$deb" ] || die "apt-get download $pkg produced no .deb"
	dpkg-deb -x "$deb" "$tmp/tree" || die "dpkg-deb -x $deb failed"
	rm -f "$deb"
	kver=$(find "$tmp/tree/lib/modules" -mindepth 1 -maxdepth 1 -printf '%f\n' | head -n 1)
	[ -n "$kver" ] || die "$pkg has no lib/modules/<version>"
	[ -f "$tmp/tree/boot/vmlinuz-$kver" ] || die "$pkg has no boot/vmlinuz-$kver"
	depmod -b "$tmp/tree" "$kver" || die "depmod -b failed for $kver"
	extract_vmlinux "$tmp/tree" "$kver"
	printf '%s\n' "$kver" >"$tmp/tree/kernel-version"
	touch "$tmp/tree/.complete"
	rm -rf "$dest"
	mv "$tmp/tree" "$dest"
	rm -rf "$tmp"
	trap - EXIT
}

# extract_vmlinux ROOT KVER: unpacks the ELF kernel from boot/vmlinuz-KVER to
# boot/vmlinux-KVER (as the kernel's scripts/extract-vmlinux does). qemu boots it
# via PVH without decompressing under emulation. Failure only costs boot time.
extract_vmlinux() {
	local z=$1/boot/vmlinuz-$2 out=$1/boot/vmlinux-$2 magic tool off
	for magic in 'xz:\xfd7zXZ\x00' 'zstd:\x28\xb5\x2f\xfd' 'gzip:\x1f\x8b\x08'; do
		tool=${magic%%:*}
		command -v "$tool" >/dev/null || continue
		while read -r off; do
			tail -c "+$((off + 1))" "$z" | "$tool" -dc 2>/dev/null >"$out.tmp" || true
			if [ -s "$out.tmp" ] && [ "$(head -c 4 "$out.tmp")" = $'\x7fELF' ]; then
				mv "$out.tmp" "$out"
				return 0
			fi
		done < <(LC_ALL=C grep -obUaP "${magic#*:}" "$z" | cut -d: -f1 | head -n 3)
	done
	rm -f "$out.tmp"
	touch "$1/.no-vmlinux"
	log "warning: could not extract vmlinux from $z; booting the compressed kernel (slower)"
}

# prune_old CACHE KEEP: removes other cached kernels so the cache does not grow.
prune_old() {
	local d
	for d in "$1"/linux-image-*; do
		[ -e "$d" ] && [ "$d" != "$2" ] && rm -rf "$d"
	done
	return 0
}

main() {
	local cache pkg dest
	cache=$(cache_dir)
	mkdir -p "$cache" || die "cannot create cache dir $cache (set RDMAPOOL_VM_CACHE)"
	pkg=$(resolve_pkg "$cache")
	dest=$cache/$pkg
	if [ ! -f "$dest/.complete" ]; then
		download_and_extract "$pkg" "$dest"
		prune_old "$cache" "$dest"
		log "kernel $(cat "$dest/kernel-version") ready in $dest"
	fi
	local kver
	kver=$(cat "$dest/kernel-version")
	if [ ! -f "$dest/boot/vmlinux-$kver" ] && [ ! -e "$dest/.no-vmlinux" ]; then
		extract_vmlinux "$dest" "$kver" # caches made before vmlinux was extracted
	fi
	printf '%s\n' "$dest"
}

main "$@"
