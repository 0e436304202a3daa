#!/usr/bin/env bash
# Builds a valkey source tree that you already have (a release's tarball or
# `git archive`, a checkout) with RDMA, for vm/valkey-rdma.sh and
# vm/bench-valkey.sh; nothing is fetched. No Debian package of valkey has
# RDMA, so this is how a real valkey-server with RDMA gets into the loop.
#
# The RDMA flag follows what the tree's src/Makefile offers: valkey 8.1 and
# later can build RDMA into valkey-server (BUILD_RDMA=yes: --rdma-bind and
# --rdma-port, and from 9.0 valkey-cli and valkey-benchmark --rdma); 8.0
# (and the 2024 development tree) only as a connection module
# (BUILD_RDMA=module: valkey-rdma.so, loaded with --loadmodule ... bind=IP
# port=N). --mode module builds the module where both exist (8.1+'s module
# takes --rdma-bind and --rdma-port after --loadmodule). TLS is off and
# malloc is libc's: fewer libraries to carry into the VM, and faster builds.
#
# It copies valkey-server, valkey-cli, valkey-benchmark (and valkey-rdma.so
# for a module build) into OUT (default SRC/rdmapool-out) and prints the
# version and the RDMA mode. Build on a system like the VM's (the host's
# own Debian libraries are copied into it). The builds are never committed.
#
# usage: vm/valkey-build.sh [--mode auto|yes|module] [--jobs N] SRC [OUT]
set -euo pipefail

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0" >&2; exit 2; }
mode=auto jobs=2
while [ $# -gt 0 ]; do
	case "$1" in
	--mode) mode=${2:?}; shift 2 ;;
	--jobs) jobs=${2:?}; shift 2 ;;
	-h | --help) usage ;;
	-*) usage ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] && [ $# -le 2 ] || usage
src=$1
out=${2:-$src/rdmapool-out}
bad() { echo "valkey-build: $*" >&2; exit 2; }
case "$mode" in auto | yes | module) ;; *) bad "--mode is auto, yes or module" ;; esac
[[ $jobs =~ ^[1-9][0-9]*$ ]] || bad "--jobs must be a positive number"
[ -f "$src/src/version.h" ] && [ -f "$src/src/Makefile" ] ||
	bad "$src: not a valkey source tree (no src/version.h and src/Makefile)"
version=$(sed -n 's/^#define VALKEY_VERSION "\(.*\)"$/\1/p' "$src/src/version.h")
[ -n "$version" ] || bad "$src/src/version.h: no VALKEY_VERSION"

# What the tree offers: BUILD_RDMA=yes came with 8.1; before it the
# Makefile rejects anything but module and no.
if grep -q '^ifeq (\$(BUILD_RDMA),yes)' "$src/src/Makefile"; then builtin=1; else builtin=0; fi
grep -q '^ifeq (\$(BUILD_RDMA),module)' "$src/src/Makefile" || bad "$src/src/Makefile: valkey $version has no RDMA (no BUILD_RDMA=module)"
case "$mode" in
auto) if [ $builtin = 1 ]; then flag=yes; else flag=module; fi ;;
yes) [ $builtin = 1 ] || bad "valkey $version builds RDMA only as a module (--mode module)"; flag=yes ;;
module) flag=module ;;
esac

# The libraries RDMA needs to build; the compiler and make as well.
missing=()
for p in librdmacm-dev libibverbs-dev pkg-config gcc make; do
	dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" = 0 ]; then
		echo "valkey-build: installing ${missing[*]}" >&2
		apt-get install -y --no-install-recommends "${missing[@]}" >&2 ||
			{ apt-get update >&2 && apt-get install -y --no-install-recommends "${missing[@]}" >&2; }
	else
		bad "missing packages; as root run: apt-get install ${missing[*]}"
	fi
fi

echo "valkey-build: valkey $version in $src: make BUILD_RDMA=$flag BUILD_TLS=no MALLOC=libc -j$jobs" >&2
# A tree built before with other settings is rebuilt from scratch by
# valkey's own Makefile (it compares .make-settings).
make -C "$src" -j"$jobs" BUILD_RDMA="$flag" BUILD_TLS=no MALLOC=libc >&2

files=(valkey-server valkey-cli valkey-benchmark)
[ $flag = yes ] || files+=(valkey-rdma.so)
mkdir -p "$out"
for f in "${files[@]}"; do
	[ -f "$src/src/$f" ] || bad "the build made no src/$f"
	cp "$src/src/$f" "$out/"
done
# Built-in RDMA shows in valkey-server's NEEDED entries (librdmacm); a
# module build must not have it there, or the build is not what it says.
if grep -q 'librdmacm\.so' "$out/valkey-server"; then got=yes; else got=module; fi
[ $got = $flag ] || bad "$out/valkey-server: RDMA is $got, asked for $flag"
[ $flag = module ] || rm -f "$out/valkey-rdma.so" # from an earlier module build into the same OUT

"$out/valkey-server" --version
if [ $flag = yes ]; then
	echo "valkey $version: RDMA built in (--rdma-bind IP --rdma-port N) in $out"
elif [ $builtin = 1 ]; then
	echo "valkey $version: RDMA as a module (--loadmodule valkey-rdma.so --rdma-bind IP --rdma-port N) in $out"
else
	echo "valkey $version: RDMA as a module (--loadmodule valkey-rdma.so bind=IP port=N) in $out"
fi
