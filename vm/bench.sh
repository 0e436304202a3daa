#!/usr/bin/env bash
# Runs the RDMA benchmarks in the soft-RoCE VM beside perftest, in one boot:
# perftest's ib_write_lat and ib_send_lat (the C reference) on rxe0, then
# the bench/ suite over the same device (connection round trips and
# pipelined throughput over RDMA and TCP, each against an echo server in
# another process as perftest's server is, ring operations, the pool), and
# prints our figures as ratios to the reference. Results go to OUT (default out/):
# bench-rxe.json and bench-rxe.md, plus the raw console log.
#
# usage: vm/bench.sh [--out DIR] [--count N] [--benchtime D]
set -euo pipefail
cd "$(dirname "$0")/.."

out=out count=3 benchtime=2s
while [ $# -gt 0 ]; do
	case "$1" in
	--out) out=$2; shift 2 ;;
	--count) count=$2; shift 2 ;;
	--benchtime) benchtime=$2; shift 2 ;;
	*) echo "usage: $0 [--out DIR] [--count N] [--benchtime D]" >&2; exit 2 ;;
	esac
done
mkdir -p "$out"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT

CGO_ENABLED=0 go test -c -o "$bin/bench.test" ./bench
cat >"$bin/run-bench.sh" <<SCRIPT
set -u
perf() { # perf TOOL: server on rxe0, client to it, 64-byte messages
	\$1 -d rxe0 -s 64 -n 5000 >/tmp/\$1.server 2>&1 &
	sleep 2
	echo "=== \$1"
	\$1 -d rxe0 -s 64 -n 5000 10.99.0.1 | grep -E '^ *64 '
	wait
}
perf ib_write_lat
perf ib_send_lat
echo "=== rdmapool"
./bench.test -test.run '^\$' -test.bench 'Conn|Ring|PoolGetPut' -test.benchtime $benchtime -test.count $count -test.benchmem
SCRIPT

log="$out/bench-rxe.log"
vm/run.sh --bin "$bin" --log "$log" --timeout 900 -- sh run-bench.sh

# t_typical (µs, one way) of each perftest tool: column 5 of its result line.
typ() { tr -d '\r' <"$log" | awk -v t="=== $1" '$0 == t {f=1; next} /^===/ {f=0} f && $1 == 64 {print $5; exit}'; }
wlat=$(typ ib_write_lat)
slat=$(typ ib_send_lat)
# Medians of our p50/p99 (µs) and ops/s over the runs.
med() { sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]}'; }
field() { # field REGEX UNIT: the values before UNIT on result lines whose name matches REGEX
	tr -d '\r' <"$log" | awk -v b="$1" -v u="$2" '$1 ~ ("^" b "$") {for (i = 2; i <= NF; i++) if ($i == u) print $(i-1)}'
}
rt='BenchmarkConnRoundTrip/transport=rdma/size=64-[0-9]+'
p50=$(field "$rt" p50-µs | med)
p99=$(field "$rt" p99-µs | med)
allocs=$(field "$rt" allocs/op | med)
opss=$(field 'BenchmarkConnPipelined/transport=rdma-[0-9]+' ops/s | med)
tcp50=$(field 'BenchmarkConnRoundTrip/transport=tcp/size=64-[0-9]+' p50-µs | med)
tcpallocs=$(field 'BenchmarkConnRoundTrip/transport=tcp/size=64-[0-9]+' allocs/op | med)
tcpopss=$(field 'BenchmarkConnPipelined/transport=tcp-[0-9]+' ops/s | med)
if [ -z "$wlat" ] || [ -z "$slat" ] || [ -z "$p50" ]; then
	echo "bench-rxe: missing results in $log" >&2
	exit 1
fi
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
rw=$(ratio "$p50" "$(awk -v x="$wlat" 'BEGIN {print 2 * x}')")
rs=$(ratio "$p50" "$(awk -v x="$slat" 'BEGIN {print 2 * x}')")
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)

cat >"$out/bench-rxe.json" <<JSON
{
  "date": "$date",
  "machine": "soft-RoCE VM (qemu TCG, 2 vCPUs), rxe0, 64-byte messages",
  "perftest": {"ib_write_lat_typical_us": $wlat, "ib_send_lat_typical_us": $slat},
  "rdmapool": {"round_trip_p50_us": $p50, "round_trip_p99_us": $p99, "allocs_per_op": $allocs, "pipelined_ops_per_s": ${opss:-0}},
  "rdmapool_tcp": {"round_trip_p50_us": ${tcp50:-0}, "allocs_per_op": ${tcpallocs:-0}, "pipelined_ops_per_s": ${tcpopss:-0}},
  "ratios": {"p50_vs_2x_ib_write_lat": $rw, "p50_vs_2x_ib_send_lat": $rs, "rdma_p50_vs_tcp_p50": $(ratio "$p50" "${tcp50:-$p50}")}
}
JSON
cat >"$out/bench-rxe.md" <<MD
# RDMA round trip beside perftest ($date)

soft-RoCE VM (qemu TCG, 2 vCPUs), rxe0, 64-byte messages; \`vm/bench.sh --count $count --benchtime $benchtime\`.

| measure | value |
| --- | --- |
| perftest ib_write_lat, typical (one way) | $wlat µs |
| perftest ib_send_lat, typical (one way) | $slat µs |
| rdmapool round trip p50 (median of $count runs) | $p50 µs |
| rdmapool round trip p99 | $p99 µs |
| rdmapool allocations per round trip | $allocs |
| rdmapool pipelined 64 B messages | ${opss:-n/a} per s |
| rdmapool over TCP (gnet, same VM): round trip p50 | ${tcp50:-n/a} µs |
| rdmapool over TCP: allocations per round trip | ${tcpallocs:-n/a} |
| rdmapool over TCP: pipelined 64 B messages | ${tcpopss:-n/a} per s |
| **p50 / (2 × ib_write_lat)** | **$rw** |
| **p50 / (2 × ib_send_lat)** | **$rs** |
MD
cat "$out/bench-rxe.md"
