# shellcheck shell=bash
# Chooses qemu's accelerator for vm/run.sh by evidence, not by the presence of
# /dev/kvm. Sourced by run.sh after lib.sh; do not run it.
#
#   RDMAPOOL_VM_ACCEL=auto (default)  KVM only once a probe boot under it has
#                                     reached the guest's probe marker; else TCG
#   RDMAPOOL_VM_ACCEL=kvm             KVM or a failure within seconds, with the reason
#   RDMAPOOL_VM_ACCEL=tcg             software emulation, no probe
#
# The probe boots the very kernel and initramfs of the run with
# rdmapool.probe=1 on the kernel command line (vm/init.sh prints
# RDMAPOOL_VM_PROBE_OK as soon as its filesystems are mounted and powers off):
# a second or two where KVM works. It stops at once when qemu exits or prints
# a KVM error (a host whose /dev/kvm cannot run this guest: "KVM internal
# error. Suberror: 1 ... emulation failure", after which qemu sits idle), and
# after RDMAPOOL_VM_KVM_PROBE_TIMEOUT seconds (default 20) of no marker
# (where KVM works the marker comes in a second or two; such a host may also
# print nothing for minutes before its KVM error).
# The answer is cached per boot of the host, qemu binary and version, KVM
# device and kernel, in $(cache_dir)/accel. Auto trusts every cached answer;
# RDMAPOOL_VM_ACCEL=kvm trusts a cached error of qemu's but probes again
# where the probe had only run out of time.
#
# For tests of the harness: RDMAPOOL_VM_QEMU names the qemu binary and
# RDMAPOOL_VM_KVM_DEVICE the KVM device to look at (default /dev/kvm).
# shellcheck disable=SC2034 # ACCEL and ACCEL_WHY are read by run.sh

QEMU=${RDMAPOOL_VM_QEMU:-qemu-system-x86_64}
KVM_DEVICE=${RDMAPOOL_VM_KVM_DEVICE:-/dev/kvm}
ACCEL_MODE=${RDMAPOOL_VM_ACCEL:-auto}
KVM_PROBE_TIMEOUT=${RDMAPOOL_VM_KVM_PROBE_TIMEOUT:-20}
PROBE_MARKER=RDMAPOOL_VM_PROBE_OK
# What qemu prints when KVM cannot go on: an internal error (emulation
# failure), a failed KVM_RUN, or no KVM at all.
KVM_ERROR_RE='KVM internal error|kvm run failed|error: kvm run|Could not access KVM kernel module|failed to initialize kvm|KVM not supported|Failed to get "kvm"'

ACCEL=     # the accelerator chosen: kvm or tcg
ACCEL_WHY= # one line: why

check_accel_mode() {
	case $ACCEL_MODE in
	auto | kvm | tcg) ;;
	*) die "RDMAPOOL_VM_ACCEL must be auto, kvm or tcg, got '$ACCEL_MODE'" ;;
	esac
	[[ $KVM_PROBE_TIMEOUT =~ ^[1-9][0-9]*$ ]] ||
		die "RDMAPOOL_VM_KVM_PROBE_TIMEOUT must be whole seconds above 0, got '$KVM_PROBE_TIMEOUT'"
	command -v "$QEMU" >/dev/null || die "$QEMU not found (run vm/deps.sh as root)"
}

# qemu_base_args KERNEL: the machine both the probe and the run boot.
qemu_base_args() {
	QEMU_ARGS=(-nographic -no-reboot -m "$MEM" -smp "$SMP" -cpu max
		-kernel "$1" -initrd "$WORK/initrd.gz" -nic none)
	# qboot (from qemu-system-data) boots like SeaBIOS but prints no terminal resets.
	if [ -f /usr/share/qemu/qboot.rom ]; then QEMU_ARGS+=(-bios qboot.rom); fi
}

# kvm_first_error FILE... prints qemu's first line saying KVM failed, if any.
kvm_first_error() {
	cat "$@" 2>/dev/null | tr -d '\r' | grep -m 1 -E "$KVM_ERROR_RE" || true
}

# accel_cache_file KERNEL: where this host boot's answer for this qemu,
# device and kernel is kept.
accel_cache_file() {
	local boot key
	boot=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo unknown)
	key=$(printf '%s\n' "$boot" "$(command -v "$QEMU")" "$("$QEMU" --version 2>&1 | head -n 1)" \
		"$KVM_DEVICE" "$(realpath -e "$KVM_DEVICE" 2>/dev/null)" "$1" "$SMP" | sha256sum | cut -c1-16)
	printf '%s/accel/kvm-%s\n' "$(cache_dir)" "$key"
}

# probe_kvm KERNEL: boots under KVM until the probe marker, a KVM error,
# qemu's exit or the probe timeout. Sets PROBE_RESULT to ok, failed (qemu's
# own word: conclusive) or timeout, and PROBE_WHY to one line.
probe_kvm() {
	local out=$WORK/kvm-probe.log pid t0 deadline err
	qemu_base_args "$1"
	: >"$out"
	t0=$(now_ms)
	deadline=$((t0 + KVM_PROBE_TIMEOUT * 1000))
	"$QEMU" "${QEMU_ARGS[@]}" -accel kvm \
		-append "console=ttyS0 quiet panic=-1 rdmapool.probe=1" </dev/null >"$out" 2>&1 &
	pid=$!
	PROBE_RESULT=timeout
	PROBE_WHY="no probe marker within $KVM_PROBE_TIMEOUT s (RDMAPOOL_VM_KVM_PROBE_TIMEOUT)"
	while :; do
		if grep -q "$PROBE_MARKER" "$out"; then
			PROBE_RESULT=ok
			PROBE_WHY="a probe boot under KVM reached the guest in $(elapsed "$t0") s"
			break
		fi
		err=$(kvm_first_error "$out")
		if [ -n "$err" ]; then
			PROBE_RESULT=failed
			PROBE_WHY="qemu under KVM: $err"
			break
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid" && err=0 || err=$?
			PROBE_RESULT=failed
			PROBE_WHY="qemu under KVM exited with status $err before the guest ran: $(tr -d '\r' <"$out" | grep -v '^$' | tail -n 1)"
			break
		fi
		[ "$(now_ms)" -lt "$deadline" ] || break
		sleep 0.1
	done
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

# choose_accel KERNEL sets ACCEL and ACCEL_WHY, or dies (RDMAPOOL_VM_ACCEL=kvm
# where KVM does not work).
choose_accel() {
	local kernel=$1 cache result='' why=''
	check_accel_mode
	if [ "$ACCEL_MODE" = tcg ]; then
		ACCEL=tcg ACCEL_WHY="RDMAPOOL_VM_ACCEL=tcg"
		return
	fi
	if ! [ -r "$KVM_DEVICE" ] || ! [ -w "$KVM_DEVICE" ]; then
		why="$KVM_DEVICE is missing or not readable and writable by $(id -un)"
		[ "$ACCEL_MODE" = auto ] || die "RDMAPOOL_VM_ACCEL=kvm, but $why"
		ACCEL=tcg ACCEL_WHY="no KVM: $why"
		return
	fi
	cache=$(accel_cache_file "$kernel")
	if [ -f "$cache" ]; then
		result=$(cut -d: -f1 "$cache")
		why="$(cut -d: -f2- "$cache" | sed 's/^ //') (probed earlier in this host boot)"
		# Only a probe that ran out of time is worth a second look, and
		# only to someone who asks for KVM.
		if [ "$result" = timeout ] && [ "$ACCEL_MODE" = kvm ]; then result=; fi
	fi
	if [ -z "$result" ]; then
		probe_kvm "$kernel"
		result=$PROBE_RESULT why=$PROBE_WHY
		save_accel "$cache" "$result: $why"
	fi
	if [ "$result" = ok ]; then
		ACCEL=kvm ACCEL_WHY=$why
		return
	fi
	[ "$ACCEL_MODE" = auto ] || die "RDMAPOOL_VM_ACCEL=kvm, but KVM does not run this guest on this host: $why"
	ACCEL=tcg ACCEL_WHY="$KVM_DEVICE is there, but KVM does not run this guest: $why"
}

# forget_kvm KERNEL WHY records that KVM failed during a real boot, so that
# later runs in this host boot go straight to TCG.
forget_kvm() {
	save_accel "$(accel_cache_file "$1")" "failed: $2"
}

# save_accel FILE LINE: a cache that cannot be written costs only a probe.
save_accel() {
	if mkdir -p "$(dirname "$1")"; then printf '%s\n' "$2" >"$1" || true; fi
}
