# Soft-RoCE VM targets (see vm/README.md). Values reach the scripts literally:
# `make vm-run VM_CMD='echo $HOME'` prints the VM's $HOME.
shq = '$(subst ','\'',$(value $(1)))'

.PHONY: run test bench size bench-ffi bench-rxe bench-rxe-revs bench-valkey bench-serve-revs bench-cluster bench-listen valkey-rdma test-rxe vm-run vm-fetch

# run: the main job: benchmark the embedded server, over RDMA where this
# machine can, else over TCP (saying why); then `rdmapool info` tells more.
run:
	scripts/run.sh

# test: every test, as CI runs it (see scripts/test.sh).
test:
	scripts/test.sh

# bench: the go test -bench suites that run on this machine (bench/ and the
# micro-benchmarks beside the code; RDMA ones skip without a device, and
# make bench-rxe runs them in the VM). Compare within one run.
bench:
	scripts/deps.sh test
	CGO_ENABLED=0 go test -run '^$$' -bench . -benchmem ./bench ./pool ./cq ./server ./cmd/rdmapool/internal/benchrun

# size: what a pool.Dialer adds to the binary of a go-redis program
# (bench/size/size.sh), for this tree or, with SIZE_REVS='main HEAD', for
# each git revision named.
size:
	bench/size/size.sh $(SIZE_REVS)

# bench-ffi: the cost of one C call: ours, purego.SyscallN and cgo, in one run.
bench-ffi:
	CGO_ENABLED=1 go test -run '^$$' -bench Call3 -benchmem -count 5 ./internal/ffi

# bench-rxe: in one VM boot, perftest's ib_write_lat and ib_send_lat close
# together with our RDMA round trip (fifteen short rounds, each a ratio), then our other
# benchmarks on the same device; writes out/bench-rxe.{json,md}.
bench-rxe:
	vm/bench.sh

# bench-rxe-revs: in one VM boot, our 64-byte RDMA round trip and the round
# trip beside idle connections (bench/), built at each of REVS (git
# revisions; . is the working tree), the order rotating by round; ratios to
# the first revision.
bench-rxe-revs:
	@if [ -z $(call shq,REVS) ]; then echo "usage: make bench-rxe-revs REVS='rev1 rev2 ...'" >&2; exit 2; fi
	vm/bench-rxe-revs.sh $(REVS)

# bench-valkey: in one VM boot, rdmapool bench --transport rdma beside
# valkey-benchmark --rdma against one real valkey-server with RDMA, and
# valkey-benchmark --rdma against rdmapool serve beside it, at -c 1,
# -c 10 -P 16 and -c 50; writes out/bench-valkey.{json,md}. VALKEY_DIR holds
# valkey-server and valkey-benchmark built with RDMA, 9.0 or later
# (vm/valkey-build.sh SRC).
bench-valkey:
	@if [ -z $(call shq,VALKEY_DIR) ]; then echo "usage: make bench-valkey VALKEY_DIR=dir (valkey-server and valkey-benchmark 9.0+ with RDMA: vm/valkey-build.sh SRC)" >&2; exit 2; fi
	vm/bench-valkey.sh --valkey $(call shq,VALKEY_DIR)

# bench-serve-revs: in one VM boot, valkey-benchmark --rdma against
# rdmapool serve built at each of REVS (git revisions; . is the working
# tree), the order rotating by round; ratios to the first revision.
bench-serve-revs:
	@if [ -z $(call shq,VALKEY_DIR) ] || [ -z $(call shq,REVS) ]; then echo "usage: make bench-serve-revs VALKEY_DIR=dir REVS='rev1 rev2 ...' (valkey-benchmark 9.0+ with RDMA: vm/valkey-build.sh SRC)" >&2; exit 2; fi
	vm/bench-serve-revs.sh --valkey $(call shq,VALKEY_DIR) $(REVS)

# bench-cluster: in one VM boot, rdmapool bench --cluster against the
# embedded cluster over RDMA and over TCP, back to back in each round;
# writes out/bench-cluster.{json,md}.
bench-cluster:
	vm/bench-cluster.sh

# bench-listen: in one VM boot, gRPC unary calls, a gRPC client stream and
# net/http GETs between a server on pool.Listen and a client through a
# pool.Dialer in another process, RDMA (RDMAOnly) beside TCP (TCPOnly), with
# p50/p99 and ops/s, or MB/s (bench/listen_test.go). LISTEN_ROUNDS rounds (default 5), RDMA and TCP
# taking turns within each, LISTEN_BENCHTIME each (default 2s).
bench-listen:
	$(MAKE) test-rxe VM_PKGS=./bench VM_RUN='^$$' \
		VM_TESTFLAGS="-test.bench=^BenchmarkListen -test.benchmem -listen.rounds=$${LISTEN_ROUNDS:-5} -test.benchtime=$${LISTEN_BENCHTIME:-2s}"

# valkey-rdma: in one VM boot, the scenarios against a real valkey-server
# with RDMA (built in, or the valkey-rdma.so module), then rdmapool bench
# against it over RDMA and TCP, alone and as a cluster; writes
# out/valkey-rdma.{log,json,md} (the md: the version and a PASS/FAIL line
# per scenario). VALKEY_DIR holds valkey-server and valkey-cli (and
# valkey-benchmark, valkey-rdma.so where the build has them):
# vm/valkey-build.sh SRC makes it from a valkey source tree.
# VALKEY_ROUNDS: bench rounds (default 5).
valkey-rdma:
	@if [ -z $(call shq,VALKEY_DIR) ]; then echo "usage: make valkey-rdma VALKEY_DIR=dir [VALKEY_ROUNDS=n] (vm/valkey-build.sh SRC makes dir)" >&2; exit 2; fi
	vm/valkey-rdma.sh --valkey $(call shq,VALKEY_DIR) --rounds "$${VALKEY_ROUNDS:-5}"

# test-rxe: build every package's tests with CGO_ENABLED=0 and run them in the VM.
#   VM_RUN=regex         -test.run for every test binary
#   VM_PKGS='./a ./b/...' packages to build (default ./...)
#   VM_EXTRA='dir ...'   more directories copied to /opt/bin in the VM
#   VM_CMD='shell'       run after the tests in the same VM (counts as a result)
#   VM_TESTFLAGS='...'   more test binary flags, e.g. '-test.bench=. -test.benchmem'
#   VM_TEST_TIMEOUT=10m  -test.timeout per binary
#   VM_TIMEOUT=1200      seconds for the whole VM run (or RDMAPOOL_VM_TIMEOUT)
test-rxe:
	VM_RUN=$(call shq,VM_RUN) VM_PKGS=$(call shq,VM_PKGS) VM_EXTRA=$(call shq,VM_EXTRA) \
	VM_CMD=$(call shq,VM_CMD) VM_TESTFLAGS=$(call shq,VM_TESTFLAGS) \
	VM_TEST_TIMEOUT=$(call shq,VM_TEST_TIMEOUT) VM_TIMEOUT=$(call shq,VM_TIMEOUT) \
	vm/test.sh

# vm-run: run one shell command in the VM, e.g. make vm-run VM_CMD='ibv_devinfo'.
#   VM_CMD='shell'   required; runs with sh -c in /opt/bin
#   VM_BIN=dir       copied to /opt/bin (on PATH) in the VM
#   VM_TIMEOUT=1200  seconds for the whole VM run (or RDMAPOOL_VM_TIMEOUT)
vm-run:
	@VM_CMD=$(call shq,VM_CMD) VM_BIN=$(call shq,VM_BIN) VM_TIMEOUT=$(call shq,VM_TIMEOUT); \
	if [ -z "$$VM_CMD" ]; then echo "usage: make vm-run VM_CMD='shell command' [VM_BIN=dir] [VM_TIMEOUT=s]" >&2; exit 2; fi; \
	set -- --timeout "$${VM_TIMEOUT:-$${RDMAPOOL_VM_TIMEOUT:-1200}}"; \
	if [ -n "$$VM_BIN" ]; then set -- "$$@" --bin "$$VM_BIN"; fi; \
	vm/run.sh "$$@" -- sh -c "$$VM_CMD"

# vm-fetch: install the host packages (as root) and download the VM kernel into the cache.
vm-fetch:
	vm/deps.sh
	vm/fetch.sh
