#!/usr/bin/env bash
# Runs the RDMA benchmarks in the soft-RoCE VM beside perftest, in one boot:
# perftest's ib_write_lat and ib_send_lat (the C reference) on rxe0 and our
# 64-byte RDMA round trip, taken close together in ROUNDS short rounds, each
# round's round trip a ratio to that round's perftest; then the rest of the
# bench/ suite over the same device (round trips and pipelined throughput
# over RDMA and TCP, each against an echo server in another process as
# perftest's server is, ring operations, the pool). The figure reported is
# the median of the rounds' ratios. Why short rounds: the emulator's speed
# drifts and jumps within a boot (ib_write_lat's typical latency 12.2 us in
# one round, 16.4 us in the next, 12.4 in the one after; the development
# machine is itself a virtual machine whose speed changes under it), so a
# reference taken seconds away from the figure it divides can carry that
# change into the ratio. Each round runs ITERS round trips of each tool
# (20000: under a second apiece), and the order within a round alternates
# (ib_write_lat, ib_send_lat, ours; then ours, ib_send_lat, ib_write_lat),
# so that a steady drift weighs on neither side. Results go to OUT (default
# out/): bench-rxe.json and bench-rxe.md, plus the raw console log.
#
# The clock: perftest times with the CPU's cycle counter (rdtsc), which costs
# nanoseconds whatever the kernel's clocksource. Go reads the kernel's
# clocksource, and in this VM the kernel does not trust the emulated TSC and
# falls back to an emulated HPET, 2.2 us a read and no vDSO: a cost inside
# every round trip we time and in the spinning reader, which no machine with
# an RDMA NIC has. (The kernel's rxe path reads the clock too, so perftest
# is slower on the HPET as well.) So the VM boots with tsc=reliable and the
# figures above are taken on the TSC clocksource; then perftest and our
# 64-byte RDMA round trip run again on the HPET, in the same boot, and the
# report shows both.
#
# usage: vm/bench.sh [--out DIR] [--rounds N] [--iters N] [--count N] [--benchtime D] [--setup-rounds N]
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib.sh source-path=SCRIPTDIR
. vm/lib.sh

out=out rounds=15 count=3 benchtime=2s iters=20000 setup_rounds=3
while [ $# -gt 0 ]; do
	case "$1" in
	--out) out=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--iters) iters=$2; shift 2 ;;
	--count) count=$2; shift 2 ;;
	--benchtime) benchtime=$2; shift 2 ;;
	--setup-rounds) setup_rounds=$2; shift 2 ;;
	*) echo "usage: $0 [--out DIR] [--rounds N] [--iters N] [--count N] [--benchtime D] [--setup-rounds N]" >&2; exit 2 ;;
	esac
done
for n in "$rounds" "$iters" "$count" "$setup_rounds"; do
	case "$n" in '' | 0 | *[!0-9]*) echo "$0: --rounds, --iters, --count and --setup-rounds take a number above 0, got '$n'" >&2; exit 2 ;; esac
done
mkdir -p "$out"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT

CGO_ENABLED=0 go test -c -o "$bin/bench.test" ./bench
cat >"$bin/run-bench.sh" <<SCRIPT
set -u
listening() { # listening: wait up to 10 s for a socket listening on perftest's port, 18515 (0x4853)
	for i in \$(seq 50); do
		grep -qE ':4853 [0-9A-F:]+ 0A' /proc/net/tcp /proc/net/tcp6 2>/dev/null && return 0
		sleep 0.2
	done
	return 1
}
perf() { # perf TOOL: server on rxe0, client to it, 64-byte messages, ITERS round trips
	\$1 -d rxe0 -s 64 -n $iters >/tmp/\$1.server 2>&1 &
	listening || { echo "bench-rxe: the \$1 server did not listen:" >&2; cat /tmp/\$1.server >&2; exit 1; }
	echo "=== \$1 \$cs\${tag:+ \$tag}"
	\$1 -d rxe0 -s 64 -n $iters 10.99.0.1 | grep -E '^ *64 '
	wait
}
clock() { # clock NAME: switch the kernel's clocksource; fails if it has none such
	cs=\$1
	echo \$1 >/sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null &&
		[ "\$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)" = \$1 ]
}
ours() { # ours: our 64-byte round trip, ITERS of them
	echo "=== rdmapool \$cs\${tag:+ \$tag}"
	./bench.test -test.run '^\$' -test.bench "\$rt" -test.benchtime ${iters}x -test.count 1 -test.benchmem
}
echo "clocksources: \$(cat /sys/devices/system/clocksource/clocksource0/available_clocksource)"
clock tsc || { echo "bench-rxe: no tsc clocksource in the VM" >&2; exit 1; }
rt='ConnRoundTrip/transport=rdma/size=64\$'
for r in \$(seq 1 $rounds); do
	tag=round\$r
	if [ \$((r % 2)) = 1 ]; then
		perf ib_write_lat; perf ib_send_lat; ours
	else
		ours; perf ib_send_lat; perf ib_write_lat
	fi
done
tag=
echo "=== rdmapool tsc"
./bench.test -test.run '^\$' -test.bench 'Conn|Ring|PoolGetPut' -test.benchtime $benchtime -test.count $count -test.benchmem
echo "=== rdmapool scale"
./bench.test -test.run '^\$' -test.bench 'ScaleIdle|ScalePinned' -test.benchtime 2000x -test.count 1
# Setup beside rdma_cm's own, in SETUP_ROUNDS rounds, the order alternating:
# cmtime (rdmacm-utils) times rdma_cm's steps inside one process, without
# its start: five runs of one connection each, every one against a server
# of its own; and BenchmarkScaleSetup, 15 connections a case (a few dozen
# say it: 2000 took minutes under TCG).
cmt() {
	for i in 1 2 3 4 5; do
		cmtime -b 10.99.0.1 >/dev/null 2>&1 &
		cp=\$!
		sleep 1
		echo "--- cmtime"
		cmtime -s 10.99.0.1 -c 1 2>&1 | grep ' : '
		kill \$cp 2>/dev/null
		wait \$cp 2>/dev/null
	done
}
setupb() { ./bench.test -test.run '^\$' -test.bench 'ScaleSetup' -test.benchtime 15x -test.count 1; }
for r in \$(seq 1 $setup_rounds); do
	echo "=== setup round\$r"
	if [ \$((r % 2)) = 1 ]; then cmt; setupb; else setupb; cmt; fi
done
echo "=== rping setup"
# rping's own connection setup, ten serial connections (each a process
# start, resolve, connect, one ping, disconnect): ms each, from uptime.
rping -s -a 10.99.0.1 -C 1 -P >/dev/null 2>&1 &
rp=\$!
sleep 2
t0=\$(cut -d' ' -f1 /proc/uptime)
for i in 1 2 3 4 5 6 7 8 9 10; do rping -c -a 10.99.0.1 -C 1 >/dev/null 2>&1 || echo "rping failed"; done
t1=\$(cut -d' ' -f1 /proc/uptime)
kill \$rp 2>/dev/null
echo "rping-setup \$(awk -v a=\$t0 -v b=\$t1 'BEGIN {printf "%.1f", (b - a) * 100}') ms/op"
if clock hpet; then
	perf ib_write_lat
	perf ib_send_lat
	echo "=== rdmapool hpet"
	./bench.test -test.run '^\$' -test.bench "\$rt" -test.benchtime $benchtime -test.count $count -test.benchmem
fi
echo "=== end"
SCRIPT

log="$out/bench-rxe.log"
# BenchmarkScaleIdle's 1,000 idle connections and their echo process do
# not fit the default 2 GB VM (the kernel's OOM killer ends the echo).
RDMAPOOL_VM_MEM=${RDMAPOOL_VM_MEM:-6144} vm/run.sh --bin "$bin" --log "$log" --timeout 1800 --append tsc=reliable -- sh run-bench.sh
accel=$(log_accel "$log")

# section NAME: the log's lines between "=== NAME" and the next "===".
section() { tr -d '\r' <"$log" | awk -v t="=== $1" '$0 == t {f=1; next} /^===/ {f=0} f'; }
# t_typical (µs, one way) of a perftest tool in a section: column 5 of its result line.
typ() { section "$1" | awk '$1 == 64 {print $5; exit}'; }
# Medians of our p50/p99 (µs) and ops/s over the runs.
med() { sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]}'; }
field() { # field SECTION REGEX UNIT: the values before UNIT on result lines whose name matches REGEX
	section "$1" | awk -v b="$2" -v u="$3" '$1 ~ ("^" b "$") {for (i = 2; i <= NF; i++) if ($i == u) print $(i-1)}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / (2 * b)}'; } # ratio RT ONEWAY
rt='BenchmarkConnRoundTrip/transport=rdma/size=64-[0-9]+'
# The rounds: each one's perftest and round trip, and the ratio between them.
rows="" rws="" rss="" wlats="" slats="" p50s=""
for r in $(seq 1 "$rounds"); do
	w=$(typ "ib_write_lat tsc round$r")
	sl=$(typ "ib_send_lat tsc round$r")
	p=$(field "rdmapool tsc round$r" "$rt" p50-µs | med)
	if [ -z "$w" ] || [ -z "$sl" ] || [ -z "$p" ]; then
		echo "bench-rxe: round $r has missing results in $log" >&2
		exit 1
	fi
	rws+="$(ratio "$p" "$w") " rss+="$(ratio "$p" "$sl") "
	wlats+="$w " slats+="$sl " p50s+="$p "
	rows+="| $r | $w µs | $sl µs | $p µs | $(ratio "$p" "$w") | $(ratio "$p" "$sl") |"$'\n'
done
medof() { tr ' ' '\n' | grep . | med; }
spread() { tr ' ' '\n' | grep . | sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {print lo "–" hi}'; }
rw=$(medof <<<"$rws") rs=$(medof <<<"$rss")
wlat=$(medof <<<"$wlats") slat=$(medof <<<"$slats") p50=$(medof <<<"$p50s")
jsonl() { tr ' ' '\n' | grep . | paste -sd, -; }
S="rdmapool tsc"
p99=$(field "$S" "$rt" p99-µs | med)
allocs=$(field "$S" "$rt" allocs/op | med)
opss=$(field "$S" 'BenchmarkConnPipelined/transport=rdma-[0-9]+' ops/s | med)
tcp50=$(field "$S" 'BenchmarkConnRoundTrip/transport=tcp/size=64-[0-9]+' p50-µs | med)
tcpallocs=$(field "$S" 'BenchmarkConnRoundTrip/transport=tcp/size=64-[0-9]+' allocs/op | med)
tcpopss=$(field "$S" 'BenchmarkConnPipelined/transport=tcp-[0-9]+' ops/s | med)
if [ -z "$p99" ] || [ -z "$allocs" ]; then
	echo "bench-rxe: missing suite results in $log" >&2
	exit 1
fi
# Scaling: one connection beside idle ones, setup, and rping's setup.
sc="rdmapool scale"
idle() { field "$sc" "BenchmarkScaleIdle/idle=$1-[0-9]+" "$2" | med; }
# setup CASE UNIT [ROUND]: a BenchmarkScaleSetup metric, the median over the
# setup rounds or one round's.
setup() {
	local r
	for r in $(seq 1 "$setup_rounds"); do
		if [ -z "${3:-}" ] || [ "$3" = "$r" ]; then field "setup round$r" "BenchmarkScaleSetup/$1-[0-9]+" "$2"; fi
	done | med
}
# cmtime's connection, per run: create id, resolve addr, resolve route,
# create qp and connect (its "total ms" column), summed; the round's median.
cmtimems() {
	section "setup round$1" | awk '
		/^--- cmtime/ {if (n) print s; s = 0; n = 1; next}
		$0 ~ /^(create id|resolve addr|resolve route|create qp|connect) *:/ {split($0, f, ":"); split(f[2], v, " "); s += v[1]}
		END {if (n) print s}' | med
}
setuprows="" dialratios=""
for r in $(seq 1 "$setup_rounds"); do
	cm=$(cmtimems "$r") d=$(setup buffer=default dial-ms/op "$r") d64=$(setup buffer=64KiB dial-ms/op "$r")
	d16=$(setup buffer=64KiB/depth=16 dial-ms/op "$r")
	rt() { awk -v a="$1" -v b="$2" 'BEGIN {if (a != "" && b > 0) printf "%.2f", a / b; else print "n/a"}'; }
	setuprows+="| $r | ${cm:-n/a} | ${d:-n/a} ($(rt "$d" "$cm")) | ${d64:-n/a} ($(rt "$d64" "$cm")) | ${d16:-n/a} ($(rt "$d16" "$cm")) |"$'\n'
	dialratios+="$(rt "$d" "$cm") "
done
pinned=$(field "$sc" 'BenchmarkScalePinned-[0-9]+' pinned-KiB/conn | med)
rpingms=$(section "rping setup" | awk '$1 == "rping-setup" {print $2}')
scalerows=""
for n in 0 100 400 1000; do
	scalerows+="| $n | $(idle $n p50-µs) µs | $(idle $n p99-µs) µs | $(idle $n cpu-µs/op) µs | $(idle $n fds/conn) | $(idle $n pinned-KiB/conn) |"$'\n'
done
# The same round trip and perftest on the HPET (empty when the VM had none).
hwlat=$(typ "ib_write_lat hpet")
hslat=$(typ "ib_send_lat hpet")
hp50=$(field "rdmapool hpet" "$rt" p50-µs | med)
hrw=null
if [ -n "$hwlat" ] && [ -n "$hp50" ]; then
	hrw=$(ratio "$hp50" "$hwlat")
fi
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)

cat >"$out/bench-rxe.json" <<JSON
{
  "date": "$date",
  "machine": "soft-RoCE VM (qemu $accel, 2 vCPUs), rxe0, 64-byte messages",
  "accelerator": "$accel",
  "clocksource": "tsc",
  "rounds": {"ib_write_lat_typical_us": [$(jsonl <<<"$wlats")], "ib_send_lat_typical_us": [$(jsonl <<<"$slats")], "round_trip_p50_us": [$(jsonl <<<"$p50s")], "p50_vs_2x_ib_write_lat": [$(jsonl <<<"$rws")], "p50_vs_2x_ib_send_lat": [$(jsonl <<<"$rss")]},
  "perftest": {"ib_write_lat_typical_us": $wlat, "ib_send_lat_typical_us": $slat},
  "rdmapool": {"round_trip_p50_us": $p50, "round_trip_p99_us": $p99, "allocs_per_op": $allocs, "pipelined_ops_per_s": ${opss:-0}},
  "rdmapool_tcp": {"round_trip_p50_us": ${tcp50:-0}, "allocs_per_op": ${tcpallocs:-0}, "pipelined_ops_per_s": ${tcpopss:-0}},
  "ratios": {"p50_vs_2x_ib_write_lat": $rw, "p50_vs_2x_ib_send_lat": $rs, "rdma_p50_vs_tcp_p50": $(awk -v a="$p50" -v b="${tcp50:-$p50}" 'BEGIN {printf "%.3f", a / b}')},
  "setup": {"rounds": $setup_rounds, "cmtime_connect_ms": [$(for r in $(seq 1 "$setup_rounds"); do cmtimems "$r"; done | paste -sd, -)], "dial_default_ms": [$(for r in $(seq 1 "$setup_rounds"); do setup buffer=default dial-ms/op "$r"; done | paste -sd, -)], "dial_vs_cmtime": $(medof <<<"$dialratios" | grep -E '^[0-9.]+$' || echo null)},
  "hpet": {"ib_write_lat_typical_us": ${hwlat:-null}, "ib_send_lat_typical_us": ${hslat:-null}, "round_trip_p50_us": ${hp50:-null}, "p50_vs_2x_ib_write_lat": $hrw}
}
JSON
cat >"$out/bench-rxe.md" <<MD
# RDMA round trip beside perftest ($date)

soft-RoCE VM (qemu $accel, 2 vCPUs), rxe0, 64-byte messages; \`vm/bench.sh --rounds $rounds --iters $iters --count $count --benchtime $benchtime\`.
Clocksource TSC (the VM boots with tsc=reliable; perftest times with rdtsc whatever the clocksource).

Rounds in one boot, $iters round trips of each tool a round, in the order ib_write_lat, ib_send_lat, ours in odd rounds and the reverse in even ones (perftest's typical one-way latency; our round trip's p50):

| round | ib_write_lat | ib_send_lat | rdmapool round trip | p50 / (2 × ib_write_lat) | p50 / (2 × ib_send_lat) |
| --- | --- | --- | --- | --- | --- |
$rows
| measure | value |
| --- | --- |
| **p50 / (2 × ib_write_lat), median of the rounds** | **$rw** ($(spread <<<"$rws")) |
| **p50 / (2 × ib_send_lat), median of the rounds** | **$rs** ($(spread <<<"$rss")) |
| rdmapool round trip p50, median of the rounds | $p50 µs |
| rdmapool round trip p99 (suite, median of $count runs) | $p99 µs |
| rdmapool allocations per round trip | $allocs |
| rdmapool pipelined 64 B messages | ${opss:-n/a} per s |
| rdmapool over TCP (gnet, same VM): round trip p50 | ${tcp50:-n/a} µs |
| rdmapool over TCP: allocations per round trip | ${tcpallocs:-n/a} |
| rdmapool over TCP: pipelined 64 B messages | ${tcpopss:-n/a} per s |
| on the HPET clocksource, same boot: ib_write_lat / ib_send_lat typical | ${hwlat:-n/a} / ${hslat:-n/a} µs |
| on the HPET: rdmapool round trip p50 | ${hp50:-n/a} µs |
| on the HPET: p50 / (2 × ib_write_lat) | $hrw |

One connection's 64-byte round trip while N others to the same echo process stay idle (64 KiB receive buffers on both ends; CPU of both processes per round trip; per idle connection, this process's file descriptors and both processes' pinned memory; \`bench.test -test.bench ScaleIdle\`):

| idle connections | p50 | p99 | CPU per round trip | fds per connection | pinned KiB per connection |
| --- | --- | --- | --- | --- | --- |
$scalerows
Pinned memory per connection with the default options, both ends, after one round trip (\`BenchmarkScalePinned\`): ${pinned:-n/a} KiB.

Connection setup beside rdma_cm's own, $setup_rounds rounds in the same boot (the order alternating): cmtime's connection (create id, resolve addr and route, create qp, connect; median of five single-connection runs) and our Dial (ms; in parentheses, the ratio to cmtime's in the same round):

| round | cmtime | Dial, default | Dial, 64 KiB buffers | Dial, 64 KiB, QueueDepth 16 |
| --- | --- | --- | --- | --- |
$setuprows
| connection setup, median of the rounds (ms) | Dial | first echo | Close | whole |
| --- | --- | --- | --- | --- |
| rdmapool, default | $(setup buffer=default dial-ms/op) | $(setup buffer=default echo-ms/op) | $(setup buffer=default close-ms/op) | $(setup buffer=default ms/op) |
| rdmapool, 64 KiB buffers | $(setup buffer=64KiB dial-ms/op) | $(setup buffer=64KiB echo-ms/op) | $(setup buffer=64KiB close-ms/op) | $(setup buffer=64KiB ms/op) |
| rdmapool, 64 KiB, QueueDepth 16 | $(setup buffer=64KiB/depth=16 dial-ms/op) | $(setup buffer=64KiB/depth=16 echo-ms/op) | $(setup buffer=64KiB/depth=16 close-ms/op) | $(setup buffer=64KiB/depth=16 ms/op) |

Dial (default) / cmtime, median of the rounds' ratios: $(medof <<<"$dialratios"). rping, ten serial runs (each includes a process start): ${rpingms:-n/a} ms each.
MD
cat "$out/bench-rxe.md"
