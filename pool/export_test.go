package pool

// For the tests of package pool_test, which can import pooltest.

// Ping writes "ping" to c and fails the test unless it reads it back.
var Ping = ping
