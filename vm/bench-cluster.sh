#!/usr/bin/env bash
# Runs `rdmapool bench --cluster` against the embedded cluster (NODES
# in-process nodes splitting the slots, each with a TCP port and an RDMA
# port of its own) over RDMA and over TCP, in one soft-RoCE VM boot. Each
# round runs two cases, one client a node (-n 5000) and two a node with
# 16-deep pipelines (-n 50000; under emulation thirty RDMA clients do not
# all connect within the run's 10 s), each with both transports back to
# back, RDMA first in odd rounds and TCP first in even ones, on one client
# thread (--threads 1: the nodes share the VM's two cores). It prints each
# transport's medians over the rounds and the ratios RDMA to TCP within
# each round (their median): the emulation's speed drifts from minute to
# minute, so the transports are compared within a round. Results go to OUT
# (default out/): bench-cluster.json, bench-cluster.md and the console log.
#
# usage: vm/bench-cluster.sh [--out DIR] [--rounds N] [--nodes N] [--tests LIST]
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib.sh source-path=SCRIPTDIR
. vm/lib.sh

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0" >&2; exit 2; }
out=out rounds=5 nodes=3 tests=set,get
while [ $# -gt 0 ]; do
	case "$1" in
	--out) out=${2:?}; shift 2 ;;
	--rounds) rounds=${2:?}; shift 2 ;;
	--nodes) nodes=${2:?}; shift 2 ;;
	--tests) tests=${2:?}; shift 2 ;;
	*) usage ;;
	esac
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "bench-cluster: --rounds must be a positive number" >&2; exit 2; }
[[ $nodes =~ ^[1-9][0-9]*$ ]] || { echo "bench-cluster: --nodes must be a positive number" >&2; exit 2; }
[[ $tests =~ ^[a-z_0-9,]+$ ]] || { echo "bench-cluster: --tests is a comma-separated list of test names" >&2; exit 2; }

mkdir -p "$out"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
CGO_ENABLED=0 go build -o "$bin/rdmapool" ./cmd/rdmapool
cat >"$bin/run-bench-cluster.sh" <<SCRIPT
set -u
one() { # one CASE ARGS...: both transports, RDMA first in odd rounds
	c=\$1; shift
	if [ \$((r % 2)) = 1 ]; then set -- rdma tcp "\$@"; else set -- tcp rdma "\$@"; fi
	a=\$1 b=\$2; shift 2
	for t in \$a \$b; do
		./rdmapool bench --cluster --cluster-nodes $nodes --transport \$t --threads 1 "\$@" -t $tests --csv >/tmp/out 2>/tmp/err ||
			{ echo "bench-cluster: \$t \$c round \$r failed:"; cat /tmp/err; }
		sed -n "s/^\"/RESULT \$t \$c \$r \"/p" /tmp/out
	done
}
for r in \$(seq $rounds); do
	one c$nodes -c $nodes -n 5000
	one c$((nodes * 2))-P16 -c $((nodes * 2)) -P 16 -n 50000
done
SCRIPT

log="$out/bench-cluster.log"
vm/run.sh --bin "$bin" --log "$log" --timeout 1800 -- sh run-bench-cluster.sh
accel=$(log_accel "$log")

# RESULT TRANSPORT CASE ROUND "TEST","rps","avg","min","p50","p95","p99","max" (ms);
# the header lines ("test",...) are dropped.
tr -d '\r' <"$log" | awk '$1 == "RESULT" && $5 !~ /^"test"/ {
	split($5, f, ","); for (i in f) gsub(/"/, "", f[i])
	print $2, $3, $4, f[1], f[2], f[5], f[7]
}' >"$bin/results"
[ -s "$bin/results" ] || { echo "bench-cluster: no results in $log" >&2; exit 1; }

# Per case and test: each transport's medians over the rounds (rps, p50,
# p99), and RDMA's to TCP's within each round: the median of those ratios.
summary=$(awk '
	function med(a, k, c,   i, j, t, v) {
		for (i = 1; i <= c; i++) v[i] = a[k, i]
		for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
		return c % 2 ? v[(c + 1) / 2] : (v[c / 2] + v[c / 2 + 1]) / 2
	}
	{ ct = $2 SUBSEP $4; k = $1 SUBSEP ct; n[k]++
	  rps[k, n[k]] = $5; p50[k, n[k]] = $6; p99[k, n[k]] = $7
	  for (m0 = 5; m0 <= 7; m0++) byRound[$1, ct, $3, m0] = $m0
	  rounds[ct, $3] = 1
	  if (!(ct in seen)) { seen[ct] = 1; order[++m] = ct } }
	END {
		for (o = 1; o <= m; o++) {
			ct = order[o]; split(ct, cp, SUBSEP)
			rk = "rdma" SUBSEP ct; tk = "tcp" SUBSEP ct
			if (!n[rk] || !n[tk]) continue
			c = 0
			for (rc in rounds) {
				split(rc, x, SUBSEP)
				if (x[1] SUBSEP x[2] != ct) continue
				r = x[3]; ok = 1
				for (m0 = 5; m0 <= 7; m0++) if (byRound["rdma", ct, r, m0] == "" || byRound["tcp", ct, r, m0] + 0 == 0) ok = 0
				if (!ok) continue
				c++
				rr["x", c] = byRound["rdma", ct, r, 5] / byRound["tcp", ct, r, 5]
				pr["x", c] = byRound["rdma", ct, r, 6] / byRound["tcp", ct, r, 6]
				qr["x", c] = byRound["rdma", ct, r, 7] / byRound["tcp", ct, r, 7]
			}
			if (!c) continue
			printf "%s %s %s %s %s %s %s %s %.2f %.2f %.2f %d\n", cp[1], cp[2],
				med(rps, rk, n[rk]), med(p50, rk, n[rk]), med(p99, rk, n[rk]),
				med(rps, tk, n[tk]), med(p50, tk, n[tk]), med(p99, tk, n[tk]),
				med(rr, "x", c), med(pr, "x", c), med(qr, "x", c), c
		}
	}' "$bin/results")
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)

{
	printf '{\n  "date": "%s",\n  "machine": "soft-RoCE VM (qemu %s, 2 vCPUs), rxe0",\n  "accelerator": "%s",\n' "$date" "$accel" "$accel"
	printf '  "server": "embedded cluster of %s nodes",\n  "rounds": %s,\n  "results": [\n' "$nodes" "$rounds"
	awk '{printf "%s    {\"transport\": \"%s\", \"case\": \"%s\", \"round\": %s, \"test\": \"%s\", \"rps\": %s, \"p50_ms\": %s, \"p99_ms\": %s}", (NR > 1 ? ",\n" : ""), $1, $2, $3, $4, $5, $6, $7} END {print ""}' "$bin/results"
	printf '  ],\n  "summary": [\n'
	echo "$summary" | awk '{printf "%s    {\"case\": \"%s\", \"test\": \"%s\", \"rdma\": {\"rps\": %s, \"p50_ms\": %s, \"p99_ms\": %s}, \"tcp\": {\"rps\": %s, \"p50_ms\": %s, \"p99_ms\": %s}, \"rps_ratio\": %s, \"p50_ratio\": %s, \"p99_ratio\": %s, \"rounds\": %s}", (NR > 1 ? ",\n" : ""), $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12} END {print ""}'
	printf '  ]\n}\n'
} >"$out/bench-cluster.json"

{
	echo "# rdmapool bench --cluster against the embedded cluster, RDMA beside TCP ($date)"
	echo
	echo "soft-RoCE VM (qemu $accel, 2 vCPUs), rxe0; embedded cluster of $nodes nodes in the benchmark's process; $rounds rounds, each running both transports back to back (RDMA first in odd rounds, TCP first in even ones); \`--threads 1\`; \`vm/bench-cluster.sh --rounds $rounds --nodes $nodes\`."
	echo "Ratios are RDMA's to TCP's in the same round, their median over the rounds: requests/s above 1 and latencies below 1 are RDMA better. The req/s and latency columns are each transport's medians."
	echo
	echo "| case | test | rdma req/s | p50 ms | p99 ms | tcp req/s | p50 ms | p99 ms | req/s ratio | p50 ratio | p99 ratio | rounds |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	echo "$summary" | awk '{printf "| %s | %s | %.0f | %.3f | %.3f | %.0f | %.3f | %.3f | **%s** | **%s** | %s | %d |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12}'
} >"$out/bench-cluster.md"
cat "$out/bench-cluster.md"
