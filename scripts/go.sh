# shellcheck shell=bash
# Sourced by scripts/run.sh and scripts/test.sh: ensure_go makes sure that
# the go command on PATH builds this module, whose go.mod asks for Go 1.26.
#
# A Go of 1.21 or later fetches the toolchain go.mod needs from the Go
# module proxy by itself, as a module, when GOTOOLCHAIN lets it (a Go
# installed from the Go project's tarball ships GOTOOLCHAIN=local; the export below
# overrides that for this script only). Older or no Go: Debian's, from
# bookworm-backports on bookworm (Go 1.23), else the release's golang-go.

# goToolchain is the Go release these scripts fetch when the machine's is
# older than go.mod's go line.
goToolchain=go1.26.8

# go_version prints the version of the go command on PATH itself (go1.26.8),
# or nothing: asked outside the module, whose go.mod would stop an older one.
go_version() {
	command -v go >/dev/null || return 0
	(cd / && GOTOOLCHAIN=local go env GOVERSION 2>/dev/null) || true
}

# go_minor prints its minor version (26 for go1.26.8), or nothing.
go_minor() { go_version | sed -n 's/^go1\.\([0-9]*\).*/\1/p'; }

ensure_go() {
	local want minor
	want=$(sed -n 's/^go 1\.\([0-9]*\).*/\1/p' go.mod)
	case $(go_version) in
	*devel*) return 0 ;; # a development build: whoever built it knows best
	esac
	minor=$(go_minor)
	if [ -z "$minor" ] || [ "$minor" -lt 21 ]; then
		scripts/deps.sh go
		local d
		for d in /usr/lib/go-1.2[1-9]/bin /usr/lib/go/bin; do
			if [ -x "$d/go" ]; then
				PATH=$d:$PATH
				break
			fi
		done
		minor=$(go_minor)
		if [ -z "$minor" ] || [ "$minor" -lt 21 ]; then
			echo "go: no Go 1.21 or later after installing Debian's; install Go 1.$want or later from the Go project" >&2
			return 1
		fi
	fi
	# A release candidate or beta of go.mod's version (go1.26rc1) is older
	# than its .0 too.
	if [ "$minor" -lt "$want" ] || [[ $(go_version) =~ ^go1\.$want(rc|beta) ]]; then
		echo "go: $(go_version) is older than go.mod's 1.$want: the go command fetches $goToolchain from the Go module proxy"
		export GOTOOLCHAIN=$goToolchain
	fi
	export PATH
}
