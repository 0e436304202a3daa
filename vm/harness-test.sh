#!/usr/bin/env bash
# Tests of the VM harness itself (scripts/test.sh runs them before the VM
# tests): how vm/run.sh chooses its accelerator where KVM is present but
# broken, and what it says when a run times out. A fake KVM device (a file)
# and qemu wrappers that fail as broken hosts do stand in for such a host,
# so these run the same on every machine, with or without a working KVM.
#
# usage: vm/harness-test.sh
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

REAL_QEMU=$(command -v qemu-system-x86_64) || die "qemu-system-x86_64 not found (run vm/deps.sh as root)"
T=$(mktemp -d "${TMPDIR:-/tmp}/rdmapool-harness.XXXXXX")
trap 'rm -rf "$T"' EXIT
: >"$T/kvm" # a KVM device that is there, readable and writable
passed=0 failed=0

# wrapper NAME BODY: a qemu that runs BODY when asked for -accel kvm and is
# the real qemu otherwise. Each name is a fresh accelerator cache key.
wrapper() {
	cat >"$T/$1" <<SH
#!/bin/sh
for a in "\$@"; do
	if [ "\$a" = kvm ]; then
		$2
	fi
done
exec "$REAL_QEMU" "\$@"
SH
	chmod +x "$T/$1"
}
# As on a nested-virtualisation host: the error, then an idle qemu.
wrapper qemu-kvm-internal 'echo "KVM internal error. Suberror: 1" >&2; echo "emulation failure" >&2; exec sleep 600'
wrapper qemu-kvm-internal2 'echo "KVM internal error. Suberror: 1" >&2; echo "emulation failure" >&2; exec sleep 600'
# A KVM that prints nothing at all.
wrapper qemu-kvm-silent 'exec sleep 600'
# qemu's own refusal.
wrapper qemu-kvm-refused 'echo "Could not access KVM kernel module: Permission denied" >&2; echo "qemu-system-x86_64: failed to initialize kvm: Permission denied" >&2; exit 1'
# A qemu that never boots, whatever the accelerator.
cat >"$T/qemu-never-boots" <<'SH'
#!/bin/sh
echo "SeaBIOS (fake)"
exec sleep 600
SH
chmod +x "$T/qemu-never-boots"

# check NAME WANT_STATUS MAX_SECONDS PATTERN [ENV=VALUE...] -- RUN_ARGS...:
# runs vm/run.sh and checks its status, its time and that PATTERN (an ERE)
# is in its output.
check() {
	local name=$1 want=$2 max=$3 pattern=$4 envs=() t0 rc took
	shift 4
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	log "harness test: $name"
	t0=$(now_ms)
	rc=0
	env RDMAPOOL_VM_KVM_DEVICE="$T/kvm" "${envs[@]}" "$VM_DIR/run.sh" "$@" >"$T/out" 2>&1 || rc=$?
	took=$((($(now_ms) - t0) / 1000))
	local why=()
	[ "$rc" = "$want" ] || why+=("status $rc, want $want")
	[ "$took" -le "$max" ] || why+=("took $took s, want at most $max s")
	grep -qE "$pattern" "$T/out" || why+=("no line matching /$pattern/")
	if [ "${#why[@]}" -eq 0 ]; then
		passed=$((passed + 1))
		echo "--- PASS harness: $name (${took} s)"
	else
		failed=$((failed + 1))
		echo "--- FAIL harness: $name: ${why[*]}; its output:"
		sed 's/^/    /' "$T/out" | tail -n 40
	fi
}

check "broken KVM (internal error) falls back to TCG" 0 120 \
	'accelerator: tcg \(.*KVM internal error' \
	RDMAPOOL_VM_QEMU="$T/qemu-kvm-internal" -- -- true
check "the answer is cached: the next run goes straight to TCG" 0 60 \
	'accelerator: tcg \(.*probed earlier in this host boot' \
	RDMAPOOL_VM_QEMU="$T/qemu-kvm-internal" -- -- true
check "RDMAPOOL_VM_ACCEL=kvm on broken KVM fails fast" 1 30 \
	'RDMAPOOL_VM_ACCEL=kvm, but KVM does not run this guest.*KVM internal error' \
	RDMAPOOL_VM_QEMU="$T/qemu-kvm-internal2" RDMAPOOL_VM_ACCEL=kvm -- -- true
check "a silent KVM falls back to TCG after the probe timeout" 0 120 \
	'accelerator: tcg \(.*no probe marker within 3 s' \
	RDMAPOOL_VM_QEMU="$T/qemu-kvm-silent" RDMAPOOL_VM_KVM_PROBE_TIMEOUT=3 -- -- true
check "RDMAPOOL_VM_ACCEL=kvm where qemu refuses KVM fails fast" 1 30 \
	'RDMAPOOL_VM_ACCEL=kvm, but .*(exited with status 1|failed to initialize kvm|Could not access KVM)' \
	RDMAPOOL_VM_QEMU="$T/qemu-kvm-refused" RDMAPOOL_VM_ACCEL=kvm -- -- true
check "RDMAPOOL_VM_ACCEL=kvm with no KVM device fails at once" 1 30 \
	'RDMAPOOL_VM_ACCEL=kvm, but .* is missing or not readable' \
	RDMAPOOL_VM_KVM_DEVICE="$T/no-such-kvm" RDMAPOOL_VM_ACCEL=kvm -- -- true
check "RDMAPOOL_VM_ACCEL=tcg needs no probe" 0 60 \
	'accelerator: tcg \(RDMAPOOL_VM_ACCEL=tcg\)' \
	RDMAPOOL_VM_QEMU="$T/qemu-kvm-silent" RDMAPOOL_VM_ACCEL=tcg -- -- true
check "a bad RDMAPOOL_VM_ACCEL is refused" 1 30 \
	'RDMAPOOL_VM_ACCEL must be auto, kvm or tcg' \
	RDMAPOOL_VM_ACCEL=fast -- -- true
check "timeout: a VM that never boots" 124 60 \
	'the VM never booted \(tcg\)' \
	RDMAPOOL_VM_QEMU="$T/qemu-never-boots" RDMAPOOL_VM_ACCEL=tcg RDMAPOOL_VM_HANG_AFTER=3 -- --timeout 8 -- true
check "timeout: a command that hangs is named, with its last test" 124 90 \
	"the command hung: 'sh -c .*'.*last package started: example/pkg; last test started: TestHangs" \
	RDMAPOOL_VM_ACCEL=tcg RDMAPOOL_VM_HANG_AFTER=5 -- --timeout 30 -- \
	sh -c 'echo "=== rdmapool-vm: RUN example/pkg"; echo "=== RUN   TestHangs"; exec sleep 600'
check "timeout: a run still printing is slow, not hung" 124 90 \
	'a slow run: .* was still printing.*raise --timeout' \
	RDMAPOOL_VM_ACCEL=tcg RDMAPOOL_VM_HANG_AFTER=5 -- --timeout 30 -- \
	sh -c 'while :; do echo tick; sleep 1; done'

echo "harness: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
