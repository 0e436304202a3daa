package pool

// For the tests of package pool_test, which can import pooltest.

// Ping writes "ping" to c and fails the test unless it reads it back.
var Ping = ping

// TestEngines lets package pool_test add the engines of other packages
// (engines_test.go) to testEngines.
var TestEngines = &testEngines
