package netpass

import (
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestPass: with one P and this goroutine always runnable, the runtime
// polls the network only through sysmon (every 10 ms); a Pass lets it poll
// at once, so a goroutine waiting for a socket runs right after.
func TestPass(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for i := range 3 { // a fresh passer, then reused ones
		var got atomic.Bool
		go func() {
			var buf [1]byte
			a.Read(buf[:])
			got.Store(true)
		}()
		runtime.Gosched() // the reader runs and waits in the netpoller
		if _, err := b.Write([]byte{1}); err != nil {
			t.Fatal(err)
		}
		if err := Pass(); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			runtime.Gosched()
		}
		if !got.Load() {
			t.Fatalf("pass %d: the reader waiting for a socket did not run after it", i)
		}
	}
}

// TestPassConcurrent: passes from many goroutines at once each return
// promptly, and the passers they used are kept for reuse.
func TestPassConcurrent(t *testing.T) {
	done := make(chan error)
	for range 16 {
		go func() {
			var err error
			for range 100 {
				if err = Pass(); err != nil {
					break
				}
			}
			done <- err
		}()
	}
	timeout := time.After(10 * time.Second)
	for range 16 {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-timeout:
			t.Fatal("concurrent passes did not finish in 10 s")
		}
	}
	if n := len(free); n == 0 || n > 16 {
		t.Fatalf("%d passers kept, want 1 to 16", n)
	}
}

func BenchmarkPass(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if err := Pass(); err != nil {
			b.Fatal(err)
		}
	}
}
