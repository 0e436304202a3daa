// Package bench holds rdmapool's go test -bench suites that span packages:
// the C call path against cgo, ring operations, connection round trips and
// pipelined throughput over RDMA and TCP side by side, and the pool. It has
// no code of its own to import.
//
// Each benchmark reports allocations, and the latency and throughput ones
// p50-µs, p99-µs and ops/s. Compare within one run (ratios, benchstat):
//
//	make bench                      # the host: TCP, the call path, the pool
//	make bench-rxe                  # the VM: RDMA beside perftest, and TCP
//
// The peer of the connection benchmarks is an echo server in a child process
// (this test binary, re-executed), so that the two transports are measured as
// a client and a server in different processes are, and the server's
// goroutines do not share the client's scheduler. RDMA benchmarks need a
// device (the VM); without one they skip, saying why, or fail in CI.
//
// Micro-benchmarks of unexported code live beside it, and make bench runs them
// too: completion dispatch (package cq), RESP request parsing
// (server) and reply scanning (cmd/rdmapool/internal/benchrun).
package bench
