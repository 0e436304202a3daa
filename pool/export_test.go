package pool

import "time"

// For the tests of package pool_test, which can import pooltest.

// Ping writes "ping" to c and fails the test unless it reads it back.
var Ping = ping

// TestEngines lets package pool_test add the engines of other packages
// (engines_test.go) to testEngines.
var TestEngines = &testEngines

// FallbackDelayOf is p's delay of Auto's race now: what it learnt of its
// RDMA setups, under the default FallbackDelay.
func FallbackDelayOf(p *Pool) time.Duration { return p.fallbackDelay() }
