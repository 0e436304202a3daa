#!/usr/bin/env bash
# Runs rdmapool against a real valkey-server with RDMA in one soft-RoCE VM
# boot, for any valkey release with RDMA: RDMA built into valkey-server
# (8.1 and later, `make BUILD_RDMA=yes`) or a connection module
# valkey-rdma.so (8.0, `make BUILD_RDMA=module`; 8.1+ can build one too).
# vm/valkey-build.sh SRC makes such a build from a source tree. In order:
#
#  1. the Go tests that take such a build (RDMAPOOL_VALKEY_DIR, set here):
#     pool's TestValkeyRDMAClients (go-redis and valkey-go through a Dialer
#     with RDMAOnly, a server of its own per scenario: values 1 B-16 MiB,
#     10,000-command pipelines, 7 s idle past the 3 s keepalive, 32
#     connections, each client with its default options, valkey-go's
#     client tracking on), TestValkeyRDMAServerKill (kill -9 of the server
#     seen by every connection and client), TestValkeyRDMACluster (3
#     masters + 3 replicas, each with RDMA on a port of its own: all
#     slots, pipelines across slots, reshard, failover with WAIT 1) and
#     qp's TestValkeyRDMARegisterXferMemory (re-arms of the same length;
#     the probe of another length, which 8.1.0-9.1.0 die of);
#  2. one valkey-server (TCP and RDMA) beside `rdmapool serve` (TCP and
#     RDMA), both idle but for the run at hand: `rdmapool bench` over RDMA
#     and over TCP to valkey-server, and over RDMA to rdmapool serve, in
#     --rounds rounds whose order reverses every round;
#  3. where the release's valkey-cli and valkey-benchmark have --rdma (9.0
#     and later): both against rdmapool serve (PING, SET and GET, 1 MB
#     values), then whether ours still serves and valkey-server still lives;
#  4. whether that valkey-server outlives closing an RDMA connection itself
#     (CLIENT KILL of idle RDMA clients, then PING after its 3 s keepalive);
#  5. a cluster of 3 masters + 3 replicas of the build, each serving RDMA on
#     its TCP port (`rdmapool bench --cluster` has one RDMA port rule for
#     every node: --rdma-port, 0 for each node's TCP port), created with
#     valkey-cli --cluster create over TCP: `rdmapool bench --cluster` over
#     RDMA and over TCP, in --rounds rounds, the order alternating.
#
# Each bench run is one client thread (--threads 1) for --duration per
# test (set, get), at -c 1 and at -c 10 -P 16 (the cluster: -c 6 and
# -c 15 -P 16, 2 and 5 per primary). Results go to OUT (default out/):
# valkey-rdma.log (the console), valkey-rdma.md (the version, RDMA mode and
# a PASS/FAIL line per scenario, for a table of releases by scenario; then
# the bench figures) and valkey-rdma.json (each side's median requests/s
# and p50, the median over rounds of the ratios within a round, and the
# scenarios); the status is non-zero if a test, a scenario or a bench run
# failed.
#
# Nothing of valkey is built or fetched here: DIR must hold valkey-server
# and valkey-cli of one build (valkey-benchmark too for step 3, and
# valkey-rdma.so for a module build), made on a system like the VM's
# (Debian bookworm's libraries). This script only builds rdmapool's own Go
# binaries.
#
# usage: vm/valkey-rdma.sh --valkey DIR [--out DIR] [--rounds N] [--duration D] [--no-tests]
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib.sh source-path=SCRIPTDIR
. vm/lib.sh

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0" >&2; exit 2; }
valkey="" out=out rounds=5 duration=3s tests=1
while [ $# -gt 0 ]; do
	case "$1" in
	--valkey) valkey=${2:?}; shift 2 ;;
	--out) out=${2:?}; shift 2 ;;
	--rounds) rounds=${2:?}; shift 2 ;;
	--duration) duration=${2:?}; shift 2 ;;
	--no-tests) tests=0; shift ;;
	*) usage ;;
	esac
done
bad() { echo "valkey-rdma: $*" >&2; exit 2; }
[ -n "$valkey" ] || { echo "valkey-rdma: --valkey DIR is required (valkey-server, valkey-cli; valkey-rdma.so for a module build)" >&2; usage; }
for f in valkey-server valkey-cli; do
	[ -x "$valkey/$f" ] || bad "$valkey/$f: no such executable"
done
mode=$(valkey_rdma_mode "$valkey") ||
	bad "$valkey: valkey-server has no RDMA built in and there is no valkey-rdma.so (build with vm/valkey-build.sh)"
version=$("$valkey/valkey-server" --version 2>&1 | head -n 1) || bad "$valkey/valkey-server --version failed: $version"
# valkey-cli and valkey-benchmark have --rdma from 9.0 on (with libvalkey).
# (Their help is read whole first: grep -q stops reading at the match,
# and under pipefail the tool's SIGPIPE would fail the test.)
tools=0
if [ -x "$valkey/valkey-benchmark" ] && grep -q -- '--rdma' <<<"$("$valkey/valkey-cli" --help 2>&1)" &&
	grep -q -- '--rdma' <<<"$("$valkey/valkey-benchmark" --help 2>&1)"; then
	tools=1
fi
[[ $rounds =~ ^[1-9][0-9]*$ ]] || bad "--rounds must be a positive number"
[[ $duration =~ ^[1-9][0-9]*(ms|s|m)$ ]] || bad "--duration is a Go duration such as 3s"

# the commit under test, taken now: the tree may move on during the run
rev="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with changes)')"
mkdir -p "$out"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
mkdir -p "$bin/valkey"
for f in valkey-server valkey-cli valkey-benchmark valkey-rdma.so; do
	[ ! -f "$valkey/$f" ] || cp "$valkey/$f" "$bin/valkey/"
done
CGO_ENABLED=0 go build -o "$bin/rdmapool" ./cmd/rdmapool

# The guest's part after the tests: ROUNDS DURATION MODE TOOLS.
{
	valkey_rdma_args_fn
	cat <<'SCRIPT'
set -u
rounds=$1 dur=$2 mode=$3 tools=$4
addr=${RDMAPOOL_TEST_ADDR:-10.99.0.1}
V=/opt/bin/valkey
failed=0
pids=

# scenario NAME PASS|FAIL|N/A DETAIL: one line of the report's table.
scenario() {
	n=$1 res=$2
	shift 2
	echo "SCENARIO $n $res $*"
	[ "$res" != FAIL ] || failed=1
}

# start_node NAME PORT RDMA_PORT [ARGS...]: one valkey-server, TCP and RDMA on addr.
start_node() {
	name=$1 port=$2 rport=$3
	shift 3
	mkdir -p "/tmp/$name"
	[ ! -f "/tmp/$name/log" ] || mv "/tmp/$name/log" "/tmp/$name/log.old"
	$V/valkey-server --port "$port" --bind "$addr" --protected-mode no --save '' --appendonly no \
		--dir "/tmp/$name" --logfile "/tmp/$name/log" --crash-memcheck-enabled no "$@" \
		$(rdma_args "$mode" $V/valkey-rdma.so "$addr" "$rport") 2>>"/tmp/$name/stderr" &
	pids="$pids $!"
	i=0
	until grep -q 'Ready to accept connections rdma' "/tmp/$name/log" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 200 ] || { echo "valkey-rdma: $name did not start over RDMA:"; cat "/tmp/$name/log"; return 1; }
		sleep 0.1
	done
}

# bench STAGE CASE SIDE ARGS...: one rdmapool bench run, its CSV rows
# printed as RESULT STAGE CASE SIDE ROUND "TEST",...
bench() {
	st=$1 c=$2 side=$3
	shift 3
	./rdmapool bench --threads 1 --csv --duration "$dur" -n 100000000 -t set,get "$@" >/tmp/bench.out 2>/tmp/bench.err
	rc=$?
	sed -n "s/^\"/RESULT $st $c $side $r \"/p" /tmp/bench.out
	if [ $rc != 0 ]; then
		failed=1
		eval "bad_$st=1"
		echo "BENCHFAIL $st $c $side round $r: status $rc: $(tail -n 3 /tmp/bench.err)"
	fi
}
bad_single=0 bad_cluster=0

alive() { [ "$($V/valkey-cli -h "$addr" -p "$1" ping 2>/dev/null)" = PONG ]; }

# check_alive NAME PORT: after a run, says whether valkey-server NAME died
# (its crash line and backtrace), and then fails.
check_alive() {
	alive "$2" && return 0
	failed=1
	eval "bad_$st=1"
	echo "SERVERCRASH $1 after $st $c $side round $r: $(grep -m 1 'crashed by signal\|ASSERTION FAILED' "/tmp/$1/log")"
	sed -n '/STACK TRACE/,/STACK TRACE DONE/p' "/tmp/$1/log" | head -n 20
	return 1
}

echo "=== valkey-rdma: $($V/valkey-server --version) (RDMA: $mode)"
echo "=== valkey-rdma: one valkey-server (TCP 6379, RDMA 6380) and rdmapool serve (TCP 6390, RDMA 6391)"
start_node single 6379 6380 || exit 1
./rdmapool serve --bind "$addr" --port 6390 --rdma-bind "$addr" --rdma-port 6391 2>/tmp/serve.log &
serve=$!
i=0
until alive 6390; do
	i=$((i + 1))
	[ $i -lt 200 ] || { echo "valkey-rdma: rdmapool serve did not start:"; cat /tmp/serve.log; exit 1; }
	sleep 0.1
done
sleep 1
for r in $(seq "$rounds"); do
	for cs in "c1:-c 1" "c10-P16:-c 10 -P 16"; do
		c=${cs%%:*}
		# shellcheck disable=SC2086 # the case's flags are words
		set -- ${cs#*:}
		# a crashed valkey-server is started again, once per run
		vr() { bench single "$c" valkey-rdma -h "$addr" -p 6379 --rdma-port 6380 --transport rdma "$@"; check_alive single 6379 || start_node single 6379 6380; }
		vt() { bench single "$c" valkey-tcp -h "$addr" -p 6379 --transport tcp "$@"; check_alive single 6379 || start_node single 6379 6380; }
		sr() { bench single "$c" serve-rdma -h "$addr" -p 6390 --rdma-port 6391 --transport rdma "$@"; }
		if [ $((r % 2)) = 1 ]; then vr "$@"; vt "$@"; sr "$@"; else sr "$@"; vt "$@"; vr "$@"; fi
	done
done
if [ $bad_single = 0 ]; then
	scenario bench-single PASS "rdmapool bench over RDMA and TCP to valkey-server, over RDMA to rdmapool serve: $rounds rounds"
else
	scenario bench-single FAIL "a bench run failed or valkey-server died (BENCHFAIL, SERVERCRASH above)"
fi

if [ "$tools" = 1 ]; then
	echo "=== valkey-rdma: valkey-cli --rdma and valkey-benchmark --rdma against rdmapool serve (RDMA 6391)"
	cli() { timeout 120 $V/valkey-cli --rdma -h "$addr" -p 6391 "$@" 2>&1; }
	# vbench NAME PORT ARGS...: valkey-benchmark --rdma against the RDMA
	# port (ours, 6391); its CSV must have a row per test and no error. The
	# timeout only ends a hang.
	vbench() {
		n=$1 port=$2
		shift 2
		out=$(timeout 300 $V/valkey-benchmark --rdma -h "$addr" -p "$port" --csv "$@" 2>&1)
		rc=$?
		echo "$out" | sed "s/^/$n: /"
		rows=$(echo "$out" | grep -c '^"[A-Z]')
		if [ $rc = 0 ] && [ "$rows" -gt 0 ] && ! echo "$out" | grep -qi 'error\|refused\|closed'; then
			scenario "$n" PASS "valkey-benchmark --rdma $*: $rows tests"
		else
			scenario "$n" FAIL "valkey-benchmark --rdma $*: status $rc, $rows rows: $(echo "$out" | tail -n 2 | tr '\n' ' ')"
			[ "$port" != 6391 ] || { echo "rdmapool serve's log (end):"; tail -n 20 /tmp/serve.log; }
		fi
	}
	p=$(cli PING) s=$(cli SET clik clival) g=$(cli GET clik)
	if [ "$p" = PONG ] && [ "$s" = OK ] && [ "$g" = clival ]; then
		scenario cli-rdma PASS "valkey-cli --rdma: PING, SET, GET"
	else
		scenario cli-rdma FAIL "valkey-cli --rdma: PING $p, SET $s, GET $g"
	fi
	vbench benchmark-rdma 6391 -t ping,set,get -n 2000 -c 4
	vbench benchmark-rdma-1MB 6391 -t set,get -n 40 -c 2 -d 1000000
	if kill -0 "$serve" 2>/dev/null && [ "$(cli PING)" = PONG ] && alive 6390; then
		serving="rdmapool serve still serves (RDMA and TCP)"
		ok=1
	else
		serving="rdmapool serve no longer serves: $(tail -n 5 /tmp/serve.log | tr '\n' ' ')"
		ok=0
	fi
	if alive 6379; then
		serving="$serving; valkey-server alive"
	else
		serving="$serving; valkey-server died: $(grep -m 1 'crashed by signal\|ASSERTION FAILED' /tmp/single/log)"
		ok=0
	fi
	if [ $ok = 1 ]; then scenario tools-end PASS "$serving"; else scenario tools-end FAIL "$serving"; fi
	# The same 1 MB run against valkey-server's own RDMA port: whether the
	# release's tool works at all where it fails against ours.
	vbench benchmark-rdma-1MB-valkey 6380 -t set,get -n 40 -c 2 -d 1000000
	alive 6379 || echo "SERVERCRASH single after valkey-benchmark -d 1000000: $(grep -m 1 'crashed by signal\|ASSERTION FAILED' /tmp/single/log)"
else
	for n in cli-rdma benchmark-rdma benchmark-rdma-1MB tools-end benchmark-rdma-1MB-valkey; do
		scenario $n N/A "this release's valkey-cli and valkey-benchmark have no --rdma (9.0 and later do)"
	done
fi
kill "$serve" 2>/dev/null

echo "=== valkey-rdma: valkey-server closing RDMA connections itself (CLIENT KILL)"
./rdmapool bench -h "$addr" -p 6379 --rdma-port 6380 --transport rdma -I -c 2 >/tmp/idle.out 2>&1 &
idle=$!
sleep 3
echo "CLIENT KILL TYPE normal: $($V/valkey-cli -h "$addr" -p 6379 client kill type normal 2>&1)"
sleep 7 # the server's RDMA keepalive runs every 3 s
if alive 6379; then
	echo "SERVERCLOSE survived"
	scenario server-close PASS "valkey-server closed idle RDMA connections (CLIENT KILL) and answered PING after its keepalive"
else
	echo "SERVERCLOSE crashed: $(grep -m 1 'crashed by signal' /tmp/single/log)"
	sed -n '/STACK TRACE/,/STACK TRACE DONE/p' /tmp/single/log | head -n 20
	scenario server-close FAIL "valkey-server died after CLIENT KILL of RDMA connections: $(grep -m 1 'crashed by signal' /tmp/single/log)"
fi
kill -INT "$idle" 2>/dev/null
wait "$idle" 2>/dev/null
kill $pids 2>/dev/null
pids=

echo "=== valkey-rdma: cluster of 3 masters + 3 replicas, TCP and RDMA on ports 7000-7005"
nodes=
for p in 7000 7001 7002 7003 7004 7005; do
	start_node "c$p" $p $p --cluster-enabled yes --cluster-config-file "/tmp/c$p/nodes.conf" \
		--cluster-node-timeout 5000 || exit 1
	nodes="$nodes $addr:$p"
done
# shellcheck disable=SC2086 # one word per node
$V/valkey-cli --cluster create $nodes --cluster-replicas 1 --cluster-yes >/tmp/create.log 2>&1 ||
	{ echo "valkey-rdma: valkey-cli --cluster create failed:"; cat /tmp/create.log; exit 1; }
i=0
until [ "$(for p in 7000 7001 7002 7003 7004 7005; do $V/valkey-cli -h "$addr" -p $p cluster info; done | grep -c 'cluster_state:ok')" = 6 ]; do
	i=$((i + 1))
	[ $i -lt 600 ] || { echo "valkey-rdma: the cluster is not ok after 60 s"; exit 1; }
	sleep 0.1
done
for p in 7000 7001 7002 7003 7004 7005; do
	until $V/valkey-cli -h "$addr" -p $p info replication | grep -qE 'role:master|master_link_status:up'; do sleep 0.2; done
done
$V/valkey-cli -h "$addr" -p 7000 cluster nodes
for r in $(seq "$rounds"); do
	for cs in "c6:-c 6" "c15-P16:-c 15 -P 16"; do
		c=${cs%%:*}
		# shellcheck disable=SC2086
		set -- ${cs#*:}
		cr() { bench cluster "$c" rdma --cluster -h "$addr" -p 7000 --transport rdma "$@"; }
		ct() { bench cluster "$c" tcp --cluster -h "$addr" -p 7000 --transport tcp "$@"; }
		if [ $((r % 2)) = 1 ]; then cr "$@"; ct "$@"; else ct "$@"; cr "$@"; fi
		# a node that died ends the stage: the cluster is no longer the same
		for p in 7000 7001 7002 7003 7004 7005; do check_alive "c$p" $p || break 3; done
	done
done
if [ $bad_cluster = 0 ]; then
	scenario bench-cluster PASS "rdmapool bench --cluster over RDMA and TCP, 3 masters + 3 replicas: $rounds rounds"
else
	scenario bench-cluster FAIL "a bench run failed or a node died (BENCHFAIL, SERVERCRASH above)"
fi
kill $pids 2>/dev/null
[ $failed = 0 ]
SCRIPT
} >"$bin/valkey-rdma-bench.sh"

log="$out/valkey-rdma.log"
run=(vm/test.sh --pkg ./pool --pkg ./qp --run ValkeyRDMA --test-timeout 30m --timeout 3600
	--extra "$bin" --env RDMAPOOL_VALKEY_DIR=/opt/bin/valkey --cmd "sh valkey-rdma-bench.sh $rounds $duration $mode $tools")
if [ "$tests" = 0 ]; then run+=(--run '^$'); fi
set +e
"${run[@]}" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
accel=$(log_accel "$log")
tr -d '\r' <"$log" >"$bin/console"

# The scenarios, in the report's order, NAME|WHAT: a Go test's result is
# its --- PASS/FAIL/SKIP line, the guest script's its SCENARIO line; one
# with neither did not run (a test that stopped before it, a VM that did
# not finish). A failure says why where the log does: a server that died.
scenarios='TestValkeyRDMAClients/go-redis/values|go-redis: SET and GET of values from 1 B to 16 MiB
TestValkeyRDMAClients/valkey-go/values|valkey-go: SET and GET of values from 1 B to 16 MiB
TestValkeyRDMAClients/go-redis/pipeline|go-redis: a pipeline of 10,000 commands
TestValkeyRDMAClients/valkey-go/pipeline|valkey-go: a pipeline of 10,000 commands
TestValkeyRDMAClients/go-redis/idle|go-redis: connections idle 7 s (the server keepalive is 3 s), then used
TestValkeyRDMAClients/valkey-go/idle|valkey-go: connections idle 7 s (the server keepalive is 3 s), then used
TestValkeyRDMAClients/go-redis/conns|go-redis: 32 connections at once
TestValkeyRDMAClients/valkey-go/conns|valkey-go: 32 connections at once
TestValkeyRDMAClients/go-redis/defaults|go-redis with its default options
TestValkeyRDMAClients/valkey-go/defaults|valkey-go with its default options (client tracking on)
TestValkeyRDMAServerKill|kill -9 of the server, seen by every connection and client
TestValkeyRDMAStalledServer|a server busy in a 2 s script (its receives not re-posted): our client retries, loses no write
TestValkeyRDMACluster/go-redis/all-slots|cluster 3+3, go-redis: every slot written and read
TestValkeyRDMACluster/valkey-go/all-slots|cluster 3+3, valkey-go: every slot written and read
TestValkeyRDMACluster/go-redis/pipeline|cluster, go-redis: pipelines across slots
TestValkeyRDMACluster/valkey-go/pipeline|cluster, valkey-go: pipelines across slots
TestValkeyRDMACluster/reshard|cluster: valkey-cli --cluster reshard under load, both clients
TestValkeyRDMACluster/failover|cluster: a master killed, WAIT 1 writes read back after failover
TestValkeyRDMARegisterXferMemory/same-length|protocol: RegisterXferMemory again with the same length (new address and key)
TestValkeyRDMARegisterXferMemory/other-length|protocol probe: RegisterXferMemory of another length (8.1.0-9.1.0 die of it: PASS means as expected)
bench-single|rdmapool bench against valkey-server (RDMA, TCP) and rdmapool serve; server alive
cli-rdma|valkey-cli --rdma against rdmapool serve: PING, SET, GET
benchmark-rdma|valkey-benchmark --rdma against rdmapool serve: PING, SET, GET
benchmark-rdma-1MB|valkey-benchmark --rdma -d 1000000 against rdmapool serve
tools-end|after valkey-cli and valkey-benchmark: rdmapool serve still serves, valkey-server alive
benchmark-rdma-1MB-valkey|control: valkey-benchmark --rdma -d 1000000 against valkey-server itself
server-close|valkey-server closes idle RDMA connections itself (CLIENT KILL) and lives
bench-cluster|rdmapool bench --cluster against 3 masters + 3 replicas (RDMA, TCP)'
# NAME RESULT DETAIL, one line each
while IFS='|' read -r name what; do
	res="" detail=""
	if [[ $name == Test* ]]; then
		res=$(sed -En "s#^ *--- (PASS|FAIL|SKIP): $name \\(.*#\\1#p; s#^=== rdmapool-scenario: (PASS|FAIL) $name\$#\\1#p" "$bin/console" | head -n 1)
		# A subtest's --- line comes when its parent ends: a run cut short
		# has none for the subtests it did run.
		died=$(awk -v n="$name" '$0 ~ "=== RUN +" n "$" { on = 1; next } on && /=== RUN|--- (PASS|FAIL|SKIP)/ { exit } on && /died:/ { sub(/^ *[a-z_]+\.go:[0-9]+: /, ""); print; exit }' "$bin/console" | cut -c 1-400)
		if [ -z "$res" ] && grep -Eq "^=== RUN +$name\$" "$bin/console"; then
			res=UNFINISHED detail="started, no result: the run ended first (a hang, or the VM's timeout)"
			[ -z "$died" ] || res=FAIL
		fi
		if [ "$res" = FAIL ]; then
			detail=${died:-${detail:-see valkey-rdma.log}}
		fi
	else
		line=$(sed -n "s|^SCENARIO $name ||p" "$bin/console" | head -n 1)
		res=${line%% *} detail=${line#* }
	fi
	printf '%s\t%s\t%s\t%s\n' "$name" "${res:-NOT RUN}" "$what" "$detail"
done <<<"$scenarios" >"$bin/scenarios"
# valkey-benchmark -d 1000000 failing against valkey-server as well is the
# release's tool, not rdmapool serve: say so on our row.
if grep -q "^benchmark-rdma-1MB-valkey	FAIL" "$bin/scenarios"; then
	sed -i 's/^\(benchmark-rdma-1MB	FAIL	[^	]*	\)/\1the same run fails against valkey-server itself (the control row): the tool, not rdmapool serve. /' "$bin/scenarios"
fi
scen_pass=$(awk -F '\t' '$2 == "PASS"' "$bin/scenarios" | wc -l)
scen_fail=$(awk -F '\t' '$2 != "PASS" && $2 != "N/A" && $2 != "SKIP"' "$bin/scenarios" | wc -l)

# STAGE CASE SIDE ROUND TEST RPS P50 P99
awk '$1 == "RESULT" && $6 !~ /^"test"/ {
	split($6, f, ","); for (i in f) gsub(/"/, "", f[i])
	print $2, $3, $4, $5, f[1], f[2], f[5], f[7]
}' "$bin/console" >"$bin/results"

# Per stage, case and test: each side's medians (req/s, p50), then for each
# pair NUM/DEN the median over rounds of NUM's req/s over DEN's and of NUM's
# p50 over DEN's, both measured in the same round.
summary=$(awk '
	function med(a, c,   i, j, t) {
		for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
		return c % 2 ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2
	}
	{ k = $1 SUBSEP $2 SUBSEP $5; rps[k, $3, $4] = $6; p50[k, $3, $4] = $7; rounds[$4] = 1
	  if (!(k in seen)) { seen[k] = 1; order[++m] = k } sides[k, $3] = 1 }
	END {
		np = split("single valkey-rdma valkey-tcp|single serve-rdma valkey-rdma|cluster rdma tcp", pairs, "|")
		for (o = 1; o <= m; o++) {
			k = order[o]; split(k, kp, SUBSEP)
			for (q = 1; q <= np; q++) {
				split(pairs[q], pq, " ")
				if (pq[1] != kp[1] || !((k, pq[2]) in sides) || !((k, pq[3]) in sides)) continue
				n = 0; delete rr; delete pr; delete an; delete ad; delete pn; delete pd
				for (r in rounds) {
					a = rps[k, pq[2], r]; b = rps[k, pq[3], r]
					if (a == "" || b == "" || b + 0 == 0 || p50[k, pq[3], r] + 0 == 0) continue
					n++; rr[n] = a / b; pr[n] = p50[k, pq[2], r] / p50[k, pq[3], r]
					an[n] = a; ad[n] = b; pn[n] = p50[k, pq[2], r]; pd[n] = p50[k, pq[3], r]
				}
				if (n) printf "%s %s %s %s %s %.0f %.3f %.0f %.3f %.2f %.2f %d\n", kp[1], kp[2], kp[3], pq[2], pq[3],
					med(an, n), med(pn, n), med(ad, n), med(pd, n), med(rr, n), med(pr, n), n
			}
		}
	}' "$bin/results")
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
serverclose=$(sed -n 's/^SERVERCLOSE //p' "$bin/console" | head -n 1)
json_str() { sed 's/\\/\\\\/g; s/"/\\"/g' <<<"$1"; }
{
	printf '{\n  "date": "%s",\n  "machine": "soft-RoCE VM (qemu %s, 2 vCPUs), rxe0",\n  "accelerator": "%s",\n' "$date" "$accel" "$accel"
	printf '  "server": "%s",\n  "rdma": "%s",\n  "rounds": %s,\n  "duration": "%s",\n  "server_closes_rdma_connection": "%s",\n' \
		"$version" "$mode" "$rounds" "$duration" "${serverclose:-not run}"
	printf '  "scenarios": [\n'
	n=0
	while IFS=$'\t' read -r name res what detail; do
		n=$((n + 1))
		[ $n = 1 ] || printf ',\n'
		printf '    {"name": "%s", "result": "%s", "what": "%s", "detail": "%s"}' "$name" "$res" "$(json_str "$what")" "$(json_str "$detail")"
	done <"$bin/scenarios"
	printf '\n  ],\n  "results": [\n'
	awk '{printf "%s    {\"stage\": \"%s\", \"case\": \"%s\", \"side\": \"%s\", \"round\": %s, \"test\": \"%s\", \"rps\": %s, \"p50_ms\": %s, \"p99_ms\": %s}", (NR > 1 ? ",\n" : ""), $1, $2, $3, $4, $5, $6, $7, $8} END {print ""}' "$bin/results"
	printf '  ],\n  "ratios": [\n'
	[ -z "$summary" ] || echo "$summary" | awk '{printf "%s    {\"stage\": \"%s\", \"case\": \"%s\", \"test\": \"%s\", \"num\": \"%s\", \"den\": \"%s\", \"num_rps\": %s, \"num_p50_ms\": %s, \"den_rps\": %s, \"den_p50_ms\": %s, \"rps_ratio\": %s, \"p50_ratio\": %s, \"rounds\": %s}", (NR > 1 ? ",\n" : ""), $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12} END {print ""}'
	printf '  ]\n}\n'
} >"$out/valkey-rdma.json"
{
	echo "# rdmapool against valkey-server with RDMA ($date)"
	echo
	echo "version: $version"
	echo "RDMA: $mode ($(case $mode in builtin) echo "built in: --rdma-bind, --rdma-port" ;; module) echo "valkey-rdma.so with --rdma-bind, --rdma-port" ;; *) echo "valkey-rdma.so with bind=, port=" ;; esac))"
	echo "rdmapool: $rev"
	echo "scenarios: $scen_pass passed, $scen_fail failed or not run to the end (N/A: not in this release)"
	echo
	echo "| scenario | result | what | detail |"
	echo "| --- | --- | --- | --- |"
	awk -F '\t' '{ gsub(/\|/, "\\|", $4); printf "| %s | **%s** | %s | %s |\n", $1, $2, $3, $4 }' "$bin/scenarios"
	echo
	echo "soft-RoCE VM (qemu $accel, 2 vCPUs), rxe0; server: $version (RDMA: $mode); \`vm/valkey-rdma.sh --rounds $rounds --duration $duration\`; each bench run one client thread, $duration per test."
	echo "Ratios are of two sides measured in the same round, their median over the rounds; req/s and p50 columns are each side's medians."
	echo "valkey-server closing an RDMA connection itself: ${serverclose:-not run}."
	echo
	echo "| stage | case | test | side | req/s | p50 ms | against | req/s | p50 ms | req/s ratio | p50 ratio | rounds |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	[ -z "$summary" ] || echo "$summary" | awk '{printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | **%s** | **%s** | %s |\n", $1, $2, $3, $4, $6, $7, $5, $8, $9, $10, $11, $12}'
} >"$out/valkey-rdma.md"
cat "$out/valkey-rdma.md"
exit "$rc"
