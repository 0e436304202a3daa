#!/usr/bin/env bash
# Compares the transport built at several git revisions, in one soft-RoCE
# VM boot: each revision's bench test binary runs our 64-byte RDMA round
# trip (BenchmarkConnRoundTrip, ITERS round trips) and the round trip beside
# idle connections (BenchmarkScaleIdle at IDLE idle connections, each
# revision's own echo process at the other end), the order of the
# revisions rotating from round to round. It prints, per benchmark, each
# revision's p50, p99 and CPU per round trip against the first revision's
# in the same round (the median of those ratios, and each round's): what a
# change did to the round trip and the idle cost, as make bench-rxe
# measures them, taken back to back. The emulation's speed drifts from
# minute to minute, so only ratios within a round are compared. As in
# vm/bench.sh, the VM boots with tsc=reliable and times on the TSC.
#
# Each revision is built from `git archive REV`; `.` is the working tree.
# The log goes to OUT (default out/): bench-rxe-revs.log.
#
# usage: vm/bench-rxe-revs.sh [--out DIR] [--rounds N] [--idle-rounds N] [--iters N] [--idle LIST] REV REV...
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib.sh source-path=SCRIPTDIR
. vm/lib.sh

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0" >&2; exit 2; }
out=out rounds=7 idle_rounds=3 iters=20000 idle=0,400
while [ $# -gt 0 ]; do
	case "$1" in
	--out) out=${2:?}; shift 2 ;;
	--rounds) rounds=${2:?}; shift 2 ;;
	--idle-rounds) idle_rounds=${2:?}; shift 2 ;;
	--iters) iters=${2:?}; shift 2 ;;
	--idle) idle=${2:?}; shift 2 ;;
	-*) usage ;;
	*) break ;;
	esac
done
[ $# -ge 2 ] || { echo "bench-rxe-revs: name at least two revisions" >&2; usage; }
for n in "$rounds" "$iters"; do
	[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "bench-rxe-revs: --rounds and --iters take a positive number, got '$n'" >&2; exit 2; }
done
[[ $idle_rounds =~ ^[0-9]+$ ]] || { echo "bench-rxe-revs: --idle-rounds takes a number, got '$idle_rounds'" >&2; exit 2; }
[[ $idle =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "bench-rxe-revs: --idle is a comma-separated list of idle counts, got '$idle'" >&2; exit 2; }

mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=$tmp/bin
mkdir -p "$bin"
names=()
i=0
for rev in "$@"; do
	i=$((i + 1))
	name=$(rev_name "$rev")
	src=$(rev_tree "$rev" "$tmp/src$i")
	(cd "$src" && CGO_ENABLED=0 go test -c -o "$bin/bench-$i.test" ./bench)
	names+=("$name")
	echo "revision $i: $rev ($name)"
done
cat >"$bin/run-bench-rxe-revs.sh" <<SCRIPT
set -u
echo tsc >/sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null
echo "clocksource: \$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
n=$#
# one ROUND BENCH ARGS...: every revision once, the order rotating by round;
# each result line is tagged with the revision and the round.
one() {
	r=\$1; shift
	k=0
	while [ \$k -lt \$n ]; do
		i=\$(( (k + r - 1) % n + 1 ))
		./bench-\$i.test -test.run '^\$' "\$@" -test.count 1 | sed -n "s/^\\(Benchmark[^ ]*\\)/RESULT \$i \$r \\1/p"
		k=\$((k + 1))
	done
}
for r in \$(seq $rounds); do
	one \$r -test.bench 'ConnRoundTrip/transport=rdma/size=64\$' -test.benchtime ${iters}x
done
export RDMAPOOL_SCALE_IDLE=$idle
for r in \$(seq $idle_rounds); do
	one \$r -test.bench 'ScaleIdle' -test.benchtime 2000x
done
echo "=== end"
SCRIPT

log="$out/bench-rxe-revs.log"
RDMAPOOL_VM_MEM=${RDMAPOOL_VM_MEM:-4096} vm/run.sh --bin "$bin" --log "$log" --timeout 2400 --append tsc=reliable -- sh run-bench-rxe-revs.sh
echo
echo "$(log_accel "$log"), $rounds round-trip rounds, $idle_rounds idle rounds; each revision against revision 1 in the same round: median of the rounds' ratios (each round's)"
echo
printf '| benchmark | revision | p50 | p99 | CPU per round trip |\n| --- | --- | --- | --- | --- |\n'
# RESULT REV ROUND NAME N NS/OP ... VALUE UNIT ...
tr -d '\r' <"$log" | awk -v n=${#names[@]} -v names="${names[*]}" '
function med(a, c,   i, j, t) {
	for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return c % 2 ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2
}
function cell(v, k, unit,   c, r, x, all, a) {
	c = 0; all = ""
	for (r in rounds) {
		if (val[1, k, r, unit] == "" || val[v, k, r, unit] == "" || val[1, k, r, unit] + 0 == 0) continue
		x = val[v, k, r, unit] / val[1, k, r, unit]; a[++c] = x; all = all sprintf("%s%.2f", c > 1 ? " " : "", x)
	}
	return c ? sprintf("%.2f (%s)", med(a, c), all) : "-"
}
BEGIN { split(names, nm, " ") }
$1 == "RESULT" {
	k = $4; sub(/-[0-9]+$/, "", k); rounds[$3] = 1
	if (!(k in seen)) { seen[k] = 1; order[++m] = k }
	for (f = 6; f < NF; f++) if ($(f + 1) ~ /^(p50-µs|p99-µs|cpu-µs\/op)$/) val[$2, k, $3, $(f + 1)] = $f
}
END {
	for (o = 1; o <= m; o++) for (v = 2; v <= n; v++)
		printf "| %s | %s / %s | %s | %s | %s |\n", order[o], nm[v], nm[1], cell(v, order[o], "p50-µs"), cell(v, order[o], "p99-µs"), cell(v, order[o], "cpu-µs/op")
}'
