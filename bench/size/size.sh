#!/usr/bin/env bash
# Prints, as a Markdown table, the size of two go-redis programs: one on
# go-redis's own dialer (bench/size/own) and the same with a pool.Dialer
# (bench/size/dialer), built with CGO_ENABLED=0 with the default flags and
# with -ldflags='-s -w', and what the Dialer adds.
#
#   bench/size/size.sh             # this working tree
#   bench/size/size.sh main HEAD   # each git revision (git archive), built
#                                  # with this tree's two programs
#
# Sizes are in bytes, from the toolchain that go.mod selects; they move with
# the Go version and the target (GOOS, GOARCH from the environment).
set -euo pipefail
cd "$(dirname "$0")/../.."

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# build DIR OUT FLAGS...: the two programs of tree DIR into OUT.own and
# OUT.dialer.
build() {
	local dir=$1 out=$2
	shift 2
	(cd "$dir" && CGO_ENABLED=0 go build "$@" -o "$out.own" ./bench/size/own &&
		CGO_ENABLED=0 go build "$@" -o "$out.dialer" ./bench/size/dialer)
}

size() { wc -c <"$1" | tr -d ' '; }

row() {
	local name=$1 flags=$2 out=$3
	local own dialer
	own=$(size "$out.own")
	dialer=$(size "$out.dialer")
	printf '| %s | %s | %d | %d | +%d (+%d%%) |\n' "$name" "$flags" "$own" "$dialer" \
		$((dialer - own)) $(((dialer - own) * 100 / own))
}

revs=("$@")
if [ ${#revs[@]} -eq 0 ]; then
	revs=(.)
fi
echo "$(go version), CGO_ENABLED=0"
echo
echo '| tree | flags | own dialer | pool.Dialer | the Dialer adds |'
echo '| --- | --- | ---: | ---: | ---: |'
i=0
for rev in "${revs[@]}"; do
	i=$((i + 1))
	dir=.
	name="working tree"
	if [ "$rev" != . ]; then
		dir=$tmp/tree$i
		name="$rev ($(git rev-parse --short "$rev"))"
		mkdir -p "$dir"
		git archive "$rev" | tar -x -C "$dir"
		mkdir -p "$dir/bench/size"
		cp -r bench/size/own bench/size/dialer "$dir/bench/size/"
	fi
	out=$tmp/bin$i
	build "$dir" "$out"
	row "$name" default "$out"
	build "$dir" "$out-sw" -ldflags='-s -w'
	row "$name" "-s -w" "$out-sw"
done
