package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// startServer serves a new Server on a TCP port of 127.0.0.1 and closes it
// when the test ends.
func startServer(tb testing.TB, opts *Options) (*Server, string) {
	tb.Helper()
	srv := New(testOpts(opts))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	tb.Cleanup(func() {
		srv.Close()
		if err := <-done; !errors.Is(err, ErrServerClosed) {
			tb.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return srv, l.Addr().String()
}

// rawClient speaks RESP over a plain connection, for tests that need to
// see the bytes.
type rawClient struct {
	tb testing.TB
	c  net.Conn
	r  *bufio.Reader
}

func dialRaw(tb testing.TB, addr string) *rawClient {
	tb.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return newRawClient(tb, c)
}

func newRawClient(tb testing.TB, c net.Conn) *rawClient {
	return &rawClient{tb: tb, c: c, r: bufio.NewReaderSize(c, 1<<16)}
}

func (rc *rawClient) send(s string) {
	rc.tb.Helper()
	rc.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(rc.c, s); err != nil {
		rc.tb.Fatalf("write: %v", err)
	}
}

// do sends a command as a multibulk request and returns the raw reply.
func (rc *rawClient) do(args ...string) string {
	rc.tb.Helper()
	rc.send(encode(args...))
	return rc.reply()
}

// reply reads one complete reply and returns its bytes.
func (rc *rawClient) reply() string {
	rc.tb.Helper()
	rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b bytes.Buffer
	if err := readReply(rc.r, &b); err != nil {
		rc.tb.Fatalf("reading a reply: %v (have %q)", err, b.String())
	}
	return b.String()
}

// expect reads one reply and checks it.
func (rc *rawClient) expect(want string) {
	rc.tb.Helper()
	if got := rc.reply(); got != want {
		rc.tb.Errorf("reply %q, want %q", got, want)
	}
}

// expectClosed checks that the server closes the connection (after any
// replies already read).
func (rc *rawClient) expectClosed() {
	rc.tb.Helper()
	rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := rc.r.ReadByte()
	if err == nil {
		rest, _ := rc.r.Peek(rc.r.Buffered())
		rc.tb.Errorf("connection still open: read %q", append([]byte{b}, rest...))
		return
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		rc.tb.Errorf("connection still open after 10 s")
	}
}

func encode(args ...string) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// readReply copies one RESP2/RESP3 reply from r to w.
func readReply(r *bufio.Reader, w *bytes.Buffer) error {
	line, err := r.ReadString('\n')
	w.WriteString(line)
	if err != nil {
		return err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return fmt.Errorf("bad line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+', '-', ':', '_', ',', '#', '(':
		return nil
	case '$', '=', '!':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return err
		}
		_, err = io.CopyN(w, r, int64(n)+2)
		return err
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return err
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for range n {
			if err := readReply(r, w); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown reply type in %q", line)
}

// checkGoroutines fails tb if more goroutines than before run once the
// grace period is over.
func checkGoroutines(tb testing.TB, before int) {
	tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		tb.Errorf("%d goroutines left (%d before):\n%s", n-before, before, buf[:runtime.Stack(buf, true)])
	}
}
