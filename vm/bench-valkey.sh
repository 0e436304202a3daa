#!/usr/bin/env bash
# Runs `rdmapool bench --transport rdma` beside valkey-benchmark --rdma against
# one real valkey-server with RDMA, in one soft-RoCE VM boot: for each round,
# each case (one client; 10 clients with 16-deep pipelines), valkey-benchmark
# then rdmapool bench, the same tests and request counts, each on one thread
# (valkey-benchmark's default; ours with --threads 1: the server shares the
# VM's two cores). It prints the
# medians over the rounds and our ratios to valkey-benchmark; results go to
# OUT (default out/): bench-valkey.json, bench-valkey.md and the console log.
#
# The valkey binaries are not built here: give a directory holding
# valkey-server and valkey-benchmark built with RDMA (valkey 8.1 or later,
# `make BUILD_RDMA=yes`; see docs/benchmarks.md). They run in the VM as they
# are, so build them on a system like the VM's (Debian bookworm's libraries).
#
# usage: vm/bench-valkey.sh --valkey DIR [--out DIR] [--rounds N] [--tests LIST]
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0" >&2; exit 2; }
valkey= out=out rounds=3 tests=ping,set,get
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
"$valkey/valkey-benchmark" --help 2>&1 | grep -q -- '--rdma' ||
	{ echo "bench-valkey: $valkey/valkey-benchmark has no --rdma (build valkey 8.1+ with BUILD_RDMA=yes)" >&2; exit 2; }
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "bench-valkey: --rounds must be a positive number" >&2; exit 2; }
[[ $tests =~ ^[a-z_,]+$ ]] || { echo "bench-valkey: --tests is a comma-separated list of test names" >&2; exit 2; }

mkdir -p "$out"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
CGO_ENABLED=0 go build -o "$bin/rdmapool" ./cmd/rdmapool
cp "$valkey/valkey-server" "$valkey/valkey-benchmark" "$bin/"
cat >"$bin/run-bench-valkey.sh" <<SCRIPT
set -u
addr=\${RDMAPOOL_TEST_ADDR:-10.99.0.1}
./valkey-server --bind \$addr --port 6379 --rdma-bind \$addr --rdma-port 6379 \
	--save '' --appendonly no --protected-mode no --logfile /tmp/valkey.log &
i=0
until grep -q 'Ready to accept connections rdma' /tmp/valkey.log 2>/dev/null; do
	i=\$((i + 1))
	[ \$i -lt 100 ] || { echo "valkey-server did not start over RDMA:"; cat /tmp/valkey.log; exit 1; }
	sleep 0.1
done
one() { # one CASE ARGS...: valkey-benchmark, then rdmapool bench
	c=\$1; shift
	./valkey-benchmark -h \$addr -p 6379 --rdma "\$@" -t $tests --csv 2>/dev/null | sed -n "s/^\"/RESULT valkey-benchmark \$c \"/p"
	./rdmapool bench -h \$addr -p 6379 --transport rdma --threads 1 "\$@" -t $tests --csv | sed -n "s/^\"/RESULT rdmapool \$c \"/p"
}
for r in \$(seq $rounds); do
	one c1 -c 1 -n 10000
	one c10-P16 -c 10 -P 16 -n 100000
done
SCRIPT

log="$out/bench-valkey.log"
vm/run.sh --bin "$bin" --log "$log" --timeout 1800 -- sh run-bench-valkey.sh

# RESULT TOOL CASE "TEST","rps","avg","min","p50","p95","p99","max" (ms);
# the header lines ("test",...) are dropped.
tr -d '\r' <"$log" | awk '$1 == "RESULT" && $4 !~ /^"test"/ {
	split($4, f, ","); for (i in f) gsub(/"/, "", f[i])
	print $2, $3, f[1], f[2], f[5], f[7]
}' >"$bin/results"
[ -s "$bin/results" ] || { echo "bench-valkey: no results in $log" >&2; exit 1; }

# Medians per tool, case and test: rps, p50, p99.
summary=$(awk '
	{ k = $1 SUBSEP $2 SUBSEP $3; n[k]++; rps[k, n[k]] = $4; p50[k, n[k]] = $5; p99[k, n[k]] = $6
	  if (!($2 SUBSEP $3 in seen)) { seen[$2 SUBSEP $3] = 1; order[++m] = $2 SUBSEP $3 } }
	function med(a, k, c,   i, j, t, v) {
		for (i = 1; i <= c; i++) v[i] = a[k, i]
		for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
		return v[int((c + 1) / 2)]
	}
	END {
		for (o = 1; o <= m; o++) {
			split(order[o], cp, SUBSEP)
			vk = "valkey-benchmark" SUBSEP order[o]; rk = "rdmapool" SUBSEP order[o]
			if (!n[vk] || !n[rk]) continue
			printf "%s %s %s %s %s %s %s %s\n", cp[1], cp[2], med(rps, vk, n[vk]), med(p50, vk, n[vk]), med(p99, vk, n[vk]), med(rps, rk, n[rk]), med(p50, rk, n[rk]), med(p99, rk, n[rk])
		}
	}' "$bin/results")
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
version=$("$valkey/valkey-server" --version | head -1)

{
	printf '{\n  "date": "%s",\n  "machine": "soft-RoCE VM (qemu TCG, 2 vCPUs), rxe0",\n' "$date"
	printf '  "server": "%s",\n  "rounds": %s,\n  "results": [\n' "$version" "$rounds"
	awk '{printf "%s    {\"tool\": \"%s\", \"case\": \"%s\", \"test\": \"%s\", \"rps\": %s, \"p50_ms\": %s, \"p99_ms\": %s}", (NR > 1 ? ",\n" : ""), $1, $2, $3, $4, $5, $6} END {print ""}' "$bin/results"
	printf '  ],\n  "medians": [\n'
	echo "$summary" | awk '{printf "%s    {\"case\": \"%s\", \"test\": \"%s\", \"valkey_benchmark\": {\"rps\": %s, \"p50_ms\": %s, \"p99_ms\": %s}, \"rdmapool\": {\"rps\": %s, \"p50_ms\": %s, \"p99_ms\": %s}, \"rps_ratio\": %.2f, \"p50_ratio\": %.2f}", (NR > 1 ? ",\n" : ""), $1, $2, $3, $4, $5, $6, $7, $8, $6 / $3, $7 / $4} END {print ""}'
	printf '  ]\n}\n'
} >"$out/bench-valkey.json"

{
	echo "# rdmapool bench --transport rdma beside valkey-benchmark --rdma ($date)"
	echo
	echo "soft-RoCE VM (qemu TCG, 2 vCPUs), rxe0; server: $version; medians of $rounds alternating rounds; both clients on one thread (ours: \`--threads 1\`); \`vm/bench-valkey.sh --rounds $rounds\`."
	echo "Ratios are ours to valkey-benchmark's: requests/s above 1 and p50 below 1 are ours better."
	echo
	echo "| case | test | valkey-benchmark req/s | p50 ms | p99 ms | rdmapool req/s | p50 ms | p99 ms | req/s ratio | p50 ratio |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	echo "$summary" | awk '{printf "| %s | %s | %.0f | %s | %s | %.0f | %s | %s | **%.2f** | **%.2f** |\n", $1, $2, $3, $4, $5, $6, $7, $8, $6 / $3, $7 / $4}'
} >"$out/bench-valkey.md"
cat "$out/bench-valkey.md"
