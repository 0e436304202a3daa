#!/usr/bin/env bash
# Checks that a minimal Debian is enough for the README's two commands: in a
# fresh `debootstrap --variant=minbase bookworm` root (what the debian:bookworm
# images hold), with this checkout's files copied in, it runs what both
# commands run before their real work: scripts/deps.sh run and test (every
# package they rely on, named by them), Go (ensure_go: Debian's Go fetching
# go.mod's toolchain over HTTPS), a CGO_ENABLED=0 build of everything, and one
# boot of the soft-RoCE VM (vm/run.sh -- true: the kernel download, the
# initramfs from the root's own tools, the accelerator probe).
#
# usage: scripts/minroot-test.sh [--full]
#   --full   run the two commands themselves in the root instead:
#            scripts/run.sh -n 2000, then scripts/test.sh (long)
#
# Needs root (debootstrap, chroot, mounts). The root's base is cached as a
# tarball in ${XDG_CACHE_HOME:-$HOME/.cache}/rdmapool-minroot for a week;
# each run unpacks a fresh copy and removes it afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'minroot: %s\n' "$*" >&2; }
die() {
	say "error: $*"
	exit 1
}

full=0
case ${1:-} in
--full) full=1 ;;
'') ;;
*) echo "usage: $0 [--full]" >&2; exit 2 ;;
esac

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot and mounts)"
command -v debootstrap >/dev/null || die "debootstrap not found (apt-get install debootstrap)"

# mirror: the Debian mirror this machine uses (deb822 .sources, else sources.list).
mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null) || true
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $3 ~ /^(bookworm|stable)$/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null) || true
[ -n "$mirror" ] || mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null) || true
[ -n "$mirror" ] || die "cannot find this machine's Debian mirror in /etc/apt"

cache=${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/rdmapool-minroot
tarball=$cache/bookworm-minbase.tar.gz
mkdir -p "$cache"
if [ -z "$(find "$tarball" -mtime -7 2>/dev/null)" ]; then
	say "debootstrap --variant=minbase bookworm from $mirror (cached for a week)"
	base=$(mktemp -d "$cache/build.XXXXXX")
	debootstrap --variant=minbase bookworm "$base" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
		{ tail -n 20 "$cache/debootstrap.log" >&2; rm -rf "$base"; die "debootstrap failed (log: $cache/debootstrap.log)"; }
	tar -C "$base" -czf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
	rm -rf "$base"
fi

root=$(mktemp -d "${TMPDIR:-/tmp}/rdmapool-minroot.XXXXXX")
mounts=()
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	local i
	for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}" 2>/dev/null || true; done
	rm -rf --one-file-system "$root"
}
trap cleanup EXIT
tar -C "$root" -xzf "$tarball"
# The checkout's files as they are now (tracked and new, not ignored ones).
mkdir -p "$root/src"
if git rev-parse --git-dir >/dev/null 2>&1; then
	git ls-files -z -co --exclude-standard | tar --null -T - --ignore-failed-read -cf - | tar -C "$root/src" -xf -
else
	tar -C . --exclude=./out -cf - . | tar -C "$root/src" -xf -
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
# This machine's local trust anchors (where a network intercepts TLS, its CA
# is one): a user's machine on that network has them too. ca-certificates,
# which deps.sh installs in the root, adds them to the root's bundle.
if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
	mkdir -p "$root/usr/local/share/ca-certificates"
	cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
fi
for m in proc sys dev dev/pts; do
	mkdir -p "$root/$m"
	case $m in
	proc) mount -t proc proc "$root/proc" ;;
	sys) mount -t sysfs sysfs "$root/sys" ;;
	dev) mount --bind /dev "$root/dev" ;;
	dev/pts) mount -t devpts devpts "$root/dev/pts" ;;
	esac
	mounts+=("$root/$m")
done

if [ "$full" = 1 ]; then
	inner='scripts/run.sh -n 2000 && scripts/test.sh'
else
	inner='scripts/deps.sh run && scripts/deps.sh test && . scripts/go.sh && ensure_go &&
		go version && CGO_ENABLED=0 go build ./... && vm/run.sh -- true'
fi
say "in a fresh minbase root: $inner"
t0=$SECONDS
rc=0
# Only what a new user's shell would have: no variables from this machine.
chroot "$root" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" LANG=C.UTF-8 ${CI:+CI=$CI} RDMAPOOL_IN_MINROOT=1 \
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	bash -c "cd /src && $inner" || rc=$?
if [ "$rc" -eq 0 ]; then
	say "passed in $((SECONDS - t0)) s"
else
	say "FAILED with status $rc after $((SECONDS - t0)) s"
fi
exit "$rc"
