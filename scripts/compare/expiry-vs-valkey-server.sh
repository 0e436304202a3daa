#!/bin/bash
# usage: scripts/compare/expiry-vs-valkey-server.sh ROUNDS PX BIN...
# Memory after expiry, each round a fresh Debian valkey-server and a fresh
# `BIN serve` for each rdmapool binary (the order reversed every other
# round): scripts/compare/expiry loads 500 000 SETs of 1 KiB with PX PX
# (0: none) while timing single GETs of another key, then prints DBSIZE and
# the server's RSS (total, anonymous, file-backed, MB) 5, 10 and 15 s after
# the load. scripts/compare/expiry-ratios.py summarises, e.g.:
#   go build -o /tmp/rdmapool ./cmd/rdmapool
#   scripts/compare/expiry-vs-valkey-server.sh 5 1 /tmp/rdmapool >px1.txt
#   scripts/compare/expiry-ratios.py px1.txt
set -u
rounds=$1 px=$2
shift 2
bins=()
for b in "$@"; do bins+=("$(realpath "$b")"); done
cd "$(dirname "$0")/../.." || exit 1
lat=$(mktemp -d)/expiry
trap 'rm -rf "$(dirname "$lat")"' EXIT
CGO_ENABLED=0 go build -o "$lat" ./scripts/compare/expiry || exit 1
port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
for r in $(seq 1 "$rounds"); do
	vs=(valkey "${bins[@]}")
	if ((r % 2 == 0)); then mapfile -t vs < <(printf '%s\n' "${vs[@]}" | tac); fi
	for v in "${vs[@]}"; do
		p=$(port)
		if [ "$v" = valkey ]; then
			valkey-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no >/dev/null 2>&1 &
			name=valkey
		else
			"$v" serve --port "$p" >/dev/null 2>&1 &
			name=$(basename "$v")
		fi
		sp=$!
		sleep 1
		echo "round $r $name px=$px: load average $(cut -d' ' -f1-3 /proc/loadavg)"
		"$lat" -p "$p" -pid "$sp" -px "$px" -after 15s | sed "s/^/round $r $name px=$px: /"
		kill "$sp"
		wait "$sp" 2>/dev/null
	done
done
