#!/usr/bin/env bash
# Builds the test binary of every Go package with tests (CGO_ENABLED=0) and runs them
# all inside the soft-RoCE VM (vm/run.sh); exits non-zero if any failed to build or pass.
#
# usage: vm/test.sh [--run REGEX] [--pkg PATTERN]... [--extra DIR]... [--cmd 'SHELL']
#                   [--testflags 'FLAGS'] [--test-timeout DUR] [--timeout SECONDS]
#                   [--env NAME=VALUE]...
#
#   --run REGEX        passed to every test binary as -test.run      (env VM_RUN)
#   --pkg PATTERN      go packages to build, default ./...            (env VM_PKGS, space-separated)
#   --extra DIR        also copy DIR to /opt/bin in the VM; repeatable (env VM_EXTRA, space-separated)
#   --cmd 'SHELL'      run this with sh -c after the tests, in /opt/bin (env VM_CMD)
#   --testflags FLAGS  more flags for every test binary, e.g. '-test.bench=. -test.benchmem'
#                      (env VM_TESTFLAGS)
#   --test-timeout D   -test.timeout of each binary, default 10m      (env VM_TEST_TIMEOUT)
#   --timeout S        whole VM run, seconds (env VM_TIMEOUT or RDMAPOOL_VM_TIMEOUT, default 1200)
#   --env NAME=VALUE   export in the VM, e.g. RDMAPOOL_VM_WIRE_ROUTES=1; repeatable
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

RUN=${VM_RUN:-}
read -r -a PKGS <<<"${VM_PKGS:-./...}"
read -r -a EXTRA <<<"${VM_EXTRA:-}"
CMD=${VM_CMD:-}
TESTFLAGS=${VM_TESTFLAGS:-}
TEST_TIMEOUT=${VM_TEST_TIMEOUT:-10m}
TIMEOUT=${VM_TIMEOUT:-${RDMAPOOL_VM_TIMEOUT:-1200}}
ENV_ARGS=()
PKGS_FROM_FLAGS=0

usage() {
	sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
	exit 2
}

parse_args() {
	while [ $# -gt 0 ]; do
		case $1 in
		--run) RUN=${2?--run needs a regex}; shift 2 ;;
		--pkg)
			[ "$PKGS_FROM_FLAGS" = 1 ] || PKGS=()
			PKGS_FROM_FLAGS=1
			PKGS+=("${2:?--pkg needs a pattern}"); shift 2 ;;
		--extra) EXTRA+=("${2:?--extra needs a directory}"); shift 2 ;;
		--cmd) CMD=${2?--cmd needs a command}; shift 2 ;;
		--testflags) TESTFLAGS=${2?--testflags needs flags}; shift 2 ;;
		--test-timeout) TEST_TIMEOUT=${2:?--test-timeout needs a duration}; shift 2 ;;
		--timeout) TIMEOUT=${2:?--timeout needs seconds}; shift 2 ;;
		--env) ENV_ARGS+=(--env "${2:?--env needs NAME=VALUE}"); shift 2 ;;
		-h | --help) usage ;;
		*) log "unknown argument: $1"; usage ;;
		esac
	done
	local d
	for d in "${EXTRA[@]}"; do [ -d "$d" ] || die "--extra/VM_EXTRA $d: not a directory"; done
}

BUILD_FAILED=()
BUILT=0

# build_tests BIN: writes BIN/tests/<reldir>/<name>.test, next to a copy of the package's
# files and testdata/, and the list of binaries BIN/tests.list.
build_tests() {
	local bin=$1 modroot ip dir rel out name list
	modroot=$(go list -m -f '{{.Dir}}') || die "go list -m failed (run from the module)"
	# Listed first, so that its failure, or a pattern naming no package
	# (VM_PKGS=./qpp), stops the run instead of leaving nothing to run.
	list=$(go list -e -f '{{if .Error}}!{{.Error}}{{else if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}|{{.Dir}}{{end}}' "${PKGS[@]}") ||
		die "go list ${PKGS[*]} failed"
	: >"$bin/tests.list"
	while IFS='|' read -r ip dir; do
		[ -n "$ip" ] || continue
		case $ip in
		!*"build constraints exclude all Go files"*) continue ;; # not for this build
		!*) die "go list: ${ip#!}" ;;
		esac
		rel=${dir#"$modroot"}
		rel=${rel#/}
		rel=${rel:-.}
		name=${ip##*/}
		out=$bin/tests/$rel
		mkdir -p "$out"
		# the package's own files and testdata/, as `go test` would see them
		# from its cwd; before the build, so that a stale <name>.test among
		# them cannot replace the binary built now
		find "$dir" -maxdepth 1 -type f -exec cp -L -t "$out" {} +
		if [ -d "$dir/testdata" ]; then cp -RL "$dir/testdata" "$out/"; fi
		log "building $ip"
		if ! CGO_ENABLED=0 go test -c -o "$out/$name.test" "$ip"; then
			# its copied files stay: $out may hold another package's binary
			BUILD_FAILED+=("$ip")
			continue
		fi
		printf '%s %s %s\n' "$rel" "$name.test" "$ip" >>"$bin/tests.list"
		BUILT=$((BUILT + 1))
	done <<<"$list"
	cp "$VM_DIR/guest-tests.sh" "$bin/rdmapool-vm-tests.sh"
}

main() {
	parse_args "$@"
	command -v go >/dev/null || die "go not found on PATH"
	cd "$VM_DIR/.."
	local t0 build_s rc=0 vm_args=() d total passed failed
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/rdmapool-vm-test.XXXXXX")
	trap 'rm -rf "$WORK"' EXIT
	mkdir -p "$WORK/bin"

	t0=$(now_ms)
	build_tests "$WORK/bin"
	build_s=$(elapsed "$t0")
	log "built $BUILT test binaries in $build_s s${BUILD_FAILED[*]:+; build FAILED: ${BUILD_FAILED[*]}}"
	if [ "$BUILT" -eq 0 ] && [ -z "$CMD" ]; then
		[ "${#BUILD_FAILED[@]}" -eq 0 ] || die "no test binary built"
		log "no Go package has tests and no --cmd/VM_CMD was given; nothing to run in the VM"
		return 0
	fi

	vm_args=(--bin "$WORK/bin" --timeout "$TIMEOUT" --log "$WORK/console.log" "${ENV_ARGS[@]}")
	for d in "${EXTRA[@]}"; do vm_args+=(--bin "$d"); done
	t0=$(now_ms)
	"$VM_DIR/run.sh" "${vm_args[@]}" -- sh ./rdmapool-vm-tests.sh "$RUN" "$TEST_TIMEOUT" "$TESTFLAGS" "$CMD" || rc=$?
	log "vm/run.sh (initramfs, boot, tests, power-off) took $(elapsed "$t0") s; building took $build_s s"

	# Count from the per-item result lines, so a VM that died midway still gives
	# an honest count: whatever did not report PASS failed.
	: >"$WORK/console.txt"
	if [ -f "$WORK/console.log" ]; then tr -d '\r' <"$WORK/console.log" >"$WORK/console.txt"; fi
	total=$((BUILT + ${#BUILD_FAILED[@]}))
	[ -z "$CMD" ] || total=$((total + 1))
	passed=$(grep -c '^--- rdmapool-vm: PASS ' "$WORK/console.txt" || true)
	failed=$((total - passed))
	if ! grep -q '^rdmapool-vm-tests: ' "$WORK/console.txt"; then
		log "error: the VM run did not finish (status $rc); last started: $(sed -n 's/^=== rdmapool-vm: RUN //p' "$WORK/console.txt" | tail -n 1)"
		[ "$rc" -ne 0 ] || rc=1
	fi
	[ "${#BUILD_FAILED[@]}" -eq 0 ] || { log "failed to build: ${BUILD_FAILED[*]}"; rc=1; }
	echo "packages: $passed passed, $failed failed"
	return "$rc"
}

main "$@"
