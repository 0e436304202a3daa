# shellcheck shell=bash
# Helpers shared by the vm/*.sh scripts. Source this file; do not run it.
# shellcheck disable=SC2034 # variables used by the scripts that source this file

# VM_DIR is the directory holding the harness scripts.
VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# depmod, modprobe and ip live in sbin, which a non-root PATH may lack.
PATH=$PATH:/usr/sbin:/sbin

# Library directory of Debian's amd64 multiarch layout (the VM kernel is amd64 too).
MULTIARCH_LIB=/usr/lib/x86_64-linux-gnu

log() { printf 'rdmapool-vm: %s\n' "$*" >&2; }

die() {
	log "error: $*"
	exit 1
}

# cache_dir prints where downloaded kernels are kept.
cache_dir() {
	printf '%s\n' "${RDMAPOOL_VM_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/rdmapool-vm}"
}

# is_root succeeds when the script may install packages.
is_root() { [ "$(id -u)" -eq 0 ]; }

# now_ms prints a monotonic-enough wall clock in milliseconds.
now_ms() { date +%s%3N; }

# elapsed START_MS prints the seconds since START_MS with one decimal.
elapsed() {
	local ms=$(($(now_ms) - $1))
	printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100))
}

# valkey_rdma_mode DIR prints how the valkey build in DIR serves RDMA, as
# internal/testutil.ValkeyBuild.Mode tells it: "module-args" (8.0's
# valkey-rdma.so, listener as module arguments bind= port=), "module"
# (8.1+'s valkey-rdma.so, with --rdma-bind and --rdma-port) or "builtin"
# (BUILD_RDMA=yes: valkey-server links librdmacm); it fails if none.
valkey_rdma_mode() {
	if [ -f "$1/valkey-rdma.so" ]; then
		if grep -q 'RDMA: Unsupported argument' "$1/valkey-rdma.so"; then echo module-args; else echo module; fi
	elif grep -q 'librdmacm\.so' "$1/valkey-server"; then
		echo builtin
	else
		return 1
	fi
}

# valkey_rdma_args_fn prints the shell function rdma_args (for a guest
# script): `rdma_args MODE MODULE ADDR PORT` prints the valkey-server
# arguments that serve RDMA on ADDR:PORT (words without spaces).
valkey_rdma_args_fn() {
	cat <<'FN'
rdma_args() {
	case $1 in
	builtin) echo "--rdma-bind $3 --rdma-port $4" ;;
	module) echo "--loadmodule $2 --rdma-bind $3 --rdma-port $4" ;;
	module-args) echo "--loadmodule $2 bind=$3 port=$4" ;;
	esac
}
FN
}

# log_accel LOG prints the accelerator (kvm or tcg) a console log of
# vm/run.sh --log was taken under: figures under the two never compare.
log_accel() {
	tr -d '\r' <"$1" | sed -n 's/^rdmapool-vm: accelerator: \([a-z]*\) .*/\1/p' | tail -n 1
}

# rev_tree REV DIR prints the directory that holds git revision REV's tree:
# . for `.` (the working tree), else DIR, filled from `git archive REV`.
# rev_name REV prints what the reports call it: "tree", or its short hash.
rev_tree() {
	if [ "$1" = . ]; then
		echo .
		return
	fi
	mkdir -p "$2"
	git archive "$1" | tar -x -C "$2"
	echo "$2"
}
rev_name() {
	if [ "$1" = . ]; then echo tree; else git rev-parse --short "$1^{commit}"; fi
}
