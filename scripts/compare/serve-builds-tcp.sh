#!/usr/bin/env bash
# valkey-benchmark over TCP on this machine against `rdmapool serve` of two
# builds, both running, the order alternating by round; prints each
# round's requests/s and p50, then B over A per case and test: the median
# of the per-round ratios (min-max).
#
# usage: scripts/compare/serve-builds-tcp.sh RDMAPOOL_A RDMAPOOL_B [ROUNDS]
#   (go build -o /tmp/a ./cmd/rdmapool at each revision; ROUNDS default 5)
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,8{s/^# \{0,1\}//;p}' "$0" >&2; exit 2; }
a=$1 b=$2 rounds=${3:-5}
command -v valkey-benchmark >/dev/null || { echo "serve-builds-tcp: no valkey-benchmark on PATH (apt-get install valkey-tools)" >&2; exit 2; }
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pa=$(port) pb=$(port)
"$a" serve --bind 127.0.0.1 --port "$pa" --rdma-bind "" >/dev/null 2>&1 & ka=$!
"$b" serve --bind 127.0.0.1 --port "$pb" --rdma-bind "" >/dev/null 2>&1 & kb=$!
trap 'kill $ka $kb 2>/dev/null' EXIT
for p in "$pa" "$pb"; do
	for _ in $(seq 100); do valkey-benchmark -p "$p" -n 1 -t ping -q >/dev/null 2>&1 && break; sleep 0.1; done
done
out=$(mktemp)
for r in $(seq "$rounds"); do
	for c in c1 c50 p16; do
		case $c in c1) args="-c 1 -n 20000" ;; c50) args="-c 50 -n 100000" ;; p16) args="-c 10 -P 16 -n 400000" ;; esac
		order="A B"; [ $((r % 2)) = 1 ] || order="B A"
		for s in $order; do
			p=$pa; [ "$s" = B ] && p=$pb
			# shellcheck disable=SC2086
			valkey-benchmark -p "$p" $args -t set,get --csv 2>/dev/null |
				sed -n "s/^\"\([A-Z]*\)\",\"\([0-9.]*\)\",\"[0-9.]*\",\"[0-9.]*\",\"\([0-9.]*\)\".*/$r $c $s \1 \2 \3/p"
		done
	done
done | tee "$out"
echo
echo "B / A, median of the rounds (min-max):"
awk '{v[$1" "$2" "$3" "$4]=$5; k[$2" "$4]=1; R[$1]=1}
END {
	for (ck in k) {
		n = 0; split(ck, x, " ")
		for (r in R) { va = v[r" "x[1]" A "x[2]]; vb = v[r" "x[1]" B "x[2]]; if (va > 0 && vb != "") q[++n] = vb / va }
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (q[j] < q[i]) { t = q[i]; q[i] = q[j]; q[j] = t }
		m = n % 2 ? q[(n + 1) / 2] : (q[n / 2] + q[n / 2 + 1]) / 2
		printf "%s %s %.2f (%.2f-%.2f)\n", x[1], x[2], m, q[1], q[n]
	}
}' "$out" | sort
rm -f "$out"
