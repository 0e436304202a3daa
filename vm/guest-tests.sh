#!/bin/sh
# Runs inside the VM (vm/test.sh copies it to /opt/bin/rdmapool-vm-tests.sh).
# usage: sh rdmapool-vm-tests.sh RUN_REGEX TEST_TIMEOUT TEST_FLAGS EXTRA_CMD
#
# Runs every test binary listed in tests.list ("RELDIR BINARY IMPORTPATH" per line)
# from its own directory (so relative testdata/ works), continues after failures,
# then runs EXTRA_CMD (if any) with sh -c, prints one result line per item and a
# summary, and exits 1 if anything failed.

run=$1
timeout=$2
flags=$3
cmd=$4
passed=0
failed=0
failed_items=

now() { cut -d' ' -f1 /proc/uptime; }

since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# result NAME STATUS START
result() {
	if [ "$2" -eq 0 ]; then
		passed=$((passed + 1))
		echo "--- rdmapool-vm: PASS $1 ($(since "$3")s)"
	else
		failed=$((failed + 1))
		failed_items="$failed_items $1"
		echo "--- rdmapool-vm: FAIL $1 (status $2, $(since "$3")s)"
	fi
}

# run_test RELDIR BINARY: one test binary, in its directory, stdin from /dev/null.
run_test() {
	dir=$1 bin=$2
	set -- -test.v -test.count=1 "-test.timeout=$timeout"
	if [ -n "$run" ]; then set -- "$@" "-test.run=$run"; fi
	# shellcheck disable=SC2086 # TEST_FLAGS is split into words on purpose
	(cd "tests/$dir" && exec "./$bin" "$@" $flags) </dev/null
}

while read -r reldir binary pkg; do
	[ -n "$binary" ] || continue
	echo "=== rdmapool-vm: RUN $pkg"
	start=$(now)
	run_test "$reldir" "$binary"
	result "$pkg" "$?" "$start"
done <tests.list

if [ -n "$cmd" ]; then
	echo "=== rdmapool-vm: RUN extra command: $cmd"
	start=$(now)
	sh -c "$cmd" </dev/null
	result "VM_CMD" "$?" "$start"
fi

[ -z "$failed_items" ] || echo "rdmapool-vm: failed:$failed_items"
echo "rdmapool-vm-tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
