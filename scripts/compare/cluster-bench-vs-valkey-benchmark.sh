#!/bin/bash
# usage: scripts/compare/cluster-bench-vs-valkey-benchmark.sh RDMAPOOL_BINARY [ROUNDS [OLD_BINARY]] >out.csv
# Three valkey-server cluster nodes on loopback (ports 7101-7103), then valkey-benchmark --cluster
# and rdmapool bench --cluster --transport tcp (and OLD_BINARY's, labelled old) in turn, the
# order rotating every round, ROUNDS rounds (-c 50 -n 300000 -t set,get); summarise with
#   scripts/compare/ratios.py <(grep -E '^[0-9]+,(vb|ours),"(SET|GET)"' out.csv)
set -u
bin=$1 rounds=${2:-5} old=${3:-}
tools=(vb ours)
[ -n "$old" ] && tools+=(old)
dir=$(mktemp -d)
ports=(7101 7102 7103)
pids=()
for p in "${ports[@]}"; do
	valkey-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no --cluster-enabled yes \
		--cluster-config-file "$dir/nodes-$p.conf" --dir "$dir" >/dev/null 2>&1 &
	pids+=($!)
done
trap 'kill "${pids[@]}"; rm -rf "$dir"' EXIT
sleep 1
valkey-cli --cluster create 127.0.0.1:7101 127.0.0.1:7102 127.0.0.1:7103 --cluster-replicas 0 --cluster-yes >/dev/null
for _ in $(seq 50); do
	ok=1
	for p in "${ports[@]}"; do valkey-cli -p "$p" cluster info | grep -q cluster_state:ok || ok=0; done
	[ $ok = 1 ] && break
	sleep 0.2
done
for r in $(seq 1 "$rounds"); do
	for j in "${!tools[@]}"; do
		t=${tools[$(((j + r) % ${#tools[@]}))]}
		case $t in
		vb) valkey-benchmark -h 127.0.0.1 -p 7101 --cluster -c 50 -n 300000 -t set,get --csv | tail -n +2 | sed "s/^/$r,vb,/" ;;
		ours) "$bin" bench -h 127.0.0.1 -p 7101 --cluster -c 50 -n 300000 -t set,get --csv --transport tcp | tail -n +2 | sed "s|^|$r,ours,|" ;;
		old) "$old" bench -h 127.0.0.1 -p 7101 --cluster -c 50 -n 300000 -t set,get --csv --transport tcp | tail -n +2 | sed "s|^|$r,old,|" ;;
		esac
	done
done
