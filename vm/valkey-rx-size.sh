#!/usr/bin/env bash
# Measures what the receive buffer toward a Valkey server buys, to choose
# qp.Options.RecvBufferSize's default: the length a connection keeps for
# its whole life toward any peer that did not negotiate a change (valkey-
# server 8.1-9.1 crash on one). In one soft-RoCE VM boot, against one
# valkey-server with RDMA: `rdmapool bench --transport rdma -c 1 -d SIZE
# -t set,get` at each --rdma-rx-size, the order of the sizes reversed every
# round. GET's bytes come through our receive buffer (the server writes at
# most that much before it waits for our re-arm); SET's go through the
# server's (its rdma-rx-size, 1 MiB), so SET is the control. An idle
# connection pins the buffer plus 128 KiB (command slots and send staging).
# Each round's throughput is taken relative to the 1 MiB buffer's in the
# same round; the report gives the medians of those ratios. Writes OUT
# (default out/) valkey-rx-size.{log,md}; the status is non-zero if the
# server died (as a length change would make it) or a run failed.
#
# DIR holds valkey-server with RDMA, built in (8.1+, BUILD_RDMA=yes) or as
# valkey-rdma.so beside it (see vm/valkey-build.sh), built on a system like
# the VM's; nothing of valkey is built here.
#
# usage: vm/valkey-rx-size.sh --valkey DIR [--out DIR] [--rounds N] [--sizes LIST] [-n N] [-d BYTES]
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib.sh source-path=SCRIPTDIR
. vm/lib.sh

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0" >&2; exit 2; }
valkey="" out=out rounds=3 sizes=64kb,256kb,1mb,4mb,16mb n=20 d=16777216
while [ $# -gt 0 ]; do
	case "$1" in
	--valkey) valkey=${2:?}; shift 2 ;;
	--out) out=${2:?}; shift 2 ;;
	--rounds) rounds=${2:?}; shift 2 ;;
	--sizes) sizes=${2:?}; shift 2 ;;
	-n) n=${2:?}; shift 2 ;;
	-d) d=${2:?}; shift 2 ;;
	*) usage ;;
	esac
done
bad() { echo "valkey-rx-size: $*" >&2; exit 2; }
[ -n "$valkey" ] || bad "--valkey DIR is required (valkey-server with RDMA)"
[ -x "$valkey/valkey-server" ] || bad "$valkey/valkey-server: no such executable"
[ -x "$valkey/valkey-cli" ] || bad "$valkey/valkey-cli: no such executable"
[[ $rounds =~ ^[1-9][0-9]*$ ]] || bad "--rounds must be a positive number"
[[ $sizes =~ ^[0-9a-z,]+$ ]] || bad "--sizes is a comma-separated list such as 64kb,1mb"
[[ $n =~ ^[1-9][0-9]*$ && $d =~ ^[1-9][0-9]*$ ]] || bad "-n and -d are positive numbers"
mode=$(valkey_rdma_mode "$valkey") ||
	bad "$valkey/valkey-server has no RDMA built in and there is no valkey-rdma.so beside it (vm/valkey-build.sh)"

mkdir -p "$out"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
CGO_ENABLED=0 go build -o "$bin/rdmapool" ./cmd/rdmapool
cp "$valkey/valkey-server" "$valkey/valkey-cli" "$bin/"
[ "$mode" = builtin ] || cp "$valkey/valkey-rdma.so" "$bin/"
cat >"$bin/run-rx-size.sh" <<SCRIPT
set -u
$(valkey_rdma_args_fn)
addr=\${RDMAPOOL_TEST_ADDR:-10.99.0.1}
./valkey-server --bind \$addr --port 6379 \$(rdma_args $mode ./valkey-rdma.so \$addr 6379) \
	--save '' --appendonly no --protected-mode no --logfile /tmp/valkey.log &
pid=\$!
i=0
until grep -q 'Ready to accept connections rdma' /tmp/valkey.log 2>/dev/null; do
	i=\$((i + 1))
	[ \$i -lt 100 ] || { echo "valkey-server did not start over RDMA:"; cat /tmp/valkey.log; exit 1; }
	sleep 0.1
done
./valkey-server --version
failed=0
sizes=\$(echo $sizes | tr , ' ')
rev=\$(for s in \$sizes; do echo \$s; done | sed -n '1!G;h;\$p')
for r in \$(seq $rounds); do
	order=\$sizes
	[ \$((r % 2)) = 0 ] && order=\$rev
	for s in \$order; do
		./rdmapool bench -h \$addr -p 6379 --transport rdma --threads 1 -c 1 -n $n -d $d -t set,get \
			--rdma-rx-size \$s --csv >/tmp/out.csv 2>/tmp/err || { failed=1; echo "bench at \$s failed:"; cat /tmp/err; }
		sed -n "s/^\"/RESULT \$r \$s \"/p" /tmp/out.csv
		kill -0 \$pid 2>/dev/null || { echo "valkey-server DIED at --rdma-rx-size \$s:"; tail -30 /tmp/valkey.log; exit 1; }
	done
done
./valkey-cli -h \$addr -p 6379 ping | grep -q PONG || { echo "valkey-server does not answer PING"; failed=1; }
kill -0 \$pid 2>/dev/null && echo "valkey-server alive after every run"
exit \$failed
SCRIPT

log="$out/valkey-rx-size.log"
status=0
vm/run.sh --bin "$bin" --log "$log" --timeout 3000 -- sh run-rx-size.sh || status=$?
accel=$(log_accel "$log")
version=$(tr -d '\r' <"$log" | grep -o -m1 'Valkey server v=[^ ]*' || echo "valkey-server")

# RESULT ROUND SIZE "TEST","rps",... -> per size and test, the median over
# the rounds of rps relative to the 1mb size's in the same round.
table=$(tr -d '\r' <"$log" | awk -v d="$d" '
	function med(k, c,   i, j, t, v) {
		for (i = 1; i <= c; i++) v[i] = val[k, i]
		for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
		return c % 2 ? v[(c + 1) / 2] : (v[c / 2] + v[c / 2 + 1]) / 2
	}
	function bytes(s) { return s ~ /mb$/ ? s * 1048576 : s ~ /kb$/ ? s * 1024 : s }
	$1 == "RESULT" && $4 !~ /^"test"/ {
		split($4, f, ","); gsub(/"/, "", f[1]); gsub(/"/, "", f[2])
		rps[$2, $3, f[1]] = f[2]; if (!(($3) in seen)) { seen[$3] = 1; sz[++m] = $3 }
		tests[f[1]] = 1; rounds[$2] = 1
	}
	END {
		nt = split("SET GET", tl, " ")
		for (i = 1; i <= m; i++) for (k = 1; k <= nt; k++) {
			t = tl[k]; if (!(t in tests)) continue
			c = 0; raw = 0
			for (r in rounds) {
				if (rps[r, sz[i], t] == "" || rps[r, "1mb", t] + 0 == 0) continue
				c++; val["ratio", c] = rps[r, sz[i], t] / rps[r, "1mb", t]; val["mbs", c] = rps[r, sz[i], t] * d / 1048576
			}
			if (c) printf "| %s | %s | %d KiB | %.0f | **%.2f** | %d |\n", sz[i], t, (bytes(sz[i]) + 131072) / 1024, med("mbs", c), med("ratio", c), c
		}
	}')
{
	echo "# Receive buffer toward valkey-server: throughput against pinned memory ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
	echo
	echo "soft-RoCE VM (qemu $accel, 2 vCPUs), rxe0; $version; \`vm/valkey-rx-size.sh --rounds $rounds -n $n -d $d\`: \`rdmapool bench --transport rdma --threads 1 -c 1 -t set,get\`, $rounds rounds, the sizes' order reversed every round."
	echo "GET comes through our receive buffer; SET through valkey's (its 1 MiB rdma-rx-size), the control. Ratio: to the 1 MiB buffer's throughput in the same round, median over the rounds."
	echo
	echo "| --rdma-rx-size | test | pinned per idle connection | MiB/s (median) | ratio to 1 MiB | rounds |"
	echo "| --- | --- | --- | --- | --- | --- |"
	echo "$table"
} >"$out/valkey-rx-size.md"
cat "$out/valkey-rx-size.md"
exit "$status"
