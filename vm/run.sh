#!/usr/bin/env bash
# Boots Debian's kernel in qemu with two soft-RoCE devices and runs one command
# inside; exits with that command's status. The accelerator is KVM where a
# probe boot shows that it works, else software emulation (TCG): see
# vm/accel.sh and RDMAPOOL_VM_ACCEL=auto|kvm|tcg in vm/README.md.
#
# usage: vm/run.sh [--bin DIR]... [--env NAME=VALUE]... [--timeout SECONDS]
#                  [--mem MB] [--smp N] [--append ARGS] [--log FILE] [--keep]
#                  -- COMMAND [ARGS...]
#
#   --bin DIR      copy DIR's contents (recursively) to /opt/bin in the VM; repeatable
#   --env N=V      export N=V inside the VM (e.g. RDMAPOOL_VM_WIRE_ROUTES=1); repeatable
#   --timeout S    kill the VM after S seconds (default $RDMAPOOL_VM_TIMEOUT or 1200)
#   --mem MB       VM memory (default $RDMAPOOL_VM_MEM or 2048); --bin files live in RAM
#   --smp N        VM cores (default $RDMAPOOL_VM_SMP or 2)
#   --append ARGS  more kernel command-line arguments ($RDMAPOOL_VM_APPEND)
#   --log FILE     also keep the console log in FILE ($RDMAPOOL_VM_LOG)
#   --keep         keep the temp dir (initramfs tree, initrd, log) and print its path
#
# COMMAND runs with sh in /opt/bin with stdin from /dev/null; for a shell snippet use
# `-- sh -c '...'`. See vm/README.md for what the VM provides.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=accel.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/accel.sh"

# Kernel modules to load, in order; their dependencies are added before them.
MODULES=(crc32_generic ip6_udp_tunnel udp_tunnel configfs ib_core ib_uverbs iw_cm ib_cm
	rdma_cm rdma_ucm rdma_rxe veth)
# Tools every VM has. iproute2's ip wins over busybox's: /usr/bin precedes /bin on PATH.
REQUIRED_TOOLS=(ip rdma ibv_devinfo rping cmtime ib_write_lat ib_send_lat ib_write_bw)
OPTIONAL_TOOLS=(ibv_devices ibv_rc_pingpong ib_read_lat ib_read_bw ib_send_bw
	rdma_server rdma_client ucmatose udaddy)
# Libraries present even though no binary here links them: dlopen'ed by purego
# (CGO_ENABLED=0) Go binaries, whose only NEEDED entries are libc/libdl/libpthread.
DLOPEN_LIBS=(libc.so.6 libdl.so.2 libpthread.so.0 libgcc_s.so.1 libibverbs.so.1 librdmacm.so.1
	libibverbs.so librdmacm.so)
MARKER=RDMAPOOL_VM_EXIT

BIN_DIRS=()
ENV_VARS=()
TIMEOUT=${RDMAPOOL_VM_TIMEOUT:-1200}
MEM=${RDMAPOOL_VM_MEM:-2048}
SMP=${RDMAPOOL_VM_SMP:-2}
APPEND=${RDMAPOOL_VM_APPEND:-}
LOG_COPY=${RDMAPOOL_VM_LOG:-}
KEEP=0
CMD=()

usage() {
	sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
	exit 2
}

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

parse_args() {
	while [ $# -gt 0 ]; do
		case $1 in
		--bin) BIN_DIRS+=("${2:?--bin needs a directory}"); shift 2 ;;
		--env) ENV_VARS+=("${2:?--env needs NAME=VALUE}"); shift 2 ;;
		--timeout) TIMEOUT=${2:?--timeout needs seconds}; shift 2 ;;
		--mem) MEM=${2:?--mem needs MB}; shift 2 ;;
		--smp) SMP=${2:?--smp needs a count}; shift 2 ;;
		--append) APPEND=${2?--append needs kernel arguments}; shift 2 ;;
		--log) LOG_COPY=${2:?--log needs a file}; shift 2 ;;
		--keep) KEEP=1; shift ;;
		-h | --help) usage ;;
		--) shift; CMD=("$@"); break ;;
		*) log "unknown argument: $1"; usage ;;
		esac
	done
	[ "${#CMD[@]}" -gt 0 ] || { log "no command given after --"; usage; }
	is_uint "$TIMEOUT" || die "--timeout/RDMAPOOL_VM_TIMEOUT must be whole seconds, got '$TIMEOUT'"
	is_uint "$MEM" || die "--mem/RDMAPOOL_VM_MEM must be MB, got '$MEM'"
	is_uint "$SMP" || die "--smp must be a number, got '$SMP'"
	local d e
	for d in "${BIN_DIRS[@]}"; do [ -d "$d" ] || die "--bin $d: not a directory"; done
	for e in "${ENV_VARS[@]}"; do
		[[ $e =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || die "--env $e: expected NAME=VALUE"
	done
}

# sh_quote ARGS...: prints the arguments as one line of POSIX-sh single-quoted words.
sh_quote() {
	local a out=
	for a in "$@"; do out+="'${a//\'/\'\\\'\'}' "; done
	printf '%s\n' "${out% }"
}

# ---- initramfs tree ---------------------------------------------------------

HOST_FILES=() # host paths copied to the same path in the VM (symlinks followed)
ELF_FILES=()  # files whose shared-library closure is added

is_elf() {
	local magic=
	IFS= LC_ALL=C read -r -n 4 -d '' magic <"$1" 2>/dev/null || true
	[ "$magic" = $'\x7fELF' ]
}

make_layout() {
	mkdir -p "$ROOT"/{bin,sbin,usr/bin,usr/sbin,usr/lib64,etc/rdmapool,proc,sys,dev,tmp,home/rdmapool,opt/bin}
	mkdir -p "$ROOT$MULTIARCH_LIB" "$ROOT/lib/modules/rdmapool"
	# merged /usr like Debian, so library paths from ldd work either way
	ln -s usr/lib "$ROOT/lib"
	ln -s usr/lib64 "$ROOT/lib64"
}

# add_shell_and_busybox: dash is /bin/sh; busybox provides the other commands
# (/init links its applets into /bin at boot). Debian's busybox-static shell runs
# its own applets before anything on PATH (its `ip` cannot make veth pairs); dash
# follows PATH, where /usr/sbin and /usr/bin come before /bin.
add_shell_and_busybox() {
	local dash bb
	dash=$(command -v dash) || die "dash not found (apt-get install dash)"
	bb=$(command -v busybox) || die "busybox not found (apt-get install busybox-static)"
	cp -L "$dash" "$ROOT/bin/dash"
	cp -L "$bb" "$ROOT/bin/busybox"
	ln -s dash "$ROOT/bin/sh"
	ELF_FILES+=("$dash" "$bb")
}

# add_tools: host tools keep their (resolved, /usr/...) paths.
add_tools() {
	local t p paths=()
	for t in "${REQUIRED_TOOLS[@]}"; do
		p=$(command -v "$t") || die "$t not found; run vm/deps.sh (as root) to install the VM's packages"
		paths+=("$p")
	done
	for t in "${OPTIONAL_TOOLS[@]}"; do
		if p=$(command -v "$t"); then paths+=("$p"); fi
	done
	mapfile -t paths < <(realpath -e "${paths[@]}")
	HOST_FILES+=("${paths[@]}")
	ELF_FILES+=("${paths[@]}")
}

add_rdma_userspace() {
	local l p provider
	for l in "${DLOPEN_LIBS[@]}"; do
		p=$MULTIARCH_LIB/$l
		if [ -e "$p" ]; then
			HOST_FILES+=("$p")
			ELF_FILES+=("$p")
		else
			case $l in *.so) ;; *) die "missing $p (run vm/deps.sh as root)" ;; esac
		fi
	done
	provider=$(compgen -G "$MULTIARCH_LIB/libibverbs/librxe-rdmav*.so" | head -n 1) ||
		die "no rxe provider in $MULTIARCH_LIB/libibverbs (apt-get install ibverbs-providers)"
	[ -f /etc/libibverbs.d/rxe.driver ] || die "no /etc/libibverbs.d/rxe.driver (apt-get install ibverbs-providers)"
	HOST_FILES+=("$provider" /etc/libibverbs.d/rxe.driver)
	ELF_FILES+=("$provider")
}

# add_modules KROOT KVER: resolves MODULES plus dependencies with modprobe against the
# extracted kernel, copies them decompressed and writes the load order for /init.
add_modules() {
	local kroot=$1 kver=$2 m path name order=$ROOT/etc/rdmapool/modules
	: >"$order"
	for m in "${MODULES[@]}"; do
		modprobe -d "$kroot" -S "$kver" --show-depends "$m" ||
			die "kernel $kver has no module $m (see $kroot/lib/modules/$kver)"
	done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' >"$WORK/modpaths"
	while read -r path; do
		name=$(basename "$path")
		name=${name%%.ko*}
		case $path in
		*.ko) cp "$path" "$ROOT/lib/modules/rdmapool/$name.ko" ;;
		*.ko.xz) xz -dc "$path" >"$ROOT/lib/modules/rdmapool/$name.ko" ;;
		*.ko.zst) zstd -qdc "$path" >"$ROOT/lib/modules/rdmapool/$name.ko" ;;
		*.ko.gz) gzip -dc "$path" >"$ROOT/lib/modules/rdmapool/$name.ko" ;;
		*) die "unexpected module file $path" ;;
		esac
		printf '%s\n' "$name" >>"$order"
	done <"$WORK/modpaths"
	[ -s "$order" ] || die "no kernel modules resolved from $kroot"
}

# add_bin_dirs copies each --bin DIR into /opt/bin and notes its ELF files.
add_bin_dirs() {
	local d f
	for d in "${BIN_DIRS[@]}"; do
		cp -RL --preserve=mode,timestamps "$d/." "$ROOT/opt/bin/" || die "cannot copy --bin $d"
	done
	while IFS= read -r -d '' f; do
		if is_elf "$f"; then ELF_FILES+=("$f"); fi
	done < <(find "$ROOT/opt/bin" -type f -print0)
}

# merged_usr_paths: on a merged-/usr host /lib/x and /usr/lib/x are one file; name
# it once (the VM's /lib and /lib64 are symlinks into /usr as well).
merged_usr_paths() {
	if [ "$(realpath /lib)" = /usr/lib ] && [ "$(realpath /lib64)" = /usr/lib64 ]; then
		sed -e 's|^/lib/|/usr/lib/|' -e 's|^/lib64/|/usr/lib64/|'
	else
		cat
	fi
}

# add_library_closure: one ldd over every ELF file gives the (transitive) libraries.
# Static executables and foreign ELF files report "not a dynamic executable".
add_library_closure() {
	local out missing
	out=$(LC_ALL=C ldd "${ELF_FILES[@]}" 2>&1) || true
	missing=$(awk '/:$/ { f = $0 } /=> not found/ { print f " " $1 }' <<<"$out")
	[ -z "$missing" ] || die "libraries missing on this host (install them, or link statically): $missing"
	mapfile -t -O "${#HOST_FILES[@]}" HOST_FILES < <(sed -n \
		-e 's/.*=> \(\/[^ ]*\) (0x.*/\1/p' \
		-e 's/^[[:space:]]*\(\/[^ ]*\) (0x.*/\1/p' <<<"$out" | sort -u)
	mapfile -t HOST_FILES < <(printf '%s\n' "${HOST_FILES[@]}" | merged_usr_paths | sort -u)
	cp -L --parents -t "$ROOT" "${HOST_FILES[@]}" || die "copying host files failed"
}

add_etc() {
	printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$ROOT/etc/hosts"
	printf 'root:x:0:0:root:/home/rdmapool:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$ROOT/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$ROOT/etc/group"
	sh_quote "${CMD[@]}" >"$ROOT/etc/rdmapool/cmd"
	local e
	: >"$ROOT/etc/rdmapool/env"
	for e in "${ENV_VARS[@]}"; do
		printf 'export %s=%s\n' "${e%%=*}" "$(sh_quote "${e#*=}")" >>"$ROOT/etc/rdmapool/env"
	done
	cp "$VM_DIR/init.sh" "$ROOT/init"
	chmod 755 "$ROOT/init"
}

build_initrd() {
	local kroot=$1 kver=$2 t0
	t0=$(now_ms)
	make_layout
	add_shell_and_busybox
	add_tools
	add_rdma_userspace
	add_bin_dirs
	add_library_closure
	add_modules "$kroot" "$kver"
	add_etc
	(cd "$ROOT" && find . -mindepth 1 | LC_ALL=C sort | cpio --quiet -o -H newc -R 0:0) |
		gzip -1 >"$WORK/initrd.gz" || die "building the initramfs failed"
	log "initramfs $(du -h "$WORK/initrd.gz" | cut -f1) built in $(elapsed "$t0") s"
}

# ---- boot -------------------------------------------------------------------

# watch_kvm QEMU_PIDFILE: runs beside a boot under KVM. The moment qemu
# prints a KVM error (after which it sits idle, not exiting), or when the
# guest is not up three probe timeouts after the start (a KVM that passed its
# probe and then hangs), it kills qemu and leaves the reason in
# $WORK/kvm-failed.
watch_kvm() {
	local pid='' err up=0 deadline=$(($(now_ms) + 3000 * KVM_PROBE_TIMEOUT))
	while :; do
		[ -n "$pid" ] || pid=$(cat "$1" 2>/dev/null) || true
		err=$(kvm_first_error "$WORK/qemu.err" "$WORK/console.log")
		if [ "$up" = 0 ] && grep -qE '^rdmapool-vm: (ready after|setup failed)' "$WORK/console.log"; then
			up=1
		fi
		if [ -z "$err" ] && [ "$up" = 0 ] && [ "$(now_ms)" -gt "$deadline" ]; then
			err="the guest was not up $((3 * KVM_PROBE_TIMEOUT)) s after the start"
		fi
		if [ -n "$err" ]; then
			printf '%s\n' "$err" >"$WORK/kvm-failed"
			[ -z "$pid" ] || kill "$pid" 2>/dev/null
			return
		fi
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then return; fi
		if [ "$up" = 1 ]; then sleep 1; else sleep 0.2; fi
	done
}

# run_qemu KERNEL: boots the VM under $ACCEL, streaming its console to stdout
# and to console.log.
run_qemu() {
	local kernel=$1 rc watcher=
	qemu_base_args "$kernel"
	rm -f "$WORK/qemu.pid" "$WORK/kvm-failed"
	: >"$WORK/qemu.err"
	printf 'rdmapool-vm: accelerator: %s (%s)\n' "$ACCEL" "$ACCEL_WHY" >>"$WORK/console.log"
	if [ "$ACCEL" = kvm ]; then
		watch_kvm "$WORK/qemu.pid" &
		watcher=$!
	fi
	set +e
	# --foreground: timeout stays in this process group, so that a Ctrl-C
	# (or a CI job's signal to the group) reaches qemu too.
	# qemu's own messages go to qemu.err (and the terminal), so that the
	# console log's last change is the guest's last output.
	timeout --foreground -k 10 "$TIMEOUT" "$QEMU" "${QEMU_ARGS[@]}" -accel "$ACCEL" -pidfile "$WORK/qemu.pid" \
		-append "console=ttyS0 quiet panic=-1 rdmapool.accel=$ACCEL${APPEND:+ $APPEND}" </dev/null \
		2> >(tee -a "$WORK/qemu.err" >&2) | tee -a "$WORK/console.log"
	rc=${PIPESTATUS[0]}
	set -e
	if [ -n "$watcher" ]; then
		kill "$watcher" 2>/dev/null || true
		wait "$watcher" 2>/dev/null || true
	fi
	return "$rc"
}

# pick_kernel KROOT KVER: the uncompressed vmlinux (fetch.sh extracts it; it boots
# via PVH and saves a few seconds of decompression under emulation), else vmlinuz.
pick_kernel() {
	if [ -f "$1/boot/vmlinux-$2" ]; then
		printf '%s\n' "$1/boot/vmlinux-$2"
	else
		printf '%s\n' "$1/boot/vmlinuz-$2"
	fi
}

# console_text prints the console log without carriage returns.
console_text() { tr -d '\r' <"$WORK/console.log"; }

# timed_out: says which of three things a timeout was: a VM that never
# booted, a command that hung (named, with the last test it started), or a
# run still making progress when its time ran out. Silence for
# RDMAPOOL_VM_HANG_AFTER seconds before the kill (default a tenth of the
# timeout, at least 30) counts as hung.
timed_out() {
	local idle hang pkg test
	idle=$(($(date +%s) - $(stat -c %Y "$WORK/console.log")))
	hang=${RDMAPOOL_VM_HANG_AFTER:-$((TIMEOUT / 10 > 30 ? TIMEOUT / 10 : 30))}
	if ! console_text | grep -q '^rdmapool-vm: ready after'; then
		if [ "$idle" -ge "$hang" ]; then
			log "error: the VM never booted ($ACCEL): no ready line within $TIMEOUT s, and the console was silent for the last $idle s (last line: '$(console_text | grep -v '^$' | tail -n 1)'); see the output above"
		else
			log "error: the VM was still booting when its $TIMEOUT s ran out ($ACCEL; the console last printed $idle s before); raise --timeout or RDMAPOOL_VM_TIMEOUT"
		fi
		return
	fi
	pkg=$(console_text | sed -n 's/^=== rdmapool-vm: RUN //p' | tail -n 1)
	test=$(console_text | sed -n 's/^ *=== RUN  *\([^ ]*\).*/\1/p' | tail -n 1)
	if [ "$idle" -ge "$hang" ]; then
		log "error: the command hung: '${CMD[*]}' printed nothing for the last $idle s of its $TIMEOUT s${pkg:+; last package started: $pkg}${test:+; last test started: $test}"
	else
		log "error: a slow run: '${CMD[*]}' was still printing (last output $idle s before the kill) when its $TIMEOUT s ran out ($ACCEL)${pkg:+; in $pkg}${test:+, at $test}; raise --timeout or RDMAPOOL_VM_TIMEOUT"
	fi
}

# report QEMU_STATUS ELAPSED: turns the console log into this script's exit status.
report() {
	local qrc=$1 took=$2 code
	if [ -n "$LOG_COPY" ]; then
		local logs=("$WORK/console.log" "$WORK/qemu.err")
		if [ -f "$WORK/kvm-boot.log" ]; then logs=("$WORK/kvm-boot.log" "${logs[@]}"); fi
		cat "${logs[@]}" >"$LOG_COPY"
	fi
	if [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; then
		timed_out
		return 124
	fi
	code=$(console_text | sed -n "s/^$MARKER=\([0-9][0-9]*\)\$/\1/p" | tail -n 1)
	if [ -z "$code" ]; then
		log "error: the VM ended without printing $MARKER (qemu status $qrc, $ACCEL): kernel panic, crash of /init or qemu failure; see the console output above"
		return 125
	fi
	if console_text | grep -q '^rdmapool-vm: setup failed'; then
		log "error: VM setup failed (see 'setup failed' above); the command did not run"
	else
		log "command exited with status $code; VM run took $took s ($ACCEL)"
	fi
	return "$code"
}

main() {
	parse_args "$@"
	"$VM_DIR/deps.sh"
	local kroot kver kernel t0 qrc
	kroot=$("$VM_DIR/fetch.sh")
	kver=$(cat "$kroot/kernel-version")
	kernel=$(pick_kernel "$kroot" "$kver")
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/rdmapool-vm.XXXXXX")
	ROOT=$WORK/tree
	if [ "$KEEP" = 1 ]; then
		trap 'log "kept $WORK"' EXIT
	else
		trap 'rm -rf "$WORK"' EXIT
	fi
	check_accel_mode
	# Built before the accelerator is chosen: the KVM probe boots it. The
	# guest hears its accelerator from the kernel command line.
	build_initrd "$kroot" "$kver"
	t0=$(now_ms)
	choose_accel "$kernel"
	log "accelerator: $ACCEL ($ACCEL_WHY)"
	log "booting kernel $kver (timeout $TIMEOUT s, $MEM MB, $SMP cores, $ACCEL)"
	: >"$WORK/console.log"
	qrc=0
	run_qemu "$kernel" || qrc=$?
	if [ -f "$WORK/kvm-failed" ]; then
		local err
		err=$(cat "$WORK/kvm-failed")
		forget_kvm "$kernel" "$err"
		[ "$ACCEL_MODE" = auto ] || die "RDMAPOOL_VM_ACCEL=kvm, but KVM stopped during the boot: $err"
		ACCEL=tcg ACCEL_WHY="KVM stopped during the boot: $err"
		log "KVM stopped during the boot ($err); booting again under TCG"
		cat "$WORK/console.log" "$WORK/qemu.err" >"$WORK/kvm-boot.log"
		: >"$WORK/console.log"
		qrc=0
		run_qemu "$kernel" || qrc=$?
	fi
	report "$qrc" "$(elapsed "$t0")"
}

main "$@"
