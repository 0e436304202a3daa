#!/usr/bin/env bash
# Compares `rdmapool serve` built at several git revisions, in one soft-RoCE
# VM boot: valkey-benchmark --rdma drives each revision's server in turn,
# at -c 1, -c 10 -P 16 and -c 50, the order of the revisions rotating from
# round to round. It prints, per case and test, each revision's requests/s
# and p50 against the first revision's in the same round (the median of
# those ratios, and the rounds it was at least as good): what a change did
# to the server as valkey's own benchmark sees it. The emulation's speed
# drifts from minute to minute, so only ratios within a round are compared.
#
# valkey-benchmark comes from DIR (9.0 or later, built with RDMA:
# vm/valkey-build.sh SRC). Each revision is built from `git archive REV`;
# `.` is the working tree. The log goes to OUT (default out/):
# bench-serve-revs.log.
#
# usage: vm/bench-serve-revs.sh --valkey DIR [--out DIR] [--rounds N] [--tests LIST] REV REV...
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib.sh source-path=SCRIPTDIR
. vm/lib.sh

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0" >&2; exit 2; }
valkey="" out=out rounds=5 tests=set,get
while [ $# -gt 0 ]; do
	case "$1" in
	--valkey) valkey=${2:?}; shift 2 ;;
	--out) out=${2:?}; shift 2 ;;
	--rounds) rounds=${2:?}; shift 2 ;;
	--tests) tests=${2:?}; shift 2 ;;
	-*) usage ;;
	*) break ;;
	esac
done
[ $# -ge 2 ] || { echo "bench-serve-revs: name at least two revisions" >&2; usage; }
[ -n "$valkey" ] || { echo "bench-serve-revs: --valkey DIR is required (valkey-benchmark with RDMA)" >&2; usage; }
[ -x "$valkey/valkey-benchmark" ] || { echo "bench-serve-revs: $valkey/valkey-benchmark: no such executable" >&2; exit 2; }
grep -q -- '--rdma' <<<"$("$valkey/valkey-benchmark" --help 2>&1)" ||
	{ echo "bench-serve-revs: $valkey/valkey-benchmark has no --rdma (valkey 9.0 and later have it; vm/valkey-build.sh)" >&2; exit 2; }
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "bench-serve-revs: --rounds must be a positive number" >&2; exit 2; }
[[ $tests =~ ^[a-z_,]+$ ]] || { echo "bench-serve-revs: --tests is a comma-separated list of test names" >&2; exit 2; }

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
	(cd "$src" && CGO_ENABLED=0 go build -o "$bin/rdmapool-$i" ./cmd/rdmapool)
	names+=("$name")
	echo "revision $i: $rev ($name)"
done
cp "$valkey/valkey-benchmark" "$bin/"
cat >"$bin/run-bench-serve-revs.sh" <<SCRIPT
set -u
addr=\${RDMAPOOL_TEST_ADDR:-10.99.0.1}
n=$#
i=1
while [ \$i -le \$n ]; do
	port=\$((6390 + i))
	./rdmapool-\$i serve --bind \$addr --port \$port --rdma-bind \$addr --rdma-port \$port >/tmp/serve\$i.log 2>&1 &
	w=0
	until grep -q 'listening on rdma' /tmp/serve\$i.log 2>/dev/null; do
		w=\$((w + 1)); [ \$w -lt 300 ] || { echo "revision \$i did not listen on RDMA:"; cat /tmp/serve\$i.log; exit 1; }
		sleep 0.1
	done
	i=\$((i + 1))
done
for r in \$(seq $rounds); do
	for c in c1 c10-P16 c50; do
		case \$c in
		c1) args="-c 1 -n 10000" ;;
		c10-P16) args="-c 10 -P 16 -n 100000" ;;
		c50) args="-c 50 -n 50000" ;;
		esac
		k=0
		while [ \$k -lt \$n ]; do
			i=\$(( (k + r - 1) % n + 1 ))
			./valkey-benchmark -h \$addr -p \$((6390 + i)) --rdma \$args -t $tests --csv 2>/dev/null |
				sed -n "s/^\"\\([A-Z_]*\\)\",\"\\([0-9.]*\\)\",\"[0-9.]*\",\"[0-9.]*\",\"\\([0-9.]*\\)\".*/RESULT \$i \$c \$r \\1 \\2 \\3/p"
			k=\$((k + 1))
		done
	done
done
SCRIPT

log="$out/bench-serve-revs.log"
vm/run.sh --bin "$bin" --log "$log" --timeout 2400 -- sh run-bench-serve-revs.sh
echo
echo "$(log_accel "$log"), $rounds rounds; each revision against revision 1 in the same round: requests/s and p50, median of the rounds (rounds at least as good)"
echo
printf '| case | test |'
for ((j = 2; j <= ${#names[@]}; j++)); do printf ' %s req/s | p50 |' "${names[j - 1]}"; done
echo
printf '| --- | --- |'
for ((j = 2; j <= ${#names[@]}; j++)); do printf ' --- | --- |'; done
echo
# RESULT REV CASE ROUND TEST RPS P50
tr -d '\r' <"$log" | awk -v n=${#names[@]} '
function med(a, c,   i, j, t) {
	for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return c % 2 ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2
}
$1 == "RESULT" { k = $3 SUBSEP $5; rps[$2, k, $4] = $6; p50[$2, k, $4] = $7; rounds[$4] = 1
	if (!(k in seen)) { seen[k] = 1; order[++m] = k } }
END {
	for (o = 1; o <= m; o++) {
		k = order[o]; split(k, ct, SUBSEP); line = "| " ct[1] " | " ct[2] " |"
		for (v = 2; v <= n; v++) {
			c = 0; rw = 0; pw = 0; delete rr; delete pr
			for (r in rounds) {
				if (rps[1, k, r] == "" || rps[v, k, r] == "" || rps[1, k, r] + 0 == 0 || p50[1, k, r] + 0 == 0) continue
				c++; rr[c] = rps[v, k, r] / rps[1, k, r]; pr[c] = p50[v, k, r] / p50[1, k, r]
				if (rps[v, k, r] + 0 >= rps[1, k, r] + 0) rw++
				if (p50[v, k, r] + 0 <= p50[1, k, r] + 0) pw++
			}
			if (c) line = line sprintf(" %.2f (%d/%d) | %.2f (%d/%d) |", med(rr, c), rw, c, med(pr, c), pw, c)
			else line = line " - | - |"
		}
		print line
	}
}'
