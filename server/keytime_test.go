package server

import "testing"

// TestRandomKey: nil on an empty database, the one live key otherwise,
// never an expired one.
func TestRandomKey(t *testing.T) {
	_, addr := startServer(t, nil)
	rc := dialRaw(t, addr)
	if got := rc.do("randomkey"); got != "$-1\r\n" {
		t.Errorf("RANDOMKEY of none = %q", got)
	}
	rc.do("set", "gone", "v", "px", "1")
	rc.do("set", "here", "v")
	for range 50 {
		for rc.do("pttl", "gone") != ":-2\r\n" { // until it has expired, by the clock
		}
		if got := rc.do("randomkey"); got != "$4\r\nhere\r\n" {
			t.Fatalf("RANDOMKEY = %q, want the live key", got)
		}
	}
}
