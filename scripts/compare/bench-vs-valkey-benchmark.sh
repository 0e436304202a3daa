#!/bin/bash
# usage: scripts/compare/bench-vs-valkey-benchmark.sh ROUNDS "CASE_ARGS" BIN[:extra args] ...
# Each round runs valkey-benchmark and each rdmapool binary (`rdmapool bench
# --transport tcp`; order reversed every round) against one Debian
# valkey-server on loopback; prints one CSV line per round, tool and test.
# scripts/compare/ratios.py summarises them, e.g.:
#   go build -o /tmp/rdmapool ./cmd/rdmapool
#   scripts/compare/bench-vs-valkey-benchmark.sh 7 "-c 50 -n 500000" /tmp/rdmapool >c50.csv
#   scripts/compare/ratios.py c50.csv
set -u
rounds=$1 case=$2
shift 2
port=${PORT:-$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')}
valkey-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no >/dev/null 2>&1 &
spid=$!
trap 'kill $spid' EXIT
sleep 0.5
kill -0 "$spid" || { echo "valkey-server did not start" >&2; exit 1; }
tools=("vb" "$@")
for r in $(seq 1 "$rounds"); do
	order=("${tools[@]}")
	if ((r % 2 == 0)); then
		order=()
		for ((i = ${#tools[@]} - 1; i >= 0; i--)); do order+=("${tools[$i]}"); done
	fi
	for t in "${order[@]}"; do
		if [ "$t" = vb ]; then
			# shellcheck disable=SC2086 # the case is a list of flags
			valkey-benchmark -h 127.0.0.1 -p "$port" $case -t set,get --csv | tail -n +2 | sed "s/^/$r,vb,/"
		else
			bin=${t%%:*} extra=""
			[[ "$t" == *:* ]] && extra=${t#*:}
			# shellcheck disable=SC2086 # the case and extra are lists of flags
			"$bin" bench -h 127.0.0.1 -p "$port" $case -t set,get --csv --transport tcp $extra | tail -n +2 | sed "s|^|$r,$t,|"
		fi
	done
done
