# shellcheck shell=bash
# Sourced by scripts/deps.sh, vm/deps.sh and vm/fetch.sh: apt-get as root
# (through sudo otherwise), non-interactive, that waits for another package
# manager instead of failing at once.
#
#   RDMAPOOL_APT_LOCK_WAIT  seconds to wait for apt's and dpkg's locks (600)
#   RDMAPOOL_DEPS_LOG       where apt-get's output goes (default: stderr)

# apt_sudo: the command prefix that makes apt-get run as root; fails, saying
# so, where that cannot be.
apt_sudo() {
	APT_SUDO=()
	[ "$(id -u)" -eq 0 ] && return 0
	if ! command -v sudo >/dev/null; then
		echo "deps: run as root or install sudo" >&2
		return 1
	fi
	APT_SUDO=(sudo)
}

# apt_get ARGS...: one apt-get run. dpkg's frontend lock is waited for by
# apt itself (DPkg::Lock::Timeout); the lists and archives locks, which apt
# does not wait for, by trying again every 2 s. After RDMAPOOL_APT_LOCK_WAIT
# seconds it gives up, naming the process that holds the lock.
apt_get() {
	local wait=${RDMAPOOL_APT_LOCK_WAIT:-600} start=$SECONDS out rc said=0 holder left
	local dest=${RDMAPOOL_DEPS_LOG:-/dev/stderr}
	[[ $wait =~ ^[0-9]+$ ]] || { echo "deps: RDMAPOOL_APT_LOCK_WAIT must be whole seconds, got '$wait'" >&2; return 2; }
	apt_sudo || return 1
	out=$(mktemp)
	while :; do
		left=$((wait - (SECONDS - start)))
		[ "$left" -gt 0 ] || left=1
		rm -f "$out.rc"
		# Through env: sudo's env_reset would drop an exported DEBIAN_FRONTEND.
		# The status goes through a file: the pipeline's own is tee's, or
		# apt-get's only under the caller's pipefail.
		{
			"${APT_SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
				apt-get -o DPkg::Lock::Timeout="$left" "$@" </dev/null 2>&1 || echo "$?" >"$out.rc"
		} | tee "$out" >>"$dest"
		rc=0
		if [ -f "$out.rc" ]; then rc=$(cat "$out.rc"); fi
		if [ "$rc" -eq 0 ] || ! grep -qE 'Could not get lock|Unable to lock|Unable to acquire the dpkg frontend lock' "$out"; then
			[ "$rc" -eq 0 ] || [ "$dest" = /dev/stderr ] || tail -n 5 "$out" >&2
			rm -f "$out" "$out.rc"
			return "$rc"
		fi
		holder=$(grep -oE 'held by process [0-9]+( \([^)]*\))?' "$out" | head -n 1) || true
		if [ $((SECONDS - start)) -ge "$wait" ]; then
			echo "deps: apt's lock is still taken after $wait s (${holder:-by another apt-get or dpkg}); let that finish and run again, or raise RDMAPOOL_APT_LOCK_WAIT" >&2
			rm -f "$out" "$out.rc"
			return 1
		fi
		if [ "$said" = 0 ]; then
			echo "deps: another package manager holds apt's lock (${holder:-process unknown}); waiting for it, at most $wait s" >&2
			said=1
		fi
		sleep 2
	done
}
