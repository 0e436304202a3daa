package netpass

import (
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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
	rc, err := a.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	// readable reports whether the byte has reached a's socket: on a
	// loaded machine the kernel may deliver it after Write returns, and
	// then a Pass has nothing to find.
	readable := func() bool {
		n := 0
		rc.Control(func(fd uintptr) {
			n, _ = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
		})
		return n == 1
	}
	shown := 0
	for i := 0; shown < 3; i++ { // a fresh passer, then reused ones
		if i == 20 {
			t.Fatalf("in 20 tries, the reader ran before the pass in %d", 20-shown)
		}
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
		// The reader itself may take the byte first: sysmon's poll, or a
		// system call of this loop long enough for the P to be handed to
		// another thread, lets it run.
		for deadline := time.Now().Add(10 * time.Second); !readable() && !got.Load(); {
			if time.Now().After(deadline) {
				t.Fatal("a byte written on loopback TCP did not arrive in 10 s")
			}
		}
		if got.Load() {
			// The network was polled meanwhile (by sysmon every 10 ms,
			// or by the thread the P went to) and the reader ran: this
			// try shows nothing.
			continue
		}
		if err := Pass(); err != nil {
			t.Fatal(err)
		}
		// Yields, not time: the reader is runnable now, but other
		// goroutines (the runtime's, the test framework's) may be ahead of
		// it in the queue, more of them on a loaded or emulated machine.
		// A hundred yields take well under sysmon's 10 ms.
		for i := 0; i < 100 && !got.Load(); i++ {
			runtime.Gosched()
		}
		if !got.Load() {
			t.Fatalf("pass %d: the reader waiting for a socket did not run after it", shown)
		}
		shown++
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
