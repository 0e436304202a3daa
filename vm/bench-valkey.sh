#!/usr/bin/env bash
# Runs `rdmapool bench --transport rdma` beside valkey-benchmark --rdma against
# one real valkey-server with RDMA, and valkey-benchmark --rdma against
# `rdmapool serve` beside it, in one soft-RoCE VM boot. Each round runs
# each case (one client; 10 clients with 16-deep pipelines; 50 clients) with both tools
# back to back, valkey-benchmark first in odd rounds and ours first in even
# ones, the same tests and request counts, each on one thread
# (valkey-benchmark's default; ours with --threads 1: the server shares the
# VM's two cores). It prints each tool's medians over the rounds and our
# ratios to valkey-benchmark within each round (their median, and the rounds
# ours won): the emulation's speed drifts from minute to minute, so tools
# are compared within a round. Results go to OUT (default out/):
# bench-valkey.json, bench-valkey.md and the console log.
#
# The valkey binaries are not built here: give a directory holding
# valkey-server and valkey-benchmark built with RDMA (vm/valkey-build.sh
# SRC): valkey-benchmark has --rdma from 9.0 on; valkey-server serves RDMA
# built in (`make BUILD_RDMA=yes`) or through valkey-rdma.so in the same
# directory (`make BUILD_RDMA=module`), whichever the directory holds.
# They run in the VM as they are, so build them on a system like the VM's
# (Debian bookworm's libraries).
#
# usage: vm/bench-valkey.sh --valkey DIR [--out DIR] [--rounds N] [--tests LIST]
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib.sh source-path=SCRIPTDIR
. vm/lib.sh

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0" >&2; exit 2; }
valkey="" out=out rounds=7 tests=ping,set,get
while [ $# -gt 0 ]; do
	case "$1" in
	--valkey) valkey=${2:?}; shift 2 ;;
	--out) out=${2:?}; shift 2 ;;
	--rounds) rounds=${2:?}; shift 2 ;;
	--tests) tests=${2:?}; shift 2 ;;
	*) usage ;;
	esac
done
[ -n "$valkey" ] || { echo "bench-valkey: --valkey DIR is required (valkey-server and valkey-benchmark with RDMA)" >&2; usage; }
for b in valkey-server valkey-benchmark; do
	[ -x "$valkey/$b" ] || { echo "bench-valkey: $valkey/$b: no such executable" >&2; exit 2; }
done
grep -q -- '--rdma' <<<"$("$valkey/valkey-benchmark" --help 2>&1)" || # whole: no SIGPIPE under pipefail
	{ echo "bench-valkey: $valkey/valkey-benchmark has no --rdma (valkey 9.0 and later have it; vm/valkey-build.sh)" >&2; exit 2; }
mode=$(valkey_rdma_mode "$valkey") ||
	{ echo "bench-valkey: $valkey/valkey-server has no RDMA built in and there is no valkey-rdma.so beside it" >&2; exit 2; }
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "bench-valkey: --rounds must be a positive number" >&2; exit 2; }
[[ $tests =~ ^[a-z_,]+$ ]] || { echo "bench-valkey: --tests is a comma-separated list of test names" >&2; exit 2; }

mkdir -p "$out"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
CGO_ENABLED=0 go build -o "$bin/rdmapool" ./cmd/rdmapool
cp "$valkey/valkey-server" "$valkey/valkey-benchmark" "$bin/"
[ "$mode" = builtin ] || cp "$valkey/valkey-rdma.so" "$bin/"
cat >"$bin/run-bench-valkey.sh" <<SCRIPT
set -u
$(valkey_rdma_args_fn)
addr=\${RDMAPOOL_TEST_ADDR:-10.99.0.1}
./valkey-server --bind \$addr --port 6379 \$(rdma_args $mode ./valkey-rdma.so \$addr 6379) \
	--save '' --appendonly no --protected-mode no --logfile /tmp/valkey.log &
i=0
until grep -q 'Ready to accept connections rdma' /tmp/valkey.log 2>/dev/null; do
	i=\$((i + 1))
	[ \$i -lt 100 ] || { echo "valkey-server did not start over RDMA:"; cat /tmp/valkey.log; exit 1; }
	sleep 0.1
done
# rdmapool serve beside it, for valkey-benchmark to drive both servers.
./rdmapool serve --bind \$addr --port 6390 --rdma-bind \$addr --rdma-port 6390 >/tmp/serve.log 2>&1 &
i=0
until grep -q 'listening on rdma' /tmp/serve.log 2>/dev/null; do
	i=\$((i + 1))
	[ \$i -lt 100 ] || { echo "rdmapool serve did not start over RDMA:"; cat /tmp/serve.log; exit 1; }
	sleep 0.1
done
vb() {
	./valkey-benchmark -h \$addr -p 6379 --rdma "\$@" -t $tests --csv 2>/dev/null | sed -n "s/^\"/RESULT valkey-benchmark \$c \$r \"/p"
}
vbs() { # valkey-benchmark against rdmapool serve
	./valkey-benchmark -h \$addr -p 6390 --rdma "\$@" -t $tests --csv 2>/dev/null | sed -n "s/^\"/RESULT valkey-benchmark-serve \$c \$r \"/p"
}
ours() {
	./rdmapool bench -h \$addr -p 6379 --transport rdma --threads 1 "\$@" -t $tests --csv | sed -n "s/^\"/RESULT rdmapool \$c \$r \"/p"
}
one() { # one CASE ARGS...: both tools, valkey-benchmark first in odd rounds
	c=\$1; shift
	if [ \$((r % 2)) = 1 ]; then vb "\$@"; ours "\$@"; vbs "\$@"; else vbs "\$@"; ours "\$@"; vb "\$@"; fi
}
for r in \$(seq $rounds); do
	one c1 -c 1 -n 10000
	one c10-P16 -c 10 -P 16 -n 100000
	one c50 -c 50 -n 50000
done
SCRIPT

log="$out/bench-valkey.log"
vm/run.sh --bin "$bin" --log "$log" --timeout 1800 -- sh run-bench-valkey.sh
accel=$(log_accel "$log")

# RESULT TOOL CASE ROUND "TEST","rps","avg","min","p50","p95","p99","max" (ms);
# the header lines ("test",...) are dropped.
tr -d '\r' <"$log" | awk '$1 == "RESULT" && $5 !~ /^"test"/ {
	split($5, f, ","); for (i in f) gsub(/"/, "", f[i])
	print $2, $3, $4, f[1], f[2], f[5], f[7]
}' >"$bin/results"
[ -s "$bin/results" ] || { echo "bench-valkey: no results in $log" >&2; exit 1; }

# Per case and test: each tool's medians over the rounds (rps, p50, p99);
# then ours to valkey-benchmark's within each round, the two having run back
# to back: the median of those ratios and in how many rounds ours was at
# least as good (requests/s at least, p50 at most). A run's speed drifts
# with the emulation from minute to minute, so the ratio within a round is
# the comparison; the medians of each tool are there for scale.
pair() { # pair A B: A against B within each round, per case and test
	awk -v A="$1" -v B="$2" '
	function med(a, k, c,   i, j, t, v) {
		for (i = 1; i <= c; i++) v[i] = a[k, i]
		for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
		return c % 2 ? v[(c + 1) / 2] : (v[c / 2] + v[c / 2 + 1]) / 2
	}
	{ t = $1; ct = $2 SUBSEP $4; k = t SUBSEP ct; n[k]++
	  rps[k, n[k]] = $5; p50[k, n[k]] = $6; p99[k, n[k]] = $7
	  byRound[t, ct, $3, "rps"] = $5; byRound[t, ct, $3, "p50"] = $6; rounds[ct, $3] = 1
	  if (!(ct in seen)) { seen[ct] = 1; order[++m] = ct } }
	END {
		for (o = 1; o <= m; o++) {
			ct = order[o]; split(ct, cp, SUBSEP)
			vk = B SUBSEP ct; rk = A SUBSEP ct
			if (!n[vk] || !n[rk]) continue
			c = 0; rw = 0; pw = 0
			for (rc in rounds) {
				split(rc, x, SUBSEP)
				if (x[1] SUBSEP x[2] != ct) continue
				r = x[3]
				vr = byRound[B, ct, r, "rps"]; ourR = byRound[A, ct, r, "rps"]
				vp = byRound[B, ct, r, "p50"]; ourP = byRound[A, ct, r, "p50"]
				if (vr == "" || ourR == "" || vr + 0 == 0 || vp + 0 == 0) continue
				c++; rr["x", c] = ourR / vr; pr["x", c] = ourP / vp
				if (ourR + 0 >= vr + 0) rw++
				if (ourP + 0 <= vp + 0) pw++
			}
			if (!c) continue
			printf "%s %s %s %s %s %s %s %s %.2f %d %.2f %d %d\n", cp[1], cp[2],
				med(rps, vk, n[vk]), med(p50, vk, n[vk]), med(p99, vk, n[vk]),
				med(rps, rk, n[rk]), med(p50, rk, n[rk]), med(p99, rk, n[rk]),
				med(rr, "x", c), rw, med(pr, "x", c), pw, c
		}
	}' "$bin/results"
}
summary=$(pair rdmapool valkey-benchmark)
served=$(pair valkey-benchmark-serve valkey-benchmark)
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
version=$("$valkey/valkey-server" --version | head -1)

{
	printf '{\n  "date": "%s",\n  "machine": "soft-RoCE VM (qemu %s, 2 vCPUs), rxe0",\n  "accelerator": "%s",\n' "$date" "$accel" "$accel"
	printf '  "server": "%s",\n  "rounds": %s,\n  "results": [\n' "$version" "$rounds"
	awk '{printf "%s    {\"tool\": \"%s\", \"case\": \"%s\", \"round\": %s, \"test\": \"%s\", \"rps\": %s, \"p50_ms\": %s, \"p99_ms\": %s}", (NR > 1 ? ",\n" : ""), $1, $2, $3, $4, $5, $6, $7} END {print ""}' "$bin/results"
	printf '  ],\n  "summary": [\n'
	echo "$summary" | awk '{printf "%s    {\"case\": \"%s\", \"test\": \"%s\", \"valkey_benchmark\": {\"rps\": %s, \"p50_ms\": %s, \"p99_ms\": %s}, \"rdmapool\": {\"rps\": %s, \"p50_ms\": %s, \"p99_ms\": %s}, \"rps_ratio\": %s, \"rps_rounds_won\": %s, \"p50_ratio\": %s, \"p50_rounds_won\": %s, \"rounds\": %s}", (NR > 1 ? ",\n" : ""), $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13} END {print ""}'
	printf '  ]\n}\n'
} >"$out/bench-valkey.json"

{
	echo "# rdmapool bench --transport rdma beside valkey-benchmark --rdma ($date)"
	echo
	echo "soft-RoCE VM (qemu $accel, 2 vCPUs), rxe0; server: $version; $rounds rounds, each running both tools back to back (valkey-benchmark first in odd rounds, ours first in even ones); both clients on one thread (ours: \`--threads 1\`); \`vm/bench-valkey.sh --rounds $rounds\`."
	echo "Ratios are ours to valkey-benchmark's in the same round, their median over the rounds: requests/s above 1 and p50 below 1 are ours better; \"won\" counts the rounds where ours was at least as good. The req/s and latency columns are each tool's medians."
	echo
	echo "| case | test | valkey-benchmark req/s | p50 ms | p99 ms | rdmapool req/s | p50 ms | p99 ms | req/s ratio | won | p50 ratio | won |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	echo "$summary" | awk '{printf "| %s | %s | %.0f | %.3f | %.3f | %.0f | %.3f | %.3f | **%s** | %d/%d | **%s** | %d/%d |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $13, $11, $12, $13}'
	echo
	echo "valkey-benchmark --rdma against \`rdmapool serve\` (in the same VM, started beside valkey-server) and against valkey-server, in the same rounds; ratios serve / valkey-server."
	echo
	echo "| case | test | valkey-server req/s | p50 ms | p99 ms | rdmapool serve req/s | p50 ms | p99 ms | req/s ratio | won | p50 ratio | won |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	echo "$served" | awk 'NF {printf "| %s | %s | %.0f | %.3f | %.3f | %.0f | %.3f | %.3f | **%s** | %d/%d | **%s** | %d/%d |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $13, $11, $12, $13}'
} >"$out/bench-valkey.md"
cat "$out/bench-valkey.md"
